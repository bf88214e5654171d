import type { AccountRecord } from '../../src/domain/records/account-records.ts';

/** An account record for tests that need one in storage: `id` is also its name unless `overrides` says. */
export function aTestAccount(id: string, overrides: Partial<AccountRecord> = {}): AccountRecord {
  return { id, name: id, plan: 'standard', customRateLimit: null, createdAt: 1, updatedAt: 1, ...overrides };
}
