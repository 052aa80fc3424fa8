import { Effect, Layer } from "effect"
import { type EventEnvelope, rememberEnvelopeJson } from "../../../src/kernel/EventEnvelope.ts"
import { OutboxStore } from "../../../src/ports/OutboxStore.ts"
import { KyselyConnection, query } from "../Connection.ts"
import { OUTBOX_CHANNEL } from "../OutboxNotices.ts"
import { rowStatement, runInChunks } from "../RawBatch.ts"

/**
 * An outbox row as the event it stores. Its JSON (what a webhook delivery sends) is assembled from
 * the stored `data` text rather than serialized again from the parsed object: `append` stored that
 * text with `JSON.stringify`, so the result is the same text. `data` is parsed when first read (and
 * then kept): fan-out reads it only for a `selected` endpoint's source filter, and a delivery sends
 * the text.
 */
const toEvent = ({ data, ...row }: Omit<EventEnvelope, "data"> & { readonly data: string }): EventEnvelope => {
  let parsed: Record<string, unknown> | undefined
  const event: EventEnvelope = {
    id: row.id,
    tenant_id: row.tenant_id,
    type: row.type,
    event_id: row.event_id,
    created_at: row.created_at,
    get data() {
      return parsed ??= JSON.parse(data) as Record<string, unknown>
    }
  }
  rememberEnvelopeJson(
    event,
    `{"id":${JSON.stringify(row.id)},"tenant_id":${JSON.stringify(row.tenant_id)},"type":${JSON.stringify(row.type)},` +
      `"event_id":${JSON.stringify(row.event_id)},"created_at":${JSON.stringify(row.created_at)},"data":${data}}`
  )
  return event
}

/** A row read with its place in the outbox, as fan-out takes it. */
export const toPlaced = ({ seq, ...row }: Omit<EventEnvelope, "data"> & { readonly seq: number | string; readonly data: string }) => ({
  seq: Number(seq),
  event: toEvent(row)
})

/** `OutboxStore` on Kysely. */
export const outboxStoreLayer: Layer.Layer<OutboxStore, never, KyselyConnection> = Layer.effect(
  OutboxStore,
  Effect.gen(function*() {
    const connection = yield* KyselyConnection
    // Events are appended in batches on busy paths: fixed SQL text (see `RawBatch`).
    const insert = rowStatement<EventEnvelope>({
      dialect: connection.dialect,
      columns: ["id", "tenant_id", "type", "event_id", "created_at", "data"],
      values: (event) => [event.id, event.tenant_id, event.type, event.event_id, event.created_at, JSON.stringify(event.data)],
      // On PostgreSQL the same statement notifies `OUTBOX_CHANNEL`, delivered to listeners when the
      // transaction commits (see `makeOutboxNotices`).
      text: (rows) => {
        const insert = `INSERT INTO outbox_events (id, tenant_id, type, event_id, created_at, data) ${rows}`
        return connection.dialect === "postgres"
          ? `WITH appended AS (${insert} RETURNING 1) SELECT pg_notify('${OUTBOX_CHANNEL}', '') WHERE EXISTS (SELECT 1 FROM appended)`
          : insert
      }
    })
    return OutboxStore.of({
      append: (events) =>
        events.length === 0 ? Effect.void : query(connection, (db) => runInChunks(db, insert, events)).pipe(Effect.asVoid),
      listByTenant: (tenantId, options) =>
        query(connection, (db) => {
          let q = db.selectFrom("outbox_events").select(["id", "tenant_id", "type", "event_id", "created_at", "data"])
            .where("tenant_id", "=", tenantId)
          if (options.type !== undefined) q = q.where("type", "=", options.type)
          return q.orderBy("seq").limit(options.limit).offset(options.offset ?? 0).execute()
        }).pipe(Effect.map((rows): ReadonlyArray<EventEnvelope> => rows.map(toEvent))),
      getBySeqs: (seqs) =>
        seqs.length === 0 ? Effect.succeed([]) : query(connection, (db) =>
          db.selectFrom("outbox_events").select(["seq", "id", "tenant_id", "type", "event_id", "created_at", "data"])
            .where("seq", "in", [...seqs]).orderBy("seq").execute())
          .pipe(Effect.map((rows) => rows.map(toPlaced)))
    })
  })
)
