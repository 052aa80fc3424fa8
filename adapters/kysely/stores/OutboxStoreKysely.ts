import { Effect, Layer } from "effect"
import type { EventEnvelope } from "../../../src/kernel/EventEnvelope.ts"
import { currentTraceparent } from "../../../src/kernel/TraceContext.ts"
import { OutboxStore } from "../../../src/ports/OutboxStore.ts"
import { KyselyConnection, query } from "../Connection.ts"
import { OUTBOX_CHANNEL } from "../OutboxNotices.ts"
import { toEvent, toPlaced } from "../OutboxRows.ts"
import { jsonBatch } from "../JsonBatch.ts"
import { pruneFannedOutEvents } from "../Retention.ts"
import { tenantTakesEvents } from "../WebhookInterest.ts"

/** `OutboxStore` on Kysely. */
export const outboxStoreLayer: Layer.Layer<OutboxStore, never, KyselyConnection> = Layer.effect(
  OutboxStore,
  Effect.gen(function*() {
    const connection = yield* KyselyConnection
    // Events are appended in batches on busy paths: one named statement for every batch (see
    // `JsonBatch`). Each event keeps the trace context of the span that appends it (null when tracing
    // is off). An event of a tenant with no endpoint taking events when it is appended is stored fanned
    // out already (at its own time): the dispatcher never takes it, and no row is written twice for it.
    const fannedOutAtOnce = `CASE WHEN ${tenantTakesEvents("r")} THEN NULL ELSE r.created_at END`
    const insert = jsonBatch({
      dialect: connection.dialect,
      name: "outbox-append",
      columns: ["id", "tenant_id", "type", "event_id", "created_at", "data", "trace_context"],
      // On PostgreSQL the same statement notifies `OUTBOX_CHANNEL` when an event awaits fan-out,
      // delivered to listeners when the transaction commits (see `makeOutboxNotices`).
      template: (rows) => {
        const insert = `INSERT INTO outbox_events (id, tenant_id, type, event_id, created_at, data, trace_context, fanned_out_at)
          SELECT r.id, r.tenant_id, r.type, r.event_id, r.created_at, r.data, r.trace_context, ${fannedOutAtOnce} FROM ${rows}`
        return connection.dialect === "postgres"
          ? `WITH appended AS (${insert} RETURNING fanned_out_at)
            SELECT pg_notify('${OUTBOX_CHANNEL}', '') WHERE EXISTS (SELECT 1 FROM appended WHERE fanned_out_at IS NULL)`
          : insert
      }
    })
    return OutboxStore.of({
      append: (events) =>
        events.length === 0 ? Effect.void : Effect.flatMap(currentTraceparent, (trace) =>
          query(connection, (db) =>
            insert.run(db, events.map((event) => ({
              id: event.id, tenant_id: event.tenant_id, type: event.type, event_id: event.event_id,
              created_at: event.created_at, data: JSON.stringify(event.data), trace_context: trace ?? null
            })))))
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
