import { Context, Effect, Layer } from "effect"
import type { StorageError } from "../kernel/StorageError.ts"
import type { Timestamp } from "../kernel/Timestamp.ts"
import { InboundStore } from "../ports/InboundStore.ts"

/**
 * Retention of raw inbound payloads (operator webhooks and received email as they arrived), for the
 * retention job. What they were turned into (contacts, conversations, messages, attachments, email)
 * is customer data and stays; so do the keys of items already handled.
 */
export class InboundRetentionService extends Context.Service<InboundRetentionService, {
  /**
   * Deletes up to `limit` payloads processed or failed before `before`, oldest first; resolves to
   * how many. Payloads still pending or leased are never deleted.
   */
  readonly prunePayloads: (before: Timestamp, limit: number) => Effect.Effect<number, StorageError>
}>()("omnichannel-core/inbound/InboundRetentionService") {
  static readonly layer: Layer.Layer<InboundRetentionService, never, InboundStore> = Layer.effect(
    InboundRetentionService,
    Effect.map(InboundStore, (payloads) =>
      InboundRetentionService.of({
        prunePayloads: Effect.fn("InboundRetentionService.prunePayloads")(function*(before, limit) {
          return yield* payloads.pruneFinished(before, limit)
        })
      }))
  )
}
