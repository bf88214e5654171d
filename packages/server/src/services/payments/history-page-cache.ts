import { createHash } from 'node:crypto';

/** A history page as sent: its JSON text, encoded once, and the entity tag of that text. */
export interface RenderedPage {
  /** UTF-8 JSON: kept encoded, so a page served again is neither encoded nor copied again. */
  readonly body: Buffer;
  /** A strong entity tag (RFC 9110 §8.8.3), quoted: a digest of `body`. */
  readonly etag: string;
}

/** A kept page, with the history version and total it was read at. */
export interface KeptPage {
  readonly version: number;
  readonly total: number;
  readonly page: RenderedPage;
  /**
   * The store's change token (Store.changeToken) under which `version` and `total` were read and
   * nothing was written since, or undefined: while the token is unchanged they need not be read again.
   */
  token: string | undefined;
}

/** Pages kept, and their bytes in all: a 50-entry page is ~18 KB. */
const DEFAULT_CAPACITY = 1_024;
const DEFAULT_MAX_BYTES = 32 * 1024 * 1024;

/**
 * Rendered GET /payment/history pages, each kept under the history version (Store HistoryVersion) it
 * was read at, so a page polled again and again is answered as prepared JSON instead of reading 50 rows
 * and serializing 50 entries (#31: ~650 column values a page turned into JavaScript values).
 *
 * A kept page is served only while the wallet's version read for this request equals the one it was
 * kept under. The version is read before the page (HistoryPageCache.page's caller does), and every write
 * that changes a page raises it in its own transaction, on any instance: a page kept under version v was
 * read after v was, so it shows every write v counts, and a later write makes the version differ. A page
 * may show more than its version (a write committed between the two reads): it is then merely read
 * again next time. Keys hold the account, so one account's page is never another's.
 *
 * Bounded by pages and by bytes: past either, the page kept longest ago goes.
 *
 * On SQLite the version is not even read while the store's change token (Store.changeToken: any
 * write to the file, by any process, changes it) is what it was when the version was last read.
 */
export class HistoryPageCache {
  private readonly entries = new Map<string, KeptPage>();
  private bytes = 0;

  constructor(
    private readonly capacity = DEFAULT_CAPACITY,
    private readonly maxBytes = DEFAULT_MAX_BYTES,
  ) {}

  /** The page kept under `key`, whatever its version: the caller compares (KeptPage.version). */
  get(key: string): KeptPage | undefined {
    return this.entries.get(key);
  }

  /** Encodes `text` (once), keeps it under `key` at `version`, and returns the page as sent. */
  keep(key: string, read: Omit<KeptPage, 'page'>, text: string): RenderedPage {
    const body = Buffer.from(text);
    const page = { body, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"` };
    this.forget(key);
    if (this.capacity === 0 || body.length > this.maxBytes) return page;
    while (this.entries.size >= this.capacity || this.bytes + body.length > this.maxBytes) {
      const oldest = this.entries.keys().next().value;
      if (oldest === undefined) break;
      this.forget(oldest);
    }
    this.entries.set(key, { ...read, page });
    this.bytes += body.length;
    return page;
  }

  private forget(key: string): void {
    const entry = this.entries.get(key);
    if (entry === undefined) return;
    this.entries.delete(key);
    this.bytes -= entry.page.body.length;
  }
}

/**
 * Whether an If-None-Match header value matches `etag` (RFC 9110 §13.1.2: weak comparison, `*` matches
 * any current representation, a list matches if any member does).
 */
export function noneMatch(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  const opaque = etag.startsWith('W/') ? etag.slice(2) : etag;
  for (const part of header.split(',')) {
    const tag = part.trim();
    if (tag === '*' || (tag.startsWith('W/') ? tag.slice(2) : tag) === opaque) return true;
  }
  return false;
}
