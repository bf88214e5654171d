// A landed transaction as getTransaction and getBlock return it (Agave's
// `EncodedTransactionWithStatusMeta`): json, jsonParsed, base64 or base58.

import { uiTokenAmount } from '../chain/token-account.ts';
import type { TokenBalance, TransactionMeta, TransactionRecord } from '../chain/transaction-record.ts';
import { encodeBase58 } from '../wire/base58.ts';
import { decodeWireTransaction, isStaticWritable, type WireTransaction } from '../wire/wire-transaction.ts';
import { parseInstruction } from './instruction-parser.ts';
import { unsupportedTransactionVersion } from './rpc-error.ts';

export type TransactionEncoding = 'json' | 'jsonParsed' | 'base64' | 'base58';
export const TRANSACTION_ENCODINGS: readonly TransactionEncoding[] = [
  'json',
  'jsonParsed',
  'base64',
  'base58',
];

export interface EncodeOptions {
  readonly encoding: TransactionEncoding;
  /** Absent: legacy only, and no `version` field (Agave's behaviour for old clients). */
  readonly maxSupportedTransactionVersion: number | undefined;
}

export function encodeTransactionWithMeta(record: TransactionRecord, options: EncodeOptions) {
  const tx = decodeWireTransaction(record.wire);
  if (tx.version === 0 && options.maxSupportedTransactionVersion === undefined)
    throw unsupportedTransactionVersion(0);
  const result: Record<string, unknown> = {
    transaction: encodeTransaction(tx, record, options.encoding),
    meta: encodeMeta(record, options.encoding),
  };
  if (options.maxSupportedTransactionVersion !== undefined) result.version = tx.version;
  return result;
}

function encodeTransaction(
  tx: WireTransaction,
  record: TransactionRecord,
  encoding: TransactionEncoding,
): unknown {
  if (encoding === 'base64') return [Buffer.from(tx.bytes).toString('base64'), 'base64'];
  if (encoding === 'base58') return [encodeBase58(tx.bytes), 'base58'];
  const signatures = tx.signatures.map(encodeBase58);
  const lookups =
    tx.version === 0
      ? {
          addressTableLookups: tx.lookups.map((l) => ({
            accountKey: encodeBase58(l.accountKey),
            writableIndexes: [...l.writableIndexes],
            readonlyIndexes: [...l.readonlyIndexes],
          })),
        }
      : {};
  if (encoding === 'json') {
    return {
      message: {
        accountKeys: tx.staticKeys.map(encodeBase58),
        header: tx.header,
        instructions: tx.instructions.map((ix) => ({
          accounts: [...ix.accounts],
          data: encodeBase58(ix.data),
          programIdIndex: ix.programIdIndex,
          stackHeight: null,
        })),
        recentBlockhash: encodeBase58(tx.recentBlockhash),
        ...lookups,
      },
      signatures,
    };
  }
  const keys = record.accountKeys;
  const programIndexes = new Set(tx.instructions.map((ix) => ix.programIdIndex));
  const loadedWritable = new Set(record.meta.loadedAddresses.writable);
  return {
    message: {
      accountKeys: keys.map((pubkey, index) => {
        const isStatic = index < tx.staticKeys.length;
        return {
          pubkey,
          signer: index < tx.header.numRequiredSignatures,
          source: isStatic ? 'transaction' : 'lookupTable',
          writable: isStatic
            ? isStaticWritable(tx, index) && !programIndexes.has(index)
            : loadedWritable.has(pubkey),
        };
      }),
      instructions: tx.instructions.map((ix) =>
        parseInstruction(
          keys[ix.programIdIndex] ?? '',
          [...ix.accounts].map((i) => keys[i] ?? ''),
          ix.data,
          null,
        ),
      ),
      recentBlockhash: encodeBase58(tx.recentBlockhash),
      ...lookups,
    },
    signatures,
  };
}

export function encodeTokenBalances(balances: readonly TokenBalance[]) {
  return balances.map((b) => ({
    accountIndex: b.accountIndex,
    mint: b.mint,
    owner: b.owner,
    programId: b.programId,
    uiTokenAmount: b.ui ?? uiTokenAmount(b.amount, b.decimals),
  }));
}

export function encodeMeta(record: TransactionRecord, encoding: TransactionEncoding) {
  const meta: TransactionMeta = record.meta;
  const parsed = encoding === 'jsonParsed';
  const innerInstructions = encodeInnerInstructions(meta.innerInstructions, record.accountKeys, parsed);
  const out: Record<string, unknown> = {
    computeUnitsConsumed: meta.computeUnitsConsumed,
    err: record.err,
    fee: meta.fee,
    innerInstructions,
    logMessages: meta.logMessages,
    postBalances: meta.postBalances,
    postTokenBalances: encodeTokenBalances(meta.postTokenBalances),
    preBalances: meta.preBalances,
    preTokenBalances: encodeTokenBalances(meta.preTokenBalances),
    rewards: [],
    status: record.err === null ? { Ok: null } : { Err: record.err },
  };
  if (!parsed) out.loadedAddresses = meta.loadedAddresses;
  if (meta.returnData) {
    out.returnData = {
      programId: meta.returnData.programId,
      data: [Buffer.from(meta.returnData.data).toString('base64'), 'base64'],
    };
  }
  return out;
}

/** Inner instructions by top-level instruction (only those with any), raw or jsonParsed. */
export function encodeInnerInstructions(
  inner: TransactionMeta['innerInstructions'],
  keys: readonly string[],
  parsed: boolean,
) {
  return inner
    .map((list, index) => ({
      index,
      instructions: list.map((ix) =>
        parsed
          ? parseInstruction(
              keys[ix.programIdIndex] ?? '',
              ix.accounts.map((i) => keys[i] ?? ''),
              ix.data,
              ix.stackHeight,
            )
          : {
              accounts: ix.accounts,
              data: encodeBase58(ix.data),
              programIdIndex: ix.programIdIndex,
              stackHeight: ix.stackHeight,
            },
      ),
    }))
    .filter((entry) => entry.instructions.length > 0);
}
