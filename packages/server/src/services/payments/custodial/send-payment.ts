import { canonicalAddress } from '../../../chains/canonical-address.ts';
import type {
  AccountNonces,
  ChainAdapter,
  ConfirmationOutcome,
  PreparedTransaction,
  SignedTransaction,
  TransferRequest,
} from '../../../chains/chain-adapter.ts';
import { ChainError } from '../../../chains/chain-error.ts';
import { chainFamily } from '../../../chains/chain-families.ts';
import type { NetworkRegistry } from '../../../chains/network-registry.ts';
import { GatewayError, invalidParameters } from '../../../domain/gateway-error.ts';
import { newId } from '../../../domain/ids.ts';
import { atomicToDecimalText, toWholeUnits } from '../../../domain/money.ts';
import type { PaymentRecord } from '../../../domain/records/payment-records.ts';
import type { PaymentLease, Repositories, Store } from '../../../store/store.ts';
import { networkCost, SpendGuard, type SpendIntent } from '../../spending/spend-guard.ts';
import type { WalletService } from '../../wallets/wallet-service.ts';
import { atomicFromField } from '../amounts.ts';
import { earlierPayment } from '../earlier-payment.ts';
import { newPayment } from '../new-payment.ts';
import { assetOfPayment, type PaymentAsset, sendableAsset } from '../payment-asset.ts';
import type { PaymentLedger } from '../payment-ledger.ts';
import { checkRecipient, checkTokenRecipient } from '../payment-parties.ts';
import type { PaymentProofs } from '../proofs/payment-proof.ts';
import type { SendAmountBounds } from '../send-amount-bounds.ts';

export interface SendInput {
  readonly walletAddress: string;
  readonly recipientAddress: string;
  readonly amount: number;
  readonly resource?: string | undefined;
  readonly metadata?: object | undefined;
  readonly priorityFee?: number | undefined;
  readonly network?: string | undefined;
  /** A symbol GET /networks lists or a token address (sendableAsset); absent: the native currency. */
  readonly asset?: string | undefined;
}

/**
 * What a send made on the gateway's own behalf adds to a caller's request (a refund, services/payments/
 * refunds/): custodial and local-mode sends take the same options.
 */
export interface SendOptions {
  /**
   * The amount in exact atomic units, in place of `input.amount` (which is then only shown). The
   * per-asset send bounds are not applied: the caller of the option bounds it (a refund, by what it gives back).
   */
  readonly atomicAmount?: bigint;
  /** Recorded on the payment: it refunds this received payment. */
  readonly refundOf?: string;
  readonly refundReason?: string;
  /**
   * Runs inside the database transaction that records the payment, after the spend policies took their
   * locks and before the payment is written; what it throws refuses the send with nothing recorded or
   * broadcast (a refund checks there, under its lock, that the refunds still fit in what they refund).
   */
  readonly inTransaction?: (tx: Repositories) => Promise<void>;
  /**
   * Record the payment `pending` with no transaction, and sign and broadcast nothing: a refund of a
   * payment that is not final yet (refunds/held-refund.ts), released by the reconciler later. Every
   * check and the spend charge are made now, as for any send.
   */
  readonly hold?: boolean;
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
  /** What `amount` is in. */
  asset: PaymentAsset;
  /**
   * The most the sender pays besides the amount, in the network's native currency: the network fee,
   * and for a token the opening of the recipient's token account when the transfer opens it.
   */
  fee: number;
}

export interface SendPaymentDeps {
  readonly store: Store;
  readonly networks: NetworkRegistry;
  readonly wallets: WalletService;
  readonly proofs: PaymentProofs;
  readonly ledger: PaymentLedger;
  readonly amountBounds: SendAmountBounds;
  /** Names this process in payment leases. */
  readonly instanceId: string;
  /** How long a send waits for `confirmed` before answering `submitted`. */
  readonly confirmTimeoutMs: number;
  /** Spend policies (services/spending/); default: one on `store`. */
  readonly spendGuard?: SpendGuard;
  readonly now?: () => number;
}

/** The broadcast could not reach the chain; the stored payment stays pending. */
const UNREACHABLE = Symbol('unreachable');

/** What a payment's lease covers beyond the wait: signing, storing and broadcasting. */
const LEASE_MARGIN_MS = 10_000;

/**
 * Lightning-mode send (spec §4.1): the gateway checks, builds, signs and broadcasts.
 *
 * Exactly once: the signed transaction, its signature and lastValidBlockHeight are stored before the
 * broadcast. If this process dies at any point after that, the reconciler resends the same bytes (it
 * never signs), so the payment lands once or provably expires. With an Idempotency-Key, a retry finds
 * the payment made by the first attempt instead of making another.
 *
 * EVM (chains with `nonces`): the wallet's nonce is allocated in the database, in the same transaction
 * that stores the payment signed with it (see recordInSequence), so concurrent sends from one wallet on
 * any number of instances get consecutive nonces with no reuse and no gap.
 */
export class SendPaymentService {
  private readonly now: () => number;
  private readonly spendGuard: SpendGuard;

  constructor(private readonly deps: SendPaymentDeps) {
    this.now = deps.now ?? Date.now;
    this.spendGuard = deps.spendGuard ?? new SpendGuard({ store: deps.store, now: this.now });
  }

  /**
   * `keyId`: the API key that asked (null: the account's dashboard session), whose spend policy binds
   * the send with the account's (services/spending/).
   */
  async send(
    accountId: string,
    input: SendInput,
    idempotencyKey?: string,
    keyId: string | null = null,
    options: SendOptions = {},
  ): Promise<SendResult> {
    const { networks, wallets } = this.deps;
    const earlier = await earlierPayment(this.deps.store, accountId, idempotencyKey, 'custodial');
    if (earlier !== undefined) return this.settle(earlier, this.chainOf(earlier));

    const chain = networks.resolve({
      address: input.walletAddress,
      network: input.network,
      field: 'walletAddress',
    });
    const { family, nativeCurrency } = chain.info;
    checkRecipient(family, input.walletAddress, input.recipientAddress);
    const walletAddress = canonicalAddress(input.walletAddress);
    const recipientAddress = canonicalAddress(input.recipientAddress);
    const asset = await sendableAsset(networks, chain, input.asset);
    checkTokenRecipient(asset.address, recipientAddress);
    const amount = options.atomicAmount ?? this.deps.amountBounds.atomicAmount(input.amount, asset);
    const priorityFee =
      input.priorityFee === undefined
        ? undefined
        : atomicFromField('priorityFee', input.priorityFee, nativeCurrency.decimals, nativeCurrency.symbol);
    // Spend policies refuse before the chain is asked anything; chargeIn below is the enforcement.
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
    const signer = await wallets.signer(accountId, walletAddress);

    const paymentId = newId('pay');
    let funded: FundedTransfer;
    try {
      funded = await fundedTransfer(chain, asset, {
        from: walletAddress,
        to: recipientAddress,
        amount,
        memo: paymentId,
        ...(priorityFee === undefined ? {} : { priorityFee }),
      });
    } catch (error) {
      signer.secretKey.fill(0);
      throw error;
    }
    const { prepared, balance } = funded;

    const at = this.now();
    if (options.hold === true) {
      signer.secretKey.fill(0);
      const held = newPayment(at, {
        id: paymentId,
        accountId,
        direction: 'sent',
        mode: 'custodial',
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
        await this.deps.ledger.recordIn(tx, held);
      });
      return this.result(held, chain);
    }
    const draft = (signed: SignedTransaction, nonce?: bigint): PaymentRecord =>
      newPayment(at, {
        id: paymentId,
        accountId,
        direction: 'sent',
        mode: 'custodial',
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
        signature: signed.signature,
        signedTransaction: Buffer.from(signed.wire).toString('base64'),
        lastValidBlockHeight: signed.lastValidBlockHeight,
        idempotencyKey: idempotencyKey ?? null,
        ...(nonce === undefined ? {} : { nonce }),
        ...(options.refundOf === undefined ? {} : { refundOf: options.refundOf }),
        ...(options.refundReason === undefined ? {} : { refundReason: options.refundReason }),
      });
    const lease = { owner: this.deps.instanceId, until: at + this.deps.confirmTimeoutMs + LEASE_MARGIN_MS };
    // Stored, with the signed bytes, before anything reaches the chain.
    let stored: { payment: PaymentRecord; wire: Uint8Array };
    try {
      if (chain.nonces === undefined) {
        const signed = await chain.sign(prepared, signer.secretKey);
        const payment = draft(signed);
        stored = { payment, wire: signed.wire };
        await this.deps.store.transaction(async (tx) => {
          await this.spendGuard.chargeIn(
            tx,
            spend,
            paymentId,
            networkCost(prepared, nativeCurrency, priorityFee !== undefined),
          );
          await options.inTransaction?.(tx);
          await this.deps.ledger.recordIn(tx, payment, undefined, lease);
        });
      } else {
        stored = await this.recordInSequence(chain, chain.nonces, {
          prepared,
          amount,
          asset,
          balance,
          secretKey: signer.secretKey,
          draft,
          lease,
          spend,
          paymentId,
          callerNamedPriorityFee: priorityFee !== undefined,
          inTransaction: options.inTransaction,
        });
      }
    } finally {
      signer.secretKey.fill(0);
    }
    const { payment } = stored;

    const broadcast = await this.broadcast(chain, payment, stored.wire);
    if (broadcast === UNREACHABLE) {
      // Stored and signed, but the chain could not be reached: answer `pending` now rather than wait
      // out the confirmation time against an endpoint that is down, and free the lease so the
      // reconciler resends the same bytes as soon as the chain answers again.
      await this.deps.store.payments.releaseLease(payment.id, this.deps.instanceId);
      return this.result(payment, chain);
    }
    const result = await this.settle(broadcast, chain);
    // In a transaction, so that it shares a commit with other writes instead of an fsync of its own.
    await this.deps.store.transaction((tx) => tx.payments.releaseLease(payment.id, this.deps.instanceId));
    return result;
  }

  /**
   * EVM: allocates the wallet's nonce, signs with it and stores the payment in one database
   * transaction, so a nonce is taken exactly when its payment is stored: a refusal or a crash before
   * the commit takes the nonce back with it, and no later send of the wallet waits behind a gap. No
   * network call runs inside (the transfer was prepared before; `withNonce` only re-encodes it), so the
   * wallet's sequence row (PostgreSQL) or the write lock (SQLite) is held for milliseconds.
   */
  private async recordInSequence(
    chain: ChainAdapter,
    nonces: AccountNonces,
    input: {
      prepared: PreparedTransaction;
      amount: bigint;
      asset: PaymentAsset;
      balance: Balances;
      secretKey: Uint8Array;
      draft: (signed: SignedTransaction, nonce: bigint) => PaymentRecord;
      lease: PaymentLease;
      spend: SpendIntent;
      paymentId: string;
      callerNamedPriorityFee: boolean;
      inTransaction: SendOptions['inTransaction'];
    },
  ): Promise<{ payment: PaymentRecord; wire: Uint8Array }> {
    const { prepared } = input;
    const network = chain.info.id;
    return this.deps.store.transaction(async (tx) => {
      const nonce = await tx.nonces.allocate(network, prepared.feePayer, prepared.nonce ?? 0n);
      // The wallet's unsettled sends can still take their amounts and fees. Counting them here, after
      // the allocation serialised this wallet's senders, keeps concurrent sends from promising more
      // than the balance together; a broadcast refused for funds would leave its nonce unused. A token
      // send needs its amount in the token and its fee in the native currency, each counted apart.
      const unsettled = await tx.payments.unsettledSpend(network, prepared.feePayer);
      checkFunds(chain, input.asset, input.balance, {
        native: unsettled.native + prepared.fee + (input.asset.address === null ? input.amount : 0n),
        token:
          input.asset.address === null
            ? 0n
            : (unsettled.tokens.get(input.asset.address) ?? 0n) + input.amount,
      });
      // After the nonce, so every path takes its locks in one order (SpendGuard's contract).
      const cost = networkCost(prepared, chain.info.nativeCurrency, input.callerNamedPriorityFee);
      await this.spendGuard.chargeIn(tx, input.spend, input.paymentId, cost);
      await input.inTransaction?.(tx);
      const signed = await chain.sign(nonces.withNonce(prepared, nonce), input.secretKey);
      const payment = input.draft(signed, nonce);
      await this.deps.ledger.recordIn(tx, payment, undefined, input.lease);
      return { payment, wire: signed.wire };
    });
  }

  /**
   * Ends a payment the chain refused; false when it must stay open instead. On EVM a nonce must not
   * stay unused while later ones wait behind it: it is given back when no later one was allocated, and
   * otherwise the payment stays pending and the reconciler offers it (or a replacement) until its
   * nonce is used.
   */
  private async end(payment: PaymentRecord, status: 'failed' | 'expired', error: string): Promise<boolean> {
    const { nonce } = payment;
    if (nonce === undefined || nonce === null) {
      await this.deps.ledger.move(payment, status, { error });
      return true;
    }
    return this.deps.store.transaction(async (tx) => {
      if (!(await tx.nonces.release(payment.network, payment.sender, nonce))) return false;
      if ((await this.deps.ledger.moveIn(tx, payment, status, { error })) === undefined) {
        throw new Error(`payment ${payment.id} changed while its refused nonce was being released`);
      }
      return true;
    });
  }

  private async broadcast(
    chain: ChainAdapter,
    payment: PaymentRecord,
    wire: Uint8Array,
  ): Promise<PaymentRecord | typeof UNREACHABLE> {
    try {
      await chain.broadcast(wire);
    } catch (error) {
      if (!(error instanceof ChainError)) throw error;
      switch (error.kind) {
        case 'already_processed':
          break;
        case 'insufficient_funds': {
          if (!(await this.end(payment, 'failed', 'insufficient funds'))) return payment;
          const { decimals, symbol } = chain.info.nativeCurrency;
          // Stored before the chain refused it, so the history shows it failed: the answer names it.
          // (A token payment's shortfall is of the native currency: the token's is checked as a refusal.)
          throw insufficientBalance(
            undefined,
            (payment.asset === undefined ? payment.amount : 0n) + (payment.fee ?? 0n),
            decimals,
            symbol,
            payment.id,
          );
        }
        case 'blockhash_expired':
          if (!(await this.end(payment, 'expired', 'blockhash expired before broadcast'))) return payment;
          throw failed(
            payment,
            'expired',
            'the transaction expired before it could be sent; nothing was paid',
          );
        case 'rejected':
        case 'invalid_transaction':
          if (!(await this.end(payment, 'failed', error.message))) return payment;
          // A token send refused because the tokens went to another send since they were counted
          // (Solana has no sequence to count them in): the answer says so, naming the token.
          await this.tokenShortfall(chain, payment);
          throw failed(payment, 'failed', 'the chain refused the transaction; nothing was paid');
        case 'unavailable':
          // Unknown whether it arrived: stays pending, and the reconciler resends the same bytes.
          return UNREACHABLE;
      }
    }
    return (await this.deps.ledger.move(payment, 'submitted')) ?? (await this.reload(payment));
  }

  /**
   * For a token payment the chain refused: INSUFFICIENT_BALANCE naming it when the wallet cannot pay it
   * now — what it holds, less what its other unsettled sends of the token are taking. Those are read
   * first: one that settles in between is then already in the balance read after.
   */
  private async tokenShortfall(chain: ChainAdapter, payment: PaymentRecord): Promise<void> {
    if (payment.asset === undefined) return;
    const token = payment.asset.address;
    const available = await this.deps.store.payments
      .unsettledSpend(payment.network, payment.sender)
      .then(async (unsettled) => {
        const held = await chain.getTokenBalance(payment.sender, token);
        const taken = unsettled.tokens.get(token) ?? 0n;
        return held > taken ? held - taken : 0n;
      })
      .catch(() => undefined);
    if (available === undefined || available >= payment.amount) return;
    // How much it holds is a moving figure here (the other sends settle meanwhile): the answer names
    // what the payment needs and why it could not be paid, not a balance.
    const asset = assetOfPayment(this.deps.networks, payment);
    const symbol = asset.symbol ?? token;
    const need = `${atomicToDecimalText(payment.amount, asset.decimals)} ${symbol}`;
    throw new GatewayError('INSUFFICIENT_BALANCE', {
      message: `Not enough ${symbol}: the payment needs ${need}, more than the wallet holds besides what its other sends are paying.`,
      details: { walletAddress: `needs ${need}`, asset: `${symbol} ${token}`, paymentId: payment.id },
    });
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
        // EVM: past gate402's deadline is no proof; the payment ends only once its nonce is used
        // (the reconciler decides that).
        if (payment.nonce !== undefined && payment.nonce !== null) return this.reload(payment);
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
    const asset = assetOfPayment(this.deps.networks, payment);
    const signature = payment.signature ?? '';
    return {
      success: true,
      paymentId: payment.id,
      signature,
      amount: toWholeUnits(payment.amount, asset.decimals),
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
        ...(payment.asset === undefined ? {} : { ast: payment.asset.address }),
        ...(payment.resource === null ? {} : { res: payment.resource }),
        iat: payment.createdAt,
      }),
      network: payment.network,
      asset,
      fee: toWholeUnits(payment.fee ?? 0n, chain.info.nativeCurrency.decimals),
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
  return chainFamily(chain.info.family).estimatedConfirmation;
}

/** What a wallet holds of what a send spends: its native balance, and of the token sent (0 for a native send). */
export interface Balances {
  readonly native: bigint;
  readonly token: bigint;
}

/** A transfer prepared for a send, with the sender's balances it was checked against. */
export interface FundedTransfer {
  readonly prepared: PreparedTransaction;
  readonly balance: Balances;
}

/**
 * Prepares the transfer of `request.amount` of `asset` and checks the sender can pay it: the amount in
 * the asset, and the fees (with, for a token, the opening of the recipient's token account) in the
 * native currency, each against its own balance. A token's balance is read before the transfer is
 * prepared: an EVM node estimates no transfer the token contract would refuse for funds, and the
 * refusal the caller gets must name the token's shortfall. Shared by custodial and local-mode sends.
 */
export async function fundedTransfer(
  chain: ChainAdapter,
  asset: PaymentAsset,
  request: TransferRequest,
): Promise<FundedTransfer> {
  const { address } = asset;
  if (address === null) {
    const [prepared, native] = await Promise.all([
      chain.prepareTransfer(request),
      chain.getBalance(request.from),
    ]);
    const balance = { native, token: 0n };
    checkFunds(chain, asset, balance, { native: request.amount + prepared.fee, token: 0n });
    return { prepared, balance };
  }
  const [token, native] = await Promise.all([
    chain.getTokenBalance(request.from, address),
    chain.getBalance(request.from),
  ]);
  checkFunds(chain, asset, { native, token }, { native: 0n, token: request.amount });
  let prepared: PreparedTransaction;
  try {
    prepared = await chain.prepareTransfer({ ...request, token: { address, decimals: asset.decimals } });
  } catch (error) {
    if (!(error instanceof ChainError) || error.kind !== 'rejected') throw error;
    // The token contract refused the transfer when it was estimated (EVM): most often another send
    // took the tokens since the balance was read, which the caller is told as such.
    const now = await chain.getTokenBalance(request.from, address);
    checkFunds(chain, asset, { native, token: now }, { native: 0n, token: request.amount });
    throw invalidParameters({
      asset: 'refuses this transfer: the token contract reverts it (a paused token, or an address it blocks)',
    });
  }
  const balance = { native, token };
  checkFunds(chain, asset, balance, { native: prepared.fee, token: request.amount });
  return { prepared, balance };
}

/** INSUFFICIENT_BALANCE naming what falls short: the token sent first, then the native currency for fees. */
export function checkFunds(
  chain: ChainAdapter,
  asset: PaymentAsset,
  balance: Balances,
  needed: Balances,
): void {
  if (asset.address !== null && balance.token < needed.token) {
    const symbol = asset.symbol ?? asset.address;
    const need = `${atomicToDecimalText(needed.token, asset.decimals)} ${symbol}`;
    throw new GatewayError('INSUFFICIENT_BALANCE', {
      message: `Not enough ${symbol}: the payment needs ${need}; the wallet holds ${atomicToDecimalText(balance.token, asset.decimals)} ${symbol}.`,
      details: { walletAddress: `needs ${need}`, asset: `${symbol} ${asset.address}` },
    });
  }
  if (balance.native < needed.native) {
    const { decimals, symbol } = chain.info.nativeCurrency;
    throw insufficientBalance(
      balance.native,
      needed.native,
      decimals,
      symbol,
      undefined,
      asset.address === null ? undefined : 'the network fees (and any token account the transfer opens)',
    );
  }
}

/** `paymentId`: the failed payment recorded for a send the chain refused, when one was stored. */
function insufficientBalance(
  balance: bigint | undefined,
  needed: bigint,
  decimals: number,
  symbol: string,
  paymentId?: string,
  what = 'the payment and its fees',
): GatewayError {
  const need = `${atomicToDecimalText(needed, decimals)} ${symbol}`;
  return new GatewayError('INSUFFICIENT_BALANCE', {
    message:
      balance === undefined
        ? `Not enough funds: ${what} need ${need}.`
        : `Not enough funds: ${what} need ${need}; the wallet holds ${atomicToDecimalText(balance, decimals)} ${symbol}.`,
    details: {
      walletAddress: `needs ${need} including fees`,
      ...(paymentId === undefined ? {} : { paymentId }),
    },
  });
}

function failed(payment: PaymentRecord, status: string, reason: string): GatewayError {
  return new GatewayError('PAYMENT_FAILED', {
    message: `Payment ${payment.id} ${status}: ${reason}.`,
    details: { paymentId: payment.id, status },
  });
}
