import { Schema } from "effect"
import { UuidId } from "../kernel/Id.ts"
import { PaginationInfo } from "../kernel/Pagination.ts"
import type { ConversationRecord } from "../ports/ConversationStore.ts"

/** A conversation as the API returns it: a contact on a channel. */
export const Conversation = Schema.Struct({
  id: UuidId,
  tenant_id: UuidId,
  channel_id: UuidId,
  contact_id: UuidId,
  /** `chat`: one open per contact and channel; `email`: a thread of a mailbox (`channel_id` is the email integration's id). */
  kind: Schema.Literals(["chat", "email"]),
  status: Schema.Literals(["open", "closed"]),
  subject: Schema.NullOr(Schema.String),
  created_at: Schema.String,
  updated_at: Schema.NullOr(Schema.String),
  closed_at: Schema.NullOr(Schema.String),
  last_message_at: Schema.NullOr(Schema.String),
  last_inbound_at: Schema.NullOr(Schema.String)
})
/** A conversation as the API returns it. */
export type Conversation = typeof Conversation.Type

/** Response of `GET /conversations`. */
export const ConversationList = Schema.Struct({ items: Schema.Array(Conversation), pagination: PaginationInfo })

/** The wire form of a stored conversation. */
export const toConversation = (record: ConversationRecord): Conversation => ({
  id: record.id,
  tenant_id: record.tenant_id,
  channel_id: record.channel_id,
  contact_id: record.contact_id,
  kind: record.kind,
  status: record.status,
  subject: record.subject,
  created_at: record.created_at,
  updated_at: record.updated_at,
  closed_at: record.closed_at,
  last_message_at: record.last_message_at,
  last_inbound_at: record.last_inbound_at
})
