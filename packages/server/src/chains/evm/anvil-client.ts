import {
  type Client,
  createTestClient,
  type PublicActions,
  publicActions,
  type TestActions,
  type TestRpcSchema,
  type Transport,
  type WalletActions,
  walletActions,
} from 'viem';
import type { RpcEndpoints } from '../rpc-endpoints.ts';
import { failoverTransport } from './failover-transport.ts';

/**
 * A viem client for anvil's extra methods (anvil_setBalance, unlocked dev accounts via
 * eth_sendTransaction) besides the public ones. Used only to set up and fund a local anvil. It goes
 * through the chain's endpoint list, so a faucet call to an anvil that stopped answering fails within
 * the per-call time limit as ChainError `unavailable` (503 CHAIN_UNAVAILABLE) instead of hanging.
 */
export function createAnvilClient(endpoints: RpcEndpoints): AnvilClient {
  return createTestClient({
    mode: 'anvil',
    transport: failoverTransport(endpoints, endpoints.timeoutMs),
    cacheTime: 0,
  })
    .extend(publicActions)
    .extend(walletActions);
}

/** Named in full (not inferred) so the published declarations do not reach into viem's private paths. */
export type AnvilClient = Client<
  Transport,
  undefined,
  undefined,
  TestRpcSchema<'anvil'>,
  TestActions & PublicActions<Transport, undefined> & WalletActions<undefined, undefined>
>;
