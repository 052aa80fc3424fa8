import { Context, Effect, Layer, Option } from "effect"
import { NotFound } from "../kernel/ApiError.ts"
import { newId } from "../kernel/Id.ts"
import { randomBase64 } from "../kernel/Secret.ts"
import { now } from "../kernel/Timestamp.ts"
import type { StorageError } from "../ports/StorageError.ts"
import { Transactor } from "../ports/Transactor.ts"
import { type WebhookEndpointRecord, WebhookEndpointStore } from "../ports/WebhookEndpointStore.ts"
import { makeEndpointIntents } from "./EndpointIntents.ts"
import * as EndpointMachine from "./EndpointMachine.ts"
import { type CreateWebhookEndpointRequest, type UpdateWebhookEndpointRequest, WEBHOOK_LIMITS } from "./WebhookEndpoint.ts"

/** Signing secrets follow the Standard Webhooks form: `whsec_` and 24 random bytes in base64. */
export const newSigningSecret: Effect.Effect<string> = Effect.map(randomBase64(24), (key) => `whsec_${key}`)

const notFound = (id: string) => new NotFound({ message: `Webhook endpoint ${id} not found` })

/** Webhook endpoints of a tenant: their settings, secrets and `is_active` switch. */
export class WebhookEndpointService extends Context.Service<WebhookEndpointService, {
  /** Creates an endpoint; the signing secret is returned here and by regenerate-secret only. */
  readonly create: (
    tenantId: string,
    request: CreateWebhookEndpointRequest
  ) => Effect.Effect<WebhookEndpointRecord, StorageError>
  readonly get: (tenantId: string, id: string) => Effect.Effect<WebhookEndpointRecord, NotFound | StorageError>
  readonly list: (tenantId: string) => Effect.Effect<ReadonlyArray<WebhookEndpointRecord>, StorageError>
  /**
   * Changes only the fields sent. `is_active` goes through the endpoint machine, so a PATCH obeys
   * the spec's state table (a suspended endpoint leaves suspension only by verification).
   */
  readonly update: (
    tenantId: string,
    id: string,
    request: UpdateWebhookEndpointRequest
  ) => Effect.Effect<WebhookEndpointRecord, NotFound | StorageError>
  readonly delete: (tenantId: string, id: string) => Effect.Effect<void, NotFound | StorageError>
  /** Replaces the signing secret; the old one stops signing at once. */
  readonly regenerateSecret: (tenantId: string, id: string) => Effect.Effect<WebhookEndpointRecord, NotFound | StorageError>
}>()("omnichannel-core/webhooks/WebhookEndpointService") {
  static readonly layer = Layer.effect(
    WebhookEndpointService,
    Effect.gen(function*() {
      const endpoints = yield* WebhookEndpointStore
      const transactor = yield* Transactor
      const endpointIntents = yield* makeEndpointIntents

      const get = Effect.fnUntraced(function*(tenantId: string, id: string) {
        const found = yield* endpoints.get(tenantId, id)
        if (Option.isNone(found)) return yield* notFound(id)
        return found.value
      })

      // Read-modify-write under the row lock, so a PATCH and the circuit breaker never lose each other's change.
      const getLocked = Effect.fnUntraced(function*(tenantId: string, id: string) {
        const found = yield* endpoints.getForUpdate(tenantId, id)
        if (Option.isNone(found)) return yield* notFound(id)
        return found.value
      })

      return WebhookEndpointService.of({
        create: Effect.fn("WebhookEndpointService.create")(function*(tenantId, request) {
          const mode = request.source_filter_mode ?? "all"
          const endpoint: WebhookEndpointRecord = {
            ...EndpointMachine.make(),
            id: yield* newId,
            tenant_id: tenantId,
            name: request.name.trim(),
            url: request.url,
            secret: yield* newSigningSecret,
            authorization_header: request.authorization_header === undefined || request.authorization_header === ""
              ? null
              : request.authorization_header,
            subscribed_events: request.subscribed_events,
            source_filter_mode: mode,
            // The id lists are kept only where they are used: in `selected` mode.
            filtered_channel_ids: mode === "selected" ? request.filtered_channel_ids ?? [] : null,
            filtered_email_integration_ids: mode === "selected" ? request.filtered_email_integration_ids ?? [] : null,
            retry_strategy: request.retry_strategy ?? "exponential",
            max_retries: request.max_retries ?? WEBHOOK_LIMITS.max_retries.default,
            timeout_seconds: request.timeout_seconds ?? WEBHOOK_LIMITS.timeout_seconds.default,
            propagate_trace_context: request.propagate_trace_context ?? false,
            created_at: yield* now,
            updated_at: null
          }
          yield* endpoints.insert(endpoint)
          return endpoint
        }),
        get: Effect.fn("WebhookEndpointService.get")(get),
        list: Effect.fn("WebhookEndpointService.list")(function*(tenantId) {
          return yield* endpoints.list(tenantId)
        }),
        update: Effect.fn("WebhookEndpointService.update")(function*(tenantId, id, request) {
          return yield* transactor.withTransaction(Effect.gen(function*() {
            const before = yield* getLocked(tenantId, id)
            const at = yield* now
            const { intents, state: health } = request.is_active === undefined
              ? { intents: [], state: before }
              : EndpointMachine.transition(before, { _tag: "PatchIsActive", value: request.is_active }, at)
            // PATCH is_active false dead-letters what was still waiting, in this transaction; a PATCH
            // notifies nobody (the user made the change).
            yield* endpointIntents.perform(before, intents, at)
            const mode = request.source_filter_mode ?? before.source_filter_mode
            const after: WebhookEndpointRecord = {
              ...health,
              name: request.name?.trim() ?? before.name,
              url: request.url ?? before.url,
              subscribed_events: request.subscribed_events ?? before.subscribed_events,
              authorization_header: request.authorization_header === undefined
                ? before.authorization_header
                : request.authorization_header === ""
                ? null
                : request.authorization_header,
              retry_strategy: request.retry_strategy ?? before.retry_strategy,
              max_retries: request.max_retries ?? before.max_retries,
              timeout_seconds: request.timeout_seconds ?? before.timeout_seconds,
              propagate_trace_context: request.propagate_trace_context ?? before.propagate_trace_context,
              source_filter_mode: mode,
              filtered_channel_ids: mode === "selected"
                ? (request.filtered_channel_ids !== undefined ? request.filtered_channel_ids : before.filtered_channel_ids) ?? []
                : null,
              filtered_email_integration_ids: mode === "selected"
                ? (request.filtered_email_integration_ids !== undefined
                  ? request.filtered_email_integration_ids
                  : before.filtered_email_integration_ids) ?? []
                : null,
              updated_at: at
            }
            yield* endpoints.update(tenantId, after)
            return after
          }))
        }),
        delete: Effect.fn("WebhookEndpointService.delete")(function*(tenantId, id) {
          if (!(yield* endpoints.delete(tenantId, id))) return yield* notFound(id)
        }),
        regenerateSecret: Effect.fn("WebhookEndpointService.regenerateSecret")(function*(tenantId, id) {
          return yield* transactor.withTransaction(Effect.gen(function*() {
            const before = yield* getLocked(tenantId, id)
            const after = { ...before, secret: yield* newSigningSecret, updated_at: yield* now }
            yield* endpoints.update(tenantId, after)
            return after
          }))
        })
      })
    })
  )
}
