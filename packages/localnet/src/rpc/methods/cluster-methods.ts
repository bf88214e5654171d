// Node and cluster state: health, version, identity, slots, heights, epochs, blockhashes, rent.

import { MAX_PROCESSING_AGE } from '../../chain/blockhash-window.ts';
import { decodeBase58Key } from '../../wire/base58.ts';
import { config, integer, type Params, pubkeyParam, stringParam } from '../params.ts';
import { invalidParamValue, invalidRequest } from '../rpc-error.ts';
import { API_VERSION, contextSlot, type RpcContext, type RpcMethod, withContext } from '../rpc-method.ts';
import { FEATURE_SET } from './validator-methods.ts';

/** Agave's MAX_PERMITTED_DATA_LENGTH (10 MiB). */
const MAX_ACCOUNT_DATA_LENGTH = 10 * 1024 * 1024;

export const clusterMethods: Record<string, RpcMethod> = {
  getHealth: () => 'ok',
  getVersion: () => ({ 'feature-set': FEATURE_SET, 'solana-core': API_VERSION }),
  getGenesisHash: (_p, { chain }) => chain.genesisHash,
  getIdentity: (_p, { identity }) => ({ identity }),
  getSlotLeader: (_p, { identity }) => identity,
  getFirstAvailableBlock: () => 0,
  getMaxRetransmitSlot: (_p, { chain }) => chain.slot,
  getMaxShredInsertSlot: (_p, { chain }) => chain.slot,

  getSlot: (params, { chain }) => contextSlot(chain, config(params, 0)).slot,

  getBlockHeight: (params, { chain }) => {
    const { commitment } = contextSlot(chain, config(params, 0));
    return chain.blockAt(commitment).blockHeight;
  },

  getTransactionCount: (params, { chain }) => {
    contextSlot(chain, config(params, 0));
    return chain.transactionCount();
  },

  getEpochInfo: (params, { chain }) => chain.epochInfo(contextSlot(chain, config(params, 0)).commitment),

  getEpochSchedule: () => ({
    firstNormalEpoch: 0,
    firstNormalSlot: 0,
    leaderScheduleSlotOffset: 432_000,
    slotsPerEpoch: 432_000,
    warmup: false,
  }),

  getLatestBlockhash: (params, { chain }) => {
    const { slot, commitment } = contextSlot(chain, config(params, 0));
    const block = chain.blockAt(commitment);
    return withContext(slot, {
      blockhash: block.blockhash,
      lastValidBlockHeight: block.blockHeight + MAX_PROCESSING_AGE,
    });
  },

  isBlockhashValid: (params: Params, { chain }: RpcContext) => {
    const hash = decodeBase58Key(stringParam(params, 0, 'blockhash'));
    if (!hash) throw invalidParamValue();
    const { slot } = contextSlot(chain, config(params, 1));
    return withContext(slot, chain.isBlockhashValid(hash));
  },

  getMinimumBalanceForRentExemption: (params, { chain }) => {
    const length = integer(params[0], 'usize');
    if (length > MAX_ACCOUNT_DATA_LENGTH) throw invalidRequest();
    return chain.minimumBalanceForRentExemption(BigInt(length));
  },

  getRecentPrioritizationFees: (params, { chain }) => {
    const addresses = params[0];
    if (addresses !== undefined && (!Array.isArray(addresses) || addresses.length > 128)) {
      throw invalidRequest('Too many inputs provided; max 128');
    }
    const accounts = ((addresses ?? []) as unknown[]).map((address, i) => {
      pubkeyParam(addresses as unknown[], i, 'address');
      return address as string;
    });
    return chain.recentPrioritizationFees(accounts);
  },
};
