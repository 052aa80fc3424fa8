import { Effect } from "effect"
import type { AttachmentService } from "../attachments/AttachmentService.ts"
import type { ConversationService } from "../conversations/ConversationService.ts"
import type { EventEnvelope } from "../kernel/EventEnvelope.ts"
import { newId } from "../kernel/Id.ts"
import type { StorageError } from "../kernel/StorageError.ts"
import { now } from "../kernel/Timestamp.ts"
import type { AttachmentRecord } from "../ports/AttachmentStore.ts"
import type { ConversationRecord } from "../ports/ConversationStore.ts"
import type { MessageError, MessageRecord, MessageStore } from "../ports/MessageStore.ts"
import type { OutboxStore } from "../ports/OutboxStore.ts"
import type { Transactor } from "../ports/Transactor.ts"
import { type Message, type MessageAttachmentWire, toMessage } from "./Message.ts"
import type { PreparedAttachment } from "../attachments/AttachmentService.ts"
import type { OutboundLifecycle } from "./OutboundLifecycle.ts"

/** A message another area received (an email), with its files prepared in the blob store. */
export interface ReceivedMessage {
  readonly conversation: ConversationRecord
  readonly messageType: string
  readonly text: string | null
  readonly content: Readonly<Record<string, unknown>>
  readonly files: ReadonlyArray<PreparedAttachment>
}

/** A message another area is about to hand to its own transport (an email), with stored attachments it carries. */
export interface OutgoingMessage {
  readonly conversation: ConversationRecord
  readonly messageType: string
  readonly text: string | null
  readonly content: Readonly<Record<string, unknown>>
  readonly attachmentIds: ReadonlyArray<string>
}

/** What recording other areas' messages needs. */
export interface MessageRecordingDeps {
  readonly messages: MessageStore["Service"]
  readonly outbox: OutboxStore["Service"]
  readonly transactor: Transactor["Service"]
  readonly conversations: ConversationService["Service"]
  readonly attachments: AttachmentService["Service"]
  readonly wireOf: (records: ReadonlyArray<MessageRecord>) => Effect.Effect<ReadonlyArray<Message>, StorageError>
  /** The wire forms of a message's files, their summary fields filled. */
  readonly attachmentWires: (files: ReadonlyArray<AttachmentRecord>) => Effect.Effect<ReadonlyArray<MessageAttachmentWire>, StorageError>
  readonly messageEvent: (type: "message.received" | "message.sent", message: Message) => Effect.Effect<EventEnvelope>
  /** Outbound messages are settled by the one lifecycle every transport shares. */
  readonly lifecycle: OutboundLifecycle
}

/**
 * Messages other areas carry by their own transport (email): received ones stored with their files,
 * outbound ones stored `pending` before the transport is asked, then `sent` or `failed`.
 */
export const makeMessageRecording = (deps: MessageRecordingDeps) => {
  const { messages, outbox, transactor, conversations, attachments, wireOf, attachmentWires, messageEvent, lifecycle } = deps

  const blank = (input: {
    readonly conversation: ConversationRecord
    readonly messageType: string
    readonly text: string | null
    readonly content: Readonly<Record<string, unknown>>
  }) =>
    Effect.gen(function*() {
      const { conversation } = input
      return {
        id: yield* newId,
        tenant_id: conversation.tenant_id,
        conversation_id: conversation.id,
        channel_id: conversation.channel_id,
        contact_id: conversation.contact_id,
        message_type: input.messageType,
        text: input.text,
        content: input.content,
        external_id: null,
        error: null,
        created_at: yield* now,
        updated_at: null,
        sent_at: null,
        delivered_at: null,
        read_at: null,
        failed_at: null
      }
    })

  const recordReceived = Effect.fn("MessageService.recordReceived")(function*(input: ReceivedMessage) {
    const message: MessageRecord = { ...(yield* blank(input)), direction: "inbound", status: "received" }
    yield* messages.insert(message)
    const files = yield* Effect.forEach(input.files, (file) =>
      attachments.record(file, { messageId: message.id, conversationId: input.conversation.id }))
    yield* conversations.noteMessage(input.conversation, { at: message.created_at, inbound: true })
    const wire = toMessage(message, yield* attachmentWires(files))
    yield* outbox.append([yield* messageEvent("message.received", wire)])
    return { message, files }
  })

  const recordPending = Effect.fn("MessageService.recordPending")(function*(input: OutgoingMessage) {
    const message: MessageRecord = { ...(yield* blank(input)), direction: "outbound", status: "pending" }
    yield* transactor.withTransaction(Effect.gen(function*() {
      yield* messages.insert(message)
      yield* attachments.carry(message.tenant_id, input.attachmentIds, message.id, message.conversation_id)
    }))
    return message
  })

  const markSent = Effect.fn("MessageService.markSent")(function*(message: MessageRecord, externalId: string | null) {
    const at = yield* now
    const [settled] = yield* transactor.withTransaction(lifecycle.settle(message.tenant_id, [{ _tag: "sent", message, externalId, at }]))
    return settled!.wire ?? (yield* wireOf([settled!.record]))[0]!
  })

  const markFailed = Effect.fn("MessageService.markFailed")(function*(message: MessageRecord, error: MessageError) {
    const at = yield* now
    const [settled] = yield* lifecycle.settle(message.tenant_id, [{ _tag: "failed", message, error, at }])
    return settled!.record
  })

  return { recordReceived, recordPending, markSent, markFailed }
}
