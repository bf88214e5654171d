import { EVENT_TYPES } from '../../domain/payment-status.ts';
import type { EventRecord } from '../../domain/records/event-records.ts';

/** What a connection asked to see: all of its account's events unless narrowed. */
export interface StreamFilter {
  /** Payments from or to one of these addresses; undefined: every wallet. */
  readonly wallets: ReadonlySet<string> | undefined;
  readonly types: ReadonlySet<string> | undefined;
}

export const EVERYTHING: StreamFilter = { wallets: undefined, types: undefined };

export interface SubscribeRequest {
  readonly filter: StreamFilter;
  readonly since: string | undefined;
}

const MAX_WALLETS = 100;
const EVENT_ID = /^evt_[0-9A-HJKMNP-TV-Z]{26}$/;

/**
 * Reads a `{"type":"subscribe", wallets?, types?, since?}` message. Problems come back per field, like
 * INVALID_PARAMETERS details on the HTTP API.
 */
export function parseSubscribe(
  message: Record<string, unknown>,
): { ok: true; value: SubscribeRequest } | { ok: false; details: Record<string, string> } {
  const details: Record<string, string> = {};
  const known = new Set(['type', 'wallets', 'types', 'since']);
  for (const key of Object.keys(message)) if (!known.has(key)) details[key] = 'is not a known field';
  const wallets = stringList(message.wallets, 'wallets', details, MAX_WALLETS, (w) => w.length <= 100);
  const types = stringList(message.types, 'types', details, EVENT_TYPES.length, (t) =>
    (EVENT_TYPES as readonly string[]).includes(t),
  );
  const since = message.since;
  if (since !== undefined && (typeof since !== 'string' || !EVENT_ID.test(since))) {
    details.since = 'must be an event id (evt_…)';
  }
  if (Object.keys(details).length > 0) return { ok: false, details };
  return {
    ok: true,
    value: {
      filter: {
        wallets: wallets === undefined ? undefined : new Set(wallets.map(addressKey)),
        types: types === undefined ? undefined : new Set(types),
      },
      since: since as string | undefined,
    },
  };
}

export function isEventId(value: string): boolean {
  return EVENT_ID.test(value);
}

export function matches(filter: StreamFilter, event: EventRecord): boolean {
  if (filter.types !== undefined && !filter.types.has(event.type)) return false;
  if (filter.wallets === undefined) return true;
  const { sender, recipient } = event.data;
  return (
    (typeof sender === 'string' && filter.wallets.has(addressKey(sender))) ||
    (typeof recipient === 'string' && filter.wallets.has(addressKey(recipient)))
  );
}

/** EVM addresses match in any letter case (they are stored checksummed); Solana's base58 is case-sensitive. */
function addressKey(address: string): string {
  return address.startsWith('0x') ? address.toLowerCase() : address;
}

function stringList(
  value: unknown,
  field: string,
  details: Record<string, string>,
  max: number,
  valid: (item: string) => boolean,
): string[] | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value) || value.length > max) {
    details[field] = `must be an array of at most ${max} strings`;
    return undefined;
  }
  // An empty list would match no event at all, silently; leaving the field out is how to ask for all.
  if (value.length === 0) {
    details[field] =
      `must name at least one ${field === 'types' ? 'event type' : 'wallet'}; leave it out for all`;
    return undefined;
  }
  const bad = value.findIndex((item) => typeof item !== 'string' || !valid(item));
  if (bad >= 0) {
    details[`${field}.${bad}`] =
      field === 'types'
        ? `must be one of ${EVENT_TYPES.join(', ')}`
        : 'must be an address of at most 100 characters';
    return undefined;
  }
  return value as string[];
}
