import { Effect, Layer } from "effect"
import { sql } from "kysely"
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
      takeUnfanned: (limit, at) =>
        query(connection, (db) => {
          const lock = connection.dialect === "postgres" ? sql` FOR UPDATE SKIP LOCKED` : sql``
          return sql<{ seq: number; id: string; tenant_id: string; type: string; event_id: string; created_at: string; data: string }>`
            UPDATE outbox_events SET fanned_out_at = ${at}
            WHERE seq IN (SELECT seq FROM outbox_events WHERE fanned_out_at IS NULL ORDER BY seq LIMIT ${limit}${lock})
            RETURNING seq, id, tenant_id, type, event_id, created_at, data`.execute(db)
        }).pipe(Effect.map(({ rows }) =>
          rows.map(({ seq, data, ...event }) => ({
            seq: Number(seq),
            event: { ...event, data: JSON.parse(data) as Record<string, unknown> }
          })).sort((a, b) => a.seq - b.seq)
        ))
    })
  })
)
