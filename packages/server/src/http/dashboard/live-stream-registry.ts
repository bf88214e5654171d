/**
 * How many live payment lists one dashboard session may hold open at once, on one gateway instance.
 * A few browser tabs; each open stream holds a connection, a subscription and a timer, so a session
 * cannot pile them up without bound. The oldest one gives way to a new one (README, "The web dashboard").
 */
export const MAX_LIVE_STREAMS_PER_SESSION = 3;

/** Why the gateway ended a live stream; sent to the page in a `closed` event before the stream ends. */
export type LiveStreamEnd =
  /** A newer stream of the same session took its place; the page may resume when the user asks. */
  | 'replaced'
  /** The session is over (log-out, password change, expiry): the page must log in again. */
  | 'session-ended'
  /** The account's plan no longer includes the stream (PLAN_ACCESS, a plan change). */
  | 'forbidden'
  /** The gateway is shutting down; the browser reconnects by itself and resumes. */
  | 'shutdown';

interface OpenStream {
  readonly sessionId: string;
  readonly userId: string;
  readonly end: (why: LiveStreamEnd) => void;
}

/**
 * The live streams open on this instance, by session, oldest first: enforces the per-session limit and
 * ends a session's streams when the session ends here. (A session ended on another instance is noticed
 * by each stream's own periodic session check.)
 */
export class LiveStreamRegistry {
  private readonly streams = new Set<OpenStream>();

  /**
   * Registers a stream; when its session already holds the maximum, the oldest of those ends first.
   * Returns the function that unregisters it (call it when the stream ends, whatever ended it).
   */
  add(sessionId: string, userId: string, end: (why: LiveStreamEnd) => void): () => void {
    const ofSession = [...this.streams].filter((s) => s.sessionId === sessionId);
    for (const old of ofSession.slice(0, Math.max(0, ofSession.length - MAX_LIVE_STREAMS_PER_SESSION + 1))) {
      this.streams.delete(old);
      old.end('replaced');
    }
    const stream: OpenStream = { sessionId, userId, end };
    this.streams.add(stream);
    return () => this.streams.delete(stream);
  }

  countOf(sessionId: string): number {
    return [...this.streams].filter((s) => s.sessionId === sessionId).length;
  }

  endSession(sessionId: string): void {
    this.endWhere((s) => s.sessionId === sessionId, 'session-ended');
  }

  /** Every session of the user ended (a new password). */
  endUser(userId: string): void {
    this.endWhere((s) => s.userId === userId, 'session-ended');
  }

  endAll(): void {
    this.endWhere(() => true, 'shutdown');
  }

  private endWhere(which: (stream: OpenStream) => boolean, why: LiveStreamEnd): void {
    for (const stream of [...this.streams]) {
      if (!which(stream)) continue;
      this.streams.delete(stream);
      stream.end(why);
    }
  }
}
