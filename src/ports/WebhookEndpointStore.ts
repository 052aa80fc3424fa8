import { Context, type Effect, type Option } from "effect"
import type { EndpointState } from "../webhooks/EndpointMachine.ts"
import type { RetryStrategy } from "../webhooks/RetrySchedule.ts"
import type { StorageError } from "./StorageError.ts"

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
  readonly created_at: string
  readonly updated_at: string | null
}

/** Webhook endpoints; every method is scoped by tenant id. */
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
  /** Deletes the endpoint; `false` when it does not exist in the tenant. */
  readonly delete: (tenantId: string, id: string) => Effect.Effect<boolean, StorageError>
}>()("omnichannel-core/ports/WebhookEndpointStore") {}
