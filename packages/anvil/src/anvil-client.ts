import type { Client, PublicActions, TestActions, TestRpcSchema, Transport, WalletActions } from 'viem';

/**
 * A viem client for anvil's extra methods (anvil_setCode, unlocked dev accounts via
 * eth_sendTransaction) besides the public ones: what the deployments here need. The gateway makes one
 * with its own transport (packages/server/src/chains/evm/anvil-client.ts); any viem test client in
 * `anvil` mode extended with public and wallet actions is one.
 * Named in full (not inferred) so the published declarations do not reach into viem's private paths.
 */
export type AnvilClient = Client<
  Transport,
  undefined,
  undefined,
  TestRpcSchema<'anvil'>,
  TestActions & PublicActions<Transport, undefined> & WalletActions<undefined, undefined>
>;
