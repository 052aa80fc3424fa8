/**
 * The tables of the chat-app traffic and what it carries: inbound payloads, conversations, messages
 * and their statuses, attachments, templates and the library cache, and each number's sending limit
 * and send slots, as stored (see `Database.ts` for the rules every table follows).
 */

/** A request from outside as received, and its processing lease (see migration 0008). */
export interface InboundPayloadsTable {
  id: string
  source: string
  route_key: string | null
  body: Uint8Array
  content_type: string | null
  received_at: string
  status: string
  attempts: number
  next_attempt_at: string
  lease_until: string | null
  /** Who holds the lease: a token new with every claim, null when nobody does. */
  holder: string | null
  processed_at: string | null
  note: string | null
  /** The `traceparent` of the span that stored the payload; null when tracing was off (migration 0018). */
  trace_context: string | null
}

/** The keys of inbound items already handled, per source. */
export interface InboundHandledTable {
  source: string
  key: string
  handled_at: string
}

export interface ConversationsTable {
  id: string
  tenant_id: string
  channel_id: string
  contact_id: string
  status: string
  /** `chat` or `email` (migration 0010; `chat` for every conversation stored before it). */
  kind: string
  subject: string | null
  created_at: string
  updated_at: string | null
  closed_at: string | null
  last_message_at: string | null
  last_inbound_at: string | null
}

export interface MessagesTable {
  id: string
  tenant_id: string
  conversation_id: string
  channel_id: string
  contact_id: string | null
  direction: string
  message_type: string
  text: string | null
  content: string
  status: string
  external_id: string | null
  error: string | null
  created_at: string
  updated_at: string | null
  sent_at: string | null
  delivered_at: string | null
  read_at: string | null
  failed_at: string | null
}

/** The statuses the operator reported per message id, one row per status. */
export interface MessageStatusesTable {
  tenant_id: string
  channel_id: string
  external_id: string
  status: string
  occurred_at: string
  error: string | null
  received_at: string
}

export interface AttachmentsTable {
  id: string
  tenant_id: string
  message_id: string | null
  conversation_id: string | null
  direction: string
  origin: string
  filename: string
  content_type: string
  /** BIGINT: read through `Number`, as a driver may hand it back as text or a bigint. */
  file_size: number
  blob_key: string
  external_id: string | null
  created_at: string
}

export interface ChatappTemplatesTable {
  id: string
  tenant_id: string
  channel_id: string
  name: string
  language: string
  category: string
  status: string
  status_reason: string | null
  external_id: string | null
  library_template_name: string | null
  /** The components, a JSON array. */
  components: string
  attempt_id: string | null
  created_at: string
  updated_at: string | null
}

export interface LibraryCacheTable {
  business_account_id: string
  query_key: string
  /** The entries, a JSON array. */
  entries: string
  fetched_at: string
}

export interface SendingLimitsTable {
  tenant_id: string
  channel_id: string
  messaging_limit_tier: string | null
  quality_rating: string | null
  throughput_level: string | null
  phone_status: string | null
  source: string
  updated_at: string
}

/** Send slots per chat-app channel (migration 0020); times in epoch microseconds. */
export interface SendRatesTable {
  tenant_id: string
  channel_id: string
  next_free_us: number
  host_per_second: number | null
}
