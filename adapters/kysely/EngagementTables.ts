import type { Flag } from "./Flag.ts"

/**
 * The tables of email, lists, campaigns and flows, as stored (see `Database.ts` for the rules every
 * table follows).
 */

/** A tenant's mailbox (see migration 0010). */
export interface EmailIntegrationsTable {
  id: string
  tenant_id: string
  /** Lower-cased. */
  address: string
  display_name: string | null
  inbound_secret_hash: string
  status: string
  created_at: string
  updated_at: string | null
}

/**
 * An email of a thread. Addresses, references and headers are JSON text, in columns named apart from
 * SQL's keywords (`from`, `to`, `references`). PostgreSQL also keeps the insertion order in `seq`.
 */
export interface EmailMessagesTable {
  id: string
  tenant_id: string
  integration_id: string
  conversation_id: string
  message_id: string
  direction: string
  status: string
  message_id_header: string
  in_reply_to: string | null
  /** The `references` ids, a JSON array of strings. */
  reference_ids: string
  subject: string | null
  /** The `from` address, a JSON object, or null. */
  from_address: string | null
  /** The `to` addresses, a JSON array. */
  to_addresses: string
  /** The `cc` addresses, a JSON array. */
  cc_addresses: string
  /** The `reply_to` addresses, a JSON array. */
  reply_to_addresses: string
  text_body: string | null
  html_body: string | null
  /** Every header, a JSON array of `{ name, value }`. */
  headers: string
  error: string | null
  sent_at: string | null
  created_at: string
  updated_at: string | null
}

export interface EmailAttachmentsTable {
  id: string
  tenant_id: string
  email_message_id: string
  attachment_id: string
  filename: string
  content_type: string
  /** BIGINT: read through `Number`, as a driver may hand it back as text or a bigint. */
  file_size: number
  is_inline: Flag
  content_id: string | null
  position: number
  created_at: string
}

export interface EmailInlineImagesTable {
  attachment_id: string
  tenant_id: string
  content_id: string
  created_at: string
}

/** A tenant's list (see migration 0011); deleted softly. */
export interface ListsTable {
  id: string
  tenant_id: string
  name: string
  slug: string
  is_default: Flag
  type: string
  /** A dynamic list's conditions, a JSON object, or null. */
  filters: string | null
  welcome_message: string | null
  created_at: string
  updated_at: string | null
  deleted_at: string | null
}

/** A contact on a list, now or formerly: one row per list and contact. */
export interface ListSubscriptionsTable {
  tenant_id: string
  list_id: string
  contact_id: string
  status: string
  optin_method: string
  optin_channel_id: string | null
  subscribed_at: string
  unsubscribed_at: string | null
  unsubscribe_method: string | null
  updated_at: string
}

/** A contact's refusal of marketing: one row per tenant, contact and channel. */
export interface MarketingOptOutsTable {
  tenant_id: string
  contact_id: string
  /** The channel id, or '' for every channel (a primary key column is never null). */
  channel_key: string
  source: string
  opted_out_at: string
}

/** A campaign (see migration 0012) and the lease of the background work on it. */
export interface CampaignsTable {
  id: string
  tenant_id: string
  name: string
  status: string
  throttle_reason: string | null
  /** JSON array of channel ids. */
  channel_ids: string
  template_id: string | null
  /** JSON array of strings. */
  variable_values: string
  /** JSON object: `list_ids` and `contact_ids`. */
  audience: string
  timezone: string
  skip_duplicates: Flag
  /** JSON object, or null without split sending. */
  split_sending: string | null
  send_at: string | null
  warmup_acknowledged_at: string | null
  warmup_acknowledged_audience: number | null
  audience_size: number | null
  next_run_at: string | null
  started_at: string | null
  paused_at: string | null
  completed_at: string | null
  created_at: string
  updated_at: string | null
  lease_until: string | null
  /** Who holds the lease: a token new with every claim, null when nobody does. */
  holder: string | null
}

/** One recipient of a campaign: one row per campaign and `seq`. */
export interface CampaignRecipientsTable {
  tenant_id: string
  campaign_id: string
  seq: number
  contact_id: string
  channel_id: string | null
  state: string
  skip_reason: string | null
  batch_day: number
  planned_at: string
  handed_at: string | null
  message_id: string | null
  external_id: string | null
  error: string | null
  updated_at: string
}

/** One day's batch of a campaign on a channel: one row per campaign, channel and day. */
export interface CampaignBatchesTable {
  tenant_id: string
  campaign_id: string
  channel_id: string
  day: number
  planned_size: number
  starts_at: string
}

/** A flow of a chat-app channel (see migration 0013). */
export interface FlowDefinitionsTable {
  id: string
  tenant_id: string
  channel_id: string
  name: string
  meta_flow_id: string
  status: string | null
  health_status: string | null
  /** JSON object: alert event → `ACTIVATED` or `DEACTIVATED`. */
  alerts: string
  created_at: string
  updated_at: string | null
}

/** A numbered version of a flow definition: one row per definition and number. */
export interface FlowVersionsTable {
  id: string
  tenant_id: string
  definition_id: string
  number: number
  /** JSON array of screens. */
  screens: string
  /** JSON array of writeback mappings. */
  writeback: string
  created_at: string
}

/** A send of a flow to a contact; its flow token's hash is unique. */
export interface FlowSessionsTable {
  id: string
  tenant_id: string
  definition_id: string
  version_id: string | null
  version_number: number | null
  contact_id: string | null
  conversation_id: string | null
  channel_id: string
  sender_type: string
  status: string
  flow_token_hash: string
  last_screen: string | null
  /** JSON object, or null before an answer. */
  answers: string | null
  /** JSON object, or null before the writeback. */
  writeback_result: string | null
  last_error: string | null
  message_id: string | null
  answer_message_id: string | null
  created_at: string
  opened_at: string | null
  completed_at: string | null
  expires_at: string
}

/** A custom field a tenant's contacts may hold: one key per tenant. */
export interface CustomFieldDefinitionsTable {
  id: string
  tenant_id: string
  key: string
  type: string
  editable: Flag
  created_at: string
}

/** A tag of a tenant: one name per tenant. */
export interface TagsTable {
  id: string
  tenant_id: string
  name: string
  created_at: string
}

/** A tag on a contact: one row per tenant, contact and tag. */
export interface ContactTagsTable {
  tenant_id: string
  contact_id: string
  tag_id: string
  tagged_at: string
}
