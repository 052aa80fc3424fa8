import { Effect, Layer, Option } from "effect"
import {
  type TeamChatChannelActivity,
  type TeamChatChannelRecord,
  type TeamChatMemberRecord,
  type TeamChatMessageRecord,
  TeamChatStore,
  type TenantUser
} from "../../../src/ports/TeamChatStore.ts"
import { atomically, insertionOrder, KyselyConnection, query } from "../Connection.ts"
import type { Db, TeamChatChannelsTable, TeamChatMessagesTable } from "../Database.ts"
import { fromFlag, toFlag } from "./Rows.ts"

// `seq` (PostgreSQL's insertion order) is a storage detail, not part of the record.
type MessageRow = TeamChatMessagesTable & { readonly seq?: unknown }

const channelFromRow = (row: TeamChatChannelsTable, shared: ReadonlyArray<string>): TeamChatChannelRecord => ({
  ...row,
  kind: row.kind === "dm" ? "dm" : "channel",
  has_external_guests: fromFlag(row.has_external_guests),
  shared_with_tenant_ids: shared
})

const messageFromRow = ({ seq: _seq, ...row }: MessageRow, attachmentIds: ReadonlyArray<string>): TeamChatMessageRecord => ({
  ...row,
  attachment_ids: attachmentIds
})

// A channel row as `tenantId` sees it: only if the channel is its own or shared with it.
const visibleChannel = (db: Db, tenantId: string, channelId: string) =>
  db.selectFrom("team_chat_channels").selectAll("team_chat_channels")
    .innerJoin("team_chat_channel_tenants as seen", "seen.channel_id", "team_chat_channels.id")
    .where("seen.tenant_id", "=", tenantId).where("team_chat_channels.id", "=", channelId)
    .executeTakeFirst()

// The other tenants a channel is shared with, sorted.
const sharedWith = async (db: Db, channel: TeamChatChannelsTable): Promise<ReadonlyArray<string>> =>
  channel.kind === "dm" ? [] : (await db.selectFrom("team_chat_channel_tenants").select("tenant_id")
    .where("channel_id", "=", channel.id).where("tenant_id", "<>", channel.tenant_id).orderBy("tenant_id").execute())
    .map((row) => row.tenant_id)

// The files of these messages, each message's in the order given.
const attachmentsOf = async (db: Db, messageIds: ReadonlyArray<string>): Promise<ReadonlyMap<string, Array<string>>> => {
  const byMessage = new Map<string, Array<string>>(messageIds.map((id) => [id, []]))
  if (messageIds.length === 0) return byMessage
  const rows = await db.selectFrom("team_chat_message_attachments").select(["message_id", "attachment_id"])
    .where("message_id", "in", [...messageIds]).orderBy("message_id").orderBy("position").execute()
  for (const row of rows) byMessage.get(row.message_id)?.push(row.attachment_id)
  return byMessage
}

// The members of these channels, each channel's in the order they joined (ties by user id).
const membersOf = async (db: Db, channelIds: ReadonlyArray<string>): Promise<ReadonlyMap<string, Array<TeamChatMemberRecord>>> => {
  const byChannel = new Map<string, Array<TeamChatMemberRecord>>(channelIds.map((id) => [id, []]))
  if (channelIds.length === 0) return byChannel
  const rows = await db.selectFrom("team_chat_members").selectAll().where("channel_id", "in", [...channelIds])
    .orderBy("channel_id").orderBy("joined_at").orderBy("user_id").execute()
  for (const row of rows) byChannel.get(row.channel_id)?.push(row)
  return byChannel
}

// The tenants these channels are seen from, each channel's sorted (its own among them).
const seenFrom = async (db: Db, channelIds: ReadonlyArray<string>): Promise<ReadonlyMap<string, Array<string>>> => {
  const byChannel = new Map<string, Array<string>>(channelIds.map((id) => [id, []]))
  if (channelIds.length === 0) return byChannel
  const rows = await db.selectFrom("team_chat_channel_tenants").select(["channel_id", "tenant_id"])
    .where("channel_id", "in", [...channelIds]).orderBy("channel_id").orderBy("tenant_id").execute()
  for (const row of rows) byChannel.get(row.channel_id)?.push(row.tenant_id)
  return byChannel
}

const withAttachments = async (db: Db, rows: ReadonlyArray<MessageRow>): Promise<Array<TeamChatMessageRecord>> => {
  const files = await attachmentsOf(db, rows.map((row) => row.id))
  return rows.map((row) => messageFromRow(row, files.get(row.id) ?? []))
}

/** `TeamChatStore` on Kysely. */
export const teamChatStoreLayer: Layer.Layer<TeamChatStore, never, KyselyConnection> = Layer.effect(
  TeamChatStore,
  Effect.gen(function*() {
    const connection = yield* KyselyConnection
    return TeamChatStore.of({
      insertChannel: (channel, members: ReadonlyArray<TeamChatMemberRecord>) =>
        atomically(connection, async (db) => {
          const { shared_with_tenant_ids: shared, has_external_guests: guests, ...row } = channel
          await db.insertInto("team_chat_channels").values({ ...row, has_external_guests: toFlag(guests) }).execute()
          const tenants = [...new Set([channel.tenant_id, ...shared])]
          await db.insertInto("team_chat_channel_tenants")
            .values(tenants.map((tenantId) => ({ channel_id: channel.id, tenant_id: tenantId }))).execute()
          if (members.length > 0) await db.insertInto("team_chat_members").values(members.map((m) => ({ ...m }))).execute()
        }),
      findDirectMessage: (tenantId, dmKey) =>
        query(connection, async (db) => {
          const row = await db.selectFrom("team_chat_channels").selectAll().where("tenant_id", "=", tenantId)
            .where("kind", "=", "dm").where("dm_key", "=", dmKey).executeTakeFirst()
          return row === undefined ? Option.none() : Option.some(channelFromRow(row, []))
        }),
      getChannel: (tenantId, channelId) =>
        query(connection, async (db) => {
          const row = await visibleChannel(db, tenantId, channelId)
          if (row === undefined) return Option.none()
          const members = await db.selectFrom("team_chat_members").selectAll().where("channel_id", "=", channelId)
            .orderBy("joined_at").orderBy("user_id").execute()
          return Option.some({ channel: channelFromRow(row, await sharedWith(db, row)), members })
        }),
      listMemberChannels: (tenantId, userId, window) =>
        query(connection, async (db) => {
          // From the tenant's channels (`team_chat_channel_tenants_tenant_idx`), those the user is a member
          // of (the members' primary key); each one's newest message through `team_chat_messages_channel_created_idx`.
          const mine = db.selectFrom("team_chat_channel_tenants as seen")
            .innerJoin("team_chat_members as member", (join) =>
              join.onRef("member.channel_id", "=", "seen.channel_id").on("member.user_id", "=", userId))
            .innerJoin("team_chat_channels as channel", "channel.id", "seen.channel_id")
            .where("seen.tenant_id", "=", tenantId)
          const rows = await mine.selectAll("channel")
            .select((eb) =>
              eb.fn.coalesce(
                eb.selectFrom("team_chat_messages as message").select((m) => m.fn.max("message.created_at").as("newest"))
                  .whereRef("message.channel_id", "=", "channel.id"),
                eb.ref("channel.created_at")
              ).as("last_activity_at")
            )
            .orderBy("last_activity_at", "desc").orderBy("channel.created_at", "desc").orderBy("channel.id", "desc")
            .limit(window.limit).offset(window.offset).execute()
          const count = await mine.select((eb) => eb.fn.countAll().as("n")).executeTakeFirstOrThrow()
          const ids = rows.map((row) => row.id)
          const [members, tenants] = [await membersOf(db, ids), await seenFrom(db, ids)]
          const items = rows.map(({ last_activity_at: lastActivityAt, ...row }): TeamChatChannelActivity => ({
            channel: channelFromRow(row, row.kind === "dm" ? [] : (tenants.get(row.id) ?? []).filter((id) => id !== row.tenant_id)),
            members: members.get(row.id) ?? [],
            last_activity_at: String(lastActivityAt)
          }))
          return { items, total: Number(count.n) }
        }),
      insertMessage: (message) =>
        atomically(connection, async (db) => {
          const { attachment_ids: attachmentIds, ...row } = message
          await db.insertInto("team_chat_messages").values(row).execute()
          if (attachmentIds.length === 0) return
          await db.insertInto("team_chat_message_attachments").values(attachmentIds.map((attachmentId, position) => ({
            message_id: message.id,
            attachment_id: attachmentId,
            tenant_id: message.tenant_id,
            position
          }))).execute()
        }),
      getMessage: (tenantId, messageId) =>
        query(connection, async (db) => {
          const row = await db.selectFrom("team_chat_messages").selectAll("team_chat_messages")
            .innerJoin("team_chat_channel_tenants as seen", "seen.channel_id", "team_chat_messages.channel_id")
            .where("seen.tenant_id", "=", tenantId).where("team_chat_messages.id", "=", messageId)
            .executeTakeFirst()
          if (row === undefined) return Option.none()
          const [message] = await withAttachments(db, [row])
          return Option.fromNullishOr(message)
        }),
      listMessages: (tenantId, channelId, window) =>
        query(connection, async (db) => {
          if ((await visibleChannel(db, tenantId, channelId)) === undefined) return { items: [], total: 0 }
          const base = db.selectFrom("team_chat_messages").where("channel_id", "=", channelId)
          const rows = await base.selectAll().orderBy("created_at").orderBy(insertionOrder(connection.dialect))
            .limit(window.limit).offset(window.offset).execute()
          const count = await base.select((eb) => eb.fn.countAll().as("n")).executeTakeFirstOrThrow()
          return { items: await withAttachments(db, rows), total: Number(count.n) }
        }),
      postedAttachmentIds: (tenantId, attachmentIds) =>
        attachmentIds.length === 0 ? Effect.succeed([]) : query(connection, (db) =>
          db.selectFrom("team_chat_message_attachments").select("attachment_id").where("tenant_id", "=", tenantId)
            .where("attachment_id", "in", [...attachmentIds]).execute())
          .pipe(Effect.map((rows) => rows.map((row) => row.attachment_id))),
      tenantUsers: (tenantIds, userIds, at) =>
        tenantIds.length === 0 || userIds.length === 0 ? Effect.succeed([]) : query(connection, async (db) => {
          const owners = db.selectFrom("tenants")
            .innerJoin("billing_accounts", "billing_accounts.id", "tenants.billing_account_id")
            .select(["tenants.id as tenant_id", "billing_accounts.owner_user_id as user_id"])
            .where("tenants.id", "in", [...tenantIds]).where("tenants.is_active", "=", 1)
            .where("billing_accounts.owner_user_id", "in", [...userIds])
          const keyHolders = db.selectFrom("api_keys")
            .innerJoin("tenants", "tenants.id", "api_keys.tenant_id")
            .select(["api_keys.tenant_id as tenant_id", "api_keys.user_id as user_id"])
            .where("api_keys.tenant_id", "in", [...tenantIds]).where("tenants.is_active", "=", 1)
            .where("api_keys.user_id", "in", [...userIds]).where("api_keys.revoked_at", "is", null)
            .where((eb) => eb.or([eb("api_keys.expires_at", "is", null), eb("api_keys.expires_at", ">", at)]))
            // `user_id in (…)` keeps no null.
            .$narrowType<{ user_id: string }>()
          const rows: ReadonlyArray<TenantUser> = await owners.union(keyHolders).execute()
          return rows
        })
    })
  })
)
