import { Effect, Layer, Option } from "effect"
import { sql } from "kysely"
import { type ConversationKind, type ConversationRecord, type ConversationStatus, ConversationStore } from "../../../src/ports/ConversationStore.ts"
import { KyselyConnection, query } from "../Connection.ts"
import type { ConversationsTable } from "../Database.ts"

const fromRow = (row: ConversationsTable): ConversationRecord => ({
  ...row,
  status: row.status as ConversationStatus,
  kind: row.kind as ConversationKind
})

/** The listing's order: the last message, else the creation (the expression `conversations_tenant_activity_idx` holds). */
const activity = sql<string>`coalesce(last_message_at, created_at)`

/** `ConversationStore` on Kysely. */
export const conversationStoreLayer: Layer.Layer<ConversationStore, never, KyselyConnection> = Layer.effect(
  ConversationStore,
  Effect.gen(function*() {
    const connection = yield* KyselyConnection
    return ConversationStore.of({
      insert: (conversation) =>
        query(connection, (db) => db.insertInto("conversations").values(conversation).execute()).pipe(Effect.asVoid),
      get: (tenantId, id) =>
        query(connection, (db) =>
          db.selectFrom("conversations").selectAll().where("tenant_id", "=", tenantId).where("id", "=", id)
            .executeTakeFirst())
          .pipe(Effect.map((row) => Option.map(Option.fromNullishOr(row), fromRow))),
      // With the literals `'open'` and `'chat'` of the partial unique index, so SQLite's planner reads it from there.
      findOpen: (tenantId, channelId, contactId) =>
        query(connection, (db) =>
          db.selectFrom("conversations").selectAll().where("tenant_id", "=", tenantId)
            .where("channel_id", "=", channelId).where("contact_id", "=", contactId)
            .where("status", "=", sql.lit("open")).where("kind", "=", sql.lit("chat"))
            .executeTakeFirst())
          .pipe(Effect.map((row) => Option.map(Option.fromNullishOr(row), fromRow))),
      list: (tenantId, filter, window) =>
        query(connection, async (db) => {
          let base = db.selectFrom("conversations").where("tenant_id", "=", tenantId)
          if (filter.channel_id !== undefined) base = base.where("channel_id", "=", filter.channel_id)
          if (filter.contact_id !== undefined) base = base.where("contact_id", "=", filter.contact_id)
          if (filter.status !== undefined) base = base.where("status", "=", filter.status)
          const items = await base.selectAll().orderBy(activity, "desc").orderBy("id", "desc")
            .limit(window.limit).offset(window.offset).execute()
          const count = await base.select((eb) => eb.fn.countAll().as("n")).executeTakeFirstOrThrow()
          return { items: items.map(fromRow), total: Number(count.n) }
        }),
      update: (tenantId, conversation) => {
        const { id: _id, tenant_id: _tenant, created_at: _created, ...changes } = conversation
        return query(connection, (db) =>
          db.updateTable("conversations").set(changes).where("tenant_id", "=", tenantId).where("id", "=", conversation.id)
            .executeTakeFirst())
          .pipe(Effect.map((result) => Number(result.numUpdatedRows) > 0))
      }
    })
  })
)
