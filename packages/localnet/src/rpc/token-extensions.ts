// Token-2022 extensions in jsonParsed token accounts and mints, as Agave's account decoder
// (`parse_token_extension.rs`) emits them: `{ extension: "<name>", state: {…} }`, unit extensions
// without `state`, `unparseableExtension` for a known extension whose value does not have its size,
// and no extensions at all when the TLV data names a type Agave does not know or is malformed
// (its `get_extension_types()` fails and the decoder falls back to an empty list).
import { FIXED_SIZE, tlvEntries } from '../chain/token-extension-tlv.ts';
import { encodeBase58 } from '../wire/base58.ts';

type Reader = Buffer;

/** An OptionalNonZeroPubkey: 32 zero bytes mean none. */
function optionalKey(data: Reader, at: number): string | null {
  const key = data.subarray(at, at + 32);
  return key.every((b) => b === 0) ? null : encodeBase58(key);
}

/** ElGamal keys and ciphertexts, and authenticated-encryption ciphertexts: base64, as their Display. */
function base64(data: Reader, at: number, length: number): string {
  return data.subarray(at, at + length).toString('base64');
}

/** An OptionalNonZeroElGamalPubkey: zero bytes mean none. */
function optionalElGamalKey(data: Reader, at: number): string | null {
  const key = data.subarray(at, at + 32);
  return key.every((b) => b === 0) ? null : key.toString('base64');
}

/** A PodBool: any non-zero byte is true. */
function bool(data: Reader, at: number): boolean {
  return data.readUInt8(at) !== 0;
}

/** Rust's `Display` for f64: the shortest round-trip digits, never in exponent notation. */
export function rustF64(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (!Number.isFinite(value)) return value > 0 ? 'inf' : '-inf';
  const text = String(value);
  if (!/e/i.test(text)) return text === '-0' ? '-0' : text;
  const [mantissa = '', exponentText = '0'] = value.toExponential().split('e');
  const negative = mantissa.startsWith('-');
  const digits = mantissa.replace('-', '').replace('.', '');
  const exponent = Number(exponentText);
  let out: string;
  if (exponent >= 0) {
    out =
      digits.length > exponent + 1
        ? `${digits.slice(0, exponent + 1)}.${digits.slice(exponent + 1)}`
        : digits.padEnd(exponent + 1, '0');
  } else {
    out = `0.${'0'.repeat(-exponent - 1)}${digits}`;
  }
  return negative ? `-${out}` : out;
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
  if (at + 4 + length > data.length) throw new RangeError('string past the end');
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
    case 4:
      return {
        extension: 'confidentialTransferMint',
        state: {
          authority: optionalKey(v, 0),
          autoApproveNewAccounts: bool(v, 32),
          auditorElgamalPubkey: optionalElGamalKey(v, 33),
        },
      };
    case 5:
      return {
        extension: 'confidentialTransferAccount',
        state: {
          approved: bool(v, 0),
          elgamalPubkey: base64(v, 1, 32),
          pendingBalanceLo: base64(v, 33, 64),
          pendingBalanceHi: base64(v, 97, 64),
          availableBalance: base64(v, 161, 64),
          decryptableAvailableBalance: base64(v, 225, 36),
          allowConfidentialCredits: bool(v, 261),
          allowNonConfidentialCredits: bool(v, 262),
          pendingBalanceCreditCounter: v.readBigUInt64LE(263),
          maximumPendingBalanceCreditCounter: v.readBigUInt64LE(271),
          expectedPendingBalanceCreditCounter: v.readBigUInt64LE(279),
          actualPendingBalanceCreditCounter: v.readBigUInt64LE(287),
        },
      };
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
    case 16:
      return {
        extension: 'confidentialTransferFeeConfig',
        state: {
          authority: optionalKey(v, 0),
          withdrawWithheldAuthorityElgamalPubkey: optionalElGamalKey(v, 32),
          harvestToMintEnabled: bool(v, 64),
          withheldAmount: base64(v, 65, 64),
        },
      };
    case 17:
      return { extension: 'confidentialTransferFeeAmount', state: { withheldAmount: base64(v, 0, 64) } };
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
      // Borsh reads the whole value: bytes left over make it unparseable.
      if (at !== v.length) throw new RangeError('bytes after the token metadata');
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
    case 24:
      return {
        extension: 'confidentialMintBurn',
        state: {
          confidentialSupply: base64(v, 0, 64),
          decryptableSupply: base64(v, 64, 36),
          supplyElgamalPubkey: base64(v, 100, 32),
          pendingBurn: base64(v, 132, 64),
        },
      };
    case 25:
      return {
        extension: 'scaledUiAmountConfig',
        state: {
          authority: optionalKey(v, 0),
          multiplier: rustF64(v.readDoubleLE(32)),
          newMultiplierEffectiveTimestamp: v.readBigInt64LE(40),
          newMultiplier: rustF64(v.readDoubleLE(48)),
        },
      };
    case 26:
      return { extension: 'pausableConfig', state: { authority: optionalKey(v, 0), paused: bool(v, 32) } };
    case 27:
      return { extension: 'pausableAccount' };
    default:
      return { extension: 'unparseableExtension' };
  }
}

/**
 * The extensions of a Token-2022 account or mint's data, in TLV order; [] when it has none, and [] when
 * the TLV data is malformed or names a type Agave does not know (as its decoder's `unwrap_or_default`).
 */
export function parseTokenExtensions(data: Uint8Array): Record<string, unknown>[] {
  return (tlvEntries(data) ?? []).map(({ type, value }) => {
    const size = FIXED_SIZE[type];
    if (size !== undefined && value.length !== size) return { extension: 'unparseableExtension' };
    try {
      return parseExtension(type, value);
    } catch {
      return { extension: 'unparseableExtension' };
    }
  });
}
