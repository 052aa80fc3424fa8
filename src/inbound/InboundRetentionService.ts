import { Context, Effect, Layer } from "effect"
import type { StorageError } from "../kernel/StorageError.ts"
import type { Timestamp } from "../kernel/Timestamp.ts"
import { BlobStore } from "../ports/BlobStore.ts"
import { InboundStore } from "../ports/InboundStore.ts"
import { receivedEmailKey } from "./ReceivedEmailBlobs.ts"

/**
 * Retention of raw inbound payloads (operator webhooks and received email as they arrived), for the
 * retention job. What they were turned into (contacts, conversations, messages, attachments, email)
 * is customer data and stays; so do the keys of items already handled.
 */
export class InboundRetentionService extends Context.Service<InboundRetentionService, {
  /**
   * Deletes up to `limit` payloads processed or failed before `before`, oldest first, and a received
   * email's bytes in the blob store with its payload; resolves to how many. Payloads still pending
   * or leased are never deleted.
   */
  readonly prunePayloads: (before: Timestamp, limit: number) => Effect.Effect<number, StorageError>
}>()("omnichannel-core/inbound/InboundRetentionService") {
  static readonly layer: Layer.Layer<InboundRetentionService, never, InboundStore | BlobStore> = Layer.effect(
    InboundRetentionService,
    Effect.gen(function*() {
      const payloads = yield* InboundStore
      const blobs = yield* BlobStore
      return InboundRetentionService.of({
        prunePayloads: Effect.fn("InboundRetentionService.prunePayloads")(function*(before, limit) {
          const pruned = yield* payloads.pruneFinished(before, limit)
          // After the rows: a crash in between leaves files nobody reads, never a row without its bytes.
          // An older email payload kept its body in its row; deleting a missing key succeeds.
          yield* Effect.forEach(pruned.filter((payload) => payload.source === "email"), (payload) =>
            blobs.delete(receivedEmailKey(payload.id)).pipe(
              Effect.catch((error) => Effect.logWarning("retention: a received email's bytes were not deleted", error))
            ), { discard: true })
          return pruned.length
        })
      })
    })
  )
}
