import { Context, type Effect, type Option, Schema } from "effect"

/** A `multipart/form-data` body could not be read: not multipart, no boundary, cut short or malformed. */
export class MultipartError extends Schema.TaggedError<MultipartError>()("MultipartError", {
  message: Schema.String
}) {}

/** One file part of a multipart body, its bytes still arriving. */
export interface MultipartFile {
  /** The part's `filename` as sent (not yet made safe); null when the part carries none. */
  readonly filename: string | null
  /** The part's declared `Content-Type`; null when it declares none. */
  readonly contentType: string | null
  /**
   * The part's bytes as they arrive from the request, never gathered whole. It errors when the body
   * breaks off or passes the reader's cap. Whoever takes the file reads or cancels this stream.
   */
  readonly bytes: ReadableStream<Uint8Array>
}

/**
 * Reads `multipart/form-data` request bodies as streams (a runtime's own parser: busboy on Node,
 * `omnichannel-core/node`'s `busboyMultipart`), so a large upload never sits whole in memory.
 */
export class MultipartReader extends Context.Service<MultipartReader, {
  /**
   * The first part named `field`, once its headers have arrived; parts before it are skipped, parts
   * after it are never read. None when the body ends without one. `maxBytes` caps what is read of
   * the part: its stream errors once more arrived.
   */
  readonly file: (
    body: ReadableStream<Uint8Array>,
    contentType: string,
    options: { readonly field: string; readonly maxBytes: number }
  ) => Effect.Effect<Option.Option<MultipartFile>, MultipartError>
}>()("omnichannel-core/ports/MultipartReader") {}
