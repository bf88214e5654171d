// Turning the text a client sends (base58 or base64) into a decoded, sanitised transaction, with
// Agave's error messages for each way it can go wrong.
import { describeTransactionError } from '../chain/transaction-error.ts';
import { decodeBase58 } from '../wire/base58.ts';
import {
  decodeWireTransaction,
  MAX_TRANSACTION_BYTES,
  WireDecodeError,
  WireSanitizeError,
  type WireTransaction,
} from '../wire/wire-transaction.ts';
import { type Config, encodingParam } from './params.ts';
import { invalidParams } from './rpc-error.ts';

const TYPE_NAME = 'solana_transaction::versioned::VersionedTransaction';
const MAX_BASE58_SIZE = 1683;
const MAX_BASE64_SIZE = 1644;

/**
 * Node's base64 decoder skips characters it does not know; Agave's does not. Canonical base64
 * survives a round trip unchanged, anything else is refused.
 */
export function decodeStrictBase64(text: string): Uint8Array | undefined {
  if (text.length % 4 !== 0) return undefined;
  const buffer = Buffer.from(text, 'base64');
  return buffer.toString('base64') === text
    ? new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.length)
    : undefined;
}

export function readTransaction(text: unknown, cfg: Config): WireTransaction {
  if (typeof text !== 'string') throw invalidParams('Invalid params: invalid type: expected a string.');
  const encoding = encodingParam(cfg, ['base58', 'base64'], 'base58');
  let bytes: Uint8Array | undefined;
  if (encoding === 'base58') {
    if (text.length > MAX_BASE58_SIZE) {
      throw invalidParams(
        `base58 encoded ${TYPE_NAME} too large: ${text.length} bytes (max: encoded/raw ${MAX_BASE58_SIZE}/${MAX_TRANSACTION_BYTES})`,
      );
    }
    bytes = decodeBase58(text);
    if (!bytes) throw invalidParams('invalid base58 encoding: InvalidCharacter');
  } else {
    if (text.length > MAX_BASE64_SIZE) {
      throw invalidParams(
        `base64 encoded ${TYPE_NAME} too large: ${text.length} bytes (max: encoded/raw ${MAX_BASE64_SIZE}/${MAX_TRANSACTION_BYTES})`,
      );
    }
    bytes = decodeStrictBase64(text);
    if (!bytes) throw invalidParams('invalid base64 encoding: InvalidByte');
  }
  if (bytes.length > MAX_TRANSACTION_BYTES) {
    throw invalidParams(
      `decoded ${TYPE_NAME} too large: ${bytes.length} bytes (max: ${MAX_TRANSACTION_BYTES} bytes)`,
    );
  }
  try {
    return decodeWireTransaction(bytes);
  } catch (error) {
    if (error instanceof WireDecodeError)
      throw invalidParams(`failed to deserialize ${TYPE_NAME}: ${error.message}`);
    if (error instanceof WireSanitizeError) {
      throw invalidParams(`invalid transaction: ${describeTransactionError(error.reason)}`);
    }
    throw error;
  }
}
