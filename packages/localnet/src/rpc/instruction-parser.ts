// jsonParsed instructions: System, SPL Token and Token-2022 (one parser, program "spl-token", as
// Agave: every base instruction, the transfer-fee extension and a few other Token-2022 ones),
// Associated Token Account and Memo, in Agave's `ParsedInstruction` shape. Anything else (or anything that
// fails to parse) is `PartiallyDecoded`: program id, account addresses, base58 data.

import { MEMO_PROGRAMS } from '../chain/memo-programs.ts';
import { TOKEN_2022_PROGRAM, TOKEN_PROGRAM, uiTokenAmount } from '../chain/token-account.ts';
import { encodeBase58 } from '../wire/base58.ts';

const SYSTEM_PROGRAM = '11111111111111111111111111111111';
const ATA_PROGRAM = 'ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL';
const MEMO_PROGRAM_IDS = new Set(MEMO_PROGRAMS);

type Parsed = { type: string; info: Record<string, unknown> };

export function parseInstruction(
  programId: string,
  accounts: readonly string[],
  data: Uint8Array,
  stackHeight: number | null,
): unknown {
  let program: string | undefined;
  let parsed: Parsed | string | undefined;
  try {
    if (programId === SYSTEM_PROGRAM) {
      program = 'system';
      parsed = parseSystem(accounts, data);
    } else if (programId === TOKEN_PROGRAM || programId === TOKEN_2022_PROGRAM) {
      // Agave parses both token programs' instructions as one program, named "spl-token".
      program = 'spl-token';
      parsed = parseToken(accounts, data);
    } else if (programId === ATA_PROGRAM) {
      program = 'spl-associated-token-account';
      parsed = parseAssociatedTokenAccount(accounts, data);
    } else if (MEMO_PROGRAM_IDS.has(programId)) {
      program = 'spl-memo';
      parsed = new TextDecoder('utf-8', { fatal: true }).decode(data);
    }
  } catch {
    parsed = undefined;
  }
  if (program !== undefined && parsed !== undefined) return { parsed, program, programId, stackHeight };
  return { accounts, data: encodeBase58(data), programId, stackHeight };
}

class Cursor {
  private offset = 0;
  private readonly view: DataView;
  constructor(private readonly data: Uint8Array) {
    this.view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  }
  u8(): number {
    return this.view.getUint8(this.offset++);
  }
  u16(): number {
    const value = this.view.getUint16(this.offset, true);
    this.offset += 2;
    return value;
  }
  u32(): number {
    const value = this.view.getUint32(this.offset, true);
    this.offset += 4;
    return value;
  }
  /** A token instruction's COption<Pubkey>: a tag byte, then the key when the tag is 1. */
  optionalKey(): string | null {
    const tag = this.u8();
    if (tag === 0) return null;
    if (tag !== 1) throw new RangeError('bad option tag');
    return this.key();
  }
  i16(): number {
    const value = this.view.getInt16(this.offset, true);
    this.offset += 2;
    return value;
  }
  take(length: number): Uint8Array {
    if (this.offset + length > this.data.length) throw new RangeError('short data');
    const value = this.data.subarray(this.offset, this.offset + length);
    this.offset += length;
    return value;
  }
  remaining(): number {
    return this.data.length - this.offset;
  }
  rest(): Uint8Array {
    const value = this.data.subarray(this.offset);
    this.offset = this.data.length;
    return value;
  }
  u64(): bigint {
    const value = this.view.getBigUint64(this.offset, true);
    this.offset += 8;
    return value;
  }
  key(): string {
    if (this.offset + 32 > this.data.length) throw new RangeError('short key');
    const value = encodeBase58(this.data.subarray(this.offset, this.offset + 32));
    this.offset += 32;
    return value;
  }
}

/** The account at `index`, or a throw (caught above: the instruction is then left unparsed). */
function at(accounts: readonly string[], index: number): string {
  const account = accounts[index];
  if (account === undefined) throw new RangeError('missing account');
  return account;
}

function parseSystem(accounts: readonly string[], data: Uint8Array): Parsed | undefined {
  const c = new Cursor(data);
  switch (c.u32()) {
    case 0: {
      const lamports = c.u64();
      const space = c.u64();
      return {
        type: 'createAccount',
        info: { source: at(accounts, 0), newAccount: at(accounts, 1), lamports, space, owner: c.key() },
      };
    }
    case 1:
      return { type: 'assign', info: { account: at(accounts, 0), owner: c.key() } };
    case 2:
      return {
        type: 'transfer',
        info: { source: at(accounts, 0), destination: at(accounts, 1), lamports: c.u64() },
      };
    case 4:
      return {
        type: 'advanceNonce',
        info: {
          nonceAccount: at(accounts, 0),
          recentBlockhashesSysvar: at(accounts, 1),
          nonceAuthority: at(accounts, 2),
        },
      };
    case 8:
      return { type: 'allocate', info: { account: at(accounts, 0), space: c.u64() } };
    default:
      return undefined;
  }
}

/** spl-token-2022's AuthorityType, as Agave's UiAuthorityType names them. */
const AUTHORITY_TYPES = [
  'mintTokens',
  'freezeAccount',
  'accountOwner',
  'closeAccount',
  'transferFeeConfig',
  'withheldWithdraw',
  'closeMint',
  'interestRate',
  'permanentDelegate',
  'confidentialTransferMint',
  'transferHookProgramId',
  'confidentialTransferFeeConfig',
  'metadataPointer',
  'groupPointer',
  'groupMemberPointer',
  'scaledUiAmount',
  'pause',
  'permissionedBurn',
];
/** spl-token-2022's ExtensionType, as Agave's UiExtensionType names them. */
const EXTENSION_TYPES = [
  'uninitialized',
  'transferFeeConfig',
  'transferFeeAmount',
  'mintCloseAuthority',
  'confidentialTransferMint',
  'confidentialTransferAccount',
  'defaultAccountState',
  'immutableOwner',
  'memoTransfer',
  'nonTransferable',
  'interestBearingConfig',
  'cpiGuard',
  'permanentDelegate',
  'nonTransferableAccount',
  'transferHook',
  'transferHookAccount',
  'confidentialTransferFeeConfig',
  'confidentialTransferFeeAmount',
  'metadataPointer',
  'tokenMetadata',
  'groupPointer',
  'tokenGroup',
  'groupMemberPointer',
  'tokenGroupMember',
  'confidentialMintBurn',
  'scaledUiAmount',
  'pausable',
  'pausableAccount',
  'permissionedBurn',
];

/**
 * Agave's parse_signers: the account at `index` is the authority, or — with more accounts after it —
 * a multisig whose signers follow.
 */
function withSigners(
  info: Record<string, unknown>,
  accounts: readonly string[],
  index: number,
  ownerName: string,
  multisigName: string,
): Record<string, unknown> {
  const owner = accounts[index];
  if (accounts.length > index + 1) {
    if (owner !== undefined) info[multisigName] = owner;
    info.signers = accounts.slice(index + 1);
  } else if (owner !== undefined) info[ownerName] = owner;
  return info;
}

/** Agave's check_num_token_accounts: fewer accounts than the instruction needs is not parsable. */
function need(accounts: readonly string[], count: number): void {
  if (accounts.length < count) throw new RangeError('not enough accounts');
}

/** SPL Token and Token-2022 instructions, as Agave's transaction-status parse_token. */
function parseToken(accounts: readonly string[], data: Uint8Array): Parsed | undefined {
  const c = new Cursor(data);
  const amount = (type: string, keys: Record<string, number>, signer: [number, string, string]) => {
    need(accounts, signer[0] + 1);
    const info: Record<string, unknown> = {};
    for (const [name, index] of Object.entries(keys)) info[name] = at(accounts, index);
    info.amount = c.u64().toString();
    return { type, info: withSigners(info, accounts, ...signer) };
  };
  const checked = (type: string, keys: Record<string, number>, signer: [number, string, string]) => {
    need(accounts, signer[0] + 1);
    const info: Record<string, unknown> = {};
    for (const [name, index] of Object.entries(keys)) info[name] = at(accounts, index);
    const value = c.u64();
    info.tokenAmount = uiTokenAmount(value, c.u8());
    return { type, info: withSigners(info, accounts, ...signer) };
  };
  const plain = (type: string, keys: Record<string, number>, signer: [number, string, string]) => {
    need(accounts, signer[0] + 1);
    const info: Record<string, unknown> = {};
    for (const [name, index] of Object.entries(keys)) info[name] = at(accounts, index);
    return { type, info: withSigners(info, accounts, ...signer) };
  };
  const initializeMint = (type: string, withRent: boolean) => {
    need(accounts, withRent ? 2 : 1);
    const decimals = c.u8();
    const mintAuthority = c.key();
    const freezeAuthority = c.optionalKey();
    const info: Record<string, unknown> = { mint: at(accounts, 0), decimals, mintAuthority };
    if (withRent) info.rentSysvar = at(accounts, 1);
    if (freezeAuthority !== null) info.freezeAuthority = freezeAuthority;
    return { type, info };
  };
  switch (c.u8()) {
    case 0:
      return initializeMint('initializeMint', true);
    case 1:
      need(accounts, 4);
      return {
        type: 'initializeAccount',
        info: {
          account: at(accounts, 0),
          mint: at(accounts, 1),
          owner: at(accounts, 2),
          rentSysvar: at(accounts, 3),
        },
      };
    case 2: {
      need(accounts, 3);
      const m = c.u8();
      return {
        type: 'initializeMultisig',
        info: { multisig: at(accounts, 0), rentSysvar: at(accounts, 1), signers: accounts.slice(2), m },
      };
    }
    case 3:
      return amount('transfer', { source: 0, destination: 1 }, [2, 'authority', 'multisigAuthority']);
    case 4:
      return amount('approve', { source: 0, delegate: 1 }, [2, 'owner', 'multisigOwner']);
    case 5:
      return plain('revoke', { source: 0 }, [1, 'owner', 'multisigOwner']);
    case 6: {
      need(accounts, 2);
      const authorityType = AUTHORITY_TYPES[c.u8()];
      if (authorityType === undefined) return undefined;
      const owned = authorityType === 'accountOwner' || authorityType === 'closeAccount' ? 'account' : 'mint';
      const info: Record<string, unknown> = {
        [owned]: at(accounts, 0),
        authorityType,
        newAuthority: c.optionalKey(),
      };
      return { type: 'setAuthority', info: withSigners(info, accounts, 1, 'authority', 'multisigAuthority') };
    }
    case 7:
      return amount('mintTo', { mint: 0, account: 1 }, [2, 'mintAuthority', 'multisigMintAuthority']);
    case 8:
      return amount('burn', { account: 0, mint: 1 }, [2, 'authority', 'multisigAuthority']);
    case 9:
      return plain('closeAccount', { account: 0, destination: 1 }, [2, 'owner', 'multisigOwner']);
    case 10:
      return plain('freezeAccount', { account: 0, mint: 1 }, [
        2,
        'freezeAuthority',
        'multisigFreezeAuthority',
      ]);
    case 11:
      return plain('thawAccount', { account: 0, mint: 1 }, [2, 'freezeAuthority', 'multisigFreezeAuthority']);
    case 12:
      return checked('transferChecked', { source: 0, mint: 1, destination: 2 }, [
        3,
        'authority',
        'multisigAuthority',
      ]);
    case 13:
      return checked('approveChecked', { source: 0, mint: 1, delegate: 2 }, [3, 'owner', 'multisigOwner']);
    case 14:
      return checked('mintToChecked', { mint: 0, account: 1 }, [2, 'mintAuthority', 'multisigMintAuthority']);
    case 15:
      return checked('burnChecked', { account: 0, mint: 1 }, [2, 'authority', 'multisigAuthority']);
    case 16:
      need(accounts, 3);
      return {
        type: 'initializeAccount2',
        info: {
          account: at(accounts, 0),
          mint: at(accounts, 1),
          owner: c.key(),
          rentSysvar: at(accounts, 2),
        },
      };
    case 17:
      need(accounts, 1);
      return { type: 'syncNative', info: { account: at(accounts, 0) } };
    case 18:
      need(accounts, 2);
      return {
        type: 'initializeAccount3',
        info: { account: at(accounts, 0), mint: at(accounts, 1), owner: c.key() },
      };
    case 19: {
      need(accounts, 2);
      const m = c.u8();
      return {
        type: 'initializeMultisig2',
        info: { multisig: at(accounts, 0), signers: accounts.slice(1), m },
      };
    }
    case 20:
      return initializeMint('initializeMint2', false);
    case 21: {
      need(accounts, 1);
      const info: Record<string, unknown> = { mint: at(accounts, 0) };
      if (c.remaining() % 2 !== 0) return undefined;
      const types: string[] = [];
      while (c.remaining() > 0) {
        const name = EXTENSION_TYPES[c.u16()];
        if (name === undefined) return undefined;
        types.push(name);
      }
      if (types.length > 0) info.extensionTypes = types;
      return { type: 'getAccountDataSize', info };
    }
    case 22:
      need(accounts, 1);
      return { type: 'initializeImmutableOwner', info: { account: at(accounts, 0) } };
    case 23:
      need(accounts, 1);
      return { type: 'amountToUiAmount', info: { mint: at(accounts, 0), amount: c.u64().toString() } };
    case 24:
      need(accounts, 1);
      return {
        type: 'uiAmountToAmount',
        info: { mint: at(accounts, 0), uiAmount: new TextDecoder('utf-8', { fatal: true }).decode(c.rest()) },
      };
    case 25:
      need(accounts, 1);
      return {
        type: 'initializeMintCloseAuthority',
        info: { mint: at(accounts, 0), newAuthority: c.optionalKey() },
      };
    case 26:
      return parseTransferFee(accounts, c);
    case 28: {
      // DefaultAccountStateExtension: [sub-instruction, account state] (Agave wants more than 2 bytes).
      if (data.length <= 2) return undefined;
      const sub = c.u8();
      const accountState = ACCOUNT_STATES[c.u8()];
      if (accountState === undefined) return undefined;
      if (sub === 0) {
        need(accounts, 1);
        return { type: 'initializeDefaultAccountState', info: { mint: at(accounts, 0), accountState } };
      }
      if (sub !== 1) return undefined;
      need(accounts, 2);
      return {
        type: 'updateDefaultAccountState',
        info: withSigners(
          { mint: at(accounts, 0), accountState },
          accounts,
          1,
          'freezeAuthority',
          'multisigFreezeAuthority',
        ),
      };
    }
    case 30: {
      const sub = c.u8();
      if (sub !== 0 && sub !== 1) return undefined;
      need(accounts, 2);
      return {
        type: sub === 0 ? 'enableRequiredMemoTransfers' : 'disableRequiredMemoTransfers',
        info: withSigners({ account: at(accounts, 0) }, accounts, 1, 'owner', 'multisigOwner'),
      };
    }
    case 33: {
      const sub = c.u8();
      if (sub === 0 && c.remaining() === 34) {
        need(accounts, 1);
        const rateAuthority = nonZeroKey(c);
        return {
          type: 'initializeInterestBearingConfig',
          info: { mint: at(accounts, 0), rateAuthority, rate: c.i16() },
        };
      }
      if (sub === 1 && c.remaining() === 2) {
        need(accounts, 2);
        return {
          type: 'updateInterestBearingConfigRate',
          info: withSigners(
            { mint: at(accounts, 0), newRate: c.i16() },
            accounts,
            1,
            'rateAuthority',
            'multisigRateAuthority',
          ),
        };
      }
      return undefined;
    }
    case 39:
      return parsePointer(accounts, c, 'MetadataPointer', 'metadataAddress');
    case 40:
      return parsePointer(accounts, c, 'GroupPointer', 'groupAddress');
    case 41:
      return parsePointer(accounts, c, 'GroupMemberPointer', 'memberAddress');
    case 31:
      need(accounts, 3);
      return {
        type: 'createNativeMint',
        info: { payer: at(accounts, 0), nativeMint: at(accounts, 1), systemProgram: at(accounts, 2) },
      };
    case 32:
      need(accounts, 1);
      return { type: 'initializeNonTransferableMint', info: { mint: at(accounts, 0) } };
    case 35:
      need(accounts, 1);
      return { type: 'initializePermanentDelegate', info: { mint: at(accounts, 0), delegate: c.key() } };
    case 38:
      return plain('withdrawExcessLamports', { source: 0, destination: 1 }, [
        2,
        'authority',
        'multisigAuthority',
      ]);
    default:
      // The token metadata interface (8-byte discriminators no token instruction tag collides with);
      // the other Token-2022 extension instructions are left partially decoded here.
      return parseTokenMetadata(accounts, data);
  }
}

const ACCOUNT_STATES = ['uninitialized', 'initialized', 'frozen'];

/** An OptionalNonZeroPubkey (32 bytes, zero for none). */
function nonZeroKey(c: Cursor): string | null {
  const key = c.key();
  return key === '11111111111111111111111111111111' ? null : key;
}

/** Metadata, group and group-member pointers: Initialize { authority, address } and Update { address }. */
function parsePointer(
  accounts: readonly string[],
  c: Cursor,
  name: string,
  field: string,
): Parsed | undefined {
  const sub = c.u8();
  if (sub === 0 && c.remaining() === 64) {
    need(accounts, 1);
    const info: Record<string, unknown> = { mint: at(accounts, 0) };
    const authority = nonZeroKey(c);
    const address = nonZeroKey(c);
    if (authority !== null) info.authority = authority;
    if (address !== null) info[field] = address;
    return { type: `initialize${name}`, info };
  }
  if (sub === 1 && c.remaining() === 32) {
    need(accounts, 2);
    const info: Record<string, unknown> = { mint: at(accounts, 0) };
    const address = nonZeroKey(c);
    if (address !== null) info[field] = address;
    return { type: `update${name}`, info: withSigners(info, accounts, 1, 'authority', 'multisigAuthority') };
  }
  return undefined;
}

/** spl-token-metadata-interface discriminators: sha256("spl_token_metadata_interface:<name>")[..8]. */
const TOKEN_METADATA = {
  initialize: 'd2e11ea258b84d8d',
  updateField: 'dde9312db5cadcc8',
  removeKey: 'ea122038598d25b5',
  updateAuthority: 'd7e4a6e45464567b',
  emit: 'faa6b4fa0d0cb846',
};

/** The token metadata interface's instructions, as Agave's parse_token_metadata_instruction. */
function parseTokenMetadata(accounts: readonly string[], data: Uint8Array): Parsed | undefined {
  if (data.length < 8) return undefined;
  const discriminator = Buffer.from(data.subarray(0, 8)).toString('hex');
  const c = new Cursor(data.subarray(8));
  const text = () => {
    const length = c.u32();
    if (length > c.remaining()) throw new RangeError('string past the end');
    return new TextDecoder('utf-8', { fatal: true }).decode(c.take(length));
  };
  const done = <T>(value: T): T => {
    // Borsh reads the whole instruction: bytes left over make it unparsable.
    if (c.remaining() !== 0) throw new RangeError('bytes left over');
    return value;
  };
  switch (discriminator) {
    case TOKEN_METADATA.initialize: {
      need(accounts, 4);
      const name = text();
      const symbol = text();
      const uri = text();
      return done({
        type: 'initializeTokenMetadata',
        info: {
          metadata: at(accounts, 0),
          updateAuthority: at(accounts, 1),
          mint: at(accounts, 2),
          mintAuthority: at(accounts, 3),
          name,
          symbol,
          uri,
        },
      });
    }
    case TOKEN_METADATA.updateField: {
      need(accounts, 2);
      const kind = c.u8();
      const field =
        kind === 0 ? 'name' : kind === 1 ? 'symbol' : kind === 2 ? 'uri' : kind === 3 ? text() : undefined;
      if (field === undefined) return undefined;
      const value = text();
      return done({
        type: 'updateTokenMetadataField',
        info: { metadata: at(accounts, 0), updateAuthority: at(accounts, 1), field, value },
      });
    }
    case TOKEN_METADATA.removeKey: {
      need(accounts, 2);
      const flag = c.u8();
      if (flag > 1) return undefined;
      const key = text();
      return done({
        type: 'removeTokenMetadataKey',
        info: { metadata: at(accounts, 0), updateAuthority: at(accounts, 1), key, idempotent: flag === 1 },
      });
    }
    case TOKEN_METADATA.updateAuthority: {
      need(accounts, 2);
      const newAuthority = nonZeroKey(c);
      return done({
        type: 'updateTokenMetadataAuthority',
        info: { metadata: at(accounts, 0), updateAuthority: at(accounts, 1), newAuthority },
      });
    }
    case TOKEN_METADATA.emit: {
      need(accounts, 1);
      const optionalU64 = () => {
        const tag = c.u8();
        if (tag === 0) return undefined;
        if (tag !== 1) throw new RangeError('bad option tag');
        return c.u64();
      };
      const start = optionalU64();
      const end = optionalU64();
      const info: Record<string, unknown> = { metadata: at(accounts, 0) };
      if (start !== undefined) info.start = start;
      if (end !== undefined) info.end = end;
      return done({ type: 'emitTokenMetadata', info });
    }
    default:
      return undefined;
  }
}

/** Token-2022's TransferFeeExtension instructions (tag 26), as Agave's parse_transfer_fee_instruction. */
function parseTransferFee(accounts: readonly string[], c: Cursor): Parsed | undefined {
  switch (c.u8()) {
    case 0: {
      need(accounts, 1);
      const configAuthority = c.optionalKey();
      const withdrawAuthority = c.optionalKey();
      const info: Record<string, unknown> = {
        mint: at(accounts, 0),
        transferFeeBasisPoints: c.u16(),
        maximumFee: c.u64(),
      };
      if (configAuthority !== null) info.transferFeeConfigAuthority = configAuthority;
      if (withdrawAuthority !== null) info.withdrawWithheldAuthority = withdrawAuthority;
      return { type: 'initializeTransferFeeConfig', info };
    }
    case 1: {
      need(accounts, 4);
      const amount = c.u64();
      const decimals = c.u8();
      const fee = c.u64();
      const info: Record<string, unknown> = {
        source: at(accounts, 0),
        mint: at(accounts, 1),
        destination: at(accounts, 2),
        tokenAmount: uiTokenAmount(amount, decimals),
        feeAmount: uiTokenAmount(fee, decimals),
      };
      return {
        type: 'transferCheckedWithFee',
        info: withSigners(info, accounts, 3, 'authority', 'multisigAuthority'),
      };
    }
    case 2: {
      need(accounts, 3);
      const info = { mint: at(accounts, 0), feeRecipient: at(accounts, 1) };
      return {
        type: 'withdrawWithheldTokensFromMint',
        info: withSigners(
          info,
          accounts,
          2,
          'withdrawWithheldAuthority',
          'multisigWithdrawWithheldAuthority',
        ),
      };
    }
    case 3: {
      const count = c.u8();
      need(accounts, 3 + count);
      const first = accounts.length - count;
      const info: Record<string, unknown> = {
        mint: at(accounts, 0),
        feeRecipient: at(accounts, 1),
        sourceAccounts: accounts.slice(first),
      };
      return {
        type: 'withdrawWithheldTokensFromAccounts',
        info: withSigners(
          info,
          accounts.slice(0, first),
          2,
          'withdrawWithheldAuthority',
          'multisigWithdrawWithheldAuthority',
        ),
      };
    }
    case 4:
      need(accounts, 1);
      return {
        type: 'harvestWithheldTokensToMint',
        info: { mint: at(accounts, 0), sourceAccounts: accounts.slice(1) },
      };
    case 5: {
      need(accounts, 2);
      const info = { mint: at(accounts, 0), transferFeeBasisPoints: c.u16(), maximumFee: c.u64() };
      // (Agave spells this multisig field with a lower-case t.)
      return {
        type: 'setTransferFee',
        info: withSigners(
          info,
          accounts,
          1,
          'transferFeeConfigAuthority',
          'multisigtransferFeeConfigAuthority',
        ),
      };
    }
    default:
      return undefined;
  }
}

function parseAssociatedTokenAccount(accounts: readonly string[], data: Uint8Array): Parsed | undefined {
  const kind = data.length === 0 ? 0 : data[0];
  if (kind === 2 && data.length === 1) {
    need(accounts, 7);
    return {
      type: 'recoverNested',
      info: {
        nestedSource: at(accounts, 0),
        nestedMint: at(accounts, 1),
        destination: at(accounts, 2),
        nestedOwner: at(accounts, 3),
        ownerMint: at(accounts, 4),
        wallet: at(accounts, 5),
        tokenProgram: at(accounts, 6),
      },
    };
  }
  if ((kind !== 0 && kind !== 1) || data.length > 1) return undefined;
  need(accounts, 6);
  return {
    type: kind === 0 ? 'create' : 'createIdempotent',
    info: {
      source: at(accounts, 0),
      account: at(accounts, 1),
      wallet: at(accounts, 2),
      mint: at(accounts, 3),
      systemProgram: at(accounts, 4),
      tokenProgram: at(accounts, 5),
    },
  };
}
