import { createHash, randomBytes } from 'node:crypto';
import { GatewayError, invalidParameters } from '../../domain/gateway-error.ts';
import { newId } from '../../domain/ids.ts';
import type { AccountRecord } from '../../domain/records/account-records.ts';
import type { DashboardUserRecord } from '../../domain/records/dashboard-records.ts';
import type { RateLimiter } from '../../ratelimit/rate-limiter.ts';
import type { Store } from '../../store/store.ts';
import { decoyHash, hashPassword, verifyPassword } from './password-hash.ts';

export const MIN_PASSWORD_LENGTH = 10;
export const MAX_PASSWORD_LENGTH = 200;
export const MAX_EMAIL_LENGTH = 254;
/**
 * Deliberately loose: one @, something on each side, no spaces or control characters (NUL cannot even be
 * stored in PostgreSQL text). Whether mail arrives is not our concern.
 */
const EMAIL_SHAPE = /^[^\s@\p{Cc}]+@[^\s@\p{Cc}]+$/u;

export interface DashboardAuthOptions {
  readonly signupEnabled: boolean;
  readonly sessionTtlMs: number;
  /**
   * Log-in attempts per minute per (email, client address); ten times as many per client address; and
   * failures per email (five times as many) past which only addresses that have not failed may try.
   */
  readonly loginAttemptsPerMinute: number;
  /** How often expired sessions are deleted; default {@link DEFAULT_SESSION_PURGE_INTERVAL_MS}. */
  readonly sessionPurgeIntervalMs?: number;
  readonly now?: () => number;
}

/** Expired sessions never open anything (findActive checks the time); purging only keeps the table small. */
export const DEFAULT_SESSION_PURGE_INTERVAL_MS = 10 * 60_000;

/** A new session: the cookie value (shown to the browser only) and its CSRF token. */
export interface NewSession {
  readonly token: string;
  readonly csrfToken: string;
  readonly expiresAt: number;
  readonly user: DashboardUserRecord;
}

export interface ActiveSession {
  /** The stored SHA-256 of the cookie value: names the session without being able to open it. */
  readonly id: string;
  readonly user: DashboardUserRecord;
  readonly csrfToken: string;
  readonly expiresAt: number;
}

/**
 * Sign-up, log-in and sessions of the web dashboard. A dashboard user is a way into one account; the
 * account (keys, wallets, payments) is the same one the API and the CLI see.
 */
export class DashboardAuthService {
  private readonly now: () => number;

  constructor(
    private readonly store: Store,
    private readonly rateLimiter: RateLimiter,
    private readonly options: DashboardAuthOptions,
  ) {
    this.now = options.now ?? Date.now;
  }

  get signupEnabled(): boolean {
    return this.options.signupEnabled;
  }

  get sessionPurgeIntervalMs(): number {
    return this.options.sessionPurgeIntervalMs ?? DEFAULT_SESSION_PURGE_INTERVAL_MS;
  }

  /**
   * A new Standard account with this user, logged in. Limited per client address, like log-in.
   *
   * A taken email gets a generic refusal (INVALID_PARAMETERS on `email`, never "registered") after the
   * same work as a success (the attempt is counted and the password hashed either way), so neither the
   * words nor the time say more than they must. Something shows anyway: sign-up logs in at once and the
   * gateway sends no mail, so "no account was made" is visible whatever the wording; the per-address
   * limit is what makes probing many emails slow (README, "The web dashboard").
   */
  async signUp(input: { email: string; password: string }, clientAddress: string): Promise<NewSession> {
    if (!this.options.signupEnabled) {
      throw new GatewayError('FORBIDDEN', {
        message: 'Sign-up is switched off on this gateway; ask its operator for an account.',
      });
    }
    const email = validEmail(input.email);
    validPassword(input.password);
    // Counted once the input is valid and before the costly hash: a typo costs no attempt.
    await this.limit(
      [[`dashboard-signup:ip:${clientAddress}`, this.options.loginAttemptsPerMinute]],
      'sign-up',
    );
    const passwordHash = await hashPassword(input.password);
    const at = this.now();
    const account: AccountRecord = {
      id: newId('acct', at),
      name: email.slice(0, 100),
      plan: 'standard',
      customRateLimit: null,
      createdAt: at,
      updatedAt: at,
    };
    const user: DashboardUserRecord = {
      id: newId('user', at),
      accountId: account.id,
      email,
      passwordHash,
      createdAt: at,
      updatedAt: at,
    };
    // Account and user together or neither: a taken email leaves no orphan account behind.
    const created = await this.store
      .transaction(async (tx) => {
        await tx.accounts.insert(account);
        if (!(await tx.dashboardUsers.insert(user))) throw new EmailTaken();
        return true;
      })
      .catch((error: unknown) => {
        if (error instanceof EmailTaken) return false;
        throw error;
      });
    if (!created) throw invalidParameters({ email: SIGNUP_REFUSED });
    return this.openSession(user);
  }

  /**
   * Guessing is limited without letting anyone lock a user out (README, "The web dashboard"):
   * 1. attempts per (email, client address): `loginAttemptsPerMinute` — one address guessing one account;
   * 2. attempts per client address: ten times that — one address trying many accounts;
   * 3. failures per email from everywhere: five times that a minute. Past it, an address that has already
   *    failed for this email this minute is refused before its password is checked; an address that has
   *    not is still let in with the right password. So many addresses guessing one account get one guess
   *    each a minute, and the account's owner, from an address that has not failed, is never locked out.
   * 1 and 2 are counted before the password is checked, however the attempt turns out.
   */
  async logIn(input: { email: string; password: string }, clientAddress: string): Promise<NewSession> {
    const email = input.email.trim().toLowerCase();
    const limit = this.options.loginAttemptsPerMinute;
    const pair = `${email}|${clientAddress}`;
    await this.limit(
      [
        [`dashboard-login:email-address:${pair}`, limit],
        [`dashboard-login:ip:${clientAddress}`, limit * 10],
      ],
      'log-in',
    );
    const emailFailures = `dashboard-login:failed-email:${email}`;
    const pairFailures = `dashboard-login:failed:${pair}`;
    const [failedForEmail, failedHere] = await Promise.all([
      this.rateLimiter.used(emailFailures),
      this.rateLimiter.used(pairFailures),
    ]).catch((error: unknown) => {
      throw unavailable(error);
    });
    if (failedForEmail.used >= limit * 5 && failedHere.used > 0) {
      const retryAfter = Math.max(1, Math.ceil((failedForEmail.resetAt - this.now()) / 1000));
      throw new GatewayError('RATE_LIMIT_EXCEEDED', {
        message: `Too many failed log-ins for this email; retry in ${retryAfter} s.`,
        retryAfter,
      });
    }
    // No login has an email of another shape: such text is not even looked up.
    const user = EMAIL_SHAPE.test(email) ? await this.store.dashboardUsers.findByEmail(email) : undefined;
    const matches = await verifyPassword(input.password, user?.passwordHash ?? (await decoyHash()));
    if (user === undefined || !matches) {
      await Promise.all([
        this.rateLimiter.hit(emailFailures, Number.MAX_SAFE_INTEGER),
        this.rateLimiter.hit(pairFailures, Number.MAX_SAFE_INTEGER),
      ]).catch((error: unknown) => {
        throw unavailable(error);
      });
      throw new GatewayError('UNAUTHORIZED', { message: 'Email or password is wrong.' });
    }
    return this.openSession(user);
  }

  /** The session behind a cookie value, unless unknown or expired. */
  async session(token: string): Promise<ActiveSession | undefined> {
    if (token.length === 0 || token.length > 100) return undefined;
    const found = await this.store.dashboardSessions.findActive(hashToken(token), this.now());
    if (found === undefined) return undefined;
    return {
      id: found.session.idHash,
      user: found.user,
      csrfToken: found.session.csrfToken,
      expiresAt: found.session.expiresAt,
    };
  }

  /**
   * A logged-in user's own password change. The current password is required, so a session left open on
   * someone else's screen cannot take the account over; attempts are limited per user like log-ins.
   * Every session of the user ends, and the caller gets a new one: a session stolen before the change
   * dies with the old password, and the browser that changed it stays logged in.
   */
  async changePassword(
    session: ActiveSession,
    input: { currentPassword: string; newPassword: string },
  ): Promise<NewSession> {
    validPassword(input.newPassword, 'newPassword');
    if (input.newPassword === input.currentPassword) {
      throw invalidParameters({ newPassword: 'must differ from the current password' });
    }
    await this.limit(
      [[`dashboard-password:user:${session.user.id}`, this.options.loginAttemptsPerMinute]],
      'password change',
    );
    // The stored hash, not the session's copy: another browser may have changed it meanwhile.
    const user = await this.store.dashboardUsers.get(session.user.id);
    if (user === undefined || !(await verifyPassword(input.currentPassword, user.passwordHash))) {
      throw invalidParameters({ currentPassword: 'is not your current password' });
    }
    const passwordHash = await hashPassword(input.newPassword);
    const at = this.now();
    await this.store.dashboardUsers.setPassword(user.id, passwordHash, at);
    await this.store.dashboardSessions.deleteByUser(user.id);
    return this.openSession({ ...user, passwordHash, updatedAt: at });
  }

  /** Deletes the sessions expired by now; the session purge job (workers/session-purge-job.ts) runs it every {@link sessionPurgeIntervalMs}. */
  purgeExpiredSessions(): Promise<number> {
    return this.store.dashboardSessions.deleteExpired(this.now());
  }

  async logOut(token: string): Promise<void> {
    await this.store.dashboardSessions.delete(hashToken(token));
  }

  /**
   * For the operator (CLI): gives the account a dashboard login with this email, or a new password to
   * its existing one. Every open session of that user ends, so a leaked session dies with the old password.
   */
  async setPassword(input: { accountId: string; email?: string | undefined; password: string }): Promise<{
    user: DashboardUserRecord;
    created: boolean;
  }> {
    validPassword(input.password);
    const account = await this.store.accounts.get(input.accountId);
    if (account === undefined) {
      throw new GatewayError('NOT_FOUND', { message: `No account ${input.accountId}.` });
    }
    const passwordHash = await hashPassword(input.password);
    const at = this.now();
    const existing = await this.store.dashboardUsers.findByAccount(account.id);
    if (existing !== undefined) {
      if (input.email !== undefined && validEmail(input.email) !== existing.email) {
        throw invalidParameters({ email: `the account's dashboard login is ${existing.email}` });
      }
      await this.store.dashboardUsers.setPassword(existing.id, passwordHash, at);
      await this.store.dashboardSessions.deleteByUser(existing.id);
      return { user: { ...existing, passwordHash, updatedAt: at }, created: false };
    }
    if (input.email === undefined) {
      throw invalidParameters({ email: 'is required: the account has no dashboard login yet' });
    }
    const user: DashboardUserRecord = {
      id: newId('user', at),
      accountId: account.id,
      email: validEmail(input.email),
      passwordHash,
      createdAt: at,
      updatedAt: at,
    };
    if (!(await this.store.dashboardUsers.insert(user))) {
      throw new GatewayError('EMAIL_ALREADY_REGISTERED', {
        message: 'This email already logs in to another account.',
      });
    }
    return { user, created: true };
  }

  /**
   * Counts one attempt against each (subject, limit) and refuses with 429 when any is over. Fails closed
   * like API requests: when the shared counter (Redis) is unreachable, 503 rather than unlimited guessing.
   */
  private async limit(counters: readonly (readonly [string, number])[], what: string): Promise<void> {
    const decisions = await Promise.all(
      counters.map(([subject, limit]) => this.rateLimiter.hit(subject, limit)),
    ).catch((error: unknown) => {
      throw unavailable(error);
    });
    const refused = decisions.find((decision) => !decision.allowed);
    if (refused !== undefined) {
      throw new GatewayError('RATE_LIMIT_EXCEEDED', {
        message: `Too many ${what} attempts; retry in ${refused.resetSeconds} s.`,
        retryAfter: refused.resetSeconds,
      });
    }
  }

  private async openSession(user: DashboardUserRecord): Promise<NewSession> {
    const token = randomBytes(32).toString('base64url');
    const csrfToken = randomBytes(32).toString('base64url');
    const at = this.now();
    const expiresAt = at + this.options.sessionTtlMs;
    await this.store.dashboardSessions.insert({
      idHash: hashToken(token),
      userId: user.id,
      csrfToken,
      createdAt: at,
      expiresAt,
    });
    return { token, csrfToken, expiresAt, user };
  }
}

class EmailTaken extends Error {}

/** Fails closed: when the shared counter (Redis) is unreachable, 503 rather than unlimited guessing. */
function unavailable(error: unknown): GatewayError {
  return new GatewayError('SERVICE_UNAVAILABLE', {
    message: 'Rate limiting is unavailable; retry shortly.',
    retryAfter: 1,
    cause: error,
  });
}

/** The one answer to a sign-up whose email cannot be used, taken or not (see signUp). */
export const SIGNUP_REFUSED = 'cannot be used to sign up here; if you already have an account, log in';

/** Sessions are stored by hash: a copy of the table opens no browser session. */
function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

function validEmail(raw: string): string {
  const email = raw.trim().toLowerCase();
  if (email.length > MAX_EMAIL_LENGTH || !EMAIL_SHAPE.test(email)) {
    throw invalidParameters({ email: 'must be an email address' });
  }
  return email;
}

function validPassword(password: string, field = 'password'): void {
  if (password.length < MIN_PASSWORD_LENGTH || password.length > MAX_PASSWORD_LENGTH) {
    throw invalidParameters({
      [field]: `must be ${MIN_PASSWORD_LENGTH} to ${MAX_PASSWORD_LENGTH} characters`,
    });
  }
}
