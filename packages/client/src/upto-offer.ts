import type { PaymentRequirements, SettleResponse } from '@x402/core/types';
import { fromAtomicUnits, toAtomicUnits } from './decimal-amount.ts';
import type { Gate402Client, ResponseOf } from './gate402-client.ts';
import type { PaywallHookRun } from './paywall-hooks.ts';

/**
 * x402's `upto` token payment a protected resource may offer (usage-based: LLM tokens, bytes, seconds):
 * the buyer signs a maximum, the handler states what the request actually cost, and only that is settled.
 * Served by the gateway's facilitator where GET /facilitator/supported lists `upto`:
 *
 * - EVM, with x402's upto Permit2 proxy (the embedded anvil has it): the buyer signs a Permit2 permit of
 *   the maximum (approving Permit2 for the token once); nothing moves until the handler settles.
 * - Solana, with x402's payment-channels program (the embedded localnet has it, also under devnet's id,
 *   which stock buyers need): the buyer signs the open of a payment channel of the maximum, which the
 *   paywall has the facilitator send BEFORE the handler runs (the escrow deposit); the handler's settle
 *   claims the actual amount and the rest goes back to the buyer in the same transaction.
 *
 * @example
 * protect({ price: '0.01', payTo, upto: { asset: usdcMint, max: '0.05', network: 'solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1' } })
 */
export interface UptoTokenOption {
  /** The token: an ERC-20 contract on EVM, a mint on Solana. */
  readonly asset: string;
  /** The most one request may cost, in whole tokens, as a decimal: `'0.05'` USDC. */
  readonly max: string | number;
  /**
   * CAIP-2 id; default the network of the native offer. Must list `upto` in GET /facilitator/supported.
   * Stock `@x402/svm` buyers take only mainnet, devnet and testnet ids: on the embedded localnet, devnet's.
   */
  readonly network?: string;
  /** Who is paid; default `payTo`. */
  readonly payTo?: string;
  /** Added to the requirement's `extra`. */
  readonly extra?: Readonly<Record<string, unknown>>;
}

export const UPTO_SCHEME = 'upto';
/**
 * x402's payment flow (`extra.paymentFlow`) of an `upto` offer that escrows the maximum before the
 * handler and claims the actual amount after it (Solana's payment channel). The facilitator's
 * supported kind decides it, not the network's family.
 */
const ESCROW_FLOW = 'escrow';
/** The stock seller's withdraw delay floor (@x402/svm DEFAULT_GRACE_PERIOD_SECONDS): the buyer's own exit. */
const MIN_WITHDRAW_DELAY_SECONDS = 900;

/**
 * An `upto` payment the facilitator verified (the buyer's signed maximum) and nothing settled to the
 * seller yet: the handler serves the request, then calls `settle` with what it cost, once. A handler that
 * never calls it charges nothing. On EVM the buyer's permit then expires unused. On Solana the maximum
 * is already in escrow (`depositTransaction`): `settle(0)` gives it all back at once, and a handler that
 * never settles (it threw, or the settle was refused) leaves it to the gateway's escrow sweep, which gives
 * it all back once the channel can no longer be claimed (about 66 minutes after the deposit). The claim
 * may come until `maxTimeoutSeconds` after the deposit, whatever expiry the buyer wrote.
 */
export interface UptoPayment {
  readonly scheme: typeof UPTO_SCHEME;
  readonly network: string;
  /** The mint or contract. */
  readonly asset: string;
  /** Who signed. */
  readonly payer: string;
  /** The signed maximum, exact decimal in whole units of `asset`. */
  readonly max: string;
  /**
   * Where the maximum moves into escrow before the handler (Solana's payment channel): the transaction
   * that deposited it. Absent where nothing moves before the settle (EVM).
   */
  readonly depositTransaction?: string;
  /** What the resource's hooks left for the handler. */
  readonly metadata?: Readonly<Record<string, unknown>>;
  /** None yet: the gateway records the payment when the handler settles it (UptoSettlement.paymentId). */
  readonly paymentId?: undefined;
  /**
   * Settles `amount` (whole tokens, at most `max`; 0 charges nothing, and on Solana gives the whole
   * escrow back to the buyer on chain) through the gateway's facilitator,
   * once: a second call answers the first call's result (one that failed on the way, or found the
   * settlement pending, asks again, and the facilitator answers that same settlement whatever the amount).
   * Runs the resource's settle hooks as an `exact` payment's settle does: `onBeforeSettle` first (a veto
   * or a hook that throws rejects with PaywallHookStop, and nothing is settled), `onSettleFailure` on a
   * refusal or failure (a recovery is taken as the settlement, on the seller's word), `onAfterSettle`
   * once settled. Resolves to the settlement and the PAYMENT-RESPONSE header to send with the answer;
   * rejects with UptoSettleRefused when the facilitator refused.
   */
  settle(amount: string | number): Promise<UptoSettlement>;
}

/**
 * The facilitator did not settle: `settlement` says why. `settlement_pending` (sent, not confirmed in
 * time) may still land: calling `settle` again looks at that same transaction, never sends another.
 */
export class UptoSettleRefused extends Error {
  constructor(readonly settlement: ResponseOf<'facilitatorSettle'>) {
    super(
      `the facilitator did not settle the upto payment: ${settlement.errorReason ?? 'settle_failed'} ${settlement.errorMessage ?? ''}`.trim(),
    );
    this.name = 'UptoSettleRefused';
  }
}

export interface UptoSettlement {
  /** The facilitator's settle answer; `amount` is what moved, in atomic units. */
  readonly settlement: ResponseOf<'facilitatorSettle'> & { readonly amount?: string };
  /** The gateway's record of the payment in the seller's account; absent for a settle of 0. */
  readonly paymentId?: string;
  /** What moved, exact decimal in whole units of the asset. */
  readonly amount: string;
  /** `PAYMENT-RESPONSE` (and its CORS exposure) for the buyer, to set on the answer if it is not sent yet. */
  readonly headers: Record<string, string>;
}

/**
 * The `upto` requirement, completed from the gateway: the token's decimals and what the facilitator's
 * supported kind says buyers must sign for — on EVM its address (the upto Permit2 witness), on Solana
 * its fee payer and receiver authorizer (the payment channel's payee and voucher signer).
 */
export async function uptoRequirement(
  gateway: Gate402Client,
  option: UptoTokenOption,
  defaults: { network: string; payTo: string; maxTimeoutSeconds: number },
): Promise<PaymentRequirements> {
  const network = option.network ?? defaults.network;
  const [token, supported] = await Promise.all([
    gateway.tokenInfo(option.asset),
    gateway.facilitatorSupported(),
  ]);
  const kind = supported.kinds.find(
    (k) => k.scheme === UPTO_SCHEME && k.network === network && k.x402Version === 2,
  );
  const signedFor =
    kind === undefined
      ? undefined
      : uptoExtra((kind.extra ?? {}) as Record<string, unknown>, defaults.maxTimeoutSeconds);
  if (signedFor === undefined) {
    throw new Error(`the gateway's facilitator does not settle upto payments on ${network}`);
  }
  let amount: bigint;
  try {
    amount = toAtomicUnits(option.max, token.decimals);
  } catch (error) {
    throw new RangeError(`upto.max ${option.max}: ${option.asset} has ${token.decimals} decimals`, {
      cause: error,
    });
  }
  return {
    scheme: UPTO_SCHEME,
    network: network as PaymentRequirements['network'],
    asset: option.asset,
    amount: amount.toString(),
    payTo: option.payTo ?? defaults.payTo,
    maxTimeoutSeconds: defaults.maxTimeoutSeconds,
    extra: { ...signedFor, ...(option.extra ?? {}) },
  };
}

/**
 * What the stock upto client needs in `extra`, from the facilitator's supported kind; undefined when the
 * kind names neither form.
 */
function uptoExtra(
  kind: Readonly<Record<string, unknown>>,
  maxTimeoutSeconds: number,
): Record<string, unknown> | undefined {
  // @x402/evm's upto client signs this address into the Permit2 witness: the one facilitator that may settle.
  if (typeof kind.facilitatorAddress === 'string') {
    return { assetTransferMethod: 'permit2', facilitatorAddress: kind.facilitatorAddress };
  }
  // @x402/svm's upto client opens a channel whose payee and fee payer is `feePayer`, whose vouchers
  // `receiverAuthorizer` signs (the facilitator's own: the paywall holds no key to sign them), and whose
  // grace period is `withdrawDelay`, chosen as the stock seller chooses it. `paymentFlow` tells buyers
  // that the maximum moves into escrow before the handler, as a stock seller's 402 does.
  if (typeof kind.feePayer === 'string' && typeof kind.receiverAuthorizer === 'string') {
    return {
      feePayer: kind.feePayer,
      receiverAuthorizer: kind.receiverAuthorizer,
      withdrawDelay: Math.max(MIN_WITHDRAW_DELAY_SECONDS, maxTimeoutSeconds),
      paymentFlow: ESCROW_FLOW,
    };
  }
  return undefined;
}

/** Whether the requirement escrows the maximum before the handler (a deposit, then a claim). */
export function escrowsBeforeHandler(requirement: PaymentRequirements): boolean {
  return requirement.extra?.paymentFlow === ESCROW_FLOW;
}

/**
 * The payload as the facilitator settles one phase of an escrow flow: x402's stock seller stamps
 * `payload.type` (`deposit` before the handler, `claim` after), which the buyer did not sign.
 */
export function escrowPhase(
  paymentPayload: Record<string, unknown>,
  type: 'deposit' | 'claim',
): Record<string, unknown> {
  return { ...paymentPayload, payload: { ...(paymentPayload.payload as object), type } };
}

/**
 * The claim of an escrow deposit asked at `depositAskedAt` (Unix ms). Its `expiresAt` is the seller's to
 * write (the buyer signed only the channel open; the facilitator holds a claim to the deadline its deposit
 * was given), and the buyer's own one binds nothing: a buyer writing one a few seconds ahead would have its
 * maximum held and the handler run, and every claim after it refused as expired — served for nothing. So
 * the claim may come until `maxTimeoutSeconds` after the deposit was asked, the window the offer named
 * (the facilitator allows up to its channel lifetime, 1 hour, which bounds `maxTimeoutSeconds`).
 */
function claimOf(
  paymentPayload: Record<string, unknown>,
  depositAskedAt: number,
  maxTimeoutSeconds: number,
): Record<string, unknown> {
  const claim = escrowPhase(paymentPayload, 'claim');
  const payload = claim.payload as Record<string, unknown>;
  const buyers = typeof payload.expiresAt === 'number' ? payload.expiresAt : 0;
  const window = Math.floor(depositAskedAt / 1000) + maxTimeoutSeconds;
  return { ...claim, payload: { ...payload, expiresAt: Math.max(buyers, window) } };
}

/**
 * The payment the handler settles: `settle(amount)` asks the facilitator to settle the actual amount of
 * the verified payload, once (in an escrow flow, the claim of the deposit `depositTransaction` made).
 * `headersOf` makes the PAYMENT-RESPONSE header of a settlement.
 */
export async function uptoPayment(
  gateway: Gate402Client,
  requirement: PaymentRequirements,
  paymentPayload: Record<string, unknown>,
  payer: string,
  headersOf: (settlement: SettleResponse) => Record<string, string>,
  hooks?: PaywallHookRun,
  deposit?: { readonly transaction: string; readonly askedAt: number },
): Promise<UptoPayment> {
  const token = await gateway.tokenInfo(requirement.asset);
  const max = BigInt(requirement.amount);
  const settledPayload = escrowsBeforeHandler(requirement)
    ? claimOf(paymentPayload, deposit?.askedAt ?? Date.now(), requirement.maxTimeoutSeconds)
    : paymentPayload;
  const depositTransaction = deposit?.transaction;
  let settled: Promise<UptoSettlement> | undefined;
  return {
    scheme: UPTO_SCHEME,
    network: requirement.network,
    asset: requirement.asset,
    payer,
    max: fromAtomicUnits(max, token.decimals),
    ...(depositTransaction === undefined ? {} : { depositTransaction }),
    settle(amount) {
      settled ??= (async () => {
        const atomic = toAtomicUnits(amount, token.decimals);
        if (atomic > max) {
          throw new RangeError(
            `settle(${amount}): more than the ${fromAtomicUnits(max, token.decimals)} the buyer signed`,
          );
        }
        // Before anything is settled: a veto (or a hook that throws) rejects, and the permit stays unspent.
        await hooks?.before('onBeforeSettle');
        let settlement: UptoSettlement['settlement'];
        try {
          settlement = (await gateway.facilitatorSettle({
            x402Version: 2,
            paymentPayload: settledPayload,
            paymentRequirements: { ...requirement, amount: atomic.toString() },
          } as Parameters<Gate402Client['facilitatorSettle']>[0])) as UptoSettlement['settlement'];
        } catch (error) {
          const recovered = await hooks?.settleFailure(error);
          if (recovered === undefined) throw error;
          settlement = recovered as UptoSettlement['settlement'];
        }
        if (!settlement.success) {
          const recovered = await hooks?.settleFailure(settlement);
          if (recovered === undefined) throw new UptoSettleRefused(settlement);
          settlement = recovered as UptoSettlement['settlement'];
        }
        await hooks?.afterSettle(settlement as SettleResponse);
        const { paymentId, ...response } = settlement;
        return {
          settlement,
          ...(paymentId === undefined ? {} : { paymentId }),
          amount: fromAtomicUnits(BigInt(settlement.amount ?? atomic.toString()), token.decimals),
          headers: headersOf(response as SettleResponse),
        };
      })();
      const attempt = settled;
      // Asked again after a failure on the way or a pending settlement; a refusal or success stays the answer.
      attempt.catch((error: unknown) => {
        const pending =
          error instanceof UptoSettleRefused && error.settlement.errorReason === 'settlement_pending';
        if (
          (pending || (!(error instanceof UptoSettleRefused) && !(error instanceof RangeError))) &&
          settled === attempt
        )
          settled = undefined;
      });
      return attempt;
    },
  };
}
