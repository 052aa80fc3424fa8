import { Effect } from "effect"
import { addSeconds, now } from "../../kernel/Timestamp.ts"
import { inJobSpan } from "../../kernel/TraceContext.ts"
import type { StorageError } from "../../ports/StorageError.ts"
import { WebhookEndpointStore } from "../../ports/WebhookEndpointStore.ts"
import { makeEndpointCheck } from "../EndpointCheck.ts"
import { DispatchSettings } from "./DispatchSettings.ts"

/**
 * Resolves to the re-verification job's round: it claims the suspended endpoints whose next check
 * is due (each by one worker, under a lease) and checks them at once; returns the checks made.
 */
export const makeReverification = Effect.gen(function*() {
  const endpoints = yield* WebhookEndpointStore
  const settings = yield* DispatchSettings
  const check = yield* makeEndpointCheck
  return Effect.gen(function*() {
    const at = yield* now
    const claimed = yield* endpoints.claimDueChecks(at, addSeconds(at, settings.leaseSeconds), settings.checkBatch)
    yield* Effect.forEach(claimed, (endpoint) =>
      check(endpoint, "re-verification").pipe(inJobSpan("WebhookDispatcher.reverify", {
        attributes: { "tenant.id": endpoint.tenant_id, "webhook.endpoint_id": endpoint.id }
      })), {
      concurrency: settings.checkBatch,
      discard: true
    })
    return claimed.length
  }) satisfies Effect.Effect<number, StorageError>
})
