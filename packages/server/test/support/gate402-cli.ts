import { spawnSync } from 'node:child_process';
import { GATE402_COMMAND } from './gate402-command.ts';

/**
 * Runs `gate402 ARGS --json` on the storage in `dataDir`, as an operator would, and answers its exit
 * code, its JSON (undefined when it printed nothing) and its standard error. The command never sees the
 * CI's DATABASE_URL or REDIS_URL: it works on the SQLite file of `dataDir` only.
 */
export function gate402Json(dataDir: string, args: string[], env: Record<string, string> = {}) {
  const result = gate402Text(dataDir, [...args, '--json'], env);
  return {
    code: result.code,
    json: result.stdout === '' ? undefined : JSON.parse(result.stdout),
    stderr: result.stderr,
  };
}

/** As gate402Json, without --json: what an operator reads. */
export function gate402Text(dataDir: string, args: string[], env: Record<string, string> = {}) {
  const { DATABASE_URL: _d, REDIS_URL: _r, ...inherited } = process.env;
  const result = spawnSync(process.execPath, [...GATE402_COMMAND, ...args], {
    env: { ...inherited, DATA_DIR: dataDir, LOG_LEVEL: 'warn', ...env },
    encoding: 'utf8',
    timeout: 30_000,
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}
