import { Effect, Schema } from "effect"
import { route } from "../http/Route.ts"
import { pathId } from "../kernel/Id.ts"
import { pageQueryFields, toPageRequest, toWindow } from "../kernel/Pagination.ts"
import { DeliveryStatus } from "./DeliveryMachine.ts"
import { statusOf } from "./EndpointMachine.ts"
import { toWebhookDelivery, WebhookDeliveryList, WebhookRetried, WebhookVerified } from "./WebhookDelivery.ts"
import { WebhookDeliveryService } from "./WebhookDeliveryService.ts"

/** Default and largest `page_size` of the deliveries list. */
export const DELIVERIES_PAGE_SIZE = { default: 50, max: 100 } as const

const endpointId = (params: Readonly<Record<string, string>>) => pathId(params, "webhook_id", "Webhook endpoint")

/** Delivery history, manual retry and verification. */
export const webhookDeliveryRoutes = [
  route({
    method: "GET",
    path: "/webhook-endpoints/{webhook_id}/deliveries",
    operationId: "listWebhookDeliveries",
    summary: "An endpoint's deliveries, newest first",
    tag: "Webhooks",
    auth: { kind: "api_key", scopes: ["webhooks:read"] },
    errorStyle: "coded",
    query: Schema.Struct({
      ...pageQueryFields(DELIVERIES_PAGE_SIZE.max),
      status: Schema.optionalKey(DeliveryStatus),
      event_type: Schema.optionalKey(Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(100)))
    }),
    response: { status: 200, schema: WebhookDeliveryList, description: "One page of deliveries" },
    errors: [404, 422],
    handle: ({ principal, params, query }) =>
      Effect.gen(function*() {
        const id = yield* endpointId(params)
        const page = toPageRequest(query, DELIVERIES_PAGE_SIZE.default)
        const { items, total } = yield* (yield* WebhookDeliveryService).list(principal.tenantId, id, {
          ...toWindow(page),
          ...(query.status === undefined ? {} : { status: query.status }),
          ...(query.event_type === undefined ? {} : { event_type: query.event_type })
        })
        return {
          items: items.map(toWebhookDelivery),
          total,
          page: page.page,
          page_size: page.pageSize,
          has_more: page.page * page.pageSize < total
        }
      })
  }),
  route({
    method: "POST",
    path: "/webhook-endpoints/{webhook_id}/deliveries/{delivery_id}/retry",
    operationId: "retryWebhookDelivery",
    summary: "Deliver a failed or dead-lettered delivery's event again (a new delivery; the original stays)",
    tag: "Webhooks",
    auth: { kind: "api_key", scopes: ["webhooks:update"] },
    errorStyle: "coded",
    response: { status: 201, schema: WebhookRetried, description: "The new delivery's id" },
    errors: [404, 409],
    handle: ({ principal, params }) =>
      Effect.gen(function*() {
        const id = yield* endpointId(params)
        const deliveryId = yield* pathId(params, "delivery_id", "Delivery")
        const retried = yield* (yield* WebhookDeliveryService).retry(principal.tenantId, id, deliveryId)
        return {
          success: true,
          delivery_id: retried.id,
          previous_delivery_id: deliveryId,
          message: retried.status === "queued"
            ? "The endpoint is suspended: the retry is queued and will be replayed when it recovers"
            : "A new delivery was created and will be attempted shortly"
        }
      })
  }),
  route({
    method: "POST",
    path: "/webhook-endpoints/{webhook_id}/verify",
    operationId: "verifyWebhookEndpoint",
    summary: "Send a signed verification request now; success reactivates a suspended endpoint and starts replay",
    tag: "Webhooks",
    auth: { kind: "api_key", scopes: ["webhooks:update"] },
    errorStyle: "coded",
    response: { status: 200, schema: WebhookVerified, description: "What the check got" },
    errors: [404],
    handle: ({ principal, params }) =>
      Effect.gen(function*() {
        const id = yield* endpointId(params)
        const { endpoint, outcome } = yield* (yield* WebhookDeliveryService).verify(principal.tenantId, id)
        return {
          success: outcome.ok,
          webhook_id: endpoint.id,
          is_verified: endpoint.is_verified,
          is_active: endpoint.is_active,
          status: statusOf(endpoint),
          response_status_code: outcome.status_code,
          response_time_ms: outcome.time_ms,
          error: outcome.ok ? null : outcome.error,
          message: outcome.ok ? "The endpoint answered 2xx" : `Verification failed: ${outcome.error}`
        }
      })
  })
]
