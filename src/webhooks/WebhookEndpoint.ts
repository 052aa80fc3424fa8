import { Schema } from "effect"
import { isAbsoluteHttpUrl } from "../kernel/HttpUrl.ts"
import { UuidId } from "../kernel/Id.ts"
import type { WebhookEndpointRecord } from "../ports/WebhookEndpointStore.ts"
import { statusOf } from "./EndpointMachine.ts"
import { SUBSCRIBABLE_EVENT_TYPES } from "./EventTypes.ts"
import { RetryStrategy } from "./RetrySchedule.ts"

/** The spec's limits and defaults for webhook endpoints. */
export const WEBHOOK_LIMITS = {
  name: { minimum: 1, maximum: 255 },
  max_retries: { minimum: 0, maximum: 15, default: 8 },
  timeout_seconds: { minimum: 5, maximum: 60, default: 30 },
  /** Longest `authorization_header` value accepted. */
  authorization_header: { maximum: 4096 },
  /** Most ids in one source filter list. */
  filter_ids: { maximum: 500 }
} as const

// The URL parser silently drops tabs and line breaks and trims spaces: a URL holding them would be
// stored and shown unlike the one called.
const HttpsUrl = Schema.String.check(
  Schema.isMaxLength(2048),
  Schema.isPattern(/^[^\s\p{Cc}]*$/u, { message: "Must not contain spaces or control characters" }),
  Schema.makeFilter((url: string) =>
    isAbsoluteHttpUrl(url) && new URL(url).protocol === "https:" ? undefined : "Must be an absolute https:// URL without credentials"
  )
)

const Name = Schema.String.check(
  Schema.isMinLength(WEBHOOK_LIMITS.name.minimum),
  Schema.isMaxLength(WEBHOOK_LIMITS.name.maximum),
  Schema.isPattern(/\S/, { message: "Must not be blank" })
)

const EventTypes = Schema.Array(Schema.Literals(SUBSCRIBABLE_EVENT_TYPES)).check(
  Schema.isMinLength(1, { message: "Subscribe to at least one event type" }),
  Schema.isUnique({ message: "List each event type once" })
)

// A header value may not carry line breaks (they would split the request) or other control
// characters, nor characters beyond U+00FF, which Node cannot send in a header at all.
const AuthorizationHeader = Schema.String.check(
  Schema.isMaxLength(WEBHOOK_LIMITS.authorization_header.maximum),
  Schema.isPattern(/^[\x20-\x7e\xa0-\xff]*$/, {
    message: "Must not contain control characters, line breaks or characters beyond U+00FF"
  })
)

const Ids = Schema.Array(Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(64))).check(
  Schema.isMaxLength(WEBHOOK_LIMITS.filter_ids.maximum),
  Schema.isUnique({ message: "List each id once" })
)

const SourceFilterMode = Schema.Literals(["all", "selected"])

const between = (limits: { readonly minimum: number; readonly maximum: number }) =>
  Schema.Int.check(Schema.isBetween({ minimum: limits.minimum, maximum: limits.maximum }))

// The optional settings, alike in creation and PATCH.
const settingsFields = {
  authorization_header: Schema.optionalKey(AuthorizationHeader),
  retry_strategy: Schema.optionalKey(RetryStrategy),
  max_retries: Schema.optionalKey(between(WEBHOOK_LIMITS.max_retries)),
  timeout_seconds: Schema.optionalKey(between(WEBHOOK_LIMITS.timeout_seconds)),
  source_filter_mode: Schema.optionalKey(SourceFilterMode),
  filtered_channel_ids: Schema.optionalKey(Schema.NullOr(Ids)),
  filtered_email_integration_ids: Schema.optionalKey(Schema.NullOr(Ids)),
  // Ours, not the spec's: whether deliveries carry the W3C `traceparent` of their span.
  propagate_trace_context: Schema.optionalKey(Schema.Boolean)
}

/** Body of `POST /webhook-endpoints`. */
export const CreateWebhookEndpointRequest = Schema.Struct({
  name: Name,
  url: HttpsUrl,
  subscribed_events: EventTypes,
  ...settingsFields
})
/** Body of `POST /webhook-endpoints`. */
export type CreateWebhookEndpointRequest = typeof CreateWebhookEndpointRequest.Type
export declare namespace CreateWebhookEndpointRequest {}

/**
 * Body of `PATCH /webhook-endpoints/{id}`: only the fields sent change; `subscribed_events`
 * replaces the list; an empty `authorization_header` removes it.
 */
export const UpdateWebhookEndpointRequest = Schema.Struct({
  name: Schema.optionalKey(Name),
  url: Schema.optionalKey(HttpsUrl),
  subscribed_events: Schema.optionalKey(EventTypes),
  is_active: Schema.optionalKey(Schema.Boolean),
  ...settingsFields
})
/** Body of `PATCH /webhook-endpoints/{id}`. */
export type UpdateWebhookEndpointRequest = typeof UpdateWebhookEndpointRequest.Type
export declare namespace UpdateWebhookEndpointRequest {}

/** A webhook endpoint as the API returns it: never its secret nor its authorization header value. */
export const WebhookEndpoint = Schema.Struct({
  id: UuidId,
  tenant_id: UuidId,
  name: Schema.String,
  url: Schema.String,
  has_authorization_header: Schema.Boolean,
  subscribed_events: Schema.Array(Schema.String),
  source_filter_mode: SourceFilterMode,
  filtered_channel_ids: Schema.NullOr(Schema.Array(Schema.String)),
  filtered_email_integration_ids: Schema.NullOr(Schema.Array(Schema.String)),
  is_active: Schema.Boolean,
  is_verified: Schema.Boolean,
  status: Schema.String,
  retry_strategy: RetryStrategy,
  max_retries: Schema.Int,
  timeout_seconds: Schema.Int,
  propagate_trace_context: Schema.Boolean,
  last_success_at: Schema.NullOr(Schema.String),
  last_failure_at: Schema.NullOr(Schema.String),
  last_error: Schema.NullOr(Schema.String),
  consecutive_failures: Schema.Int,
  suspended_at: Schema.NullOr(Schema.String),
  next_reactivation_at: Schema.NullOr(Schema.String),
  reactivation_attempts: Schema.Int,
  created_at: Schema.String,
  updated_at: Schema.NullOr(Schema.String)
})
/** A webhook endpoint as the API returns it. */
export type WebhookEndpoint = typeof WebhookEndpoint.Type
export declare namespace WebhookEndpoint {}

/** The creation response: `webhook_id` (not `id`), the secret shown this once, and a reminder. */
export const WebhookCreated = Schema.Struct({
  webhook_id: UuidId,
  secret_key: Schema.String,
  message: Schema.String
})

/** Response of regenerate-secret: the new secret, shown this once. */
export const WebhookSecretRegenerated = Schema.Struct({
  webhook_id: UuidId,
  secret_key: Schema.String,
  message: Schema.String
})

/** Response of delete. */
export const WebhookDeleted = Schema.Struct({ success: Schema.Boolean, message: Schema.String })

/** The wire form of a stored endpoint. */
export const toWebhookEndpoint = (record: WebhookEndpointRecord): WebhookEndpoint => ({
  id: record.id,
  tenant_id: record.tenant_id,
  name: record.name,
  url: record.url,
  has_authorization_header: record.authorization_header !== null,
  subscribed_events: record.subscribed_events,
  source_filter_mode: record.source_filter_mode,
  filtered_channel_ids: record.filtered_channel_ids,
  filtered_email_integration_ids: record.filtered_email_integration_ids,
  is_active: record.is_active,
  is_verified: record.is_verified,
  status: statusOf(record),
  retry_strategy: record.retry_strategy,
  max_retries: record.max_retries,
  timeout_seconds: record.timeout_seconds,
  propagate_trace_context: record.propagate_trace_context,
  last_success_at: record.last_success_at,
  last_failure_at: record.last_failure_at,
  last_error: record.last_error,
  consecutive_failures: record.consecutive_failures,
  suspended_at: record.suspended_at,
  next_reactivation_at: record.next_reactivation_at,
  reactivation_attempts: record.reactivation_attempts,
  created_at: record.created_at,
  updated_at: record.updated_at
})
