import { Ajv2020 } from 'ajv/dist/2020.js';
import type {
  DiscoveryQuery,
  DiscoveryRecord,
  DiscoveryRepository,
} from '../../domain/records/discovery-records.ts';
import { safeIconUrl } from './icon-url.ts';

/** The x402 extension this catalogue reads (specs/extensions/bazaar.md). */
export const BAZAAR = 'bazaar';

/**
 * What one seller may store in the catalogue. The extension is the seller's own words, written on every
 * settle: it is bounded before anything is parsed further, and an account holds a bounded number of
 * resources (a later declaration of the same resource replaces it and needs no room).
 */
export const DISCOVERY_BOUNDS = {
  /** `extensions.bazaar` (info, schema and route template) as JSON text. */
  extensionChars: 16_384,
  /** The settled payment requirements kept as the resource's `accepts`, as JSON text. */
  requirementsChars: 4_096,
  urlChars: 2_048,
  descriptionChars: 1_024,
  mimeTypeChars: 128,
  toolChars: 128,
  /** How deep the declared schema and info may nest. */
  depth: 32,
} as const;

export interface DiscoverySettings {
  /** X402_DISCOVERY_PUBLIC: whether GET /facilitator/discovery/resources answers without a key. */
  readonly publicListing: boolean;
  /** X402_DISCOVERY_MAX_PER_ACCOUNT: resources one account may have catalogued. */
  readonly maxPerAccount: number;
  /**
   * X402_DISCOVERY_MAX_AGE_DAYS, in ms: a resource not paid for again within it is stale — no longer
   * listed, no longer counted against the account's bound, and deleted when the account next catalogues
   * a new one. A listing is a claim that the resource sells now; a seller gone quiet stops being shown.
   */
  readonly maxAgeMs: number;
}

/** The `bazaar` entry of an EXTENSION-RESPONSES header (specs/extensions/bazaar.md). */
export type BazaarResponse =
  | { readonly status: 'success' | 'processing' }
  | { readonly status: 'rejected'; readonly rejectedReason: string };

/** One resource as GET /facilitator/discovery/resources lists it (x402's DiscoveryResource). */
export interface DiscoveryItem {
  resource: string;
  type: string;
  x402Version: number;
  accepts: Record<string, unknown>[];
  /** ISO 8601, as the stock @x402/extensions client types it. */
  lastUpdated: string;
  description?: string;
  mimeType?: string;
  serviceName?: string;
  tags?: string[];
  iconUrl?: string;
  extensions: Record<string, unknown>;
}

/** The listing's filters and page (GET /facilitator/discovery/resources and /search). */
export interface DiscoveryFilters {
  readonly type?: string | undefined;
  readonly payTo?: string | undefined;
  readonly scheme?: string | undefined;
  readonly network?: string | undefined;
  /** An extension key the resources must carry; every catalogued resource carries `bazaar` only. */
  readonly extensions?: string | undefined;
  readonly limit: number;
  readonly offset: number;
}

type Declaration =
  | { readonly ok: true; readonly record: Omit<DiscoveryRecord, 'accountId' | 'createdAt' | 'updatedAt'> }
  | { readonly ok: false; readonly reason: string };

const HTTP_METHODS = ['GET', 'HEAD', 'DELETE', 'POST', 'PUT', 'PATCH'];
const BODY_METHODS = ['POST', 'PUT', 'PATCH'];
const BODY_TYPES = ['json', 'form-data', 'text'];
const MCP_TRANSPORTS = ['streamable-http', 'sse'];
/** specs/extensions/bazaar.md, "routeTemplate Validation Rules". */
const ROUTE_TEMPLATE = /^\/[a-zA-Z0-9_/:.\-~%]+$/;
/** A service name or tag: printable ASCII, 1 to 32 characters (the stock helpers' rule). */
const SHORT_ASCII = /^[\x20-\x7e]{1,32}$/;

/**
 * The `bazaar` discovery catalogue of the built-in facilitator. A resource is catalogued for the
 * account whose key settled a payment for it, from the `bazaar` extension the buyer echoed from the
 * seller's 402 into the payment payload, and only once that settle succeeded: a declaration riding on a
 * payment that failed, is still pending or was only verified is never listed (anyone can verify a
 * payload for free; a listing costs a payment). The declaration is checked as the spec asks — `info`
 * against the seller's own JSON Schema (draft 2020-12) and against the spec's own rules for `input` —
 * and bounded (DISCOVERY_BOUNDS); a rejected one is reported in the settle answer's EXTENSION-RESPONSES
 * header and never fails the payment.
 *
 * Nothing checks that the account owns the resource's URL: a listing says "an account of this gateway was
 * paid for this URL with these requirements", no more. The public view lists every account's resources
 * side by side (one per account and resource), the per-account view the caller's own.
 */
export class DiscoveryCatalogue {
  constructor(
    private readonly deps: {
      readonly repository: DiscoveryRepository;
      readonly settings: DiscoverySettings;
      readonly now: () => number;
    },
  ) {}

  get publicListing(): boolean {
    return this.deps.settings.publicListing;
  }

  /**
   * What a verify answers for the payload's bazaar declaration (undefined when it carries none):
   * `processing` when it would be catalogued once the payment settles, `rejected` with the reason.
   */
  check(paymentPayload: unknown, paymentRequirements: unknown): BazaarResponse | undefined {
    const declared = declarationOf(paymentPayload, paymentRequirements);
    if (declared === undefined) return undefined;
    return declared.ok ? { status: 'processing' } : { status: 'rejected', rejectedReason: declared.reason };
  }

  /** Catalogues the payload's declaration for `accountId`, whose settle of it succeeded. */
  async catalogue(
    accountId: string,
    paymentPayload: unknown,
    paymentRequirements: unknown,
  ): Promise<BazaarResponse | undefined> {
    const declared = declarationOf(paymentPayload, paymentRequirements);
    if (declared === undefined) return undefined;
    if (!declared.ok) return { status: 'rejected', rejectedReason: declared.reason };
    const at = this.deps.now();
    const stored = await this.deps.repository.upsert(
      { ...declared.record, accountId, createdAt: at, updatedAt: at },
      { maxPerAccount: this.deps.settings.maxPerAccount, staleBefore: at - this.deps.settings.maxAgeMs },
    );
    return stored
      ? { status: 'success' }
      : {
          status: 'rejected',
          rejectedReason: `this account has ${this.deps.settings.maxPerAccount} resources catalogued, the most this facilitator keeps; a resource already catalogued is still updated`,
        };
  }

  /** A page of the catalogue: the account's own resources, or (accountId undefined) the public view. */
  async list(
    accountId: string | undefined,
    filters: DiscoveryFilters,
    words?: readonly string[],
  ): Promise<{ items: DiscoveryItem[]; total: number }> {
    if (filters.extensions !== undefined && filters.extensions !== BAZAAR) return { items: [], total: 0 };
    const query: DiscoveryQuery = {
      accountId,
      type: filters.type,
      network: filters.network,
      scheme: filters.scheme,
      payTo: filters.payTo,
      words,
      updatedSince: this.deps.now() - this.deps.settings.maxAgeMs,
      limit: filters.limit,
      offset: filters.offset,
    };
    const { items, total } = await this.deps.repository.list(query);
    return { items: items.map(toItem), total };
  }
}

function toItem(r: DiscoveryRecord): DiscoveryItem {
  return {
    resource: r.resource,
    type: r.type,
    x402Version: r.x402Version,
    accepts: [...r.accepts],
    lastUpdated: new Date(r.updatedAt).toISOString(),
    ...(r.description === null ? {} : { description: r.description }),
    ...(r.mimeType === null ? {} : { mimeType: r.mimeType }),
    ...(r.serviceName === null ? {} : { serviceName: r.serviceName }),
    ...(r.tags === null ? {} : { tags: [...r.tags] }),
    ...(r.iconUrl === null ? {} : { iconUrl: r.iconUrl }),
    extensions: { ...r.extensions },
  };
}

/** The search words of a query: lower-case, at most 8 of at most 64 characters each. */
export function searchWords(query: string): string[] {
  return query
    .toLowerCase()
    .split(/\s+/)
    .filter((w) => w.length > 0)
    .slice(0, 8)
    .map((w) => w.slice(0, 64));
}

/**
 * The payload's bazaar declaration, read and checked; undefined when it has none. Only x402 v2 payloads
 * carry extensions (the spec does not ask facilitators to read v1's outputSchema).
 */
function declarationOf(paymentPayload: unknown, paymentRequirements: unknown): Declaration | undefined {
  const payload = objectOr(paymentPayload);
  const extension = objectOr(payload?.extensions)?.[BAZAAR];
  if (payload === undefined || extension === undefined) return undefined;
  const reject = (reason: string): Declaration => ({ ok: false, reason });
  if (payload.x402Version !== 2) return reject('only x402 v2 payloads are catalogued');
  const text = jsonText(extension);
  if (text === undefined) return reject('extensions.bazaar is not JSON');
  if (text.length > DISCOVERY_BOUNDS.extensionChars)
    return reject(
      `extensions.bazaar is ${text.length} characters of JSON; at most ${DISCOVERY_BOUNDS.extensionChars} are catalogued`,
    );
  const bazaar = objectOr(extension);
  if (bazaar === undefined) return reject('extensions.bazaar must be an object with info and schema');
  const info = objectOr(bazaar.info);
  const schema = objectOr(bazaar.schema);
  if (info === undefined || schema === undefined)
    return reject('extensions.bazaar must be an object with info and schema');
  if (depthOf(bazaar) > DISCOVERY_BOUNDS.depth)
    return reject(`extensions.bazaar nests deeper than ${DISCOVERY_BOUNDS.depth} levels`);
  const schemaError = againstSchema(info, schema);
  if (schemaError !== undefined) return reject(schemaError);
  const input = objectOr(info.input);
  if (input === undefined) return reject('info.input must be an object');
  const output = info.output === undefined ? undefined : objectOr(info.output);
  if (info.output !== undefined && (output === undefined || typeof output.type !== 'string'))
    return reject('info.output must be an object with a string type');

  const resource = objectOr(payload.resource);
  const url = resourceUrl(resource?.url);
  if (typeof url === 'string') return reject(url.slice(1));
  const requirements = objectOr(paymentRequirements);
  const requirementsText = jsonText(requirements);
  if (requirements === undefined || requirementsText === undefined)
    return reject('the payment requirements are not an object');
  if (requirementsText.length > DISCOVERY_BOUNDS.requirementsChars)
    return reject(
      `the payment requirements are ${requirementsText.length} characters of JSON; at most ${DISCOVERY_BOUNDS.requirementsChars} are catalogued`,
    );
  const [network, scheme, payTo] = [requirements.network, requirements.scheme, requirements.payTo];
  if (typeof network !== 'string' || typeof scheme !== 'string' || typeof payTo !== 'string')
    return reject('the payment requirements name no network, scheme or payTo');

  let type: 'http' | 'mcp';
  let tool = '';
  let path = url.pathname;
  const echoed: Record<string, unknown> = { info, schema };
  if (input.type === 'http') {
    type = 'http';
    const method = input.method;
    if (typeof method !== 'string' || !HTTP_METHODS.includes(method))
      return reject(`info.input.method must be one of ${HTTP_METHODS.join(', ')}`);
    if (BODY_METHODS.includes(method) && !BODY_TYPES.includes(input.bodyType as string))
      return reject(`info.input.bodyType must be one of ${BODY_TYPES.join(', ')} for ${method}`);
    const template = routeTemplateOf(bazaar.routeTemplate);
    if (template !== undefined) {
      path = template;
      echoed.routeTemplate = template;
    }
  } else if (input.type === 'mcp') {
    type = 'mcp';
    // The stock helpers name it toolName; the spec's examples `tool`.
    const name = input.toolName ?? input.tool;
    if (typeof name !== 'string' || name.length === 0 || name.length > DISCOVERY_BOUNDS.toolChars)
      return reject(`info.input.toolName must be 1 to ${DISCOVERY_BOUNDS.toolChars} characters`);
    tool = name;
    if (objectOr(input.inputSchema) === undefined) return reject('info.input.inputSchema must be an object');
    if (input.transport !== undefined && !MCP_TRANSPORTS.includes(input.transport as string))
      return reject(`info.input.transport must be one of ${MCP_TRANSPORTS.join(', ')}`);
  } else {
    return reject('info.input.type must be "http" or "mcp"');
  }

  const description = boundedText(resource?.description, DISCOVERY_BOUNDS.descriptionChars);
  const mimeType = boundedText(resource?.mimeType, DISCOVERY_BOUNDS.mimeTypeChars);
  const serviceName =
    typeof resource?.serviceName === 'string' && SHORT_ASCII.test(resource.serviceName)
      ? resource.serviceName
      : null;
  const tags = tagsOf(resource?.tags);
  // The catalogue's key: the resource without its query (described by info.input) or fragment.
  const key = `${url.origin}${path}`;
  return {
    ok: true,
    record: {
      resource: key,
      tool,
      type,
      x402Version: 2,
      description,
      mimeType,
      serviceName,
      tags,
      iconUrl: safeIconUrl(resource?.iconUrl),
      network,
      scheme,
      payTo,
      accepts: [requirements],
      extensions: { [BAZAAR]: echoed },
      searchText: [key, tool, description ?? '', serviceName ?? '', ...(tags ?? [])].join(' ').toLowerCase(),
    },
  };
}

/** The resource's URL: absolute http(s), without credentials; a string starting `!` says why not. */
function resourceUrl(value: unknown): URL | `!${string}` {
  if (typeof value !== 'string' || value.length === 0) return '!resource.url is missing';
  if (value.length > DISCOVERY_BOUNDS.urlChars)
    return `!resource.url is longer than ${DISCOVERY_BOUNDS.urlChars} characters`;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return '!resource.url is not an absolute URL';
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return '!resource.url must be http or https';
  if (url.username !== '' || url.password !== '') return '!resource.url must not carry credentials';
  return url;
}

/**
 * The seller's route template when it passes the spec's rules (after percent-decoding, no `..` and no
 * `://`); otherwise undefined and the concrete path is catalogued, as the spec says.
 */
function routeTemplateOf(value: unknown): string | undefined {
  if (typeof value !== 'string' || value.length > DISCOVERY_BOUNDS.urlChars || !ROUTE_TEMPLATE.test(value))
    return undefined;
  let decoded: string;
  try {
    decoded = decodeURIComponent(value);
  } catch {
    return undefined;
  }
  return decoded.includes('..') || decoded.includes('://') ? undefined : value;
}

/** The seller's tags: printable ASCII of 1 to 32 characters each, the first 5 (the stock helpers' rule). */
function tagsOf(value: unknown): string[] | null {
  if (!Array.isArray(value)) return null;
  const tags = value.filter((t): t is string => typeof t === 'string' && SHORT_ASCII.test(t)).slice(0, 5);
  return tags.length === 0 ? null : tags;
}

/**
 * Why `info` does not meet the seller's JSON Schema, or undefined when it does. The schema is a
 * stranger's: compiled afresh each time (nothing of it is kept), with `pattern` and `patternProperties`
 * left out (a regular expression from outside could take seconds to run: a ReDoS) and formats not
 * checked; references it cannot resolve here (nothing is fetched) reject it.
 */
function againstSchema(info: Record<string, unknown>, schema: Record<string, unknown>): string | undefined {
  const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: false });
  ajv.removeKeyword('pattern');
  ajv.removeKeyword('patternProperties');
  let valid: boolean;
  let first: string | undefined;
  try {
    const validate = ajv.compile(schema);
    valid = validate(info) === true;
    const error = validate.errors?.[0];
    if (error !== undefined) first = `${error.instancePath || '(root)'} ${error.message ?? 'is invalid'}`;
  } catch (error) {
    return `extensions.bazaar.schema is not a JSON Schema this facilitator can use: ${error instanceof Error ? error.message.slice(0, 200) : 'unknown'}`;
  }
  return valid ? undefined : `info failed schema validation: ${first ?? 'invalid'}`;
}

function depthOf(value: unknown, depth = 0): number {
  if (depth > DISCOVERY_BOUNDS.depth || typeof value !== 'object' || value === null) return depth;
  let deepest = depth;
  for (const child of Object.values(value)) {
    deepest = Math.max(deepest, depthOf(child, depth + 1));
    if (deepest > DISCOVERY_BOUNDS.depth) break;
  }
  return deepest;
}

function boundedText(value: unknown, max: number): string | null {
  return typeof value === 'string' && value.length > 0 ? value.slice(0, max) : null;
}

function objectOr(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

/** JSON text of a parsed value (undefined if it cannot be written, e.g. nested past the stack). */
function jsonText(value: unknown): string | undefined {
  try {
    return JSON.stringify(value);
  } catch {
    return undefined;
  }
}
