// Blocks: one per slot, available once confirmed.
import { config, integer, type Params } from '../params.ts';
import { blockNotAvailable, invalidParams } from '../rpc-error.ts';
import type { RpcContext, RpcMethod } from '../rpc-method.ts';
import { encodeTransactionWithMeta } from '../transaction-encoding.ts';
import { historyCommitment, maxSupportedVersion, transactionEncoding } from './transaction-methods.ts';

const MAX_BLOCK_RANGE = 500_000;

function getBlock(params: Params, { chain }: RpcContext) {
  const slot = integer(params[0], 'u64');
  const cfg = typeof params[1] === 'string' ? { encoding: params[1] } : config(params, 1);
  const commitment = historyCommitment(cfg);
  const encoding = transactionEncoding(cfg.encoding);
  const maxVersion = maxSupportedVersion(cfg);
  const details = cfg.transactionDetails ?? 'full';
  if (details !== 'full' && details !== 'signatures' && details !== 'none') {
    throw invalidParams(
      `Invalid params: unknown variant \`${String(details)}\`, expected one of \`full\`, \`signatures\`, \`none\`.`,
    );
  }
  const block =
    slot <= chain.slotAt(commitment) && chain.reachedCommitment(slot, commitment)
      ? chain.block(slot)
      : undefined;
  if (!block) throw blockNotAvailable(slot);
  const result: Record<string, unknown> = {
    blockHeight: block.blockHeight,
    blockTime: block.blockTime,
    blockhash: block.blockhash,
    parentSlot: block.parentSlot,
    previousBlockhash: block.previousBlockhash,
  };
  if (details !== 'none') {
    const transactions = chain.transactionsInSlot(slot);
    if (details === 'full') {
      result.transactions = transactions.map((record) =>
        encodeTransactionWithMeta(record, { encoding, maxSupportedTransactionVersion: maxVersion }),
      );
    } else result.signatures = transactions.map((record) => record.signature);
  }
  if (cfg.rewards !== false) result.rewards = [];
  return result;
}

function slotRange(start: number, end: number): number[] {
  if (end - start > MAX_BLOCK_RANGE) throw invalidParams(`Slot range too large; max ${MAX_BLOCK_RANGE}`);
  const out: number[] = [];
  for (let slot = start; slot <= end; slot++) out.push(slot);
  return out;
}

export const blockMethods: Record<string, RpcMethod> = {
  getBlock,

  getBlockTime: (params, { chain }) => {
    const slot = integer(params[0], 'u64');
    const block = slot <= chain.slotAt('confirmed') ? chain.block(slot) : undefined;
    if (!block) throw blockNotAvailable(slot);
    return block.blockTime;
  },

  getBlocks: (params, { chain }) => {
    const start = integer(params[0], 'u64');
    const last = chain.slotAt(historyCommitment(config(params, typeof params[1] === 'object' ? 1 : 2)));
    const end = typeof params[1] === 'number' ? Math.min(integer(params[1], 'u64'), last) : last;
    return slotRange(start, end);
  },

  getBlocksWithLimit: (params, { chain }) => {
    const start = integer(params[0], 'u64');
    const limit = integer(params[1], 'usize');
    const last = chain.slotAt(historyCommitment(config(params, 2)));
    return slotRange(start, Math.min(last, start + limit - 1));
  },
};
