// @gate402/localnet: an embedded Solana chain (LiteSVM) behind Solana's JSON-RPC and PubSub APIs.

export { DropSlotsRefused } from './chain/chain.ts';
export { MAX_AIRDROP_LAMPORTS } from './chain/faucet.ts';
export { PAYMENT_CHANNELS_PROGRAM } from './chain/payment-channels-program.ts';
export { runLocalnetCli } from './cli.ts';
export type { Localnet, LocalnetLogger, LocalnetOptions, UsdcMintInfo } from './localnet.ts';
export { startLocalnet } from './localnet.ts';
