import type { Flag } from "./Flag.ts"

/**
 * The tables of team chat, as stored (see `Database.ts` for the rules every table follows, and
 * migration 0015 for their indexes).
 */

/** A channel or a direct message, made in `tenant_id`. */
export interface TeamChatChannelsTable {
  id: string
  tenant_id: string
  /** `channel` or `dm`. */
  kind: string
  /** Null for a direct message. */
  name: string | null
  has_external_guests: Flag
  /** A direct message's participants, sorted and comma-joined; null for a channel. */
  dm_key: string | null
  created_by: string
  created_at: string
}

/** A tenant that sees a channel: its own, and each it is shared with. */
export interface TeamChatChannelTenantsTable {
  channel_id: string
  tenant_id: string
}

/** A member of a channel or participant of a direct message, admitted through `tenant_id`. */
export interface TeamChatMembersTable {
  channel_id: string
  user_id: string
  tenant_id: string
  joined_at: string
}

/** A message or thread reply. PostgreSQL also keeps the insertion order in `seq`. */
export interface TeamChatMessagesTable {
  id: string
  /** The tenant its author acted in (where its files live). */
  tenant_id: string
  channel_id: string
  author_user_id: string
  text: string
  parent_message_id: string | null
  created_at: string
}

/** A file a message carries, at `position` among them; `tenant_id` is the file's. */
export interface TeamChatMessageAttachmentsTable {
  message_id: string
  attachment_id: string
  tenant_id: string
  position: number
}
