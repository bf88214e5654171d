import { canonicalAddress } from '../../../chains/canonical-address.ts';
import type { NetworkRegistry } from '../../../chains/network-registry.ts';
import { GatewayError } from '../../../domain/gateway-error.ts';
import { newId } from '../../../domain/ids.ts';
import { toWholeUnits } from '../../../domain/money.ts';
import type { PaymentRecord } from '../../../domain/records/payment-records.ts';
import { decodeX402Header } from '../../../x402/payment-header.ts';
import type { WalletService } from '../../wallets/wallet-service.ts';
import { atomicFromField } from '../amounts.ts';
import { newPayment } from '../new-payment.ts';
import { type PaymentAsset, statedTerms } from '../payment-asset.ts';
import type { PaymentLedger } from '../payment-ledger.ts';
import type { ProofVerifier } from '../proofs/proof-verifier.ts';
import { type ReceiveInput, receiveTimeoutMs } from '../receive-payment.ts';
import type { X402LocalReceiveResult, X402LocalReceiveService } from '../x402/x402-local-receive.ts';
import { freshReference, LOCAL_TRANSACTION_VALIDITY_MS } from './local-send.ts';
import { receiptMemo } from './local-transfer.ts';

/** What /payment/receive takes, plus the priority fee of the receipt transaction. */
export interface LocalReceiveInput extends ReceiveInput {
  readonly priorityFee?: number | undefined;
}

/** Spec §2.5, as the receive build answers it. */
export interface LocalReceiveResult {
  success: true;
  verified: true;
  /** The seller's own payment id for this receipt. */
  paymentId: string;
  /** Base64 wire bytes of the receipt, signature slot empty: the seller signs and broadcasts it. */
  transaction: string;
  lastValidBlockHeight: number;
  expiresAt: number;
  /** The buyer's transaction the proof names. */
  signature: string;
  amountReceived: number;
  sender: string;
  status: string;
  reference: string;
  network: string;
  /** What `amountReceived` is in: the native currency (a gate402 proof pays nothing else). */
  asset: PaymentAsset;
}

export interface LocalReceiveDeps {
  readonly networks: NetworkRegistry;
  readonly wallets: WalletService;
  /** Standard x402 payloads, for which the seller's wallet is the fee payer. */
  readonly x402: X402LocalReceiveService;
  readonly verifier: ProofVerifier;
  readonly ledger: PaymentLedger;
  readonly now?: () => number;
}

/**
 * Local transaction mode, seller side (spec §4.7). The proof is verified as by /payment/receive; the
 * answer is a receipt for the seller to sign: a transaction paid by the seller's wallet that writes on
 * chain which payment it accepted (a memo, and a zero transfer to itself carrying a fresh reference,
 * since the Memo program refuses accounts that do not sign).
 *
 * The proof is consumed when the receipt lands, not before: a pending received payment is recorded
 * with the receipt's reference, and the reconciler confirms it and consumes the proof in one database
 * transaction. If the receipt expires unsent, the proof stays redeemable.
 *
 * A standard x402 payload instead goes to X402LocalReceiveService: the answer is then the buyer's own
 * transaction, for the seller to sign as its fee payer.
 */
export class LocalReceiveService {
  private readonly now: () => number;

  constructor(private readonly deps: LocalReceiveDeps) {
    this.now = deps.now ?? Date.now;
  }

  async build(
    accountId: string,
    input: LocalReceiveInput,
  ): Promise<LocalReceiveResult | X402LocalReceiveResult> {
    // The wallet as stored (EVM: checksummed, as the chain reports the receipt's payer), whatever case was sent.
    const { address: walletAddress } = await this.deps.wallets.owned(accountId, input.walletAddress);
    const { network, asset: stated } = await statedTerms(
      this.deps.networks,
      { address: walletAddress, network: input.network, asset: input.asset },
      'walletAddress',
    );
    const header = decodeX402Header(input.paymentProof);
    if (header !== undefined) {
      return this.deps.x402.build(accountId, { ...input, walletAddress, header, asset: stated, network });
    }
    const { claims, chain, tx, signature, received, asset } = await this.deps.verifier.verify({
      paymentProof: input.paymentProof,
      recipient: walletAddress,
      expected: { whole: input.expectedAmount, field: 'expectedAmount' },
      asset: stated,
      network,
      resource: input.resource,
      timeoutMs: receiveTimeoutMs(input.timeout),
    });
    const { decimals, symbol } = chain.info.nativeCurrency;
    const priorityFee =
      input.priorityFee === undefined
        ? undefined
        : atomicFromField('priorityFee', input.priorityFee, decimals, symbol);

    const paymentId = newId('pay');
    const reference = await freshReference(chain);
    const [prepared, blockHeight, balance] = await Promise.all([
      chain.prepareTransfer({
        from: walletAddress,
        to: walletAddress,
        amount: 0n,
        memo: receiptMemo(paymentId, claims.pid),
        reference,
        ...(priorityFee === undefined ? {} : { priorityFee }),
      }),
      chain.blockHeightOf(tx.slot).catch(() => null),
      chain.getBalance(walletAddress),
    ]);
    if (balance < prepared.fee) {
      throw new GatewayError('INSUFFICIENT_BALANCE', {
        message: `The receipt's fee is paid by ${walletAddress}, which cannot pay it.`,
        details: { walletAddress: 'cannot pay the receipt transaction fee' },
      });
    }
    const at = this.now();
    const unsigned = Buffer.from(prepared.unsigned).toString('base64');
    const payment: PaymentRecord = newPayment(at, {
      id: paymentId,
      accountId,
      direction: 'received',
      mode: 'local',
      status: 'pending',
      network: chain.info.id,
      walletAddress,
      sender: canonicalAddress(claims.from),
      recipient: walletAddress,
      amount: received,
      // A token payment is recorded in its token (see ReceivePaymentService).
      ...(asset.address === null ? {} : { asset: { address: asset.address, decimals: asset.decimals } }),
      fee: tx.fee,
      resource: input.resource ?? claims.res ?? null,
      // The buyer's transaction: what the proof is consumed by once the receipt lands.
      signature,
      reference,
      signedTransaction: unsigned,
      lastValidBlockHeight: prepared.lastValidBlockHeight,
      expiresAt: at + Math.floor(Math.min(LOCAL_TRANSACTION_VALIDITY_MS, prepared.validForMs ?? Infinity)),
      slot: tx.slot,
      blockHeight,
      sourcePaymentId: claims.pid,
    });
    await this.deps.ledger.record(payment);
    return {
      success: true,
      verified: true,
      paymentId,
      transaction: unsigned,
      lastValidBlockHeight: Number(prepared.lastValidBlockHeight),
      expiresAt: payment.expiresAt ?? at,
      signature,
      amountReceived: toWholeUnits(received, decimals),
      sender: canonicalAddress(claims.from),
      status: payment.status,
      reference,
      network: payment.network,
      asset: { ...asset },
    };
  }
}
