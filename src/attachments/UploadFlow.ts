import { Effect, Option } from "effect"
import { BadRequest, InvalidRequest } from "../kernel/ApiError.ts"
import { newId } from "../kernel/Id.ts"
import type { StorageError } from "../kernel/StorageError.ts"
import { now } from "../kernel/Timestamp.ts"
import type { AttachmentRecord, AttachmentStore } from "../ports/AttachmentStore.ts"
import type { BlobStore } from "../ports/BlobStore.ts"
import type { MultipartReader } from "../ports/MultipartReader.ts"
import { detectContentType, extensionFor, safeFilename } from "./ContentCheck.ts"
import {
  type AttachmentRecordWire,
  blockedExtension,
  MAX_UPLOAD_BYTES,
  MAX_UPLOAD_REQUEST_BYTES,
  streamIntoStore,
  TOO_LARGE_TEXT
} from "./Upload.ts"

/** The multipart field an upload's file travels in. */
export const UPLOAD_FIELD = "file"

/** What an upload needs. */
export interface UploadDeps {
  readonly attachments: AttachmentStore["Service"]
  readonly blobs: BlobStore["Service"]
  readonly multipart: MultipartReader["Service"]
}

/** The refusal of a file of this (detected) content type, or undefined when the upload takes it. */
export type TypeRefusal = (contentType: string) => string | undefined

/**
 * `POST /attachments/upload`: the multipart field `file` streamed into the blob store as it arrives
 * (never whole in memory), refused with the spec's words when the request declares a Content-Length
 * over `MAX_UPLOAD_REQUEST_BYTES` (before a byte is read, so a client waiting for `100 Continue`
 * never sends the body), when the file has no filename, a blocked extension, more than 50 MB
 * (reading stops at the byte past it), no bytes, bytes of another type than declared, or a type
 * `refuseType` refuses; refused bytes are removed and no record is kept. The record waits for a
 * message to carry it.
 */
export const makeUpload = ({ attachments, blobs, multipart }: UploadDeps) =>
  Effect.fnUntraced(function*(
    tenantId: string,
    request: Request,
    refuseType?: TypeRefusal
  ): Effect.fn.Return<AttachmentRecordWire, BadRequest | InvalidRequest | StorageError> {
    const declared = Number(request.headers.get("content-length") ?? Number.NaN)
    if (declared > MAX_UPLOAD_REQUEST_BYTES) return yield* new BadRequest({ message: TOO_LARGE_TEXT, plain: true })
    const body = request.body
    const contentType = request.headers.get("content-type") ?? ""
    if (body === null || !/^multipart\/form-data\s*;/i.test(contentType)) {
      return yield* new BadRequest({ message: `Send the file as multipart/form-data in a field named '${UPLOAD_FIELD}'` })
    }
    const found = yield* multipart.file(body, contentType, { field: UPLOAD_FIELD, maxBytes: MAX_UPLOAD_BYTES }).pipe(
      Effect.mapError((error) => new BadRequest({ message: `The multipart body could not be read: ${error.message}` }))
    )
    if (Option.isNone(found)) return yield* InvalidRequest.single(["body", UPLOAD_FIELD], "Field required", "missing")
    const file = found.value
    // The spec's attachment catalogue texts are the body itself (`{"detail": "No filename provided"}`);
    // the service's own refusals carry a code.
    const refuse = (message: string) =>
      Effect.andThen(
        Effect.promise(() => file.bytes.cancel().catch(() => undefined)),
        Effect.fail(new BadRequest({ message, plain: true }))
      )
    if (file.filename === null || file.filename.trim() === "") return yield* refuse("No filename provided")
    const blocked = blockedExtension(file.filename)
    if (blocked !== null) return yield* refuse(`File extension '.${blocked}' is not allowed`)

    const id = yield* newId
    const blobKey = `${tenantId}/${id}`
    const stored = yield* streamIntoStore(blobs, blobKey, file.bytes)
    if (stored._tag === "TooLarge") return yield* new BadRequest({ message: TOO_LARGE_TEXT, plain: true })
    if (stored._tag === "SourceFailed") return yield* new BadRequest({ message: "The upload broke off before the end of the file" })
    const refuseStored = (message: string, plain?: true) =>
      Effect.andThen(stored.remove, Effect.fail(new BadRequest({ message, ...(plain === undefined ? {} : { plain }) })))
    // No bytes have no type to check: said as it is, not as a type mismatch.
    if (stored.size === 0) return yield* refuseStored("File is empty")
    const checked = yield* detectContentType(stored.head, file.contentType)
    if (!checked.matches) return yield* refuseStored(`File content doesn't match claimed type '${file.contentType ?? ""}'`, true)
    const refusedType = refuseType?.(checked.contentType)
    if (refusedType !== undefined) return yield* refuseStored(refusedType)
    const record: AttachmentRecord = {
      id,
      tenant_id: tenantId,
      message_id: null,
      conversation_id: null,
      direction: "outbound",
      origin: "upload",
      filename: safeFilename(file.filename, `upload-${id.slice(0, 8)}.${extensionFor(checked.contentType)}`),
      content_type: checked.contentType,
      file_size: stored.size,
      blob_key: blobKey,
      external_id: null,
      created_at: yield* now
    }
    yield* attachments.insert(record).pipe(Effect.tapError(() => stored.remove))
    return { id, filename: record.filename, content_type: record.content_type, file_size: record.file_size }
  })
