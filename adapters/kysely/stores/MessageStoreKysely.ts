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
import { filterOnly, jsonBatch } from "../JsonBatch.ts"

const MESSAGE_COLUMNS = [
  "id",
  "tenant_id",
  "conversation_id",
  "channel_id",
  "contact_id",
  "direction",
  "message_type",
  "text",
  "content",
  "status",
  "external_id",
  "error",
  "created_at",
  "updated_at",
  "sent_at",
  "delivered_at",
  "read_at",
  "failed_at"
]
const STATUS_COLUMNS = ["tenant_id", "channel_id", "external_id", "status", "occurred_at", "error", "received_at"]
/** The columns a status move writes. */
const MOVED_COLUMNS = ["status", "error", "sent_at", "delivered_at", "read_at", "failed_at", "updated_at"] as const

const errorFromText = (text: string | null): MessageError | null => (text === null ? null : JSON.parse(text) as MessageError)

const errorToText = (error: MessageError | null): string | null => (error === null ? null : JSON.stringify(error))

// `seq` (PostgreSQL's insertion order) and `pending_at` (generated, for the sweep's index) are storage details.
const fromRow = (
  { seq: _seq, pending_at: _pendingAt, ...row }: MessagesTable & { readonly seq?: unknown; readonly pending_at?: unknown }
): MessageRecord => ({
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
    const { dialect } = connection
    const columnsOf = (columns: ReadonlyArray<string>) => columns.map((c) => `r.${c}`).join(", ")
    const insertMany = jsonBatch({
      dialect,
      name: "messages-insert",
      columns: MESSAGE_COLUMNS,
      template: (rows) => `INSERT INTO messages (${MESSAGE_COLUMNS.join(", ")}) SELECT ${columnsOf(MESSAGE_COLUMNS)} FROM ${rows}`
    })
    const statusesInsert = jsonBatch({
      dialect,
      name: "message-statuses-insert",
      columns: STATUS_COLUMNS,
      template: (rows) =>
        `INSERT INTO message_statuses (${STATUS_COLUMNS.join(", ")}) SELECT ${columnsOf(STATUS_COLUMNS)} FROM ${rows} WHERE true
        ON CONFLICT DO NOTHING`
    })
    // On PostgreSQL a probe of (channel_id, external_id) per id (unique: `LIMIT 1` keeps it a probe, never
    // a join the planner may turn around): a plan kept from a nearly empty table matched only the
    // channel in the index and read every message of it for each batch.
    const byExternalIds = jsonBatch({
      dialect,
      name: "messages-by-external-ids",
      columns: ["external_id"],
      template: (rows, keyIn) =>
        dialect === "postgres"
          ? `SELECT m.* FROM (SELECT DISTINCT external_id FROM ${rows}) AS r CROSS JOIN LATERAL (SELECT * FROM messages
            WHERE channel_id = $2 AND external_id = r.external_id AND ${filterOnly("tenant_id")} = $3 LIMIT 1) AS m`
          : `SELECT * FROM messages WHERE channel_id = $2 AND ${keyIn("external_id")} AND ${filterOnly("tenant_id")} = $3`
    })
    // The same messages held until the transaction ends, locked in their operator ids' order whoever asks
    // (PostgreSQL): two transactions holding overlapping batches wait for each other instead of
    // deadlocking, and a row read after a wait is the version its holder left. Each is locked by its
    // probe, so each is read once. SQLite's writers take turns anyway.
    const holdByExternalIds = dialect === "postgres"
      ? jsonBatch({
        dialect,
        name: "messages-hold-by-external-ids",
        columns: ["external_id"],
        template: (rows) =>
          `SELECT m.* FROM (SELECT DISTINCT external_id FROM ${rows} ORDER BY external_id) AS r CROSS JOIN LATERAL (SELECT * FROM messages
            WHERE channel_id = $2 AND external_id = r.external_id AND ${filterOnly("tenant_id")} = $3 LIMIT 1 FOR UPDATE) AS m`
      })
      : byExternalIds
    // Compare-and-set on the status and `updated_at` read (PostgreSQL's IS NOT DISTINCT FROM is SQLite's IS).
    // No alias for the table: SQLite's RETURNING takes a column qualified by the table's name only.
    const same = dialect === "postgres" ? "IS NOT DISTINCT FROM" : "IS"
    const moveStatement = jsonBatch({
      dialect,
      name: "messages-move-status",
      columns: ["id", "expected_status", "expected_updated_at", ...MOVED_COLUMNS],
      template: (rows, keyIn) =>
        `UPDATE messages SET ${MOVED_COLUMNS.map((c) => `${c} = r.${c}`).join(", ")}
        FROM ${rows} WHERE ${keyIn("messages.id")} AND messages.id = r.id AND ${filterOnly("messages.tenant_id")} = $2 AND messages.status = r.expected_status
        AND messages.updated_at ${same} r.expected_updated_at RETURNING messages.id`
    })
    // Only messages still pending: an outcome is written once, whoever else holds the same batch.
    const settleStatement = jsonBatch({
      dialect,
      name: "messages-settle-pending",
      columns: ["id", "external_id", ...MOVED_COLUMNS],
      template: (rows, keyIn) =>
        `UPDATE messages SET external_id = r.external_id, ${MOVED_COLUMNS.map((c) => `${c} = r.${c}`).join(", ")}
        FROM ${rows} WHERE ${keyIn("messages.id")} AND messages.id = r.id AND ${filterOnly("messages.tenant_id")} = $2
        AND ${filterOnly("messages.status")} = 'pending' RETURNING messages.id`
    })
    // A pending send's operator id from a status naming it: only that column, only while unset.
    const attachStatement = jsonBatch({
      dialect,
      name: "messages-attach-external-ids",
      columns: ["id", "external_id"],
      template: (rows, keyIn) =>
        `UPDATE messages SET external_id = r.external_id
        FROM ${rows} WHERE ${keyIn("messages.id")} AND messages.id = r.id AND ${filterOnly("messages.tenant_id")} = $2
        AND ${filterOnly("messages.channel_id")} = $3 AND messages.direction = 'outbound' AND ${filterOnly("messages.status")} = 'pending'
        AND ${filterOnly("messages.external_id")} IS NULL RETURNING messages.id`
    })
    const deletePendingStatement = jsonBatch({
      dialect,
      name: "messages-delete-pending",
      columns: ["id"],
      template: (_rows, keyIn) => `DELETE FROM messages WHERE ${keyIn("id")} AND ${filterOnly("tenant_id")} = $2 AND ${filterOnly("status")} = 'pending'`
    })
    const statusesOfMany = jsonBatch({
      dialect,
      name: "message-statuses-of-many",
      columns: ["external_id"],
      template: (_rows, keyIn) =>
        `SELECT * FROM message_statuses WHERE channel_id = $2 AND ${keyIn("external_id")} AND tenant_id = $3
        ORDER BY external_id, received_at, CASE status WHEN 'sent' THEN 1 WHEN 'delivered' THEN 2 WHEN 'read' THEN 3 ELSE 4 END`
    })
    return MessageStore.of({
      insertMany: (messages) => query(connection, (db) => insertMany.run(db, messages.map(toRow))).pipe(Effect.asVoid),
      recordStatuses: (reports) =>
        query(connection, (db) => statusesInsert.run(db, reports.map((report) => ({ ...report, error: errorToText(report.error) }))))
          .pipe(Effect.asVoid),
      findByExternalIds: (tenantId, channelId, externalIds, options) =>
        query(connection, (db) =>
          (options?.hold === true ? holdByExternalIds : byExternalIds)
            .run<MessagesTable>(db, externalIds.map((external_id) => ({ external_id })), [channelId, tenantId]))
          .pipe(Effect.map((rows) => rows.map(fromRow))),
      moveStatuses: (tenantId, moves) =>
        query(connection, (db) =>
          moveStatement.run<{ readonly id: string }>(
            db,
            moves.map(({ expected, id, to }) => ({
              id,
              expected_status: expected.status,
              expected_updated_at: expected.updated_at,
              ...to,
              error: errorToText(to.error)
            })),
            [tenantId]
          )).pipe(Effect.map((rows) => new Set(rows.map((row) => row.id)))),
      settlePending: (tenantId, outcomes) =>
        outcomes.length === 0 ? Effect.succeed(new Set<string>()) : query(connection, (db) =>
          settleStatement.run<{ readonly id: string }>(
            db,
            outcomes.map((outcome) => ({ ...outcome, error: errorToText(outcome.error) })),
            [tenantId]
          )).pipe(Effect.map((rows) => new Set(rows.map((row) => row.id)))),
      attachExternalIds: (tenantId, channelId, attachments) =>
        attachments.length === 0 ? Effect.succeed(new Set<string>()) : query(connection, (db) =>
          attachStatement.run<{ readonly id: string }>(db, attachments.map(({ external_id, id }) => ({ id, external_id })), [tenantId, channelId]))
          .pipe(Effect.map((rows) => new Set(rows.map((row) => row.id)))),
      // Through messages_pending_at_idx (pending_at, id; `pending_at IS NOT NULL` as the partial index says,
      // so it matches): a pending message's `pending_at` is its `created_at` (migration 0026).
      pendingAcrossTenants: (before, after, limit) =>
        query(connection, (db) => {
          const pendingAt = sql.ref<string>("pending_at")
          let q = db.selectFrom("messages").selectAll().where(pendingAt, "is not", null)
            .where(pendingAt, "<", before).where("direction", "=", "outbound").where("message_type", "<>", "email")
          if (after !== null) {
            q = q.where((eb) =>
              eb.or([eb(pendingAt, ">", after.created_at), eb.and([eb(pendingAt, "=", after.created_at), eb("id", ">", after.id)])])
            )
          }
          return q.orderBy(pendingAt).orderBy("id").limit(limit).execute()
        }).pipe(Effect.map((rows) => rows.map(fromRow))),
      deletePending: (tenantId, ids) =>
        ids.length === 0 ? Effect.void : query(connection, (db) => deletePendingStatement.run(db, ids.map((id) => ({ id })), [tenantId]))
          .pipe(Effect.asVoid),
      statusesOfMany: (tenantId, channelId, externalIds) =>
        externalIds.length === 0 ? Effect.succeed([]) : query(connection, (db) =>
          statusesOfMany.run<MessageStatusesTable>(db, externalIds.map((external_id) => ({ external_id })), [channelId, tenantId]))
          .pipe(Effect.map((rows) => rows.map(reportFromRow))),
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
