import { Effect, Option } from "effect"
import { RetryLater } from "../kernel/ChatappEvents.ts"
import type { InboundPayloadRecord } from "../ports/InboundStore.ts"
import type { BlobStore } from "../ports/BlobStore.ts"

/**
 * Where a received email's bytes are kept: in the blob store under this key, streamed there as
 * they arrive, while its inbound payload row holds an empty body (an empty email is refused at the
 * edge, so an empty body never means an empty email). Tenant folders are UUIDs, so `inbound/`
 * meets none of them.
 */
export const receivedEmailKey = (payloadId: string): string => `inbound/email/${payloadId}`

/**
 * Opens the received email of `payload` as a stream: its bytes in the blob store or, for a payload
 * stored before they went there, its body. Fails with `RetryLater` when the blob store cannot read
 * them now or they are gone.
 */
export const openReceivedEmail = (
  blobs: BlobStore["Service"],
  payload: InboundPayloadRecord
): Effect.Effect<ReadableStream<Uint8Array>, RetryLater> => {
  if (payload.body.length > 0) {
    const body = payload.body
    return Effect.sync(() =>
      new ReadableStream<Uint8Array>({
        start: (controller) => {
          controller.enqueue(body)
          controller.close()
        }
      })
    )
  }
  return blobs.get(receivedEmailKey(payload.id)).pipe(
    Effect.mapError((error) => new RetryLater({ message: `the received email could not be read: ${error.message}` })),
    Effect.flatMap(Option.match({
      onNone: () => Effect.fail(new RetryLater({ message: "the received email is no longer in the blob store" })),
      onSome: Effect.succeed
    }))
  )
}
