import { Context, type Effect, type Option } from "effect"
import type { StorageError } from "./StorageError.ts"

/** A channel with members, or a direct message between participants. */
export type TeamChatKind = "channel" | "dm"

/**
 * A team chat channel or direct message, made in `tenant_id` by `created_by`. A channel shared with
 * other tenants is seen from each of them too; a direct message is never shared.
 */
export interface TeamChatChannelRecord {
  readonly id: string
  readonly tenant_id: string
  readonly kind: TeamChatKind
  /** Null for a direct message. */
  readonly name: string | null
  /** The other tenants that see the channel, sorted; empty when it is not shared. */
  readonly shared_with_tenant_ids: ReadonlyArray<string>
  readonly has_external_guests: boolean
  /** A direct message's participants' ids, sorted and comma-joined (unique per tenant); null for a channel. */
  readonly dm_key: string | null
  readonly created_by: string
  readonly created_at: string
}

/** A member of a channel (or participant of a direct message), admitted through `tenant_id`. */
export interface TeamChatMemberRecord {
  readonly channel_id: string
  readonly user_id: string
  readonly tenant_id: string
  readonly joined_at: string
}

/** A channel with its members, in the order they joined (ties by user id). */
export interface TeamChatChannelWithMembers {
  readonly channel: TeamChatChannelRecord
  readonly members: ReadonlyArray<TeamChatMemberRecord>
}

/** A channel as its members' list shows it: with its members, and when something last happened in it. */
export interface TeamChatChannelActivity extends TeamChatChannelWithMembers {
  /** The `created_at` of its newest message or thread reply; the channel's own before any. */
  readonly last_activity_at: string
}

/**
 * A message, or a thread reply (`parent_message_id` names its top-level message). `tenant_id` is
 * the tenant its author acted in, where its files (`attachment_ids`, in the order given) live.
 */
export interface TeamChatMessageRecord {
  readonly id: string
  readonly tenant_id: string
  readonly channel_id: string
  readonly author_user_id: string
  readonly text: string
  readonly parent_message_id: string | null
  readonly attachment_ids: ReadonlyArray<string>
  readonly created_at: string
}

/** A user who belongs to a tenant. */
export interface TenantUser {
  readonly tenant_id: string
  readonly user_id: string
}

/**
 * Team chat: channels, their members and messages. Every read names the caller's tenant and finds
 * only what that tenant sees: channels made in it or shared with it, and their messages.
 */
export class TeamChatStore extends Context.Service<TeamChatStore, {
  /**
   * Stores a channel, the tenants that see it (its own and `shared_with_tenant_ids`) and its members,
   * as one unit. A direct message whose `dm_key` the tenant holds already fails with `UniqueViolation`
   * on `team_chat_channels_tenant_dm_unique`.
   */
  readonly insertChannel: (
    channel: TeamChatChannelRecord,
    members: ReadonlyArray<TeamChatMemberRecord>
  ) => Effect.Effect<void, StorageError>
  /** The tenant's direct message with exactly these participants (`dm_key`). */
  readonly findDirectMessage: (
    tenantId: string,
    dmKey: string
  ) => Effect.Effect<Option.Option<TeamChatChannelRecord>, StorageError>
  /** The channel with its members, when `tenantId` sees it. */
  readonly getChannel: (
    tenantId: string,
    channelId: string
  ) => Effect.Effect<Option.Option<TeamChatChannelWithMembers>, StorageError>
  /**
   * A page of the channels and direct messages `tenantId` sees that `userId` is a member of, newest
   * activity first (ties: the newer channel first, then by id, descending), and how many there are.
   */
  readonly listMemberChannels: (
    tenantId: string,
    userId: string,
    window: { readonly limit: number; readonly offset: number }
  ) => Effect.Effect<{ readonly items: ReadonlyArray<TeamChatChannelActivity>; readonly total: number }, StorageError>
  /**
   * Stores a message and its files as one unit. A file already posted in team chat fails with
   * `UniqueViolation` on `team_chat_message_attachments_attachment_unique`.
   */
  readonly insertMessage: (message: TeamChatMessageRecord) => Effect.Effect<void, StorageError>
  /** The message, when `tenantId` sees its channel. */
  readonly getMessage: (
    tenantId: string,
    messageId: string
  ) => Effect.Effect<Option.Option<TeamChatMessageRecord>, StorageError>
  /**
   * A page of the channel's messages and replies together, in the order they were stored, and how
   * many there are; nothing when `tenantId` does not see the channel.
   */
  readonly listMessages: (
    tenantId: string,
    channelId: string,
    window: { readonly limit: number; readonly offset: number }
  ) => Effect.Effect<{ readonly items: ReadonlyArray<TeamChatMessageRecord>; readonly total: number }, StorageError>
  /** Which of these files of the tenant a team chat message carries already. */
  readonly postedAttachmentIds: (
    tenantId: string,
    attachmentIds: ReadonlyArray<string>
  ) => Effect.Effect<ReadonlyArray<string>, StorageError>
  /**
   * Which of `userIds` belong to which of the active `tenantIds` at `at`: a user belongs to a tenant
   * when they own its billing account or hold an API key bound to them in it that is neither revoked
   * nor expired. Pairs in no particular order.
   */
  readonly tenantUsers: (
    tenantIds: ReadonlyArray<string>,
    userIds: ReadonlyArray<string>,
    at: string
  ) => Effect.Effect<ReadonlyArray<TenantUser>, StorageError>
}>()("omnichannel-core/ports/TeamChatStore") {}
