import { Effect, Layer } from "effect"
import { sql } from "kysely"
import { currentTraceparent } from "../../../src/kernel/TraceContext.ts"
import {
  type InboundClaim,
  type InboundPayloadRecord,
  type InboundPayloadStatus,
  type InboundSource,
  InboundStore
} from "../../../src/ports/InboundStore.ts"
import { amongKeys, insertionOrder, KyselyConnection, query, skipLocked } from "../Connection.ts"
import type { InboundPayloadsTable } from "../Database.ts"
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
    return InboundStore.of({
      // The payload keeps the trace context of the span that stores it (null when tracing is off).
      insert: (payload) =>
        Effect.flatMap(currentTraceparent, (trace) =>
          query(connection, (db) =>
            db.insertInto("inbound_payloads").values({ ...payload, holder: null, trace_context: trace ?? null }).execute()))
          .pipe(Effect.asVoid),
      // The due test is written with the partial index's literal term, so SQLite's planner matches it too.
      claim: ({ holder, leaseUntil, limit, now }) =>
        query(connection, (db) => {
          const due = sql`SELECT id FROM inbound_payloads
              WHERE status = 'pending' AND next_attempt_at <= ${now} AND (lease_until IS NULL OR lease_until <= ${now})
              ORDER BY next_attempt_at, received_at, ${insertionOrder(connection.dialect)} LIMIT ${limit}${skipLocked(connection.dialect)}`
          return sql<ClaimedRow>`UPDATE inbound_payloads
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
