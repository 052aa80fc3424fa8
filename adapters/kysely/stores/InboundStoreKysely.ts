import { Effect, Layer } from "effect"
import { sql } from "kysely"
import { currentTraceparent } from "../../../src/kernel/TraceContext.ts"
import {
  type InboundClaim,
  type InboundPayloadRecord,
  type InboundPayloadStatus,
  type InboundSource,
  InboundStore,
  type PayloadToStore
} from "../../../src/ports/InboundStore.ts"
import { amongKeys, atomically, insertionOrder, KyselyConnection, query, skipLocked } from "../Connection.ts"
import type { InboundPayloadsTable } from "../Database.ts"
import { filterOnly, jsonBatch, statementName } from "../JsonBatch.ts"
import type { Dialect } from "../Migrations.ts"
import { rowStatement, runInChunks } from "../RawBatch.ts"
import { pruneFinishedPayloads } from "../Retention.ts"

// `seq` (PostgreSQL) and `ord` (a claim's insertion order) are storage details, not part of the record.
const fromRow = (
  { holder: _holder, seq: _seq, ord: _ord, trace_context: _trace, ...row }: InboundPayloadsTable & { readonly seq?: unknown; readonly ord?: unknown }
): InboundPayloadRecord => ({
  ...row,
  source: row.source as InboundSource,
  status: row.status as InboundPayloadStatus,
  attempts: Number(row.attempts),
  // The drivers hand back a Buffer (pg, better-sqlite3) or a Uint8Array (PGlite): always a plain copy.
  body: new Uint8Array(row.body)
})

type ClaimedRow = InboundPayloadsTable & { readonly ord: number | string }

const PAYLOAD_COLUMNS = [
  "id", "source", "route_key", "body", "content_type", "received_at", "status", "attempts", "next_attempt_at",
  "lease_until", "processed_at", "note", "trace_context"
] as const

/**
 * The multi-row insert of payloads (`RawBatch.ts`). SQLite binds each body as a blob; PostgreSQL takes
 * the text columns as JSON arrays, so a body goes as base64 and is decoded back to its bytes there.
 * Rows are stored in the order given, so payloads that tie on their times are claimed in that order.
 */
const payloadInsert = (dialect: Dialect) =>
  rowStatement<PayloadToStore>({
    name: "inbound-payloads-insert",
    dialect,
    columns: PAYLOAD_COLUMNS,
    types: { attempts: "integer" },
    // A gathered batch holds a few dozen payloads; SQLite's texts stay few and short.
    maxRows: 256,
    values: ({ payload: p, traceContext }) => [
      p.id,
      p.source,
      p.route_key,
      dialect === "postgres" ? Buffer.from(p.body.buffer, p.body.byteOffset, p.body.byteLength).toString("base64") : p.body,
      p.content_type,
      p.received_at,
      p.status,
      p.attempts,
      p.next_attempt_at,
      p.lease_until,
      p.processed_at,
      p.note,
      traceContext
    ],
    text: (rows) =>
      dialect === "postgres"
        ? `INSERT INTO inbound_payloads (${PAYLOAD_COLUMNS.join(", ")}) SELECT ${
          PAYLOAD_COLUMNS.map((column) => (column === "body" ? "decode(body, 'base64')" : column)).join(", ")
        } FROM (${rows}) AS r(${PAYLOAD_COLUMNS.join(", ")})`
        : `INSERT INTO inbound_payloads (${PAYLOAD_COLUMNS.join(", ")}) ${rows}`
  })

/** Claims in the order they are taken: the payload due first, then the one received first, then the one stored first. */
const byDue = (a: ClaimedRow, b: ClaimedRow): number =>
  a.next_attempt_at !== b.next_attempt_at
    ? (a.next_attempt_at < b.next_attempt_at ? -1 : 1)
    : a.received_at !== b.received_at
    ? (a.received_at < b.received_at ? -1 : 1)
    : Number(a.ord) - Number(b.ord)

/**
 * `InboundStore` on Kysely. The claim is one UPDATE over the pending payloads it picks (a partial
 * index holds only those); on PostgreSQL concurrent claimers skip each other's rows (`skipLocked`,
 * `amongKeys` in Connection.ts). Finishing is a compare-and-set on the holder the claim stored.
 */
export const inboundStoreLayer: Layer.Layer<InboundStore, never, KyselyConnection> = Layer.effect(
  InboundStore,
  Effect.gen(function*() {
    const connection = yield* KyselyConnection
    const { dialect } = connection
    const insertStatement = payloadInsert(dialect)
    // One statement commits alone; more go in one transaction, so the batch is stored whole or not at all.
    const insertMany = (payloads: ReadonlyArray<PayloadToStore>) =>
      payloads.length === 0
        ? Effect.void
        : (payloads.length <= insertStatement.chunk(payloads.length)
          ? query(connection, (db) => insertStatement.run(db, payloads))
          : atomically(connection, (db) => runInChunks(db, insertStatement, payloads))).pipe(Effect.asVoid)
    // A pending try keeps its time of processing; a finished one keeps its next due time. No alias for
    // the table: SQLite's RETURNING takes a column qualified by the table's name only.
    const finishStatement = jsonBatch({
      dialect,
      name: "inbound-finish",
      columns: ["id", "holder", "status", "note", "next_attempt_at"],
      template: (rows, keyIn) =>
        `UPDATE inbound_payloads SET status = r.status, note = r.note, lease_until = NULL, holder = NULL,
          next_attempt_at = CASE WHEN r.status = 'pending' THEN r.next_attempt_at ELSE inbound_payloads.next_attempt_at END,
          processed_at = CASE WHEN r.status = 'pending' THEN inbound_payloads.processed_at ELSE $2 END
        FROM ${rows} WHERE ${keyIn("inbound_payloads.id")} AND inbound_payloads.id = r.id AND inbound_payloads.holder = r.holder AND ${filterOnly("inbound_payloads.status")} = 'pending'
        RETURNING inbound_payloads.id`
    })
    // `WHERE true`: SQLite reads an upsert's ON after a bare SELECT … FROM as a join's.
    const handledStatement = jsonBatch({
      dialect,
      name: "inbound-handled",
      columns: ["key"],
      template: (rows) =>
        `INSERT INTO inbound_handled (source, key, handled_at) SELECT $2, r.key, $3 FROM ${rows} WHERE true
        ON CONFLICT DO NOTHING RETURNING key`
    })
    return InboundStore.of({
      // The payload keeps the trace context of the span that stores it (null when tracing is off).
      insert: (payload) => Effect.flatMap(currentTraceparent, (trace) => insertMany([{ payload, traceContext: trace ?? null }])),
      insertMany,
      // PostgreSQL: a second write goes in while the first waits on its commit (and their commits may
      // share a flush); SQLite's writers take turns, so one at a time gathers the most.
      insertsAtOnce: dialect === "postgres" ? 2 : 1,
      // The due test is written with the partial index's literal term, so SQLite's planner matches it too.
      claim: ({ holder, leaseUntil, limit, now }) =>
        query(connection, (db) => {
          const due = sql`SELECT id FROM inbound_payloads
              WHERE status = 'pending' AND next_attempt_at <= ${now} AND (lease_until IS NULL OR lease_until <= ${now})
              ORDER BY next_attempt_at, received_at, ${insertionOrder(connection.dialect)} LIMIT ${limit}${skipLocked(connection.dialect)}`
          return sql<ClaimedRow>`${sql.raw(statementName("inbound-claim"))}UPDATE inbound_payloads
            SET lease_until = ${leaseUntil}, holder = ${holder}, attempts = attempts + 1
            WHERE ${amongKeys(connection.dialect, "id", due)}
            RETURNING *, ${insertionOrder(connection.dialect)} AS ord`.execute(db)
        }).pipe(Effect.map(({ rows }) =>
          [...rows].sort(byDue).map((row): InboundClaim => ({ payload: fromRow(row), holder, trace_context: row.trace_context ?? null }))
        )),
      finish: (id, holder, outcome, at) =>
        query(connection, (db) =>
          db.updateTable("inbound_payloads")
            .set({
              status: outcome.status,
              note: outcome.note,
              lease_until: null,
              holder: null,
              ...(outcome.status === "pending" ? { next_attempt_at: outcome.nextAttemptAt } : { processed_at: at })
            })
            .where("id", "=", id).where("holder", "=", holder).where("status", "=", "pending")
            .executeTakeFirst())
          .pipe(Effect.map((result) => Number(result.numUpdatedRows) > 0)),
      finishMany: (tries, at) =>
        query(connection, (db) =>
          finishStatement.run<{ readonly id: string }>(
            db,
            tries.map(({ holder, id, outcome }) => ({
              id,
              holder,
              status: outcome.status,
              note: outcome.note,
              next_attempt_at: outcome.status === "pending" ? outcome.nextAttemptAt : null
            })),
            [at]
          )).pipe(Effect.map((rows) => new Set(rows.map((row) => row.id)))),
      markHandledMany: (source, keys, at) =>
        query(connection, (db) => handledStatement.run<{ readonly key: string }>(db, keys.map((key) => ({ key })), [source, at]))
          .pipe(Effect.map((rows) => new Set(rows.map((row) => row.key)))),
      markHandled: (source, key, at) =>
        query(connection, (db) =>
          db.insertInto("inbound_handled").values({ source, key, handled_at: at })
            .onConflict((oc) => oc.columns(["source", "key"]).doNothing())
            .returning("key").execute())
          .pipe(Effect.map((rows) => rows.length > 0)),
      wasHandled: (source, key) =>
        query(connection, (db) =>
          db.selectFrom("inbound_handled").select("key").where("source", "=", source).where("key", "=", key)
            .executeTakeFirst())
          .pipe(Effect.map((row) => row !== undefined)),
      pruneFinished: (before, limit) =>
        query(connection, (db) => pruneFinishedPayloads(connection, db, before, limit)).pipe(
          Effect.map((rows) => rows.map((row) => ({ id: row.id, source: row.source as InboundSource })))
        )
    })
  })
)
