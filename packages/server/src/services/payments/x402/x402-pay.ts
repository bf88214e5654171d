import { canonicalAddress } from '../../../chains/canonical-address.ts';
import type { ChainAdapter } from '../../../chains/chain-adapter.ts';
import { chainFamily } from '../../../chains/chain-families.ts';
import { type ExactPayer, needsPermit2Approval } from '../../../chains/exact-payer.ts';
import { EXACT_PAYERS } from '../../../chains/exact-payers.ts';
import type { ExactRequirements } from '../../../chains/exact-scheme.ts';
import type { NetworkRegistry } from '../../../chains/network-registry.ts';
import type { UptoPayer } from '../../../chains/upto-payer.ts';
import { UPTO_PAYERS } from '../../../chains/upto-payers.ts';
import { addressFamily } from '../../../domain/address.ts';
import { GatewayError, invalidParameters } from '../../../domain/gateway-error.ts';
import { newId } from '../../../domain/ids.ts';
import { AmountError, atomicToDecimalText, toAtomic, toWholeUnits } from '../../../domain/money.ts';
import type { TokenInfo } from '../../../domain/network.ts';
import type { PaymentRecord } from '../../../domain/records/payment-records.ts';
import type { Store } from '../../../store/store.ts';
import { decodeX402Header } from '../../../x402/payment-header.ts';
import {
  ChallengeError,
  challengeFromHeader,
  challengeFromJson,
  type PaymentChallenge,
  type PaymentOption,
} from '../../../x402/payment-required.ts';
import type { FacilitatorService } from '../../facilitator/facilitator-service.ts';
import type { SpendGuard, SpendIntent } from '../../spending/spend-guard.ts';
import type { WalletService } from '../../wallets/wallet-service.ts';
import { earlierPayment } from '../earlier-payment.ts';
import { newPayment } from '../new-payment.ts';
import type { PaymentAsset } from '../payment-asset.ts';
import type { PaymentLedger } from '../payment-ledger.ts';
import type { Permit2ApprovalService } from './permit2-approvals.ts';

export interface X402PayInput {
  readonly walletAddress: string;
  /** The seller's `PAYMENT-REQUIRED` header value (x402 v2). */
  readonly paymentRequired?: string | undefined;
  /** The seller's 402 body: the v1 challenge, or whatever a v2 seller sent beside its header. */
  readonly paymentRequiredBody?: unknown;
  /** The URL the buyer asked for and was answered 402. */
  readonly resource: string;
  /** The most one payment may cost, per asset (symbol or token address), in whole units. */
  readonly maxAmount: Readonly<Record<string, number>>;
  /** CAIP-2 ids the buyer pays on (a v1 name is read as its id); default every configured network. */
  readonly networks?: readonly string[] | undefined;
  readonly metadata?: object | undefined;
}

/** The answer of POST /payment/x402: the header to repeat the request with, and the payment recorded. */
export interface X402PayResult {
  success: true;
  paymentId: string;
  status: string;
  x402Version: 1 | 2;
  /** `PAYMENT-SIGNATURE` (v2) or `X-PAYMENT` (v1). */
  paymentHeaderName: string;
  /** The header's value: base64 of the signed PaymentPayload. */
  paymentHeader: string;
  network: string;
  asset: PaymentAsset;
  amount: number;
  recipient: string;
  sender: string;
  resource: string | null;
  /** Unix ms after which the payment can no longer be settled (EVM: its validBefore); null on Solana (its blockhash). */
  expiresAt: number | null;
  timestamp: number;
}

export interface X402PayDeps {
  readonly store: Store;
  readonly wallets: WalletService;
  readonly networks: NetworkRegistry;
  readonly facilitator: FacilitatorService;
  readonly ledger: PaymentLedger;
  /** The spend policies of the account and the key (services/spending/): checked before signing, enforced when recording. */
  readonly spending: SpendGuard;
  /**
   * Sends a custodial wallet's one Permit2 approval of a token before its first Permit2 payment (x402
   * `upto` on EVM); without it, such options are refused.
   */
  readonly approvals?: Permit2ApprovalService;
  /** How long past an EVM payment's validBefore it is still looked for (the chain's clock may trail); default 60 s. */
  readonly clockMarginMs?: number;
  /** The longest validity (`maxTimeoutSeconds`) a payment is signed for. */
  readonly maxTimeoutSeconds?: number;
  readonly now?: () => number;
}

/**
 * A payment stays pending while it may be settled; an authorization valid for days would hold the
 * buyer's money (and spend limits) that long at the seller's pleasure. x402 sellers ask 60 to 300 s.
 */
export const DEFAULT_MAX_TIMEOUT_SECONDS = 600;
/** The chain's clock may trail this gateway's: an EVM payment expires this long after its validBefore. */
const CLOCK_MARGIN_MS = 60_000;
/** A payment is looked for on chain from a little before it was signed (clocks differ). */
const SEARCH_MARGIN_MS = 60_000;

/**
 * Pays an x402 seller from a custodial wallet (POST /payment/x402): reads the seller's PaymentRequired,
 * picks the first `exact` option the wallet may pay — a token the network lists, on a network the gateway
 * serves and the buyer allows, within the buyer's maxAmount for that token, within the validity this
 * gateway signs for, with the balance to pay it — signs its payload with the stock x402 client scheme of
 * the chain (ExactPayer) and records the payment `pending`. Nothing is signed when no option qualifies:
 * PAYMENT_OPTION_REFUSED names each option's reason, and no payment is recorded.
 *
 * The seller's facilitator settles; the reconciler then finds the payment on chain (ExactScheme.findPaid,
 * whoever submitted it) and confirms it, or expires it once it can no longer land (Solana: past its
 * blockhash; EVM: past its validBefore), which releases what it held.
 */
export class X402PayService {
  private readonly now: () => number;

  constructor(private readonly deps: X402PayDeps) {
    this.now = deps.now ?? Date.now;
  }

  /** `keyId`: the API key that asks (its spend policy binds too); null for a dashboard session. */
  async pay(
    accountId: string,
    input: X402PayInput,
    idempotencyKey?: string,
    keyId: string | null = null,
  ): Promise<X402PayResult> {
    const earlier = await earlierPayment(this.deps.store, accountId, idempotencyKey, 'x402');
    if (earlier !== undefined) return this.result(earlier);
    const challenge = readChallenge(input);
    checkResourceHost(challenge, input.resource);
    const allowed = allowedNetworks(input.networks);
    const wallet = await this.deps.wallets.owned(accountId, input.walletAddress);
    if (wallet.watchOnly) {
      throw new GatewayError('FORBIDDEN', {
        message: 'This wallet is watch-only: the gateway holds no key for it.',
        details: { walletAddress: 'is watch-only' },
      });
    }
    const field = input.paymentRequired !== undefined ? 'paymentRequired' : 'paymentRequiredBody';
    const refusals: Record<string, string> = {};
    let chosen: Chosen | undefined;
    let policyRefusal: GatewayError | undefined;
    for (const [i, option] of challenge.accepts.entries()) {
      const verdict = await this.judge(
        option,
        wallet.address,
        input.maxAmount,
        allowed,
        challenge.x402Version,
      );
      if ('refusal' in verdict) {
        refusals[`${field}.accepts[${i}]`] = verdict.refusal;
        continue;
      }
      // The spend policies, early (SpendGuard.check): another option may be one they allow.
      try {
        await this.deps.spending.check(spendOf(accountId, keyId, verdict, input.resource));
      } catch (error) {
        if (!(error instanceof GatewayError) || !error.code.startsWith('SPEND_')) throw error;
        refusals[`${field}.accepts[${i}]`] = error.message;
        policyRefusal ??= error;
        continue;
      }
      chosen = verdict;
      break;
    }
    if (chosen === undefined) {
      // A policy's refusal is answered as the policy's (403 SPEND_*, with what remains), so a caller sees
      // the limit it met rather than only that no option qualified.
      throw policyRefusal ?? new GatewayError('PAYMENT_OPTION_REFUSED', { details: refusals });
    }

    // upto, or exact through Permit2: the wallet's one approval of the token, sent and mined before anything is signed.
    // After the spend policies allowed the maximum, so a refused payment sends no approval either.
    if (chosen.approver !== undefined) {
      await this.deps.approvals?.ensure(
        accountId,
        chosen.chain,
        chosen.approver,
        wallet.address,
        chosen.token,
        chosen.option.amount,
      );
    }

    // Opened only now: nothing is decrypted for a challenge that is refused.
    const signer = await this.deps.wallets.signer(accountId, wallet.address);
    let signed: Awaited<ReturnType<Chosen['payer']['sign']>>;
    try {
      signed = await chosen.payer.sign(
        { x402Version: challenge.x402Version, requirement: chosen.option.raw, resource: challenge.resource },
        signer.secretKey,
      );
    } finally {
      signer.secretKey.fill(0);
    }
    if (canonicalAddress(signed.payer) !== wallet.address) {
      throw new Error(
        `the ${chosen.chain.info.family} payer signed as ${signed.payer}, not ${wallet.address}`,
      );
    }
    // The spend policies were charged the maximum the seller asked: the permit must take no more.
    if (chosen.upto !== undefined && chosen.upto.signedMaximum(signed.payload) !== chosen.option.amount) {
      throw new Error('the upto payer signed another maximum than the option asked');
    }

    const at = this.now();
    const payment = newPayment(at, {
      id: newId('pay'),
      accountId,
      direction: 'sent',
      mode: 'x402',
      status: 'pending',
      network: chosen.chain.info.id,
      walletAddress: wallet.address,
      sender: wallet.address,
      recipient: canonicalAddress(chosen.option.payTo),
      amount: chosen.option.amount,
      resource: input.resource,
      metadata: (input.metadata as Record<string, unknown> | undefined) ?? null,
      // The header value: what the seller is given, and what the watcher reads the payment from.
      signedTransaction: Buffer.from(JSON.stringify(signed.paymentPayload)).toString('base64'),
      lastValidBlockHeight: signed.lastValidBlockHeight,
      expiresAt: signed.validUntil,
      idempotencyKey: idempotencyKey ?? null,
      asset: { address: chosen.token.address, decimals: chosen.token.decimals },
    });
    const spend = spendOf(accountId, keyId, chosen, input.resource);
    await this.deps.store.transaction(async (tx) => {
      // The enforcement: concurrent payments cannot exceed a daily cap together. A refusal here rolls
      // the payment back; the payload signed for it is never handed out.
      await this.deps.spending.chargeIn(tx, spend, payment.id);
      await this.deps.ledger.recordIn(tx, payment, 'payment.sent');
    });
    return this.result(payment);
  }

  /**
   * The seller answered the paid request (its PAYMENT-RESPONSE says it settled): the chain is looked at
   * now rather than at the reconciler's next pass. The payment moves only as the chain shows it, never
   * on the seller's word. PAYMENT_NOT_FOUND for anything but an x402 payment of this account.
   */
  async check(
    accountId: string,
    paymentId: string,
  ): Promise<{ success: true; paymentId: string; status: string; signature: string | null }> {
    const payment = await this.deps.store.payments.get(paymentId);
    if (payment === undefined || payment.accountId !== accountId || !isX402Purchase(payment)) {
      throw new GatewayError('PAYMENT_NOT_FOUND', {
        details: { paymentId: 'is not an x402 payment (POST /payment/x402) of this account' },
      });
    }
    const chain = this.deps.networks.get(payment.network);
    if (chain !== undefined && payment.status === 'pending') await this.watch(payment, chain);
    const now = (await this.deps.store.payments.get(paymentId)) ?? payment;
    return { success: true, paymentId, status: now.status, signature: now.signature };
  }

  /**
   * A pending x402 payment, looked at by the reconciler: confirmed (or failed) once the chain shows its
   * payload landed, whoever submitted it; expired once it can no longer land and did not. The expiry is
   * read before the search, so a payment that landed just before its end is found, not expired. An EVM
   * payment is expired only on the chain's word — EIP-3009: ExactScheme.authorizationEnded; Permit2 (upto,
   * exact through Permit2): endUnseen — this gateway's clock past its deadline only says when to ask.
   */
  async watch(payment: PaymentRecord, chain: ChainAdapter): Promise<void> {
    if (payment.status !== 'pending' || payment.signedTransaction === null) return;
    const scheme = this.deps.facilitator.schemeFor(payment.network);
    const decoded = decodeX402Header(payment.signedTransaction);
    if (scheme?.findPaid === undefined || decoded === undefined || payment.asset === undefined) return;
    const gone =
      payment.lastValidBlockHeight !== null
        ? (await chain.getBlockHeight()) > payment.lastValidBlockHeight
        : payment.expiresAt !== null &&
          this.now() > payment.expiresAt + (this.deps.clockMarginMs ?? CLOCK_MARGIN_MS);
    const requirements: ExactRequirements = {
      network: payment.network,
      asset: payment.asset.address,
      amount: payment.amount,
      payTo: payment.recipient,
      maxTimeoutSeconds: 0,
      extra: {},
    };
    const payload = decoded.value.payload as Record<string, unknown>;
    const since = payment.createdAt - SEARCH_MARGIN_MS;
    const upto = uptoPayerOf(decoded.value, chain);
    if (upto !== undefined) {
      // The amount is what the seller settled (at most the maximum it was recorded at), as the chain shows it.
      const settled = await upto.findSettlement(payload, since);
      if (settled !== undefined) {
        await this.confirmAt(payment, chain, settled);
      } else if (gone) {
        // A used permit was settled (the seller's facilitator may be a contract of its own calling the
        // proxy internally): it stays pending, its spend hold kept, until its transfer is found or its use
        // is final; an unused one, until the chain's finalized block is past its deadline.
        await this.endUnseen(payment, chain, upto, payload, since);
      }
      return;
    }
    const landed = await scheme.findPaid(payload, requirements, since);
    if (landed !== undefined) {
      const blockHeight = await chain.blockHeightOf(landed.slot).catch(() => null);
      if (landed.error === null) {
        await this.deps.ledger.move(payment, 'confirmed', {
          signature: landed.transactionId,
          slot: landed.slot,
          blockHeight,
          confirmedAt: this.now(),
        });
      } else {
        await this.deps.ledger.move(payment, 'failed', {
          signature: landed.transactionId,
          slot: landed.slot,
          error: landed.error,
        });
      }
      return;
    }
    // exact through Permit2: findPaid knows the proxy's settle by its calldata (sent to the proxy, or
    // carried verbatim by a wrapper). A contract building the call at run time is not recognised, but
    // Permit2's nonce still shows the permit used, and the exact proxy moves all of the amount or nothing:
    // such a payment is never expired ("nothing was paid") while its nonce is spent. Nor is an unused one
    // before the chain's finalized block is past its deadline (endUnseen).
    const permit2 = permit2PayerOf(decoded.value, chain);
    if (permit2 !== undefined) {
      const found = (await permit2.nonceSpent(payload))
        ? await permit2.findBySpentNonce(payload, since)
        : undefined;
      if (found !== undefined) await this.confirmAt(payment, chain, { ...found, amount: payment.amount });
      else if (gone) await this.endUnseen(payment, chain, permit2, payload, since);
      return;
    }
    if (!gone) return;
    // EVM, EIP-3009: this gateway's clock past validBefore only says when to ask; the chain decides. It is
    // expired only once the chain's finalized block is stamped at or after validBefore with the
    // authorization unused at that very block: a node that lags, or a chain whose blocks stalled, still
    // takes it until then, and an expired payment is never looked at again. Used there, it was paid: it
    // stays pending, its spend hold kept, until findPaid finds its transfer. (Solana: `gone` is already the
    // chain's own word, its block height past the blockhash's lastValidBlockHeight.)
    if (scheme.authorizationEnded !== undefined) {
      const ended = await scheme.authorizationEnded(payload, requirements, await chain.finalizedSlot());
      if (ended !== 'unused') return;
    }
    await this.deps.ledger.move(payment, 'expired', {
      error: 'the seller did not settle the payment before it could no longer land; nothing was paid',
    });
  }

  /** Confirmed at what the chain shows the settlement moved, on its transaction. */
  private async confirmAt(
    payment: PaymentRecord,
    chain: ChainAdapter,
    settled: { transactionId: string; slot: bigint; amount: bigint },
  ): Promise<void> {
    const blockHeight = await chain.blockHeightOf(settled.slot).catch(() => null);
    await this.deps.ledger.move(payment, 'confirmed', {
      amount: settled.amount,
      signature: settled.transactionId,
      slot: settled.slot,
      blockHeight,
      confirmedAt: this.now(),
    });
  }

  /**
   * A Permit2 payment (upto, or exact through Permit2) past its deadline by this gateway's clock, whose
   * settlement was not found. The clock only says when to ask: what it becomes is decided by the chain
   * (UptoPayer.permitEnded), as the facilitator decides an EIP-3009 settlement — once the chain's
   * finalized block is stamped past the permit's deadline, the permit's state at that block is final.
   * Until then it stays `pending`, its spend hold kept: a node that lags, or a chain whose blocks
   * stalled, can still take the permit (an expired payment is never looked at again).
   *
   * Unused there: `expired`, nothing was paid. Used, although no transfer of it is seen (a token whose
   * transfer logs nothing this search reads, a node missing them, a call that spent the nonce some other
   * way): Permit2 spends a nonce only in the call that moves the tokens, so the money is taken to have
   * moved, and the payment is `finalized` at the amount it was recorded at — exact: the amount, all the
   * proxy moves; upto: the signed MAXIMUM, an upper bound (never less than was taken, so the spend caps
   * stay safe) — with no transaction id, the block where the nonce was spent when the node can say, and
   * `error` stating so. A transfer found before then confirms it as usual.
   */
  private async endUnseen(
    payment: PaymentRecord,
    chain: ChainAdapter,
    payer: UptoPayer,
    payload: Readonly<Record<string, unknown>>,
    since: number,
  ): Promise<void> {
    const ended = await payer.permitEnded(payload, await chain.finalizedSlot());
    if (ended === undefined) return;
    if (ended === 'unused') {
      await this.deps.ledger.move(payment, 'expired', {
        error: 'the seller settled nothing on chain before the permit expired; nothing was paid',
      });
      return;
    }
    const slot = await payer.nonceSpentBlock(payload, since).catch(() => undefined);
    const blockHeight = slot === undefined ? null : await chain.blockHeightOf(slot).catch(() => null);
    await this.deps.ledger.move(payment, 'finalized', {
      ...(slot === undefined ? {} : { slot, blockHeight }),
      confirmedAt: this.now(),
      error: SPENT_WITHOUT_TRANSFER,
    });
  }

  /** Whether `option` may be paid from `wallet`, and with what; else why not. */
  private async judge(
    option: PaymentOption,
    wallet: string,
    maxAmount: Readonly<Record<string, number>>,
    allowed: ReadonlySet<string> | undefined,
    x402Version: 1 | 2,
  ): Promise<Chosen | { refusal: string }> {
    if (option.scheme !== 'exact' && option.scheme !== 'upto')
      return { refusal: `scheme ${clip(option.scheme)} is not paid; exact or upto only` };
    if (option.scheme === 'upto' && x402Version !== 2) return { refusal: 'scheme "upto" is x402 v2 only' };
    // x402 v1 has no Permit2 transfer: its client signs EIP-3009 whatever extra says. Refused before the
    // wallet approves anything, so a v1 challenge cannot make it send (and pay gas for) an approval.
    if (x402Version !== 2 && needsPermit2Approval(option.raw)) {
      return { refusal: 'extra.assetTransferMethod permit2 is x402 v2 only; a v1 payment is EIP-3009' };
    }
    const chain = option.network === undefined ? undefined : this.deps.facilitator.chainOf(option.network);
    if (chain === undefined || option.network === undefined) {
      return { refusal: `network ${clip(option.networkAsSent)} is not configured here (GET /networks)` };
    }
    const family = chain.info.family;
    if (addressFamily(wallet) !== family) {
      return { refusal: `network ${clip(option.networkAsSent)} is not the wallet's chain (${family})` };
    }
    if (allowed !== undefined && !allowed.has(option.network) && !allowed.has(chain.info.id)) {
      return { refusal: `network ${clip(option.networkAsSent)} is not in networks` };
    }
    const token = this.deps.networks
      .tokensOf(chain.info.id)
      .find((t) => canonicalAddress(t.address) === canonicalAddress(option.asset));
    if (token === undefined) {
      return {
        refusal: `asset ${clip(option.asset)} is not a token listed on ${chain.info.name} (GET /networks); only listed tokens are paid`,
      };
    }
    const limit = limitFor(maxAmount, token);
    if (limit === undefined) return { refusal: `maxAmount names no limit for ${token.symbol}` };
    if (option.amount > limit) {
      return {
        refusal: `asks ${atomicToDecimalText(option.amount, token.decimals)} ${token.symbol}, more than maxAmount ${atomicToDecimalText(limit, token.decimals)} ${token.symbol}`,
      };
    }
    const longest = this.deps.maxTimeoutSeconds ?? DEFAULT_MAX_TIMEOUT_SECONDS;
    if (option.maxTimeoutSeconds > longest) {
      return {
        refusal: `maxTimeoutSeconds ${option.maxTimeoutSeconds} is longer than the ${longest} s a payment is signed for`,
      };
    }
    const payTo = option.payTo;
    if (addressFamily(payTo) !== family) {
      return { refusal: `payTo is not ${chainFamily(family).addressName}` };
    }
    if (canonicalAddress(payTo) === wallet) return { refusal: 'payTo is the paying wallet itself' };
    const reserved = chainFamily(family).reservedAccount(payTo);
    if (reserved !== undefined) return { refusal: `payTo is the ${reserved}, which is no wallet` };
    let payer: ExactPayer;
    let upto: UptoPayer | undefined;
    if (option.scheme === 'upto') {
      const factory = UPTO_PAYERS[family];
      if (factory === undefined || this.deps.approvals === undefined) {
        return {
          refusal: `scheme "upto" is not paid from custodial ${chain.info.name} wallets yet; exact only there`,
        };
      }
      upto = factory(chain);
      payer = upto;
    } else {
      const factory = EXACT_PAYERS[family];
      if (factory === undefined) return { refusal: `exact payments on ${family} are not supported` };
      payer = factory(chain);
    }
    // Tokens moved through Permit2 need the wallet's approval of it, sent first (Permit2ApprovalService).
    let approver = upto;
    if (approver === undefined && needsPermit2Approval(option.raw)) {
      const permit2 = UPTO_PAYERS[family];
      if (permit2 === undefined || this.deps.approvals === undefined) {
        return { refusal: 'extra.assetTransferMethod permit2 is not paid from custodial wallets here' };
      }
      approver = permit2(chain);
    }
    const refusal = payer.refusal(option.raw, wallet);
    if (refusal !== undefined) return { refusal };
    const balance = (await chain.getTokenAccounts(wallet))
      .filter((a) => canonicalAddress(a.mint) === canonicalAddress(token.address))
      .reduce((sum, a) => sum + a.amount, 0n);
    if (balance < option.amount) {
      return {
        refusal: `the wallet holds ${atomicToDecimalText(balance, token.decimals)} ${token.symbol}, less than the ${atomicToDecimalText(option.amount, token.decimals)} asked`,
      };
    }
    return {
      option,
      chain,
      token,
      payer,
      ...(upto === undefined ? {} : { upto }),
      ...(approver === undefined ? {} : { approver }),
    };
  }

  private result(payment: PaymentRecord): X402PayResult {
    const decoded =
      payment.signedTransaction === null ? undefined : decodeX402Header(payment.signedTransaction);
    if (decoded === undefined || payment.asset === undefined) {
      throw new Error(`payment ${payment.id} holds no x402 payload`);
    }
    const listed = this.deps.networks
      .tokensOf(payment.network)
      .find((t) => canonicalAddress(t.address) === canonicalAddress(payment.asset?.address ?? ''));
    return {
      success: true,
      paymentId: payment.id,
      status: payment.status,
      x402Version: decoded.x402Version,
      paymentHeaderName: decoded.x402Version === 2 ? 'PAYMENT-SIGNATURE' : 'X-PAYMENT',
      paymentHeader: payment.signedTransaction ?? '',
      network: payment.network,
      asset: { symbol: listed?.symbol ?? null, ...payment.asset },
      amount: toWholeUnits(payment.amount, payment.asset.decimals),
      recipient: payment.recipient,
      sender: payment.sender,
      resource: payment.resource,
      expiresAt: payment.expiresAt,
      timestamp: payment.createdAt,
    };
  }
}

interface Chosen {
  readonly option: PaymentOption;
  readonly chain: ChainAdapter;
  readonly token: TokenInfo;
  readonly payer: ExactPayer;
  /** An `upto` option: its payer (also `payer`), which needs the wallet's Permit2 approval first. */
  readonly upto?: UptoPayer;
  /** Moves the tokens through Permit2 (upto, or exact with permit2): sends the wallet's approval first. */
  readonly approver?: UptoPayer;
}

/**
 * What a Permit2 payment whose transfer was not seen is recorded with (`finalized`, at the amount it was
 * recorded at, no transaction id): see X402PayService.endUnseen.
 */
export const SPENT_WITHOUT_TRANSFER =
  "the permit's Permit2 nonce was spent on chain (Permit2 spends it only in the call that moves the tokens) but no transfer of it was found: recorded at the signed amount (upto: the maximum, an upper bound), with no transaction id";

/**
 * The payer that sent the Permit2 approval of a payload this service signed through Permit2 (upto, or
 * exact with assetTransferMethod permit2); undefined for any other (EIP-3009, Solana).
 */
function permit2PayerOf(paymentPayload: object, chain: ChainAdapter): UptoPayer | undefined {
  const accepted = (paymentPayload as { accepted?: unknown }).accepted as
    | Readonly<Record<string, unknown>>
    | undefined;
  if (accepted === undefined || (accepted.scheme !== 'upto' && !needsPermit2Approval(accepted)))
    return undefined;
  return UPTO_PAYERS[chain.info.family]?.(chain);
}

/** The upto payer of a payload this service signed for `upto`; undefined for any other. */
function uptoPayerOf(paymentPayload: object, chain: ChainAdapter): UptoPayer | undefined {
  const accepted = (paymentPayload as { accepted?: unknown }).accepted as { scheme?: unknown } | undefined;
  if (accepted?.scheme !== 'upto') return undefined;
  return UPTO_PAYERS[chain.info.family]?.(chain);
}

/** The spend the spend policies judge: the option's token, amount and payee, on the configured network. */
function spendOf(accountId: string, keyId: string | null, chosen: Chosen, resource: string): SpendIntent {
  return {
    accountId,
    keyId,
    network: chosen.chain.info.id,
    asset: { address: chosen.token.address, decimals: chosen.token.decimals, symbol: chosen.token.symbol },
    amount: chosen.option.amount,
    recipient: canonicalAddress(chosen.option.payTo),
    resource,
    // The caller brings the PaymentRequired (the gateway fetched nothing): its payTo is the caller's word.
    payee: 'named',
  };
}

/** Whether an x402 payment is one this service made (the reconciler hands it back to `watch`). */
export function isX402Purchase(payment: PaymentRecord): boolean {
  return payment.mode === 'x402' && payment.direction === 'sent';
}

/**
 * The challenge the request carries: the v2 header, else the body. When both hold one, they must offer
 * the same payments: a seller (or whoever sits between) showing one payee in the body and another in
 * the header is refused rather than believed in either.
 */
function readChallenge(input: X402PayInput): PaymentChallenge {
  try {
    const body = input.paymentRequiredBody;
    const bodyHoldsOne =
      typeof body === 'object' && body !== null && 'accepts' in (body as Record<string, unknown>);
    if (input.paymentRequired === undefined) {
      if (body === undefined) {
        throw invalidParameters({
          paymentRequired:
            "give the seller's PAYMENT-REQUIRED header value, or its 402 body as paymentRequiredBody",
        });
      }
      return challengeFromJson(body, 'paymentRequiredBody');
    }
    const challenge = challengeFromHeader(input.paymentRequired, 'paymentRequired');
    if (bodyHoldsOne) {
      const other = challengeFromJson(body, 'paymentRequiredBody');
      if (!sameTerms(challenge, other)) {
        throw invalidParameters({
          paymentRequiredBody:
            'offers other payments (payTo, asset, network or amount) than the PAYMENT-REQUIRED header; refused',
        });
      }
    }
    return challenge;
  } catch (error) {
    if (error instanceof ChallengeError) throw invalidParameters({ [error.field]: error.problem });
    throw error;
  }
}

function termsOf(challenge: PaymentChallenge): Set<string> {
  return new Set(
    challenge.accepts.map((o) =>
      JSON.stringify([
        o.scheme,
        o.network ?? o.networkAsSent,
        canonicalAddress(o.asset),
        canonicalAddress(o.payTo),
        o.amount.toString(),
      ]),
    ),
  );
}

function sameTerms(a: PaymentChallenge, b: PaymentChallenge): boolean {
  const x = termsOf(a);
  const y = termsOf(b);
  return x.size === y.size && [...x].every((t) => y.has(t));
}

/**
 * The resource the challenge names must be on the host the buyer asked: a challenge copied from another
 * site (or a redirect's) would have the buyer pay for something it did not ask for.
 */
function checkResourceHost(challenge: PaymentChallenge, resource: string): void {
  const host = new URL(resource).host.toLowerCase();
  for (const url of challenge.resourceUrls) {
    const named = new URL(url).host.toLowerCase();
    if (named !== host) {
      throw invalidParameters({
        resource: `is on ${clip(host)}, but the PaymentRequired is for a resource on ${clip(named)}`,
      });
    }
  }
}

function allowedNetworks(networks: readonly string[] | undefined): ReadonlySet<string> | undefined {
  return networks === undefined ? undefined : new Set(networks);
}

/** The buyer's limit for `token`: its entry by symbol (any case) or by address; undefined when none. */
function limitFor(maxAmount: Readonly<Record<string, number>>, token: TokenInfo): bigint | undefined {
  const address = canonicalAddress(token.address);
  for (const [asset, amount] of Object.entries(maxAmount)) {
    const named = asset.trim();
    if (named.toUpperCase() !== token.symbol.toUpperCase() && canonicalAddress(named) !== address) continue;
    try {
      return toAtomic(amount, token.decimals);
    } catch (error) {
      if (error instanceof AmountError) {
        throw invalidParameters({
          [`maxAmount.${asset}`]: `${error.message} (${token.symbol} has ${token.decimals} decimals)`,
        });
      }
      throw error;
    }
  }
  return undefined;
}

function clip(text: string): string {
  return JSON.stringify(text.slice(0, 80));
}
