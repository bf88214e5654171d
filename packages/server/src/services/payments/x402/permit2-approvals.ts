import type { ChainAdapter, SignedTransaction } from '../../../chains/chain-adapter.ts';
import { ChainError } from '../../../chains/chain-error.ts';
import type { UptoPayer } from '../../../chains/upto-payer.ts';
import { GatewayError } from '../../../domain/gateway-error.ts';
import { newId } from '../../../domain/ids.ts';
import { atomicToDecimalText } from '../../../domain/money.ts';
import type { TokenInfo } from '../../../domain/network.ts';
import type { PaymentRecord } from '../../../domain/records/payment-records.ts';
import type { Store } from '../../../store/store.ts';
import type { WalletService } from '../../wallets/wallet-service.ts';
import { newPayment } from '../new-payment.ts';
import type { PaymentLedger } from '../payment-ledger.ts';
import { permit2ApprovalMetadata } from './permit2-approval-record.ts';

export interface Permit2ApprovalDeps {
  readonly store: Store;
  readonly wallets: WalletService;
  readonly ledger: PaymentLedger;
  /** Names this process in the approval payment's lease (the reconciler leaves it alone meanwhile). */
  readonly instanceId: string;
  /** How long a request waits for the approval to be mined; default 60 s. */
  readonly waitMs?: number;
  readonly pollMs?: number;
  readonly now?: () => number;
}

/** What a request that finds the approval sent by another waits on. */
class AlreadyClaimed extends Error {
  constructor(readonly paymentId: string) {
    super('another request sends this approval');
  }
}

const ENDED = new Set(['failed', 'expired', 'reverted']);
/** How many times one request takes over an approval that ended without landing before giving up. */
const MAX_ATTEMPTS = 2;

/**
 * The Permit2 approval a custodial EVM wallet needs before it signs a Permit2 payment (x402 `upto`):
 * `approve(Permit2, max)` for the token, sent by the wallet itself, its own native currency paying the
 * gas. Permit2 moves nothing without a permit signed by the wallet's key, which only the gateway holds,
 * so the allowance adds no way for anyone else to take the tokens.
 *
 * Exactly once per (network, wallet, token), whatever the concurrency: the approval is a payment record
 * (`custodial`, amount 0 of the native currency, its fee the gas, metadata `description` and
 * `permit2Approval`: permit2-approval-record.ts) stored with
 * its signed bytes and the wallet's nonce, allocated in the database, before the broadcast, in the
 * transaction that claims the `permit2_approvals` row. A concurrent request, on any instance, finds the
 * row and waits for that transaction instead of sending another; a crash after the commit leaves a
 * pending custodial send the reconciler resends (the same bytes; a replacement under the same nonce)
 * and confirms. An approval that ends without landing (failed, expired) is taken over by the next one.
 */
export class Permit2ApprovalService {
  private readonly now: () => number;

  constructor(private readonly deps: Permit2ApprovalDeps) {
    this.now = deps.now ?? Date.now;
  }

  /**
   * Returns once `wallet` lets Permit2 move at least `needed` of `token`, sending the approval first when
   * it does not. INSUFFICIENT_BALANCE (422), before anything is signed, when the wallet lacks the native
   * currency for the approval's gas; CHAIN_UNAVAILABLE (503) when it is not mined in time (it stays on
   * its way: a retry waits for the same transaction).
   */
  async ensure(
    accountId: string,
    chain: ChainAdapter,
    payer: UptoPayer,
    wallet: string,
    token: TokenInfo,
    needed: bigint,
  ): Promise<void> {
    if ((await payer.allowance(wallet, token.address)) >= needed) return;
    const until = this.now() + (this.deps.waitMs ?? 60_000);
    for (let attempt = 0; ; attempt++) {
      const paymentId = await this.sendOnce(accountId, chain, payer, wallet, token);
      const outcome = await this.waitFor(paymentId, chain, payer, wallet, token, needed, until);
      if (outcome === 'approved') return;
      if (attempt + 1 >= MAX_ATTEMPTS) {
        throw new GatewayError('PAYMENT_FAILED', {
          message: `The Permit2 approval of ${token.symbol} from wallet ${wallet} did not land (payment ${paymentId}); nothing was signed for the payment.`,
          details: { walletAddress: 'its Permit2 approval did not land', paymentId },
        });
      }
    }
  }

  /** The approval's payment id: the one another request sent, or one sent now. */
  private async sendOnce(
    accountId: string,
    chain: ChainAdapter,
    payer: UptoPayer,
    wallet: string,
    token: TokenInfo,
  ): Promise<string> {
    const network = chain.info.id;
    const existing = await this.deps.store.permit2Approvals.get(network, wallet, token.address);
    const earlier = existing === undefined ? undefined : await this.deps.store.payments.get(existing);
    if (earlier !== undefined && !ENDED.has(earlier.status)) return earlier.id;

    const nonces = chain.nonces;
    if (nonces === undefined) throw new Error(`${chain.info.name} has no nonces; no Permit2 approval`);
    const prepared = await payer.prepareApproval(wallet, token.address);
    const { decimals, symbol } = chain.info.nativeCurrency;
    const [balance, unsettled] = await Promise.all([
      chain.getBalance(wallet),
      this.deps.store.payments.unsettledSpend(network, wallet),
    ]);
    const needed = prepared.fee + unsettled.native;
    if (balance < needed) {
      throw new GatewayError('INSUFFICIENT_BALANCE', {
        message: `Wallet ${wallet} must approve Permit2 for ${token.symbol} once (a transaction of its own) and holds ${atomicToDecimalText(balance, decimals)} ${symbol}, less than the ${atomicToDecimalText(needed, decimals)} ${symbol} of gas it may cost: ${atomicToDecimalText(needed - balance, decimals)} ${symbol} short. Nothing was signed.`,
        details: {
          walletAddress: `${wallet} needs ${atomicToDecimalText(needed - balance, decimals)} ${symbol} more for the gas of its Permit2 approval of ${token.symbol}`,
        },
      });
    }

    const signer = await this.deps.wallets.signer(accountId, wallet);
    const at = this.now();
    const paymentId = newId('pay');
    let stored: { payment: PaymentRecord; signed: SignedTransaction };
    try {
      stored = await this.deps.store.transaction(async (tx) => {
        // The nonce first: it serialises this wallet's senders (PostgreSQL row lock; SQLite's one
        // writer), so the row read after it shows any approval committed meanwhile.
        const nonce = await tx.nonces.allocate(network, wallet, prepared.nonce ?? 0n);
        const current = await tx.permit2Approvals.get(network, wallet, token.address);
        if (current !== undefined) {
          const other = await tx.payments.get(current);
          // Thrown to roll the nonce back with the transaction.
          if (other !== undefined && !ENDED.has(other.status)) throw new AlreadyClaimed(current);
        }
        const signed = await chain.sign(nonces.withNonce(prepared, nonce), signer.secretKey);
        const payment = newPayment(at, {
          id: paymentId,
          accountId,
          direction: 'sent',
          mode: 'custodial',
          status: 'pending',
          network,
          walletAddress: wallet,
          sender: wallet,
          // The contract the transaction calls; nothing is paid to it (amount 0): the gas is the fee.
          recipient: token.address,
          amount: 0n,
          fee: prepared.fee,
          resource: null,
          metadata: permit2ApprovalMetadata(token),
          signature: signed.signature,
          signedTransaction: Buffer.from(signed.wire).toString('base64'),
          lastValidBlockHeight: signed.lastValidBlockHeight,
          idempotencyKey: null,
          nonce,
        });
        if (!(await tx.permit2Approvals.claim(network, wallet, token.address, paymentId, current, at))) {
          throw new AlreadyClaimed(current ?? '');
        }
        await this.deps.ledger.recordIn(tx, payment, undefined, {
          owner: this.deps.instanceId,
          until: at + (this.deps.waitMs ?? 60_000) + 10_000,
        });
        return { payment, signed };
      });
    } catch (error) {
      if (!(error instanceof AlreadyClaimed)) throw error;
      // Lost the race: the row names the winner's approval now.
      const winner =
        error.paymentId !== ''
          ? error.paymentId
          : await this.deps.store.permit2Approvals.get(network, wallet, token.address);
      if (winner === undefined) throw new Error('a Permit2 approval was claimed and then vanished');
      return winner;
    } finally {
      signer.secretKey.fill(0);
    }

    const { payment, signed } = stored;
    try {
      await chain.broadcast(signed.wire);
    } catch (error) {
      if (!(error instanceof ChainError)) throw error;
      if (error.kind === 'unavailable' || error.kind === 'already_processed') {
        // Unknown whether it arrived (or it did): the wait below, or the reconciler, finds out.
      } else {
        await this.deps.ledger.move(payment, 'failed', { error: `the chain refused it: ${error.message}` });
        await this.deps.store.payments.releaseLease(payment.id, this.deps.instanceId);
        throw new GatewayError('PAYMENT_FAILED', {
          message: `The Permit2 approval from wallet ${wallet} was refused by the chain (${error.message}); nothing was signed for the payment.`,
          details: { walletAddress: 'its Permit2 approval was refused', paymentId: payment.id },
        });
      }
    }
    await this.deps.ledger.move(payment, 'submitted');
    return payment.id;
  }

  /** Until the allowance shows on chain (`approved`), the approval ended without landing (`ended`), or `until`. */
  private async waitFor(
    paymentId: string,
    chain: ChainAdapter,
    payer: UptoPayer,
    wallet: string,
    token: TokenInfo,
    needed: bigint,
    until: number,
  ): Promise<'approved' | 'ended'> {
    try {
      for (;;) {
        const payment = await this.deps.store.payments.get(paymentId);
        if (payment === undefined) throw new Error(`approval payment ${paymentId} vanished`);
        if (payment.signature !== null && (payment.status === 'pending' || payment.status === 'submitted')) {
          // Stored but not known to be sent (its sender died, or the chain was unreachable): the same
          // signed bytes are sent again, by whichever request waits for it (never a new transaction).
          if (payment.status === 'pending' && payment.signedTransaction !== null) {
            const sent = await chain
              .broadcast(Buffer.from(payment.signedTransaction, 'base64'))
              .then(() => true)
              .catch((error: unknown) => error instanceof ChainError && error.kind === 'already_processed');
            if (sent) await this.deps.ledger.move(payment, 'submitted');
          }
          const outcome = await chain.getSignatureStatus(payment.signature);
          if (outcome?.status === 'failed') {
            await this.deps.ledger.move(payment, 'failed', { error: outcome.error, slot: outcome.slot });
          } else if (outcome?.status === 'confirmed' || outcome?.status === 'finalized') {
            const landed = await chain.getTransaction(payment.signature).catch(() => undefined);
            await this.deps.ledger.move(payment, 'confirmed', {
              slot: outcome.slot,
              confirmedAt: this.now(),
              ...(landed?.fee === undefined ? {} : { fee: landed.fee }),
            });
          }
        }
        if ((await payer.allowance(wallet, token.address)) >= needed) return 'approved';
        if (ENDED.has(payment.status)) return 'ended';
        if (this.now() > until) {
          throw new GatewayError('CHAIN_UNAVAILABLE', {
            message: `The Permit2 approval from wallet ${wallet} (payment ${paymentId}) is not mined yet; retry shortly. Nothing was signed for the payment.`,
          });
        }
        await new Promise((resolve) => setTimeout(resolve, this.deps.pollMs ?? 250));
      }
    } finally {
      await this.deps.store.payments.releaseLease(paymentId, this.deps.instanceId).catch(() => undefined);
    }
  }
}
