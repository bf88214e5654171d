// Agave's `UiAccount`: an account as getAccountInfo, getProgramAccounts and accountNotification
// return it, in base58, base64 or jsonParsed (token accounts and mints; others fall back to base64).
import type { AccountSnapshot, Chain } from '../chain/chain.ts';
import { decodeMint, decodeTokenAccount, TOKEN_2022_PROGRAM, uiTokenAmount } from '../chain/token-account.ts';
import { uiAmountsOfMint } from '../chain/ui-amount.ts';
import { encodeBase58 } from '../wire/base58.ts';
import {
  ADDRESS_LOOKUP_TABLE_PROGRAM,
  BPF_UPGRADEABLE_LOADER,
  parseAddressLookupTable,
  parseUpgradeableLoaderAccount,
} from './loader-parser.ts';
import { type Config, encodingParam, integer } from './params.ts';
import { invalidParams } from './rpc-error.ts';
import { parseSysvar } from './sysvar-parser.ts';
import { parseTokenExtensions } from './token-extensions.ts';

const SYSVAR_OWNER = 'Sysvar1111111111111111111111111111111111111';
/** spl-token's Multisig: m, n, is_initialized, then 11 signer slots. */
const MULTISIG_LEN = 3 + 11 * 32;

export type AccountEncoding = 'base58' | 'base64' | 'jsonParsed' | 'base64+zstd';
const ACCOUNT_ENCODINGS: readonly AccountEncoding[] = ['base58', 'base64', 'jsonParsed', 'base64+zstd'];
/** Agave refuses to base58-encode more than this: it is quadratic. */
const MAX_BASE58_BYTES = 128;

export interface AccountView {
  readonly encoding: AccountEncoding | 'binary';
  readonly slice: { offset: number; length: number } | undefined;
}

/** Reads `encoding` and `dataSlice` from a config; the default is Agave's legacy plain base58 string. */
export function accountView(cfg: Config, fallback: AccountEncoding | 'binary' = 'binary'): AccountView {
  const encoding =
    cfg.encoding === undefined || cfg.encoding === null
      ? fallback
      : encodingParam(cfg, ACCOUNT_ENCODINGS, 'base64');
  if (encoding === 'base64+zstd')
    throw invalidParams('Invalid params: base64+zstd encoding is not supported by this node.');
  const rawSlice = cfg.dataSlice;
  let slice: AccountView['slice'];
  if (rawSlice !== undefined && rawSlice !== null) {
    if (typeof rawSlice !== 'object')
      throw invalidParams('Invalid params: invalid type: expected struct UiDataSliceConfig.');
    const { offset, length } = rawSlice as Record<string, unknown>;
    slice = { offset: integer(offset, 'usize'), length: integer(length, 'usize') };
  }
  return { encoding, slice };
}

/** `address` lets jsonParsed name sysvars (parsed by address, as Agave does). */
export function encodeAccount(account: AccountSnapshot, view: AccountView, chain: Chain, address?: string) {
  const data = view.slice
    ? account.data.subarray(view.slice.offset, view.slice.offset + view.slice.length)
    : account.data;
  return {
    data: encodeData(account, data, view, chain, address),
    executable: account.executable,
    lamports: account.lamports,
    owner: account.owner,
    rentEpoch: account.rentEpoch,
    space: account.data.length,
  };
}

function encodeData(
  account: AccountSnapshot,
  data: Uint8Array,
  view: AccountView,
  chain: Chain,
  address: string | undefined,
): unknown {
  switch (view.encoding) {
    case 'binary':
    case 'base58':
      if (data.length > MAX_BASE58_BYTES) {
        throw invalidParams(
          `Encoded binary (base 58) data should be less than ${MAX_BASE58_BYTES} bytes, please use Base64 encoding.`,
        );
      }
      return view.encoding === 'binary' ? encodeBase58(data) : [encodeBase58(data), 'base58'];
    case 'jsonParsed': {
      const parsed = view.slice ? undefined : parseAccount(account, chain, address);
      if (parsed) return parsed;
      return [Buffer.from(data).toString('base64'), 'base64'];
    }
    default:
      return [Buffer.from(data).toString('base64'), 'base64'];
  }
}

function parseAccount(account: AccountSnapshot, chain: Chain, address: string | undefined): unknown {
  if (account.owner === SYSVAR_OWNER && address !== undefined) {
    const parsed = parseSysvar(address, account.data);
    return parsed && { program: 'sysvar', parsed, space: account.data.length };
  }
  if (account.owner === BPF_UPGRADEABLE_LOADER) {
    const parsed = parseUpgradeableLoaderAccount(account.data);
    return parsed && { program: 'bpf-upgradeable-loader', parsed, space: account.data.length };
  }
  if (account.owner === ADDRESS_LOOKUP_TABLE_PROGRAM) {
    const parsed = parseAddressLookupTable(account.data);
    return parsed && { program: 'address-lookup-table', parsed, space: account.data.length };
  }
  const program = account.owner === TOKEN_2022_PROGRAM ? 'spl-token-2022' : 'spl-token';
  if (
    account.owner !== TOKEN_2022_PROGRAM &&
    account.owner !== 'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA'
  ) {
    return undefined;
  }
  const tokenAccount = decodeTokenAccount(account.data);
  if (tokenAccount) {
    // As Agave: the mint as the chain holds it now; none once it is closed (Token-2022
    // MintCloseAuthority), so the account is answered in base64 instead.
    const decimals = chain.mintDecimals(tokenAccount.mint);
    if (decimals === undefined) return undefined;
    // A Token-2022 mint may show amounts with interest or a multiplier (as Agave, all three amounts).
    const ui =
      account.owner === TOKEN_2022_PROGRAM
        ? uiAmountsOfMint(chain, tokenAccount.mint, decimals)
        : (amount: bigint) => uiTokenAmount(amount, decimals);
    const info: Record<string, unknown> = {
      isNative: tokenAccount.isNative !== null,
      mint: tokenAccount.mint,
      owner: tokenAccount.owner,
      state: tokenAccount.state === 2 ? 'frozen' : 'initialized',
      tokenAmount: ui(tokenAccount.amount),
    };
    if (tokenAccount.delegate !== null) {
      info.delegate = tokenAccount.delegate;
      info.delegatedAmount = ui(tokenAccount.delegatedAmount);
    }
    if (tokenAccount.isNative !== null) info.rentExemptReserve = ui(tokenAccount.isNative);
    if (tokenAccount.closeAuthority !== null) info.closeAuthority = tokenAccount.closeAuthority;
    withExtensions(info, account);
    return { program, parsed: { info, type: 'account' }, space: account.data.length };
  }
  const mint = decodeMint(account.data);
  if (mint) {
    const info: Record<string, unknown> = {
      decimals: mint.decimals,
      freezeAuthority: mint.freezeAuthority,
      isInitialized: mint.isInitialized,
      mintAuthority: mint.mintAuthority,
      supply: mint.supply.toString(),
    };
    withExtensions(info, account);
    return { program, parsed: { info, type: 'mint' }, space: account.data.length };
  }
  const multisig = decodeMultisig(account.data);
  if (multisig) return { program, parsed: { info: multisig, type: 'multisig' }, space: account.data.length };
  return undefined;
}

/** Agave's UiMultisig: an initialised 355-byte multisig, its signers without the unused (zero) slots. */
function decodeMultisig(data: Uint8Array): Record<string, unknown> | undefined {
  if (data.length !== MULTISIG_LEN || data[2] !== 1) return undefined;
  const signers: string[] = [];
  for (let at = 3; at < MULTISIG_LEN; at += 32) {
    const key = data.subarray(at, at + 32);
    if (key.some((b) => b !== 0)) signers.push(encodeBase58(key));
  }
  return { numRequiredSigners: data[0], numValidSigners: data[1], isInitialized: true, signers };
}

/** Token-2022 extensions, as Agave: the `extensions` field only when there are any. */
function withExtensions(info: Record<string, unknown>, account: AccountSnapshot): void {
  if (account.owner !== TOKEN_2022_PROGRAM) return;
  const extensions = parseTokenExtensions(account.data);
  if (extensions.length > 0) info.extensions = extensions;
}
