import type { Generated } from 'kysely';

/** Table and column types as Kysely sees them. Column names are snake_case in SQL. */
export interface Database {
  accounts: AccountsTable;
  api_keys: ApiKeysTable;
  wallets: WalletsTable;
  wallet_challenges: WalletChallengesTable;
  payments: PaymentsTable;
  consumed_proofs: ConsumedProofsTable;
  idempotency_keys: IdempotencyKeysTable;
  events: EventsTable;
  payment_counts: PaymentCountsTable;
  wallet_nonces: WalletNoncesTable;
  webhooks: WebhooksTable;
  webhook_deliveries: WebhookDeliveriesTable;
  outbox_cursors: OutboxCursorsTable;
  job_leases: JobLeasesTable;
  facilitator_signers: FacilitatorSignersTable;
  x402_settlements: X402SettlementsTable;
  x402_receipts: X402ReceiptsTable;
  x402_sponsored_fees: X402SponsoredFeesTable;
  x402_sponsored_approvals: X402SponsoredApprovalsTable;
  dashboard_users: DashboardUsersTable;
  dashboard_sessions: DashboardSessionsTable;
  spend_policies: SpendPoliciesTable;
  spend_records: SpendRecordsTable;
  spend_locks: SpendLocksTable;
  refund_locks: RefundLocksTable;
  discovery_resources: DiscoveryResourcesTable;
  permit2_approvals: Permit2ApprovalsTable;
}

/** People who log in to the web dashboard (see DashboardUserRepository). */
export interface DashboardUsersTable {
  id: string;
  account_id: string;
  email: string;
  password_hash: string;
  created_at: number;
  updated_at: number;
}

/** Dashboard sessions by the SHA-256 of their cookie value (see DashboardSessionRepository). */
export interface DashboardSessionsTable {
  id_hash: string;
  user_id: string;
  csrf_token: string;
  created_at: number;
  expires_at: number;
}

/** Fee-payer keys of the x402 facilitator (see FacilitatorSignerRepository). */
export interface FacilitatorSignersTable {
  address: string;
  family: string;
  encrypted_secret: string;
  created_at: number;
}

/** One row per x402 settlement (see SettlementRepository). */
export interface X402SettlementsTable {
  settlement_key: string;
  network: string;
  payer: string;
  pay_to: string;
  asset: string;
  amount: string;
  transaction_id: string;
  signed_transaction: string;
  last_valid_block_height: number | string | null;
  status: string;
  error: string | null;
  payment_id: string | null;
  created_at: number;
  updated_at: number;
  claimed_by_account_id: string | null;
  claimed_by_idempotency_key: string | null;
  resource: string | null;
  account_id: string | null;
  sponsored_fee: string | null;
  fee_day: string | null;
  /** Migration 0030: JSON of SponsoredApprovalStep (erc20ApprovalGasSponsoring), null otherwise. */
  sponsored_approval: string | null;
}

/** One row per buyer approval the facilitator funds and broadcasts (see SettlementRepository.claimApproval). */
export interface X402SponsoredApprovalsTable {
  approval_key: string;
  settlement_key: string;
  created_at: number;
}

/** Network fees sponsored per account, network and UTC day (see SponsoredFeeRepository). */
export interface X402SponsoredFeesTable {
  account_id: string;
  network: string;
  day: string;
  amount: string;
  updated_at: number;
}

/** The next nonce of each EVM sender per network (see NonceRepository). */
export interface WalletNoncesTable {
  network: string;
  address: string;
  next_nonce: number;
}

/** A custodial EVM wallet's Permit2 approval of one token: the payment recording it (see Permit2ApprovalRepository). */
export interface Permit2ApprovalsTable {
  network: string;
  wallet_address: string;
  token: string;
  payment_id: string;
  created_at: number;
  updated_at: number;
}

/** Payments per wallet and direction, maintained with every insert. */
export interface PaymentCountsTable {
  account_id: string;
  wallet_address: string;
  direction: string;
  n: number;
  /** Changes to what history shows of these payments after their insert (migration 0033). */
  changes: Generated<number>;
}

export interface AccountsTable {
  id: string;
  name: string;
  plan: string;
  custom_rate_limit: number | null;
  created_at: number;
  updated_at: number;
}

export interface ApiKeysTable {
  id: string;
  account_id: string;
  name: string;
  display_prefix: string;
  key_hash: string;
  created_at: number;
  last_used_at: number | null;
  revoked_at: number | null;
  /** Space-separated (0022); '' for none. */
  scopes: Generated<string>;
}

export interface WalletsTable {
  id: string;
  account_id: string;
  family: string;
  network: string | null;
  address: string;
  /** 0 or 1: SQLite has no boolean. */
  watch_only: number;
  encrypted_secret: string | null;
  created_at: number;
  /** Migration 0026: the account's name for the wallet; null: none. */
  label: string | null;
}

/** Challenges that prove control of an address (see WalletChallengeRepository). */
export interface WalletChallengesTable {
  nonce: string;
  account_id: string;
  family: string;
  address: string;
  message: string;
  created_at: number;
  expires_at: number;
  used_at: number | null;
}

export interface PaymentsTable {
  id: string;
  account_id: string;
  direction: string;
  mode: string;
  status: string;
  network: string;
  wallet_address: string;
  sender: string;
  recipient: string;
  /** Atomic units as decimal text. */
  amount: string;
  fee: string | null;
  resource: string | null;
  /** JSON text. */
  metadata: string | null;
  signature: string | null;
  reference: string | null;
  signed_transaction: string | null;
  last_valid_block_height: number | null;
  expires_at: number | null;
  slot: number | null;
  block_height: number | null;
  error: string | null;
  source_payment_id: string | null;
  idempotency_key: string | null;
  lease_owner: string | null;
  lease_until: number | null;
  created_at: number;
  updated_at: number;
  confirmed_at: number | null;
  nonce: number | null;
  /** JSON array of replaced transaction hashes. */
  replaced_signatures: string | null;
  /** Token payments (x402 `exact`): the mint or contract and its decimals; null: native currency. */
  asset: string | null;
  asset_decimals: number | null;
  /** On a refund: the payment it refunds (migration 0025); null otherwise. */
  refund_of: string | null;
  refund_reason: string | null;
}

export interface X402ReceiptsTable {
  identity: string;
  payment_id: string;
  updated_at: number;
}

export interface ConsumedProofsTable {
  proof_key: string;
  payment_id: string;
  account_id: string;
  consumed_at: number;
}

export interface IdempotencyKeysTable {
  account_id: string;
  key: string;
  request_hash: string;
  locked_until: number | null;
  response_status: number | null;
  response_body: string | null;
  created_at: number;
}

/** Webhook endpoints (see WebhookRepository). */
export interface WebhooksTable {
  id: string;
  account_id: string;
  url: string;
  /** JSON array of event types. */
  event_types: string;
  secret: string;
  created_at: number;
  /** Null while enabled. */
  disabled_at: number | null;
  disabled_reason: string | null;
  /** When it was last enabled; null only in a row an instance older than migration 0014 inserted. */
  enabled_at: number | null;
}

export interface WebhookDeliveriesTable {
  id: string;
  webhook_id: string;
  account_id: string;
  event_id: string;
  event_seq: number;
  status: string;
  attempts: number;
  next_attempt_at: number | null;
  lease_owner: string | null;
  lease_until: number | null;
  last_status_code: number | null;
  last_error: string | null;
  last_attempt_at: number | null;
  delivered_at: number | null;
  created_at: number;
}

/** How far each outbox consumer (e.g. the webhook fan-out) has read. */
export interface OutboxCursorsTable {
  name: string;
  seq: number;
}

/** Which instance runs a background job until when (see JobLeaseRepository). */
export interface JobLeasesTable {
  name: string;
  owner: string;
  until: number;
}

export interface EventsTable {
  seq: Generated<number>;
  id: string;
  account_id: string;
  type: string;
  payment_id: string | null;
  data: string;
  created_at: number;
}

/** Spend policies of accounts (key_id '') and API keys (see SpendRepository). */
export interface SpendPoliciesTable {
  account_id: string;
  key_id: string;
  /** JSON text: limits (atomic amounts as decimal text), allowedRecipients, allowedHosts, allowedNetworks. */
  rules: string;
  expires_at: number | null;
  created_at: number;
  updated_at: number;
}

/** Custodial spends within the last day (see SpendRepository). */
export interface SpendRecordsTable {
  payment_id: string;
  account_id: string;
  key_id: string | null;
  network: string;
  /** Token address; '' for the native currency. */
  asset: string;
  /** Atomic units as decimal text. */
  amount: string;
  created_at: number;
}

/** One row per account and asset, locked by each capped spend (see SpendRepository.lockAsset). */
export interface SpendLocksTable {
  account_id: string;
  network: string;
  asset: string;
  updated_at: number;
}

/** One row per refunded payment, written first by each refund of it (see PaymentRepository.lockRefunds). */
export interface RefundLocksTable {
  payment_id: string;
  updated_at: number;
}

/** The x402 bazaar catalogue (migration 0023, DiscoveryRepository); JSON columns are text. */
export interface DiscoveryResourcesTable {
  account_id: string;
  resource: string;
  tool: string;
  type: string;
  x402_version: number;
  description: string | null;
  mime_type: string | null;
  service_name: string | null;
  /** JSON array of strings. */
  tags: string | null;
  /** Migration 0032. */
  icon_url: string | null;
  network: string;
  scheme: string;
  pay_to: string;
  accepts: string;
  extensions: string;
  search_text: string;
  created_at: number;
  updated_at: number;
}
