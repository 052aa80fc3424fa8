import type { Generated, Kysely } from "kysely"

/**
 * The tables of every area, as stored. Timestamps are fixed-width ISO 8601 UTC text, booleans are
 * 0/1 integers and structured values JSON text, so SQLite and PostgreSQL hold identical rows.
 */
export interface Database {
  users: UsersTable
  billing_accounts: BillingAccountsTable
  tenants: TenantsTable
  api_keys: ApiKeysTable
  contacts: ContactsTable
  outbox_events: OutboxEventsTable
  channels: ChannelsTable
  connect_tokens: ConnectTokensTable
  webhook_endpoints: WebhookEndpointsTable
  webhook_deliveries: WebhookDeliveriesTable
  webhook_fanout_leases: WebhookFanOutLeasesTable
}

/** A 0/1 integer standing for a boolean. */
export type Flag = 0 | 1

export interface UsersTable {
  id: string
  email: string
  token_lookup: string
  token_hash: string
  created_at: string
}

export interface BillingAccountsTable {
  id: string
  owner_user_id: string
  name: string
  created_at: string
}

export interface TenantsTable {
  id: string
  billing_account_id: string
  name: string
  slug: string
  company_email: string | null
  support_email: string | null
  pricing_model_id: string | null
  is_trial: Flag
  trial_ends_at: string | null
  is_active: Flag
  subscription_tier: string
  ai_features_enabled: Flag
  multi_agent_mode: Flag
  auto_summarize_on_close: string
  auto_transcript_export_format: string
  sms_enabled: Flag
  created_at: string
  updated_at: string | null
}

export interface ApiKeysTable {
  id: string
  tenant_id: string
  name: string | null
  lookup: string
  secret_hash: string
  prefix: string
  scopes: string
  is_parent: Flag
  expires_at: string | null
  revoked_at: string | null
  created_at: string
}

export interface ContactsTable {
  id: string
  tenant_id: string
  name: string | null
  phone: string | null
  email: string | null
  language: string | null
  custom_fields: string
  created_at: string
  updated_at: string | null
}

export interface OutboxEventsTable {
  /** Append order; the dispatcher reads in this order. */
  seq: Generated<number>
  id: string
  tenant_id: string
  type: string
  event_id: string
  created_at: string
  data: string
  fanned_out_at: string | null
}

export interface ChannelsTable {
  id: string
  tenant_id: string
  platform: string
  name: string
  status: string
  external_id: string
  config: string
  secrets: string
  created_via_connect_token_id: string | null
  created_at: string
  updated_at: string | null
  disconnected_at: string | null
}

export interface ConnectTokensTable {
  id: string
  tenant_id: string
  name: string | null
  lookup: string
  secret_hash: string
  token_prefix: string
  allowed_channel_types: string
  partner_name: string
  partner_redirect_url: string | null
  expires_at: string
  max_uses: number
  uses_count: number
  use_window_minutes: number
  use_window_ends_at: string | null
  revoked_at: string | null
  created_at: string
}

export interface WebhookEndpointsTable {
  id: string
  tenant_id: string
  name: string
  url: string
  secret: string
  authorization_header: string | null
  subscribed_events: string
  source_filter_mode: string
  filtered_channel_ids: string | null
  filtered_email_integration_ids: string | null
  retry_strategy: string
  max_retries: number
  timeout_seconds: number
  is_active: Flag
  is_verified: Flag
  consecutive_failures: number
  suspended_at: string | null
  next_reactivation_at: string | null
  reactivation_attempts: number
  permanently_deactivated_at: string | null
  last_success_at: string | null
  last_failure_at: string | null
  last_error: string | null
  created_at: string
  updated_at: string | null
  check_lease_until: string | null
}

export interface WebhookDeliveriesTable {
  id: string
  tenant_id: string
  webhook_endpoint_id: string
  event_id: string
  event_type: string
  envelope: string
  outbox_seq: number
  status: string
  attempt_number: number
  max_retries: number
  retry_strategy: string
  next_retry_at: string | null
  completed_at: string | null
  response_status_code: number | null
  response_time_ms: number | null
  error_message: string | null
  previous_delivery_id: string | null
  lease_expires_at: string | null
  created_at: string
}

/** The database handle every store takes: the root instance or a transaction of it. */
export type Db = Kysely<Database>

/**
 * Unique indexes by name, so a violation reads the same on both dialects: PostgreSQL reports the
 * index name, SQLite only the columns. Each migration that adds a unique index adds it here too.
 */
export const UNIQUE_INDEXES: ReadonlyArray<{ readonly name: string; readonly table: string; readonly columns: ReadonlyArray<string> }> = [
  { name: "users_email_unique", table: "users", columns: ["email"] },
  { name: "users_token_lookup_unique", table: "users", columns: ["token_lookup"] },
  { name: "tenants_slug_unique", table: "tenants", columns: ["slug"] },
  { name: "api_keys_lookup_unique", table: "api_keys", columns: ["lookup"] },
  { name: "contacts_tenant_phone_unique", table: "contacts", columns: ["tenant_id", "phone"] },
  { name: "contacts_tenant_email_unique", table: "contacts", columns: ["tenant_id", "email"] },
  { name: "outbox_events_id_unique", table: "outbox_events", columns: ["id"] },
  { name: "connect_tokens_lookup_unique", table: "connect_tokens", columns: ["lookup"] }
]

/** A batch of outbox events a worker fanned out and is sending (see migration 0006). */
export interface WebhookFanOutLeasesTable {
  id: string
  /** The batch's outbox sequence numbers, as a JSON array. */
  seqs: string
  fanned_at: string
  holder: string
  lease_until: string
}
