import { createHash, createPublicKey, type KeyObject, verify as verifySignature } from 'node:crypto';
import {
  address,
  createKeyPairFromBytes,
  createSolanaRpcFromTransport,
  getAddressEncoder,
  getBase64EncodedWireTransaction,
  getSignatureFromTransaction,
  getTransactionEncoder,
  isAddress,
  partiallySignTransaction,
  type Rpc,
  type SolanaRpcApi,
  type Transaction,
} from '@solana/kit';
import { findAssociatedTokenPda } from '@solana-program/token';
import type { X402Reason } from '../../domain/x402-reasons.ts';
import {
  type ExactRefusal,
  type ExactRequirements,
  type ExactScheme,
  type ExactVerdict,
  type LandedPayment,
  type PreparedSettlementTx,
  refuse,
  type SellerTransaction,
  type SettlementDraft,
} from '../exact-scheme.ts';
import { InFlightReads } from '../in-flight-reads.ts';
import type { RpcEndpoints } from '../rpc-endpoints.ts';
import { failoverTransport } from './failover-transport.ts';
import { TOKEN_2022_PROGRAM, TOKEN_PROGRAM } from './mint-account.ts';
import {
  type DecodedPayment,
  decodePaymentTransaction,
  type PaymentMessage,
} from './payment-transaction-decoder.ts';
import { findLandedMessage, sellerTransaction, transferAuthorityOf } from './seller-paid-exact.ts';
import { MEMO_PROGRAM } from './solana-adapter.ts';
import { toChainError } from './solana-errors.ts';

/**
 * Caps that keep a payer from draining the fee payer: the facilitator pays the base fee of every
 * signature and the priority fee (price × limit), so each is bounded. At the caps one settlement
 * costs the fee payer at most 2 × 5,000 + 5,000,000 × 50,000 / 10^6 = 260,000 lamports (0.00026 SOL).
 */
export const SVM_MAX_COMPUTE_UNIT_PRICE_MICROLAMPORTS = 5_000_000n;
export const SVM_MAX_COMPUTE_UNIT_LIMIT = 50_000;
/** The fee payer and the transfer authority: nothing else needs to sign an `exact` payment. */
export const SVM_MAX_SIGNATURES = 2;
/** Compute-unit limit, compute-unit price, transferChecked, and at most three memos. */
export const SVM_MAX_INSTRUCTIONS = 6;

const COMPUTE_BUDGET_PROGRAM = 'ComputeBudget111111111111111111111111111111';
/** A block height no chain reaches: findLandedMessage then never concludes `never`. */
const UNBOUNDED_HEIGHT = 2n ** 64n - 1n;
/** SPL Memo v1 and v2, and the id @solana-program/memo 0.15 defaults to (the localnet serves all three). */
const MEMO_PROGRAMS = new Set<string>([
  MEMO_PROGRAM,
  'Memo1UhkJRfHyvLMcVucJwxXeuD728EqVDDwQDxFMNo',
  'Memo4c2pN8afCj432Lb7RMVKi9PbQnnW7ewFFaV3oAH',
]);
const SET_COMPUTE_UNIT_LIMIT = 2;
const SET_COMPUTE_UNIT_PRICE = 3;
const TRANSFER_CHECKED = 12;
/** A blockhash is valid for 150 blocks: the latest a transaction signed now can land. */
const BLOCKHASH_VALIDITY_BLOCKS = 150n;
/** Sellers' token accounts remembered; a busy facilitator sees few distinct sellers. */
const TOKEN_ACCOUNT_CACHE = 10_000;
const ED25519_SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');
/** Buyers' public keys remembered as key objects: importing one costs about as much as the verify. */
const SIGNER_KEY_CACHE = 10_000;

export interface SvmFeePayer {
  readonly address: string;
  /** Solana's 64-byte form (seed ‖ public key). */
  readonly secretKey: Uint8Array;
}

type Decoded = DecodedPayment;

/** Why a simulation failed; `instructionFailed`: an instruction failed (not the transaction as a whole). */
interface SimulationFailure {
  readonly reason: X402Reason;
  readonly message: string;
  readonly instructionFailed: boolean;
}

/** x402 `exact` on Solana (see ExactScheme); the facilitator co-signs as fee payer. */
export class ExactSvmScheme implements ExactScheme {
  readonly family = 'solana' as const;
  private readonly rpc: Rpc<SolanaRpcApi>;
  private readonly feePayers: Map<string, SvmFeePayer>;
  /** WebCrypto keys of the fee payers, imported once. */
  private readonly keyPairs = new Map<string, ReturnType<typeof createKeyPairFromBytes>>();
  private readonly tokenAccounts = new Map<string, Promise<string>>();
  private readonly signerKeys = new Map<string, KeyObject>();
  private readonly simulations = new InFlightReads();

  private readonly assets: ReadonlySet<string>;

  /**
   * @param endpoints the network adapter's own list: the same failover, time limit and down marks.
   * @param assets the mints it settles (the network's known tokens and the operator's X402_EXTRA_ASSETS):
   * a payment in a mint anyone can create costs its fee payer the same as one in USDC, and a seller
   * whose price names no asset would otherwise be told "paid" in whatever the buyer minted.
   */
  constructor(
    endpoints: RpcEndpoints,
    feePayers: readonly SvmFeePayer[],
    private readonly network: string,
    assets: readonly string[],
  ) {
    this.rpc = createSolanaRpcFromTransport(failoverTransport(endpoints));
    this.feePayers = new Map(feePayers.map((f) => [f.address, f]));
    this.assets = new Set(assets);
  }

  signers(): string[] {
    return [...this.feePayers.keys()];
  }

  supportedExtra(): Record<string, unknown> {
    return { feePayer: this.signers()[0] };
  }

  settlementKey(payload: Readonly<Record<string, unknown>>): string | undefined {
    const decoded = decode(payload);
    if (decoded === undefined) return undefined;
    // The message is what the buyer signed: the same message is the same payment however it is relayed.
    const digest = createHash('sha256')
      .update(new Uint8Array(decoded.transaction.messageBytes))
      .digest('hex');
    return `${this.network}:exact:${digest}`;
  }

  async checkTerms(
    payload: Readonly<Record<string, unknown>>,
    req: ExactRequirements,
  ): Promise<ExactRefusal | undefined> {
    const decoded = decode(payload);
    if (decoded === undefined) return undecodable();
    const terms = await this.checkTransfer(decoded, req);
    return terms.valid ? undefined : terms;
  }

  async verify(
    payload: Readonly<Record<string, unknown>>,
    req: ExactRequirements,
    options: { readonly sellerPays?: boolean } = {},
  ): Promise<ExactVerdict> {
    const decoded = decode(payload);
    if (decoded === undefined) return undecodable();
    const terms = await this.checkTransfer(decoded, req);
    if (!terms.valid) return terms;
    const layout = await this.checkLayout(decoded, req, options.sellerPays === true, terms.payer);
    if (layout !== undefined) return layout;
    const simulated = await this.simulate(decoded);
    if (simulated !== undefined) {
      // A transferChecked to a token account that does not exist fails (InvalidAccountData) however
      // often it is retried: the seller must open it, which the buyer cannot tell from a simulation log.
      // Only an instruction's failure can be that; a transaction refused before (a fee payer without
      // SOL) keeps its own reason.
      if (simulated.instructionFailed && !(await this.accountExists(terms.destination))) {
        return refuse(
          'invalid_exact_svm_payload_transaction_receiver_ata_not_found',
          `${req.payTo} has no token account for ${req.asset} (its associated token account ${terms.destination} does not exist): the seller must create it before it can be paid`,
          terms.payer,
        );
      }
      return refuse(simulated.reason, simulated.message, terms.payer);
    }
    return { valid: true, payer: terms.payer, decimals: terms.decimals };
  }

  /** Co-signs (WebCrypto, off the event loop) and asks the block height now; the draft only hands it over. */
  async prepare(payload: Readonly<Record<string, unknown>>): Promise<SettlementDraft> {
    const decoded = decode(payload);
    if (decoded === undefined) throw new Error('prepare() called on a payload that was not verified');
    const feePayer = this.feePayers.get(decoded.message.staticAccounts[0] ?? '');
    if (feePayer === undefined) throw new Error('prepare() called on a payload for another fee payer');
    const signed = await this.cosign(decoded.transaction, feePayer);
    const height = await this.rpc
      .getBlockHeight({ commitment: 'confirmed' })
      .send()
      .catch((error: unknown) => {
        throw toChainError(error);
      });
    const prepared: PreparedSettlementTx = {
      payer: transferAuthority(decoded.message) ?? '',
      transactionId: getSignatureFromTransaction(signed),
      wire: new Uint8Array(getTransactionEncoder().encode(signed)),
      lastValidBlockHeight: height + BLOCKHASH_VALIDITY_BLOCKS,
    };
    return { maxFee: worstCaseFee(decoded.message), sign: async () => prepared };
  }

  async forSeller(payload: Readonly<Record<string, unknown>>): Promise<SellerTransaction> {
    const decoded = decode(payload);
    if (decoded === undefined) throw new Error('forSeller() called on a payload that was not verified');
    return sellerTransaction(this.rpc, new Uint8Array(getTransactionEncoder().encode(decoded.transaction)));
  }

  async findLanded(
    built: Uint8Array,
    lastValidBlockHeight: bigint,
    builtAt: number,
  ): Promise<LandedPayment | 'never' | undefined> {
    const authority = transferAuthorityOf(built);
    return authority === undefined
      ? 'never'
      : findLandedMessage(this.rpc, built, authority, lastValidBlockHeight, builtAt);
  }

  async findPaid(payload: Readonly<Record<string, unknown>>, _req: ExactRequirements, since: number) {
    const decoded = decode(payload);
    if (decoded === undefined) return undefined;
    const built = new Uint8Array(getTransactionEncoder().encode(decoded.transaction));
    const authority = transferAuthorityOf(built);
    if (authority === undefined) return undefined;
    // Only whether it landed is asked, not whether it still may: no block height bounds the look.
    const landed = await findLandedMessage(this.rpc, built, authority, UNBOUNDED_HEIGHT, since);
    return landed === 'never' || landed === undefined ? undefined : { ...landed, payer: authority };
  }

  private async cosign(transaction: Transaction, feePayer: SvmFeePayer): Promise<Transaction> {
    let keys = this.keyPairs.get(feePayer.address);
    if (keys === undefined) {
      keys = createKeyPairFromBytes(feePayer.secretKey);
      this.keyPairs.set(feePayer.address, keys);
    }
    return partiallySignTransaction([await keys], transaction);
  }

  /** The associated token account of `owner` for `mint`; derived once per pair (a PDA search hashes). */
  private async associatedTokenAccount(mint: string, owner: string, tokenProgram: string): Promise<string> {
    const key = `${mint}:${owner}:${tokenProgram}`;
    let found = this.tokenAccounts.get(key);
    if (found === undefined) {
      found = findAssociatedTokenPda({
        mint: address(mint),
        owner: address(owner),
        tokenProgram: address(tokenProgram),
      }).then(([ata]) => ata);
      if (this.tokenAccounts.size >= TOKEN_ACCOUNT_CACHE) this.tokenAccounts.clear();
      this.tokenAccounts.set(key, found);
    }
    return found;
  }

  /**
   * What the payment pays (ExactScheme.checkTerms): the transferChecked of spec `scheme_exact_svm`,
   * found where that layout puts it (after the two compute-budget instructions), and its mint,
   * destination and amount against the requirements. Needs nothing from the chain.
   */
  private async checkTransfer(
    { message }: Decoded,
    req: ExactRequirements,
  ): Promise<{ valid: true; payer: string; decimals: number; destination: string } | ExactRefusal> {
    const accounts = message.staticAccounts.map(String);
    // Lookup tables would move accounts out of the message: the transfer's could not be read here.
    if (message.version === 0 && (message.addressTableLookups?.length ?? 0) > 0) {
      return refuse('invalid_exact_svm_payload_transaction', 'address lookup tables are not accepted');
    }
    const ixs = message.instructions;
    if (ixs.length < 3 || ixs.length > SVM_MAX_INSTRUCTIONS) {
      return refuse(
        'invalid_exact_svm_payload_transaction_instructions_length',
        `the transaction must have 3 to ${SVM_MAX_INSTRUCTIONS} instructions`,
      );
    }
    const program = (i: number) => accounts[ixs[i]?.programAddressIndex ?? -1];
    const data = (i: number) => ixs[i]?.data ?? new Uint8Array();
    // The first two: compute-unit limit and price, in either order (their caps: checkLayout).
    const budget = computeBudgetOf(message, accounts);
    if (budget.limit === undefined) {
      return refuse(
        'invalid_exact_svm_payload_transaction_instructions_compute_limit_instruction',
        'the transaction must begin with SetComputeUnitLimit and SetComputeUnitPrice',
      );
    }
    if (budget.price === undefined) {
      return refuse(
        'invalid_exact_svm_payload_transaction_instructions_compute_price_instruction',
        'the transaction must begin with SetComputeUnitLimit and SetComputeUnitPrice',
      );
    }
    // The third: transferChecked of SPL Token or Token-2022.
    const tokenProgram = program(2);
    const transfer = ixs[2];
    const d = data(2);
    if (
      (tokenProgram !== TOKEN_PROGRAM && tokenProgram !== TOKEN_2022_PROGRAM) ||
      transfer === undefined ||
      d[0] !== TRANSFER_CHECKED ||
      d.length !== 10
    ) {
      return refuse(
        'invalid_exact_svm_payload_no_transfer_instruction',
        'the third instruction must be transferChecked of SPL Token or Token-2022',
      );
    }
    const [source, mint, destination, authority] = (transfer.accountIndices ?? []).map((i) => accounts[i]);
    if (source === undefined || mint === undefined || destination === undefined || authority === undefined) {
      return refuse('invalid_exact_svm_payload_no_transfer_instruction', 'transferChecked lacks accounts');
    }
    if (!this.assets.has(req.asset)) {
      return refuse(
        'unsupported_asset',
        `asset ${req.asset} is not a mint this facilitator settles (the network's known tokens and X402_EXTRA_ASSETS); see GET /networks`,
        authority,
      );
    }
    if (mint !== req.asset) {
      return refuse(
        'invalid_exact_svm_payload_mint_mismatch',
        `the transfer moves ${mint}, not ${req.asset}`,
        authority,
      );
    }
    // payTo comes from the caller unchecked; deriving its token account would throw on a non-address.
    if (!isAddress(req.payTo)) {
      return refuse(
        'invalid_exact_svm_payload_recipient_mismatch',
        `payTo ${JSON.stringify(req.payTo)} is not a Solana address`,
        authority,
      );
    }
    const expectedDestination = await this.associatedTokenAccount(req.asset, req.payTo, tokenProgram);
    if (destination !== expectedDestination) {
      return refuse(
        'invalid_exact_svm_payload_recipient_mismatch',
        `the transfer does not pay the associated token account of ${req.payTo}`,
        authority,
      );
    }
    const amount = new DataView(d.buffer, d.byteOffset, d.byteLength).getBigUint64(1, true);
    if (amount !== req.amount) {
      return refuse(
        'invalid_exact_svm_payload_amount_mismatch',
        `the transfer moves ${amount} atomic units, not ${req.amount}`,
        authority,
      );
    }
    return { valid: true, payer: authority, decimals: d[9] ?? 0, destination };
  }

  /**
   * The rest of spec `scheme_exact_svm`, for a payment whose transfer checkTransfer accepted: the fee
   * payer, the caps, the instructions after the transfer, and the buyer's signatures. Undefined when
   * it holds. `authority`: the transfer's, named as the payer of a refusal.
   */
  private async checkLayout(
    { transaction, message }: Decoded,
    req: ExactRequirements,
    sellerPays: boolean,
    authority: string,
  ): Promise<ExactRefusal | undefined> {
    const accounts = message.staticAccounts.map(String);
    const feePayerAddress = accounts[0] ?? '';
    const expectedFeePayer = req.extra.feePayer;
    // Local mode: the seller's own wallet pays (and signs) instead of one of this facilitator's keys.
    const payable = sellerPays || this.feePayers.has(feePayerAddress);
    if (typeof expectedFeePayer !== 'string' || !payable || expectedFeePayer !== feePayerAddress) {
      return refuse(
        'invalid_exact_svm_payload_missing_fee_payer',
        sellerPays
          ? `the transaction's fee payer is not ${String(expectedFeePayer)}, the wallet that signs it`
          : "the transaction's fee payer is not this facilitator's (extra.feePayer from GET /facilitator/supported)",
      );
    }
    if (message.header.numSignerAccounts > SVM_MAX_SIGNATURES) {
      return refuse(
        'invalid_exact_svm_payload_excessive_signers',
        `at most ${SVM_MAX_SIGNATURES} signatures (the fee payer and the transfer authority)`,
      );
    }
    const ixs = message.instructions;
    const program = (i: number) => accounts[ixs[i]?.programAddressIndex ?? -1];
    const data = (i: number) => ixs[i]?.data ?? new Uint8Array();
    // Compute-unit limit and price (checkTransfer found both), each within its cap.
    const { limit = 0, price = 0n } = computeBudgetOf(message, accounts);
    if (limit > SVM_MAX_COMPUTE_UNIT_LIMIT) {
      return refuse(
        'invalid_exact_svm_payload_transaction_instructions_compute_limit_instruction_too_high',
        `compute-unit limit ${limit} is over ${SVM_MAX_COMPUTE_UNIT_LIMIT}`,
      );
    }
    if (price > SVM_MAX_COMPUTE_UNIT_PRICE_MICROLAMPORTS) {
      return refuse(
        'invalid_exact_svm_payload_transaction_instructions_compute_price_instruction_too_high',
        `compute-unit price ${price} micro-lamports is over ${SVM_MAX_COMPUTE_UNIT_PRICE_MICROLAMPORTS}`,
      );
    }
    // The fee payer signs only to pay fees: it must not appear in any instruction, so it cannot be the
    // transfer authority or a source of funds.
    const feePayerIndex = 0;
    if (ixs.some((ix) => ix.accountIndices?.includes(feePayerIndex))) {
      return refuse(
        'invalid_exact_svm_payload_transaction_fee_payer_transferring_funds',
        'the fee payer must not be an account of any instruction',
        authority,
      );
    }
    // Anything after the transfer: memos only, and the seller's memo when it asked for one.
    const memos: string[] = [];
    for (let i = 3; i < ixs.length; i += 1) {
      if (!MEMO_PROGRAMS.has(program(i) ?? '')) {
        return refuse(
          'invalid_exact_svm_payload_unknown_optional_instruction',
          `instruction ${i + 1} is not a memo`,
          authority,
        );
      }
      memos.push(Buffer.from(data(i)).toString('utf8'));
    }
    const sellerMemo = req.extra.memo;
    if (typeof sellerMemo === 'string' && !memos.includes(sellerMemo)) {
      return refuse(
        'invalid_exact_svm_payload_memo_mismatch',
        'the transaction lacks the memo asked for',
        authority,
      );
    }
    if (!(await this.buyerSignaturesValid(transaction, accounts, feePayerAddress))) {
      return refuse(
        'invalid_exact_svm_payload_signature_invalid',
        'a signature other than the fee payer’s is missing or does not verify',
        authority,
      );
    }
    return undefined;
  }

  /**
   * Every signer but the fee payer has signed the message, and each signature verifies. The verifies
   * run in libuv's thread pool (crypto.verify with a callback), so the event loop serves other requests
   * meanwhile: an ed25519 verify is the largest single cost of a verification on the loop.
   */
  private async buyerSignaturesValid(
    transaction: Transaction,
    accounts: string[],
    feePayer: string,
  ): Promise<boolean> {
    const checks: Promise<boolean>[] = [];
    for (const [signer, signature] of Object.entries(transaction.signatures)) {
      if (signer === feePayer) continue;
      if (signature === null || !accounts.includes(signer)) return false;
      const key = this.signerKey(signer);
      checks.push(
        new Promise((resolve) =>
          verifySignature(
            null,
            new Uint8Array(transaction.messageBytes),
            key,
            new Uint8Array(signature),
            (error, valid) => resolve(error === null && valid),
          ),
        ),
      );
    }
    return (await Promise.all(checks)).every(Boolean);
  }

  /** The ed25519 public key of a signer's address, imported once (bounded). */
  private signerKey(signer: string): KeyObject {
    let key = this.signerKeys.get(signer);
    if (key === undefined) {
      key = createPublicKey({
        key: Buffer.concat([ED25519_SPKI_PREFIX, Buffer.from(getAddressEncoder().encode(address(signer)))]),
        format: 'der',
        type: 'spki',
      });
      if (this.signerKeys.size >= SIGNER_KEY_CACHE) this.signerKeys.clear();
      this.signerKeys.set(signer, key);
    }
    return key;
  }

  /** Whether an account exists (holds lamports) at `account`, as the confirmed bank sees it. */
  private async accountExists(account: string): Promise<boolean> {
    const { value } = await this.rpc
      .getAccountInfo(address(account), { encoding: 'base64', commitment: 'confirmed' })
      .send()
      .catch((error: unknown) => {
        throw toChainError(error);
      });
    return value !== null;
  }

  /**
   * Simulates the transaction as the buyer signed it; undefined when it would succeed. Signatures are
   * not checked by the simulation: the buyer's were verified above and the fee payer's is ours to add,
   * so co-signing here would only cost a signature per verification.
   */
  private simulate({ transaction }: Decoded): Promise<SimulationFailure | undefined> {
    const wire = getBase64EncodedWireTransaction(transaction);
    // The same transaction verified by several callers at once (a retried verify, verify then settle,
    // one payment shown to many instances' sellers) is simulated once for all of them.
    return this.simulations.share(wire, () => this.simulateWire(wire));
  }

  private async simulateWire(
    wire: ReturnType<typeof getBase64EncodedWireTransaction>,
  ): Promise<SimulationFailure | undefined> {
    const { value } = await this.rpc
      .simulateTransaction(wire, {
        encoding: 'base64',
        sigVerify: false,
        commitment: 'confirmed',
      })
      .send()
      .catch((error: unknown) => {
        throw toChainError(error);
      });
    if (value.err === null) return undefined;
    const logs = (value.logs ?? []).join('\n');
    const error = JSON.stringify(value.err, (_k, v) => (typeof v === 'bigint' ? v.toString() : v));
    const instructionFailed =
      typeof value.err === 'object' && value.err !== null && 'InstructionError' in value.err;
    if (/insufficient funds/i.test(logs)) {
      return {
        reason: 'insufficient_funds',
        message: 'the payer’s token account holds less than the amount',
        instructionFailed,
      };
    }
    return {
      reason: 'invalid_exact_svm_payload_transaction_simulation_failed',
      message: `the transaction would fail: ${error}`,
      instructionFailed,
    };
  }
}

/**
 * The compute-unit limit and price the first two instructions set, in either order; reading stops at
 * the first that is not a ComputeBudget instruction.
 */
function computeBudgetOf(
  message: PaymentMessage,
  accounts: readonly string[],
): { limit?: number; price?: bigint } {
  let limit: number | undefined;
  let price: bigint | undefined;
  for (const ix of message.instructions.slice(0, 2)) {
    if (accounts[ix.programAddressIndex] !== COMPUTE_BUDGET_PROGRAM) break;
    const d = ix.data ?? new Uint8Array();
    const view = new DataView(d.buffer, d.byteOffset, d.byteLength);
    if (d[0] === SET_COMPUTE_UNIT_LIMIT && d.length === 5) limit = view.getUint32(1, true);
    if (d[0] === SET_COMPUTE_UNIT_PRICE && d.length === 9) price = view.getBigUint64(1, true);
  }
  return { ...(limit === undefined ? {} : { limit }), ...(price === undefined ? {} : { price }) };
}

/** Lamports the network charges per signature (Solana's base fee). */
const LAMPORTS_PER_SIGNATURE = 5_000n;

/**
 * The most the fee payer pays for the transaction as the payload sets it: the base fee of each of its
 * signatures plus the priority fee, compute-unit price (micro-lamports) × limit, rounded up as the
 * runtime rounds it. Bounded by the caps the layout check holds (SVM_MAX_*) for a verified payload.
 */
function worstCaseFee(message: PaymentMessage): bigint {
  const { limit = 0, price = 0n } = computeBudgetOf(message, message.staticAccounts.map(String));
  const priority = (price * BigInt(limit) + 999_999n) / 1_000_000n;
  return BigInt(message.header.numSignerAccounts) * LAMPORTS_PER_SIGNATURE + priority;
}

function undecodable(): ExactRefusal {
  return refuse(
    'invalid_exact_svm_payload_transaction_could_not_be_decoded',
    'payload.transaction is not a base64 Solana transaction',
  );
}

/**
 * Decodings of payloads, per payload object: one verification asks for its payload's transaction three
 * or four times (terms, settlement key, verify), and decoding it (each address base58-encoded) was the
 * largest cost of a verification. Keyed by the object, and checked against its text, so nothing is
 * kept after the request lets go of its payload.
 */
const decodings = new WeakMap<object, { readonly text: string; readonly decoded: Decoded | undefined }>();

function decode(payload: Readonly<Record<string, unknown>>): Decoded | undefined {
  const text = payload.transaction;
  if (typeof text !== 'string') return undefined;
  const known = decodings.get(payload);
  if (known !== undefined && known.text === text) return known.decoded;
  const decoded = decodeText(text);
  decodings.set(payload, { text, decoded });
  return decoded;
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

function decodeText(text: string): Decoded | undefined {
  if (text.length === 0 || text.length > 4096) return undefined;
  // Strict base64 (as kit's encoder reads it): Buffer.from would skip characters that are not base64.
  if (!BASE64.test(text)) return undefined;
  return decodePaymentTransaction(new Uint8Array(Buffer.from(text, 'base64')));
}

/** The transfer authority of the transferChecked instruction: who pays. */
function transferAuthority(message: PaymentMessage): string | undefined {
  const index = message.instructions[2]?.accountIndices?.[3];
  return index === undefined ? undefined : String(message.staticAccounts[index]);
}
