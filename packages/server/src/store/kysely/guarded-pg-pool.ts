import type { PostgresPool, PostgresPoolClient } from 'kysely';
import type pg from 'pg';
import { StorageUnavailableError } from '../storage-unavailable.ts';

/**
 * How long past the server's statement_timeout a query may stay unanswered before its connection is
 * taken for dead: a healthy server cancels the statement itself at the limit and answers, so only a
 * connection whose server or network went silent (a black-holed host, a stalled proxy) reaches this.
 */
export const DEAD_CONNECTION_GRACE_MS = 1_000;

export interface GuardedPoolLimits {
  /** Per statement, on the client; 0: none (migrations, which may run long). */
  readonly statementTimeoutMs: number;
}

/**
 * Kysely's view of a node-postgres pool, guarded so that storage trouble never takes the process down
 * and never holds a caller for long:
 * - The pool and every connection it opens get an `'error'` listener. node-postgres emits `'error'` on
 *   a connection the server terminated (a restart, `pg_terminate_backend`, `idle_session_timeout`), idle
 *   or busy, and Node exits on an `'error'` nobody listens to.
 * - A connection that failed, or did not answer a statement within its limit, is handed back to the
 *   pool as broken, so the pool closes it and opens a fresh one for the next caller; it is never reused.
 * - Failures of the connection rather than of the statement (refused, reset, terminated, timed out,
 *   server shutting down or out of connections) become StorageUnavailableError: nothing was kept, and
 *   the caller is answered 503 with retryAfter. Other errors (a constraint, bad SQL) pass unchanged.
 */
export function guardedPool(
  pool: pg.Pool,
  limits: GuardedPoolLimits,
  onProblem: (message: string, error: Error) => void,
): PostgresPool {
  /** Connections to hand back as broken; pg marks most failures itself, a silent one only we see. */
  const broken = new WeakSet<pg.PoolClient>();
  // An idle connection failed: pg-pool has already dropped it and opens another when one is needed.
  // The connection's own listener below reports it; this one only keeps the process alive.
  pool.on('error', () => {});
  pool.on('connect', (client) => {
    client.on('error', (error) => {
      broken.add(client as pg.PoolClient);
      onProblem('a PostgreSQL connection failed; it is replaced', error);
    });
  });
  const clientTimeoutMs =
    limits.statementTimeoutMs > 0 ? limits.statementTimeoutMs + DEAD_CONNECTION_GRACE_MS : 0;

  return {
    async connect(): Promise<PostgresPoolClient> {
      let client: pg.PoolClient;
      try {
        client = await pool.connect();
      } catch (error) {
        throw new StorageUnavailableError('PostgreSQL cannot be reached', { cause: error });
      }
      return guardedClient(client, broken, clientTimeoutMs);
    },
    end: () => pool.end(),
  };
}

function guardedClient(
  client: pg.PoolClient,
  broken: WeakSet<pg.PoolClient>,
  timeoutMs: number,
): PostgresPoolClient {
  const query = async (text: string, parameters: readonly unknown[]) => {
    if (broken.has(client)) throw new StorageUnavailableError('the PostgreSQL connection failed');
    const running = client.query(text, parameters as unknown[]);
    let timer: NodeJS.Timeout | undefined;
    try {
      if (timeoutMs === 0) return await running;
      return await Promise.race([
        running,
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => {
            // Its answer may still come, on a connection nobody can trust to be in step any more.
            broken.add(client);
            reject(new StorageUnavailableError(`PostgreSQL did not answer within ${timeoutMs} ms`));
          }, timeoutMs);
        }),
      ]);
    } catch (error) {
      if (error instanceof StorageUnavailableError) throw error;
      if (!isConnectionFailure(error)) throw error;
      broken.add(client);
      throw new StorageUnavailableError('the PostgreSQL connection failed', { cause: error });
    } finally {
      clearTimeout(timer);
    }
  };
  return {
    // Kysely's overload for cursors is not used (the dialect is built without one).
    query: query as unknown as PostgresPoolClient['query'],
    // With an error, pg-pool closes the connection (destroying its socket if a statement is still out)
    // instead of putting it back; pg also refuses to pool one it saw fail.
    release: () => client.release(broken.has(client) ? new Error('broken connection') : undefined),
  };
}

/** SQLSTATE classes and codes that describe the connection or the server, not the statement. */
const UNAVAILABLE_SQLSTATE = /^(08|53|58)|^57P0[1-5]$|^57014$|^25P03$/;
/** Socket errors from Node. */
const SOCKET_ERRORS = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);
/** node-postgres's own messages for a connection that ended or never opened (they carry no code). */
const DRIVER_MESSAGES =
  /Connection terminated|not queryable|timeout exceeded when trying to connect|connection timeout|Query read timeout/i;

/**
 * A failure of the connection or the server, after which the statement may be tried again elsewhere:
 * 08xxx connection exceptions, 53xxx out of resources (too many connections), 58xxx system errors,
 * 57P01–57P05 (terminated by an administrator, a crash or a restart, idle_session_timeout), 57014 (the
 * statement_timeout, or a cancel), 25P03 (idle_in_transaction_session_timeout), socket errors, and the
 * driver's messages for a closed or timed-out connection.
 */
export function isConnectionFailure(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string') {
    if (code.length === 5 && UNAVAILABLE_SQLSTATE.test(code)) return true;
    if (SOCKET_ERRORS.has(code)) return true;
  }
  return DRIVER_MESSAGES.test(error.message);
}
