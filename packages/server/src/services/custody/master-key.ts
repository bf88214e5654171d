import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../../config.ts';
import { MASTER_KEY_BYTES } from './secret-box.ts';

export const MASTER_KEY_FILE = 'master.key';

/**
 * The master key that seals custodial wallet keys and from which the proof attestation key is derived.
 *
 * GATE402_MASTER_KEY (32 bytes, base64 or hex) when set. Otherwise, on the embedded default (SQLite),
 * a key generated once into DATA_DIR/master.key with mode 0600, and a warning: whoever can read that
 * file can spend every custodial wallet. With PostgreSQL the key must be configured, since instances
 * that each generated their own could not open each other's wallets.
 */
export function loadMasterKey(
  config: Pick<Config, 'masterKey' | 'dataDir' | 'databaseUrl'>,
  warn: (message: string) => void,
): Uint8Array {
  if (config.masterKey !== undefined) return config.masterKey;
  if (config.databaseUrl !== undefined) {
    throw new Error(
      'GATE402_MASTER_KEY must be set when DATABASE_URL is set (every instance needs the same key)',
    );
  }
  const file = join(config.dataDir, MASTER_KEY_FILE);
  if (existsSync(file)) {
    const key = Buffer.from(readFileSync(file, 'utf8').trim(), 'base64');
    if (key.length !== MASTER_KEY_BYTES)
      throw new Error(`${file} does not hold a ${MASTER_KEY_BYTES}-byte key`);
    return new Uint8Array(key);
  }
  mkdirSync(config.dataDir, { recursive: true });
  const key = randomBytes(MASTER_KEY_BYTES);
  writeFileSync(file, `${key.toString('base64')}\n`, { mode: 0o600, flag: 'wx' });
  chmodSync(file, 0o600);
  warn(
    `generated a master key in ${file} (mode 0600); it protects every custodial wallet. ` +
      'Back it up, and set GATE402_MASTER_KEY in production.',
  );
  return new Uint8Array(key);
}
