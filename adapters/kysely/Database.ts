import type { Generated, Kysely } from "kysely"
import type { Flag } from "./Flag.ts"
import type {
  InboundPayloadsTable,
  InboundHandledTable,
  ConversationsTable,
  MessagesTable,
  MessageStatusesTable,
  AttachmentsTable,
  ChatappTemplatesTable,
  LibraryCacheTable,
  SendingLimitsTable,
  SendRatesTable
} from "./ChatappTables.ts"

export type * from "./ChatappTables.ts"
import type {
  EmailIntegrationsTable,
  EmailMessagesTable,
  EmailAttachmentsTable,
  EmailInlineImagesTable,
  ListsTable,
  ListSubscriptionsTable,
  MarketingOptOutsTable,
  CampaignsTable,
  CampaignRecipientsTable,
  CampaignBatchesTable,
  FlowDefinitionsTable,
  FlowVersionsTable,
  FlowSessionsTable,
  CustomFieldDefinitionsTable,
  TagsTable,
  ContactTagsTable,
} from "./EngagementTables.ts"

export type * from "./EngagementTables.ts"
import type {
  AiCreditBalancesTable,
  AiCreditEntriesTable,
  AttachmentSummariesTable,
  SummaryRateCountersTable
} from "./SummaryTables.ts"

export type * from "./SummaryTables.ts"
import type {
  TeamChatChannelsTable,
  TeamChatChannelTenantsTable,
  TeamChatMembersTable,
  TeamChatMessagesTable,
  TeamChatMessageAttachmentsTable
} from "./TeamChatTables.ts"

export type * from "./TeamChatTables.ts"

/**
 * The tables of every area, as stored. Timestamps are fixed-width ISO 8601 UTC text, booleans are
 * 0/1 integers and structured values JSON text, so SQLite and PostgreSQL hold identical rows.
 * Raw bytes are `bytea` on PostgreSQL and `blob` on SQLite, written as a Uint8Array (the drivers read
 * them back as a Buffer or a Uint8Array).
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
  inbound_payloads: InboundPayloadsTable
  inbound_handled: InboundHandledTable
  conversations: ConversationsTable
  messages: MessagesTable
  message_statuses: MessageStatusesTable
  attachments: AttachmentsTable
  chatapp_templates: ChatappTemplatesTable
  library_cache: LibraryCacheTable
  sending_limits: SendingLimitsTable
  send_rates: SendRatesTable
  email_integrations: EmailIntegrationsTable
  email_messages: EmailMessagesTable
  email_attachments: EmailAttachmentsTable
  email_inline_images: EmailInlineImagesTable
  lists: ListsTable
  list_subscriptions: ListSubscriptionsTable
  marketing_opt_outs: MarketingOptOutsTable
  campaigns: CampaignsTable
  campaign_recipients: CampaignRecipientsTable
  campaign_batches: CampaignBatchesTable
  flow_definitions: FlowDefinitionsTable
  flow_versions: FlowVersionsTable
  flow_sessions: FlowSessionsTable
  custom_field_definitions: CustomFieldDefinitionsTable
  tags: TagsTable
  contact_tags: ContactTagsTable
  attachment_summaries: AttachmentSummariesTable
  ai_credit_entries: AiCreditEntriesTable
  ai_credit_balances: AiCreditBalancesTable
  summary_rate_counters: SummaryRateCountersTable
  team_chat_channels: TeamChatChannelsTable
  team_chat_channel_tenants: TeamChatChannelTenantsTable
  team_chat_members: TeamChatMembersTable
  team_chat_messages: TeamChatMessagesTable
  team_chat_message_attachments: TeamChatMessageAttachmentsTable
}

export type { Flag } from "./Flag.ts"

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
  /** The user a bound key acts as; null when unbound (see migration 0015). */
  user_id: string | null
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
  /** The `traceparent` of the span that appended the event; null when tracing was off. */
  trace_context: string | null
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
  /** Whether deliveries carry `traceparent` to the receiver (ours, not the spec's). */
  propagate_trace_context: Flag
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
  /** The `traceparent` of the event's span, copied from the outbox; null when tracing was off. */
  trace_context: string | null
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
  { name: "connect_tokens_lookup_unique", table: "connect_tokens", columns: ["lookup"] },
  // Partial (`WHERE status = 'open' AND kind = 'chat'`): SQLite's message lists the columns all the same.
  { name: "conversations_open_unique", table: "conversations", columns: ["tenant_id", "channel_id", "contact_id"] },
  { name: "messages_channel_external_unique", table: "messages", columns: ["channel_id", "external_id"] },
  { name: "chatapp_templates_channel_name_unique", table: "chatapp_templates", columns: ["tenant_id", "channel_id", "name", "language"] },
  { name: "email_integrations_tenant_address_unique", table: "email_integrations", columns: ["tenant_id", "address"] },
  // A primary key: PostgreSQL names its constraint so, SQLite lists the column.
  { name: "email_inline_images_pkey", table: "email_inline_images", columns: ["attachment_id"] },
  // Partial (`WHERE deleted_at IS NULL`, the default also `AND is_default = 1`): SQLite lists the columns.
  { name: "lists_tenant_slug_unique", table: "lists", columns: ["tenant_id", "slug"] },
  { name: "lists_tenant_default_unique", table: "lists", columns: ["tenant_id"] },
  // Primary keys: PostgreSQL names their constraints so, SQLite lists the columns.
  { name: "campaign_recipients_pkey", table: "campaign_recipients", columns: ["campaign_id", "seq"] },
  { name: "campaign_batches_pkey", table: "campaign_batches", columns: ["campaign_id", "channel_id", "day"] },
  { name: "flow_versions_definition_number_unique", table: "flow_versions", columns: ["definition_id", "number"] },
  { name: "flow_sessions_token_unique", table: "flow_sessions", columns: ["flow_token_hash"] },
  { name: "custom_fields_tenant_key_unique", table: "custom_field_definitions", columns: ["tenant_id", "key"] },
  { name: "tags_tenant_name_unique", table: "tags", columns: ["tenant_id", "name"] },
  { name: "attachment_summaries_tenant_attachment_unique", table: "attachment_summaries", columns: ["tenant_id", "attachment_id"] },
  // A NULL charge_key (a grant) never collides; SQLite lists the columns.
  { name: "ai_credit_entries_tenant_charge_unique", table: "ai_credit_entries", columns: ["tenant_id", "charge_key"] },
  // Primary keys: PostgreSQL names their constraints so, SQLite lists the columns.
  { name: "ai_credit_balances_pkey", table: "ai_credit_balances", columns: ["tenant_id"] },
  { name: "summary_rate_counters_pkey", table: "summary_rate_counters", columns: ["tenant_id", "key", "window_start"] },
  // A primary key: PostgreSQL names its constraint so, SQLite lists the columns.
  { name: "contact_tags_pkey", table: "contact_tags", columns: ["tenant_id", "contact_id", "tag_id"] },
  // A null dm_key (a channel) never collides; SQLite lists the columns.
  { name: "team_chat_channels_tenant_dm_unique", table: "team_chat_channels", columns: ["tenant_id", "dm_key"] },
  { name: "team_chat_message_attachments_attachment_unique", table: "team_chat_message_attachments", columns: ["attachment_id"] },
  // Partial (`WHERE status = 'active'`): one active channel per number or account; SQLite lists the columns.
  { name: "channels_active_external_unique", table: "channels", columns: ["platform", "external_id"] }
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
