import { useEffect, useRef, useState } from 'react';
import { ApiError, api, type PaymentEvent, type Session, setCsrfToken } from './api.ts';

const LIVE_URL = '/dashboard/api/payments/live';
/** How long to wait before opening a new stream after the gateway refused or ended one. */
const RETRY_MS = 3_000;

export type LiveState = 'connecting' | 'connected' | 'paused';

export interface LivePayments {
  readonly state: LiveState;
  /** Why the list is paused or reconnecting, in words for the page. */
  readonly notice: string | undefined;
  /** Opens the stream again after a pause, from the last event seen. */
  resume(): void;
}

/**
 * The account's payment events as they happen, resumed from the last one seen whenever the stream is
 * re-opened, so the list has no gap and no repeat across a dropped connection:
 * - a dropped connection is reopened by the browser itself, which sends Last-Event-ID;
 * - a stream the gateway refused (its answer was not a stream) is reopened here with `?since=<last id>`,
 *   after checking the session is still there; when that fails twice in a row before opening, the id is
 *   taken to be unknown to the gateway and the next stream starts afresh (`onFresh` then tells the page
 *   to reload what it shows);
 * - a stream closed because a newer one of this session replaced it (a few tabs at most) pauses until
 *   the user resumes, so two tabs never take turns closing each other.
 *
 * `onFresh` is also called when the first stream opens: events between the page's first load and the
 * subscription would otherwise be missing from what it shows.
 */
export function useLivePayments(onEvent: (event: PaymentEvent) => void, onFresh: () => void): LivePayments {
  const [state, setState] = useState<LiveState>('connecting');
  const [notice, setNotice] = useState<string>();
  const [opening, setOpening] = useState(0);
  const lastId = useRef<string | undefined>(undefined);
  const handlers = useRef({ onEvent, onFresh });
  handlers.current = { onEvent, onFresh };

  // biome-ignore lint/correctness/useExhaustiveDependencies: `opening` is the resume button's way to open again
  useEffect(() => {
    let source: EventSource | undefined;
    let retry: ReturnType<typeof setTimeout> | undefined;
    let stopped = false;
    let startAfresh = false;
    let refusedWithSince = 0;

    const open = () => {
      if (stopped) return;
      const since = startAfresh ? undefined : lastId.current;
      startAfresh = false;
      const current = new EventSource(
        since === undefined ? LIVE_URL : `${LIVE_URL}?since=${encodeURIComponent(since)}`,
      );
      source = current;
      let opened = false;
      current.onopen = () => {
        refusedWithSince = 0;
        setState('connected');
        setNotice(undefined);
        if (!opened && since === undefined) handlers.current.onFresh();
        opened = true;
      };
      current.addEventListener('payment', (message) => {
        const { data, lastEventId } = message as MessageEvent<string>;
        lastId.current = lastEventId;
        handlers.current.onEvent(JSON.parse(data) as PaymentEvent);
      });
      current.addEventListener('closed', (message) => {
        current.close();
        const { reason } = JSON.parse((message as MessageEvent<string>).data) as { reason: string };
        if (reason === 'replaced') {
          setState('paused');
          setNotice('Live updates paused: this list was opened in another tab or window.');
        } else {
          reopenLater(0);
        }
      });
      current.onerror = () => {
        if (stopped) return;
        setState('connecting');
        // CONNECTING: the connection dropped and the browser retries by itself, with Last-Event-ID.
        if (current.readyState !== EventSource.CLOSED) {
          setNotice('Connection lost; reconnecting…');
          return;
        }
        // CLOSED: the gateway answered something that is not a stream, and the browser gave up.
        if (!opened && since !== undefined && ++refusedWithSince >= 2) startAfresh = true;
        setNotice('Live updates unavailable; retrying…');
        reopenLater(RETRY_MS);
      };
    };

    /** Opens a new stream once the session is known to be alive (a 401 shows the log-in form instead). */
    const reopenLater = (delayMs: number) => {
      clearTimeout(retry);
      retry = setTimeout(() => {
        api<Session>('GET', '/session').then(
          (session) => {
            // After a password change in another tab this browser has a new session and CSRF token.
            setCsrfToken(session.csrfToken);
            open();
          },
          (error: unknown) => {
            if (!(error instanceof ApiError && error.status === 401)) reopenLater(RETRY_MS);
          },
        );
      }, delayMs);
    };

    setState('connecting');
    open();
    return () => {
      stopped = true;
      clearTimeout(retry);
      source?.close();
    };
  }, [opening]);

  return { state, notice, resume: () => setOpening((n) => n + 1) };
}
