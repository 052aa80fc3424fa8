import { Context, Effect, Layer, Option } from "effect"
import { AttachmentService } from "../attachments/AttachmentService.ts"
import { ChannelService } from "../channels/ChannelService.ts"
import { ContactService } from "../contacts/ContactService.ts"
import { ConversationService } from "../conversations/ConversationService.ts"
import { conversationTarget, SummaryService } from "../summaries/SummaryService.ts"
import { ChannelUnavailable, type FailedWithBody, InvalidRequest, NotFound, type OperatorFailed } from "../kernel/ApiError.ts"
import { chatappCredentialsOf } from "../kernel/ChatappChannel.ts"
import type { ChatappMessageHandler, ChatappStatusHandler } from "../kernel/ChatappEvents.ts"
import { makeEvent } from "../kernel/EventEnvelope.ts"
import type { BackgroundJob } from "../kernel/BackgroundWork.ts"
import { newId } from "../kernel/Id.ts"
import { sendReferenceOf } from "../kernel/SendReference.ts"
import { type PageRequest, toWindow } from "../kernel/Pagination.ts"
import type { StorageError } from "../kernel/StorageError.ts"
import { now } from "../kernel/Timestamp.ts"
import { ChatPlatform, type ChatappCredentials, type ChatappOutboundMessage } from "../ports/ChatPlatform.ts"
import type { ConversationRecord } from "../ports/ConversationStore.ts"
import type { AttachmentRecord } from "../ports/AttachmentStore.ts"
import { type MessageError, type MessageRecord, MessageStore } from "../ports/MessageStore.ts"
import { OutboxStore } from "../ports/OutboxStore.ts"
import { Transactor } from "../ports/Transactor.ts"
import {
  type Message,
  type MessageAttachmentWire,
  type SendMessageRequest,
  type SendMessageResponse,
  toMessage
} from "./Message.ts"
import { CHATAPP_SEND_MEDIA_TYPES, isChatappSendMediaType, MAX_CHATAPP_FILES_PER_SEND } from "./ChatappMediaRules.ts"
import { makeMediaSend } from "./ChatappMediaSend.ts"
import { makeChatappInbound } from "./ChatappInbound.ts"
import { makeOutboundLifecycle, type OutboundLifecycle, pendingMessage, settleOperatorAnswer } from "./OutboundLifecycle.ts"
import { makeMessageRecording, type OutgoingMessage, type ReceivedMessage } from "./MessageRecording.ts"
import { makeUnansweredSendsJob } from "./UnansweredSends.ts"

const notFound = (id: string) => new NotFound({ message: `Message ${id} not found` })

/** The operator's customer-service window: free-form messages only within 24 hours of the contact's last message. */
export const CUSTOMER_SERVICE_WINDOW_MS = 24 * 60 * 60 * 1000

/** Largest text the operator takes in one message. */
export const MAX_TEXT_LENGTH = 4096


const WINDOW_CLOSED =
  "The chat-app customer-service window is closed: free-form messages can be sent only within 24 hours of the contact's last message. Send an approved template instead (POST /chatapp-templates/{template_id}/send)."

export { Message } from "./Message.ts"
export {
  CHATAPP_MEDIA_RULES,
  CHATAPP_SEND_MEDIA_TYPES,
  type ChatappSendMediaType,
  MAX_CAPTION_LENGTH,
  MAX_CHATAPP_FILES_PER_SEND
} from "./ChatappMediaRules.ts"
export { MAX_MEDIA_BYTES } from "./ChatappInbound.ts"
export type { OutgoingMessage, ReceivedMessage } from "./MessageRecording.ts"
export { type OutboundDraft, type OutboundOutcome, pendingMessage } from "./OutboundLifecycle.ts"
export { nextOutboundStatus } from "./MessageStatusMachine.ts"

/** A message another area composed, ready for the operator. */
export interface OutboundDelivery {
  readonly conversation: ConversationRecord
  readonly credentials: ChatappCredentials
  /** The recipient's number (E.164 or digits). */
  readonly to: string
  readonly messageType: string
  /** What the message says, as shown in the conversation. */
  readonly text: string | null
  readonly content: Readonly<Record<string, unknown>>
  /** The message in the operator's shape. */
  readonly operatorMessage: ChatappOutboundMessage
}

/** Messages: received from the operator, sent through it, their statuses, read through the API. */
export class MessageService extends Context.Service<MessageService, {
  /** The inbound handler that stores a message in its contact's conversation; it runs last. */
  readonly storeHandler: ChatappMessageHandler
  /** The inbound handler that moves an outbound message by the statuses the operator reports. */
  readonly statusHandler: ChatappStatusHandler
  /**
   * Sends chat-app text, or files (one operator message each, uploaded to the operator first, the
   * text as the first file's caption), in a conversation whose customer-service window is open
   * (`message.sent` each). A file send answers its first message with `messages`, all of them.
   */
  readonly send: (
    tenantId: string,
    request: SendMessageRequest
  ) => Effect.Effect<
    SendMessageResponse,
    NotFound | InvalidRequest | ChannelUnavailable | OperatorFailed | FailedWithBody | StorageError
  >
  /**
   * Sends what another area composed (a template) in a conversation, with no window check: stored
   * `pending`, then `sent` (`message.sent`), or `failed` with the operator's refusal (`OperatorFailed`
   * naming the stored message).
   */
  readonly deliver: (input: OutboundDelivery) => Effect.Effect<Message, OperatorFailed | StorageError>
  /**
   * Stores a message another area received, with its files, in the caller's transaction: the
   * conversation's activity is noted and `message.received` emitted. Resolves to the stored message
   * and its files' records.
   */
  readonly recordReceived: (
    input: ReceivedMessage
  ) => Effect.Effect<{ readonly message: MessageRecord; readonly files: ReadonlyArray<AttachmentRecord> }, StorageError>
  /**
   * Stores an outbound message another area sends by its own transport, `pending`, before the
   * transport is asked (a crash in between leaves a message, not nothing); attachments not yet
   * carried by a message are pointed at it.
   */
  readonly recordPending: (input: OutgoingMessage) => Effect.Effect<MessageRecord, StorageError>
  /** The transport took a pending message: `sent` (`message.sent`), the conversation's activity noted. */
  readonly markSent: (message: MessageRecord, externalId: string | null) => Effect.Effect<Message, StorageError>
  /** The transport refused a pending message: `failed` with why. */
  readonly markFailed: (message: MessageRecord, error: MessageError) => Effect.Effect<MessageRecord, StorageError>
  /**
   * The outbound lifecycle's batch forms, for areas that send many at once (campaigns): pending
   * messages stored in one statement, and settled by their transport's answers in a few, in the
   * caller's transaction.
   */
  readonly outbound: OutboundLifecycle
  /** The background job that settles chat-app sends in doubt by the operator's statuses (`UnansweredSends.ts`). */
  readonly job: BackgroundJob
  readonly get: (tenantId: string, id: string) => Effect.Effect<Message, NotFound | StorageError>
  /** One page of a conversation's messages, oldest first. */
  readonly list: (
    tenantId: string,
    conversationId: string,
    page: PageRequest
  ) => Effect.Effect<{ readonly items: ReadonlyArray<Message>; readonly total: number }, NotFound | StorageError>
}>()("omnichannel-core/messages/MessageService") {
  static readonly layer = Layer.effect(
    MessageService,
    Effect.gen(function*() {
      const messages = yield* MessageStore
      const outbox = yield* OutboxStore
      const transactor = yield* Transactor
      const contacts = yield* ContactService
      const conversations = yield* ConversationService
      const channels = yield* ChannelService
      const attachments = yield* AttachmentService
      const platform = yield* ChatPlatform
      const summaries = yield* SummaryService

      // Every file's summary fields in one read of the summaries, however many files.
      const attachmentWires = Effect.fnUntraced(function*(files: ReadonlyArray<AttachmentRecord>) {
        if (files.length === 0) return []
        const fields = yield* summaries.fieldsFor(files[0]!.tenant_id, files.map(conversationTarget))
        return yield* Effect.forEach(files, (file, i) => Effect.map(attachments.toWire(file), (wire) => ({ ...wire, ...fields[i]! })))
      })

      const wireOf = Effect.fnUntraced(function*(records: ReadonlyArray<MessageRecord>) {
        if (records.length === 0) return []
        const files = (yield* attachments.listByMessages(records[0]!.tenant_id, records.map((m) => m.id)))
          .filter((file) => file.message_id !== null)
        const wires = yield* attachmentWires(files)
        const byMessage = new Map<string, Array<MessageAttachmentWire>>()
        files.forEach((file, i) => {
          const list = byMessage.get(file.message_id!) ?? []
          list.push(wires[i]!)
          byMessage.set(file.message_id!, list)
        })
        return records.map((record) => toMessage(record, byMessage.get(record.id) ?? []))
      })

      const messageEvent = Effect.fnUntraced(function*(type: "message.received" | "message.sent", message: Message) {
        return yield* makeEvent({
          type,
          tenantId: message.tenant_id,
          data: {
            message,
            conversation_id: message.conversation_id,
            contact_id: message.contact_id,
            channel_id: message.channel_id
          }
        })
      })

      const { storeHandler, statusHandler } = makeChatappInbound({
        messages,
        outbox,
        contacts,
        conversations,
        attachments,
        platform,
        attachmentWires,
        messageEvent
      })

      // Stored `pending` before the operator is called, so a crash in between leaves a message, not
      // nothing; a refusal is stored `failed` with what the operator said.
      const lifecycle = makeOutboundLifecycle({ messages, outbox, conversations, wireOf, messageEvent })

      // Stored `pending` before the operator is called, so a crash in between leaves a message, not
      // nothing; then settled by the operator's answer through the one outbound lifecycle.
      const deliver = Effect.fn("MessageService.deliver")(function*(input: OutboundDelivery) {
        const pending = pendingMessage(input, yield* newId, yield* now)
        yield* messages.insert(pending)
        // The send names its message, so a status settles it even if this answer never comes back.
        const operatorMessage = { ...input.operatorMessage, biz_opaque_callback_data: sendReferenceOf(pending.id) }
        const sent = yield* Effect.result(platform.sendMessage(input.credentials, input.to.replace(/^\+/, ""), operatorMessage))
        const settled = yield* settleOperatorAnswer(lifecycle, transactor, pending, sent)
        return settled.wire ?? toMessage(settled.record, [])
      })

      const mediaSend = makeMediaSend({ messages, transactor, attachments, platform, lifecycle })

      const { recordReceived, recordPending, markSent, markFailed } = makeMessageRecording({
        messages,
        outbox,
        transactor,
        conversations,
        attachments,
        wireOf,
        attachmentWires,
        messageEvent,
        lifecycle
      })

      return MessageService.of({
        storeHandler,
        statusHandler,
        send: Effect.fn("MessageService.send")(function*(tenantId, request) {
          const files = request.attachments ?? []
          const requested = request.message_type
          if (requested !== undefined && requested !== "text" && !isChatappSendMediaType(requested)) {
            return yield* InvalidRequest.single(
              ["body", "message_type"],
              `A chat-app conversation takes text, ${CHATAPP_SEND_MEDIA_TYPES.join(", ")}`,
              "not_supported"
            )
          }
          const media = files.length > 0 || (requested !== undefined && requested !== "text")
          const text = request.text ?? ""
          if (media) {
            if (requested === "text") {
              return yield* InvalidRequest.single(
                ["body", "message_type"],
                `A text message carries no files: name the files' type (${CHATAPP_SEND_MEDIA_TYPES.join(", ")}) or leave message_type out`,
                "not_supported"
              )
            }
            if (files.length === 0) {
              return yield* InvalidRequest.single(
                ["body", "attachments"],
                `A ${requested} message needs a file: attachment ids from the upload endpoints`,
                "missing"
              )
            }
            if (new Set(files).size > MAX_CHATAPP_FILES_PER_SEND) {
              return yield* InvalidRequest.single(
                ["body", "attachments"],
                `At most ${MAX_CHATAPP_FILES_PER_SEND} files per send, one chat-app message each`,
                "too_long"
              )
            }
          } else {
            if (text.trim() === "") return yield* InvalidRequest.single(["body", "text"], "Field required", "missing")
            if (text.length > MAX_TEXT_LENGTH) {
              return yield* InvalidRequest.single(["body", "text"], `At most ${MAX_TEXT_LENGTH} characters`, "string_too_long")
            }
          }
          const conversation = yield* Effect.catchTag(
            conversations.get(tenantId, request.conversation_id.toLowerCase()),
            "NotFound",
            () => Effect.fail(new NotFound({ message: `Conversation ${request.conversation_id} not found` }))
          )
          if (conversation.status === "closed") {
            return yield* InvalidRequest.single(["body", "conversation_id"], `Conversation ${conversation.id} is closed`, "conversation_closed")
          }
          const channel = yield* channels.get(tenantId, conversation.channel_id)
          const credentials = chatappCredentialsOf(channel)
          if (channel.status !== "active" || Option.isNone(credentials)) {
            return yield* ChannelUnavailable.of(channel.id)
          }
          const contact = yield* contacts.get(tenantId, conversation.contact_id)
          if (contact.phone === null) {
            return yield* InvalidRequest.single(["body", "conversation_id"], "The contact has no phone number", "contact_unreachable")
          }
          // Every file is checked against the operator's limits before any call; without a
          // message_type, the first file's type decides.
          const plan = media
            ? yield* mediaSend.plan(tenantId, files, requested !== undefined && isChatappSendMediaType(requested) ? requested : undefined, text)
            : null
          const at = yield* now
          const windowOpen = conversation.last_inbound_at !== null &&
            Date.parse(at) - Date.parse(conversation.last_inbound_at) < CUSTOMER_SERVICE_WINDOW_MS
          if (!windowOpen) {
            return yield* InvalidRequest.single(["body", "conversation_id"], WINDOW_CLOSED, "customer_service_window_closed")
          }
          if (plan !== null) {
            const sent = yield* mediaSend.send({ conversation, credentials: credentials.value, to: contact.phone, plan })
            return { ...sent[0]!, messages: sent }
          }
          return yield* deliver({
            conversation,
            credentials: credentials.value,
            to: contact.phone,
            messageType: "text",
            text,
            content: {},
            operatorMessage: { type: "text", text: { body: text, preview_url: false } }
          })
        }),
        deliver,
        recordReceived,
        recordPending,
        markSent,
        markFailed,
        outbound: lifecycle,
        job: makeUnansweredSendsJob({ messages, transactor, lifecycle }),
        get: Effect.fn("MessageService.get")(function*(tenantId, id) {
          const found = yield* messages.get(tenantId, id)
          if (Option.isNone(found)) return yield* notFound(id)
          return (yield* wireOf([found.value]))[0]!
        }),
        list: Effect.fn("MessageService.list")(function*(tenantId, conversationId, page) {
          yield* conversations.get(tenantId, conversationId)
          const { items, total } = yield* messages.listByConversation(tenantId, conversationId, toWindow(page))
          return { items: yield* wireOf(items), total }
        })
      })
    })
  )
}
