import { invalidParameters } from './gateway-error.ts';

/** At most this many characters (Unicode code points) in a wallet's label, after trimming. */
export const MAX_WALLET_LABEL_LENGTH = 64;

/**
 * Characters a label may not hold: control characters (C0, DEL, C1: a line break or an escape would
 * break a table, a CSV export or a terminal) and the bidirectional overrides and isolates, which can
 * make a label shown beside an address read as another address or another label.
 */
const FORBIDDEN = /[\p{Cc}\u202A-\u202E\u2066-\u2069]/u;

/**
 * A wallet label as the caller sent it, checked and trimmed: `undefined` (not sent) stays undefined, and
 * `null` or a text that is empty once trimmed is null (no label). Anything else that breaks the rule is
 * INVALID_PARAMETERS naming `label`.
 */
export function walletLabel(input: string | null | undefined): string | null | undefined {
  if (input === undefined || input === null) return input;
  const label = input.trim();
  if (label === '') return null;
  if (FORBIDDEN.test(label)) {
    throw invalidParameters({ label: 'must not contain control characters or bidirectional overrides' });
  }
  if ([...label].length > MAX_WALLET_LABEL_LENGTH) {
    throw invalidParameters({ label: `must be at most ${MAX_WALLET_LABEL_LENGTH} characters` });
  }
  return label;
}
