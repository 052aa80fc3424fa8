import { Context, Effect, Layer, Option } from "effect"
import { type BadRequest, errorBody, FailedWithBody, type InvalidRequest, NotFound } from "../kernel/ApiError.ts"
import { newId } from "../kernel/Id.ts"
import type { StorageError } from "../kernel/StorageError.ts"
import { now } from "../kernel/Timestamp.ts"
import { type AttachmentOrigin, type AttachmentRecord, AttachmentStore } from "../ports/AttachmentStore.ts"
import { BlobStore, BlobStoreError } from "../ports/BlobStore.ts"
import { MultipartReader } from "../ports/MultipartReader.ts"
import { OutboundHttp } from "../ports/OutboundHttp.ts"
import type { MessageAttachment } from "./Attachment.ts"
import { detectContentType, extensionFor, safeFilename } from "./ContentCheck.ts"
import { DownloadLinks } from "./DownloadLinks.ts"
import { makeFromUrl } from "./FromUrlFlow.ts"
import type { AttachmentDetail, AttachmentRecordWire, FromUrlRequest } from "./Upload.ts"
import { makeUpload, type TypeRefusal } from "./UploadFlow.ts"

// The spec's attachment catalogue gives this text as the body itself: `{"detail": "Attachment {id} not found"}`.
const notFound = (id: string) => new NotFound({ message: `Attachment ${id} not found`, plain: true })

/** Blob deletes in flight at once after a prune batch. */
const BLOB_DELETES_AT_ONCE = 8

/** Response of `DELETE /attachments/{attachment_id}`. */
export interface AttachmentDeleted {
  readonly id: string
  readonly deleted: true
}

/** An attachment whose bytes are in the blob store and whose record waits for the message carrying it. */
export type PreparedAttachment = Omit<AttachmentRecord, "message_id" | "conversation_id">

/** A file that arrived with a message, before it is checked and stored. */
export interface InboundFile {
  readonly tenantId: string
  readonly bytes: Uint8Array
  /** The type the sender claimed, checked against the bytes. */
  readonly declaredType: string | null
  readonly filename: string | null
  /** The operator's media id, for chat-app media. */
  readonly externalId: string | null
  readonly origin: AttachmentOrigin
  readonly direction: "inbound" | "outbound"
}

// The word a default name starts with: `image-1a2b3c4d.png`, `file-1a2b3c4d.pdf`.
const kindOf = (contentType: string) => {
  const top = contentType.split("/")[0]!.toLowerCase()
  return top === "image" || top === "audio" || top === "video" ? top : "file"
}

/**
 * Attachments: files checked and written to the blob store before the message carrying them is
 * stored, recorded in that message's transaction, listed with their messages and downloaded
 * through signed links.
 */
export class AttachmentService extends Context.Service<AttachmentService, {
  /**
   * Checks the bytes' type, names the file safely and writes the bytes under `<tenant>/<id>`,
   * before the caller's transaction: the record it returns is inserted by `record` inside it, or
   * the bytes are removed by `discard` if the transaction does not happen.
   */
  readonly prepareInbound: (file: InboundFile) => Effect.Effect<PreparedAttachment, BlobStoreError>
  /** Inserts the record of a prepared attachment for its message (in the caller's transaction). */
  readonly record: (
    prepared: PreparedAttachment,
    carriedBy: { readonly messageId: string; readonly conversationId: string }
  ) => Effect.Effect<AttachmentRecord, StorageError>
  /** Removes a prepared attachment's bytes (its message was a duplicate, or rolled back); never fails. */
  readonly discard: (prepared: PreparedAttachment) => Effect.Effect<void>
  readonly get: (tenantId: string, id: string) => Effect.Effect<AttachmentRecord, NotFound | StorageError>
  /**
   * `POST /attachments/upload`: the request's multipart `file`, streamed into the blob store and
   * recorded for a later send; `refuseType` refuses more types than the upload rules do (nothing kept).
   */
  readonly upload: (
    tenantId: string,
    request: Request,
    refuseType?: TypeRefusal
  ) => Effect.Effect<AttachmentRecordWire, BadRequest | InvalidRequest | StorageError>
  /** `POST /attachments/from-url`: a public URL's file fetched by the guarded client, streamed into the blob store. */
  readonly fromUrl: (
    tenantId: string,
    request: FromUrlRequest
  ) => Effect.Effect<AttachmentRecordWire, BadRequest | FailedWithBody | StorageError>
  /** `GET /attachments/{id}`: the record with a signed download link. */
  readonly detail: (tenantId: string, id: string) => Effect.Effect<AttachmentDetail, NotFound | StorageError>
  /** The attachments of these messages, in creation order. */
  readonly listByMessages: (
    tenantId: string,
    messageIds: ReadonlyArray<string>
  ) => Effect.Effect<ReadonlyArray<AttachmentRecord>, StorageError>
  /** A freshly signed download link of the tenant's attachment `id`. */
  readonly linkTo: (tenantId: string, id: string) => Effect.Effect<string>
  /** The API's form of an attachment, with a freshly signed download link. */
  readonly toWire: (record: AttachmentRecord) => Effect.Effect<MessageAttachment>
  /**
   * Points stored attachments at the outbound message that carries them, each unless a message
   * carries it already (an upload sent twice stays with its first message).
   */
  readonly carry: (
    tenantId: string,
    attachmentIds: ReadonlyArray<string>,
    messageId: string,
    conversationId: string
  ) => Effect.Effect<void, StorageError>
  /** An attachment's whole bytes (for a file an email carries; callers bound the size first). */
  readonly bytesOf: (record: AttachmentRecord) => Effect.Effect<Uint8Array, BlobStoreError>
  /**
   * `DELETE /attachments/{id}`: an upload not sent yet, record and bytes (the bytes after the record's
   * transaction: a crash between leaves bytes no record names). One some message, email or team chat
   * message carries answers 409 `attachment_already_sent` and stays; it goes with its conversation's
   * contact (`DELETE /contacts/{id}`).
   */
  readonly deleteUnsent: (tenantId: string, id: string) => Effect.Effect<AttachmentDeleted, NotFound | FailedWithBody | StorageError>
  /**
   * The retention prune of uploads never sent: up to `limit` uploads and fetched files of any tenant
   * made before `before` that nothing carries, records first, then their bytes (a failed blob delete
   * is logged and leaves the bytes without a record). Resolves to the records deleted.
   */
  readonly pruneUnsent: (before: string, limit: number) => Effect.Effect<number, StorageError>
  /** The record and its bytes, for the download handler; none when either is missing. */
  readonly open: (
    tenantId: string,
    id: string
  ) => Effect.Effect<
    Option.Option<{ readonly record: AttachmentRecord; readonly stream: ReadableStream<Uint8Array> }>,
    StorageError | BlobStoreError
  >
}>()("omnichannel-core/attachments/AttachmentService") {
  static readonly layer = Layer.effect(
    AttachmentService,
    Effect.gen(function*() {
      const attachments = yield* AttachmentStore
      const blobs = yield* BlobStore
      const links = yield* DownloadLinks
      const upload = makeUpload({ attachments, blobs, multipart: yield* MultipartReader })
      const fromUrl = makeFromUrl({ attachments, blobs, outbound: yield* OutboundHttp })

      const deleteBytes = (key: string) =>
        blobs.delete(key).pipe(
          Effect.catch((error) =>
            Effect.logWarning("could not delete a deleted attachment's bytes; they stay without a record", error).pipe(
              Effect.annotateLogs({ blob_key: key })
            )
          )
        )

      return AttachmentService.of({
        prepareInbound: Effect.fn("AttachmentService.prepareInbound")(function*(file: InboundFile) {
          const id = yield* newId
          const checked = yield* detectContentType(file.bytes, file.declaredType)
          if (!checked.matches) {
            yield* Effect.logWarning("attachment bytes differ from the declared type").pipe(
              Effect.annotateLogs({ attachment_id: id, declared: file.declaredType, detected: checked.contentType })
            )
          }
          const fallback = `${kindOf(checked.contentType)}-${id.slice(0, 8)}.${extensionFor(checked.contentType)}`
          const blobKey = `${file.tenantId}/${id}`
          const written = yield* blobs.put(blobKey, file.bytes)
          return {
            id,
            tenant_id: file.tenantId,
            direction: file.direction,
            origin: file.origin,
            filename: file.filename === null ? fallback : safeFilename(file.filename, fallback),
            content_type: checked.contentType,
            file_size: written.size,
            blob_key: blobKey,
            external_id: file.externalId,
            created_at: yield* now
          }
        }),
        record: Effect.fn("AttachmentService.record")(function*(prepared, carriedBy) {
          const record: AttachmentRecord = {
            ...prepared,
            message_id: carriedBy.messageId,
            conversation_id: carriedBy.conversationId
          }
          yield* attachments.insert(record)
          return record
        }),
        discard: Effect.fn("AttachmentService.discard")(function*(prepared) {
          yield* blobs.delete(prepared.blob_key).pipe(
            Effect.catch((error) =>
              Effect.logWarning("could not remove a discarded attachment's bytes", error).pipe(
                Effect.annotateLogs({ attachment_id: prepared.id, blob_key: prepared.blob_key })
              )
            )
          )
        }),
        get: Effect.fn("AttachmentService.get")(function*(tenantId, id) {
          const found = yield* attachments.get(tenantId, id)
          if (Option.isNone(found)) return yield* notFound(id)
          return found.value
        }),
        listByMessages: Effect.fn("AttachmentService.listByMessages")(function*(tenantId, messageIds) {
          if (messageIds.length === 0) return []
          return yield* attachments.listByMessages(tenantId, messageIds)
        }),
        upload: Effect.fn("AttachmentService.upload")(function*(tenantId, request, refuseType) {
          return yield* upload(tenantId, request, refuseType)
        }),
        fromUrl: Effect.fn("AttachmentService.fromUrl")(function*(tenantId, request) {
          return yield* fromUrl(tenantId, request)
        }),
        detail: Effect.fn("AttachmentService.detail")(function*(tenantId, id) {
          const found = yield* attachments.get(tenantId, id)
          if (Option.isNone(found)) return yield* notFound(id)
          const record = found.value
          return {
            id: record.id,
            filename: record.filename,
            content_type: record.content_type,
            file_size: record.file_size,
            url: yield* links.sign(record.tenant_id, record.id),
            direction: record.direction,
            message_id: record.message_id,
            conversation_id: record.conversation_id,
            created_at: record.created_at
          }
        }),
        linkTo: (tenantId, id) => links.sign(tenantId, id),
        toWire: Effect.fn("AttachmentService.toWire")(function*(record: AttachmentRecord) {
          return {
            id: record.id,
            filename: record.filename,
            content_type: record.content_type,
            file_size: record.file_size,
            url: yield* links.sign(record.tenant_id, record.id)
          }
        }),
        carry: Effect.fn("AttachmentService.carry")(function*(tenantId, attachmentIds, messageId, conversationId) {
          const loose: Array<string> = []
          for (const id of attachmentIds) {
            const found = yield* attachments.get(tenantId, id)
            if (Option.isSome(found) && found.value.message_id === null) loose.push(id)
          }
          yield* attachments.attach(tenantId, loose, messageId, conversationId)
        }),
        bytesOf: Effect.fn("AttachmentService.bytesOf")(function*(record) {
          const stream = yield* blobs.get(record.blob_key)
          if (Option.isNone(stream)) {
            return yield* new BlobStoreError({ message: `the bytes of attachment ${record.id} are missing` })
          }
          return yield* Effect.tryPromise({
            try: async () => new Uint8Array(await new Response(stream.value).arrayBuffer()),
            catch: (cause) => new BlobStoreError({ message: `could not read attachment ${record.id}`, cause })
          })
        }),
        deleteUnsent: Effect.fn("AttachmentService.deleteUnsent")(function*(tenantId, id) {
          const outcome = yield* attachments.deleteUnsent(tenantId, id)
          switch (outcome._tag) {
            case "Missing":
              return yield* notFound(id)
            case "Sent":
              return yield* new FailedWithBody({
                status: 409,
                body: errorBody(
                  "attachment_already_sent",
                  `Attachment ${id} is already sent with a message, so it stays with it; ` +
                    "only an upload not yet sent can be deleted (a sent file goes when its contact is deleted)",
                  { message_id: outcome.message_id, conversation_id: outcome.conversation_id }
                )
              })
            case "Deleted":
              yield* deleteBytes(outcome.blob_key)
              return { id, deleted: true as const }
          }
        }),
        pruneUnsent: Effect.fn("AttachmentService.pruneUnsent")(function*(before, limit) {
          const keys = yield* attachments.pruneUnsent(before, limit)
          yield* Effect.forEach(keys, deleteBytes, { concurrency: BLOB_DELETES_AT_ONCE, discard: true })
          return keys.length
        }),
        open: Effect.fn("AttachmentService.open")(function*(tenantId, id) {
          const found = yield* attachments.get(tenantId, id)
          if (Option.isNone(found)) return Option.none()
          const stream = yield* blobs.get(found.value.blob_key)
          if (Option.isNone(stream)) {
            yield* Effect.logWarning("an attachment's record has no bytes in the blob store").pipe(
              Effect.annotateLogs({ attachment_id: id, blob_key: found.value.blob_key })
            )
            return Option.none()
          }
          return Option.some({ record: found.value, stream: stream.value })
        })
      })
    })
  )
}

/** The attachment as message responses carry it (re-exported for the areas that embed it). */
export { MessageAttachment } from "./Attachment.ts"
