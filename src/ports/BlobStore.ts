import { Context, type Effect, type Option, Schema } from "effect"

/** The blob store could not write or read: a full disk, a permission, a vanished directory. */
export class BlobStoreError extends Schema.TaggedError<BlobStoreError>()("BlobStoreError", {
  message: Schema.String,
  cause: Schema.optional(Schema.Defect())
}) {}

/** What a write stored. */
export interface BlobWritten {
  readonly size: number
}

/**
 * Bytes of attachments, kept by key outside the database (a directory, an object store). Keys are
 * made by the service (`<tenant id>/<attachment id>`), never by a user. A `put` is atomic: a reader
 * sees the whole blob or none, and a failed or abandoned write leaves nothing behind.
 */
export class BlobStore extends Context.Service<BlobStore, {
  /** Stores the bytes under `key`, replacing what was there. A stream is consumed as it arrives. */
  readonly put: (
    key: string,
    data: Uint8Array | ReadableStream<Uint8Array>
  ) => Effect.Effect<BlobWritten, BlobStoreError>
  /** The bytes under `key` as a stream, or none. */
  readonly get: (key: string) => Effect.Effect<Option.Option<ReadableStream<Uint8Array>>, BlobStoreError>
  /** Removes `key`; removing what is not there succeeds. */
  readonly delete: (key: string) => Effect.Effect<void, BlobStoreError>
}>()("omnichannel-core/ports/BlobStore") {}
