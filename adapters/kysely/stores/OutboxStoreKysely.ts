import { Effect, Layer } from "effect"
import type { EventEnvelope } from "../../../src/kernel/EventEnvelope.ts"
import { OutboxStore } from "../../../src/ports/OutboxStore.ts"
import { KyselyConnection, query } from "../Connection.ts"

/** `OutboxStore` on Kysely. */
export const outboxStoreLayer: Layer.Layer<OutboxStore, never, KyselyConnection> = Layer.effect(
  OutboxStore,
  Effect.gen(function*() {
    const connection = yield* KyselyConnection
    return OutboxStore.of({
      append: (events) =>
        events.length === 0 ? Effect.void : query(connection, async (db) => {
          // Batches keep each statement under the drivers' bound-parameter limits.
          for (let i = 0; i < events.length; i += 500) {
            await db.insertInto("outbox_events").values(events.slice(i, i + 500).map((event) => ({
              id: event.id,
              tenant_id: event.tenant_id,
              type: event.type,
              event_id: event.event_id,
              created_at: event.created_at,
              data: JSON.stringify(event.data)
            }))).execute()
          }
        }),
      listByTenant: (tenantId, options) =>
        query(connection, (db) => {
          let q = db.selectFrom("outbox_events").select(["id", "tenant_id", "type", "event_id", "created_at", "data"])
            .where("tenant_id", "=", tenantId)
          if (options.type !== undefined) q = q.where("type", "=", options.type)
          return q.orderBy("seq").limit(options.limit).offset(options.offset ?? 0).execute()
        }).pipe(Effect.map((rows): ReadonlyArray<EventEnvelope> =>
          rows.map((row) => ({ ...row, data: JSON.parse(row.data) as Record<string, unknown> }))
        )),
      claimUnfanned: (limit) =>
        query(connection, (db) => {
          let q = db.selectFrom("outbox_events").select(["seq", "id", "tenant_id", "type", "event_id", "created_at", "data"])
            .where("fanned_out_at", "is", null).orderBy("seq").limit(limit)
          if (connection.dialect === "postgres") q = q.forUpdate().skipLocked()
          return q.execute()
        }).pipe(Effect.map((rows) =>
          rows.map(({ seq, data, ...event }) => ({
            seq: Number(seq),
            event: { ...event, data: JSON.parse(data) as Record<string, unknown> }
          }))
        )),
      markFannedOut: (seqs, at) =>
        seqs.length === 0 ? Effect.void : query(connection, (db) =>
          db.updateTable("outbox_events").set({ fanned_out_at: at }).where("seq", "in", [...seqs]).execute())
          .pipe(Effect.asVoid)
    })
  })
)
