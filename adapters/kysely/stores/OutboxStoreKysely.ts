import { Effect, Layer } from "effect"
import type { EventEnvelope } from "../../../src/kernel/EventEnvelope.ts"
import { currentTraceparent } from "../../../src/kernel/TraceContext.ts"
import { OutboxStore } from "../../../src/ports/OutboxStore.ts"
import { KyselyConnection, query } from "../Connection.ts"
import { OUTBOX_CHANNEL } from "../OutboxNotices.ts"
import { toEvent, toPlaced } from "../OutboxRows.ts"
import { rowStatement, runInChunks } from "../RawBatch.ts"
import { pruneFannedOutEvents } from "../Retention.ts"

/** `OutboxStore` on Kysely. */
export const outboxStoreLayer: Layer.Layer<OutboxStore, never, KyselyConnection> = Layer.effect(
  OutboxStore,
  Effect.gen(function*() {
    const connection = yield* KyselyConnection
    // Events are appended in batches on busy paths: fixed SQL text (see `RawBatch`).
    // Each event keeps the trace context of the span that appends it (null when tracing is off).
    const insert = rowStatement<readonly [EventEnvelope, string | null]>({
      dialect: connection.dialect,
      columns: ["id", "tenant_id", "type", "event_id", "created_at", "data", "trace_context"],
      values: ([event, trace]) =>
        [event.id, event.tenant_id, event.type, event.event_id, event.created_at, JSON.stringify(event.data), trace],
      // On PostgreSQL the same statement notifies `OUTBOX_CHANNEL`, delivered to listeners when the
      // transaction commits (see `makeOutboxNotices`).
      text: (rows) => {
        const insert = `INSERT INTO outbox_events (id, tenant_id, type, event_id, created_at, data, trace_context) ${rows}`
        return connection.dialect === "postgres"
          ? `WITH appended AS (${insert} RETURNING 1) SELECT pg_notify('${OUTBOX_CHANNEL}', '') WHERE EXISTS (SELECT 1 FROM appended)`
          : insert
      }
    })
    return OutboxStore.of({
      append: (events) =>
        events.length === 0 ? Effect.void : Effect.flatMap(currentTraceparent, (trace) =>
          query(connection, (db) => runInChunks(db, insert, events.map((event) => [event, trace ?? null] as const))))
          .pipe(Effect.asVoid),
      listByTenant: (tenantId, options) =>
        query(connection, (db) => {
          let q = db.selectFrom("outbox_events").select(["id", "tenant_id", "type", "event_id", "created_at", "data"])
            .where("tenant_id", "=", tenantId)
          if (options.type !== undefined) q = q.where("type", "=", options.type)
          return q.orderBy("seq").limit(options.limit).offset(options.offset ?? 0).execute()
        }).pipe(Effect.map((rows): ReadonlyArray<EventEnvelope> => rows.map(toEvent))),
      getForFanOut: (seqs) =>
        seqs.length === 0 ? Effect.succeed([]) : query(connection, (db) =>
          db.selectFrom("outbox_events").select(["seq", "id", "tenant_id", "type", "event_id", "created_at", "data", "trace_context"])
            .where("seq", "in", [...seqs]).orderBy("seq").execute())
          .pipe(Effect.map((rows) => rows.map(toPlaced))),
      pruneFannedOut: (input) => query(connection, (db) => pruneFannedOutEvents(connection, db, input))
    })
  })
)
