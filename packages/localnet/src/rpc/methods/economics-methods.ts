// Supply, the largest accounts, inflation and staking minimums. The localnet pays no rewards and
// runs no inflation (Agave's `Inflation::new_disabled`); its supply is the lamports of the accounts
// transactions and the operator created (LiteSVM's own programs and sysvars are not counted).
import { config, type Params } from '../params.ts';
import { invalidParams } from '../rpc-error.ts';
import { contextSlot, type RpcContext, type RpcMethod, withContext } from '../rpc-method.ts';

/** Agave's NUM_LARGEST_ACCOUNTS. */
const NUM_LARGEST_ACCOUNTS = 20;
const SLOTS_PER_EPOCH = 432_000;
/** With every feature enabled (as LiteSVM runs), the stake program's minimum delegation is 1 SOL. */
const STAKE_MINIMUM_DELEGATION = 1_000_000_000;

function getSupply(params: Params, { chain }: RpcContext) {
  const cfg = config(params, 0);
  const { slot } = contextSlot(chain, cfg);
  const total = chain.totalSupply();
  return withContext(slot, {
    total,
    circulating: total,
    nonCirculating: 0,
    nonCirculatingAccounts: [],
  });
}

function getLargestAccounts(params: Params, { chain }: RpcContext) {
  const cfg = config(params, 0);
  const { slot } = contextSlot(chain, cfg);
  const filter = cfg.filter;
  if (filter !== undefined && filter !== null && filter !== 'circulating' && filter !== 'nonCirculating') {
    throw invalidParams(
      `Invalid params: unknown variant \`${String(filter)}\`, expected \`circulating\` or \`nonCirculating\`.`,
    );
  }
  // Nothing is non-circulating here.
  const accounts = filter === 'nonCirculating' ? [] : chain.largestAccounts(NUM_LARGEST_ACCOUNTS);
  return withContext(slot, accounts);
}

export const economicsMethods: Record<string, RpcMethod> = {
  getSupply,
  getLargestAccounts,
  getInflationGovernor: (params, { chain }) => {
    contextSlot(chain, config(params, 0));
    return { foundation: 0, foundationTerm: 0, initial: 0, taper: 0, terminal: 0 };
  },
  getInflationRate: (_p, { chain }) => ({
    epoch: Math.floor(chain.slot / SLOTS_PER_EPOCH),
    foundation: 0,
    total: 0,
    validator: 0,
  }),
  getStakeMinimumDelegation: (params, { chain }) => {
    const { slot } = contextSlot(chain, config(params, 0));
    return withContext(slot, STAKE_MINIMUM_DELEGATION);
  },
};
