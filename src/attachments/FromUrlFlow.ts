import { Effect } from "effect"
import { BadRequest, FailedWithBody } from "../kernel/ApiError.ts"
import { newId } from "../kernel/Id.ts"
import type { StorageError } from "../kernel/StorageError.ts"
import { now } from "../kernel/Timestamp.ts"
import type { AttachmentRecord, AttachmentStore } from "../ports/AttachmentStore.ts"
import type { BlobStore } from "../ports/BlobStore.ts"
import { OutboundError, type OutboundHttp } from "../ports/OutboundHttp.ts"
import { canonicalType, detectContentType, extensionFor, safeFilename } from "./ContentCheck.ts"
import {
  type AttachmentRecordWire,
  blockedExtension,
  type FromUrlRequest,
  MAX_UPLOAD_BYTES,
  streamIntoStore,
  URL_FETCH_TIMEOUT_MS,
  URL_FETCH_TYPES
} from "./Upload.ts"

/** What a fetch from a URL needs. */
export interface FromUrlDeps {
  readonly attachments: AttachmentStore["Service"]
  readonly blobs: BlobStore["Service"]
  readonly outbound: OutboundHttp["Service"]
}

const ALLOWED = new Set(URL_FETCH_TYPES.map((type) => canonicalType(type)!))

// The spec's attachment catalogue gives these texts as the body itself (`{"detail": "URL not allowed"}`).
const refused = (message: string) => new BadRequest({ message, plain: true })
const tooLarge = () => new FailedWithBody({ status: 413, body: { detail: "Payload Too Large" } })
const unsupported = () =>
  new FailedWithBody({ status: 415, body: { detail: { detail: "Unsupported Media Type", allowed_types: URL_FETCH_TYPES } } })

/** The last segment of the URL's path, decoded, when there is one. */
const nameFromUrl = (url: URL): string | null => {
  const last = url.pathname.split("/").filter((segment) => segment !== "").at(-1)
  if (last === undefined) return null
  try {
    return decodeURIComponent(last)
  } catch {
    return last
  }
}

/**
 * The file name a `Content-Disposition` answer header gives (`filename*=UTF-8''…` before
 * `filename="…"`), or null: a download link names its file there, not in its path.
 */
export const nameFromDisposition = (header: string | undefined): string | null => {
  if (header === undefined) return null
  const extended = /filename\*\s*=\s*([\w!#$&+.^`|~-]+)'[\w-]*'([^;\s]+)/i.exec(header)
  if (extended !== null) {
    try {
      const encoded = extended[2]!
      const name = extended[1]!.toLowerCase() === "utf-8"
        ? decodeURIComponent(encoded)
        : encoded.replace(/%([0-9a-f]{2})/gi, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)))
      if (name.trim() !== "") return name.trim()
    } catch {
      // A malformed extended value: the plain one below, if any.
    }
  }
  const plain = /(?:^|;)\s*filename\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^;\s]+))/i.exec(header)
  if (plain === null) return null
  const name = (plain[1] !== undefined ? plain[1].replace(/\\(.)/g, "$1") : plain[2]!).trim()
  return name === "" ? null : name
}

/**
 * `POST /attachments/from-url`: the file fetched by the guarded outbound client (public addresses
 * only, checked when connecting; redirects not followed; 30 s for the whole exchange) and streamed
 * into the blob store, capped at 50 MB on the declared length and while streaming, its type on the
 * spec's allowlist both as declared and as its bytes show. Every refusal answers the spec's words;
 * refused bytes are removed.
 */
export const makeFromUrl = ({ attachments, blobs, outbound }: FromUrlDeps) =>
  Effect.fnUntraced(function*(
    tenantId: string,
    request: FromUrlRequest
  ): Effect.fn.Return<AttachmentRecordWire, BadRequest | FailedWithBody | StorageError> {
    let url: URL
    try {
      url = new URL(request.url.trim())
    } catch {
      return yield* refused("URL not allowed")
    }
    if (url.protocol !== "https:" && url.protocol !== "http:") return yield* refused("URL not allowed")
    const given = request.filename?.trim() ?? ""
    const name = given !== "" ? given : nameFromUrl(url)
    const blocked = name === null ? null : blockedExtension(name)
    if (blocked !== null) return yield* refused(`File extension '.${blocked}' is not allowed`)

    const response = yield* outbound.stream({
      method: "GET",
      url: url.toString(),
      headers: { accept: URL_FETCH_TYPES.join(", "), "user-agent": "omnichannel-core" },
      timeoutMs: URL_FETCH_TIMEOUT_MS,
      maxResponseBytes: MAX_UPLOAD_BYTES
    }).pipe(Effect.mapError((error) =>
      error.reason === "UrlNotAllowed" ? refused("URL not allowed") : error.reason === "TooLarge" ? tooLarge() : refused("Failed to fetch URL")
    ))
    const drop = Effect.promise(() => response.body.cancel().catch(() => undefined))
    // A redirect is an answer, never followed.
    if (response.status >= 300 && response.status < 400) return yield* Effect.andThen(drop, refused("Failed to fetch URL"))
    if (response.status < 200 || response.status > 299) {
      return yield* Effect.andThen(drop, refused(`Source URL returned status ${response.status}`))
    }
    // Without a name given, the answer's Content-Disposition names the file, else the URL's path.
    const disposed = given === "" ? nameFromDisposition(response.headers["content-disposition"]) : null
    const blockedDisposed = disposed === null ? null : blockedExtension(disposed)
    if (blockedDisposed !== null) return yield* Effect.andThen(drop, refused(`File extension '.${blockedDisposed}' is not allowed`))
    const declared = response.headers["content-type"] ?? null
    const declaredType = declared === null ? null : canonicalType(declared)
    if (declaredType === null || !ALLOWED.has(declaredType)) return yield* Effect.andThen(drop, unsupported())

    const id = yield* newId
    const blobKey = `${tenantId}/${id}`
    const stored = yield* streamIntoStore(blobs, blobKey, response.body)
    if (stored._tag === "TooLarge") return yield* tooLarge()
    if (stored._tag === "SourceFailed") {
      return yield* stored.error instanceof OutboundError && stored.error.reason === "TooLarge" ? tooLarge() : refused("Failed to fetch URL")
    }
    if (stored.size === 0) {
      yield* stored.remove
      return yield* refused("Source URL returned an empty body")
    }
    // The bytes must be of an allowed type too: a server may call anything an image.
    const checked = yield* detectContentType(stored.head, declared)
    const actualType = canonicalType(checked.contentType)
    if (actualType === null || !ALLOWED.has(actualType)) {
      yield* stored.remove
      return yield* unsupported()
    }
    const fallback = `download-${id.slice(0, 8)}.${extensionFor(checked.contentType)}`
    const record: AttachmentRecord = {
      id,
      tenant_id: tenantId,
      message_id: null,
      conversation_id: null,
      direction: "outbound",
      origin: "url",
      filename: (disposed ?? name) === null ? fallback : safeFilename((disposed ?? name)!, fallback),
      content_type: checked.contentType,
      file_size: stored.size,
      blob_key: blobKey,
      external_id: null,
      created_at: yield* now
    }
    yield* attachments.insert(record).pipe(Effect.tapError(() => stored.remove))
    return { id, filename: record.filename, content_type: record.content_type, file_size: record.file_size }
  })
