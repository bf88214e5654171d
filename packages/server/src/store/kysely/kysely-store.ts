import { type Kysely, sql, type Transaction } from 'kysely';
import type { EventRecord } from '../../domain/records/event-records.ts';
import { tracer, withSpan } from '../../telemetry/tracing.ts';
import type { Database } from '../database-schema.ts';
import type { Repositories, Store } from '../store.ts';
import { KyselyAccountRepository } from './account-repository.ts';
import { KyselyApiKeyRepository } from './api-key-repository.ts';
import { KyselyDashboardSessionRepository } from './dashboard-session-repository.ts';
import { KyselyDashboardUserRepository } from './dashboard-user-repository.ts';
import { KyselyDiscoveryRepository } from './discovery-repository.ts';
import { KyselyEventRepository } from './event-repository.ts';
import { KyselyFacilitatorSignerRepository } from './facilitator-signer-repository.ts';
import { GroupCommit } from './group-commit.ts';
import { KyselyIdempotencyRepository } from './idempotency-repository.ts';
import { KyselyJobLeaseRepository } from './job-lease-repository.ts';
import { KyselyNonceRepository } from './nonce-repository.ts';
import { KyselyPaymentRepository } from './payment-repository.ts';
import { KyselyPaymentVolumeRepository } from './payment-volume-repository.ts';
import { KyselyPermit2ApprovalRepository } from './permit2-approval-repository.ts';
import { KyselyProofRepository } from './proof-repository.ts';
import { KyselySettlementRepository } from './settlement-repository.ts';
import { KyselySpendRepository } from './spend-repository.ts';
import { KyselySponsoredFeeRepository } from './sponsored-fee-repository.ts';
import { KyselyWalletChallengeRepository } from './wallet-challenge-repository.ts';
import { KyselyWalletRepository } from './wallet-repository.ts';
import { KyselyWebhookDeliveryRepository } from './webhook-delivery-repository.ts';
import { KyselyWebhookRepository } from './webhook-repository.ts';
import { KyselyX402ReceiptRepository } from './x402-receipt-repository.ts';

/** The Store on SQL, one code path for SQLite and PostgreSQL. */
export class KyselyStore implements Store {
  readonly accounts;
  readonly apiKeys;
  readonly wallets;
  readonly walletChallenges;
  readonly payments;
  readonly proofs;
  readonly events;
  readonly idempotency;
  readonly nonces;
  readonly webhooks;
  readonly webhookDeliveries;
  readonly jobLeases;
  private readonly eventListeners = new Set<(events: readonly EventRecord[]) => void>();
  readonly facilitatorSigners;
  readonly settlements;
  readonly sponsoredFees;
  readonly x402Receipts;
  readonly dashboardUsers;
  readonly dashboardSessions;
  readonly spending;
  readonly paymentVolume;
  readonly discovery;
  readonly permit2Approvals;

  /** SQLite only: concurrent transactions share one commit (see GroupCommit). */
  private readonly groupCommit: GroupCommit | undefined;

  /** SQLite only; see Store.changeToken. */
  private readonly token: (() => string | undefined) | undefined;

  /** SQLite only; see Store.durable. */
  private readonly flushed: (() => Promise<void>) | undefined;

  constructor(
    private readonly db: Kysely<Database>,
    options: {
      groupCommit?: boolean;
      changeToken?: (() => string | undefined) | undefined;
      durable?: (() => Promise<void>) | undefined;
    } = {},
  ) {
    this.groupCommit = options.groupCommit === true ? new GroupCommit(db) : undefined;
    this.token = options.changeToken;
    this.flushed = options.durable;
    // Outside a transaction an append commits by itself (and is durable once it returns), so listeners
    // are told at once.
    const repositories = repositoriesOn(db, (event) => this.eventsCommitted([event]));
    this.accounts = repositories.accounts;
    this.apiKeys = repositories.apiKeys;
    this.wallets = repositories.wallets;
    this.walletChallenges = repositories.walletChallenges;
    this.payments = repositories.payments;
    this.proofs = repositories.proofs;
    this.events = repositories.events;
    this.idempotency = repositories.idempotency;
    this.nonces = repositories.nonces;
    this.webhooks = repositories.webhooks;
    this.webhookDeliveries = repositories.webhookDeliveries;
    this.jobLeases = repositories.jobLeases;
    this.facilitatorSigners = repositories.facilitatorSigners;
    this.settlements = repositories.settlements;
    this.sponsoredFees = repositories.sponsoredFees;
    this.x402Receipts = repositories.x402Receipts;
    this.dashboardUsers = repositories.dashboardUsers;
    this.dashboardSessions = repositories.dashboardSessions;
    this.spending = repositories.spending;
    this.paymentVolume = repositories.paymentVolume;
    this.discovery = repositories.discovery;
    this.permit2Approvals = repositories.permit2Approvals;
  }

  async transaction<T>(work: (tx: Repositories) => Promise<T>): Promise<T> {
    const appended: EventRecord[] = [];
    // One span per transaction when tracing is on (a payment written in it names itself on it). The work
    // is bound to the span: SQLite's group commit runs it in the context of whoever opened the batch.
    const result = await withSpan(
      'db.transaction',
      'internal',
      { 'db.operation.name': 'transaction' },
      () => {
        const unit = tracer().bind((trx: Transaction<Database>) =>
          work(repositoriesOn(trx, (event) => appended.push(event))),
        );
        return this.groupCommit === undefined
          ? this.db.transaction().execute(unit)
          : this.groupCommit.run(unit);
      },
    );
    // Only after the commit, which is durable once the transaction resolves (DurableSqliteDialect).
    if (appended.length > 0) this.eventsCommitted(appended);
    return result;
  }

  onEventsCommitted(listener: (events: readonly EventRecord[]) => void): () => void {
    this.eventListeners.add(listener);
    return () => this.eventListeners.delete(listener);
  }

  private eventsCommitted(events: readonly EventRecord[]): void {
    for (const listener of this.eventListeners) listener(events);
  }

  changeToken(): string | undefined {
    return this.token?.();
  }

  async durable(): Promise<void> {
    await this.flushed?.();
  }

  async ping(): Promise<void> {
    await sql`select 1`.execute(this.db);
  }

  async close(): Promise<void> {
    await this.db.destroy();
  }
}

function repositoriesOn(db: Kysely<Database>, eventAppended: (event: EventRecord) => void): Repositories {
  return {
    accounts: new KyselyAccountRepository(db),
    apiKeys: new KyselyApiKeyRepository(db),
    wallets: new KyselyWalletRepository(db),
    walletChallenges: new KyselyWalletChallengeRepository(db),
    payments: new KyselyPaymentRepository(db),
    proofs: new KyselyProofRepository(db),
    events: new KyselyEventRepository(db, eventAppended),
    idempotency: new KyselyIdempotencyRepository(db),
    nonces: new KyselyNonceRepository(db),
    webhooks: new KyselyWebhookRepository(db),
    webhookDeliveries: new KyselyWebhookDeliveryRepository(db),
    jobLeases: new KyselyJobLeaseRepository(db),
    facilitatorSigners: new KyselyFacilitatorSignerRepository(db),
    settlements: new KyselySettlementRepository(db),
    sponsoredFees: new KyselySponsoredFeeRepository(db),
    x402Receipts: new KyselyX402ReceiptRepository(db),
    dashboardUsers: new KyselyDashboardUserRepository(db),
    dashboardSessions: new KyselyDashboardSessionRepository(db),
    spending: new KyselySpendRepository(db),
    paymentVolume: new KyselyPaymentVolumeRepository(db),
    discovery: new KyselyDiscoveryRepository(db),
    permit2Approvals: new KyselyPermit2ApprovalRepository(db),
  };
}
