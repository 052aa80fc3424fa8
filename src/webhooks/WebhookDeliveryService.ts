import { Context, Effect, Layer, Option } from "effect"
import { Conflict, NotFound } from "../kernel/ApiError.ts"
import { newId } from "../kernel/Id.ts"
import { now } from "../kernel/Timestamp.ts"
import type { HmacSigner } from "../ports/HmacSigner.ts"
import type { Notifier } from "../ports/Notifier.ts"
import type { OutboundHttp } from "../ports/OutboundHttp.ts"
import type { StorageError } from "../ports/StorageError.ts"
import { Transactor } from "../ports/Transactor.ts"
import { type DeliveryStatus, type WebhookDeliveryRecord, WebhookDeliveryStore } from "../ports/WebhookDeliveryStore.ts"
import { WebhookEndpointStore } from "../ports/WebhookEndpointStore.ts"
import type { TenantService } from "../tenants/TenantService.ts"
import * as DeliveryMachine from "./DeliveryMachine.ts"
import { type CheckResult, makeEndpointCheck } from "./EndpointCheck.ts"
import * as EndpointMachine from "./EndpointMachine.ts"

const endpointNotFound = (id: string) => new NotFound({ message: `Webhook endpoint ${id} not found` })

/** What a user does with an endpoint's deliveries: read the history, retry one, verify the endpoint. */
export class WebhookDeliveryService extends Context.Service<WebhookDeliveryService, {
  /** One page of the endpoint's deliveries, newest first, with the total matching the filters. */
  readonly list: (
    tenantId: string,
    endpointId: string,
    filter: { readonly status?: DeliveryStatus; readonly event_type?: string; readonly limit: number; readonly offset: number }
  ) => Effect.Effect<{ readonly items: ReadonlyArray<WebhookDeliveryRecord>; readonly total: number }, NotFound | StorageError>
  /** A new delivery of a `failed` or `dead_letter` one's event; the original row stays as it was. */
  readonly retry: (
    tenantId: string,
    endpointId: string,
    deliveryId: string
  ) => Effect.Effect<WebhookDeliveryRecord, NotFound | Conflict | StorageError>
  /** Sends a verification request now; success lifts a suspension and starts replay. */
  readonly verify: (tenantId: string, endpointId: string) => Effect.Effect<CheckResult, NotFound | StorageError>
}>()("omnichannel-core/webhooks/WebhookDeliveryService") {
  static readonly layer: Layer.Layer<
    WebhookDeliveryService,
    never,
    | WebhookEndpointStore
    | WebhookDeliveryStore
    | Transactor
    | OutboundHttp
    | HmacSigner
    | Notifier
    | TenantService
  > = Layer.effect(
    WebhookDeliveryService,
    Effect.gen(function*() {
      const endpoints = yield* WebhookEndpointStore
      const deliveries = yield* WebhookDeliveryStore
      const transactor = yield* Transactor
      const check = yield* makeEndpointCheck

      return WebhookDeliveryService.of({
        list: Effect.fn("WebhookDeliveryService.list")(function*(tenantId, endpointId, filter) {
          if (Option.isNone(yield* endpoints.get(tenantId, endpointId))) return yield* endpointNotFound(endpointId)
          return yield* deliveries.list(tenantId, endpointId, filter)
        }),
        retry: Effect.fn("WebhookDeliveryService.retry")(function*(tenantId, endpointId, deliveryId) {
          return yield* transactor.withTransaction(Effect.gen(function*() {
            const endpoint = yield* endpoints.get(tenantId, endpointId)
            const original = yield* deliveries.get(tenantId, endpointId, deliveryId)
            if (Option.isNone(endpoint) || Option.isNone(original)) {
              return yield* new NotFound({ message: `Delivery ${deliveryId} not found` })
            }
            if (!DeliveryMachine.canRetry(original.value)) {
              return yield* new Conflict({
                message: `Delivery ${deliveryId} is ${original.value.status}; only failed or dead_letter deliveries can be retried`
              })
            }
            const at = yield* now
            const placement: DeliveryMachine.Placement = EndpointMachine.statusOf(endpoint.value) === "suspended"
              ? { _tag: "Queue", queued: yield* deliveries.countQueued(tenantId, endpointId) }
              : { _tag: "Deliver" }
            const { state } = DeliveryMachine.make(endpoint.value, placement, at)
            const retried: WebhookDeliveryRecord = {
              ...original.value,
              ...state,
              id: yield* newId,
              previous_delivery_id: original.value.id,
              created_at: at
            }
            yield* deliveries.insertMany([retried])
            return retried
          }))
        }),
        verify: Effect.fn("WebhookDeliveryService.verify")(function*(tenantId, endpointId) {
          const endpoint = yield* endpoints.get(tenantId, endpointId)
          if (Option.isNone(endpoint)) return yield* endpointNotFound(endpointId)
          return yield* check(endpoint.value, "manual")
        })
      })
    })
  )
}
