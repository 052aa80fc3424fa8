import { Context, type Effect, type Option, Schema } from "effect"
import type { StorageError } from "./StorageError.ts"

/** How an endpoint's failed deliveries are retried: the spec's three strategies. */
export const RetryStrategy = Schema.Literals(["exponential", "linear", "none"])
/** How an endpoint's failed deliveries are retried. */
export type RetryStrategy = typeof RetryStrategy.Type

/**
 * The part of a webhook endpoint its circuit breaker (`webhooks/EndpointMachine`) reads and writes,
 * as stored. `permanently_deactivated_at` is ours (the spec has no field for it): it tells a
 * circuit-breaker shutdown from a PATCH to false. `last_success_at`, `last_failure_at` and
 * `last_error` describe the last request made to the endpoint, delivery or verification check
 * alike, so a user can see why it was suspended.
 */
export const EndpointState = Schema.Struct({
  is_active: Schema.Boolean,
  is_verified: Schema.Boolean,
  consecutive_failures: Schema.Int,
  suspended_at: Schema.NullOr(Schema.String),
  next_reactivation_at: Schema.NullOr(Schema.String),
  reactivation_attempts: Schema.Int,
  permanently_deactivated_at: Schema.NullOr(Schema.String),
  last_success_at: Schema.NullOr(Schema.String),
  last_failure_at: Schema.NullOr(Schema.String),
  last_error: Schema.NullOr(Schema.String)
})
/** The part of a webhook endpoint its circuit breaker reads and writes. */
export type EndpointState = typeof EndpointState.Type

/**
 * A webhook endpoint as stored. `secret` signs deliveries and `authorization_header` is sent to
 * the receiver, so both are kept usable (never hashed) and never returned after creation.
 */
export interface WebhookEndpointRecord extends EndpointState {
  readonly id: string
  readonly tenant_id: string
  readonly name: string
  readonly url: string
  readonly secret: string
  readonly authorization_header: string | null
  readonly subscribed_events: ReadonlyArray<string>
  readonly source_filter_mode: "all" | "selected"
  readonly filtered_channel_ids: ReadonlyArray<string> | null
  readonly filtered_email_integration_ids: ReadonlyArray<string> | null
  readonly retry_strategy: RetryStrategy
  readonly max_retries: number
  readonly timeout_seconds: number
  /** Whether requests to the receiver carry the W3C `traceparent` of their span (ours; off by default). */
  readonly propagate_trace_context: boolean
  readonly created_at: string
  readonly updated_at: string | null
}

/**
 * Webhook endpoints; every method is scoped by tenant id, except the re-verification claim and the
 * metrics' count, which look across tenants.
 */
export class WebhookEndpointStore extends Context.Service<WebhookEndpointStore, {
  readonly insert: (endpoint: WebhookEndpointRecord) => Effect.Effect<void, StorageError>
  readonly get: (tenantId: string, id: string) => Effect.Effect<Option.Option<WebhookEndpointRecord>, StorageError>
  /** Like `get`, locking the row until the transaction ends (PostgreSQL), so health counters are not lost. */
  readonly getForUpdate: (
    tenantId: string,
    id: string
  ) => Effect.Effect<Option.Option<WebhookEndpointRecord>, StorageError>
  /** Every endpoint of the tenant, oldest first. */
  readonly list: (tenantId: string) => Effect.Effect<ReadonlyArray<WebhookEndpointRecord>, StorageError>
  /** Replaces the stored endpoint `endpoint.id` of `tenantId`; `false` when it does not exist there. */
  readonly update: (tenantId: string, endpoint: WebhookEndpointRecord) => Effect.Effect<boolean, StorageError>
  /**
   * Leases up to `limit` suspended endpoints whose next re-verification is due at `now`, until
   * `leaseUntil`, so exactly one worker checks each.
   */
  readonly claimDueChecks: (
    now: string,
    leaseUntil: string,
    limit: number
  ) => Effect.Effect<ReadonlyArray<WebhookEndpointRecord>, StorageError>
  /**
   * For the metrics, across tenants: how many endpoints are suspended, per tenant when `byTenant`
   * (`tenant_id` null otherwise); tenants with none are left out.
   */
  readonly countSuspended: (
    byTenant: boolean
  ) => Effect.Effect<ReadonlyArray<{ readonly tenant_id: string | null; readonly count: number }>, StorageError>
  /** Deletes the endpoint; `false` when it does not exist in the tenant. */
  readonly delete: (tenantId: string, id: string) => Effect.Effect<boolean, StorageError>
}>()("omnichannel-core/ports/WebhookEndpointStore") {}
