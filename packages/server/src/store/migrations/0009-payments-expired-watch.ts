import type { Kysely, Migration } from 'kysely';

/**
 * The reconciler looks at recently expired local-mode payments on every pass, for a transaction that
 * lands late (PaymentRepository.leaseExpired): an index on (status, updated_at) reads only those,
 * however many expired payments have piled up over the years.
 */
export const paymentsExpiredWatch: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createIndex('payments_status_updated')
      .on('payments')
      .columns(['status', 'updated_at'])
      .execute();
  },
};
