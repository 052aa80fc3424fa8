import { Effect, Layer, Option } from "effect"
import { sql } from "kysely"
import { type ConversationKind, type ConversationRecord, type ConversationStatus, ConversationStore } from "../../../src/ports/ConversationStore.ts"
import { KyselyConnection, query } from "../Connection.ts"
import type { ConversationsTable } from "../Database.ts"
import { filterOnly, jsonBatch } from "../JsonBatch.ts"

const CONVERSATION_COLUMNS = [
  "id",
  "tenant_id",
  "channel_id",
  "contact_id",
  "status",
  "kind",
  "subject",
  "created_at",
  "updated_at",
  "closed_at",
  "last_message_at",
  "last_inbound_at"
]

const fromRow = (row: ConversationsTable): ConversationRecord => ({
  ...row,
  status: row.status as ConversationStatus,
  kind: row.kind as ConversationKind
})

/** The listing's order: the last message, else the creation (the expression `conversations_tenant_activity_idx` holds). */
const activity = sql<string>`coalesce(last_message_at, created_at)`

const max = (a: string | null, b: string | null) => (a === null ? b : b === null || a > b ? a : b)

/** The latest note of each conversation among `notes`. */
const latestNotes = (notes: ReadonlyArray<{ readonly id: string; readonly at: string; readonly inbound_at: string | null }>) => {
  const latest = new Map<string, { id: string; at: string; inbound_at: string | null }>()
  for (const note of notes) {
    const seen = latest.get(note.id)
    latest.set(note.id, seen === undefined ? { ...note } : { id: note.id, at: max(seen.at, note.at)!, inbound_at: max(seen.inbound_at, note.inbound_at) })
  }
  return latest
}

/** `ConversationStore` on Kysely. */
export const conversationStoreLayer: Layer.Layer<ConversationStore, never, KyselyConnection> = Layer.effect(
  ConversationStore,
  Effect.gen(function*() {
    const connection = yield* KyselyConnection
    const { dialect } = connection
    // Only an open chat conversation of the pair (`conversations_open_unique`) skips a candidate: a
    // taken id fails the batch, as `insert` fails, rather than going missing from the answer.
    const insertMany = jsonBatch({
      dialect,
      name: "conversations-insert",
      columns: CONVERSATION_COLUMNS,
      template: (rows) =>
        `INSERT INTO conversations (${CONVERSATION_COLUMNS.join(", ")})
        SELECT ${CONVERSATION_COLUMNS.map((c) => `r.${c}`).join(", ")} FROM ${rows} WHERE true
        ON CONFLICT (tenant_id, channel_id, contact_id) WHERE status = 'open' AND kind = 'chat' DO NOTHING RETURNING id`
    })
    // Each pair looked up alone through the partial unique index (its literal terms, for SQLite's
    // planner): with both keys as lists, PostgreSQL matched only the tenant in the index and filtered
    // every open conversation of the tenant, each batch. A LATERAL subquery with a LIMIT (a pair has
    // at most one open chat) is never pulled up into a hash join, so it is a lookup per pair through
    // `conversations_open_by_contact`, the only index not led by the tenant (compared on the row: with
    // stale statistics an index led by it looked as good and was walked whole). The kind too is
    // compared on the row: the partial unique index (led by the tenant, `kind = 'chat'` in its
    // predicate) then does not apply, where PostgreSQL walked it whole for each pair (175 ms a page of
    // 32 pairs among 100,000 conversations). SQLite reads the batch once (`LIMIT -1`) and looks each
    // pair up.
    const openOf = jsonBatch({
      dialect,
      name: "conversations-open-of",
      columns: ["channel_id", "contact_id"],
      template: (rows) =>
        dialect === "postgres"
          ? `SELECT c.* FROM ${rows} CROSS JOIN LATERAL (SELECT * FROM conversations WHERE contact_id = r.contact_id
            AND channel_id = r.channel_id AND ${filterOnly("tenant_id")} = $2 AND status = 'open' AND ${filterOnly("kind")} = 'chat' LIMIT 1) AS c`
          : `SELECT c.* FROM ${rows} JOIN conversations AS c ON c.tenant_id = $2 AND c.channel_id = r.channel_id
            AND c.contact_id = r.contact_id WHERE c.status = 'open' AND c.kind = 'chat'`
    })
    // Each time only forward: a note older than what is stored changes nothing.
    const later = (column: string, value: string) =>
      `CASE WHEN ${value} IS NOT NULL AND (c.${column} IS NULL OR ${value} > c.${column}) THEN ${value} ELSE c.${column} END`
    const noteStatement = jsonBatch({
      dialect,
      name: "conversations-note",
      columns: ["id", "at", "inbound_at"],
      template: (rows, keyIn) =>
        `UPDATE conversations AS c SET last_message_at = ${later("last_message_at", "r.at")},
          last_inbound_at = ${later("last_inbound_at", "r.inbound_at")}, updated_at = ${later("updated_at", "r.at")}
        FROM ${rows} WHERE ${keyIn("c.id")} AND c.id = r.id AND ${filterOnly("c.tenant_id")} = $2`
    })
    return ConversationStore.of({
      // As contacts' `findOrInsertByPhones`: a look first, an insert only of the pairs with none open
      // (in key order), then a look at those another writer opened first.
      openMany: (tenantId, candidates) =>
        candidates.length === 0 ? Effect.succeed({ conversations: [], inserted: new Set<string>() }) : query(connection, async (db) => {
          const keyOf = (c: { readonly channel_id: string; readonly contact_id: string }) => `${c.channel_id} ${c.contact_id}`
          const look = async (pairs: ReadonlyArray<ConversationRecord>) => {
            const wanted = new Set(pairs.map(keyOf))
            const rows = await openOf.run<ConversationsTable>(db, pairs.map(({ channel_id, contact_id }) => ({ channel_id, contact_id })), [tenantId])
            // A pair asked twice is found twice: each conversation once.
            const seen = new Set<string>()
            return rows.filter((row) => wanted.has(keyOf(row)) && !seen.has(row.id) && seen.add(row.id) !== undefined).map(fromRow)
          }
          const found = await look(candidates)
          const open = new Set(found.map(keyOf))
          const missing = candidates.filter((c) => !open.has(keyOf(c))).sort((a, b) => (keyOf(a) < keyOf(b) ? -1 : 1))
          if (missing.length === 0) return { conversations: found, inserted: new Set<string>() }
          const inserted = new Set((await insertMany.run<{ readonly id: string }>(db, missing)).map((row) => row.id))
          const stored = missing.filter((c) => inserted.has(c.id))
          // A pair given twice is opened once: only a pair none of the batch opened was another transaction's.
          const storedPairs = new Set(stored.map(keyOf))
          const raced = missing.filter((c) => !inserted.has(c.id) && !storedPairs.has(keyOf(c)))
          return {
            conversations: [...found, ...stored, ...(raced.length === 0 ? [] : await look(raced))],
            inserted
          }
        }),
      // One row per conversation (an UPDATE … FROM applies one of several matching rows only).
      noteMessages: (tenantId, notes) =>
        query(connection, (db) => noteStatement.run(db, [...latestNotes(notes).values()], [tenantId])).pipe(Effect.asVoid),
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
