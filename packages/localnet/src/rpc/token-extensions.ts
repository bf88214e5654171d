// Token-2022 extensions in jsonParsed token accounts and mints, with Agave's `UiExtension` shapes:
// `{ extension: "<name>", state: {…} }`, unit extensions without `state`, and
// `unparseableExtension` for what is not decoded here (the confidential-transfer ones).
import { encodeBase58 } from '../wire/base58.ts';

/** Where the TLV entries start: after the 165-byte base (a mint is padded to it) and the account-type byte. */
const TLV_START = 166;

type Reader = Buffer;

/** An OptionalNonZeroPubkey: 32 zero bytes mean none. */
function optionalKey(data: Reader, at: number): string | null {
  const key = data.subarray(at, at + 32);
  return key.every((b) => b === 0) ? null : encodeBase58(key);
}

function transferFee(data: Reader, at: number) {
  return {
    epoch: data.readBigUInt64LE(at),
    maximumFee: data.readBigUInt64LE(at + 8),
    transferFeeBasisPoints: data.readUInt16LE(at + 16),
  };
}

/** Borsh strings of TokenMetadata: u32 length, then UTF-8 bytes. */
function borshString(data: Reader, at: number): [string, number] {
  const length = data.readUInt32LE(at);
  return [data.subarray(at + 4, at + 4 + length).toString('utf8'), at + 4 + length];
}

const ACCOUNT_STATES = ['uninitialized', 'initialized', 'frozen'];

function parseExtension(type: number, v: Reader): Record<string, unknown> {
  switch (type) {
    case 0:
      return { extension: 'uninitialized' };
    case 1:
      return {
        extension: 'transferFeeConfig',
        state: {
          transferFeeConfigAuthority: optionalKey(v, 0),
          withdrawWithheldAuthority: optionalKey(v, 32),
          withheldAmount: v.readBigUInt64LE(64),
          olderTransferFee: transferFee(v, 72),
          newerTransferFee: transferFee(v, 90),
        },
      };
    case 2:
      return { extension: 'transferFeeAmount', state: { withheldAmount: v.readBigUInt64LE(0) } };
    case 3:
      return { extension: 'mintCloseAuthority', state: { closeAuthority: optionalKey(v, 0) } };
    case 6:
      return {
        extension: 'defaultAccountState',
        state: { accountState: ACCOUNT_STATES[v.readUInt8(0)] ?? 'uninitialized' },
      };
    case 7:
      return { extension: 'immutableOwner' };
    case 8:
      return { extension: 'memoTransfer', state: { requireIncomingTransferMemos: v.readUInt8(0) === 1 } };
    case 9:
      return { extension: 'nonTransferable' };
    case 10:
      return {
        extension: 'interestBearingConfig',
        state: {
          rateAuthority: optionalKey(v, 0),
          initializationTimestamp: v.readBigInt64LE(32),
          preUpdateAverageRate: v.readInt16LE(40),
          lastUpdateTimestamp: v.readBigInt64LE(42),
          currentRate: v.readInt16LE(50),
        },
      };
    case 11:
      return { extension: 'cpiGuard', state: { lockCpi: v.readUInt8(0) === 1 } };
    case 12:
      return { extension: 'permanentDelegate', state: { delegate: optionalKey(v, 0) } };
    case 13:
      return { extension: 'nonTransferableAccount' };
    case 14:
      return {
        extension: 'transferHook',
        state: { authority: optionalKey(v, 0), programId: optionalKey(v, 32) },
      };
    case 15:
      return { extension: 'transferHookAccount', state: { transferring: v.readUInt8(0) === 1 } };
    case 18:
      return {
        extension: 'metadataPointer',
        state: { authority: optionalKey(v, 0), metadataAddress: optionalKey(v, 32) },
      };
    case 19: {
      let at = 64;
      const [name, afterName] = borshString(v, at);
      const [symbol, afterSymbol] = borshString(v, afterName);
      const [uri, afterUri] = borshString(v, afterSymbol);
      at = afterUri;
      const count = v.readUInt32LE(at);
      at += 4;
      const additionalMetadata: [string, string][] = [];
      for (let i = 0; i < count; i++) {
        const [key, afterKey] = borshString(v, at);
        const [value, afterValue] = borshString(v, afterKey);
        additionalMetadata.push([key, value]);
        at = afterValue;
      }
      return {
        extension: 'tokenMetadata',
        state: {
          updateAuthority: optionalKey(v, 0),
          mint: encodeBase58(v.subarray(32, 64)),
          name,
          symbol,
          uri,
          additionalMetadata,
        },
      };
    }
    case 20:
      return {
        extension: 'groupPointer',
        state: { authority: optionalKey(v, 0), groupAddress: optionalKey(v, 32) },
      };
    case 21:
      return {
        extension: 'tokenGroup',
        state: {
          updateAuthority: optionalKey(v, 0),
          mint: encodeBase58(v.subarray(32, 64)),
          size: v.readBigUInt64LE(64),
          maxSize: v.readBigUInt64LE(72),
        },
      };
    case 22:
      return {
        extension: 'groupMemberPointer',
        state: { authority: optionalKey(v, 0), memberAddress: optionalKey(v, 32) },
      };
    case 23:
      return {
        extension: 'tokenGroupMember',
        state: {
          mint: encodeBase58(v.subarray(0, 32)),
          group: encodeBase58(v.subarray(32, 64)),
          memberNumber: v.readBigUInt64LE(64),
        },
      };
    default:
      return { extension: 'unparseableExtension' };
  }
}

/** The extensions of a Token-2022 account or mint's data, in TLV order; [] when it has none. */
export function parseTokenExtensions(data: Uint8Array): Record<string, unknown>[] {
  if (data.length <= TLV_START) return [];
  const view = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  const out: Record<string, unknown>[] = [];
  let at = TLV_START;
  while (at + 4 <= view.length) {
    const type = view.readUInt16LE(at);
    const length = view.readUInt16LE(at + 2);
    // Uninitialized with no length: the rest is padding.
    if (type === 0 && length === 0) break;
    const value = view.subarray(at + 4, at + 4 + length);
    try {
      out.push(parseExtension(type, value));
    } catch {
      out.push({ extension: 'unparseableExtension' });
    }
    at += 4 + length;
  }
  return out;
}
