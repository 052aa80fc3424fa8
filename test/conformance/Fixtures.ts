import { Effect, Option } from "effect"
import type { EventEnvelope } from "../../src/kernel/EventEnvelope.ts"
import { AccountStore, type BillingAccountRecord, type UserRecord } from "../../src/ports/AccountStore.ts"
import type { ApiKeyRecord } from "../../src/ports/ApiKeyStore.ts"
import type { AttachmentRecord } from "../../src/ports/AttachmentStore.ts"
import type { CampaignBatchRecord, CampaignRecipientRecord, CampaignRecord } from "../../src/ports/CampaignStore.ts"
import type { ChannelRecord } from "../../src/ports/ChannelStore.ts"
import type { ConnectTokenRecord } from "../../src/ports/ConnectTokenStore.ts"
import type { ContactRecord } from "../../src/ports/ContactStore.ts"
import type { ConversationRecord } from "../../src/ports/ConversationStore.ts"
import type {
  EmailAttachmentRecord,
  EmailIntegrationRecord,
  EmailMessageRecord,
  InlineImageRecord
} from "../../src/ports/EmailStore.ts"
import type {
  CustomFieldRecord,
  FlowDefinitionRecord,
  FlowSessionRecord,
  FlowVersionRecord,
  TagRecord
} from "../../src/ports/FlowStore.ts"
import type { InboundPayloadRecord } from "../../src/ports/InboundStore.ts"
import type { LibraryCacheRecord } from "../../src/ports/LibraryCacheStore.ts"
import type { ListRecord, MarketingOptOutRecord, SubscriptionRecord } from "../../src/ports/ListStore.ts"
import type { MessageRecord } from "../../src/ports/MessageStore.ts"
import type { SendingLimitRecord } from "../../src/ports/SendingLimitStore.ts"
import type { StorageError } from "../../src/ports/StorageError.ts"
import type { CreditEntryRecord, SummaryRecord } from "../../src/ports/SummaryStore.ts"
import type { TeamChatChannelRecord, TeamChatMessageRecord } from "../../src/ports/TeamChatStore.ts"
import type { TemplateRecord } from "../../src/ports/TemplateStore.ts"
import { type TenantRecord, TenantStore } from "../../src/ports/TenantStore.ts"
import { Transactor } from "../../src/ports/Transactor.ts"
import type { WebhookEndpointRecord } from "../../src/ports/WebhookEndpointStore.ts"
import * as EndpointMachine from "../../src/webhooks/EndpointMachine.ts"
import type { StorageCapabilities } from "./StorageAdapter.ts"

// Records are built with fresh ids and globally unique values (emails, slugs, lookups), so tests
// sharing one database never collide.
const id = (): string => globalThis.crypto.randomUUID()

// A fixed instant, as stored: fixed-width ISO 8601 UTC with milliseconds.
const AT = "2026-11-22T10:15:30.123Z"

/** A team chat channel of `tenantId` (not shared, no guests) made by a new user id. */
export const teamChatChannelRecord = (tenantId: string, overrides: Partial<TeamChatChannelRecord> = {}): TeamChatChannelRecord => ({
  id: id(),
  tenant_id: tenantId,
  kind: "channel",
  name: "général — 山田 🚀 \"quoted\"",
  shared_with_tenant_ids: [],
  has_external_guests: false,
  dm_key: null,
  created_by: id(),
  created_at: AT,
  ...overrides
})

/** A top-level message of `channel` by its creator, in the channel's tenant, without files. */
export const teamChatMessageRecord = (
  channel: TeamChatChannelRecord,
  overrides: Partial<TeamChatMessageRecord> = {}
): TeamChatMessageRecord => ({
  id: id(),
  tenant_id: channel.tenant_id,
  channel_id: channel.id,
  author_user_id: channel.created_by,
  text: "Hallo 👋 — see the file",
  parent_message_id: null,
  attachment_ids: [],
  created_at: AT,
  ...overrides
})

/** A user with a unique email and token lookup. */
export const userRecord = (overrides: Partial<UserRecord> = {}): UserRecord => {
  const userId = id()
  return {
    id: userId,
    email: `user-${userId}@example.com`,
    token_lookup: `lookup-${userId}`,
    token_hash: `hash-${userId}`,
    created_at: AT,
    ...overrides
  }
}

/** A billing account owned by `ownerUserId`. */
export const billingAccountRecord = (ownerUserId: string, overrides: Partial<BillingAccountRecord> = {}): BillingAccountRecord => ({
  id: id(),
  owner_user_id: ownerUserId,
  name: "Acme Billing",
  created_at: AT,
  ...overrides
})

/** A tenant in `billingAccountId` with a unique slug and the workspace defaults. */
export const tenantRecord = (billingAccountId: string, overrides: Partial<TenantRecord> = {}): TenantRecord => {
  const tenantId = id()
  return {
    id: tenantId,
    billing_account_id: billingAccountId,
    name: "Acme",
    slug: `acme-${tenantId}`,
    company_email: null,
    support_email: null,
    pricing_model_id: null,
    is_trial: true,
    sms_enabled: false,
    trial_ends_at: "2026-12-06T10:15:30.123Z",
    is_active: true,
    subscription_tier: "trial",
    ai_features_enabled: false,
    multi_agent_mode: false,
    auto_summarize_on_close: "disabled",
    auto_transcript_export_format: "none",
    created_at: AT,
    updated_at: null,
    ...overrides
  }
}

/** An API key of `tenantId` with a unique lookup. */
export const apiKeyRecord = (tenantId: string, overrides: Partial<ApiKeyRecord> = {}): ApiKeyRecord => {
  const keyId = id()
  return {
    id: keyId,
    tenant_id: tenantId,
    name: null,
    lookup: `key-${keyId}`,
    secret_hash: `secret-hash-${keyId}`,
    prefix: "omk_live_ab12",
    scopes: ["contacts:read"],
    is_parent: false,
    user_id: null,
    expires_at: null,
    revoked_at: null,
    created_at: AT,
    ...overrides
  }
}

/** A contact of `tenantId` with only a name. */
export const contactRecord = (tenantId: string, overrides: Partial<ContactRecord> = {}): ContactRecord => ({
  id: id(),
  tenant_id: tenantId,
  name: "Ada",
  phone: null,
  email: null,
  language: null,
  custom_fields: {},
  created_at: AT,
  updated_at: null,
  ...overrides
})

/** An outbox event of `tenantId`. */
export const outboxEvent = (tenantId: string, overrides: Partial<EventEnvelope> = {}): EventEnvelope => {
  const eventId = id()
  return {
    id: eventId,
    type: "contact.created",
    event_id: eventId,
    created_at: AT,
    tenant_id: tenantId,
    data: { contact: { id: id() } },
    ...overrides
  }
}

/** An active chat-app channel of `tenantId` with a number of its own, connected without a link. */
export const channelRecord = (tenantId: string, overrides: Partial<ChannelRecord> = {}): ChannelRecord => {
  // An active number belongs to one channel: each record holds one of its own.
  const number = `10655${BigInt(`0x${id().replaceAll("-", "")}`).toString().slice(-10)}`
  return {
    id: id(),
    tenant_id: tenantId,
    platform: "chatapp",
    name: `Chat app number ${number}`,
    status: "active",
    external_id: number,
    config: { phone_number_id: number, business_account_id: "2065550100" },
    secrets: { access_token: "EAAG-secret-access-token-0001" },
    created_via_connect_token_id: null,
    created_at: AT,
    updated_at: null,
    disconnected_at: null,
    ...overrides
  }
}

/** An unused connect token of `tenantId` with a unique lookup and the spec's default limits. */
export const connectTokenRecord = (tenantId: string, overrides: Partial<ConnectTokenRecord> = {}): ConnectTokenRecord => {
  const tokenId = id()
  const lookup = tokenId.replaceAll("-", "").slice(0, 12)
  return {
    id: tokenId,
    tenant_id: tenantId,
    name: null,
    lookup,
    secret_hash: `secret-hash-${tokenId}`,
    token_prefix: `occ_${lookup}`,
    allowed_channel_types: ["chatapp"],
    partner_name: "Acme",
    partner_redirect_url: null,
    expires_at: "2026-11-23T10:15:30.123Z",
    max_uses: 10,
    uses_count: 0,
    use_window_minutes: 30,
    use_window_ends_at: null,
    revoked_at: null,
    created_at: AT,
    ...overrides
  }
}

/** A new, active, unverified webhook endpoint of `tenantId` with the spec's defaults and no history. */
export const webhookEndpointRecord = (tenantId: string, overrides: Partial<WebhookEndpointRecord> = {}): WebhookEndpointRecord => {
  const endpointId = id()
  return {
    id: endpointId,
    tenant_id: tenantId,
    name: "Order updates",
    url: "https://hooks.example.com/omni",
    secret: `whsec_${endpointId.replaceAll("-", "")}`,
    authorization_header: null,
    subscribed_events: ["contact.created"],
    source_filter_mode: "all",
    filtered_channel_ids: null,
    filtered_email_integration_ids: null,
    retry_strategy: "exponential",
    max_retries: 8,
    timeout_seconds: 30,
    propagate_trace_context: false,
    ...EndpointMachine.make(),
    created_at: AT,
    updated_at: null,
    ...overrides
  }
}

/**
 * An open chat conversation of `tenantId` with no messages yet. Its channel and contact are fresh ids
 * unless given: the stores keep no reference to them.
 */
export const conversationRecord = (tenantId: string, overrides: Partial<ConversationRecord> = {}): ConversationRecord => ({
  id: id(),
  tenant_id: tenantId,
  channel_id: id(),
  contact_id: id(),
  status: "open",
  kind: "chat",
  subject: null,
  created_at: AT,
  updated_at: null,
  closed_at: null,
  last_message_at: null,
  last_inbound_at: null,
  ...overrides
})

/** An inbound text message received in `conversation`, with a unique operator id. */
export const messageRecord = (conversation: ConversationRecord, overrides: Partial<MessageRecord> = {}): MessageRecord => ({
  id: id(),
  tenant_id: conversation.tenant_id,
  conversation_id: conversation.id,
  channel_id: conversation.channel_id,
  contact_id: conversation.contact_id,
  direction: "inbound",
  message_type: "text",
  text: "Hello",
  content: {},
  status: "received",
  external_id: `wamid.${id()}`,
  error: null,
  created_at: AT,
  updated_at: null,
  sent_at: null,
  delivered_at: null,
  read_at: null,
  failed_at: null,
  ...overrides
})

/** An uploaded PDF of `tenantId`, attached to no message yet. */
export const attachmentRecord = (tenantId: string, overrides: Partial<AttachmentRecord> = {}): AttachmentRecord => {
  const attachmentId = id()
  return {
    id: attachmentId,
    tenant_id: tenantId,
    message_id: null,
    conversation_id: null,
    direction: "outbound",
    origin: "upload",
    filename: "invoice.pdf",
    content_type: "application/pdf",
    file_size: 48_213,
    blob_key: `${tenantId}/${attachmentId}`,
    external_id: null,
    created_at: AT,
    ...overrides
  }
}

/** A chat-app payload as received, pending and due at once. */
export const inboundPayloadRecord = (overrides: Partial<InboundPayloadRecord> = {}): InboundPayloadRecord => ({
  id: id(),
  source: "chatapp",
  route_key: null,
  body: new TextEncoder().encode(`{"object":"business_account","entry":[]}`),
  content_type: "application/json",
  received_at: AT,
  status: "pending",
  attempts: 0,
  next_attempt_at: AT,
  lease_until: null,
  processed_at: null,
  note: null,
  ...overrides
})

/**
 * An approved ordinary template of `tenantId` with a unique name, on a fresh channel id unless given
 * (the stores keep no reference to channels).
 */
export const templateRecord = (tenantId: string, overrides: Partial<TemplateRecord> = {}): TemplateRecord => {
  const templateId = id()
  return {
    id: templateId,
    tenant_id: tenantId,
    channel_id: id(),
    name: `order_update_${templateId.replaceAll("-", "_")}`,
    language: "en_US",
    category: "UTILITY",
    status: "approved",
    status_reason: null,
    external_id: `ext-${templateId}`,
    library_template_name: null,
    components: [{ type: "BODY", text: "Your order {{1}} has shipped." }],
    attempt_id: null,
    created_at: AT,
    updated_at: null,
    ...overrides
  }
}

/** A copy of one library answer for a fresh business account, with two entries. */
export const libraryCacheRecord = (overrides: Partial<LibraryCacheRecord> = {}): LibraryCacheRecord => ({
  business_account_id: `ba-${id()}`,
  query_key: "category=UTILITY&language=en_US",
  entries: JSON.stringify([{ name: "order_update", language: "en_US" }, { name: "payment_reminder", language: "en_US" }]),
  fetched_at: AT,
  ...overrides
})

/** The sending limit of a fresh channel id of `tenantId`, as read from the operator. */
export const sendingLimitRecord = (tenantId: string, overrides: Partial<SendingLimitRecord> = {}): SendingLimitRecord => ({
  tenant_id: tenantId,
  channel_id: id(),
  messaging_limit_tier: "TIER_1K",
  quality_rating: "GREEN",
  throughput_level: "STANDARD",
  phone_status: "CONNECTED",
  source: "operator",
  updated_at: AT,
  ...overrides
})

/** An active mailbox of `tenantId` with a unique address. */
export const emailIntegrationRecord = (tenantId: string, overrides: Partial<EmailIntegrationRecord> = {}): EmailIntegrationRecord => {
  const integrationId = id()
  return {
    id: integrationId,
    tenant_id: tenantId,
    address: `support-${integrationId}@mail.example.com`,
    display_name: "Acme Support",
    inbound_secret_hash: `secret-hash-${integrationId}`,
    status: "active",
    created_at: AT,
    updated_at: null,
    ...overrides
  }
}

/**
 * An email received on `integrationId` in `conversation`, with a unique Message-ID and no thread
 * before it. Its conversation message is a fresh id unless given: the store keeps no reference to it.
 */
export const emailMessageRecord = (
  conversation: ConversationRecord,
  integrationId: string,
  overrides: Partial<EmailMessageRecord> = {}
): EmailMessageRecord => {
  const emailId = id()
  return {
    id: emailId,
    tenant_id: conversation.tenant_id,
    integration_id: integrationId,
    conversation_id: conversation.id,
    message_id: id(),
    direction: "inbound",
    status: "received",
    message_id_header: `${emailId}@sender.example.com`,
    in_reply_to: null,
    references: [],
    subject: "Order 1234",
    from: { address: "ada@example.com", name: "Ada" },
    to: [{ address: "support@mail.example.com", name: null }],
    cc: [],
    reply_to: [],
    text_body: "Hello",
    html_body: null,
    headers: [{ name: "Subject", value: "Order 1234" }],
    error: null,
    sent_at: AT,
    created_at: AT,
    updated_at: null,
    ...overrides
  }
}

/** A PDF of `emailMessageId` at `position`, not inline. Its attachment is a fresh id unless given. */
export const emailAttachmentRecord = (
  tenantId: string,
  emailMessageId: string,
  position: number,
  overrides: Partial<EmailAttachmentRecord> = {}
): EmailAttachmentRecord => ({
  id: id(),
  tenant_id: tenantId,
  email_message_id: emailMessageId,
  attachment_id: id(),
  filename: `invoice-${position}.pdf`,
  content_type: "application/pdf",
  file_size: 48_213,
  is_inline: false,
  content_id: null,
  position,
  created_at: AT,
  ...overrides
})

/** An inline image upload of `tenantId`, for a fresh attachment id unless given. */
export const inlineImageRecord = (tenantId: string, overrides: Partial<InlineImageRecord> = {}): InlineImageRecord => {
  const attachmentId = id()
  return {
    attachment_id: attachmentId,
    tenant_id: tenantId,
    content_id: `${attachmentId}@omni`,
    created_at: AT,
    ...overrides
  }
}

/** A live static list of `tenantId` with a unique slug, not the default, with no filters and the default welcome. */
export const listRecord = (tenantId: string, overrides: Partial<ListRecord> = {}): ListRecord => {
  const listId = id()
  return {
    id: listId,
    tenant_id: tenantId,
    name: "Newsletter",
    slug: `newsletter-${listId}`,
    is_default: false,
    type: "static",
    filters: null,
    welcome_message: null,
    created_at: AT,
    updated_at: null,
    deleted_at: null,
    ...overrides
  }
}

/**
 * A subscription through the API of a fresh contact id to `listId` of `tenantId`, never unsubscribed.
 * The stores keep no reference to the list or the contact.
 */
export const subscriptionRecord = (
  tenantId: string,
  listId: string,
  overrides: Partial<SubscriptionRecord> = {}
): SubscriptionRecord => ({
  tenant_id: tenantId,
  list_id: listId,
  contact_id: id(),
  status: "subscribed",
  optin_method: "api",
  optin_channel_id: null,
  subscribed_at: AT,
  unsubscribed_at: null,
  unsubscribe_method: null,
  updated_at: AT,
  ...overrides
})

/** An opt-out by keyword of a fresh contact id of `tenantId`, on every channel. */
export const marketingOptOutRecord = (
  tenantId: string,
  overrides: Partial<MarketingOptOutRecord> = {}
): MarketingOptOutRecord => ({
  tenant_id: tenantId,
  contact_id: id(),
  channel_id: null,
  source: "keyword",
  opted_out_at: AT,
  ...overrides
})

/**
 * A draft campaign of `tenantId` on one fresh channel id, with no template, variables, audience, split
 * sending or schedule, and nothing for background work to do (`next_run_at` null).
 */
export const campaignRecord = (tenantId: string, overrides: Partial<CampaignRecord> = {}): CampaignRecord => ({
  id: id(),
  tenant_id: tenantId,
  name: "Black Friday",
  status: "draft",
  throttle_reason: null,
  channel_ids: [id()],
  template_id: null,
  variable_values: [],
  audience: { list_ids: [], contact_ids: [] },
  timezone: "UTC",
  skip_duplicates: false,
  split_sending: null,
  send_at: null,
  warmup_acknowledged_at: null,
  warmup_acknowledged_audience: null,
  audience_size: null,
  next_run_at: null,
  started_at: null,
  paused_at: null,
  completed_at: null,
  created_at: AT,
  updated_at: null,
  ...overrides
})

/**
 * Recipient `seq` of `campaign`: a fresh contact id, pending on the campaign's first channel in the
 * first day's batch, never handed. The stores keep no reference to the contact or the channel.
 */
export const campaignRecipientRecord = (
  campaign: CampaignRecord,
  seq: number,
  overrides: Partial<CampaignRecipientRecord> = {}
): CampaignRecipientRecord => ({
  tenant_id: campaign.tenant_id,
  campaign_id: campaign.id,
  seq,
  contact_id: id(),
  channel_id: campaign.channel_ids[0] ?? null,
  state: "pending",
  skip_reason: null,
  batch_day: 0,
  planned_at: AT,
  handed_at: null,
  message_id: null,
  external_id: null,
  error: null,
  updated_at: AT,
  ...overrides
})

/** Day `day`'s batch of `campaign` on its first channel. */
export const campaignBatchRecord = (
  campaign: CampaignRecord,
  day: number,
  overrides: Partial<CampaignBatchRecord> = {}
): CampaignBatchRecord => ({
  tenant_id: campaign.tenant_id,
  campaign_id: campaign.id,
  channel_id: campaign.channel_ids[0]!,
  day,
  planned_size: 100,
  starts_at: AT,
  ...overrides
})

/**
 * A flow of `tenantId` on a fresh channel id, under a unique platform flow id, with nothing reported
 * yet (no status, health or alerts).
 */
export const flowDefinitionRecord = (tenantId: string, overrides: Partial<FlowDefinitionRecord> = {}): FlowDefinitionRecord => ({
  id: id(),
  tenant_id: tenantId,
  channel_id: id(),
  name: "Lead capture",
  meta_flow_id: `flow-${id()}`,
  status: null,
  health_status: null,
  alerts: {},
  created_at: AT,
  updated_at: null,
  ...overrides
})

/** Version `number` of `definition`: one screen asking a name, written back to the contact's name. */
export const flowVersionRecord = (
  definition: FlowDefinitionRecord,
  number: number,
  overrides: Partial<FlowVersionRecord> = {}
): FlowVersionRecord => ({
  id: id(),
  tenant_id: definition.tenant_id,
  definition_id: definition.id,
  number,
  screens: [{ id: "WELCOME", inputs: [{ name: "name", type: "TextInput" }], sensitive_fields: [] }],
  writeback: [{ input: "name", target: "contact_field", field: "name" }],
  created_at: AT,
  ...overrides
})

/**
 * A session of `definition` sent from the inbox on its channel, with a unique token hash, no version,
 * contact, conversation or message, not answered and expiring a day later.
 */
export const flowSessionRecord = (
  definition: FlowDefinitionRecord,
  overrides: Partial<FlowSessionRecord> = {}
): FlowSessionRecord => ({
  id: id(),
  tenant_id: definition.tenant_id,
  definition_id: definition.id,
  version_id: null,
  version_number: null,
  contact_id: null,
  conversation_id: null,
  channel_id: definition.channel_id,
  sender_type: "inbox",
  status: "sent",
  flow_token_hash: `${id().replaceAll("-", "")}${id().replaceAll("-", "")}`,
  last_screen: null,
  answers: null,
  writeback_result: null,
  last_error: null,
  message_id: null,
  answer_message_id: null,
  created_at: AT,
  opened_at: null,
  completed_at: null,
  expires_at: "2026-11-23T10:15:30.123Z",
  ...overrides
})

/** An editable text custom field of `tenantId` under a unique key. */
export const customFieldRecord = (tenantId: string, overrides: Partial<CustomFieldRecord> = {}): CustomFieldRecord => ({
  id: id(),
  tenant_id: tenantId,
  key: `field_${id().replaceAll("-", "")}`,
  type: "text",
  editable: true,
  created_at: AT,
  ...overrides
})

/** A tag of `tenantId` under a unique name. */
export const tagRecord = (tenantId: string, overrides: Partial<TagRecord> = {}): TagRecord => ({
  id: id(),
  tenant_id: tenantId,
  name: `tag-${id()}`,
  created_at: AT,
  ...overrides
})

/** A pending first summary of a new attachment of `tenantId`, its lease running to noon. */
export const summaryRecord = (tenantId: string, overrides: Partial<SummaryRecord> = {}): SummaryRecord => ({
  id: id(),
  tenant_id: tenantId,
  attachment_id: id(),
  status: "pending",
  kind: "pdf",
  text: "",
  sections: [],
  pages_read: null,
  pages_total: null,
  truncated: false,
  model: "",
  source: "on_demand",
  error: null,
  generation: 1,
  lease_until: "2026-11-22T12:00:00.000Z",
  created_at: AT,
  updated_at: AT,
  ...overrides
})

/** A grant of `amount` AI credits to `tenantId`. */
export const creditGrant = (tenantId: string, amount: number, overrides: Partial<CreditEntryRecord> = {}): CreditEntryRecord => ({
  id: id(),
  tenant_id: tenantId,
  amount,
  reason: "grant",
  attachment_id: null,
  charge_key: null,
  created_at: AT,
  ...overrides
})

/** A new owner user, a billing account they own and a tenant in it, stored through the ports. */
export const seedTenant: Effect.Effect<
  { readonly user: UserRecord; readonly account: BillingAccountRecord; readonly tenant: TenantRecord },
  StorageError,
  AccountStore | TenantStore
> = Effect.gen(function*() {
  const accounts = yield* AccountStore
  const user = userRecord()
  const account = billingAccountRecord(user.id)
  const tenant = tenantRecord(account.id)
  yield* accounts.insertUser(user)
  yield* accounts.insertBillingAccount(account)
  yield* TenantStore.use((s) => s.insert(tenant))
  return { user, account, tenant }
})

/**
 * Text a batch passes through JSON on its way in, to keep exactly: unicode, quotes, backslashes,
 * control characters (no NUL: PostgreSQL text holds none), SQL and JSON path look-alikes, and strings
 * that would parse as JSON (an object, an array, `null`, a boolean, numbers) and must stay text.
 */
export const AWKWARD_TEXTS: ReadonlyArray<string> = [
  `{"a":1}`,
  "[1,2]",
  "null",
  "true",
  "12",
  "-0.50",
  "1e3",
  `"quoted"`,
  "O'Brien",
  "back\\slash \\u0041",
  "tab\tnew\nline\rcarriage \u0001\u001f",
  "Zoë Ñandú 山田太郎 🚀👍🏽",
  "\u2028\u2029 \ufeff",
  "",
  "  ",
  "$1 ? $.key",
  "'; DROP TABLE contacts; --"
]

/**
 * The adapter's Transactor for a test of two contending transactions, or undefined when it cannot
 * hold them apart: it runs one transaction at a time, or provides no Transactor (a suite run on its
 * port alone); the test then skips with `NEEDS_CONTENTION`.
 */
export const contentionTransactor = async (harness: {
  readonly capabilities: StorageCapabilities
  readonly run: <A, E>(effect: Effect.Effect<A, E, never>) => Promise<A>
}): Promise<Transactor["Service"] | undefined> =>
  harness.capabilities.concurrentConnections ? Option.getOrUndefined(await harness.run(Effect.serviceOption(Transactor))) : undefined

/** Why a test of contending transactions skipped. */
export const NEEDS_CONTENTION = "needs several connections and the Transactor: the adapter holds no two transactions apart"
