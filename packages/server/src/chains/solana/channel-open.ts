import { createPublicKey, verify } from 'node:crypto';
import {
  address,
  type CompiledTransactionMessage,
  getAddressEncoder,
  getBase64Encoder,
  getCompiledTransactionMessageDecoder,
  getTransactionDecoder,
  type Transaction,
} from '@solana/kit';
import { encodeBase58 } from '../../domain/base58.ts';
import {
  ALL_BPS,
  ASSOCIATED_TOKEN_PROGRAM,
  channelAddress,
  eventAuthority,
  OPEN,
  PAYMENT_CHANNELS_PROGRAM,
  RENT_SYSVAR,
  SYSTEM_PROGRAM,
  tokenAccountOf,
} from './payment-channel-program.ts';

/**
 * The buyer's `open` of a payment channel, as the stock @x402/svm `upto` client builds it: a v0
 * transaction, fee payer = the facilitator, [SetComputeUnitLimit] [SetComputeUnitPrice] open [Memo],
 * signed by the buyer, the fee payer's slot empty. The facilitator co-signs it as fee payer AND rent
 * payer, so everything else in it is held to that layout: nothing the fee payer signs can move its
 * funds but the channel's rent (given back when the channel closes).
 */
export interface ChannelOpen {
  readonly transaction: Transaction;
  readonly message: CompiledTransactionMessage;
  readonly feePayer: string;
  readonly payer: string;
  readonly payee: string;
  readonly mint: string;
  readonly authorizedSigner: string;
  readonly channel: string;
  readonly tokenProgram: string;
  readonly salt: bigint;
  readonly deposit: bigint;
  readonly gracePeriod: number;
  readonly openSlot: bigint;
  readonly recipients: readonly { readonly recipient: string; readonly bps: number }[];
  readonly computeUnitLimit: number;
  readonly computeUnitPrice: bigint;
}

/** Caps on what the open may make the fee payer pay: 400,000 units (the stock cap) at 5,000,000 µlamports. */
export const OPEN_MAX_COMPUTE_UNIT_LIMIT = 400_000;
export const OPEN_MAX_COMPUTE_UNIT_PRICE = 5_000_000n;

const COMPUTE_BUDGET_PROGRAM = 'ComputeBudget111111111111111111111111111111';
const MEMO_PROGRAMS = new Set([
  'MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr',
  'Memo1UhkJRfHyvLMcVucJwxXeuD728EqVDDwQDxFMNo',
]);
const ED25519_SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');

/** Decodes the base64 open transaction and reads its open; a string saying why when it is not one. */
export async function readChannelOpen(base64: unknown): Promise<ChannelOpen | string> {
  if (typeof base64 !== 'string' || base64.length === 0 || base64.length > 4096)
    return 'payload.openTransaction is not a base64 Solana transaction';
  let transaction: Transaction;
  let message: CompiledTransactionMessage;
  try {
    transaction = getTransactionDecoder().decode(getBase64Encoder().encode(base64));
    message = getCompiledTransactionMessageDecoder().decode(transaction.messageBytes);
  } catch {
    return 'payload.openTransaction is not a base64 Solana transaction';
  }
  if (message.version !== 0 && message.version !== 'legacy')
    return 'the open transaction is of an unknown version';
  // Lookup tables would hide accounts from the checks below.
  if ('addressTableLookups' in message && (message.addressTableLookups?.length ?? 0) > 0)
    return 'the open transaction uses address lookup tables';
  const accounts = message.staticAccounts.map(String);
  const ixs = message.instructions;
  const programOf = (i: number) => accounts[ixs[i]?.programAddressIndex ?? -1];
  let at = 0;
  let computeUnitLimit = 0;
  let computeUnitPrice = 0n;
  while (at < ixs.length && at < 2 && programOf(at) === COMPUTE_BUDGET_PROGRAM) {
    const d = ixs[at]?.data ?? new Uint8Array();
    const view = new DataView(d.buffer, d.byteOffset, d.byteLength);
    if (d[0] === 2 && d.length === 5) computeUnitLimit = view.getUint32(1, true);
    else if (d[0] === 3 && d.length === 9) computeUnitPrice = view.getBigUint64(1, true);
    else return 'a compute-budget instruction other than a unit limit or price';
    at += 1;
  }
  const open = ixs[at];
  if (open === undefined || programOf(at) !== PAYMENT_CHANNELS_PROGRAM || open.data?.[0] !== OPEN)
    return 'the open transaction has no payment-channels open where the layout puts it';
  for (let i = at + 1; i < ixs.length; i += 1) {
    if (!MEMO_PROGRAMS.has(programOf(i) ?? '') || i > at + 1)
      return `instruction ${i + 1} is not the one memo allowed`;
    if ((ixs[i]?.accountIndices?.length ?? 0) > 0) return 'the memo names accounts';
  }
  if (computeUnitLimit > OPEN_MAX_COMPUTE_UNIT_LIMIT)
    return `compute-unit limit ${computeUnitLimit} is over ${OPEN_MAX_COMPUTE_UNIT_LIMIT}`;
  if (computeUnitPrice > OPEN_MAX_COMPUTE_UNIT_PRICE)
    return `compute-unit price ${computeUnitPrice} is over ${OPEN_MAX_COMPUTE_UNIT_PRICE}`;

  const idx = open.accountIndices ?? [];
  if (idx.length !== 14) return `the open names ${idx.length} accounts, not 14`;
  const acct = (slot: number) => accounts[idx[slot] ?? -1] ?? '';
  const feePayer = accounts[0] ?? '';
  const [payer, rentPayer, payee, mint, authorizedSigner, channel, payerToken, channelToken, tokenProgram] = [
    0, 1, 2, 3, 4, 5, 6, 7, 8,
  ].map(acct) as [string, string, string, string, string, string, string, string, string];
  const { numSignerAccounts, numReadonlySignerAccounts, numReadonlyNonSignerAccounts } = message.header;
  // Exactly two signers, the fee payer and the buyer: no other key's signature is asked for.
  if (numSignerAccounts !== 2 || accounts[1] !== payer || payer === feePayer)
    return 'the open must be signed by exactly the fee payer and the payer';
  if (rentPayer !== feePayer) return 'the rent payer must be the fee payer';
  // Writable: only what open writes (the fee payer as rent payer, the payer, the channel and the two token accounts).
  const writable = new Set([feePayer, payer, channel, payerToken, channelToken]);
  for (const [i, a] of accounts.entries()) {
    const isWritable =
      i < numSignerAccounts
        ? i < numSignerAccounts - numReadonlySignerAccounts
        : i < accounts.length - numReadonlyNonSignerAccounts;
    if (isWritable && !writable.has(a)) return `account ${a} is writable but open does not write it`;
  }
  for (const [slot, want] of [
    [6, await tokenAccountOf(payer, mint, tokenProgram)],
    [7, await tokenAccountOf(channel, mint, tokenProgram)],
    [9, SYSTEM_PROGRAM],
    [10, RENT_SYSVAR],
    [11, ASSOCIATED_TOKEN_PROGRAM],
    [12, await eventAuthority()],
    [13, PAYMENT_CHANNELS_PROGRAM],
  ] as const) {
    if (acct(slot) !== want) return `open account ${slot} is ${acct(slot)}, not ${want}`;
  }

  const data = open.data ?? new Uint8Array();
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  if (data.length < 33) return 'the open instruction data is too short';
  const count = view.getUint32(29, true);
  if (count > 16 || data.length !== 33 + 34 * count) return 'the open instruction data is malformed';
  const recipients = Array.from({ length: count }, (_, i) => ({
    recipient: encodeBase58(data.subarray(33 + 34 * i, 33 + 34 * i + 32)),
    bps: view.getUint16(33 + 34 * i + 32, true),
  }));
  const salt = view.getBigUint64(1, true);
  const openSlot = view.getBigUint64(21, true);
  const derived = await channelAddress({ payer, payee, mint, authorizedSigner, salt, openSlot });
  if (derived !== channel) return `the channel ${channel} is not the address its seeds derive (${derived})`;
  if (!signedBy(transaction, payer)) return 'the payer’s signature is missing or does not verify';
  return {
    transaction,
    message,
    feePayer,
    payer,
    payee,
    mint,
    authorizedSigner,
    channel,
    tokenProgram,
    salt,
    deposit: view.getBigUint64(9, true),
    gracePeriod: view.getUint32(17, true),
    openSlot,
    recipients,
    computeUnitLimit,
    computeUnitPrice,
  };
}

/** The whole settled amount to `payTo`: the only split the stock seller and facilitator use. */
export function paysAllTo(open: ChannelOpen, payTo: string): boolean {
  return (
    open.recipients.length === 1 &&
    open.recipients[0]?.recipient === payTo &&
    open.recipients[0].bps === ALL_BPS
  );
}

function signedBy(transaction: Transaction, signer: string): boolean {
  const signature = transaction.signatures[address(signer)];
  if (signature == null) return false;
  const key = createPublicKey({
    key: Buffer.concat([ED25519_SPKI_PREFIX, Buffer.from(getAddressEncoder().encode(address(signer)))]),
    format: 'der',
    type: 'spki',
  });
  return verify(null, new Uint8Array(transaction.messageBytes), key, new Uint8Array(signature));
}
