import type { ChainFamily } from '../domain/address.ts';
import type { PaymentDirection, PaymentMode, PaymentStatus } from '../domain/payment-status.ts';
import type { Plan } from '../domain/plan.ts';
import type { AccountRecord, ApiKeyRecord, KeyWithAccount } from '../domain/records/account-records.ts';
import type { DashboardSessionRecord, DashboardUserRecord } from '../domain/records/dashboard-records.ts';
import type { DiscoveryRepository } from '../domain/records/discovery-records.ts';
import type {
  DeliveryAttempt,
  EventHeader,
  EventRecord,
  WebhookDeliveryRecord,
  WebhookRecord,
} from '../domain/records/event-records.ts';
import type {
  PaymentChanges,
  PaymentRecord,
  PaymentSummary,
  RefundSummary,
} from '../domain/records/payment-records.ts';
import type {
  FacilitatorSignerRecord,
  SettlementRecord,
  SettlementStatus,
  SponsoredApprovalStep,
} from '../domain/records/settlement-records.ts';
import type { SpendPolicyRecord, SpendRecord } from '../domain/records/spend-policy-records.ts';
import type { WalletChallengeRecord, WalletRecord } from '../domain/records/wallet-records.ts';
import type { ExportedPayment, ExportPageQuery } from './payment-export.ts';

/**
 * The storage port. Services depend on this interface only; SQL never leaves `store/`.
 * The Kysely implementation serves SQLite and PostgreSQL and passes one contract suite on both
 * (test/store-contract.ts). Timestamps are Unix milliseconds; amounts are bigint atomic units.
 */
/** PaymentRepository.unsettledSpend. */
export interface UnsettledSpend {
  readonly native: bigint;
  readonly tokens: ReadonlyMap<string, bigint>;
}

export interface Store extends Repositories {
  /**
   * Runs `work` in one database transaction: everything it writes commits together or not at all.
   * State changes and their outbox events are written this way. `work` waits on storage only — never
   * on the chain or another service — so a transaction never holds the database on the network (on
   * SQLite it may share its commit with others; see GroupCommit).
   */
  transaction<T>(work: (tx: Repositories) => Promise<T>): Promise<T>;
  /**
   * A value that two calls return alike only if nothing was written to the database in between, by
   * this process or any other; `undefined` where that cannot be told cheaply (PostgreSQL, whose other
   * instances' writes this process does not see). What was read under a token is still what storage
   * holds while the token is unchanged, so a reader may keep it until then (GET /payment/status does).
   */
  changeToken(): string | undefined;
  /**
   * Resolves once every commit made before the call is on disk. A write's own promise already waits for
   * that; a reader that acts outside storage on what it read (pushing an event to a client) calls this
   * between reading and acting, because on SQLite another writer's commit is readable about a
   * millisecond before it is flushed (see WalSync). Immediate on PostgreSQL, which shows a commit only
   * once it is durable.
   */
  durable(): Promise<void>;
  /** Resolves when storage answers a trivial query; used by /readyz. */
  ping(): Promise<void>;
  close(): Promise<void>;
  /**
   * Calls `listener` after each commit in this process that appended outbox events, once the commit is
   * durable, with those events in seq order; the stream and webhook workers wake at once instead of
   * polling. Returns the unsubscribe function.
   */
  onEventsCommitted(listener: (events: readonly EventRecord[]) => void): () => void;
}

export interface Repositories {
  readonly accounts: AccountRepository;
  readonly apiKeys: ApiKeyRepository;
  readonly wallets: WalletRepository;
  readonly walletChallenges: WalletChallengeRepository;
  readonly payments: PaymentRepository;
  readonly proofs: ProofRepository;
  readonly events: EventRepository;
  readonly idempotency: IdempotencyRepository;
  readonly nonces: NonceRepository;
  readonly webhooks: WebhookRepository;
  readonly webhookDeliveries: WebhookDeliveryRepository;
  readonly jobLeases: JobLeaseRepository;
  readonly facilitatorSigners: FacilitatorSignerRepository;
  readonly settlements: SettlementRepository;
  readonly sponsoredFees: SponsoredFeeRepository;
  readonly x402Receipts: X402ReceiptRepository;
  readonly dashboardUsers: DashboardUserRepository;
  readonly dashboardSessions: DashboardSessionRepository;
  readonly spending: SpendRepository;
  readonly paymentVolume: PaymentVolumeRepository;
  readonly discovery: DiscoveryRepository;
  readonly permit2Approvals: Permit2ApprovalRepository;
}

/** One account's paid volume (confirmed or finalized payments) per UTC day, direction, network and asset. */
export interface AssetVolume {
  /** Unix ms of the UTC day's start. */
  readonly day: number;
  readonly direction: PaymentDirection;
  /** Refunds (sent back to the payer of a received payment) apart from other payments. */
  readonly refund: boolean;
  readonly network: string;
  /** The token; null: the network's native currency. */
  readonly asset: { readonly address: string; readonly decimals: number } | null;
  readonly count: number;
  /** Atomic units, exact. */
  readonly amount: bigint;
}

/** What one resource (a paywalled URL) earned, in one asset on one network. */
export interface ResourceRevenue {
  readonly resource: string;
  readonly network: string;
  readonly asset: { readonly address: string; readonly decimals: number } | null;
  readonly count: number;
  readonly amount: bigint;
}

/**
 * Sums over one account's paid payments by the UTC day of their creation: the days whose start falls in
 * [since, until) (Unix ms). Read from a rollup kept in each payment's transaction (migration 0028).
 */
export interface PaymentVolumeRepository {
  /** Paid volume per UTC day, direction, network and asset, oldest day first. */
  byDay(accountId: string, since: number, until: number): Promise<AssetVolume[]>;
  /** Received revenue by resource: the `perAsset` highest earners of each network and asset. */
  topResources(accountId: string, since: number, until: number, perAsset: number): Promise<ResourceRevenue[]>;
  /**
   * What was refunded (paid refunds) of the received payments for each resource made in the range,
   * whenever the refunds were made; `count` is the number of refunds.
   */
  refundsByResource(accountId: string, since: number, until: number): Promise<ResourceRevenue[]>;
}

export interface AccountRepository {
  insert(account: AccountRecord): Promise<void>;
  get(id: string): Promise<AccountRecord | undefined>;
  /** Newest first. */
  list(): Promise<AccountRecord[]>;
  count(): Promise<number>;
  /** Returns the updated account, or undefined when there is none with that id. */
  updatePlan(
    id: string,
    change: { plan: Plan; customRateLimit: number | null; updatedAt: number },
  ): Promise<AccountRecord | undefined>;
}

export interface ApiKeyRepository {
  insert(key: ApiKeyRecord): Promise<void>;
  /** The key with this hash and its account, unless it is revoked or unknown. */
  findActiveByHash(hash: string): Promise<KeyWithAccount | undefined>;
  get(id: string): Promise<ApiKeyRecord | undefined>;
  /** Oldest first, revoked keys included. */
  listByAccount(accountId: string): Promise<ApiKeyRecord[]>;
  /** Marks the key revoked once; a second call keeps the first time. Undefined when unknown. */
  revoke(id: string, at: number): Promise<ApiKeyRecord | undefined>;
  /** Records use of the key; never moves lastUsedAt backwards. */
  touch(id: string, at: number): Promise<void>;
}

export interface WalletRepository {
  /** False when the address is already registered (by any account). */
  insert(wallet: WalletRecord): Promise<boolean>;
  /** Oldest first. */
  listByAccount(accountId: string): Promise<WalletRecord[]>;
  /**
   * Sets (or with null clears) the label of the account's wallet at this address, in one statement
   * scoped by the account: the wallet as it is now, or undefined when the account has no wallet there
   * (none at all, or another account's: the two are not told apart).
   */
  setLabel(
    accountId: string,
    family: ChainFamily,
    address: string,
    label: string | null,
  ): Promise<WalletRecord | undefined>;
  /** The wallet with this address, whichever account has it. */
  findByAddress(family: ChainFamily, address: string): Promise<WalletRecord | undefined>;
}

export interface WalletChallengeRepository {
  insert(challenge: WalletChallengeRecord): Promise<void>;
  get(nonce: string): Promise<WalletChallengeRecord | undefined>;
  /**
   * Marks the challenge answered, only if it is not yet (compare-and-set): false when another request
   * used it first. Called in the transaction that inserts the wallet, so both happen or neither does.
   */
  markUsed(nonce: string, at: number): Promise<boolean>;
  /** Removes challenges that expired at or before `before`; how many. */
  deleteExpired(before: number): Promise<number>;
}

export interface HistoryQuery {
  readonly accountId: string;
  readonly walletAddress: string;
  readonly direction: PaymentDirection | undefined;
  readonly limit: number;
  readonly offset: number;
}

/**
 * What a history page kept in memory is checked against (services/payments/history-page-cache.ts).
 * `version` only ever grows, and every write that changes what a history page of the wallet shows —
 * an insert, a state change, a new signature or amount — raises it in that write's own transaction:
 * read before a page, an unchanged version proves the page read after it then is still current.
 */
export interface HistoryVersion {
  /** The wallet's payments (of the direction asked, if any), as HistoryQuery's page counts them. */
  readonly total: number;
  readonly version: number;
}

export interface PaymentSearch {
  readonly accountId: string;
  readonly walletAddress?: string | undefined;
  readonly direction?: PaymentDirection | undefined;
  readonly status?: PaymentStatus | undefined;
  readonly limit: number;
  readonly offset: number;
}

/** Who is working on a payment until when; background workers leave a leased payment alone. */
export interface PaymentLease {
  readonly owner: string;
  readonly until: number;
}

export interface PaymentRepository {
  insert(payment: PaymentRecord, lease?: PaymentLease): Promise<void>;
  get(id: string): Promise<PaymentRecord | undefined>;
  findByIdempotencyKey(accountId: string, key: string): Promise<PaymentRecord | undefined>;
  /**
   * Moves a payment to `status` only if it is now in one of `from` (compare-and-set), applying
   * `changes` with it. Returns the updated payment, or undefined when another writer moved it first.
   * A state of `from` from which payment-status.ts allows no move to `status` is ignored, so a payment
   * in a final state is never written again.
   */
  transition(
    id: string,
    from: readonly PaymentStatus[],
    status: PaymentStatus,
    changes: PaymentChanges,
    at: number,
  ): Promise<PaymentRecord | undefined>;
  /**
   * Puts a replacement transaction on an open payment, only if its current signature is still
   * `currentSignature` (compare-and-set); undefined when another writer replaced or settled it first.
   */
  replaceTransaction(
    id: string,
    currentSignature: string,
    changes: PaymentChanges,
    at: number,
  ): Promise<PaymentRecord | undefined>;
  /**
   * Rewrites where a `confirmed` payment stands on chain without changing its state (its transaction
   * left its block in a reorganisation, or landed again in another); undefined when it is no longer
   * confirmed. No event: the payment's next state change carries the new block.
   */
  relocate(id: string, changes: PaymentChanges, at: number): Promise<PaymentRecord | undefined>;
  /**
   * What custodial sends from `walletAddress` on `network` that are not settled yet (pending,
   * submitted) can still take from it, atomic units: of the native currency, the amounts of native
   * sends plus every send's most fees; of each token (by address, as recorded), its sends' amounts.
   */
  unsettledSpend(network: string, walletAddress: string): Promise<UnsettledSpend>;
  /** How many payments each (network, status) pair has, over every account: for metrics. */
  countByStatus(): Promise<{ network: string; status: string; count: number }[]>;
  /** Newest first (created_at, then id), with the total count of matches. */
  history(query: HistoryQuery): Promise<{ total: number; payments: PaymentSummary[] }>;
  /** The wallet's total and history version (HistoryVersion), from one row per direction. */
  historyVersion(
    accountId: string,
    walletAddress: string,
    direction: PaymentDirection | undefined,
  ): Promise<HistoryVersion>;
  /** The account's payments, newest first, narrowed by any of wallet, direction and status (the dashboard). */
  search(query: PaymentSearch): Promise<{ total: number; payments: PaymentSummary[] }>;
  /** One keyset page of an export, oldest first (GET /payment/export; see payment-export.ts). */
  exportPage(query: ExportPageQuery): Promise<ExportedPayment[]>;
  /**
   * Leases up to `limit` payments in `statuses` whose lease is free or lapsed to `owner` until
   * `until`, so that with several instances one worker handles each payment at a time.
   */
  lease(
    owner: string,
    statuses: readonly PaymentStatus[],
    now: number,
    until: number,
    limit: number,
  ): Promise<PaymentRecord[]>;
  /**
   * As `lease`, for `mode` payments that were marked expired at or after `expiredSince` (their last
   * change): the reconciler keeps watching those for a transaction that lands late.
   */
  leaseExpired(
    owner: string,
    mode: PaymentMode,
    expiredSince: number,
    now: number,
    until: number,
    limit: number,
  ): Promise<PaymentRecord[]>;
  /** Ends `owner`'s lease; with `notBefore`, workers leave the payment alone until then (back-off). */
  releaseLease(id: string, owner: string, notBefore?: number): Promise<void>;
  /**
   * Takes the refund lock row of payment `paymentId` for the rest of the transaction (PostgreSQL: a row
   * lock held to commit; SQLite: the one writer). Call inside `Store.transaction`, before `refundsOf`,
   * so the refunds summed and the refund recorded after are one step for every other refund of it.
   */
  lockRefunds(paymentId: string, at: number): Promise<void>;
  /** The refunds of `paymentId` (payments whose refundOf it is), whatever their state, oldest first. */
  refundsOf(paymentId: string): Promise<RefundSummary[]>;
}

/**
 * The Permit2 approval of a custodial EVM wallet for one token (POST /payment/x402 paying a Permit2
 * offer): which payment records its `approve` transaction. One row per (network, wallet, token): the
 * claim is what lets exactly one request, on any instance, send the approval.
 */
export interface Permit2ApprovalRepository {
  /** The payment recording the wallet's approval of `token`; undefined when none was ever sent. */
  get(network: string, walletAddress: string, token: string): Promise<string | undefined>;
  /**
   * Names `paymentId` as the approval: a new row (`replacing` undefined), or in place of `replacing`, an
   * approval that ended without landing. False when another approval holds the row already.
   */
  claim(
    network: string,
    walletAddress: string,
    token: string,
    paymentId: string,
    replacing: string | undefined,
    at: number,
  ): Promise<boolean>;
}

/**
 * EVM nonce sequences, one per sender and network, kept in the database so that sends from one wallet
 * on any number of instances never share or skip a nonce.
 */
export interface NonceRepository {
  /**
   * The sender's next nonce, at least `floor` (the node's pending count: the sequence starts there and
   * catches up if the chain is ahead). Called inside the transaction that stores the payment signed with
   * it, so a nonce is taken exactly when its payment is stored.
   */
  allocate(network: string, address: string, floor: bigint): Promise<bigint>;
  /** Gives `nonce` back if it is still the last one allocated; false when a later one was allocated. */
  release(network: string, address: string, nonce: bigint): Promise<boolean>;
}

export interface ProofRepository {
  /** Records that the proof behind `proofKey` was used; false when it already was. Never undone. */
  consume(proofKey: string, paymentId: string, accountId: string, at: number): Promise<boolean>;
  /** Whether the proof behind `proofKey` was used; only `consume` decides a race. */
  isConsumed(proofKey: string): Promise<boolean>;
}

/**
 * The outbox. `seq` is assigned in commit order (on PostgreSQL `append` serialises the appending
 * transactions from the append to their commit), so a reader that has seen every event up to seq N
 * never finds a later-committed event below N: "everything after N" is a gap-free resume position.
 */
export interface EventRepository {
  append(event: Omit<EventRecord, 'seq'>): Promise<number>;
  /** The account's events after `afterSeq`, oldest first. */
  listAfter(accountId: string, afterSeq: number, limit: number): Promise<EventRecord[]>;
  /** Every account's events after `afterSeq`, oldest first: what one instance fans out. */
  listAllAfter(afterSeq: number, limit: number): Promise<EventRecord[]>;
  /**
   * As listAllAfter, without each event's `data`: what the webhook fan-out needs to route events to
   * endpoints, without reading and parsing every payload (a delivery reads its event when it is sent).
   */
  listHeadersAfter(afterSeq: number, limit: number): Promise<EventHeader[]>;
  /** The seq of the account's event `id`; undefined for an unknown id or another account's. */
  seqOf(accountId: string, id: string): Promise<number | undefined>;
  /** The highest seq committed so far (0 when there is none). */
  lastSeq(): Promise<number>;
  /**
   * Deletes up to `limit` events created before `before`, oldest first, except those a reader still
   * needs: after the outbox cursor `keepAfterCursor` (not fanned out to webhooks yet), or named by a
   * webhook delivery (which is sent, and redelivered, from its event). Returns how many.
   */
  deleteBefore(before: number, keepAfterCursor: string, limit: number): Promise<number>;
}

export interface WebhookRepository {
  insert(webhook: WebhookRecord): Promise<void>;
  get(id: string): Promise<WebhookRecord | undefined>;
  /** Oldest first. */
  listByAccount(accountId: string): Promise<WebhookRecord[]>;
  /** Every endpoint of these accounts, for the fan-out. */
  listForAccounts(accountIds: readonly string[]): Promise<WebhookRecord[]>;
  /** Deletes the endpoint and its delivery log; false when the account has no such endpoint. */
  delete(accountId: string, id: string): Promise<boolean>;
  /**
   * Disables an enabled endpoint at `at` for `reason`, and fails its pending deliveries with
   * `pendingError` (their leases left as they are: an attempt in flight records its own outcome).
   * False when there is no such endpoint or it is disabled already (the first reason stays).
   */
  disable(id: string, at: number, reason: string, pendingError: string): Promise<boolean>;
  /** Enables a disabled endpoint again at `at`; false when there is no such endpoint or it is enabled. */
  enable(id: string, at: number): Promise<boolean>;
}

export interface WebhookDeliveryRepository {
  /**
   * Takes the outbox cursor `name` for the rest of the transaction (a write, so a second instance
   * waits for this one's commit) and returns the seq it has reached. Call inside `Store.transaction`.
   */
  claimCursor(name: string): Promise<number>;
  advanceCursor(name: string, seq: number): Promise<void>;
  /** Inserts deliveries; one that exists for the same (webhook, event) is left as it is. */
  insertMany(deliveries: readonly WebhookDeliveryRecord[]): Promise<void>;
  get(id: string): Promise<WebhookDeliveryRecord | undefined>;
  /** The endpoint's deliveries, newest event first. */
  listByWebhook(webhookId: string, limit: number): Promise<WebhookDeliveryRecord[]>;
  /**
   * Leases up to `limit` pending deliveries due by `now` whose lease is free or lapsed to `owner`
   * until `until`: with several instances, one attempts each delivery at a time.
   */
  leaseDue(owner: string, now: number, until: number, limit: number): Promise<WebhookDeliveryRecord[]>;
  /** Writes an attempt's outcome and ends the lease, only while `owner` still holds it. */
  recordAttempt(id: string, owner: string, attempt: DeliveryAttempt): Promise<boolean>;
  /**
   * Ends `owner`'s lease without an attempt (nothing was sent): the delivery is left as it is, free to
   * be leased again. False when `owner` does not hold it.
   */
  release(id: string, owner: string): Promise<boolean>;
  /**
   * Makes a delivery due again now (manual redeliver), whatever its status. An attempt in flight keeps
   * its lease and records its outcome: it is the redelivery, and no other worker sends it meanwhile.
   */
  redeliver(id: string, now: number): Promise<WebhookDeliveryRecord | undefined>;
  /**
   * When the earliest pending delivery can next be leased, so the worker knows when to wake: its
   * `next_attempt_at`, or the end of its lease while a worker holds it (an attempt in flight).
   */
  nextDueAt(): Promise<number | undefined>;
  /** Deletes up to `limit` succeeded or failed deliveries created before `before`; never a pending one. */
  deleteFinishedBefore(before: number, limit: number): Promise<number>;
}

/** Background jobs that one instance at a time should run (e.g. retention). */
export interface JobLeaseRepository {
  /**
   * Takes the job `name` for `owner` until `until` if nobody holds it at `now` (never taken, or the
   * last lease ran out); false when another holder's lease is still running. Two instances claiming
   * at once: exactly one gets it.
   */
  claim(name: string, owner: string, now: number, until: number): Promise<boolean>;
}

export type IdempotencyClaim =
  | { readonly state: 'claimed' }
  | { readonly state: 'in_progress' }
  | { readonly state: 'mismatch' }
  | { readonly state: 'completed'; readonly status: number; readonly body: string };

export interface IdempotencyRepository {
  /**
   * Claims `key` for a request with `requestHash`. A lapsed claim (the first request's process died)
   * can be claimed again; the payment services recognise their own earlier work by the key.
   */
  claim(
    accountId: string,
    key: string,
    requestHash: string,
    now: number,
    lockedUntil: number,
  ): Promise<IdempotencyClaim>;
  /** Keeps a running request's claim alive (its heartbeat); a claim whose process died lapses. */
  extend(accountId: string, key: string, lockedUntil: number): Promise<void>;
  complete(accountId: string, key: string, status: number, body: string): Promise<void>;
  /** Forgets a claim whose request stored nothing (e.g. refused before it started). */
  release(accountId: string, key: string): Promise<void>;
  /** Deletes keys created before `before`; returns how many. */
  purge(before: number): Promise<number>;
}

export interface FacilitatorSignerRepository {
  /** False when the address is already there. */
  insert(signer: FacilitatorSignerRecord): Promise<boolean>;
  /** Oldest first. */
  list(family: ChainFamily): Promise<FacilitatorSignerRecord[]>;
}

/**
 * Which receipt answers for an x402 payload in local mode (POST /transaction/receive): one open
 * receipt per payload identity, so asking again, or twice at the same instant, gets the same one.
 */
export interface X402ReceiptRepository {
  /**
   * Makes `paymentId` the payload's receipt: when it has none (`previous` undefined), or in place of
   * `previous`, read before and no longer pending (compare-and-set). False when another claim won.
   */
  claim(identity: string, paymentId: string, previous: string | undefined, at: number): Promise<boolean>;
  /** The id of the payload's receipt, pending or not; undefined when none was claimed. */
  get(identity: string): Promise<string | undefined>;
}

/**
 * Per account, network and UTC day: the network fees the facilitator's fee payer paid (or holds
 * reserved) for that account's settlements. Amounts are atomic units of the native currency.
 */
export interface SponsoredFeeRepository {
  /**
   * Adds `amount` to the day's total if the total stays at most `limit`, atomically with respect to
   * every other reservation (call it inside the transaction that claims the settlement, so a rolled-back
   * claim takes its reservation with it). Returns the new total, or undefined when it would exceed
   * `limit` (nothing changed).
   */
  reserve(
    accountId: string,
    network: string,
    day: string,
    amount: bigint,
    limit: bigint,
    at: number,
  ): Promise<bigint | undefined>;
  /** Adds `delta` (negative: gives back) to the day's total, never below 0. */
  adjust(accountId: string, network: string, day: string, delta: bigint, at: number): Promise<void>;
  /** The day's total; 0 when nothing was charged. */
  spent(accountId: string, network: string, day: string): Promise<bigint>;
}

export interface SettlementRepository {
  /** Inserts the settlement; false when one with this key exists (the primary key decides a race). */
  claim(settlement: SettlementRecord): Promise<boolean>;
  /**
   * Reserves a buyer approval the facilitator funds and broadcasts (erc20ApprovalGasSponsoring) for
   * `settlementKey`; false when another settlement holds it (the primary key decides a race).
   */
  claimApproval(approvalKey: string, settlementKey: string, at: number): Promise<boolean>;
  /**
   * Gives back a key `settlementKey` holds through claimApproval (nothing when another holds it): the
   * payer's funding place once its funded settlement settled (see FacilitatorService.claim).
   */
  releaseApproval(approvalKey: string, settlementKey: string): Promise<void>;
  get(key: string): Promise<SettlementRecord | undefined>;
  /** The settlement whose recorded payment is `paymentId` (FinalityWatch resends its bytes after a reorg). */
  findByPayment(paymentId: string): Promise<SettlementRecord | undefined>;
  /**
   * Open settlements (claimed, submitted) unchanged since `updatedBefore`, least recently changed
   * first: those no settle call is looking at any more (SettlementFinisher).
   */
  listOpen(updatedBefore: number, limit: number): Promise<SettlementRecord[]>;
  /** Compare-and-set: moves it to `status` only from one of `from`; undefined when another writer did. */
  transition(
    key: string,
    from: readonly SettlementStatus[],
    status: SettlementStatus,
    changes: {
      readonly error?: string | null;
      readonly paymentId?: string | null;
      /** The transaction that carried the payment, when another than its own did (EVM). */
      readonly transactionId?: string;
      /** The fee now charged for it (same day as before); see SettlementRecord.sponsoredFee. */
      readonly sponsoredFee?: bigint;
      /** The erc20ApprovalGasSponsoring step as it now stands (SponsoredApprovalStep.voided). */
      readonly sponsoredApproval?: SponsoredApprovalStep;
    },
    at: number,
  ): Promise<SettlementRecord | undefined>;
}

export interface DashboardUserRepository {
  /** False when the email, or the account, already has a dashboard user; nothing is written then. */
  insert(user: DashboardUserRecord): Promise<boolean>;
  get(id: string): Promise<DashboardUserRecord | undefined>;
  findByEmail(email: string): Promise<DashboardUserRecord | undefined>;
  findByAccount(accountId: string): Promise<DashboardUserRecord | undefined>;
  setPassword(id: string, passwordHash: string, updatedAt: number): Promise<void>;
}

export interface DashboardSessionRepository {
  insert(session: DashboardSessionRecord): Promise<void>;
  /** The session and its user, unless unknown or expired at `now`. */
  findActive(
    idHash: string,
    now: number,
  ): Promise<{ session: DashboardSessionRecord; user: DashboardUserRecord } | undefined>;
  delete(idHash: string): Promise<void>;
  /** Logs a user out everywhere (a new password). */
  deleteByUser(userId: string): Promise<void>;
  /** Removes sessions expired at `now`; returns how many. */
  deleteExpired(now: number): Promise<number>;
}

/**
 * Spend policies of accounts and API keys, and the custodial spends counted against their rolling-day
 * caps (services/spending/spend-guard.ts). `keyId` null: the account's own policy.
 */
export interface SpendRepository {
  getPolicy(accountId: string, keyId: string | null): Promise<SpendPolicyRecord | undefined>;
  /** The account's policy and, with `keyId`, the key's: what binds a spend by that key, in one read. */
  policiesFor(accountId: string, keyId: string | null): Promise<SpendPolicyRecord[]>;
  /** Every policy of the account (its own first, then its keys' by key id). */
  listPolicies(accountId: string): Promise<SpendPolicyRecord[]>;
  /** Inserts or replaces the policy of (accountId, keyId). */
  putPolicy(policy: SpendPolicyRecord): Promise<void>;
  /** False when there was none. */
  deletePolicy(accountId: string, keyId: string | null): Promise<boolean>;
  /**
   * Takes the account's lock row of one asset for the rest of the transaction (PostgreSQL: a row lock
   * held to commit; SQLite: the single writer already is). Call inside `Store.transaction`, before
   * `spentSince`, so the sum read and the spend recorded after it are one step for every other spender.
   */
  lockAsset(accountId: string, network: string, asset: string | null, at: number): Promise<void>;
  /**
   * The account's spends of one asset created after `since` whose payments still count (not failed,
   * expired or reverted), with the key of each.
   */
  spentSince(
    accountId: string,
    network: string,
    asset: string | null,
    since: number,
  ): Promise<{ keyId: string | null; amount: bigint; createdAt: number }[]>;
  recordSpend(spend: SpendRecord): Promise<void>;
  /** Removes the account's spends of one asset created before `before` (past any rolling day). */
  pruneSpends(accountId: string, network: string, asset: string | null, before: number): Promise<void>;
}
