import type { ChainAdapter, ChainTransaction } from '../chains/chain-adapter.ts';
import type { NetworkRegistry } from '../chains/network-registry.ts';
import { GatewayError } from '../domain/gateway-error.ts';
import { newId } from '../domain/ids.ts';
import { atomicToDecimalText, toWholeUnits } from '../domain/money.ts';
import type { PaymentRecord, Store } from '../store/store.ts';
import { atomicFromField } from './amounts.ts';
import type { PaymentLedger } from './payment-ledger.ts';
import type { PaymentProofs, ProofClaims } from './payment-proof.ts';
import type { WalletService } from './wallet-service.ts';

export interface ReceiveInput {
  readonly walletAddress: string;
  readonly paymentProof: string;
  readonly expectedAmount: number;
  readonly resource?: string | undefined;
  /** Seconds to wait for a transaction that is not confirmed yet. */
  readonly timeout?: number | undefined;
}

/** Spec §2.3. */
export interface ReceiveResult {
  success: true;
  verified: true;
  paymentId: string;
  signature: string;
  amountReceived: number;
  sender: string;
  status: string;
  blockHeight: number | null;
  timestamp: number;
  verificationTime: string;
  network: string;
}

export interface ReceivePaymentDeps {
  readonly store: Store;
  readonly networks: NetworkRegistry;
  readonly wallets: WalletService;
  readonly proofs: PaymentProofs;
  readonly ledger: PaymentLedger;
  /** How old a proof may be, in ms. */
  readonly proofMaxAgeMs: number;
  readonly now?: () => number;
}

export const DEFAULT_RECEIVE_TIMEOUT_SECONDS = 30;
export const MAX_RECEIVE_TIMEOUT_SECONDS = 120;
const POLL_MS = 250;

/**
 * Seller-side verification of a gate402 proof (spec §4.2). The proof's attestation is checked, then
 * every fact is checked again on chain: the transaction exists, succeeded, is confirmed, and moved at
 * least the expected amount from the payer to the seller's wallet. Then the proof is consumed: the
 * database accepts the transaction once, ever, whichever account or instance asks, however many at once.
 */
export class ReceivePaymentService {
  private readonly now: () => number;

  constructor(private readonly deps: ReceivePaymentDeps) {
    this.now = deps.now ?? Date.now;
  }

  async receive(accountId: string, input: ReceiveInput): Promise<ReceiveResult> {
    const started = performance.now();
    await this.deps.wallets.owned(accountId, input.walletAddress);
    const claims = this.claimsOf(input);
    const chain = this.deps.networks.get(claims.net);
    if (chain === undefined) {
      throw invalidProof(`the proof is for network ${claims.net}, which this gateway does not serve`);
    }
    const { decimals, symbol } = chain.info.nativeCurrency;
    const expected = atomicFromField('expectedAmount', input.expectedAmount, decimals, symbol);
    if (claims.sig === undefined) {
      throw invalidProof('the proof names no transaction yet');
    }
    const timeoutMs =
      Math.min(input.timeout ?? DEFAULT_RECEIVE_TIMEOUT_SECONDS, MAX_RECEIVE_TIMEOUT_SECONDS) * 1000;
    const tx = await this.confirmedTransaction(chain, claims.sig, timeoutMs);
    if (tx.error !== null) throw verificationFailed('the transaction failed on chain', 'failed_on_chain');
    const received = tx.nativeTransfers
      .filter((t) => t.from === claims.from && t.to === input.walletAddress)
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

    const blockHeight = await chain.blockHeightOf(tx.slot).catch(() => null);
    const at = this.now();
    const payment: PaymentRecord = {
      id: newId('pay'),
      accountId,
      direction: 'received',
      mode: 'custodial',
      status: 'confirmed',
      network: chain.info.id,
      walletAddress: input.walletAddress,
      sender: claims.from,
      recipient: input.walletAddress,
      amount: received,
      fee: tx.fee,
      resource: input.resource ?? claims.res ?? null,
      metadata: null,
      signature: claims.sig,
      reference: claims.ref ?? null,
      signedTransaction: null,
      lastValidBlockHeight: null,
      expiresAt: null,
      slot: tx.slot,
      blockHeight,
      error: null,
      sourcePaymentId: claims.pid,
      idempotencyKey: null,
      createdAt: at,
      updatedAt: at,
      confirmedAt: at,
    };
    const consumed = await this.deps.store.transaction(async (repos) => {
      if (!(await repos.proofs.consume(`${chain.info.id}:${claims.sig}`, payment.id, accountId, at)))
        return false;
      await this.deps.ledger.recordIn(repos, payment, 'payment.received');
      return true;
    });
    if (!consumed) throw invalidProof('this payment proof was already used', 'already_used');

    return {
      success: true,
      verified: true,
      paymentId: payment.id,
      signature: claims.sig,
      amountReceived: toWholeUnits(received, decimals),
      sender: claims.from,
      status: payment.status,
      blockHeight: blockHeight === null ? null : Number(blockHeight),
      timestamp: payment.createdAt,
      verificationTime: `${Math.round(performance.now() - started)}ms`,
      network: payment.network,
    };
  }

  private claimsOf(input: ReceiveInput): ProofClaims {
    const check = this.deps.proofs.check(input.paymentProof);
    if (!check.valid) {
      const reasons = {
        malformed: 'the payment proof is malformed',
        unknown_issuer: 'the payment proof was issued by a gateway this one does not trust',
        bad_signature: 'the payment proof attestation does not verify',
      };
      throw invalidProof(reasons[check.reason], check.reason);
    }
    const { claims } = check;
    if (claims.to !== input.walletAddress)
      throw invalidProof('the proof pays another recipient', 'recipient_mismatch');
    if (this.now() - claims.iat > this.deps.proofMaxAgeMs)
      throw invalidProof('the payment proof has expired', 'expired');
    if (input.resource !== undefined && claims.res !== undefined && input.resource !== claims.res) {
      throw invalidProof('the proof pays for another resource', 'resource_mismatch');
    }
    return claims;
  }

  /** The transaction once confirmed, waiting up to `timeoutMs` for it to land and confirm. */
  private async confirmedTransaction(
    chain: ChainAdapter,
    signature: string,
    timeoutMs: number,
  ): Promise<ChainTransaction> {
    const deadline = this.now() + timeoutMs;
    for (;;) {
      const status = await chain.getSignatureStatus(signature);
      if (status?.status === 'failed')
        throw verificationFailed('the transaction failed on chain', 'failed_on_chain');
      if (status?.status === 'confirmed' || status?.status === 'finalized') {
        const tx = await chain.getTransaction(signature);
        if (tx !== undefined) return tx;
      }
      if (this.now() >= deadline) {
        throw verificationFailed(
          `the transaction was not confirmed within ${Math.round(timeoutMs / 1000)} s`,
          'not_found',
        );
      }
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  }
}

function invalidProof(message: string, reason?: string): GatewayError {
  return new GatewayError('INVALID_PAYMENT_PROOF', {
    message: `Invalid payment proof: ${message}.`,
    details: { paymentProof: reason ?? message },
  });
}

function verificationFailed(message: string, reason: string): GatewayError {
  return new GatewayError('PAYMENT_VERIFICATION_FAILED', {
    message: `Payment verification failed: ${message}.`,
    details: { paymentProof: reason },
  });
}
