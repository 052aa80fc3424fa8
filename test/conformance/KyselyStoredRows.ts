// Type imports only: the built-package test loads this file next to the suite and adapter from dist/.
import type { Kysely } from "kysely"
import type { Database } from "../../adapters/kysely/Database.ts"
import type { EventEnvelope } from "../../src/kernel/EventEnvelope.ts"
import type { AttachmentOrigin } from "../../src/ports/AttachmentStore.ts"
import { type CampaignRecord, type CampaignStatus, type RecipientState, type SplitSending, THROTTLE_REASONS, type ThrottleReason } from "../../src/ports/CampaignStore.ts"
import type { EmailAddressValue, EmailHeader, EmailMessageStatus } from "../../src/ports/EmailStore.ts"
import type { CustomFieldRecord, FlowScreen, FlowSessionRecord, WritebackMapping } from "../../src/ports/FlowStore.ts"
import type { InboundPayloadStatus, InboundSource } from "../../src/ports/InboundStore.ts"
import type { ListFilters, ListType, OptinMethod, SubscriptionRecord } from "../../src/ports/ListStore.ts"
import type { MessageDirection, MessageError, MessageStatus, MessageStatusReport } from "../../src/ports/MessageStore.ts"
import type { TeamChatKind } from "../../src/ports/TeamChatStore.ts"
import type { DeliveryStatus } from "../../src/ports/WebhookDeliveryStore.ts"
import type { RetryStrategy } from "../../src/ports/WebhookEndpointStore.ts"
import type { StoredRows } from "./StorageAdapter.ts"
import type { StoredSummarySection } from "../../src/ports/SummaryStore.ts"

// Database.ts documents the stored form: booleans as 0/1 integers, structured values as JSON text.
// Decoding here, independently of the stores, also checks that rows are stored in that form.
const flag = (value: number): boolean => {
  if (value !== 0 && value !== 1) throw new Error(`a stored flag must be 0 or 1, found ${JSON.stringify(value)}`)
  return value === 1
}

const json = (text: string): unknown => {
  if (typeof text !== "string") throw new Error(`a stored JSON value must be text, found ${typeof text}`)
  return JSON.parse(text)
}

const oneOf = <const A extends string>(what: string, allowed: ReadonlyArray<A>) => (value: string): A => {
  if (!(allowed as ReadonlyArray<string>).includes(value)) {
    throw new Error(`a stored ${what} must be one of ${allowed.join(", ")}, found ${JSON.stringify(value)}`)
  }
  return value as A
}
const channelStatus = oneOf("channel status", ["active", "disconnected"])
const sourceFilterMode = oneOf("source_filter_mode", ["all", "selected"])
const retryStrategy = oneOf<RetryStrategy>("retry_strategy", ["exponential", "linear", "none"])
const deliveryStatus = oneOf<DeliveryStatus>("delivery status", ["pending", "success", "failed", "retrying", "dead_letter", "queued"])
const inboundSource = oneOf<InboundSource>("inbound source", ["chatapp", "email"])
const inboundStatus = oneOf<InboundPayloadStatus>("inbound payload status", ["pending", "processed", "failed"])
const summaryStatus = oneOf("summary status", ["ok", "pending", "failed"])
const summaryKind = oneOf("summary kind", ["image", "pdf"])
const summarySource = oneOf("summary source", ["on_demand", "agent"])
const creditReason = oneOf("credit reason", ["grant", "summary"])
const conversationStatus = oneOf("conversation status", ["open", "closed"])
const teamChatKind = oneOf<TeamChatKind>("team chat kind", ["channel", "dm"])
const conversationKind = oneOf("conversation kind", ["chat", "email"])
const integrationStatus = oneOf("email integration status", ["active", "disabled"])
const emailStatus = oneOf<EmailMessageStatus>("email status", ["received", "pending", "sent", "failed"])
const listType = oneOf<ListType>("list type", ["static", "dynamic"])
const subscriptionStatus = oneOf<SubscriptionRecord["status"]>("subscription status", ["subscribed", "unsubscribed"])
const optinMethod = oneOf<OptinMethod>("opt-in method", ["keyword", "api", "import", "flow"])
const direction = oneOf<MessageDirection>("direction", ["inbound", "outbound"])
const messageStatus = oneOf<MessageStatus>("message status", ["received", "pending", "sent", "delivered", "read", "failed"])
const reportedStatus = oneOf<MessageStatusReport["status"]>("reported status", ["sent", "delivered", "read", "failed"])
const attachmentOrigin = oneOf<AttachmentOrigin>("attachment origin", ["chatapp_media", "upload", "url", "email", "email_inline"])
const campaignStatus = oneOf<CampaignStatus>("campaign status", ["draft", "scheduled", "sending", "paused", "completed"])
const throttleReason = oneOf<ThrottleReason>("throttle reason", THROTTLE_REASONS)
const recipientState = oneOf<RecipientState>("recipient state", ["pending", "sending", "sent", "delivered", "read", "failed", "skipped"])
const senderType = oneOf<FlowSessionRecord["sender_type"]>("flow sender type", ["inbox", "campaign", "automation", "api", "adopted"])
const customFieldType = oneOf<CustomFieldRecord["type"]>("custom field type", ["text", "number", "boolean", "date"])

/** An integer column as a number: PostgreSQL hands BIGINT back as text unless told otherwise. */
const integer = (value: number | string): number => {
  const n = Number(value)
  if (!Number.isSafeInteger(n)) throw new Error(`a stored integer must be one, found ${JSON.stringify(value)}`)
  return n
}
const integerOrNull = (value: number | string | null): number | null => (value === null ? null : integer(value))

const messageError = (text: string | null): MessageError | null => (text === null ? null : json(text) as MessageError)

/** Stored bytes as a plain Uint8Array: the drivers hand back a Buffer or a Uint8Array, never text. */
const bytes = (value: unknown): Uint8Array => {
  if (!(value instanceof Uint8Array)) throw new Error(`stored bytes must be binary, found ${typeof value}`)
  return new Uint8Array(value)
}

const addresses = (text: string): Array<EmailAddressValue> => {
  const value = json(text)
  if (!Array.isArray(value)) throw new Error(`stored addresses must be a JSON array, found ${text}`)
  return value as Array<EmailAddressValue>
}

/** Compares keys as stored text, code unit by code unit, whatever the database's collation. */
const byKeys = <A>(...keys: ReadonlyArray<(row: A) => string>) => (a: A, b: A): number => {
  for (const key of keys) {
    const x = key(a)
    const y = key(b)
    if (x !== y) return x < y ? -1 : 1
  }
  return 0
}

/** A stored JSON object (not an array, not null). */
const jsonObject = (text: string): Record<string, unknown> => {
  const value = json(text)
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new Error(`a stored JSON object must be one, found ${text}`)
  }
  return value as Record<string, unknown>
}
const jsonObjectOrNull = (text: string | null): Record<string, unknown> | null => (text === null ? null : jsonObject(text))

/** A stored JSON array. */
const jsonArray = (text: string): Array<unknown> => {
  const value = json(text)
  if (!Array.isArray(value)) throw new Error(`a stored JSON array must be one, found ${text}`)
  return value
}

const jsonList = (text: string | null): Array<string> | null => text === null ? null : json(text) as Array<string>

// The columns of each record, named so a column added for other uses (a claim's lease) is not read.
const WEBHOOK_ENDPOINT_COLUMNS = [
  "id", "tenant_id", "name", "url", "secret", "authorization_header", "subscribed_events", "source_filter_mode",
  "filtered_channel_ids", "filtered_email_integration_ids", "retry_strategy", "max_retries", "timeout_seconds",
  "is_active", "is_verified", "consecutive_failures", "suspended_at", "next_reactivation_at", "reactivation_attempts",
  "permanently_deactivated_at", "last_success_at", "last_failure_at", "last_error", "created_at", "updated_at",
  "propagate_trace_context"
] as const
const INBOUND_PAYLOAD_COLUMNS = [
  "id", "source", "route_key", "body", "content_type", "received_at", "status", "attempts", "next_attempt_at", "lease_until",
  "processed_at", "note"
] as const
const WEBHOOK_DELIVERY_COLUMNS = [
  "id", "tenant_id", "webhook_endpoint_id", "event_id", "event_type", "envelope", "outbox_seq", "previous_delivery_id",
  "created_at", "status", "attempt_number", "max_retries", "retry_strategy", "next_retry_at", "completed_at",
  "response_status_code", "response_time_ms", "error_message"
] as const

// A campaign's lease (`lease_until`, `holder`) is the claim's, not part of the record.
const CAMPAIGN_COLUMNS = [
  "id", "tenant_id", "name", "status", "throttle_reason", "channel_ids", "template_id", "variable_values", "audience",
  "timezone", "skip_duplicates", "split_sending", "send_at", "warmup_acknowledged_at", "warmup_acknowledged_audience",
  "audience_size", "next_run_at", "started_at", "paused_at", "completed_at", "created_at", "updated_at"
] as const

// PostgreSQL's `seq` is the insertion order (migration 0010), not a field of the record.
const EMAIL_MESSAGE_COLUMNS = [
  "id", "tenant_id", "integration_id", "conversation_id", "message_id", "direction", "status", "message_id_header",
  "in_reply_to", "reference_ids", "subject", "from_address", "to_addresses", "cc_addresses", "reply_to_addresses",
  "text_body", "html_body", "headers", "error", "sent_at", "created_at", "updated_at"
] as const

/** The Kysely adapter's rows as stored, read with plain queries on the root handle (never through the stores). */
export const kyselyStoredRows = (db: Kysely<Database>): StoredRows => ({
  user: (id) => db.selectFrom("users").selectAll().where("id", "=", id).executeTakeFirst(),
  billingAccount: (id) => db.selectFrom("billing_accounts").selectAll().where("id", "=", id).executeTakeFirst(),
  tenant: async (id) => {
    const row = await db.selectFrom("tenants").selectAll().where("id", "=", id).executeTakeFirst()
    return row && {
      ...row,
      is_trial: flag(row.is_trial),
      is_active: flag(row.is_active),
      ai_features_enabled: flag(row.ai_features_enabled),
      multi_agent_mode: flag(row.multi_agent_mode),
      sms_enabled: flag(row.sms_enabled)
    }
  },
  apiKey: async (lookup) => {
    const row = await db.selectFrom("api_keys").selectAll().where("lookup", "=", lookup).executeTakeFirst()
    return row && { ...row, scopes: json(row.scopes) as Array<string>, is_parent: flag(row.is_parent) }
  },
  contacts: async (tenantId) => {
    const rows = await db.selectFrom("contacts").selectAll().where("tenant_id", "=", tenantId).execute()
    return rows.map((row) => ({ ...row, custom_fields: json(row.custom_fields) as Record<string, unknown> }))
  },
  outboxEvents: async (tenantId) => {
    const rows = await db.selectFrom("outbox_events")
      .select(["seq", "id", "type", "event_id", "created_at", "tenant_id", "data", "fanned_out_at"])
      .where("tenant_id", "=", tenantId).orderBy("seq").execute()
    return rows.map(({ seq, fanned_out_at, data, ...envelope }) => ({
      seq: integer(seq),
      event: { ...envelope, data: json(data) as Record<string, unknown> },
      fanned_out_at
    }))
  },
  channels: async (tenantId) => {
    const rows = await db.selectFrom("channels").selectAll().where("tenant_id", "=", tenantId).execute()
    return rows.map((row) => ({
      ...row,
      status: channelStatus(row.status),
      config: json(row.config) as Record<string, string>,
      secrets: json(row.secrets) as Record<string, string>
    }))
  },
  connectTokens: async (tenantId) => {
    const rows = await db.selectFrom("connect_tokens").selectAll().where("tenant_id", "=", tenantId).execute()
    return rows.map((row) => ({ ...row, allowed_channel_types: json(row.allowed_channel_types) as Array<string> }))
  },
  webhookEndpoints: async (tenantId) => {
    const rows = await db.selectFrom("webhook_endpoints").select(WEBHOOK_ENDPOINT_COLUMNS).where("tenant_id", "=", tenantId).execute()
    return rows.map((row) => ({
      ...row,
      subscribed_events: json(row.subscribed_events) as Array<string>,
      source_filter_mode: sourceFilterMode(row.source_filter_mode),
      filtered_channel_ids: jsonList(row.filtered_channel_ids),
      filtered_email_integration_ids: jsonList(row.filtered_email_integration_ids),
      retry_strategy: retryStrategy(row.retry_strategy),
      is_active: flag(row.is_active),
      is_verified: flag(row.is_verified),
      propagate_trace_context: flag(row.propagate_trace_context)
    }))
  },
  webhookDeliveries: async (tenantId) => {
    const rows = await db.selectFrom("webhook_deliveries").select(WEBHOOK_DELIVERY_COLUMNS).where("tenant_id", "=", tenantId).execute()
    return rows.map((row) => ({
      ...row,
      envelope: json(row.envelope) as EventEnvelope,
      outbox_seq: integer(row.outbox_seq),
      status: deliveryStatus(row.status),
      retry_strategy: retryStrategy(row.retry_strategy),
      attempt_number: integer(row.attempt_number),
      max_retries: integer(row.max_retries),
      response_status_code: integerOrNull(row.response_status_code),
      response_time_ms: integerOrNull(row.response_time_ms)
    }))
  },
  fanOutLease: async (id) => {
    const row = await db.selectFrom("webhook_fanout_leases").selectAll().where("id", "=", id).executeTakeFirst()
    return row && { ...row, seqs: (json(row.seqs) as Array<number | string>).map(integer).sort((a, b) => a - b) }
  },
  inboundPayload: async (id) => {
    const row = await db.selectFrom("inbound_payloads").select(INBOUND_PAYLOAD_COLUMNS).where("id", "=", id).executeTakeFirst()
    return row && {
      ...row,
      source: inboundSource(row.source),
      body: bytes(row.body),
      status: inboundStatus(row.status),
      attempts: integer(row.attempts)
    }
  },
  inboundHandled: async (source, key) => {
    const row = await db.selectFrom("inbound_handled").select("handled_at").where("source", "=", source).where("key", "=", key)
      .executeTakeFirst()
    return row?.handled_at
  },
  conversations: async (tenantId) => {
    const rows = await db.selectFrom("conversations").selectAll().where("tenant_id", "=", tenantId).execute()
    return rows.map((row) => ({ ...row, status: conversationStatus(row.status), kind: conversationKind(row.kind) }))
  },
  messages: async (tenantId) => {
    const rows = await db.selectFrom("messages").selectAll().where("tenant_id", "=", tenantId).execute()
    // PostgreSQL's `seq` is the insertion order (migration 0008) and `pending_at` the sweep's key (0026), not fields of the record.
    return rows.map(({ seq: _seq, pending_at: _pendingAt, ...row }: typeof rows[number] & { readonly seq?: unknown; readonly pending_at?: unknown }) => ({
      ...row,
      direction: direction(row.direction),
      status: messageStatus(row.status),
      content: json(row.content) as Record<string, unknown>,
      error: messageError(row.error)
    }))
  },
  messageStatuses: async (tenantId) => {
    const rows = await db.selectFrom("message_statuses").selectAll().where("tenant_id", "=", tenantId).execute()
    return rows.map((row) => ({ ...row, status: reportedStatus(row.status), error: messageError(row.error) }))
  },
  attachments: async (tenantId) => {
    const rows = await db.selectFrom("attachments").selectAll().where("tenant_id", "=", tenantId).execute()
    return rows.map((row) => ({
      ...row,
      direction: direction(row.direction),
      origin: attachmentOrigin(row.origin),
      file_size: integer(row.file_size)
    }))
  },
  emailIntegrations: async (tenantId) => {
    const rows = await db.selectFrom("email_integrations").selectAll().where("tenant_id", "=", tenantId).execute()
    return rows.map((row) => ({ ...row, status: integrationStatus(row.status) }))
  },
  emailMessages: async (tenantId) => {
    const rows = await db.selectFrom("email_messages").select(EMAIL_MESSAGE_COLUMNS).where("tenant_id", "=", tenantId).execute()
    return rows.map(({ reference_ids, from_address, to_addresses, cc_addresses, reply_to_addresses, headers, ...row }) => ({
      ...row,
      direction: direction(row.direction),
      status: emailStatus(row.status),
      references: json(reference_ids) as Array<string>,
      from: from_address === null ? null : json(from_address) as EmailAddressValue,
      to: addresses(to_addresses),
      cc: addresses(cc_addresses),
      reply_to: addresses(reply_to_addresses),
      headers: json(headers) as Array<EmailHeader>
    }))
  },
  emailAttachments: async (tenantId) => {
    const rows = await db.selectFrom("email_attachments").selectAll().where("tenant_id", "=", tenantId).execute()
    return rows.map((row) => ({
      ...row,
      file_size: integer(row.file_size),
      is_inline: flag(row.is_inline),
      position: integer(row.position)
    }))
  },
  inlineImages: (tenantId) =>
    db.selectFrom("email_inline_images").selectAll().where("tenant_id", "=", tenantId).orderBy("attachment_id").execute(),
  lists: async (tenantId) => {
    const rows = await db.selectFrom("lists").selectAll().where("tenant_id", "=", tenantId).execute()
    return rows.map((row) => ({
      ...row,
      is_default: flag(row.is_default),
      type: listType(row.type),
      filters: row.filters === null ? null : json(row.filters) as ListFilters
    }))
  },
  listSubscriptions: async (tenantId) => {
    const rows = await db.selectFrom("list_subscriptions").selectAll().where("tenant_id", "=", tenantId).execute()
    return rows
      .map((row) => ({ ...row, status: subscriptionStatus(row.status), optin_method: optinMethod(row.optin_method) }))
      .sort(byKeys((s) => s.list_id, (s) => s.contact_id))
  },
  // An opt-out for every channel is stored under the channel key '' (migration 0011).
  marketingOptOuts: async (tenantId) => {
    const rows = await db.selectFrom("marketing_opt_outs").selectAll().where("tenant_id", "=", tenantId).execute()
    return rows
      .sort(byKeys((o) => o.contact_id, (o) => o.channel_key))
      .map(({ channel_key, ...row }) => ({ ...row, channel_id: channel_key === "" ? null : channel_key }))
  },
  campaigns: async (tenantId) => {
    const rows = await db.selectFrom("campaigns").select(CAMPAIGN_COLUMNS).where("tenant_id", "=", tenantId).execute()
    return rows.map((row) => ({
      ...row,
      status: campaignStatus(row.status),
      throttle_reason: row.throttle_reason === null ? null : throttleReason(row.throttle_reason),
      channel_ids: json(row.channel_ids) as Array<string>,
      variable_values: json(row.variable_values) as Array<string>,
      audience: json(row.audience) as CampaignRecord["audience"],
      skip_duplicates: flag(row.skip_duplicates),
      split_sending: row.split_sending === null ? null : json(row.split_sending) as SplitSending,
      warmup_acknowledged_audience: integerOrNull(row.warmup_acknowledged_audience),
      audience_size: integerOrNull(row.audience_size)
    }))
  },
  campaignRecipients: async (tenantId) => {
    const rows = await db.selectFrom("campaign_recipients").selectAll().where("tenant_id", "=", tenantId).execute()
    return rows
      .map((row) => ({ ...row, seq: integer(row.seq), state: recipientState(row.state), batch_day: integer(row.batch_day) }))
      .sort((a, b) => byKeys<typeof a>((r) => r.campaign_id)(a, b) || a.seq - b.seq)
  },
  campaignBatches: async (tenantId) => {
    const rows = await db.selectFrom("campaign_batches").selectAll().where("tenant_id", "=", tenantId).execute()
    return rows
      .map((row) => ({ ...row, day: integer(row.day), planned_size: integer(row.planned_size) }))
      .sort((a, b) => byKeys<typeof a>((r) => r.campaign_id, (r) => r.channel_id)(a, b) || a.day - b.day)
  },
  flowDefinitions: async (tenantId) => {
    const rows = await db.selectFrom("flow_definitions").selectAll().where("tenant_id", "=", tenantId).execute()
    return rows.map((row) => ({ ...row, alerts: jsonObject(row.alerts) as Record<string, string> }))
  },
  flowVersions: async (tenantId) => {
    const rows = await db.selectFrom("flow_versions").selectAll().where("tenant_id", "=", tenantId).execute()
    return rows.map((row) => ({
      ...row,
      number: integer(row.number),
      screens: jsonArray(row.screens) as Array<FlowScreen>,
      writeback: jsonArray(row.writeback) as Array<WritebackMapping>
    }))
  },
  flowSessions: async (tenantId) => {
    const rows = await db.selectFrom("flow_sessions").selectAll().where("tenant_id", "=", tenantId).execute()
    return rows.map((row) => ({
      ...row,
      version_number: integerOrNull(row.version_number),
      sender_type: senderType(row.sender_type),
      answers: jsonObjectOrNull(row.answers),
      writeback_result: jsonObjectOrNull(row.writeback_result)
    }))
  },
  customFields: async (tenantId) => {
    const rows = await db.selectFrom("custom_field_definitions").selectAll().where("tenant_id", "=", tenantId).execute()
    return rows.map((row) => ({ ...row, type: customFieldType(row.type), editable: flag(row.editable) }))
  },
  tags: (tenantId) => db.selectFrom("tags").selectAll().where("tenant_id", "=", tenantId).execute(),
  contactTags: async (tenantId) => {
    const rows = await db.selectFrom("contact_tags").selectAll().where("tenant_id", "=", tenantId).execute()
    return rows.sort(byKeys((r) => r.contact_id, (r) => r.tag_id))
  },
  teamChatChannels: async (tenantId) => {
    const rows = await db.selectFrom("team_chat_channels").selectAll().where("tenant_id", "=", tenantId).execute()
    const seen = rows.length === 0 ? [] : await db.selectFrom("team_chat_channel_tenants").selectAll()
      .where("channel_id", "in", rows.map((row) => row.id)).execute()
    return rows.map((row) => ({
      ...row,
      kind: teamChatKind(row.kind),
      has_external_guests: flag(row.has_external_guests),
      shared_with_tenant_ids: seen.filter((s) => s.channel_id === row.id && s.tenant_id !== row.tenant_id)
        .map((s) => s.tenant_id).sort()
    }))
  },
  teamChatMembers: async (tenantId) => {
    const rows = await db.selectFrom("team_chat_members").selectAll().where("tenant_id", "=", tenantId).execute()
    return rows.sort(byKeys((r) => r.channel_id, (r) => r.user_id))
  },
  teamChatMessages: async (tenantId) => {
    const rows = await db.selectFrom("team_chat_messages").selectAll().where("tenant_id", "=", tenantId).execute()
    const files = rows.length === 0 ? [] : await db.selectFrom("team_chat_message_attachments").selectAll()
      .where("message_id", "in", rows.map((row) => row.id)).execute()
    return rows.map(({ seq: _seq, ...row }: typeof rows[number] & { readonly seq?: unknown }) => ({
      ...row,
      attachment_ids: files.filter((f) => f.message_id === row.id).sort((a, b) => Number(a.position) - Number(b.position))
        .map((f) => f.attachment_id)
    }))
  },
  attachmentSummaries: async (tenantId) => {
    const rows = await db.selectFrom("attachment_summaries").selectAll().where("tenant_id", "=", tenantId).orderBy("id").execute()
    return rows.map((row) => ({
      ...row,
      status: summaryStatus(row.status),
      kind: summaryKind(row.kind),
      source: summarySource(row.source),
      sections: json(row.sections) as Array<StoredSummarySection>,
      pages_read: row.pages_read === null ? null : Number(row.pages_read),
      pages_total: row.pages_total === null ? null : Number(row.pages_total),
      truncated: flag(Number(row.truncated)),
      generation: Number(row.generation)
    }))
  },
  creditEntries: async (tenantId) => {
    const rows = await db.selectFrom("ai_credit_entries").selectAll().where("tenant_id", "=", tenantId).orderBy("id").execute()
    return rows.map((row) => ({ ...row, amount: Number(row.amount), reason: creditReason(row.reason) }))
  },
  creditBalance: async (tenantId) => {
    const row = await db.selectFrom("ai_credit_balances").selectAll().where("tenant_id", "=", tenantId).executeTakeFirst()
    return row === undefined ? undefined : { balance: Number(row.balance), charged_total: Number(row.charged_total) }
  },
  rateCounters: async (tenantId) => {
    const rows = await db.selectFrom("summary_rate_counters").select(["key", "window_start", "count"])
      .where("tenant_id", "=", tenantId).orderBy("key").orderBy("window_start").execute()
    return rows.map((row) => ({ ...row, count: Number(row.count) }))
  }
})
