// The cluster as validators and explorers see it: one node, the localnet's identity, leader of every
// slot, producing every block (no skipped slots), with no vote accounts (nothing votes here).
import { type Config, config, integer, pubkeyParam } from '../params.ts';
import { invalidParams } from '../rpc-error.ts';
import { API_VERSION, contextSlot, type RpcMethod, withContext } from '../rpc-method.ts';

const SLOTS_PER_EPOCH = 432_000;
/** Agave's MAX_GET_SLOT_LEADERS and PERFORMANCE_SAMPLES_LIMIT. */
const MAX_GET_SLOT_LEADERS = 5000;
const PERFORMANCE_SAMPLES_LIMIT = 720;
/** LiteSVM runs with every feature enabled; a stable id for that set (Agave's is a hash of its features). */
export const FEATURE_SET = 2_891_131_721;

function optionalIdentity(cfg: Config): string | undefined {
  if (cfg.identity === undefined || cfg.identity === null) return undefined;
  pubkeyParam([cfg.identity], 0, 'identity');
  return cfg.identity as string;
}

export const validatorMethods: Record<string, RpcMethod> = {
  minimumLedgerSlot: () => 0,

  getClusterNodes: (_p, { identity }) => [
    {
      pubkey: identity,
      gossip: null,
      tvu: null,
      tpu: null,
      tpuQuic: null,
      tpuForwards: null,
      tpuForwardsQuic: null,
      tpuVote: null,
      serveRepair: null,
      rpc: null,
      pubsub: null,
      version: API_VERSION,
      featureSet: FEATURE_SET,
      shredVersion: 0,
    },
  ],

  getVoteAccounts: (params, { chain }) => {
    const cfg = config(params, 0);
    contextSlot(chain, cfg);
    if (cfg.votePubkey !== undefined && cfg.votePubkey !== null)
      pubkeyParam([cfg.votePubkey], 0, 'votePubkey');
    return { current: [], delinquent: [] };
  },

  getSlotLeaders: (params, { identity }) => {
    integer(params[0], 'u64');
    const limit = integer(params[1], 'u64');
    if (limit > MAX_GET_SLOT_LEADERS) throw invalidParams(`Invalid limit; max ${MAX_GET_SLOT_LEADERS}`);
    return Array.from({ length: limit }, () => identity);
  },

  getLeaderSchedule: (params, { chain, identity }) => {
    // The first param is a slot or the config (Agave accepts both shapes).
    const first = params[0];
    const slotGiven = first !== undefined && first !== null && typeof first !== 'object';
    const cfg = first !== null && typeof first === 'object' ? config(params, 0) : config(params, 1);
    const { slot: current } = contextSlot(chain, cfg);
    const wanted = optionalIdentity(cfg);
    const slot = slotGiven ? integer(first, 'u64') : current;
    // Schedules exist for the current epoch and the next.
    const epoch = Math.floor(slot / SLOTS_PER_EPOCH);
    if (epoch > Math.floor(current / SLOTS_PER_EPOCH) + 1) return null;
    if (wanted !== undefined && wanted !== identity) return {};
    return { [identity]: Array.from({ length: SLOTS_PER_EPOCH }, (_, i) => i) };
  },

  getBlockProduction: (params, { chain, identity }) => {
    const cfg = config(params, 0);
    const { slot } = contextSlot(chain, cfg);
    const wanted = optionalIdentity(cfg);
    let firstSlot = Math.floor(slot / SLOTS_PER_EPOCH) * SLOTS_PER_EPOCH;
    let lastSlot = slot;
    const range = cfg.range;
    if (range !== undefined && range !== null) {
      if (typeof range !== 'object' || Array.isArray(range))
        throw invalidParams('Invalid params: invalid type: expected struct RpcBlockProductionConfigRange.');
      const r = range as Config;
      firstSlot = integer(r.firstSlot, 'u64');
      lastSlot = r.lastSlot === undefined || r.lastSlot === null ? slot : integer(r.lastSlot, 'u64');
      if (lastSlot < firstSlot)
        throw invalidParams(`lastSlot, ${lastSlot}, cannot be less than firstSlot, ${firstSlot}`);
      if (lastSlot > slot) throw invalidParams(`lastSlot, ${lastSlot}, is too large; max ${slot}`);
    }
    const produced = lastSlot - firstSlot + 1;
    const byIdentity =
      wanted !== undefined && wanted !== identity ? {} : { [identity]: [produced, produced] };
    return withContext(slot, { byIdentity, range: { firstSlot, lastSlot } });
  },

  getRecentPerformanceSamples: (params, { chain }) => {
    const limit =
      params[0] === undefined || params[0] === null ? PERFORMANCE_SAMPLES_LIMIT : integer(params[0], 'usize');
    if (limit > PERFORMANCE_SAMPLES_LIMIT)
      throw invalidParams(`Invalid limit; max ${PERFORMANCE_SAMPLES_LIMIT}`);
    return chain.performanceSamples(limit);
  },
};
