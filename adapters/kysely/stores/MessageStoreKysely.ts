import { Effect, Layer, Option } from "effect"
import { sql } from "kysely"
import {
  type MessageDirection,
  type MessageError,
  type MessageRecord,
  type MessageStatus,
  type MessageStatusReport,
  MessageStore
} from "../../../src/ports/MessageStore.ts"
import { insertionOrder, KyselyConnection, query } from "../Connection.ts"
import type { MessagesTable, MessageStatusesTable } from "../Database.ts"

const errorFromText = (text: string | null): MessageError | null => (text === null ? null : JSON.parse(text) as MessageError)

const errorToText = (error: MessageError | null): string | null => (error === null ? null : JSON.stringify(error))

// `seq` (PostgreSQL's insertion order) is a storage detail, not part of the record.
const fromRow = ({ seq: _seq, ...row }: MessagesTable & { readonly seq?: unknown }): MessageRecord => ({
  ...row,
  direction: row.direction as MessageDirection,
  status: row.status as MessageStatus,
  content: JSON.parse(row.content) as Record<string, unknown>,
  error: errorFromText(row.error)
})

const toRow = (message: MessageRecord): MessagesTable => ({
  ...message,
  content: JSON.stringify(message.content),
  error: errorToText(message.error)
})

const reportFromRow = (row: MessageStatusesTable): MessageStatusReport => ({
  ...row,
  status: row.status as MessageStatusReport["status"],
  error: errorFromText(row.error)
})

/**
 * Statuses received at the same instant, in the order a message goes through them; a status is kept
 * once per message id, so this and `received_at` order them all.
 */
const statusRank = sql<number>`CASE status WHEN 'sent' THEN 1 WHEN 'delivered' THEN 2 WHEN 'read' THEN 3 ELSE 4 END`

/** `MessageStore` on Kysely. */
export const messageStoreLayer: Layer.Layer<MessageStore, never, KyselyConnection> = Layer.effect(
  MessageStore,
  Effect.gen(function*() {
    const connection = yield* KyselyConnection
    return MessageStore.of({
      insert: (message) =>
        query(connection, (db) => db.insertInto("messages").values(toRow(message)).execute()).pipe(Effect.asVoid),
      get: (tenantId, id) =>
        query(connection, (db) =>
          db.selectFrom("messages").selectAll().where("tenant_id", "=", tenantId).where("id", "=", id).executeTakeFirst())
          .pipe(Effect.map((row) => Option.map(Option.fromNullishOr(row), fromRow))),
      findByExternalId: (tenantId, channelId, externalId) =>
        query(connection, (db) =>
          db.selectFrom("messages").selectAll().where("channel_id", "=", channelId).where("external_id", "=", externalId)
            .where("tenant_id", "=", tenantId).executeTakeFirst())
          .pipe(Effect.map((row) => Option.map(Option.fromNullishOr(row), fromRow))),
      listByConversation: (tenantId, conversationId, window) =>
        query(connection, async (db) => {
          const base = db.selectFrom("messages").where("tenant_id", "=", tenantId).where("conversation_id", "=", conversationId)
          const items = await base.selectAll().orderBy("created_at").orderBy(insertionOrder(connection.dialect)).limit(window.limit).offset(window.offset)
            .execute()
          const count = await base.select((eb) => eb.fn.countAll().as("n")).executeTakeFirstOrThrow()
          return { items: items.map(fromRow), total: Number(count.n) }
        }),
      update: (tenantId, message) => {
        const { id: _id, tenant_id: _tenant, created_at: _created, ...changes } = toRow(message)
        return query(connection, (db) =>
          db.updateTable("messages").set(changes).where("tenant_id", "=", tenantId).where("id", "=", message.id)
            .executeTakeFirst())
          .pipe(Effect.map((result) => Number(result.numUpdatedRows) > 0))
      },
      recordStatus: (report) =>
        query(connection, (db) =>
          db.insertInto("message_statuses").values({ ...report, error: errorToText(report.error) })
            .onConflict((oc) => oc.columns(["channel_id", "external_id", "status"]).doNothing())
            .returning("status").execute())
          .pipe(Effect.map((rows) => rows.length > 0)),
      statusesOf: (tenantId, channelId, externalId) =>
        query(connection, (db) =>
          db.selectFrom("message_statuses").selectAll().where("channel_id", "=", channelId)
            .where("external_id", "=", externalId).where("tenant_id", "=", tenantId)
            .orderBy("received_at").orderBy(statusRank).execute())
          .pipe(Effect.map((rows) => rows.map(reportFromRow)))
    })
  })
)
