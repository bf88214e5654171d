// Account reads: balances, accounts, program scans with filters, SPL token views.
// Accounts are read from the processed state whatever the commitment (LiteSVM keeps one state);
// the context slot still reports the requested commitment's slot.
import type { AccountSnapshot } from '../../chain/chain.ts';
import {
  decodeMint,
  decodeTokenAccount,
  TOKEN_2022_PROGRAM,
  TOKEN_PROGRAM,
  uiTokenAmount,
} from '../../chain/token-account.ts';
import { uiAmountsOfMint, uiAmountsOfMintAccount } from '../../chain/ui-amount.ts';
import { decodeBase58, encodeBase58 } from '../../wire/base58.ts';
import { accountView, encodeAccount } from '../account-encoding.ts';
import { config, integer, type Params, pubkey, pubkeyParam } from '../params.ts';
import { invalidParams } from '../rpc-error.ts';
import { contextSlot, type RpcContext, type RpcMethod, withContext } from '../rpc-method.ts';
import { decodeStrictBase64 } from '../transaction-input.ts';

const MAX_MULTIPLE_ACCOUNTS = 100;
const MAX_FILTERS = 4;
const MAX_MEMCMP_BYTES = 128;

export type Filter = (account: AccountSnapshot) => boolean;

/** getProgramAccounts' (and programSubscribe's) filters: dataSize and memcmp, at most four. */
export function readFilters(raw: unknown): Filter[] {
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw))
    throw invalidParams('Invalid params: invalid type: expected a sequence of filters.');
  if (raw.length > MAX_FILTERS) throw invalidParams(`Too many filters provided; max ${MAX_FILTERS}`);
  return raw.map((filter: unknown): Filter => {
    if (typeof filter !== 'object' || filter === null) throw invalidParams('Invalid params: invalid filter.');
    const f = filter as Record<string, unknown>;
    if ('dataSize' in f) {
      const size = integer(f.dataSize, 'u64');
      return (account) => account.data.length === size;
    }
    if ('memcmp' in f && typeof f.memcmp === 'object' && f.memcmp !== null) {
      const { offset, bytes, encoding } = f.memcmp as Record<string, unknown>;
      const at = integer(offset, 'usize');
      if (typeof bytes !== 'string') throw invalidParams('Invalid params: memcmp bytes must be a string.');
      let expected: Uint8Array | undefined;
      if (encoding === 'base64') {
        expected = decodeStrictBase64(bytes);
      } else if (encoding === undefined || encoding === null || encoding === 'base58') {
        expected = decodeBase58(bytes);
      } else
        throw invalidParams(
          `Invalid params: unknown variant \`${String(encoding)}\`, expected \`base58\` or \`base64\`.`,
        );
      if (!expected || expected.length > MAX_MEMCMP_BYTES)
        throw invalidParams('Invalid param: could not decode memcmp bytes');
      const want = expected;
      return (account) =>
        at + want.length <= account.data.length &&
        Buffer.from(want).equals(account.data.subarray(at, at + want.length));
    }
    throw invalidParams('Invalid params: unknown filter.');
  });
}

function tokenAccountsBy(params: Params, ctx: RpcContext, field: 'owner' | 'delegate') {
  const who = encodeBase58(pubkeyParam(params, 0));
  const selector = params[1];
  if (typeof selector !== 'object' || selector === null) {
    throw invalidParams('Invalid params: missing field `mint` or `programId`.');
  }
  const { mint, programId } = selector as Record<string, unknown>;
  const cfg = config(params, 2);
  const { slot, commitment } = contextSlot(ctx.chain, cfg);
  let programs: string[];
  let mintFilter: string | undefined;
  if (typeof mint === 'string') {
    mintFilter = encodeBase58(pubkey(mint));
    const mintAccount = ctx.chain.accountAt(pubkey(mint), commitment);
    if (!mintAccount || !decodeMint(mintAccount.data))
      throw invalidParams('Invalid param: could not find mint');
    programs = [mintAccount.owner];
  } else if (typeof programId === 'string') {
    const program = encodeBase58(pubkey(programId));
    if (program !== TOKEN_PROGRAM && program !== TOKEN_2022_PROGRAM) {
      throw invalidParams('Invalid param: unrecognized Token program id');
    }
    programs = [program];
  } else throw invalidParams('Invalid params: missing field `mint` or `programId`.');
  const view = accountView(cfg);
  const value = programs.flatMap((program) =>
    ctx.chain
      .programAccountsAt(decodeBase58(program) as Uint8Array, commitment)
      .filter(({ account }) => {
        const state = decodeTokenAccount(account.data);
        const holder = field === 'owner' ? state?.owner : state?.delegate;
        return (
          state !== undefined && holder === who && (mintFilter === undefined || state.mint === mintFilter)
        );
      })
      .map(({ address, account }) => ({
        account: encodeAccount(account, view, ctx.chain, address),
        pubkey: address,
      })),
  );
  return withContext(slot, value);
}

export const accountMethods: Record<string, RpcMethod> = {
  getBalance: (params, { chain }) => {
    const address = pubkeyParam(params, 0);
    const { slot, commitment } = contextSlot(chain, config(params, 1));
    return withContext(slot, chain.accountAt(address, commitment)?.lamports ?? 0n);
  },

  getAccountInfo: (params, { chain }) => {
    const address = pubkeyParam(params, 0);
    const cfg = config(params, 1);
    const { slot, commitment } = contextSlot(chain, cfg);
    const account = chain.accountAt(address, commitment);
    return withContext(
      slot,
      account && encodeAccount(account, accountView(cfg), chain, encodeBase58(address)),
    );
  },

  getMultipleAccounts: (params, { chain }) => {
    const list = params[0];
    if (!Array.isArray(list))
      throw invalidParams('Invalid params: invalid type: expected a sequence of pubkeys.');
    if (list.length > MAX_MULTIPLE_ACCOUNTS) {
      throw invalidParams(`Too many inputs provided; max ${MAX_MULTIPLE_ACCOUNTS}`);
    }
    const addresses = list.map((item) => {
      if (typeof item !== 'string') throw invalidParams('Invalid params: invalid type: expected a string.');
      return pubkey(item);
    });
    const cfg = config(params, 1);
    const { slot, commitment } = contextSlot(chain, cfg);
    const view = accountView(cfg);
    return withContext(
      slot,
      addresses.map((address) => {
        const account = chain.accountAt(address, commitment);
        return account && encodeAccount(account, view, chain, encodeBase58(address));
      }),
    );
  },

  getProgramAccounts: (params, { chain }) => {
    const program = pubkeyParam(params, 0, 'program_id');
    const cfg = config(params, 1);
    const { slot, commitment } = contextSlot(chain, cfg);
    const filters = readFilters(cfg.filters);
    const view = accountView(cfg);
    const value = chain
      .programAccountsAt(program, commitment)
      .filter(({ account }) => account.lamports > 0n && filters.every((f) => f(account)))
      .map(({ address, account }) => ({
        account: encodeAccount(account, view, chain, address),
        pubkey: address,
      }));
    return cfg.withContext === true ? withContext(slot, value) : value;
  },

  getTokenAccountsByOwner: (params, ctx) => tokenAccountsBy(params, ctx, 'owner'),
  getTokenAccountsByDelegate: (params, ctx) => tokenAccountsBy(params, ctx, 'delegate'),

  getTokenAccountBalance: (params, { chain }) => {
    const { slot, account } = tokenProgramAccountParam(params, chain);
    const state = account && decodeTokenAccount(account.data);
    if (!state) throw invalidParams('Invalid param: not a Token account');
    const decimals = chain.mintDecimals(state.mint);
    // As Agave: the mint is read as it is now, and may be gone (closed) or no mint at all.
    if (decimals === undefined) {
      const mint = decodeBase58(state.mint);
      throw invalidParams(
        mint && chain.getAccount(mint)
          ? 'Invalid param: Token mint could not be unpacked'
          : 'Invalid param: could not find mint',
      );
    }
    const ui =
      account.owner === TOKEN_2022_PROGRAM
        ? uiAmountsOfMint(chain, state.mint, decimals)
        : (amount: bigint) => uiTokenAmount(amount, decimals);
    return withContext(slot, ui(state.amount));
  },

  getTokenSupply: (params, { chain }) => {
    const { slot, account } = tokenProgramAccountParam(params, chain);
    const mint = account && decodeMint(account.data);
    const ui = account && uiAmountsOfMintAccount(chain, account);
    if (!mint || !ui) throw invalidParams('Invalid param: not a Token mint');
    return withContext(slot, ui(mint.supply));
  },

  /** The 20 token accounts of a mint holding the most, most first (Agave's NUM_LARGEST_ACCOUNTS). */
  getTokenLargestAccounts: (params, { chain }) => {
    const { address, slot, commitment, account } = tokenProgramAccountParam(params, chain);
    const ui = account && uiAmountsOfMintAccount(chain, account);
    if (!account || !ui) throw invalidParams('Invalid param: not a Token mint');
    const mintAddress = encodeBase58(address);
    const holders = chain
      .programAccountsAt(decodeBase58(account.owner) as Uint8Array, commitment)
      .flatMap(({ address: holder, account: held }) => {
        const state = decodeTokenAccount(held.data);
        return state?.mint === mintAddress ? [{ address: holder, amount: state.amount }] : [];
      })
      .sort((a, b) => (a.amount === b.amount ? 0 : a.amount > b.amount ? -1 : 1))
      .slice(0, 20);
    return withContext(
      slot,
      holders.map((holder) => ({ address: holder.address, ...ui(holder.amount) })),
    );
  },
};

/**
 * The account named by params[0], read at the request's commitment (params[1]), when a token program
 * (SPL Token or Token-2022) owns it; the token methods refuse anything else.
 */
function tokenProgramAccountParam(params: Params, chain: RpcContext['chain']) {
  const address = pubkeyParam(params, 0);
  const { slot, commitment } = contextSlot(chain, config(params, 1));
  const found = chain.accountAt(address, commitment);
  const account =
    found && (found.owner === TOKEN_PROGRAM || found.owner === TOKEN_2022_PROGRAM) ? found : undefined;
  return { address, slot, commitment, account };
}
