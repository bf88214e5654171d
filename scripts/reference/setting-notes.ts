/**
 * What docs/reference/configuration.md says about a setting beyond its description in the settings table
 * (packages/server/src/config.ts): the guide that explains it, and facts that belong beside the variable.
 * Keyed by variable name; the generator refuses a name the table does not have.
 */
export const SETTING_NOTES: Readonly<Record<string, string>> = {
  PORT: '`0`: any free port.',
  TLS_CERT_FILE:
    'Served with `Strict-Transport-Security: max-age=31536000`; `kill -HUP` reloads the files without dropping a connection. See [TLS](../tls.md).',
  TLS_KEY_FILE: 'A key of another certificate stops the start. See [TLS](../tls.md).',
  TLS_CA_FILE: 'See [TLS](../tls.md).',
  DATA_DIR:
    "Private to the gateway's user: created `0700`, and everything the gateway and its embedded chains write there (the SQLite file with `-wal` and `-shm`, `master.key`, the localnet ledger, anvil's state) is created `0600` (the process umask is `077`); files an older version left readable are tightened at start, with a log line saying how many. See [Backups](../operations.md#backups).",
  DATABASE_URL: 'See [Storage](../operations.md#storage).',
  DATABASE_CONNECT_TIMEOUT_MS:
    'The pool holds 10 connections. See [When storage or Redis fails](../operations.md#when-storage-or-redis-fails).',
  DATABASE_STATEMENT_TIMEOUT_MS:
    'See [When storage or Redis fails](../operations.md#when-storage-or-redis-fails).',
  SQLITE_BUSY_TIMEOUT_MS: 'See [When storage or Redis fails](../operations.md#when-storage-or-redis-fails).',
  REDIS_URL: 'See [Running many instances](../operations.md#running-many-instances).',
  SOLANA_RPC_URL: 'See [When an RPC endpoint fails](../operations.md#when-an-rpc-endpoint-fails).',
  SOLANA_WS_URL: 'See [When an RPC endpoint fails](../operations.md#when-an-rpc-endpoint-fails).',
  LOCALNET_PORT: 'See [Chains](../chains.md).',
  GATE402_MASTER_KEY:
    'Also derives the key that signs payment proofs, so every instance shares it. Back it up: without it the custodial wallets cannot be spent. See [Backups](../operations.md#backups).',
  EVM_RPC_URLS:
    'See [EVM specifics](../evm.md) and [When an RPC endpoint fails](../operations.md#when-an-rpc-endpoint-fails).',
  ANVIL_PORT: '`0`: any free port. See [EVM specifics](../evm.md).',
  ANVIL_BLOCK_TIME: 'See [Finality and reorgs](../finality.md).',
  AUTH_CACHE_MS: 'See [API keys](../api-keys-and-plans.md#api-keys).',
  PAYMENT_CONFIRM_TIMEOUT_MS: 'Also how long an x402 settle waits before answering `settlement_pending`.',
  EVENTS_POLL_MS: 'See [Payment events](../events-and-webhooks.md).',
  PLAN_ACCESS:
    'See [Plans and rate limits](../api-keys-and-plans.md#plans-and-rate-limits) and the table below.',
  TRUST_PROXY:
    "`loopback`, `linklocal` and `uniquelocal` name those ranges. The client address is then the last one the trusted proxies appended, so a client's own `X-Forwarded-For` changes nothing; `true` (trust every hop) would let any client choose its own address and escape the per-address limits.",
  REQUEST_TIMEOUT_MS:
    'Catches a body announced and never sent, or sent a byte at a time. Also bounds the TLS handshake.',
  MAX_CONNECTIONS_PER_ADDRESS:
    "A proxy named by address in `TRUST_PROXY` is not capped (cap at the proxy); with a hop count its connections count like a client's.",
  EVENT_RETENTION_DAYS:
    'Deleted once an hour by one instance; events the webhook fan-out has not read yet are kept too. Idempotency-Keys are deleted after 24 hours by the same job.',
  X402_LOCALNET_AS_DEVNET: 'See [x402](../x402.md).',
  X402_EXTRA_ASSETS:
    'A network that is not configured, or a symbol the network already uses, stops the start too. See [Stating the asset](../custodial-payments.md#stating-the-asset).',
  X402_FEE_BUDGET: 'See [x402](../x402.md).',
  METRICS_TOKEN: 'See [Metrics](../operations.md#metrics).',
  DASHBOARD_SIGNUP: 'See [The web dashboard](../dashboard.md).',
  DASHBOARD_LOGIN_ATTEMPTS: 'See [The web dashboard](../dashboard.md).',
  ALLOW_PRIVATE_OUTBOUND_URLS: 'Also allows any port.',
  OUTBOUND_PORTS:
    'Plain `http://` itself only with `ALLOW_PRIVATE_OUTBOUND_URLS`. The host must resolve only to public addresses: every range of the IANA IPv4 and IPv6 special-purpose registries is refused (loopback, private, link-local, CGNAT, NAT64 `64:ff9b::/96` and `64:ff9b:1::/48`, 6to4, Teredo, site-local `fec0::/10`, documentation, multicast…), and a name that cannot be resolved gets the same answer as a private one.',
};
