import { Effect } from "effect"
import type { AttachmentService } from "../attachments/AttachmentService.ts"
import { errorBody, FailedWithBody, InvalidRequest } from "../kernel/ApiError.ts"
import { newId } from "../kernel/Id.ts"
import { sendReferenceOf } from "../kernel/SendReference.ts"
import { now } from "../kernel/Timestamp.ts"
import type { AttachmentRecord } from "../ports/AttachmentStore.ts"
import type { BlobStoreError } from "../ports/BlobStore.ts"
import { type ChatappCredentials, type ChatPlatform, ChatPlatformError } from "../ports/ChatPlatform.ts"
import type { ConversationRecord } from "../ports/ConversationStore.ts"
import type { MessageRecord, MessageStore } from "../ports/MessageStore.ts"
import type { Transactor } from "../ports/Transactor.ts"
import {
  CHATAPP_MEDIA_RULES,
  type ChatappSendMediaType,
  essenceOf,
  isAnimatedWebp,
  MAX_CAPTION_LENGTH,
  mediaMessageOf,
  mediaRefusal,
  mediaTypeFor
} from "./ChatappMediaRules.ts"
import { type Message, toMessage } from "./Message.ts"
import { type OutboundLifecycle, pendingMessage, settleOperatorAnswer } from "./OutboundLifecycle.ts"

/** What sending files needs. */
export interface MediaSendDeps {
  readonly messages: MessageStore["Service"]
  readonly transactor: Transactor["Service"]
  readonly attachments: AttachmentService["Service"]
  readonly platform: ChatPlatform["Service"]
  readonly lifecycle: OutboundLifecycle
}

/** Files checked against the operator's limits, ready to go out as `kind` messages. */
export interface MediaPlan {
  readonly kind: ChatappSendMediaType
  readonly files: ReadonlyArray<AttachmentRecord>
  /** Shown under the first file; null when there is no text. */
  readonly caption: string | null
}

const unreadable = (error: BlobStoreError) =>
  new FailedWithBody({
    status: 503,
    body: errorBody("file_unreadable", `A file could not be read (${error.message}); it was not sent. Try again.`)
  })

/** The same failure, no longer in doubt (what it was about was never sent). */
const answeredOf = (error: ChatPlatformError): ChatPlatformError =>
  new ChatPlatformError({
    kind: error.kind,
    code: error.code,
    subcode: error.subcode,
    message: error.message,
    userTitle: error.userTitle,
    userMessage: error.userMessage,
    fbtraceId: error.fbtraceId,
    httpStatus: error.httpStatus
  })

/**
 * Files to a chat-app conversation: resolved in the tenant and checked against the operator's limits
 * before any call (`plan`), then each uploaded to the operator and sent as its own message (`send`),
 * one stored outbound message per file through the one outbound lifecycle.
 */
export const makeMediaSend = (deps: MediaSendDeps) => {
  const { messages, transactor, attachments, platform, lifecycle } = deps

  /**
   * The files of `ids` (404 `Attachment {id} not found`, a repeated id sent once), the message type
   * (`requested`, else the first file's), every file within that type's limits (422 naming the
   * limit), and the text as the first file's caption (422 when the type takes none).
   */
  const plan = Effect.fnUntraced(function*(
    tenantId: string,
    ids: ReadonlyArray<string>,
    requested: ChatappSendMediaType | undefined,
    text: string
  ) {
    const files: Array<AttachmentRecord> = []
    for (const id of [...new Set(ids.map((id) => id.toLowerCase()))]) files.push(yield* attachments.get(tenantId, id))
    const kind = requested ?? mediaTypeFor(files[0]!.content_type)
    for (const [index, file] of files.entries()) {
      // A sticker past the static limit may be animated, with a limit of its own: its header tells.
      const rule = CHATAPP_MEDIA_RULES[kind]
      const mayBeAnimated = rule.maxAnimatedBytes !== undefined && file.file_size > rule.maxBytes &&
        file.file_size <= rule.maxAnimatedBytes && essenceOf(file.content_type) === "image/webp"
      const animated = mayBeAnimated ? isAnimatedWebp(yield* attachments.bytesOf(file).pipe(Effect.mapError(unreadable))) : null
      const refused = mediaRefusal(kind, { contentType: file.content_type, fileSize: file.file_size, animated })
      if (refused !== null) {
        return yield* InvalidRequest.single(["body", "attachments", index], refused.reason, refused.type, {
          message_type: kind,
          max_bytes: animated === true ? rule.maxAnimatedBytes! : rule.maxBytes,
          allowed_types: rule.typeNames
        })
      }
    }
    const caption = text.trim() === "" ? null : text
    if (caption !== null && !CHATAPP_MEDIA_RULES[kind].caption) {
      return yield* InvalidRequest.single(
        ["body", "text"],
        `A chat-app ${kind} message takes no caption: send the text as its own message (POST /messages with text only), before or after the ${kind}`,
        "caption_not_supported"
      )
    }
    if (caption !== null && caption.length > MAX_CAPTION_LENGTH) {
      return yield* InvalidRequest.single(["body", "text"], `A caption is at most ${MAX_CAPTION_LENGTH} characters`, "string_too_long")
    }
    const checked: MediaPlan = { kind, files, caption }
    return checked
  })

  /**
   * Stores a `pending` message carrying `file` (an upload not sent yet is pointed at it; a file some
   * message carries already is copied, so each message shows its own), in one transaction.
   */
  const pendingWith = Effect.fnUntraced(function*(record: MessageRecord, file: AttachmentRecord, bytes: Uint8Array) {
    if (file.message_id === null) {
      yield* transactor.withTransaction(Effect.gen(function*() {
        yield* messages.insert(record)
        yield* attachments.carry(record.tenant_id, [file.id], record.id, record.conversation_id)
      }))
      return
    }
    const copy = yield* attachments.prepareInbound({
      tenantId: record.tenant_id,
      bytes,
      declaredType: file.content_type,
      filename: file.filename,
      externalId: null,
      origin: "upload",
      direction: "outbound"
    }).pipe(Effect.mapError(unreadable))
    yield* transactor.withTransaction(Effect.gen(function*() {
      yield* messages.insert(record)
      yield* attachments.record(copy, { messageId: record.id, conversationId: record.conversation_id })
    })).pipe(Effect.tapError(() => attachments.discard(copy)))
  })

  /**
   * Sends the planned files in order, one operator message each (the caption on the first only):
   * each stored `pending` with its file, uploaded (`POST /{phone_number_id}/media`), sent by its
   * media id, then `sent` (`message.sent`). The first refusal, of the upload or the send, stores that
   * message `failed` with the operator's error and answers it (`OperatorFailed` naming the message);
   * the files after it are not sent.
   */
  const send = Effect.fnUntraced(function*(input: {
    readonly conversation: ConversationRecord
    readonly credentials: ChatappCredentials
    readonly to: string
    readonly plan: MediaPlan
  }) {
    const { conversation, credentials, plan } = input
    const to = input.to.replace(/^\+/, "")
    const sent: Array<Message> = []
    for (const [index, file] of plan.files.entries()) {
      const caption = index === 0 ? plan.caption : null
      const bytes = yield* attachments.bytesOf(file).pipe(Effect.mapError(unreadable))
      const content = {
        media: {
          mime_type: essenceOf(file.content_type),
          filename: file.filename,
          file_size: file.file_size,
          ...(plan.files.length > 1 ? { part: index + 1, of: plan.files.length } : {})
        }
      }
      const pending = pendingMessage({ conversation, messageType: plan.kind, text: caption, content }, yield* newId, yield* now)
      yield* pendingWith(pending, file, bytes)
      // An upload whose answer was lost sent nothing: only the send itself can leave the message in doubt.
      // The send names its message, so a status settles it even if the answer never comes back.
      const answered = yield* Effect.result(
        platform.uploadMedia(credentials, { bytes, mimeType: essenceOf(file.content_type), filename: file.filename }).pipe(
          Effect.mapError((error) => (error.unanswered === true ? answeredOf(error) : error)),
          Effect.flatMap(({ id }) =>
            platform.sendMessage(credentials, to, {
              ...mediaMessageOf(plan.kind, id, caption, file.filename),
              biz_opaque_callback_data: sendReferenceOf(pending.id)
            })
          )
        )
      )
      const settled = yield* settleOperatorAnswer(lifecycle, transactor, pending, answered)
      sent.push(settled.wire ?? toMessage(settled.record, []))
    }
    return sent
  })

  return { plan, send }
}
