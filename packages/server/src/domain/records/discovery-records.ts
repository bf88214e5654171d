/**
 * One resource of the x402 `bazaar` discovery catalogue, as stored: what a seller declared in the
 * `bazaar` extension of a payment the built-in facilitator settled for its account.
 */
export interface DiscoveryRecord {
  readonly accountId: string;
  /** The resource's URL (with the seller's route template as its path, when it gave a valid one). */
  readonly resource: string;
  /** The MCP tool's name; '' for an HTTP resource. */
  readonly tool: string;
  readonly type: 'http' | 'mcp';
  readonly x402Version: number;
  readonly description: string | null;
  readonly mimeType: string | null;
  readonly serviceName: string | null;
  readonly tags: readonly string[] | null;
  /** The seller's `resource.iconUrl`, when one passed the listing's rules (services/facilitator/icon-url.ts). */
  readonly iconUrl: string | null;
  /** The accepted requirements' network, scheme and payTo (the listing's filters). */
  readonly network: string;
  readonly scheme: string;
  readonly payTo: string;
  /** The payment requirements the resource was last paid with, as the seller stated them. */
  readonly accepts: readonly Record<string, unknown>[];
  /** The extensions echoed in the listing: `{bazaar: {info, schema, routeTemplate?}}`. */
  readonly extensions: Readonly<Record<string, unknown>>;
  /** Lower-case text a search matches. */
  readonly searchText: string;
  readonly createdAt: number;
  readonly updatedAt: number;
}

/** Which catalogued resources a listing or search asks for. */
export interface DiscoveryQuery {
  /** One account's resources; undefined: every account's (the public view). */
  readonly accountId?: string | undefined;
  readonly type?: string | undefined;
  readonly network?: string | undefined;
  readonly scheme?: string | undefined;
  readonly payTo?: string | undefined;
  /** Lower-case words that must all occur in the resource's search text. */
  readonly words?: readonly string[] | undefined;
  /** Only resources last paid for at or after this time (ms): older entries are stale, not listed. */
  readonly updatedSince: number;
  readonly limit: number;
  readonly offset: number;
}

/** The bazaar catalogue (migration 0023). */
export interface DiscoveryRepository {
  /**
   * Writes the resource, replacing the account's row for the same resource and tool (the latest
   * declaration wins; `createdAt` stays the first one's). A new row is written only while the account has
   * fewer than `bound.maxPerAccount` rows updated at or after `bound.staleBefore`: false when it was full,
   * and nothing was written. The account's rows older than that are deleted first. The bound is exact:
   * declarations of new resources arriving at once, on any instance, are counted one after another.
   */
  upsert(
    record: DiscoveryRecord,
    bound: { readonly maxPerAccount: number; readonly staleBefore: number },
  ): Promise<boolean>;
  /** The page of resources the query names, newest first, and how many match in all. */
  list(query: DiscoveryQuery): Promise<{ items: DiscoveryRecord[]; total: number }>;
}
