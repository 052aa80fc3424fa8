import { Schema } from "effect"
import { AttachmentIdString, UuidId, UuidString } from "../kernel/Id.ts"
import { PaginationInfo } from "../kernel/Pagination.ts"
import type { TeamChatChannelActivity, TeamChatChannelWithMembers } from "../ports/TeamChatStore.ts"
import { SummaryFields } from "../summaries/SummaryService.ts"
import { offersSummaries } from "./TeamChatRules.ts"

/** Most members a channel is created with (the creator aside). */
export const MAX_CHANNEL_MEMBERS = 200
/** Most other tenants a channel is shared with. */
export const MAX_SHARED_TENANTS = 20
/** Most other participants of a direct message. */
export const MAX_DM_PARTICIPANTS = 8
/** Most files one message carries. */
export const MAX_MESSAGE_ATTACHMENTS = 10
/** Longest message text, in characters. */
export const MAX_TEXT_LENGTH = 4000

/** Body of `POST /team-chat/channels`. */
export const CreateChannelRequest = Schema.Struct({
  name: Schema.String.check(
    Schema.isMinLength(1),
    Schema.isMaxLength(80),
    Schema.isPattern(/\S/, { message: "Must not be blank" })
  ),
  /** Users of this workspace or of one the channel is shared with; the creator is a member anyway. */
  member_user_ids: Schema.Array(UuidString).check(Schema.isMaxLength(MAX_CHANNEL_MEMBERS)),
  /** Other workspaces the creator belongs to that see the channel too; a shared channel never offers summaries. */
  shared_with_tenant_ids: Schema.optionalKey(Schema.Array(UuidString).check(Schema.isMaxLength(MAX_SHARED_TENANTS))),
  /** A channel with external guests never offers summaries. */
  has_external_guests: Schema.optionalKey(Schema.Boolean)
})
/** Body of `POST /team-chat/channels`. */
export type CreateChannelRequest = typeof CreateChannelRequest.Type
export declare namespace CreateChannelRequest {}

/** Body of `POST /team-chat/direct-messages`: the other participants (the caller is one anyway). */
export const DirectMessageRequest = Schema.Struct({
  user_ids: Schema.Array(UuidString).check(Schema.isMinLength(1), Schema.isMaxLength(MAX_DM_PARTICIPANTS))
})
/** Body of `POST /team-chat/direct-messages`. */
export type DirectMessageRequest = typeof DirectMessageRequest.Type
export declare namespace DirectMessageRequest {}

/** Body of `POST /team-chat/channels/{id}/messages`. */
export const PostMessageRequest = Schema.Struct({
  text: Schema.String.check(Schema.isMaxLength(MAX_TEXT_LENGTH)),
  /** Files uploaded before with `POST /attachments/upload` (or from-url), in this workspace. */
  attachment_ids: Schema.optionalKey(Schema.Array(AttachmentIdString).check(Schema.isMaxLength(MAX_MESSAGE_ATTACHMENTS))),
  /** A top-level message of the same channel: the new message is a reply in its thread. */
  parent_message_id: Schema.optionalKey(Schema.NullOr(UuidString))
})
/** Body of `POST /team-chat/channels/{id}/messages`. */
export type PostMessageRequest = typeof PostMessageRequest.Type
export declare namespace PostMessageRequest {}

/** A channel or direct message as the API returns it. */
export const TeamChatChannel = Schema.Struct({
  id: UuidId,
  tenant_id: UuidId,
  kind: Schema.Literals(["channel", "dm"]),
  /** Null for a direct message. */
  name: Schema.NullOr(Schema.String),
  member_user_ids: Schema.Array(UuidId),
  shared_with_tenant_ids: Schema.Array(UuidId),
  has_external_guests: Schema.Boolean,
  /** False in channels shared across workspaces or with external guests. */
  ai_summaries_offered: Schema.Boolean,
  created_by: UuidId,
  created_at: Schema.String
})
/** A channel or direct message as the API returns it. */
export type TeamChatChannel = typeof TeamChatChannel.Type
export declare namespace TeamChatChannel {}

/** A channel or direct message in the caller's list: the channel, and when something last happened in it. */
export const TeamChatChannelListItem = Schema.Struct({
  ...TeamChatChannel.fields,
  /** When its newest message or thread reply was posted; its own `created_at` before any. */
  last_activity_at: Schema.String
})
/** A channel or direct message in the caller's list. */
export type TeamChatChannelListItem = typeof TeamChatChannelListItem.Type
export declare namespace TeamChatChannelListItem {}

/** One page of the caller's channels and direct messages, newest activity first. */
export const TeamChatChannelList = Schema.Struct({
  items: Schema.Array(TeamChatChannelListItem),
  pagination: PaginationInfo
})

/** A file of a team chat message, with the three summary fields as the caller sees them. */
export const TeamChatAttachment = Schema.Struct({
  id: UuidId,
  filename: Schema.String,
  content_type: Schema.String,
  file_size: Schema.Int,
  /** A signed download link that expires. */
  url: Schema.String,
  ...SummaryFields
})
/** A file of a team chat message. */
export type TeamChatAttachment = typeof TeamChatAttachment.Type
export declare namespace TeamChatAttachment {}

/** A message or thread reply as the API returns it. */
export const TeamChatMessage = Schema.Struct({
  id: UuidId,
  channel_id: UuidId,
  /** The workspace its author acted in. */
  tenant_id: UuidId,
  author_user_id: UuidId,
  text: Schema.String,
  /** The top-level message this replies to; null for a top-level message. */
  parent_message_id: Schema.NullOr(UuidId),
  attachments: Schema.Array(TeamChatAttachment),
  created_at: Schema.String
})
/** A message or thread reply as the API returns it. */
export type TeamChatMessage = typeof TeamChatMessage.Type
export declare namespace TeamChatMessage {}

/** One page of a channel's messages and replies, oldest first. */
export const TeamChatMessageList = Schema.Struct({
  items: Schema.Array(TeamChatMessage),
  pagination: PaginationInfo
})

/** The API's form of a stored channel. */
export const toChannel = ({ channel, members }: TeamChatChannelWithMembers): TeamChatChannel => ({
  id: channel.id,
  tenant_id: channel.tenant_id,
  kind: channel.kind,
  name: channel.name,
  member_user_ids: members.map((m) => m.user_id),
  shared_with_tenant_ids: [...channel.shared_with_tenant_ids],
  has_external_guests: channel.has_external_guests,
  ai_summaries_offered: offersSummaries(channel),
  created_by: channel.created_by,
  created_at: channel.created_at
})

/** The API's form of a channel in its members' list. */
export const toChannelListItem = (found: TeamChatChannelActivity): TeamChatChannelListItem => ({
  ...toChannel(found),
  last_activity_at: found.last_activity_at
})
