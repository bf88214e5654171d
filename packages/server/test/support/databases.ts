import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { StorageLocation } from '../../src/store/open-store.ts';

/** PostgreSQL and Redis are used when their URLs are set (CI sets both); tests say so when skipped. */
export const DATABASE_URL = process.env.DATABASE_URL;
export const REDIS_URL = process.env.REDIS_URL;

export const SKIP_POSTGRES =
  DATABASE_URL === undefined ? 'DATABASE_URL is not set: PostgreSQL tests skipped' : false;
export const SKIP_REDIS = REDIS_URL === undefined ? 'REDIS_URL is not set: Redis tests skipped' : false;

export interface TempStorage {
  readonly location: StorageLocation;
  /** Removes the SQLite directory or drops the PostgreSQL schema. */
  dispose(): Promise<void>;
}

export function tempDir(prefix = 'gate402-test-'): { path: string; dispose(): void } {
  const path = mkdtempSync(join(tmpdir(), prefix));
  // Retried: a chain process a gateway started (anvil) may still write its state into the folder for a
  // moment after the gateway was stopped, and a removal racing it meets ENOTEMPTY.
  return {
    path,
    dispose: () => rmSync(path, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 }),
  };
}

export function tempSqlite(): TempStorage {
  const dir = tempDir();
  return {
    location: { kind: 'sqlite', file: join(dir.path, 'gate402.sqlite') },
    dispose: async () => dir.dispose(),
  };
}

/** A fresh schema in the test database, so tests never see each other's rows. */
export async function tempPostgres(): Promise<TempStorage> {
  if (DATABASE_URL === undefined) throw new Error('DATABASE_URL is not set');
  const schema = `t_${randomBytes(6).toString('hex')}`;
  await adminQuery(`create schema ${schema}`);
  return {
    location: { kind: 'postgres', url: DATABASE_URL, schema, poolSize: 4 },
    dispose: () => adminQuery(`drop schema ${schema} cascade`),
  };
}

async function adminQuery(text: string): Promise<void> {
  const client = new pg.Client({ connectionString: DATABASE_URL });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}
