// Sending, simulating and looking up transactions; fees; the airdrop faucet.
import { MAX_PROCESSING_AGE } from '../../chain/blockhash-window.ts';
import { type AccountSnapshot, TransactionRejected } from '../../chain/chain.ts';
import { MAX_AIRDROP_LAMPORTS } from '../../chain/faucet.ts';
import { transactionFee } from '../../chain/fee.ts';
import { describeTransactionError } from '../../chain/transaction-error.ts';
import { encodeBase58 } from '../../wire/base58.ts';
import { decodeWireTransaction, WireDecodeError, WireSanitizeError } from '../../wire/wire-transaction.ts';
import { accountView, encodeAccount } from '../account-encoding.ts';
import {
  config,
  integer,
  type Params,
  pubkey,
  pubkeyParam,
  commitment as readCommitment,
  signature,
} from '../params.ts';
import { invalidParams, preflightFailure, signatureVerificationFailure } from '../rpc-error.ts';
import { contextSlot, type RpcContext, type RpcMethod, withContext } from '../rpc-method.ts';
import {
  encodeInnerInstructions,
  encodeTokenBalances,
  encodeTransactionWithMeta,
  TRANSACTION_ENCODINGS,
  type TransactionEncoding,
} from '../transaction-encoding.ts';
import { decodeStrictBase64, readTransaction } from '../transaction-input.ts';

const MAX_SIGNATURE_STATUSES = 256;
const MAX_SIGNATURES_FOR_ADDRESS = 1000;

function sendTransaction(params: Params, { chain }: RpcContext): string {
  const cfg = config(params, 1);
  const tx = readTransaction(params[0], cfg);
  const skipPreflight = cfg.skipPreflight === true;
  if (!skipPreflight)
    contextSlot(chain, { commitment: cfg.preflightCommitment, minContextSlot: cfg.minContextSlot });
  try {
    return chain.sendTransaction(tx, !skipPreflight).signature;
  } catch (error) {
    if (!(error instanceof TransactionRejected)) throw error;
    // Without preflight a validator accepts the bytes and silently drops what cannot land.
    if (skipPreflight) return encodeBase58(tx.signatures[0] as Uint8Array);
    if (error.err === 'SignatureFailure') throw signatureVerificationFailure();
    throw preflightFailure(`Transaction simulation failed: ${describeTransactionError(error.err)}`, {
      accounts: null,
      err: error.err,
      innerInstructions: null,
      loadedAccountsDataSize: null,
      logs: error.logs,
      replacementBlockhash: null,
      returnData: null,
      unitsConsumed: error.unitsConsumed,
    });
  }
}

function simulateTransaction(params: Params, { chain }: RpcContext) {
  const cfg = config(params, 1);
  const tx = readTransaction(params[0], cfg);
  const sigVerify = cfg.sigVerify === true;
  const replaceRecentBlockhash = cfg.replaceRecentBlockhash === true;
  if (sigVerify && replaceRecentBlockhash) {
    throw invalidParams('sigVerify may not be used with replaceRecentBlockhash');
  }
  const { slot } = contextSlot(chain, cfg);
  let addresses: Uint8Array[] = [];
  let view = accountView({}, 'base64');
  const accounts = cfg.accounts;
  if (accounts !== undefined && accounts !== null) {
    const { addresses: list, encoding } = accounts as Record<string, unknown>;
    if (!Array.isArray(list)) throw invalidParams('Invalid params: missing field `addresses`.');
    addresses = list.map((a) => pubkey(String(a)));
    view = accountView({ encoding: encoding ?? 'base64' }, 'base64');
  }
  const result = chain.simulateTransaction(tx, { sigVerify, replaceRecentBlockhash, accounts: addresses });
  const block = chain.blockAt('processed');
  return withContext(slot, {
    accounts: result.accounts?.map(
      (account: AccountSnapshot | null) => account && encodeAccount(account, view, chain),
    ),
    err: result.err,
    fee: result.fee,
    // As Agave: parsed where the program is known, when asked for.
    innerInstructions:
      cfg.innerInstructions === true && result.innerInstructions !== null
        ? encodeInnerInstructions(result.innerInstructions, result.accountKeys, true)
        : null,
    loadedAccountsDataSize: null,
    loadedAddresses: result.loadedAddresses,
    logs: result.logs,
    postBalances: result.postBalances,
    postTokenBalances: encodeTokenBalances(result.postTokenBalances),
    preBalances: result.preBalances,
    preTokenBalances: encodeTokenBalances(result.preTokenBalances),
    replacementBlockhash: replaceRecentBlockhash
      ? { blockhash: block.blockhash, lastValidBlockHeight: block.blockHeight + MAX_PROCESSING_AGE }
      : null,
    returnData: result.returnData && {
      data: [Buffer.from(result.returnData.data).toString('base64'), 'base64'],
      programId: result.returnData.programId,
    },
    unitsConsumed: result.unitsConsumed,
  });
}

function getSignatureStatuses(params: Params, { chain }: RpcContext) {
  const list = params[0];
  if (!Array.isArray(list))
    throw invalidParams('Invalid params: invalid type: expected a sequence of signatures.');
  if (list.length > MAX_SIGNATURE_STATUSES) {
    throw invalidParams(`Too many inputs provided; max ${MAX_SIGNATURE_STATUSES}`);
  }
  const signatures = list.map(signature);
  const cfg = config(params, 1);
  const searchHistory = cfg.searchTransactionHistory === true;
  return withContext(
    chain.slot,
    signatures.map((s) => {
      const status = chain.signatureStatus(s, searchHistory);
      return (
        status && {
          confirmationStatus: status.confirmationStatus,
          confirmations: status.confirmations,
          err: status.err,
          slot: status.slot,
          status: status.err === null ? { Ok: null } : { Err: status.err },
        }
      );
    }),
  );
}

/** Transaction history reads (getTransaction, getSignaturesForAddress, getBlock) refuse `processed`. */
export function historyCommitment(cfg: Record<string, unknown>) {
  const commitment = readCommitment(cfg);
  if (commitment === 'processed') throw invalidParams('Method does not support commitment below `confirmed`');
  return commitment;
}

export function transactionEncoding(raw: unknown): TransactionEncoding {
  if (raw === undefined || raw === null) return 'json';
  if (typeof raw === 'string' && (TRANSACTION_ENCODINGS as readonly string[]).includes(raw)) {
    return raw as TransactionEncoding;
  }
  throw invalidParams(
    `Invalid params: unknown variant \`${String(raw)}\`, expected one of \`json\`, \`jsonParsed\`, \`base58\`, \`base64\`.`,
  );
}

export function maxSupportedVersion(cfg: Record<string, unknown>): number | undefined {
  const value = cfg.maxSupportedTransactionVersion;
  if (value === undefined || value === null) return undefined;
  const version = integer(value, 'u8');
  if (version > 0) throw invalidParams(`Invalid params: unsupported transaction version ${version}.`);
  return version;
}

function getTransaction(params: Params, { chain }: RpcContext) {
  const sig = signature(params[0]);
  // The second param may be a bare encoding string (the deprecated form).
  const cfg = typeof params[1] === 'string' ? { encoding: params[1] } : config(params, 1);
  const commitment = historyCommitment(cfg);
  const encoding = transactionEncoding(cfg.encoding);
  const maxVersion = maxSupportedVersion(cfg);
  const record = chain.transaction(sig);
  if (!record || !chain.reachedCommitment(record.slot, commitment)) return null;
  return {
    blockTime: record.blockTime,
    slot: record.slot,
    ...encodeTransactionWithMeta(record, { encoding, maxSupportedTransactionVersion: maxVersion }),
  };
}

function getSignaturesForAddress(params: Params, { chain }: RpcContext) {
  const address = pubkeyParam(params, 0, 'address');
  const cfg = config(params, 1);
  const commitment = historyCommitment(cfg);
  contextSlot(chain, cfg);
  const limit =
    cfg.limit === undefined || cfg.limit === null ? MAX_SIGNATURES_FOR_ADDRESS : integer(cfg.limit, 'usize');
  if (limit === 0 || limit > MAX_SIGNATURES_FOR_ADDRESS) {
    throw invalidParams(`Invalid limit; max ${MAX_SIGNATURES_FOR_ADDRESS}`);
  }
  const before = cfg.before === undefined || cfg.before === null ? undefined : signature(cfg.before);
  const until = cfg.until === undefined || cfg.until === null ? undefined : signature(cfg.until);
  return chain
    .signaturesForAddress(address, before, until, limit, commitment)
    .filter((info) => chain.reachedCommitment(info.slot, commitment))
    .map((info) => ({
      blockTime: info.blockTime,
      confirmationStatus: chain.commitmentOf(info.slot).confirmationStatus,
      err: info.err,
      memo: info.memo,
      signature: info.signature,
      slot: info.slot,
    }));
}

function getFeeForMessage(params: Params, { chain }: RpcContext) {
  const text = params[0];
  const message = typeof text === 'string' && text.length <= 1644 ? decodeStrictBase64(text) : undefined;
  if (!message) throw invalidParams('invalid base64 encoding: InvalidByte');
  const { slot } = contextSlot(chain, config(params, 1));
  // A message is a transaction without its signatures: prefix empty ones to reuse the decoder.
  const required = (message[0] ?? 0) & 0x80 ? (message[1] ?? 0) : (message[0] ?? 0);
  const prefix = required < 0x80 ? [required] : [(required & 0x7f) | 0x80, required >> 7];
  const wire = new Uint8Array(prefix.length + required * 64 + message.length);
  wire.set(prefix);
  wire.set(message, prefix.length + required * 64);
  try {
    const tx = decodeWireTransaction(wire);
    return withContext(slot, chain.isBlockhashValid(tx.recentBlockhash) ? transactionFee(tx).fee : null);
  } catch (error) {
    if (error instanceof WireDecodeError || error instanceof WireSanitizeError) {
      throw invalidParams(`invalid message: ${error.message}`);
    }
    throw error;
  }
}

function requestAirdrop(params: Params, { faucet }: RpcContext): string {
  const to = pubkeyParam(params, 0);
  const lamports = BigInt(integer(params[1], 'u64'));
  if (lamports === 0n || lamports > MAX_AIRDROP_LAMPORTS) {
    throw invalidParams(
      `Invalid params: airdrop must be between 1 and ${MAX_AIRDROP_LAMPORTS} lamports per request`,
    );
  }
  try {
    return faucet.airdrop(to, lamports).signature;
  } catch (error) {
    if (error instanceof TransactionRejected) {
      throw invalidParams(`airdrop failed: ${describeTransactionError(error.err)}`);
    }
    throw error;
  }
}

export const transactionMethods: Record<string, RpcMethod> = {
  sendTransaction,
  simulateTransaction,
  getSignatureStatuses,
  getTransaction,
  getSignaturesForAddress,
  getFeeForMessage,
  requestAirdrop,
};
