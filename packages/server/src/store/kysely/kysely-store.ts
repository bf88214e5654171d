import { type Kysely, sql } from 'kysely';
import type { Database } from '../database-schema.ts';
import type { Repositories, Store } from '../store.ts';
import { KyselyAccountRepository } from './account-repository.ts';
import { KyselyApiKeyRepository } from './api-key-repository.ts';
import { KyselyEventRepository } from './event-repository.ts';
import { KyselyIdempotencyRepository } from './idempotency-repository.ts';
import { KyselyNonceRepository } from './nonce-repository.ts';
import { KyselyPaymentRepository } from './payment-repository.ts';
import { KyselyProofRepository } from './proof-repository.ts';
import { KyselyWalletRepository } from './wallet-repository.ts';

/** The Store on SQL, one code path for SQLite and PostgreSQL. */
export class KyselyStore implements Store {
  readonly accounts;
  readonly apiKeys;
  readonly wallets;
  readonly payments;
  readonly proofs;
  readonly events;
  readonly idempotency;
  readonly nonces;

  constructor(private readonly db: Kysely<Database>) {
    const repositories = repositoriesOn(db);
    this.accounts = repositories.accounts;
    this.apiKeys = repositories.apiKeys;
    this.wallets = repositories.wallets;
    this.payments = repositories.payments;
    this.proofs = repositories.proofs;
    this.events = repositories.events;
    this.idempotency = repositories.idempotency;
    this.nonces = repositories.nonces;
  }

  transaction<T>(work: (tx: Repositories) => Promise<T>): Promise<T> {
    return this.db.transaction().execute((trx) => work(repositoriesOn(trx)));
  }

  async ping(): Promise<void> {
    await sql`select 1`.execute(this.db);
  }

  async close(): Promise<void> {
    await this.db.destroy();
  }
}

function repositoriesOn(db: Kysely<Database>): Repositories {
  return {
    accounts: new KyselyAccountRepository(db),
    apiKeys: new KyselyApiKeyRepository(db),
    wallets: new KyselyWalletRepository(db),
    payments: new KyselyPaymentRepository(db),
    proofs: new KyselyProofRepository(db),
    events: new KyselyEventRepository(db),
    idempotency: new KyselyIdempotencyRepository(db),
    nonces: new KyselyNonceRepository(db),
  };
}
