import { createTestClient, http, publicActions, walletActions } from 'viem';

/**
 * A viem client for anvil's extra methods (anvil_setBalance, unlocked dev accounts via
 * eth_sendTransaction) besides the public ones. Used only to set up and fund the embedded chain.
 */
export function createAnvilClient(rpcUrl: string) {
  return createTestClient({ mode: 'anvil', transport: http(rpcUrl, { retryCount: 0 }), cacheTime: 0 })
    .extend(publicActions)
    .extend(walletActions);
}

export type AnvilClient = ReturnType<typeof createAnvilClient>;
