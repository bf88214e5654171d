import type { ChainAdapter, ConfirmationOutcome } from '../chains/chain-adapter.ts';
import { ChainError } from '../chains/chain-error.ts';
import type { NetworkRegistry } from '../chains/network-registry.ts';
import { addressFamily } from '../domain/address.ts';
import { GatewayError } from '../domain/gateway-error.ts';
import { newId } from '../domain/ids.ts';
import { atomicToDecimalText, toWholeUnits } from '../domain/money.ts';
import type { PaymentRecord, Store } from '../store/store.ts';
import { atomicFromField } from './amounts.ts';
import type { PaymentLedger } from './payment-ledger.ts';
import type { PaymentProofs } from './payment-proof.ts';
import type { WalletService } from './wallet-service.ts';

export interface SendInput {
  readonly walletAddress: string;
  readonly recipientAddress: string;
  readonly amount: number;
  readonly resource?: string | undefined;
  readonly metadata?: object | undefined;
  readonly priorityFee?: number | undefined;
  readonly network?: string | undefined;
}

/** Spec §2.2. */
export interface SendResult {
  success: true;
  paymentId: string;
  signature: string;
  amount: number;
  recipient: string;
  status: string;
  blockHeight: number | null;
  timestamp: number;
  estimatedConfirmation: string;
  paymentProof: string;
  network: string;
}

export interface SendPaymentDeps {
  readonly store: Store;
  readonly networks: NetworkRegistry;
  readonly wallets: WalletService;
  readonly proofs: PaymentProofs;
  readonly ledger: PaymentLedger;
  /** Names this process in payment leases. */
  readonly instanceId: string;
  /** How long a send waits for `confirmed` before answering `submitted`. */
  readonly confirmTimeoutMs: number;
  readonly now?: () => number;
}

/** What a payment's lease covers beyond the wait: signing, storing and broadcasting. */
const LEASE_MARGIN_MS = 10_000;

/**
 * Lightning-mode send (spec §4.1): the gateway checks, builds, signs and broadcasts.
 *
 * Exactly once: the signed transaction, its signature and lastValidBlockHeight are stored before the
 * broadcast. If this process dies at any point after that, the reconciler resends the same bytes (it
 * never signs), so the payment lands once or provably expires. With an Idempotency-Key, a retry finds
 * the payment made by the first attempt instead of making another.
 */
export class SendPaymentService {
  private readonly now: () => number;

  constructor(private readonly deps: SendPaymentDeps) {
    this.now = deps.now ?? Date.now;
  }

  async send(accountId: string, input: SendInput, idempotencyKey?: string): Promise<SendResult> {
    const { networks, wallets } = this.deps;
    if (idempotencyKey !== undefined) {
      const earlier = await this.deps.store.payments.findByIdempotencyKey(accountId, idempotencyKey);
      if (earlier !== undefined) return this.settle(earlier, this.chainOf(earlier));
    }

    const chain = networks.resolve({
      address: input.walletAddress,
      network: input.network,
      field: 'walletAddress',
    });
    const { family, nativeCurrency } = chain.info;
    if (addressFamily(input.recipientAddress) !== family) {
      throw new GatewayError('INVALID_RECIPIENT', {
        message: `The recipient is not a valid ${family} address.`,
        details: { recipientAddress: `must be a ${family} address` },
      });
    }
    if (input.recipientAddress === input.walletAddress) {
      throw new GatewayError('INVALID_RECIPIENT', {
        message: 'A wallet cannot pay itself.',
        details: { recipientAddress: 'must differ from walletAddress' },
      });
    }
    const amount = atomicFromField('amount', input.amount, nativeCurrency.decimals, nativeCurrency.symbol);
    const priorityFee =
      input.priorityFee === undefined
        ? undefined
        : atomicFromField('priorityFee', input.priorityFee, nativeCurrency.decimals, nativeCurrency.symbol);
    const signer = await wallets.signer(accountId, input.walletAddress);

    const paymentId = newId('pay');
    const prepared = await chain.prepareTransfer({
      from: input.walletAddress,
      to: input.recipientAddress,
      amount,
      memo: paymentId,
      ...(priorityFee === undefined ? {} : { priorityFee }),
    });
    const balance = await chain.getBalance(input.walletAddress);
    if (balance < amount + prepared.fee) {
      signer.secretKey.fill(0);
      throw insufficientBalance(
        balance,
        amount + prepared.fee,
        nativeCurrency.decimals,
        nativeCurrency.symbol,
      );
    }
    const signed = await chain.sign(prepared, signer.secretKey);
    signer.secretKey.fill(0);

    const at = this.now();
    const payment: PaymentRecord = {
      id: paymentId,
      accountId,
      direction: 'sent',
      mode: 'custodial',
      status: 'pending',
      network: chain.info.id,
      walletAddress: input.walletAddress,
      sender: input.walletAddress,
      recipient: input.recipientAddress,
      amount,
      fee: prepared.fee,
      resource: input.resource ?? null,
      metadata: (input.metadata as Record<string, unknown> | undefined) ?? null,
      signature: signed.signature,
      reference: null,
      signedTransaction: Buffer.from(signed.wire).toString('base64'),
      lastValidBlockHeight: signed.lastValidBlockHeight,
      expiresAt: null,
      slot: null,
      blockHeight: null,
      error: null,
      sourcePaymentId: null,
      idempotencyKey: idempotencyKey ?? null,
      createdAt: at,
      updatedAt: at,
      confirmedAt: null,
    };
    // Stored, with the signed bytes, before anything reaches the chain.
    await this.deps.ledger.record(payment, {
      lease: { owner: this.deps.instanceId, until: at + this.deps.confirmTimeoutMs + LEASE_MARGIN_MS },
    });

    const broadcast = await this.broadcast(chain, payment, signed.wire);
    const result = await this.settle(broadcast, chain);
    await this.deps.store.payments.releaseLease(payment.id, this.deps.instanceId);
    return result;
  }

  private async broadcast(
    chain: ChainAdapter,
    payment: PaymentRecord,
    wire: Uint8Array,
  ): Promise<PaymentRecord> {
    try {
      await chain.broadcast(wire);
    } catch (error) {
      if (!(error instanceof ChainError)) throw error;
      switch (error.kind) {
        case 'already_processed':
          break;
        case 'insufficient_funds': {
          await this.deps.ledger.move(payment, 'failed', { error: 'insufficient funds' });
          const { decimals, symbol } = chain.info.nativeCurrency;
          throw insufficientBalance(undefined, payment.amount + (payment.fee ?? 0n), decimals, symbol);
        }
        case 'blockhash_expired':
          await this.deps.ledger.move(payment, 'expired', { error: 'blockhash expired before broadcast' });
          throw failed(
            payment,
            'expired',
            'the transaction expired before it could be sent; nothing was paid',
          );
        case 'rejected':
        case 'invalid_transaction':
          await this.deps.ledger.move(payment, 'failed', { error: error.message });
          throw failed(payment, 'failed', 'the chain refused the transaction; nothing was paid');
        case 'unavailable':
          // Unknown whether it arrived: stays pending, and the reconciler resends the same bytes.
          return payment;
      }
    }
    return (await this.deps.ledger.move(payment, 'submitted')) ?? (await this.reload(payment));
  }

  /** Waits a bounded time for the outcome, records it, and answers; slow confirmation is not an error. */
  private async settle(payment: PaymentRecord, chain: ChainAdapter): Promise<SendResult> {
    let current = payment;
    if ((current.status === 'pending' || current.status === 'submitted') && current.signature !== null) {
      const outcome = await chain.waitForConfirmation(
        current.signature,
        current.lastValidBlockHeight ?? 0n,
        Math.max(0, current.createdAt + this.deps.confirmTimeoutMs - this.now()),
      );
      current = await this.applyOutcome(current, chain, outcome);
    }
    if (current.status === 'failed' || current.status === 'expired') {
      throw failed(current, current.status, current.error ?? 'the transaction did not succeed');
    }
    return this.result(current, chain);
  }

  private async applyOutcome(
    payment: PaymentRecord,
    chain: ChainAdapter,
    outcome: ConfirmationOutcome,
  ): Promise<PaymentRecord> {
    switch (outcome.status) {
      case 'confirmed':
      case 'finalized': {
        const blockHeight = await chain.blockHeightOf(outcome.slot).catch(() => null);
        const moved = await this.deps.ledger.move(payment, outcome.status, {
          slot: outcome.slot,
          blockHeight,
          confirmedAt: this.now(),
        });
        return moved ?? this.reload(payment);
      }
      case 'failed':
        return (
          (await this.deps.ledger.move(payment, 'failed', { slot: outcome.slot, error: outcome.error })) ??
          this.reload(payment)
        );
      case 'expired':
        return (
          (await this.deps.ledger.move(payment, 'expired', {
            error: 'blockhash expired before the transaction landed',
          })) ?? this.reload(payment)
        );
      case 'pending':
        return this.reload(payment);
    }
  }

  private result(payment: PaymentRecord, chain: ChainAdapter): SendResult {
    const { decimals } = chain.info.nativeCurrency;
    const signature = payment.signature ?? '';
    return {
      success: true,
      paymentId: payment.id,
      signature,
      amount: toWholeUnits(payment.amount, decimals),
      recipient: payment.recipient,
      status: payment.status,
      blockHeight: payment.blockHeight === null ? null : Number(payment.blockHeight),
      timestamp: payment.createdAt,
      estimatedConfirmation: estimatedConfirmation(chain),
      paymentProof: this.deps.proofs.issue({
        pid: payment.id,
        net: payment.network,
        sig: signature,
        from: payment.sender,
        to: payment.recipient,
        amt: payment.amount.toString(),
        ...(payment.resource === null ? {} : { res: payment.resource }),
        iat: payment.createdAt,
      }),
      network: payment.network,
    };
  }

  private async reload(payment: PaymentRecord): Promise<PaymentRecord> {
    return (await this.deps.store.payments.get(payment.id)) ?? payment;
  }

  private chainOf(payment: PaymentRecord): ChainAdapter {
    const chain = this.deps.networks.get(payment.network);
    if (chain === undefined)
      throw new Error(`payment ${payment.id} is on ${payment.network}, which is not configured`);
    return chain;
  }
}

/** What a caller can expect, from the network's block time. */
export function estimatedConfirmation(chain: ChainAdapter): string {
  return chain.info.family === 'solana' ? '1-2 seconds' : '2-15 seconds';
}

function insufficientBalance(
  balance: bigint | undefined,
  needed: bigint,
  decimals: number,
  symbol: string,
): GatewayError {
  const need = `${atomicToDecimalText(needed, decimals)} ${symbol}`;
  return new GatewayError('INSUFFICIENT_BALANCE', {
    message:
      balance === undefined
        ? `Not enough funds: the payment and its fees need ${need}.`
        : `Not enough funds: the payment and its fees need ${need}; the wallet holds ${atomicToDecimalText(balance, decimals)} ${symbol}.`,
    details: { walletAddress: `needs ${need} including fees` },
  });
}

function failed(payment: PaymentRecord, status: string, reason: string): GatewayError {
  return new GatewayError('PAYMENT_FAILED', {
    message: `Payment ${payment.id} ${status}: ${reason}.`,
    details: { paymentId: payment.id, status },
  });
}
