// jsonParsed instructions: System, SPL Token (and Token-2022, same layouts for these), Associated
// Token Account and Memo, in Agave's `ParsedInstruction` shape. Anything else (or anything that
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
      program = programId === TOKEN_PROGRAM ? 'spl-token' : 'spl-token-2022';
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
  u32(): number {
    const value = this.view.getUint32(this.offset, true);
    this.offset += 4;
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

function parseToken(accounts: readonly string[], data: Uint8Array): Parsed | undefined {
  const c = new Cursor(data);
  const amount = (type: string, keys: Record<string, number>) => {
    const info: Record<string, unknown> = {};
    for (const [name, index] of Object.entries(keys)) info[name] = at(accounts, index);
    info.amount = c.u64().toString();
    return { type, info };
  };
  const checked = (type: string, keys: Record<string, number>) => {
    const info: Record<string, unknown> = {};
    for (const [name, index] of Object.entries(keys)) info[name] = at(accounts, index);
    const value = c.u64();
    info.tokenAmount = uiTokenAmount(value, c.u8());
    return { type, info };
  };
  switch (c.u8()) {
    case 1:
      return {
        type: 'initializeAccount',
        info: {
          account: at(accounts, 0),
          mint: at(accounts, 1),
          owner: at(accounts, 2),
          rentSysvar: at(accounts, 3),
        },
      };
    case 3:
      return amount('transfer', { source: 0, destination: 1, authority: 2 });
    case 4:
      return amount('approve', { source: 0, delegate: 1, owner: 2 });
    case 7:
      return amount('mintTo', { mint: 0, account: 1, mintAuthority: 2 });
    case 8:
      return amount('burn', { account: 0, mint: 1, authority: 2 });
    case 9:
      return {
        type: 'closeAccount',
        info: { account: at(accounts, 0), destination: at(accounts, 1), owner: at(accounts, 2) },
      };
    case 12:
      return checked('transferChecked', { source: 0, mint: 1, destination: 2, authority: 3 });
    case 14:
      return checked('mintToChecked', { mint: 0, account: 1, mintAuthority: 2 });
    case 15:
      return checked('burnChecked', { account: 0, mint: 1, authority: 2 });
    case 17:
      return { type: 'syncNative', info: { account: at(accounts, 0) } };
    case 18:
      return {
        type: 'initializeAccount3',
        info: { account: at(accounts, 0), mint: at(accounts, 1), owner: c.key() },
      };
    default:
      return undefined;
  }
}

function parseAssociatedTokenAccount(accounts: readonly string[], data: Uint8Array): Parsed | undefined {
  const kind = data.length === 0 ? 0 : data[0];
  if (kind !== 0 && kind !== 1) return undefined;
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
