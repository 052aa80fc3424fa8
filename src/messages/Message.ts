import { Schema } from "effect"
import { AttachmentIdString, UuidId } from "../kernel/Id.ts"
import { PaginationInfo } from "../kernel/Pagination.ts"
import { MessageAttachment } from "../attachments/AttachmentService.ts"
import { SummaryFields } from "../summaries/SummaryService.ts"
import type { MessageRecord } from "../ports/MessageStore.ts"

/** A file of a message with its summary fields (spec: "Message attachment"). */
export const MessageAttachmentWire = Schema.Struct({ ...MessageAttachment.fields, ...SummaryFields })
/** A file of a message with its summary fields. */
export type MessageAttachmentWire = typeof MessageAttachmentWire.Type

/** A message as the API (and its events) return it. */
export const Message = Schema.Struct({
  id: UuidId,
  tenant_id: UuidId,
  conversation_id: UuidId,
  channel_id: UuidId,
  contact_id: Schema.NullOr(UuidId),
  direction: Schema.Literals(["inbound", "outbound"]),
  message_type: Schema.String,
  text: Schema.NullOr(Schema.String),
  status: Schema.Literals(["received", "pending", "sent", "delivered", "read", "failed"]),
  /** The operator's message id (`wamid.…`). */
  external_id: Schema.NullOr(Schema.String),
  content: Schema.Record(Schema.String, Schema.Unknown),
  error: Schema.NullOr(Schema.Struct({
    code: Schema.NullOr(Schema.Number),
    title: Schema.NullOr(Schema.String),
    message: Schema.String,
    details: Schema.NullOr(Schema.String)
  })),
  attachments: Schema.Array(MessageAttachmentWire),
  created_at: Schema.String,
  updated_at: Schema.NullOr(Schema.String),
  sent_at: Schema.NullOr(Schema.String),
  delivered_at: Schema.NullOr(Schema.String),
  read_at: Schema.NullOr(Schema.String),
  failed_at: Schema.NullOr(Schema.String)
})
/** A message as the API returns it. */
export type Message = typeof Message.Type

/** Response of `GET /messages`. */
export const MessageList = Schema.Struct({ items: Schema.Array(Message), pagination: PaginationInfo })

/**
 * Response of `POST /messages`: the message (a chat-app file send: its first file's); a chat-app
 * file send adds `messages`, every message it made (one per file, the first included), in order.
 */
export const SendMessageResponse = Schema.Struct({ ...Message.fields, messages: Schema.optionalKey(Schema.Array(Message)) })
/** Response of `POST /messages`. */
export type SendMessageResponse = typeof SendMessageResponse.Type

/**
 * Body of `POST /messages`: chat-app text or files (`message_type` image, document, audio, video or
 * sticker, one message per file), or an email's plain text, subject and files, in an open conversation.
 */
export const SendMessageRequest = Schema.Struct({
  conversation_id: Schema.String,
  text: Schema.optionalKey(Schema.String),
  message_type: Schema.optionalKey(Schema.String),
  subject: Schema.optionalKey(Schema.String.check(
    Schema.isMaxLength(998),
    Schema.isPattern(/^[^\r\n\0]*$/, { message: "Must not contain line breaks" })
  )),
  /** Attachment ids from the upload endpoints; a raw URL is refused (fetch it with from-url first). */
  attachments: Schema.optionalKey(Schema.Array(AttachmentIdString))
})
/** Body of `POST /messages`. */
export type SendMessageRequest = typeof SendMessageRequest.Type

/** The wire form of a stored message with its attachments' wire forms. */
export const toMessage = (record: MessageRecord, attachments: ReadonlyArray<MessageAttachmentWire>): Message => ({
  id: record.id,
  tenant_id: record.tenant_id,
  conversation_id: record.conversation_id,
  channel_id: record.channel_id,
  contact_id: record.contact_id,
  direction: record.direction,
  message_type: record.message_type,
  text: record.text,
  status: record.status,
  external_id: record.external_id,
  content: record.content,
  error: record.error,
  attachments: [...attachments],
  created_at: record.created_at,
  updated_at: record.updated_at,
  sent_at: record.sent_at,
  delivered_at: record.delivered_at,
  read_at: record.read_at,
  failed_at: record.failed_at
})
