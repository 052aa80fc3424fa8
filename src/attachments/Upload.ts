import { Effect, Schema } from "effect"
import { UuidId } from "../kernel/Id.ts"
import type { BlobStore } from "../ports/BlobStore.ts"
import { safeFilename } from "./ContentCheck.ts"

/** Largest file the service takes, by upload or from a URL: 50 MB (the spec's Limits). */
export const MAX_UPLOAD_BYTES = 50 * 1024 * 1024

/** The spec's words for a file over the limit. */
export const TOO_LARGE_TEXT = `File too large. Maximum size is ${(MAX_UPLOAD_BYTES / 1024 / 1024).toFixed(1)}MB`

/**
 * Largest `Content-Length` an upload request may declare: the file's limit plus 1 MiB of multipart
 * envelope (boundaries, part headers, small fields). A larger one is refused before a byte is read.
 */
export const MAX_UPLOAD_REQUEST_BYTES = MAX_UPLOAD_BYTES + 1024 * 1024

/** Bytes read of a file to tell its type by its magic numbers (what file-type looks at). */
export const HEAD_BYTES = 4100

/**
 * Extensions of programs and scripts a recipient's machine or a server could run: refused wherever
 * they appear after the first dot of a name (`invoice.pdf.exe`, `report.exe.pdf`), in any case.
 */
export const BLOCKED_EXTENSIONS: ReadonlySet<string> = new Set([
  "exe", "bat", "cmd", "com", "scr", "pif", "msi", "msp", "mst", "msix", "appx", "dll", "cpl", "sys", "drv",
  "vbs", "vbe", "vb", "js", "jse", "mjs", "cjs", "wsf", "wsh", "ws", "wsc", "hta", "reg", "lnk", "msc", "scf",
  "inf", "gadget", "application", "appref-ms", "xbap", "ps1", "psm1", "psd1", "ps1xml", "sh", "bash", "zsh",
  "csh", "ksh", "fish", "command", "run", "php", "php3", "php4", "php5", "php7", "phtml", "phar", "py", "pyc",
  "pyw", "pl", "cgi", "rb", "jsp", "jspx", "asp", "aspx", "ashx", "jar", "war", "apk", "ipa", "app", "deb",
  "rpm", "so", "dylib", "elf", "class"
])

const blockedIn = (filename: string): string | null => {
  const parts = filename.trim().split(".").slice(1).reverse()
  return parts.find((part) => BLOCKED_EXTENSIONS.has(part.trim().toLowerCase())) ?? null
}

/**
 * The first extension of `filename` on the blocklist, from the end, or null; looked for in the name
 * as given and as it would be stored (`safeFilename` removes characters, so `invoice.ex\u200Be`
 * would be stored as `invoice.exe`).
 */
export const blockedExtension = (filename: string): string | null =>
  blockedIn(filename) ?? blockedIn(safeFilename(filename, "file"))

/**
 * A pass-through of `source` that counts its bytes, keeps its first `HEAD_BYTES`, and errors once
 * more than `maxBytes` went through, cancelling the source (so the rest of a request is not read).
 * `state` tells afterwards why it errored: too large, or the source itself failed (a body cut off).
 */
export const meteredStream = (source: ReadableStream<Uint8Array>, maxBytes: number) => {
  const state = { bytes: 0, tooLarge: false, sourceFailed: false, sourceError: undefined as unknown, head: new Uint8Array(0) }
  const reader = source.getReader()
  const stream = new ReadableStream<Uint8Array>({
    pull: async (controller) => {
      let next: ReadableStreamReadResult<Uint8Array>
      try {
        next = await reader.read()
      } catch (error) {
        state.sourceFailed = true
        state.sourceError = error
        controller.error(error)
        return
      }
      if (next.done) {
        controller.close()
        return
      }
      const chunk = next.value
      state.bytes += chunk.byteLength
      if (state.bytes > maxBytes) {
        state.tooLarge = true
        controller.error(new Error(TOO_LARGE_TEXT))
        await reader.cancel(TOO_LARGE_TEXT).catch(() => undefined)
        return
      }
      if (state.head.byteLength < HEAD_BYTES) {
        const head = new Uint8Array(Math.min(HEAD_BYTES, state.head.byteLength + chunk.byteLength))
        head.set(state.head)
        head.set(chunk.subarray(0, head.byteLength - state.head.byteLength), state.head.byteLength)
        state.head = head
      }
      controller.enqueue(chunk)
    },
    cancel: (reason) => reader.cancel(reason)
  })
  return { stream, state }
}

/** How streaming a file into the blob store ended; on anything but `Stored` nothing is kept. */
export type StreamedFile =
  | { readonly _tag: "Stored"; readonly size: number; readonly head: Uint8Array; readonly remove: Effect.Effect<void> }
  | { readonly _tag: "TooLarge" }
  | { readonly _tag: "SourceFailed"; readonly error: unknown }

/**
 * Streams `source` into the blob store under `blobKey` through the meter (at most `MAX_UPLOAD_BYTES`).
 * A source past the cap or one that breaks off leaves nothing stored; a failing store is the
 * service's fault (a defect). `remove` takes the stored bytes back, for a later refusal.
 */
export const streamIntoStore = (blobs: BlobStore["Service"], blobKey: string, source: ReadableStream<Uint8Array>) =>
  Effect.gen(function*() {
    const remove = blobs.delete(blobKey).pipe(Effect.ignore)
    const metered = meteredStream(source, MAX_UPLOAD_BYTES)
    const written = yield* Effect.result(blobs.put(blobKey, metered.stream))
    if (written._tag === "Success") {
      return { _tag: "Stored", size: written.success.size, head: metered.state.head, remove } as StreamedFile
    }
    yield* remove
    if (metered.state.tooLarge) return { _tag: "TooLarge" } as StreamedFile
    if (metered.state.sourceFailed) return { _tag: "SourceFailed", error: metered.state.sourceError } as StreamedFile
    return yield* Effect.die(written.failure)
  })

/** The types `POST /attachments/from-url` takes (the spec's URL-fetch allowlist). */
export const URL_FETCH_TYPES: ReadonlyArray<string> = [
  "application/pdf",
  "audio/mp4",
  "audio/mpeg",
  "audio/ogg",
  "audio/wav",
  "audio/x-wav",
  "image/gif",
  "image/jpeg",
  "image/png",
  "image/webp",
  "video/mp4",
  "video/quicktime",
  "video/webm"
]

/** How long a from-url fetch may take, body included: 30 s (the spec's Limits). */
export const URL_FETCH_TIMEOUT_MS = 30_000

/** Body of `POST /attachments/from-url`. */
export const FromUrlRequest = Schema.Struct({
  url: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(8192)),
  filename: Schema.optionalKey(Schema.String.check(Schema.isMaxLength(1024)))
})
/** Body of `POST /attachments/from-url`. */
export type FromUrlRequest = typeof FromUrlRequest.Type

/** The spec's Attachment record: what both upload endpoints answer. */
export const AttachmentRecordWire = Schema.Struct({
  id: UuidId,
  filename: Schema.String,
  content_type: Schema.String,
  file_size: Schema.Int
})
/** The spec's Attachment record. */
export type AttachmentRecordWire = typeof AttachmentRecordWire.Type

/** `GET /attachments/{id}`: the record, where it belongs, and a signed download link that expires. */
export const AttachmentDetail = Schema.Struct({
  ...AttachmentRecordWire.fields,
  url: Schema.String,
  direction: Schema.Literals(["inbound", "outbound"]),
  message_id: Schema.NullOr(UuidId),
  conversation_id: Schema.NullOr(UuidId),
  created_at: Schema.String
})
/** `GET /attachments/{id}`. */
export type AttachmentDetail = typeof AttachmentDetail.Type
