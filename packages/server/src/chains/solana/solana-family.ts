import { join } from 'node:path';
import { decodeBase58 } from '../../domain/base58.ts';
import type { ChainFamilyModule } from '../chain-family.ts';
import { loopbackUrl } from '../loopback-url.ts';
import { connectSolana } from './connect-solana.ts';
import { ExactSvmScheme } from './exact-svm-scheme.ts';
import { SOLANA_RESERVED_ACCOUNTS } from './reserved-accounts.ts';
import { SOLANA_DEVNET_ID, solanaExplorerUrl } from './solana-clusters.ts';
import { UptoSvmScheme } from './upto-svm-scheme.ts';

/** Solana: base58 addresses and signatures, slots of 400 ms, accounts that must stay rent-exempt. */
export const solanaFamily: ChainFamilyModule<Parameters<typeof connectSolana>[0]> = {
  family: 'solana',
  connect: async (settings, log, rpcObserver) => {
    const connection = await connectSolana(settings, log, rpcObserver);
    return { adapters: [connection.adapter], close: () => connection.close() };
  },
  addressName: 'a Solana address',
  estimatedConfirmation: '1-2 seconds',
  reservedAccount: (address) =>
    Object.hasOwn(SOLANA_RESERVED_ACCOUNTS, address) ? SOLANA_RESERVED_ACCOUNTS[address] : undefined,
  recipientProblem: () => undefined,
  isTransactionId: (text) => /^[1-9A-HJ-NP-Za-km-z]{64,88}$/.test(text) && decodeBase58(text)?.length === 64,
  exactScheme: async (chain, feePayer, assets) =>
    new ExactSvmScheme(chain.endpoints, [feePayer], chain.info.id, assets),
  // Offered where the chain carries x402's payment-channels program (the embedded localnet does).
  uptoScheme: async (chain, feePayer, assets, { now, log }) => {
    const scheme = new UptoSvmScheme(chain.endpoints, feePayer, chain.info.id, assets, now);
    try {
      if (await scheme.detect()) log?.(`x402 facilitator: upto payments offered on ${chain.info.name}`);
    } catch (error) {
      log?.(
        `x402 facilitator: could not look for x402's payment-channels program on ${chain.info.name} (${error instanceof Error ? error.message : String(error)}); upto is not offered there`,
      );
    }
    return scheme;
  },
  caip2Namespace: 'solana',
  signersNamespace: 'solana:*',
  sellersNameFeePayer: true,
  localStandsInFor: SOLANA_DEVNET_ID,
  signsTokenDomain: false,
  explorerTransactionUrl: solanaExplorerUrl,
  faucetChain: (config) => {
    // Every configured endpoint, in order, with failover, as the server has them.
    const [configured, ...backups] = config.solanaRpcUrls;
    const rpcUrl = configured ?? loopbackUrl('LOCALNET_PORT', config.localnetPort);
    // The embedded localnet's PubSub listens on the next port.
    const wsUrl =
      configured === undefined
        ? `ws://127.0.0.1:${config.localnetPort + 1}`
        : (config.solanaWsUrls[0] ?? rpcUrl.replace(/^http/, 'ws'));
    return {
      where: configured === undefined ? 'local Solana chain' : 'Solana chain (SOLANA_RPC_URL)',
      rpcUrl,
      connect: async () => {
        // Loaded only when the faucet asks for this chain: bad input is refused without the SDK.
        const { connectLocalSolana } = await import('./connect-local-solana.ts');
        return connectLocalSolana({
          rpcUrls: [rpcUrl, ...backups],
          wsUrl,
          mintAuthorityFile: join(config.dataDir, 'localnet', 'mint-authority.json'),
          // The server's own time limits: a chain that stopped answering fails within RPC_TIMEOUT_MS.
          rpcLimits: { timeoutMs: config.rpcTimeoutMs, downMs: config.rpcDownMs },
        });
      },
    };
  },
  faucetNativeRefusal: () => ({
    amount: 'an address that holds nothing yet must get at least its rent-exempt minimum',
  }),
};
