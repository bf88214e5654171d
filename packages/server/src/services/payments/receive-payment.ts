import type { NetworkRegistry } from '../../chains/network-registry.ts';
import { newId } from '../../domain/ids.ts';
import type { PaymentRecord } from '../../domain/records/payment-records.ts';
import type { Store } from '../../store/store.ts';
import { decodeX402Header } from '../../x402/payment-header.ts';
import type { WalletService } from '../wallets/wallet-service.ts';
import { newPayment } from './new-payment.ts';
import { statedTerms } from './payment-asset.ts';
import type { PaymentLedger } from './payment-ledger.ts';
import { invalidProof } from './proofs/proof-errors.ts';
import type { ProofVerifier } from './proofs/proof-verifier.ts';
import { type ReceiveResult, receiveResult } from './receive-result.ts';
import type { X402ReceiveService } from './x402/x402-receive.ts';

export interface ReceiveInput {
  readonly walletAddress: string;
  readonly paymentProof: string;
  /** In whole units of `asset`. */
  readonly expectedAmount: number;
  /**
   * What the payment must be paid in: a symbol GET /networks lists (SOL, ETH, USDC) or a mint /
   * contract address; absent, the native currency. A payment in another is refused (asset_mismatch)
   * before anything is consumed or settled.
   */
  readonly asset?: string | undefined;
  readonly resource?: string | undefined;
  /** The network the payment must be on; a proof for another is refused before anything is consumed. */
  readonly network?: string | undefined;
  /** Seconds to wait for a transaction that is not confirmed yet. */
  readonly timeout?: number | undefined;
  /** x402 payloads only: the facilitator that verifies and settles them instead of the built-in one. */
  readonly facilitatorUrl?: string | undefined;
  /** Sent as the Authorization header to `facilitatorUrl`, and nowhere else. */
  readonly facilitatorAuthorization?: string | undefined;
}

export interface ReceivePaymentDeps {
  readonly store: Store;
  readonly networks: NetworkRegistry;
  readonly wallets: WalletService;
  readonly verifier: ProofVerifier;
  readonly ledger: PaymentLedger;
  /** Standard x402 payloads (X-PAYMENT, PAYMENT-SIGNATURE) go here. */
  readonly x402: X402ReceiveService;
  readonly now?: () => number;
}

export const DEFAULT_RECEIVE_TIMEOUT_SECONDS = 30;
export const MAX_RECEIVE_TIMEOUT_SECONDS = 120;

/**
 * Seller-side verification of a gate402 proof (spec §4.2). The proof's attestation is checked, then
 * every fact is checked again on chain (see ProofVerifier): the transaction exists, succeeded, is
 * confirmed, and moved at least the expected amount from the payer to the seller's wallet. A local-mode
 * proof (no signature yet, a reference) is accepted once its transaction has landed. Then the proof is
 * consumed: the database accepts the transaction once, ever, whichever account or instance asks, however
 * many at once, and whichever kind of proof names it.
 */
export class ReceivePaymentService {
  private readonly now: () => number;

  constructor(private readonly deps: ReceivePaymentDeps) {
    this.now = deps.now ?? Date.now;
  }

  /**
   * With an Idempotency-Key, the received payment carries it: a retry whose first request recorded the
   * payment but never stored its answer (its instance died in between) finds it by the key and answers
   * it, instead of being refused the proof it consumed itself.
   */
  async receive(accountId: string, input: ReceiveInput, idempotencyKey?: string): Promise<ReceiveResult> {
    const started = performance.now();
    await this.deps.wallets.owned(accountId, input.walletAddress);
    const { network, asset } = await statedTerms(
      this.deps.networks,
      { address: input.walletAddress, network: input.network, asset: input.asset },
      'walletAddress',
    );
    const x402 = decodeX402Header(input.paymentProof);
    if (x402 !== undefined) {
      return this.deps.x402.receive(
        accountId,
        {
          walletAddress: input.walletAddress,
          header: x402,
          expected: { whole: input.expectedAmount, field: 'expectedAmount' },
          asset,
          resource: input.resource,
          network,
          facilitatorUrl: input.facilitatorUrl,
          facilitatorAuthorization: input.facilitatorAuthorization,
          timeoutMs: receiveTimeoutMs(input.timeout),
        },
        idempotencyKey,
      );
    }
    // The payment this very key recorded into this wallet: the request is the retry of one whose answer
    // was lost, and its proof, consumed by that payment, is answered with it rather than refused.
    const found =
      idempotencyKey === undefined
        ? undefined
        : await this.deps.store.payments.findByIdempotencyKey(accountId, idempotencyKey);
    const earlier =
      found?.direction === 'received' && found.walletAddress === input.walletAddress ? found : undefined;
    const verified = await this.deps.verifier.verify({
      paymentProof: input.paymentProof,
      recipient: input.walletAddress,
      expected: { whole: input.expectedAmount, field: 'expectedAmount' },
      asset,
      resource: input.resource,
      network,
      timeoutMs: receiveTimeoutMs(input.timeout),
      usedByRetriedRequest: earlier?.signature ?? undefined,
      consumedByCaller: true,
    });
    const { claims, chain, tx, signature, received, proofKey } = verified;

    const blockHeight = await chain.blockHeightOf(tx.slot).catch(() => null);
    const at = this.now();
    const payment: PaymentRecord = newPayment(at, {
      id: newId('pay'),
      accountId,
      direction: 'received',
      mode: claims.sig === undefined ? 'local' : 'custodial',
      status: 'confirmed',
      network: chain.info.id,
      walletAddress: input.walletAddress,
      sender: claims.from,
      recipient: input.walletAddress,
      amount: received,
      // A token payment is recorded in its token: without this its atomic amount would read as the
      // native currency's (2.5 USDC shown as 0.0025 SOL, and refunded as such).
      ...(verified.asset.address === null
        ? {}
        : { asset: { address: verified.asset.address, decimals: verified.asset.decimals } }),
      fee: tx.fee,
      resource: input.resource ?? claims.res ?? null,
      signature,
      reference: claims.ref ?? null,
      slot: tx.slot,
      blockHeight,
      sourcePaymentId: claims.pid,
      // A key already on a payment (kept longer than the key itself, 24 h) is not given to a second one.
      idempotencyKey: found === undefined ? (idempotencyKey ?? null) : null,
      confirmedAt: at,
    });
    const consumed = await this.deps.store.transaction(async (repos) => {
      if (!(await repos.proofs.consume(proofKey, payment.id, accountId, at))) return false;
      await this.deps.ledger.recordIn(repos, payment, 'payment.received');
      return true;
    });
    if (!consumed) {
      if (earlier === undefined || earlier.signature !== signature) {
        throw invalidProof('this payment proof was already used', 'already_used');
      }
      return receiveResult(earlier, verified.asset, started);
    }
    return receiveResult(payment, verified.asset, started);
  }
}

/** The `timeout` field (seconds, default 30, at most 120) in ms. */
export function receiveTimeoutMs(timeoutSeconds: number | undefined): number {
  return Math.min(timeoutSeconds ?? DEFAULT_RECEIVE_TIMEOUT_SECONDS, MAX_RECEIVE_TIMEOUT_SECONDS) * 1000;
}
