// The TLV area of Token-2022 accounts and mints, read as spl-token-2022 (and Agave's decoder) read it:
// what the chain needs to know of a mint's extensions (how its amounts read) and what the RPC renders.

/** Where the TLV entries start: after the 165-byte base (a mint is padded to it) and the account-type byte. */
const TLV_START = 166;
/** The last ExtensionType Agave's decoder knows (PausableAccount). */
const LAST_KNOWN_EXTENSION = 27;

/** The size of each fixed-size extension's value (Agave reads them with `pod_from_bytes`: exact size). */
export const FIXED_SIZE: Record<number, number> = {
  1: 108, // TransferFeeConfig
  2: 8, // TransferFeeAmount
  3: 32, // MintCloseAuthority
  4: 65, // ConfidentialTransferMint
  5: 295, // ConfidentialTransferAccount
  6: 1, // DefaultAccountState
  8: 1, // MemoTransfer
  10: 52, // InterestBearingConfig
  11: 1, // CpiGuard
  12: 32, // PermanentDelegate
  14: 64, // TransferHook
  15: 1, // TransferHookAccount
  16: 129, // ConfidentialTransferFeeConfig
  17: 64, // ConfidentialTransferFeeAmount
  18: 64, // MetadataPointer
  20: 64, // GroupPointer
  21: 80, // TokenGroup
  22: 64, // GroupMemberPointer
  23: 72, // TokenGroupMember
  24: 196, // ConfidentialMintBurn
  25: 56, // ScaledUiAmountConfig
  26: 33, // PausableConfig
};

/**
 * The TLV entries of a Token-2022 account or mint's data, in order; undefined when the data is malformed
 * or names a type Agave does not know (spl-token-2022's get_tlv_data_info fails): too few bytes for a
 * type, or an Uninitialized type, end the list; a type without room for its length, or a value running
 * past the end, is malformed.
 */
export function tlvEntries(data: Uint8Array): { type: number; value: Buffer }[] | undefined {
  if (data.length <= TLV_START) return [];
  const view = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  const entries: { type: number; value: Buffer }[] = [];
  let at = TLV_START;
  while (at + 2 <= view.length) {
    const type = view.readUInt16LE(at);
    if (type > LAST_KNOWN_EXTENSION) return undefined;
    if (type === 0) break;
    if (at + 4 > view.length) return undefined;
    const length = view.readUInt16LE(at + 2);
    if (at + 4 + length > view.length) return undefined;
    entries.push({ type, value: view.subarray(at + 4, at + 4 + length) });
    at += 4 + length;
  }
  return entries;
}

/** The value of a fixed-size extension `type` (as `get_extension`: present and of its exact size). */
export function fixedExtension(data: Uint8Array, type: number): Buffer | undefined {
  const value = tlvEntries(data)?.find((entry) => entry.type === type)?.value;
  return value !== undefined && value.length === FIXED_SIZE[type] ? value : undefined;
}
