import { Effect, Schema } from "effect"
import { route } from "../http/Route.ts"
import { pathId } from "../kernel/Id.ts"
import {
  CreateWebhookEndpointRequest,
  toWebhookEndpoint,
  UpdateWebhookEndpointRequest,
  WebhookCreated,
  WebhookDeleted,
  WebhookEndpoint,
  WebhookSecretRegenerated
} from "./WebhookEndpoint.ts"
import { WebhookEndpointService } from "./WebhookEndpointService.ts"

const endpointId = (params: Readonly<Record<string, string>>) => pathId(params, "webhook_id", "Webhook endpoint")

const SECRET_REMINDER = "Store this signing secret now: it will not be shown again."

/** The management routes of webhook endpoints (their deliveries, retry and verify are `WebhookDeliveryRoutes`). */
export const webhookEndpointRoutes = [
  route({
    method: "POST",
    path: "/webhook-endpoints",
    operationId: "createWebhookEndpoint",
    summary: "Create a webhook endpoint; the signing secret is returned only here",
    tag: "Webhooks",
    auth: { kind: "api_key", scopes: ["webhooks:create"] },
    errorStyle: "coded",
    body: CreateWebhookEndpointRequest,
    response: { status: 201, schema: WebhookCreated, description: "webhook_id, secret_key and a reminder to store it" },
    errors: [422],
    handle: ({ principal, body }) =>
      Effect.gen(function*() {
        const endpoint = yield* (yield* WebhookEndpointService).create(principal.tenantId, body)
        return { webhook_id: endpoint.id, secret_key: endpoint.secret, message: SECRET_REMINDER }
      })
  }),
  route({
    method: "GET",
    path: "/webhook-endpoints",
    operationId: "listWebhookEndpoints",
    summary: "List the tenant's webhook endpoints (a bare array, oldest first)",
    tag: "Webhooks",
    auth: { kind: "api_key", scopes: ["webhooks:read"] },
    errorStyle: "coded",
    response: { status: 200, schema: Schema.Array(WebhookEndpoint), description: "Every endpoint of the tenant" },
    handle: ({ principal }) =>
      Effect.map(
        Effect.flatMap(WebhookEndpointService, (service) => service.list(principal.tenantId)),
        (endpoints) => endpoints.map(toWebhookEndpoint)
      )
  }),
  route({
    method: "GET",
    path: "/webhook-endpoints/{webhook_id}",
    operationId: "getWebhookEndpoint",
    summary: "Get a webhook endpoint",
    tag: "Webhooks",
    auth: { kind: "api_key", scopes: ["webhooks:read"] },
    errorStyle: "coded",
    response: { status: 200, schema: WebhookEndpoint, description: "The endpoint (never its secret or header value)" },
    errors: [404],
    handle: ({ principal, params }) =>
      Effect.gen(function*() {
        const id = yield* endpointId(params)
        return toWebhookEndpoint(yield* (yield* WebhookEndpointService).get(principal.tenantId, id))
      })
  }),
  route({
    method: "PATCH",
    path: "/webhook-endpoints/{webhook_id}",
    operationId: "updateWebhookEndpoint",
    summary: "Change a webhook endpoint: only the fields sent change",
    tag: "Webhooks",
    auth: { kind: "api_key", scopes: ["webhooks:update"] },
    errorStyle: "coded",
    body: UpdateWebhookEndpointRequest,
    response: { status: 200, schema: WebhookEndpoint, description: "The endpoint after the change" },
    errors: [404, 422],
    handle: ({ principal, params, body }) =>
      Effect.gen(function*() {
        const id = yield* endpointId(params)
        return toWebhookEndpoint(yield* (yield* WebhookEndpointService).update(principal.tenantId, id, body))
      })
  }),
  route({
    method: "DELETE",
    path: "/webhook-endpoints/{webhook_id}",
    operationId: "deleteWebhookEndpoint",
    summary: "Delete a webhook endpoint",
    tag: "Webhooks",
    auth: { kind: "api_key", scopes: ["webhooks:delete"] },
    errorStyle: "coded",
    response: { status: 200, schema: WebhookDeleted, description: "Confirmation" },
    errors: [404],
    handle: ({ principal, params }) =>
      Effect.gen(function*() {
        const id = yield* endpointId(params)
        yield* (yield* WebhookEndpointService).delete(principal.tenantId, id)
        return { success: true, message: `Webhook endpoint ${id} deleted` }
      })
  }),
  route({
    method: "POST",
    path: "/webhook-endpoints/{webhook_id}/regenerate-secret",
    operationId: "regenerateWebhookSecret",
    summary: "Replace the signing secret; the old one stops working at once",
    tag: "Webhooks",
    auth: { kind: "api_key", scopes: ["webhooks:update"] },
    errorStyle: "coded",
    response: { status: 200, schema: WebhookSecretRegenerated, description: "The new secret, shown only here" },
    errors: [404],
    handle: ({ principal, params }) =>
      Effect.gen(function*() {
        const id = yield* endpointId(params)
        const endpoint = yield* (yield* WebhookEndpointService).regenerateSecret(principal.tenantId, id)
        return { webhook_id: endpoint.id, secret_key: endpoint.secret, message: SECRET_REMINDER }
      })
  })
]
