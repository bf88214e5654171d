// The dashboard's users and sessions.

/** A person who logs in to the web dashboard; a way into exactly one account. */
export interface DashboardUserRecord {
  readonly id: string;
  readonly accountId: string;
  /** Lower-cased. */
  readonly email: string;
  /** `scrypt$N$r$p$salt$hash`; never the password. */
  readonly passwordHash: string;
  readonly createdAt: number;
  readonly updatedAt: number;
}

/** A logged-in browser. Only the SHA-256 of the cookie value is stored. */
export interface DashboardSessionRecord {
  readonly idHash: string;
  readonly userId: string;
  /** Sent back by the browser in a header on every state-changing request. */
  readonly csrfToken: string;
  readonly createdAt: number;
  readonly expiresAt: number;
}
