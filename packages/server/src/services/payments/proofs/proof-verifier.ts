import { canonicalAddress } from '../../../chains/canonical-address.ts';
import type { ChainAdapter, ChainTransaction } from '../../../chains/chain-adapter.ts';
import type { NetworkRegistry } from '../../../chains/network-registry.ts';
import { atomicToDecimalText } from '../../../domain/money.ts';
import type { PaymentRecord } from '../../../domain/records/payment-records.ts';
import type { Store } from '../../../store/store.ts';
import { atomicFromField } from '../amounts.ts';
import { findBuiltTransfer } from '../local/local-transfer.ts';
import { assetMismatch, isSameAsset, nativeAssetOf, type PaymentAsset } from '../payment-asset.ts';
import type { PaymentProofs, ProofClaims } from './payment-proof.ts';
import { invalidProof, verificationFailed } from './proof-errors.ts';

export interface ProofToVerify {
  readonly paymentProof: string;
  /** The wallet that must have been paid. */
  readonly recipient: string;
  /** The least that must have been paid: whole units of the proof's network, or atomic units. */
  readonly expected: { readonly whole: number; readonly field: string } | { readonly atomic: bigint };
  /**
   * What it must be paid in; undefined: the native currency of the proof's network. A gate402 proof
   * names what it attests (`ast`, a token; absent, the native currency), and the chain check counts
   * only transfers of that: a proof in another asset than the one asked is refused `asset_mismatch`.
   */
  readonly asset?: PaymentAsset | undefined;
  readonly resource?: string | undefined;
  /** The network (CAIP-2 id) the payment must be on (the routes always pin one); undefined accepts any served. */
  readonly network?: string | undefined;
  /** How long to wait for the transaction to land and confirm; 0 looks once. */
  readonly timeoutMs: number;
  /**
   * The transaction of a payment this very request recorded before (a retry with its Idempotency-Key
   * whose answer was lost): a proof used by it is not refused here, so the caller can answer that payment.
   */
  readonly usedByRetriedRequest?: string | undefined;
  /**
   * The caller consumes the proof in the transaction that records the payment, which refuses a used one
   * anyway: the separate read of whether it was used is skipped (one query less per receive).
   */
  readonly consumedByCaller?: boolean;
}

/** A proof whose every claim the chain confirmed. */
export interface VerifiedProof {
  readonly claims: ProofClaims;
  readonly chain: ChainAdapter;
  readonly tx: ChainTransaction;
  /** The transaction signature: the proof's own, or the one found by its reference. */
  readonly signature: string;
  /** Atomic units paid by the payer to the recipient. */
  readonly received: bigint;
  /** What `received` is in: the asset the proof attests (the one asked for). */
  readonly asset: PaymentAsset;
  /** What consumes the proof: the transaction itself, whichever kind of proof names it. */
  readonly proofKey: string;
}

export interface ProofVerifierDeps {
  readonly store: Store;
  readonly networks: NetworkRegistry;
  readonly proofs: PaymentProofs;
  /** How old a proof may be, in ms. */
  readonly proofMaxAgeMs: number;
  readonly now?: () => number;
}

const POLL_MS = 250;

/**
 * Checks a gate402 proof (spec §4.2, §4.5, §4.7): the attestation, then every fact again on chain — or
 * in this gateway's own record, for a payment it sent and saw confirmed (confirmedByThisGateway).
 * A Lightning proof names its transaction (`sig`); a local-mode proof names the reference the unsigned
 * transaction was built with (`ref`), and the transaction found by it must be exactly the one built
 * (payer, recipient, amount, memo). Both kinds are keyed by the transaction, so one transaction is
 * redeemed once whichever proof names it. Refusals are GatewayErrors whose `details.paymentProof` is a
 * stable reason (INVALID_PAYMENT_PROOF, PAYMENT_VERIFICATION_FAILED). Nothing is consumed here.
 */
export class ProofVerifier {
  private readonly now: () => number;

  constructor(private readonly deps: ProofVerifierDeps) {
    this.now = deps.now ?? Date.now;
  }

  async verify(input: ProofToVerify): Promise<VerifiedProof> {
    const claims = await this.claimsOf(input);
    const chain = this.deps.networks.get(claims.net);
    if (chain === undefined) {
      throw invalidProof(`the proof is for network ${claims.net}, which this gateway does not serve`);
    }
    if (input.network !== undefined && chain.info.id !== input.network) {
      throw invalidProof(`the proof is for network ${claims.net}, not ${input.network}`, 'network_mismatch');
    }
    const asset = input.asset ?? nativeAssetOf(chain);
    if (!isSameAsset(asset, claims.ast ?? null)) {
      throw assetMismatch(asset, claims.ast ?? chain.info.nativeCurrency.symbol, chain);
    }
    const { decimals } = asset;
    const symbol = asset.symbol ?? asset.address ?? chain.info.nativeCurrency.symbol;
    const expected =
      'atomic' in input.expected
        ? input.expected.atomic
        : atomicFromField(input.expected.field, input.expected.whole, decimals, symbol);

    const tx = await this.landedTransaction(chain, claims, input.timeoutMs);
    if (tx.error !== null) throw verificationFailed('the transaction failed on chain', 'failed_on_chain');
    const [payer, recipient] = [canonicalAddress(claims.from), canonicalAddress(input.recipient)];
    const transfers =
      asset.address === null
        ? tx.nativeTransfers
        : tx.tokenTransfers.filter((t) => isSameAsset(asset, t.token));
    const received = transfers
      .filter((t) => canonicalAddress(t.from) === payer && canonicalAddress(t.to) === recipient)
      .reduce((sum, t) => sum + t.amount, 0n);
    if (received === 0n) throw invalidProof('the transaction pays another recipient', 'recipient_mismatch');
    if (received < expected) {
      throw verificationFailed(
        `the transaction paid ${atomicToDecimalText(received, decimals)} ${symbol}, less than the expected ${atomicToDecimalText(expected, decimals)} ${symbol}`,
        'amount_too_low',
      );
    }
    if (!tx.memos.some((memo) => memo.includes(claims.pid))) {
      throw invalidProof(
        'the transaction does not carry the payment id the proof names',
        'payment_id_mismatch',
      );
    }
    const proofKey = `${chain.info.id}:${tx.signature}`;
    if (
      input.consumedByCaller !== true &&
      tx.signature !== input.usedByRetriedRequest &&
      (await this.deps.store.proofs.isConsumed(proofKey))
    ) {
      throw invalidProof('this payment proof was already used', 'already_used');
    }
    return { claims, chain, tx, signature: tx.signature, received, proofKey, asset };
  }

  private async claimsOf(input: ProofToVerify): Promise<ProofClaims> {
    const check = await this.deps.proofs.check(input.paymentProof);
    if (!check.valid) {
      const reasons = {
        malformed: 'the payment proof is malformed',
        unknown_issuer: 'the payment proof was issued by a gateway this one does not trust',
        bad_signature: 'the payment proof attestation does not verify',
      };
      throw invalidProof(reasons[check.reason], check.reason);
    }
    const { claims } = check;
    if (canonicalAddress(claims.to) !== canonicalAddress(input.recipient))
      throw invalidProof('the proof pays another recipient', 'recipient_mismatch');
    if (this.now() - claims.iat > this.deps.proofMaxAgeMs)
      throw invalidProof('the payment proof has expired', 'expired');
    // A seller that names the resource asks whether this payment was for it. A proof that names none
    // attests no such thing (the buyer paid without saying for what), so it would otherwise buy any
    // resource of the seller's at the same price; it is good only where no resource is asked for.
    if (input.resource !== undefined) {
      if (claims.res === undefined)
        throw invalidProof('the proof names no resource, and this one is for a resource', 'resource_missing');
      if (input.resource !== claims.res)
        throw invalidProof('the proof pays for another resource', 'resource_mismatch');
    }
    return claims;
  }

  /** The proof's transaction once landed and confirmed, waiting up to `timeoutMs` for it. */
  private async landedTransaction(
    chain: ChainAdapter,
    claims: ProofClaims,
    timeoutMs: number,
  ): Promise<ChainTransaction> {
    const deadline = this.now() + timeoutMs;
    for (;;) {
      const tx = await this.lookUp(chain, claims);
      if (tx !== undefined) return tx;
      if (this.now() >= deadline) {
        throw verificationFailed(
          `the transaction was not confirmed within ${Math.round(timeoutMs / 1000)} s`,
          'not_found',
        );
      }
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  }

  /**
   * One look for the proof's transaction. This gateway's record of the attested payment, when it has
   * one, serves three purposes: a payment it sent and saw confirmed answers without the chain (the hot
   * path: one read); an EVM send it replaced names the replacement (read again after the chain answered
   * nothing); a local-mode build names the lastValidBlockHeight to search up to.
   */
  private async lookUp(chain: ChainAdapter, claims: ProofClaims): Promise<ChainTransaction | undefined> {
    const record = await this.deps.store.payments.get(claims.pid);
    // Its transaction left the chain and cannot land again (FinalityWatch): whatever a node lagging
    // behind the reorganisation still shows, the proof backs nothing.
    if (record?.status === 'reverted' && record.network === claims.net)
      throw verificationFailed(
        'the payment this proof names was reverted by a chain reorganisation',
        'reverted',
      );
    if (claims.sig !== undefined) {
      const recorded = record === undefined ? undefined : confirmedByThisGateway(record, claims);
      if (recorded !== undefined) return recorded;
      let signature = claims.sig;
      let status = await chain.getSignatureStatus(signature);
      if (status === undefined) {
        // Read again: a replacement may have been recorded while the chain was asked.
        const latest = await this.deps.store.payments.get(claims.pid);
        const replacement = latest === undefined ? undefined : replacementOfRecord(latest, claims);
        if (replacement !== undefined) {
          signature = replacement;
          status = await chain.getSignatureStatus(signature);
        }
      }
      if (status?.status === 'failed')
        throw verificationFailed('the transaction failed on chain', 'failed_on_chain');
      if (status?.status !== 'confirmed' && status?.status !== 'finalized') return undefined;
      return chain.getTransaction(signature);
    }
    if (claims.ref === undefined) return undefined;
    return findBuiltTransfer(chain, {
      reference: claims.ref,
      payer: claims.from,
      recipient: claims.to,
      amount: BigInt(claims.amt),
      asset: claims.ast ?? null,
      memo: claims.pid,
      lastValidBlockHeight: record === undefined ? null : builtWith(record, claims),
    });
  }
}

/**
 * A payment this gateway sent itself and saw confirmed: it built that transaction (exactly `amount`
 * from the sender to the recipient, the payment id as memo), signed it, and recorded the chain's
 * confirmation of it, so its record states what the chain would — without a round trip per receive.
 * Any other proof (another gateway's, a local-mode one, one not yet confirmed here) goes to the chain.
 */
function confirmedByThisGateway(payment: PaymentRecord, claims: ProofClaims): ChainTransaction | undefined {
  if (
    payment.direction !== 'sent' ||
    payment.mode !== 'custodial' ||
    payment.network !== claims.net ||
    (payment.status !== 'confirmed' && payment.status !== 'finalized') ||
    payment.signature === null ||
    payment.slot === null ||
    (payment.signature !== claims.sig && !payment.replacedSignatures?.includes(claims.sig ?? ''))
  ) {
    return undefined;
  }
  return {
    signature: payment.signature,
    slot: payment.slot,
    blockTime: payment.confirmedAt,
    fee: payment.fee ?? 0n,
    error: null,
    feePayer: payment.sender,
    ...(payment.asset === undefined
      ? {
          nativeTransfers: [{ from: payment.sender, to: payment.recipient, amount: payment.amount }],
          tokenTransfers: [],
        }
      : {
          nativeTransfers: [],
          tokenTransfers: [
            {
              token: payment.asset.address,
              from: payment.sender,
              to: payment.recipient,
              amount: payment.amount,
            },
          ],
        }),
    memos: [payment.id],
    accounts: [payment.sender, payment.recipient],
  };
}

/**
 * The lastValidBlockHeight this gateway built the proof's transaction with, when it did: only a hint
 * that narrows the search on chains that scan blocks (EVM); the chain still decides everything.
 */
function builtWith(payment: PaymentRecord, claims: ProofClaims): bigint | null {
  if (payment.network !== claims.net || payment.reference !== claims.ref) return null;
  return payment.lastValidBlockHeight;
}

/**
 * EVM: a stuck send is replaced by a transaction with the same nonce and higher fees, so the proof
 * issued at the send may name a transaction that never lands. This gateway's own record of the payment
 * (the attested paymentId) names the one that took its place; the chain still decides the rest.
 */
function replacementOfRecord(payment: PaymentRecord, claims: ProofClaims): string | undefined {
  if (payment.network !== claims.net || payment.direction !== 'sent' || payment.signature === null)
    return undefined;
  return claims.sig !== undefined && payment.replacedSignatures?.includes(claims.sig)
    ? payment.signature
    : undefined;
}
