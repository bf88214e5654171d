import assert from 'node:assert/strict';
import { type EvmLocalWallet, newEvmLocalWallet } from './evm-local-signer.ts';
import { watchAddress } from './proof-of-control.ts';
import type { TestEvm } from './test-anvil.ts';
import type { TestGateway } from './test-gateway.ts';

/**
 * A new EVM wallet whose key the caller keeps, added to the caller's wallets as watch-only (the gateway
 * never signs for it) and given 1 ETH, because in local mode the seller pays the gas of what it broadcasts.
 */
export async function newWatchedEvmWallet(
  gw: TestGateway,
  evm: TestEvm,
  callerKey: string,
): Promise<EvmLocalWallet> {
  const wallet = newEvmLocalWallet();
  const watched = await watchAddress(gw, callerKey, wallet);
  assert.equal(watched.statusCode, 200, watched.body);
  await evm.adapter.faucet?.fundNative(wallet.address, 10n ** 18n);
  return wallet;
}
