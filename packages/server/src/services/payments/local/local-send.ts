import { canonicalAddress } from '../../../chains/canonical-address.ts';
import type { ChainAdapter } from '../../../chains/chain-adapter.ts';
import type { NetworkRegistry } from '../../../chains/network-registry.ts';
import { newId } from '../../../domain/ids.ts';
import { toWholeUnits } from '../../../domain/money.ts';
import type { PaymentRecord } from '../../../domain/records/payment-records.ts';
import type { Store } from '../../../store/store.ts';
import { networkCost, SpendGuard, type SpendIntent } from '../../spending/spend-guard.ts';
import { atomicFromField } from '../amounts.ts';
import {
  estimatedConfirmation,
  fundedTransfer,
  type SendInput,
  type SendOptions,
} from '../custodial/send-payment.ts';
import { earlierPayment } from '../earlier-payment.ts';
import { newPayment } from '../new-payment.ts';
import { assetOfPayment, type PaymentAsset, sendableAsset } from '../payment-asset.ts';
import type { PaymentLedger } from '../payment-ledger.ts';
import { checkPayer, checkRecipient, checkTokenRecipient } from '../payment-parties.ts';
import type { PaymentProofs } from '../proofs/payment-proof.ts';
import type { SendAmountBounds } from '../send-amount-bounds.ts';

/** Spec §2.5, as the send build answers it. */
export interface LocalSendResult {
  success: true;
  paymentId: string;
  /** Base64 wire bytes, signature slots empty: the caller signs and broadcasts them. */
  transaction: string;
  lastValidBlockHeight: number;
  expiresAt: number;
  paymentProof: string;
  estimatedConfirmation: string;
  amount: number;
  recipient: string;
  status: string;
  /** The read-only account the transaction carries; the gateway finds it on chain by this. */
  reference: string;
  network: string;
  /** What `amount` is in. */
  asset: PaymentAsset;
  /**
   * The most the signer pays besides the amount, in the network's native currency: the network fee,
   * and for a token the opening of the recipient's token account when the transaction opens it.
   */
  fee: number;
}

export interface LocalSendDeps {
  readonly store: Store;
  readonly networks: NetworkRegistry;
  readonly proofs: PaymentProofs;
  readonly ledger: PaymentLedger;
  readonly amountBounds: SendAmountBounds;
  /** Spend policies (services/spending/); default: one on `store`. */
  readonly spendGuard?: SpendGuard;
  readonly now?: () => number;
}

/** Spec §8: an unsigned transaction is valid typically 60 seconds. */
export const LOCAL_TRANSACTION_VALIDITY_MS = 60_000;

/**
 * Local transaction mode, buyer side (spec §4.6): the gateway builds an unsigned transfer that the
 * caller signs with its own key and broadcasts itself; no key ever reaches the gateway.
 *
 * The transaction carries a fresh reference address (read-only) and a memo with the paymentId, so
 * the reconciler can find it on chain and check it is the one built. The payment is recorded `pending`
 * before the answer; it becomes `confirmed` when the transaction lands, or `expired` once it can no
 * longer land (Solana: its blockhash is past; EVM: `expiresAt`; see PaymentReconciler).
 */
export class LocalSendService {
  private readonly now: () => number;
  private readonly spendGuard: SpendGuard;

  constructor(private readonly deps: LocalSendDeps) {
    this.now = deps.now ?? Date.now;
    this.spendGuard = deps.spendGuard ?? new SpendGuard({ store: deps.store, now: this.now });
  }

  /**
   * `keyId`: the API key that asked (null: a dashboard session). A build is a spend under the spend
   * policies like a custodial send: the gateway makes the transaction, whoever signs it, and an agent
   * held to a policy must not get past it by asking for unsigned bytes of a custodial wallet's
   * transfer. It counts while it can still land, and stops counting once it expires unsigned.
   */
  async build(
    accountId: string,
    input: SendInput,
    idempotencyKey?: string,
    keyId: string | null = null,
    options: SendOptions = {},
  ): Promise<LocalSendResult> {
    // A retry whose first attempt's answer was lost answers the very transaction built then:
    // a second build would be a second payment the caller could sign.
    const earlier = await earlierPayment(this.deps.store, accountId, idempotencyKey, 'local');
    if (earlier !== undefined && earlier.signedTransaction !== null)
      return this.result(earlier, this.chainOf(earlier), earlier.signedTransaction);

    const chain = this.deps.networks.resolve({
      address: input.walletAddress,
      network: input.network,
      field: 'walletAddress',
    });
    const { family, nativeCurrency } = chain.info;
    checkPayer(family, input.walletAddress);
    checkRecipient(family, input.walletAddress, input.recipientAddress);
    // Stored, proven and matched on chain in one spelling (EVM: checksummed), whatever case was sent:
    // the chain reports the payer and recipient checksummed.
    const walletAddress = canonicalAddress(input.walletAddress);
    const recipientAddress = canonicalAddress(input.recipientAddress);
    const asset = await sendableAsset(this.deps.networks, chain, input.asset);
    checkTokenRecipient(asset.address, recipientAddress);
    const amount = options.atomicAmount ?? this.deps.amountBounds.atomicAmount(input.amount, asset);
    const priorityFee =
      input.priorityFee === undefined
        ? undefined
        : atomicFromField('priorityFee', input.priorityFee, nativeCurrency.decimals, nativeCurrency.symbol);

    const spend: SpendIntent = {
      accountId,
      keyId,
      network: chain.info.id,
      asset,
      amount,
      recipient: recipientAddress,
      resource: input.resource ?? null,
      // A refund pays back the payer of a received payment; any other send pays whom the request names.
      payee: options.refundOf === undefined ? 'named' : 'refund',
    };
    await this.spendGuard.check(spend);

    const paymentId = newId('pay');
    const reference = await freshReference(chain);
    const { prepared } = await fundedTransfer(chain, asset, {
      from: walletAddress,
      to: recipientAddress,
      amount,
      memo: paymentId,
      reference,
      ...(priorityFee === undefined ? {} : { priorityFee }),
    });

    const at = this.now();
    const unsigned = Buffer.from(prepared.unsigned).toString('base64');
    const payment: PaymentRecord = newPayment(at, {
      id: paymentId,
      accountId,
      direction: 'sent',
      mode: 'local',
      status: 'pending',
      network: chain.info.id,
      walletAddress,
      sender: walletAddress,
      recipient: recipientAddress,
      amount,
      fee: prepared.fee,
      ...(asset.address === null ? {} : { asset: { address: asset.address, decimals: asset.decimals } }),
      resource: input.resource ?? null,
      metadata: (input.metadata as Record<string, unknown> | undefined) ?? null,
      reference,
      signedTransaction: unsigned,
      lastValidBlockHeight: prepared.lastValidBlockHeight,
      // Never later than the blockhash (as estimated from slot time), never more than 60 s.
      expiresAt: at + Math.floor(Math.min(LOCAL_TRANSACTION_VALIDITY_MS, prepared.validForMs ?? Infinity)),
      idempotencyKey: idempotencyKey ?? null,
      ...(options.refundOf === undefined ? {} : { refundOf: options.refundOf }),
      ...(options.refundReason === undefined ? {} : { refundReason: options.refundReason }),
    });
    await this.deps.store.transaction(async (tx) => {
      await this.spendGuard.chargeIn(
        tx,
        spend,
        paymentId,
        networkCost(prepared, nativeCurrency, priorityFee !== undefined),
      );
      await options.inTransaction?.(tx);
      await this.deps.ledger.recordIn(tx, payment);
    });
    return this.result(payment, chain, unsigned);
  }

  private result(payment: PaymentRecord, chain: ChainAdapter, unsigned: string): LocalSendResult {
    const asset = assetOfPayment(this.deps.networks, payment);
    return {
      success: true,
      paymentId: payment.id,
      transaction: unsigned,
      lastValidBlockHeight: Number(payment.lastValidBlockHeight ?? 0n),
      expiresAt: payment.expiresAt ?? payment.createdAt,
      paymentProof: this.deps.proofs.issue({
        pid: payment.id,
        net: payment.network,
        ...(payment.reference === null ? {} : { ref: payment.reference }),
        from: payment.sender,
        to: payment.recipient,
        amt: payment.amount.toString(),
        ...(payment.asset === undefined ? {} : { ast: payment.asset.address }),
        ...(payment.resource === null ? {} : { res: payment.resource }),
        iat: payment.createdAt,
      }),
      estimatedConfirmation: estimatedConfirmation(chain),
      amount: toWholeUnits(payment.amount, asset.decimals),
      recipient: payment.recipient,
      status: payment.status,
      reference: payment.reference ?? '',
      network: payment.network,
      asset,
      fee: toWholeUnits(payment.fee ?? 0n, chain.info.nativeCurrency.decimals),
    };
  }

  private chainOf(payment: PaymentRecord): ChainAdapter {
    const chain = this.deps.networks.get(payment.network);
    if (chain === undefined)
      throw new Error(`payment ${payment.id} is on ${payment.network}, which is not configured`);
    return chain;
  }
}

/** A new address nobody holds the key to: only the one transaction built here will name it. */
export async function freshReference(chain: ChainAdapter): Promise<string> {
  const { address, secretKey } = await chain.generateKeypair();
  secretKey.fill(0);
  return address;
}
