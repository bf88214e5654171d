/** Table and column types as Kysely sees them. Column names are snake_case in SQL. */
export interface Database {
  accounts: AccountsTable;
  api_keys: ApiKeysTable;
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
}
