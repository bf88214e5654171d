import { accessSync, constants, statSync } from 'node:fs';
import { isIP } from 'node:net';
import { resolve } from 'node:path';
import { CHAIN_FAMILIES } from './domain/address.ts';
import { isNetworkId, type NetworkId } from './domain/network.ts';
import { isPlan, PLANS } from './domain/plan.ts';
import { DEFAULT_PLAN_ACCESS, type Feature, isFeature, type PlanAccess } from './domain/plan-access.ts';
import { DEFAULT_SEND_AMOUNT_BOUNDS, type SendAmountBoundsTable } from './domain/send-amount-bounds.ts';
import {
  DEFAULT_FEE_BUDGET,
  DEFAULT_MAX_OPEN_UPTO_CHANNELS,
  DEFAULT_MAX_UNSETTLED_APPROVAL_FUNDINGS,
  DEFAULT_MAX_UPTO_CHANNEL_RENT,
  DEFAULT_MIN_SETTLE_AMOUNT,
} from './domain/sponsored-fees.ts';
import { STORAGE_LIMIT_DEFAULTS } from './store/storage-limits.ts';

/**
 * The gateway's configuration: the only reader of process.env.
 * One table below declares every setting (name, default, parser, description); the Config type is
 * derived from it, and `gate402 config` / the README list the same table.
 */
type Parser<T> = (raw: string) => T;

interface Setting<T> {
  readonly env: string;
  readonly description: string;
  /** Used when the variable is unset or empty; `undefined` means "not configured". */
  readonly fallback: (env: Env) => T;
  readonly parse: Parser<T>;
}

type Env = Readonly<Record<string, string | undefined>>;

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export const LOG_FORMATS = ['json', 'pretty'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

export const SETTINGS = {
  port: setting({
    env: 'PORT',
    description: 'TCP port of the HTTP API.',
    fallback: () => 8402,
    parse: integerIn(0, 65_535),
  }),
  host: setting({
    env: 'HOST',
    description: 'Address to listen on; 0.0.0.0 to accept connections from other machines.',
    fallback: () => '127.0.0.1',
    parse: (raw) => raw,
  }),
  tlsCertFile: setting<string | undefined>({
    env: 'TLS_CERT_FILE',
    description:
      'PEM file of the certificate the gateway serves HTTPS and WSS with (may hold its intermediate certificates after it, as a fullchain.pem does). Set with TLS_KEY_FILE, or neither: unset, plain HTTP. Read again on SIGHUP (see docs/tls.md).',
    fallback: () => undefined,
    parse: readableFile,
  }),
  tlsKeyFile: setting<string | undefined>({
    env: 'TLS_KEY_FILE',
    description:
      "PEM file of the certificate's private key, unencrypted (keep it readable by the gateway's user only). Set with TLS_CERT_FILE, or neither. Read again on SIGHUP.",
    fallback: () => undefined,
    parse: readableFile,
  }),
  tlsCaFile: setting<string | undefined>({
    env: 'TLS_CA_FILE',
    description:
      "PEM file of intermediate CA certificates sent after TLS_CERT_FILE's certificate, for a certificate file that holds the certificate alone. Only with TLS_CERT_FILE. Read again on SIGHUP.",
    fallback: () => undefined,
    parse: readableFile,
  }),
  dataDir: setting({
    env: 'DATA_DIR',
    description: 'Directory for the SQLite file and local state of the embedded default.',
    fallback: () => resolve('data'),
    parse: (raw) => resolve(raw),
  }),
  databaseUrl: setting<string | undefined>({
    env: 'DATABASE_URL',
    description: 'PostgreSQL connection URL. Unset: a SQLite file in DATA_DIR.',
    fallback: () => undefined,
    parse: urlWithProtocol(['postgres:', 'postgresql:']),
  }),
  databaseConnectTimeoutMs: setting({
    env: 'DATABASE_CONNECT_TIMEOUT_MS',
    description:
      'PostgreSQL: time limit of opening a connection, and of waiting for a free one when the pool is busy; past it the request answers 503 SERVICE_UNAVAILABLE.',
    fallback: () => STORAGE_LIMIT_DEFAULTS.connectTimeoutMs,
    parse: integerIn(100, 120_000),
  }),
  databaseStatementTimeoutMs: setting({
    env: 'DATABASE_STATEMENT_TIMEOUT_MS',
    description:
      'PostgreSQL: time limit of one statement (the server cancels it; a connection silent 1 s longer is replaced); the request answers 503 SERVICE_UNAVAILABLE. Migrations have none.',
    fallback: () => STORAGE_LIMIT_DEFAULTS.statementTimeoutMs,
    parse: integerIn(100, 600_000),
  }),
  sqliteBusyTimeoutMs: setting({
    env: 'SQLITE_BUSY_TIMEOUT_MS',
    description:
      "SQLite: how long a write waits for another process's lock on the same file (an instance, the CLI) before the request answers 503 SERVICE_UNAVAILABLE.",
    fallback: () => STORAGE_LIMIT_DEFAULTS.sqliteBusyTimeoutMs,
    parse: integerIn(0, 600_000),
  }),
  redisUrl: setting<string | undefined>({
    env: 'REDIS_URL',
    description:
      'Redis URL for rate limits and payment-event wake-ups shared by every instance. Unset: in-process.',
    fallback: () => undefined,
    parse: urlWithProtocol(['redis:', 'rediss:']),
  }),
  solanaRpcUrls: setting<readonly string[]>({
    env: 'SOLANA_RPC_URL',
    description:
      'Solana JSON-RPC endpoint (mainnet, devnet, …), or several separated by commas: the first that answers is used, the others take over when it fails. Unset: the embedded localnet starts.',
    fallback: () => [],
    parse: urlList(['http:', 'https:']),
  }),
  solanaWsUrls: setting<readonly string[]>({
    env: 'SOLANA_WS_URL',
    description:
      'Solana PubSub endpoint, or several separated by commas: the slot subscription moves to the next when one fails or goes silent, and back to an earlier one within 30 s of its recovery. Unset: each SOLANA_RPC_URL with ws:// or wss://.',
    fallback: () => [],
    parse: urlList(['ws:', 'wss:']),
  }),
  localnetPort: setting({
    env: 'LOCALNET_PORT',
    description: 'RPC port of the embedded Solana localnet; its WebSocket listens on the next port.',
    fallback: () => 8899,
    parse: integerIn(0, 65_534),
  }),
  localnetSlotMs: setting({
    env: 'LOCALNET_SLOT_MS',
    description: 'Slot length of the embedded Solana localnet, in milliseconds.',
    fallback: () => 400,
    parse: integerIn(10, 60_000),
  }),
  masterKey: setting<Uint8Array | undefined>({
    env: 'GATE402_MASTER_KEY',
    description:
      'Master key (32 bytes, base64 or hex) sealing custodial wallet keys. Unset on SQLite: generated into DATA_DIR/master.key. Required with DATABASE_URL.',
    fallback: () => undefined,
    parse: key32,
  }),
  evmRpcUrls: setting<readonly EvmRpcUrl[]>({
    env: 'EVM_RPC_URLS',
    description:
      'JSON object: CAIP-2 id → EVM JSON-RPC URL, or several URLs (a list, or one string separated by commas) tried in order, e.g. {"eip155:8453":["https://a…","https://b…"]}; the first network is the default EVM network. Unset: the embedded anvil starts.',
    fallback: () => [],
    parse: parseEvmRpcUrls,
  }),
  anvilPort: setting({
    env: 'ANVIL_PORT',
    description: 'RPC (HTTP and WebSocket) port of the embedded anvil EVM chain.',
    fallback: () => 8545,
    parse: integerIn(0, 65_535),
  }),
  anvilBlockTime: setting({
    env: 'ANVIL_BLOCK_TIME',
    description:
      'Seconds between empty blocks on the embedded anvil, so block heights advance and payments reach finalized (two blocks later) on a quiet chain; 0: a block per transaction only, and nothing finalizes on a quiet chain.',
    fallback: () => 1,
    parse: integerIn(0, 3_600),
  }),
  authCacheMs: setting({
    env: 'AUTH_CACHE_MS',
    description:
      'How long an instance trusts an authenticated API key before asking storage again; a key revoked elsewhere stops working within this time. 0: ask every time.',
    fallback: () => 1_000,
    parse: integerIn(0, 60_000),
  }),
  confirmTimeoutMs: setting({
    env: 'PAYMENT_CONFIRM_TIMEOUT_MS',
    description: 'How long POST /payment/send waits for `confirmed` before answering `submitted`.',
    fallback: () => 20_000,
    parse: integerIn(0, 120_000),
  }),
  proofMaxAgeSeconds: setting({
    env: 'PROOF_MAX_AGE_SECONDS',
    description: 'How old a gate402 payment proof may be when a seller redeems it.',
    fallback: () => 3_600,
    parse: integerIn(10, 30 * 24 * 3_600),
  }),
  rpcTimeoutMs: setting({
    env: 'RPC_TIMEOUT_MS',
    description:
      'Time limit of one call to a chain RPC endpoint; an endpoint slower than this counts as down and the next one is asked.',
    fallback: () => 8_000,
    parse: integerIn(100, 120_000),
  }),
  rpcDownMs: setting({
    env: 'RPC_DOWN_MS',
    description:
      'How long a chain RPC endpoint that failed (refused, timed out, HTTP error) is skipped before it is tried again; while every endpoint of a network is skipped, requests needing it answer 503 CHAIN_UNAVAILABLE at once.',
    fallback: () => 2_000,
    parse: integerIn(100, 600_000),
  }),
  reconcileIntervalMs: setting({
    env: 'RECONCILE_INTERVAL_MS',
    description: 'How often the background worker moves open payments forward (resend, confirm, expire).',
    fallback: () => 1_000,
    parse: integerIn(50, 60_000),
  }),
  logLevel: setting({
    env: 'LOG_LEVEL',
    description: `One of ${LOG_LEVELS.join(', ')}.`,
    fallback: () => 'info' as (typeof LOG_LEVELS)[number],
    parse: oneOf(LOG_LEVELS),
  }),
  logFormat: setting<LogFormat | undefined>({
    env: 'LOG_FORMAT',
    description:
      'json: one JSON object per line (for log collectors); pretty: one human-readable line per entry (time, level, message, fields). Unset: pretty when standard output is a terminal, else json.',
    fallback: () => undefined,
    parse: oneOf(LOG_FORMATS),
  }),
  bodyLimitBytes: setting({
    env: 'BODY_LIMIT_BYTES',
    description: 'Largest request body accepted, in bytes; larger bodies get 413.',
    fallback: () => 64 * 1024,
    parse: integerIn(1024, 16 * 1024 * 1024),
  }),
  planAccess: setting<PlanAccess>({
    env: 'PLAN_ACCESS',
    description:
      'JSON object: plan → list of features it may call, replacing the default table (docs/api-keys-and-plans.md, "Plans and rate limits").',
    fallback: () => DEFAULT_PLAN_ACCESS,
    parse: parsePlanAccess,
  }),
  demoAccount: setting({
    env: 'GATE402_DEMO',
    description:
      'When storage has no account yet, create a demo account on the plan granting the most features (Enterprise, every feature, by default) and print its API key and a dashboard log-in once, to stdout only. Default: true on SQLite, false on PostgreSQL.',
    fallback: (env) => !env.DATABASE_URL,
    parse: boolean,
  }),
  trustProxy: setting<TrustProxy>({
    env: 'TRUST_PROXY',
    description:
      "Reverse proxies in front of the gateway whose X-Forwarded-For/-Proto/-Host are believed: their number (1 for one reverse proxy), or their addresses and CIDRs separated by commas (e.g. 10.0.0.0/8,127.0.0.1). Unset: none. `true` is refused: it would take the client's own X-Forwarded-For as its address.",
    fallback: () => false,
    parse: parseTrustProxy,
  }),
  requestTimeoutMs: setting({
    env: 'REQUEST_TIMEOUT_MS',
    description:
      'Time a client has to send a whole request, headers and body; a slower one gets 408 and its connection is closed.',
    fallback: () => 10_000,
    parse: integerIn(100, 600_000),
  }),
  keepAliveTimeoutMs: setting({
    env: 'KEEP_ALIVE_TIMEOUT_MS',
    description:
      "How long an idle keep-alive connection stays open for its next request; longer than a load balancer's own idle timeout in front of the gateway.",
    fallback: () => 72_000,
    parse: integerIn(100, 600_000),
  }),
  maxConnectionsPerAddress: setting({
    env: 'MAX_CONNECTIONS_PER_ADDRESS',
    description:
      'Connections (HTTP and WebSocket) one client address may hold open at once; more are closed at once. Connections from a proxy trusted by TRUST_PROXY are not capped here. 0: no cap.',
    fallback: () => 512,
    parse: integerIn(0, 1_000_000),
  }),
  streamMaxUnauthenticated: setting({
    env: 'STREAM_MAX_UNAUTHENTICATED',
    description:
      'Payment stream connections that may wait for their auth message at once on one instance (and a tenth of that, at least 1, per client address); another upgrade without credentials is refused with 429.',
    fallback: () => 1_000,
    parse: integerIn(1, 1_000_000),
  }),
  x402LocalnetAsDevnet: setting({
    env: 'X402_LOCALNET_AS_DEVNET',
    description:
      "The built-in x402 facilitator also serves the embedded Solana localnet under Solana devnet's CAIP-2 id (and v1 name `solana-devnet`), since stock @x402/svm clients accept only mainnet, devnet and testnet; they reach the localnet with an rpcUrl override. Never applies to a real cluster.",
    fallback: () => true,
    parse: boolean,
  }),
  x402ExtraAssets: setting<readonly X402ExtraAsset[]>({
    env: 'X402_EXTRA_ASSETS',
    description:
      'JSON object: CAIP-2 id → {symbol: mint or contract address}, tokens beyond the network\'s own known ones (its USDC) that the built-in x402 facilitator settles and sellers may name in `asset` (by symbol or address), e.g. {"solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp":{"PYUSD":"2b1kV6DkPAnxd5ixfnxCpjxmKwqjjaYmCZfHsFu24GXo"}}. Listed by GET /networks with the decimals the chain states (a start fails on an address that is no token there). Its fee payer settles no other mint or contract. Unset: only the known tokens.',
    fallback: () => [],
    parse: parseExtraAssets,
  }),
  x402FeeBudget: setting<Readonly<Record<string, string>>>({
    env: 'X402_FEE_BUDGET',
    description:
      'JSON object: network fees the built-in x402 facilitator pays per account and UTC day, in whole units of the native currency, by family (`solana`, `evm`) or CAIP-2 id (an id overrides its family), e.g. {"solana":"0.011","eip155:8453":"0.01"}. Families not named keep their default: solana 0.011 (1,000 stock @x402/svm settlements of 10,001 lamports, +10 %), evm 0.2 (1,000 settlements of ~100,000 gas at 2 gwei). "0" sponsors nothing there. Over it: 429 FEE_BUDGET_EXCEEDED.',
    fallback: () => DEFAULT_FEE_BUDGET,
    parse: (raw) => ({
      ...DEFAULT_FEE_BUDGET,
      ...parseDecimalTable(raw, 'family or CAIP-2 id', '{"solana":"0.011"}', isFeeBudgetKey),
    }),
  }),
  x402MinSettleAmount: setting<Readonly<Record<string, string>>>({
    env: 'X402_MIN_SETTLE_AMOUNT',
    description:
      'JSON object: the smallest payment the built-in x402 facilitator settles (its fee payer paying the network fee), in whole units of the asset, by token symbol as GET /networks lists it or by mint / contract address, e.g. {"USDC":"0.001"}. Replaces the default {"USDC":"0.001"}; assets not named: at least 1 atomic unit. Below it: refused `amount_below_minimum` before anything is signed.',
    fallback: () => DEFAULT_MIN_SETTLE_AMOUNT,
    parse: (raw) =>
      parseDecimalTable(
        raw,
        'token symbol or address',
        '{"USDC":"0.001"}',
        (key) => key.length > 0 && key.length <= 100,
      ),
  }),
  x402DiscoveryPublic: setting({
    env: 'X402_DISCOVERY_PUBLIC',
    description:
      "Whether GET /facilitator/discovery/resources and /search answer without an API key, listing every account's catalogued x402 `bazaar` resources (the public view, as x402's reference facilitator serves it). false: only with a key, and only the caller's account's own resources.",
    fallback: () => true,
    parse: boolean,
  }),
  x402UptoMaxOpenChannels: setting({
    env: 'X402_UPTO_MAX_OPEN_CHANNELS',
    description:
      "Escrow `upto` deposits (Solana payment channels) one account may hold unclaimed per network on the built-in facilitator: each holds the buyer's maximum and ~0.0047 SOL of its fee payer's rent until the seller claims it (or the escrow sweep refunds it, ~1 h after a deposit nobody claimed); a claim gives its place back at once (the rent the claimed channel still holds is bounded by X402_UPTO_MAX_CHANNEL_RENT). A deposit beyond it is refused `upto_open_channels_exceeded` before anything is signed into storage or sent. 0: no upto deposits.",
    fallback: () => DEFAULT_MAX_OPEN_UPTO_CHANNELS,
    parse: integerIn(0, 1_000_000),
  }),
  x402UptoMaxChannelRent: setting({
    env: 'X402_UPTO_MAX_CHANNEL_RENT',
    description:
      "SOL of the built-in facilitator fee payer's rent that one account's escrow `upto` payment channels (Solana) may hold per network. A deposit's open makes the fee payer pay ~0.0047 SOL of rent: ~0.0020 SOL (the escrow token account) comes back with its claim, the rest (the channel account) once the escrow sweep reclaims the channel, which the program allows 1,500 slots after its open (~10 min on mainnet); a deposit nobody claims holds both for ~1 h. So it bounds a seller's upto requests per reclaim window: 1 SOL lets ~370 claimed ones through. A deposit beyond it is refused `upto_open_channels_exceeded` before anything is signed into storage or sent. 0: no upto deposits.",
    fallback: () => DEFAULT_MAX_UPTO_CHANNEL_RENT,
    parse: decimalAmount,
  }),
  x402MaxUnsettledApprovalFundings: setting({
    env: 'X402_MAX_UNSETTLED_APPROVAL_FUNDINGS',
    description:
      "Payments per account, network and UTC day whose buyer's `approve(Permit2)` gas the built-in facilitator funded (x402's `erc20ApprovalGasSponsoring`) and that have not settled (still open, or failed: the buyer replaced its approval or took the allowance back). One more such payment is refused `erc20_approval_sponsoring_refused` before anything is sent; payments needing no funding go on. 0: no approval gas is funded.",
    fallback: () => DEFAULT_MAX_UNSETTLED_APPROVAL_FUNDINGS,
    parse: integerIn(0, 1_000_000),
  }),
  x402DiscoveryMaxPerAccount: setting({
    env: 'X402_DISCOVERY_MAX_PER_ACCOUNT',
    description:
      "Resources one account may have in the built-in facilitator's `bazaar` discovery catalogue; a declaration of one more is not catalogued (its settle still succeeds, its EXTENSION-RESPONSES header says rejected). A resource already catalogued is still updated. 0: none are catalogued.",
    fallback: () => 1_000,
    parse: integerIn(0, 1_000_000),
  }),
  x402DiscoveryMaxAgeDays: setting({
    env: 'X402_DISCOVERY_MAX_AGE_DAYS',
    description:
      "Days a resource stays in the built-in facilitator's `bazaar` discovery catalogue after it was last paid for through it. Older ones are no longer listed, no longer count against X402_DISCOVERY_MAX_PER_ACCOUNT, and are deleted when their account next catalogues a new resource; a new settle lists the resource again.",
    fallback: () => 30,
    parse: integerIn(1, 3_650),
  }),
  sendAmountBounds: setting<SendAmountBoundsTable>({
    env: 'SEND_AMOUNT_BOUNDS',
    description:
      'JSON object: the smallest and largest amount of one POST /payment/send or /transaction/send, in whole units of the asset, by symbol as GET /networks lists it (SOL, ETH, USDC) or by mint / contract address, e.g. {"USDC":["0.01","5000"]}. Laid over the default {"SOL":["0.001","100"],"ETH":["0.001","100"],"USDC":["0.001","100000"]}; tokens not named: 1 atomic unit to 1,000,000,000. Outside: 400 INVALID_PARAMETERS naming `amount`.',
    fallback: () => DEFAULT_SEND_AMOUNT_BOUNDS,
    parse: (raw) => ({ ...DEFAULT_SEND_AMOUNT_BOUNDS, ...parseBoundsTable(raw) }),
  }),
  allowPrivateOutboundUrls: setting({
    env: 'ALLOW_PRIVATE_OUTBOUND_URLS',
    description:
      'Let webhook URLs and facilitatorUrl reach loopback, private and link-local addresses, and use plain http://. For development and tests only.',
    fallback: () => false,
    parse: boolean,
  }),
  outboundPorts: setting<readonly number[]>({
    env: 'OUTBOUND_PORTS',
    description:
      'Ports webhook URLs and facilitatorUrl may name, separated by commas. Lifted by ALLOW_PRIVATE_OUTBOUND_URLS.',
    fallback: () => [443, 80],
    parse: (raw) => raw.split(',').map((port) => integerIn(1, 65_535)(port.trim())),
  }),
  metricsToken: setting<string | undefined>({
    env: 'METRICS_TOKEN',
    description:
      'Serve Prometheus metrics at GET /metrics to requests carrying `Authorization: Bearer <this token>` (at least 16 characters). Unset: /metrics is not served and nothing is measured.',
    fallback: () => undefined,
    parse: secretToken(16),
  }),
  eventsPollMs: setting({
    env: 'EVENTS_POLL_MS',
    description:
      'How often an instance reads the event outbox when nothing woke it (a commit here, or Redis from another instance).',
    fallback: () => 1_000,
    parse: integerIn(10, 60_000),
  }),
  streamHeartbeatMs: setting({
    env: 'STREAM_HEARTBEAT_MS',
    description:
      'Interval of WebSocket pings on the payment stream; a connection that has not answered the previous ping is dropped.',
    fallback: () => 30_000,
    parse: integerIn(100, 600_000),
  }),
  streamMaxBufferedBytes: setting({
    env: 'STREAM_MAX_BUFFERED_BYTES',
    description:
      'Bytes a payment stream connection may have waiting unsent before it is closed as too slow (close code 4008).',
    fallback: () => 1_048_576,
    parse: integerIn(1_024, 268_435_456),
  }),
  streamMaxConnectionsPerAccount: setting({
    env: 'STREAM_MAX_CONNECTIONS_PER_ACCOUNT',
    description:
      'Payment stream connections one account may hold open on one instance; another is refused (HTTP 429, or close code 4029 after an auth message).',
    fallback: () => 100,
    parse: integerIn(1, 100_000),
  }),
  webhookRetryBaseMs: setting({
    env: 'WEBHOOK_RETRY_BASE_MS',
    description:
      'Wait before the second attempt of a webhook delivery; each later wait doubles, up to one hour.',
    fallback: () => 5_000,
    parse: integerIn(10, 3_600_000),
  }),
  webhookRetryHours: setting({
    env: 'WEBHOOK_RETRY_HOURS',
    description: 'How long a webhook delivery is retried before it is marked failed.',
    fallback: () => 24,
    parse: integerIn(24, 720),
  }),
  eventRetentionDays: setting({
    env: 'EVENT_RETENTION_DAYS',
    description:
      'How long payment events and finished webhook deliveries are kept; a stream resumes with since from any event this young. Pending deliveries and the events they need are kept however old.',
    fallback: () => 30,
    parse: integerIn(1, 3_650),
  }),
  dashboardSignup: setting({
    env: 'DASHBOARD_SIGNUP',
    description:
      'Let anyone create an account with an email and password on the web dashboard (/dashboard). Off: accounts come from the CLI, which also sets their dashboard passwords.',
    fallback: () => true,
    parse: boolean,
  }),
  dashboardSessionHours: setting({
    env: 'DASHBOARD_SESSION_HOURS',
    description: 'How long a dashboard log-in lasts before the browser must log in again.',
    fallback: () => 12,
    parse: integerIn(1, 720),
  }),
  dashboardLoginAttempts: setting({
    env: 'DASHBOARD_LOGIN_ATTEMPTS',
    description:
      'Dashboard log-in attempts allowed per minute for one email from one client address (ten times as many from one client address; past five times as many failures for an email, only addresses that have not failed for it may try), and sign-ups per minute from one client address; more get 429.',
    fallback: () => 10,
    parse: integerIn(1, 1_000),
  }),
} as const;

export type Config = { -readonly [K in keyof typeof SETTINGS]: ReturnType<(typeof SETTINGS)[K]['parse']> };

/** A token the operator lists for a network (X402_EXTRA_ASSETS); its decimals are read from the chain. */
export interface X402ExtraAsset {
  readonly network: NetworkId;
  readonly symbol: string;
  readonly address: string;
}

/**
 * Which reverse proxies are believed (Fastify's trustProxy forms, never "all"): false (none), a hop count,
 * or the addresses and CIDRs of the proxies.
 */
export type TrustProxy = false | number | readonly string[];

/** One configured EVM network: its CAIP-2 id and its JSON-RPC endpoints, in order of preference. */
export interface EvmRpcUrl {
  readonly id: NetworkId;
  readonly rpcUrls: readonly string[];
}

/** A bad setting; `problems` lists every bad variable with what is wrong, so all can be fixed at once. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  constructor(readonly problems: readonly string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
  }
}

export function loadConfig(env: Env = process.env): Config {
  const problems: string[] = [];
  const config: Record<string, unknown> = {};
  for (const [key, s] of Object.entries(SETTINGS) as [keyof Config, Setting<unknown>][]) {
    const raw = env[s.env];
    if (raw === undefined || raw.trim() === '') {
      config[key] = s.fallback(env);
      continue;
    }
    try {
      config[key] = s.parse(raw.trim());
    } catch (error) {
      problems.push(`${s.env}: ${(error as Error).message}`);
    }
  }
  problems.push(...tlsProblems(env));
  if (problems.length > 0) throw new ConfigError(problems);
  return config as Config;
}

/**
 * The TLS files come as a pair: a certificate without its key (or the reverse) would otherwise start a
 * plain-HTTP gateway the operator believes is on HTTPS.
 */
function tlsProblems(env: Env): string[] {
  const given = (name: string) => (env[name]?.trim() ?? '') !== '';
  const cert = given(SETTINGS.tlsCertFile.env);
  const key = given(SETTINGS.tlsKeyFile.env);
  if (cert && !key) return ['TLS_KEY_FILE: must be set with TLS_CERT_FILE (both or neither)'];
  if (key && !cert) return ['TLS_CERT_FILE: must be set with TLS_KEY_FILE (both or neither)'];
  if (given(SETTINGS.tlsCaFile.env) && !cert) {
    return ['TLS_CA_FILE: is only used with TLS_CERT_FILE and TLS_KEY_FILE, which are not set'];
  }
  return [];
}

function setting<T>(s: Setting<T>): Setting<T> {
  return s;
}

function integerIn(min: number, max: number): Parser<number> {
  return (raw) => {
    const value = Number(raw);
    if (!/^\d+$/.test(raw) || value < min || value > max) {
      throw new Error(`must be a whole number from ${min} to ${max}, got "${raw}"`);
    }
    return value;
  };
}

function oneOf<const T extends string>(values: readonly T[]): Parser<T> {
  return (raw) => {
    if (!(values as readonly string[]).includes(raw)) {
      throw new Error(`must be one of ${values.join(', ')}, got "${raw}"`);
    }
    return raw as T;
  };
}

function boolean(raw: string): boolean {
  if (['1', 'true', 'yes', 'on'].includes(raw.toLowerCase())) return true;
  if (['0', 'false', 'no', 'off'].includes(raw.toLowerCase())) return false;
  throw new Error(`must be true or false, got "${raw}"`);
}

/** A path to a regular file this process may read, made absolute (so a reload reads the same file). */
function readableFile(raw: string): string {
  const path = resolve(raw);
  try {
    accessSync(path, constants.R_OK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new Error(
      code === 'ENOENT' ? `${path} does not exist` : `${path} cannot be read (${code ?? 'error'})`,
    );
  }
  if (!statSync(path).isFile()) throw new Error(`${path} is not a file`);
  return path;
}

/** Never echoes the value: it is a secret. */
function secretToken(minLength: number): Parser<string> {
  return (raw) => {
    if (raw.length < minLength || /\s/.test(raw)) {
      throw new Error(`must be at least ${minLength} characters without spaces`);
    }
    return raw;
  };
}

/** Never echoes the value: it is a secret. */
function key32(raw: string): Uint8Array {
  const bytes = /^[0-9a-fA-F]{64}$/.test(raw) ? Buffer.from(raw, 'hex') : Buffer.from(raw, 'base64');
  if (bytes.length !== 32) throw new Error('must be 32 bytes, as 64 hex characters or base64');
  return new Uint8Array(bytes);
}

/** Never echoes the URL: it may hold a password. */
function urlWithProtocol(protocols: readonly string[]): Parser<string> {
  return (raw) => {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      throw new Error(`must be a URL starting with ${protocols.map((p) => `${p}//`).join(' or ')}`);
    }
    if (!protocols.includes(url.protocol)) {
      throw new Error(`must start with ${protocols.map((p) => `${p}//`).join(' or ')}`);
    }
    return raw;
  };
}

/** One URL, or several separated by commas, each checked; order kept. Never echoes a URL. */
function urlList(protocols: readonly string[]): Parser<readonly string[]> {
  return (raw) => checkedUrls(raw.split(','), protocols, '');
}

/**
 * Checks each URL (blanks around commas allowed); a problem names the URL by position when there are
 * several, and `owner` ("of eip155:8453") says whose they are.
 */
function checkedUrls(parts: readonly string[], protocols: readonly string[], owner: string): string[] {
  const one = urlWithProtocol(protocols);
  const urls = parts.map((part) => part.trim());
  if (urls.some((url) => url === '')) throw new Error(`has an empty URL${owner} between commas`);
  return urls.map((url, index) => {
    try {
      return one(url);
    } catch (error) {
      const which = urls.length === 1 ? `the URL${owner}` : `URL ${index + 1}${owner}`;
      throw new Error(`${which} ${(error as Error).message}`);
    }
  });
}

/** X402_EXTRA_ASSETS: {network: {symbol: address}}; the address must be of the network's family. */
function parseExtraAssets(raw: string): X402ExtraAsset[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new Error('must be a JSON object such as {"solana:…":{"PYUSD":"<mint>"}}');
  }
  const isObject = (v: unknown): v is Record<string, unknown> =>
    typeof v === 'object' && v !== null && !Array.isArray(v);
  if (!isObject(parsed)) throw new Error('must be a JSON object of CAIP-2 id → {symbol: address}');
  return Object.entries(parsed).flatMap(([network, tokens]) => {
    if (!isNetworkId(network)) throw new Error(`"${network}" is not a CAIP-2 id such as eip155:8453`);
    if (!isObject(tokens)) throw new Error(`the tokens of ${network} must be an object of symbol → address`);
    return Object.entries(tokens).map(([symbol, address]) => {
      if (!/^[A-Za-z0-9.$_-]{1,16}$/.test(symbol)) {
        throw new Error(`"${symbol}" of ${network} is not a token symbol (1 to 16 letters, digits, . $ _ -)`);
      }
      const evm = network.startsWith('eip155:');
      const shape = evm ? /^0x[0-9a-fA-F]{40}$/ : /^[1-9A-HJ-NP-Za-km-z]{32,44}$/;
      if (typeof address !== 'string' || !shape.test(address)) {
        throw new Error(
          `${symbol} of ${network} must be ${evm ? 'a contract (0x…)' : 'a mint (base58)'} address`,
        );
      }
      return { network, symbol, address };
    });
  });
}

/** Keeps the order written: the first network is the family's default. Never echoes a URL. */
function parseEvmRpcUrls(raw: string): EvmRpcUrl[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new Error('must be a JSON object such as {"eip155:8453":"https://…"}');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new Error('must be a JSON object of CAIP-2 id → RPC URL');
  }
  const entries = Object.entries(parsed);
  if (entries.length === 0) throw new Error('must name at least one network');
  return entries.map(([id, urls]) => {
    if (!isNetworkId(id) || !id.startsWith('eip155:')) {
      throw new Error(`"${id}" is not an EVM CAIP-2 id such as eip155:8453`);
    }
    const list = Array.isArray(urls) ? urls : [urls];
    if (list.length === 0 || list.some((url) => typeof url !== 'string')) {
      throw new Error(`the URL of ${id} must be a string or a non-empty list of strings`);
    }
    const parts = (list as string[]).flatMap((url) => url.split(','));
    return { id, rpcUrls: checkedUrls(parts, ['http:', 'https:'], ` of ${id}`) };
  });
}

function isFeeBudgetKey(key: string): boolean {
  return (CHAIN_FAMILIES as readonly string[]).includes(key) || isNetworkId(key);
}

/** SEND_AMOUNT_BOUNDS: a JSON object of asset → [least, most], decimals as text or numbers, least ≤ most. */
function parseBoundsTable(raw: string): SendAmountBoundsTable {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new Error('must be a JSON object of asset → [least, most], such as {"USDC":["0.01","5000"]}');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new Error('must be a JSON object of asset → [least, most]');
  }
  const table: Record<string, readonly [string, string]> = {};
  for (const [key, value] of Object.entries(parsed)) {
    if (key.length === 0 || key.length > 100) throw new Error(`"${key}" is not a symbol or token address`);
    const bounds = Array.isArray(value)
      ? value.map((v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? String(v) : v))
      : [];
    const [least, most] = bounds;
    const decimal = /^\d{1,30}(\.\d{1,18})?$/;
    if (
      bounds.length !== 2 ||
      typeof least !== 'string' ||
      typeof most !== 'string' ||
      !decimal.test(least) ||
      !decimal.test(most) ||
      Number(least) > Number(most)
    ) {
      throw new Error(
        `the bounds of "${key}" must be [least, most], non-negative decimals such as ["0.01","5000"]`,
      );
    }
    table[key] = [least, most];
  }
  return table;
}

/** A non-negative decimal amount such as "0.5". */
function decimalAmount(raw: string): string {
  if (!/^\d{1,30}(\.\d{1,18})?$/.test(raw)) throw new Error('must be a non-negative decimal such as "0.5"');
  return raw;
}

/** A JSON object of key → non-negative decimal amount (text or number); `example` is shown when it is not JSON. */
function parseDecimalTable(
  raw: string,
  keyName: string,
  example: string,
  isKey: (key: string) => boolean,
): Readonly<Record<string, string>> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new Error(`must be a JSON object of ${keyName} → amount, such as ${example}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new Error(`must be a JSON object of ${keyName} → amount`);
  }
  const table: Record<string, string> = {};
  for (const [key, value] of Object.entries(parsed)) {
    if (!isKey(key)) throw new Error(`"${key}" is not a ${keyName}`);
    const text = typeof value === 'number' && Number.isFinite(value) ? String(value) : value;
    if (typeof text !== 'string' || !/^\d{1,30}(\.\d{1,18})?$/.test(text)) {
      throw new Error(`the amount of "${key}" must be a non-negative decimal such as "0.011"`);
    }
    table[key] = text;
  }
  return table;
}

const PROXY_RANGE_NAMES = ['loopback', 'linklocal', 'uniquelocal'];

function parseTrustProxy(raw: string): TrustProxy {
  const lower = raw.toLowerCase();
  if (['true', 'yes', 'on'].includes(lower)) {
    throw new Error(
      'true would trust every hop, so any client could choose its own address with X-Forwarded-For (and escape the per-address limits); write the number of proxies in front of the gateway (TRUST_PROXY=1 for one reverse proxy) or their addresses, e.g. TRUST_PROXY=127.0.0.1 or TRUST_PROXY=10.0.0.0/8',
    );
  }
  if (['false', 'no', 'off', '0'].includes(lower)) return false;
  if (/^\d+$/.test(raw)) return integerIn(1, 10)(raw);
  const entries = raw.split(',').map((entry) => entry.trim());
  for (const entry of entries) {
    if (PROXY_RANGE_NAMES.includes(entry)) continue;
    const [address = '', prefix, extra] = entry.split('/');
    const family = isIP(address);
    const bits = family === 4 ? 32 : 128;
    const prefixOk = prefix === undefined || (/^\d+$/.test(prefix) && Number(prefix) <= bits);
    if (family === 0 || !prefixOk || extra !== undefined) {
      throw new Error(
        `must be a number of proxies (1 to 10) or addresses and CIDRs separated by commas; "${entry}" is neither`,
      );
    }
  }
  return entries;
}

function parsePlanAccess(raw: string): PlanAccess {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new Error('must be a JSON object such as {"standard":["payments","status"],...}');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new Error('must be a JSON object of plan → list of features');
  }
  const table: Record<string, ReadonlySet<Feature>> = {};
  for (const plan of PLANS) {
    const features = (parsed as Record<string, unknown>)[plan];
    if (!Array.isArray(features)) throw new Error(`must list the features of plan "${plan}"`);
    const unknown = features.filter((f) => typeof f !== 'string' || !isFeature(f));
    if (unknown.length > 0) throw new Error(`plan "${plan}" names unknown features: ${unknown.join(', ')}`);
    table[plan] = new Set(features as Feature[]);
  }
  const extra = Object.keys(parsed).filter((k) => !isPlan(k));
  if (extra.length > 0) throw new Error(`names unknown plans: ${extra.join(', ')}`);
  return table as PlanAccess;
}
