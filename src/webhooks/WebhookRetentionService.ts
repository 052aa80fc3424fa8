import { Context, Effect, Layer } from "effect"
import type { StorageError } from "../kernel/StorageError.ts"
import type { Timestamp } from "../kernel/Timestamp.ts"
import { WebhookDeliveryStore } from "../ports/WebhookDeliveryStore.ts"

/**
 * Retention of the webhook engine's history, for the retention job: finished deliveries past their
 * keeping time. Background work across tenants only; nothing a tenant asks reaches it.
 */
export class WebhookRetentionService extends Context.Service<WebhookRetentionService, {
  /**
   * Deletes up to `limit` deliveries that finished (`success`, `failed`, `dead_letter`) before
   * `before`, oldest first; resolves to how many. Unfinished deliveries are never deleted.
   */
  readonly pruneDeliveries: (before: Timestamp, limit: number) => Effect.Effect<number, StorageError>
}>()("omnichannel-core/webhooks/WebhookRetentionService") {
  static readonly layer: Layer.Layer<WebhookRetentionService, never, WebhookDeliveryStore> = Layer.effect(
    WebhookRetentionService,
    Effect.map(WebhookDeliveryStore, (deliveries) =>
      WebhookRetentionService.of({
        pruneDeliveries: Effect.fn("WebhookRetentionService.pruneDeliveries")(function*(before, limit) {
          return yield* deliveries.pruneFinished(before, limit)
        })
      }))
  )
}
