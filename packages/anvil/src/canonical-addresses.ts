import type { Address } from 'viem';

// Where the deployments here put their contracts: the addresses every EVM chain has them at. The gateway
// holds the same two for its own use (packages/server/src/chains/evm/permit2-addresses.ts), so it needs
// nothing of this package on a real network; a test of the gateway checks the two agree.

/**
 * The deterministic-deployment proxy anvil installs at genesis: calldata `salt ‖ init code` runs
 * CREATE2, so a contract's address depends only on its code and salt, never on what else the chain did.
 */
export const CREATE2_DEPLOYER: Address = '0x4e59b44847b379578588920ca78fbf26c0b4956c';

/** Uniswap's Permit2, at the address its CREATE2 deployment gives on every EVM chain. */
export const PERMIT2_ADDRESS: Address = '0x000000000022D473030F116dDEE9F6B43aC78BA3';

/** x402's `exact` Permit2 proxy (x402ExactPermit2Proxy), the spender every x402 Permit2 signature names. */
export const EXACT_PERMIT2_PROXY_ADDRESS: Address = '0x402085c248EeA27D92E8b30b2C58ed07f9E20001';

/** x402's `upto` Permit2 proxy (x402UptoPermit2Proxy), the spender every x402 `upto` signature names. */
export const UPTO_PERMIT2_PROXY_ADDRESS: Address = '0x4020A4f3b7b90ccA423B9fabCc0CE57C6C240002';
