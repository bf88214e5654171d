// What every RPC method handler receives, and the `{context, value}` wrapper Agave puts around
// most answers.
import type { Chain, Commitment } from '../chain/chain.ts';
import type { Faucet } from '../chain/faucet.ts';
import { type Config, optionalInteger, type Params, commitment as readCommitment } from './params.ts';
import { minContextSlotNotReached } from './rpc-error.ts';

export const API_VERSION = '2.2.16';

export interface RpcContext {
  readonly chain: Chain;
  readonly faucet: Faucet;
  /** Identity of this "validator", stable per ledger. */
  readonly identity: string;
}

export type RpcMethod = (params: Params, ctx: RpcContext) => unknown;

/** The slot a request reads at: its commitment's slot, after checking `minContextSlot`. */
export function contextSlot(chain: Chain, cfg: Config): { slot: number; commitment: Commitment } {
  const commitment = readCommitment(cfg);
  const slot = chain.slotAt(commitment);
  const min = optionalInteger(cfg, 'minContextSlot');
  if (min !== undefined && slot < min) throw minContextSlotNotReached(slot);
  return { slot, commitment };
}

export function withContext<T>(slot: number, value: T) {
  return { context: { apiVersion: API_VERSION, slot }, value };
}
