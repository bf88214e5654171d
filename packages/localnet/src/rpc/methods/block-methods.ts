// Blocks: one per slot, available once confirmed.
import type { BlockRecord, TransactionRecord } from '../../chain/transaction-record.ts';
import { type Config, config, integer, type Params } from '../params.ts';
import { blockNotAvailable, invalidParams, slotSkipped } from '../rpc-error.ts';
import type { RpcContext, RpcMethod } from '../rpc-method.ts';
import { encodeTransactionWithMeta } from '../transaction-encoding.ts';
import { historyCommitment, maxSupportedVersion, transactionEncoding } from './transaction-methods.ts';

const MAX_BLOCK_RANGE = 500_000;

export interface BlockOptions {
  readonly encoding: ReturnType<typeof transactionEncoding>;
  readonly maxVersion: number | undefined;
  readonly details: 'full' | 'signatures' | 'none';
  readonly rewards: boolean;
}

/** getBlock's (and blockSubscribe's) config: encoding, transactionDetails, rewards, max version. */
export function blockOptions(cfg: Config): BlockOptions {
  const encoding = transactionEncoding(cfg.encoding);
  const maxVersion = maxSupportedVersion(cfg);
  const details = cfg.transactionDetails ?? 'full';
  if (details !== 'full' && details !== 'signatures' && details !== 'none') {
    throw invalidParams(
      `Invalid params: unknown variant \`${String(details)}\`, expected one of \`full\`, \`signatures\`, \`none\`.`,
    );
  }
  return { encoding, maxVersion, details, rewards: cfg.rewards !== false && cfg.showRewards !== false };
}

/** A block as getBlock answers it, with `transactions` (all of the slot's when omitted). */
export function encodeBlock(
  block: BlockRecord,
  transactions: readonly TransactionRecord[],
  options: BlockOptions,
): Record<string, unknown> {
  const result: Record<string, unknown> = {
    blockHeight: block.blockHeight,
    blockTime: block.blockTime,
    blockhash: block.blockhash,
    parentSlot: block.parentSlot,
    previousBlockhash: block.previousBlockhash,
  };
  if (options.details === 'full') {
    result.transactions = transactions.map((record) =>
      encodeTransactionWithMeta(record, {
        encoding: options.encoding,
        maxSupportedTransactionVersion: options.maxVersion,
      }),
    );
  } else if (options.details === 'signatures')
    result.signatures = transactions.map((record) => record.signature);
  if (options.rewards) result.rewards = [];
  return result;
}

function getBlock(params: Params, { chain }: RpcContext) {
  const slot = integer(params[0], 'u64');
  const cfg = typeof params[1] === 'string' ? { encoding: params[1] } : config(params, 1);
  const commitment = historyCommitment(cfg);
  const options = blockOptions(cfg);
  const block =
    slot <= chain.slotAt(commitment) && chain.reachedCommitment(slot, commitment)
      ? chain.block(slot)
      : undefined;
  if (!block) throw missingBlock(chain, slot, commitment);
  return encodeBlock(block, options.details === 'none' ? [] : chain.transactionsInSlot(slot), options);
}

/** A slot at or below the commitment's without a block was skipped (dropped); a later one is not there yet. */
function missingBlock(
  chain: RpcContext['chain'],
  slot: number,
  commitment: Parameters<RpcContext['chain']['slotAt']>[0],
) {
  return slot <= chain.slotAt(commitment) && chain.isSkipped(slot)
    ? slotSkipped(slot)
    : blockNotAvailable(slot);
}

/** The slots in [start, end] that have a block: skipped (dropped) slots are left out, as Agave. */
function slotRange(chain: RpcContext['chain'], start: number, end: number): number[] {
  if (end - start > MAX_BLOCK_RANGE) throw invalidParams(`Slot range too large; max ${MAX_BLOCK_RANGE}`);
  if (end < start) return [];
  return chain.blockSlots(start, end, MAX_BLOCK_RANGE + 1);
}

export const blockMethods: Record<string, RpcMethod> = {
  getBlock,

  getBlockTime: (params, { chain }) => {
    const slot = integer(params[0], 'u64');
    const block = slot <= chain.slotAt('confirmed') ? chain.block(slot) : undefined;
    if (!block) throw missingBlock(chain, slot, 'confirmed');
    return block.blockTime;
  },

  getBlocks: (params, { chain }) => {
    const start = integer(params[0], 'u64');
    const last = chain.slotAt(
      historyCommitment(config(params, typeof params[1] === 'object' && params[1] !== null ? 1 : 2)),
    );
    const end = typeof params[1] === 'number' ? Math.min(integer(params[1], 'u64'), last) : last;
    return slotRange(chain, start, end);
  },

  getBlocksWithLimit: (params, { chain }) => {
    const start = integer(params[0], 'u64');
    const limit = integer(params[1], 'usize');
    const last = chain.slotAt(historyCommitment(config(params, 2)));
    if (Math.min(last, start + limit - 1) - start > MAX_BLOCK_RANGE)
      throw invalidParams(`Slot range too large; max ${MAX_BLOCK_RANGE}`);
    // The first `limit` blocks from `start`: after dropped slots they reach past start + limit - 1.
    return limit === 0 || start > last ? [] : chain.blockSlots(start, last, limit);
  },
};
