import { canonicalAddress } from '../../chains/canonical-address.ts';
import { GatewayError } from '../../domain/gateway-error.ts';
import { atomicToDecimalText } from '../../domain/money.ts';
import type { AssetLimitRecord, SpendPolicyRecord } from '../../domain/records/spend-policy-records.ts';
import type { Repositories, Store } from '../../store/store.ts';
import { hostAllowed } from './allowed-hosts.ts';

/** The rolling day every `maxPerDay` is counted over. */
export const SPEND_WINDOW_MS = 24 * 60 * 60 * 1000;

/**
 * One custodial spend as the guard judges it. The caller has already resolved and canonicalised it
 * (network id, asset address, atomic amount); the guard never reads the chain.
 */
export interface SpendIntent {
  readonly accountId: string;
  /** The API key that asked for it; null for the account's dashboard session (account policy only). */
  readonly keyId: string | null;
  /** CAIP-2 network id. */
  readonly network: string;
  /** What is spent: a token address (any spelling; compared canonically) or null for native, with its decimals. */
  readonly asset: {
    readonly address: string | null;
    readonly decimals: number;
    readonly symbol: string | null;
  };
  /** Atomic units of the asset. */
  readonly amount: bigint;
  /** Who is paid: the transfer's recipient (x402: the option's `payTo`). */
  readonly recipient: string;
  /** The resource paid for (a URL), when the spend names one: what `allowedHosts` is checked against. */
  readonly resource: string | null;
  /**
   * Where the recipient comes from, which decides whether `allowedHosts` can bind it:
   * - `named`: the request names it, directly (`recipientAddress`) or in a PaymentRequired the caller
   *   brings (POST /payment/x402 does not fetch the resource). Nothing ties it to `resource`, which the
   *   caller writes too, so `allowedHosts` alone cannot bound who is paid: a policy with `allowedHosts`
   *   refuses it unless the same policy's `allowedRecipients` lists the recipient.
   * - `refund`: the payer of a payment the account received (services/payments/refunds/), from the
   *   gateway's own record, for at most what it paid. No caller picks it, so `allowedHosts` is judged
   *   on the refunded payment's resource alone.
   */
  readonly payee: 'named' | 'refund';
}

/**
 * What a custodial payment costs its wallet in the network's native currency beyond the amount that
 * its caller decides, known once the transaction is prepared: the priority fee the caller named, and
 * `deposit`, what opening accounts for the recipient costs (Solana: a token account's rent), which the
 * recipient can take back by closing the account. `counted` is their sum. The base fee and a priority
 * fee the gateway chose from the network's recent fees are the network's price, not the caller's
 * choice, and are not counted. Atomic units of the native currency.
 */
export interface NetworkCost {
  readonly counted: bigint;
  readonly deposit: bigint;
  readonly native: { readonly decimals: number; readonly symbol: string };
}

/** The NetworkCost of a prepared transaction; `callerNamedPriorityFee`: the request set `priorityFee`. */
export function networkCost(
  prepared: { readonly priorityFee: bigint; readonly accountRent?: bigint | undefined },
  native: { readonly decimals: number; readonly symbol: string },
  callerNamedPriorityFee: boolean,
): NetworkCost {
  const deposit = prepared.accountRent ?? 0n;
  return { counted: (callerNamedPriorityFee ? prepared.priorityFee : 0n) + deposit, deposit, native };
}

export interface SpendGuardDeps {
  readonly store: Store;
  readonly now?: () => number;
}

/**
 * The spend policies of an account and its API keys, enforced on every custodial spending path
 * (POST /payment/send, POST /payment/x402, POST /transaction/send). Contract for a spending path:
 *
 * 1. `check(intent)` before anything is signed or prepared on chain: refuses (throws a GatewayError
 *    SPEND_LIMIT_EXCEEDED / SPEND_NOT_ALLOWED / SPEND_POLICY_EXPIRED, 403) what the policies forbid,
 *    counting the rolling day as it stands. Cheap: one read, plus a sum when a daily cap applies. It
 *    is an early answer only, not the enforcement: concurrent spends can all pass it.
 * 2. `chargeIn(tx, intent, paymentId)` inside the `Store.transaction` that records the payment
 *    `paymentId` (before or after `ledger.recordIn`, in the same transaction): checks again and records
 *    the spend. When a daily cap applies, it first takes the account's lock row of the asset, so the
 *    sum it reads and the spend it writes are one step for every other spender of that account and
 *    asset, on any gateway instance (PostgreSQL row lock; SQLite has one writer). If it throws, the
 *    transaction must roll back (let the error through): nothing is recorded and the caller answers
 *    the refusal. Take other locks of the transaction (an EVM nonce) before it, never after, so every
 *    path locks in the same order.
 *
 * Every refusal is not `final`: nothing was recorded, and the answer may change (the day rolls on, an
 * admin changes the policy), so an Idempotency-Key retry is judged afresh rather than replayed.
 *
 * Costs: `chargeIn` also takes the payment's NetworkCost. Daily caps of the native currency count its
 * `counted` part too (a native payment: amount plus that; a token payment: that, in native currency),
 * since a caller-chosen priority fee or a deposit given to a recipient is money leaving the wallet at
 * the caller's word; `maxPerPayment` stays on the amount. A token payment whose transaction hands the recipient a
 * deposit is refused by a policy that lists its assets without the native currency: the recipient could
 * close the account and keep the deposit, a native payment the policy does not allow.
 *
 * Releasing: a spend counts while its payment is pending, submitted, confirmed or finalized. A payment
 * that ends failed, expired or reverted stops counting by itself (the sum joins the payments table), so a
 * spending path has nothing to give back. An Idempotency-Key retry that answers the first attempt's
 * payment must not call the guard again (it is not a new spend).
 *
 * What binds a spend: the account's policy (every spend of the account, whichever key or session makes
 * it; its daily caps sum the whole account's spends) and, for a spend made with an API key, that key's
 * own policy (its daily caps sum that key's spends). Both must allow it: a key's policy can only
 * narrow what the account allows. Without any policy every spend is allowed, and still recorded, so a
 * cap set later counts the day already spent.
 */
export class SpendGuard {
  private readonly now: () => number;

  constructor(private readonly deps: SpendGuardDeps) {
    this.now = deps.now ?? Date.now;
  }

  /** Step 1 (see the class): the early refusal, before signing. */
  async check(intent: SpendIntent): Promise<void> {
    const policies = await this.deps.store.spending.policiesFor(intent.accountId, intent.keyId);
    if (policies.length === 0) return;
    const at = this.now();
    const caps = judge(policies, intent, at);
    if (caps.length === 0) return;
    const spent = await this.deps.store.spending.spentSince(
      intent.accountId,
      intent.network,
      assetKey(intent),
      at - SPEND_WINDOW_MS,
    );
    checkDailyCaps(caps, intent, spent);
  }

  /**
   * Step 2 (see the class): the enforcement, atomic with recording the payment `paymentId`, counting
   * `cost` (what the prepared transaction pays the network) against the native currency's daily caps.
   */
  async chargeIn(
    tx: Repositories,
    intent: SpendIntent,
    paymentId: string,
    cost?: NetworkCost,
  ): Promise<void> {
    const at = this.now();
    const policies = await tx.spending.policiesFor(intent.accountId, intent.keyId);
    const caps = judge(policies, intent, at);
    const fee = cost?.counted ?? 0n;
    // What each asset's daily caps count: the native part first, so every path locks in one order.
    const charges: { intent: SpendIntent; caps: readonly DailyCap[] }[] = [];
    if (intent.asset.address === null) {
      charges.push({ intent: { ...intent, amount: intent.amount + fee }, caps });
    } else {
      if (cost !== undefined && fee > 0n) {
        const native: SpendIntent = {
          ...intent,
          asset: { address: null, decimals: cost.native.decimals, symbol: cost.native.symbol },
          amount: fee,
        };
        charges.push({ intent: native, caps: judgeCost(policies, native, cost.deposit) });
      }
      charges.push({ intent, caps });
    }
    for (const charge of charges) {
      const asset = assetKey(charge.intent);
      if (charge.caps.length > 0) {
        await tx.spending.lockAsset(intent.accountId, intent.network, asset, at);
        const spent = await tx.spending.spentSince(
          intent.accountId,
          intent.network,
          asset,
          at - SPEND_WINDOW_MS,
        );
        checkDailyCaps(charge.caps, charge.intent, spent);
      }
      await tx.spending.pruneSpends(intent.accountId, intent.network, asset, at - SPEND_WINDOW_MS);
      await tx.spending.recordSpend({
        paymentId,
        accountId: intent.accountId,
        keyId: intent.keyId,
        network: intent.network,
        asset,
        amount: charge.intent.amount,
        createdAt: at,
      });
    }
  }
}

/**
 * The native currency's daily caps a token payment's network cost counts against. A policy that lists
 * its assets without the native currency lets a priority fee through uncounted (it goes to the network,
 * not to the recipient), but not a deposit handed to the recipient (see SpendGuard, Costs).
 */
function judgeCost(policies: readonly SpendPolicyRecord[], native: SpendIntent, deposit: bigint): DailyCap[] {
  const caps: DailyCap[] = [];
  for (const policy of policies) {
    if (policy.limits === null) continue;
    const limit = policy.limits.find((l) => l.network === native.network && l.asset === null);
    if (limit === undefined) {
      if (deposit === 0n) continue;
      const owner = policy.keyId === null ? "The account's spend policy" : "The API key's spend policy";
      throw notAllowed(
        policy.keyId === null ? 'account' : 'key',
        'limits',
        `${owner} does not list ${nameOf(native)} on ${native.network}, and this payment would give the recipient a deposit of ${amountText(deposit, native)} (opening its token account), which it can take.`,
      );
    }
    if (limit.maxPerDay !== null) caps.push({ policy, limit: { ...limit, maxPerDay: limit.maxPerDay } });
  }
  return caps;
}

/** A daily cap that binds the spend: whose policy, and the limit entry it comes from. */
interface DailyCap {
  readonly policy: SpendPolicyRecord;
  readonly limit: AssetLimitRecord & { readonly maxPerDay: bigint };
}

function assetKey(intent: SpendIntent): string | null {
  return intent.asset.address === null ? null : canonicalAddress(intent.asset.address);
}

/**
 * Every rule of every policy that needs no sum; throws the first refusal. Returns the daily caps that
 * apply, to be counted. The account's policy is judged first, so its refusal is the one named.
 */
function judge(policies: readonly SpendPolicyRecord[], intent: SpendIntent, at: number): DailyCap[] {
  const caps: DailyCap[] = [];
  const asset = assetKey(intent);
  for (const policy of policies) {
    const whose = policy.keyId === null ? 'account' : 'key';
    const owner = policy.keyId === null ? "The account's spend policy" : "The API key's spend policy";
    if (policy.expiresAt !== null && at >= policy.expiresAt) {
      throw new GatewayError('SPEND_POLICY_EXPIRED', {
        message: `${owner} expired at ${new Date(policy.expiresAt).toISOString()}; it allows no payments until it is set again.`,
        final: false,
        details: { limit: 'expiresAt', policy: whose, expiresAt: new Date(policy.expiresAt).toISOString() },
      });
    }
    if (policy.allowedNetworks !== null && !policy.allowedNetworks.includes(intent.network)) {
      throw notAllowed(whose, 'allowedNetworks', `${owner} does not allow payments on ${intent.network}.`);
    }
    if (policy.allowedRecipients !== null) {
      const recipient = canonicalAddress(intent.recipient.trim());
      if (!policy.allowedRecipients.includes(recipient)) {
        throw notAllowed(
          whose,
          'allowedRecipients',
          `${owner} does not allow payments to ${intent.recipient}.`,
        );
      }
    }
    if (policy.allowedHosts !== null && policy.allowedRecipients === null && intent.payee === 'named') {
      // The resource is the caller's word: naming an allowed host would let a key limited to hosts pay anyone.
      throw notAllowed(
        whose,
        'allowedHosts',
        `${owner} limits payments to allowedHosts without allowedRecipients, and this request names its recipient (${intent.recipient}) itself: the gateway cannot tie it to an allowed host. List the hosts' payees in the policy's allowedRecipients.`,
      );
    }
    if (policy.allowedHosts !== null && !hostAllowed(policy.allowedHosts, intent.resource)) {
      throw notAllowed(
        whose,
        'allowedHosts',
        intent.resource === null
          ? `${owner} allows payments only for resources on its allowed hosts; this payment names no resource URL.`
          : `${owner} does not allow payments for resources on the host of ${intent.resource}.`,
      );
    }
    if (policy.limits === null) continue;
    const limit = policy.limits.find((l) => l.network === intent.network && l.asset === asset);
    if (limit === undefined) {
      throw notAllowed(
        whose,
        'limits',
        `${owner} lists the assets it allows, and ${nameOf(intent)} on ${intent.network} is not among them.`,
      );
    }
    if (limit.maxPerPayment !== null && intent.amount > limit.maxPerPayment) {
      throw new GatewayError('SPEND_LIMIT_EXCEEDED', {
        message: `${owner} allows at most ${amountText(limit.maxPerPayment, intent)} per payment; this payment is ${amountText(intent.amount, intent)}.`,
        details: {
          limit: 'maxPerPayment',
          policy: whose,
          max: amountText(limit.maxPerPayment, intent),
          remaining: amountText(limit.maxPerPayment, intent),
        },
        final: false,
      });
    }
    if (limit.maxPerDay !== null) caps.push({ policy, limit: { ...limit, maxPerDay: limit.maxPerDay } });
  }
  return caps;
}

/** The daily caps against the spends of the rolling day (the account's, or the key's for a key's cap). */
function checkDailyCaps(
  caps: readonly DailyCap[],
  intent: SpendIntent,
  spends: readonly { keyId: string | null; amount: bigint; createdAt: number }[],
): void {
  for (const { policy, limit } of caps) {
    const counted = policy.keyId === null ? spends : spends.filter((s) => s.keyId === policy.keyId);
    let spent = 0n;
    let oldest = Number.POSITIVE_INFINITY;
    for (const spend of counted) {
      spent += spend.amount;
      oldest = Math.min(oldest, spend.createdAt);
    }
    if (spent + intent.amount <= limit.maxPerDay) continue;
    const remaining = limit.maxPerDay > spent ? limit.maxPerDay - spent : 0n;
    const whose = policy.keyId === null ? 'account' : 'key';
    const owner = policy.keyId === null ? "The account's spend policy" : "The API key's spend policy";
    const resetsAt = Number.isFinite(oldest) ? new Date(oldest + SPEND_WINDOW_MS).toISOString() : undefined;
    throw new GatewayError('SPEND_LIMIT_EXCEEDED', {
      message: `${owner} allows ${amountText(limit.maxPerDay, intent)} per 24 hours; ${amountText(remaining, intent)} remains, and this payment is ${amountText(intent.amount, intent)}.`,
      details: {
        limit: 'maxPerDay',
        policy: whose,
        max: amountText(limit.maxPerDay, intent),
        remaining: amountText(remaining, intent),
        ...(resetsAt === undefined ? {} : { resetsAt }),
      },
      final: false,
    });
  }
}

function notAllowed(policy: 'account' | 'key', limit: string, message: string): GatewayError {
  return new GatewayError('SPEND_NOT_ALLOWED', { message, details: { limit, policy }, final: false });
}

function nameOf(intent: SpendIntent): string {
  return intent.asset.symbol ?? intent.asset.address ?? 'the native currency';
}

function amountText(atomic: bigint, intent: SpendIntent): string {
  return `${atomicToDecimalText(atomic, intent.asset.decimals)} ${nameOf(intent)}`;
}
