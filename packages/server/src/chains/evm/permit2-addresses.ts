import type { Address } from 'viem';

/**
 * Uniswap's Permit2, at the address its CREATE2 deployment gives on every EVM chain. x402 clients sign
 * their `exact` Permit2 payments against this verifying contract, whatever the network.
 */
export const PERMIT2_ADDRESS: Address = '0x000000000022D473030F116dDEE9F6B43aC78BA3';

/**
 * x402's `exact` Permit2 proxy (x402ExactPermit2Proxy), the spender every x402 Permit2 signature names:
 * a facilitator settles by calling its `settle`, never by spending from Permit2 itself.
 */
export const EXACT_PERMIT2_PROXY_ADDRESS: Address = '0x402085c248EeA27D92E8b30b2C58ed07f9E20001';
