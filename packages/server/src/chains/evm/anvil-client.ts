import { createTestClient, publicActions, walletActions } from 'viem';
import type { RpcEndpoints } from '../rpc-endpoints.ts';
import { failoverTransport } from './failover-transport.ts';

/**
 * A viem client for anvil's extra methods (anvil_setBalance, unlocked dev accounts via
 * eth_sendTransaction) besides the public ones. Used only to set up and fund a local anvil. It goes
 * through the chain's endpoint list, so a faucet call to an anvil that stopped answering fails within
 * the per-call time limit as ChainError `unavailable` (503 CHAIN_UNAVAILABLE) instead of hanging.
 */
export function createAnvilClient(endpoints: RpcEndpoints) {
  return createTestClient({
    mode: 'anvil',
    transport: failoverTransport(endpoints, endpoints.timeoutMs),
    cacheTime: 0,
  })
    .extend(publicActions)
    .extend(walletActions);
}

export type AnvilClient = ReturnType<typeof createAnvilClient>;
