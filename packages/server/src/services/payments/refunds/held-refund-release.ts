import type { ChainAdapter, PreparedTransaction } from '../../../chains/chain-adapter.ts';
import { ChainError } from '../../../chains/chain-error.ts';
import type { NetworkRegistry } from '../../../chains/network-registry.ts';
import { GatewayError } from '../../../domain/gateway-error.ts';
import type { PaymentRecord } from '../../../domain/records/payment-records.ts';
import type { Store } from '../../../store/store.ts';
import type { WalletService } from '../../wallets/wallet-service.ts';
import { checkFunds, fundedTransfer } from '../custodial/send-payment.ts';
import { assetOfPayment, type PaymentAsset } from '../payment-asset.ts';
import type { PaymentLedger } from '../payment-ledger.ts';
import { isHeldRefund } from './held-refund.ts';

export interface HeldRefundReleaseDeps {
  readonly store: Store;
  readonly networks: NetworkRegistry;
  readonly ledger: Pick<PaymentLedger, 'move' | 'moveIn'>;
  /** Signs the refund once it may go out; without it held refunds wait (they are still cancelled). */
  readonly wallets?: Pick<WalletService, 'signer'> | undefined;
}

/** Thrown inside the release transaction when another worker released the refund first: rolls back. */
class ReleasedElsewhere extends Error {}

/**
 * Ends the hold of a held refund (held-refund.ts), run by the payment reconciler on the refund it leased:
 * - the refunded payment is `finalized`: the refund is signed now and stored `submitted` with its signed
 *   bytes (EVM: with the wallet's next nonce, allocated in the same database transaction), then
 *   broadcast; from there it is any custodial send: the reconciler resends the same bytes until they
 *   land or provably cannot;
 * - the refunded payment is still `confirmed`: it waits;
 * - the refunded payment left the chain (`reverted`) or otherwise never became final: the refund ends
 *   `failed` with the reason (payment.failed), having sent nothing; a failed refund holds no part of the
 *   payment and no spend, so its amount is released;
 * - the wallet can no longer pay it (its funds or its key are gone since): `failed` likewise, naming why;
 *   the seller may refund again.
 *
 * Exactly once, on any number of instances and across crashes: the hold ends by a compare-and-set of
 * the refund's state out of `pending` (PaymentLedger), so of two workers one signs it into the record and
 * the other's transaction rolls back (its EVM nonce with it). Nothing is broadcast before the signed
 * bytes are committed, and a crash after the commit leaves a `submitted` send with its bytes, which the
 * reconciler resends as it does any send. A crash before the commit leaves the refund held, to be
 * released by the next pass.
 */
export class HeldRefundRelease {
  constructor(private readonly deps: HeldRefundReleaseDeps) {}

  async advance(refund: PaymentRecord, chain: ChainAdapter): Promise<void> {
    if (!isHeldRefund(refund) || refund.refundOf === undefined) return;
    const original = await this.deps.store.payments.get(refund.refundOf);
    if (original?.status === 'confirmed') return;
    if (original?.status !== 'finalized') {
      const state = original === undefined ? 'no longer recorded' : original.status;
      await this.cancel(
        refund,
        `cancelled while held: the refunded payment ${refund.refundOf} is ${state} and will never be final, so nothing was sent`,
      );
      return;
    }
    await this.release(refund, chain);
  }

  private async release(refund: PaymentRecord, chain: ChainAdapter): Promise<void> {
    const { wallets, ledger } = this.deps;
    if (wallets === undefined) return;
    const asset = assetOfPayment(this.deps.networks, refund);
    let secretKey: Uint8Array;
    let prepared: PreparedTransaction;
    try {
      secretKey = (await wallets.signer(refund.accountId, refund.walletAddress)).secretKey;
    } catch (error) {
      if (!(error instanceof GatewayError)) throw error;
      return this.cancel(refund, `cancelled: the wallet cannot sign it any more (${error.message})`);
    }
    let balance: { native: bigint; token: bigint };
    try {
      ({ prepared, balance } = await fundedTransfer(chain, asset, {
        from: refund.sender,
        to: refund.recipient,
        amount: refund.amount,
        memo: refund.id,
      }));
    } catch (error) {
      secretKey.fill(0);
      // A chain that cannot be reached is tried again next pass; a refusal of the transfer is final.
      if (!(error instanceof GatewayError)) throw error;
      return this.cancel(refund, `cancelled when it was to be sent: ${error.message}`);
    }
    let signed: { wire: Uint8Array } | undefined;
    try {
      if (chain.nonces === undefined) {
        const transaction = await chain.sign(prepared, secretKey);
        const moved = await ledger.move(refund, 'submitted', {
          signature: transaction.signature,
          signedTransaction: Buffer.from(transaction.wire).toString('base64'),
          lastValidBlockHeight: transaction.lastValidBlockHeight,
          fee: prepared.fee,
        });
        if (moved !== undefined) signed = transaction;
      } else {
        const { nonces } = chain;
        const key = secretKey;
        signed = await this.deps.store
          .transaction(async (tx) => {
            const nonce = await tx.nonces.allocate(refund.network, prepared.feePayer, prepared.nonce ?? 0n);
            // As a send does (SendPaymentService.recordInSequence): the wallet's other unsettled sends
            // can still take their part, this refund's own recorded part left out.
            const unsettled = await tx.payments.unsettledSpend(refund.network, refund.sender);
            checkFunds(chain, asset, balance, needs(refund, asset, prepared, unsettled));
            const transaction = await chain.sign(nonces.withNonce(prepared, nonce), key);
            const moved = await ledger.moveIn(tx, refund, 'submitted', {
              signature: transaction.signature,
              signedTransaction: Buffer.from(transaction.wire).toString('base64'),
              lastValidBlockHeight: transaction.lastValidBlockHeight,
              fee: prepared.fee,
              nonce,
            });
            if (moved === undefined) throw new ReleasedElsewhere();
            return transaction;
          })
          .catch(async (error: unknown) => {
            if (error instanceof ReleasedElsewhere) return undefined;
            if (!(error instanceof GatewayError)) throw error;
            await this.cancel(refund, `cancelled when it was to be sent: ${error.message}`);
            return undefined;
          });
      }
    } finally {
      secretKey.fill(0);
    }
    if (signed === undefined) return;
    try {
      await chain.broadcast(signed.wire);
    } catch (error) {
      // Stored and signed: the reconciler resends the same bytes until they land or provably cannot.
      if (!(error instanceof ChainError)) throw error;
    }
  }

  private async cancel(refund: PaymentRecord, reason: string): Promise<void> {
    await this.deps.ledger.move(refund, 'failed', { error: reason });
  }
}

/** What the wallet must hold for the refund besides its other unsettled sends (which count the refund's hold). */
function needs(
  refund: PaymentRecord,
  asset: PaymentAsset,
  prepared: PreparedTransaction,
  unsettled: { native: bigint; tokens: ReadonlyMap<string, bigint> },
): { native: bigint; token: bigint } {
  const ownNative = (refund.fee ?? 0n) + (asset.address === null ? refund.amount : 0n);
  const otherNative = unsettled.native - ownNative;
  if (asset.address === null) return { native: otherNative + prepared.fee + refund.amount, token: 0n };
  const otherToken = (unsettled.tokens.get(asset.address) ?? 0n) - refund.amount;
  return { native: otherNative + prepared.fee, token: otherToken + refund.amount };
}
