import { Effect, Layer, Option } from "effect"
import { type EventEnvelope, envelopeJson } from "../../../src/kernel/EventEnvelope.ts"
import { rememberTraceContext, traceparentTextOf } from "../../../src/kernel/TraceContext.ts"
import {
  type DeliverySave,
  type DeliveryStateOf,
  type FanOutLease,
  type FanOutTaken,
  type WebhookDeliveryRecord,
  WebhookDeliveryStore
} from "../../../src/ports/WebhookDeliveryStore.ts"
import { DeliveryStatus } from "../../../src/ports/WebhookDeliveryStore.ts"
import type { RetryStrategy } from "../../../src/ports/WebhookEndpointStore.ts"
import { sql } from "kysely"
import { amongKeys, atomically, KyselyConnection, query, skipLocked } from "../Connection.ts"
import { statementName } from "../JsonBatch.ts"
import type { Dialect } from "../Migrations.ts"
import { rowStatement, runInChunks } from "../RawBatch.ts"
import type { WebhookDeliveriesTable, WebhookFanOutLeasesTable } from "../Database.ts"
import { toPlaced } from "../OutboxRows.ts"
import { pruneFinishedDeliveries } from "../Retention.ts"
import { mayBeWanted } from "../WebhookInterest.ts"

/** The columns of a delivery's machine state (`DeliveryState`): all that changes after creation. */
const MACHINE_COLUMNS = [
  "status",
  "attempt_number",
  "max_retries",
  "retry_strategy",
  "next_retry_at",
  "completed_at",
  "response_status_code",
  "response_time_ms",
  "error_message"
] as const

/** The machine's columns with the key they belong to, as `getStates` reads them. */
const STATE_COLUMNS = ["id", "tenant_id", ...MACHINE_COLUMNS] as const

/** The machine's columns as stored, typed: the drivers may hand integers back as strings or bigints. */
const stateFromRow = <R extends Pick<WebhookDeliveriesTable, typeof MACHINE_COLUMNS[number]>>(row: R) => ({
  ...row,
  status: row.status as DeliveryStatus,
  retry_strategy: row.retry_strategy as RetryStrategy,
  attempt_number: Number(row.attempt_number),
  max_retries: Number(row.max_retries),
  response_status_code: row.response_status_code === null ? null : Number(row.response_status_code),
  response_time_ms: row.response_time_ms === null ? null : Number(row.response_time_ms)
})

// The trace context of the delivery's event travels with its envelope (`traceContextOf`).
const fromRow = ({ lease_expires_at: _lease, trace_context, ...row }: WebhookDeliveriesTable): WebhookDeliveryRecord => {
  const envelope = JSON.parse(row.envelope) as EventEnvelope
  rememberTraceContext(envelope, trace_context)
  return { ...stateFromRow(row), envelope, outbox_seq: Number(row.outbox_seq) }
}

/** Oldest first: by created_at, then by place in the outbox. */
const byAge = (a: WebhookDeliveryRecord, b: WebhookDeliveryRecord): number =>
  a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : a.outbox_seq - b.outbox_seq

/** Every column of a stored delivery, in the order the insert lists them. */
const INSERT_COLUMNS = [
  "id",
  "tenant_id",
  "webhook_endpoint_id",
  "event_id",
  "event_type",
  "envelope",
  "outbox_seq",
  ...MACHINE_COLUMNS,
  "previous_delivery_id",
  "lease_expires_at",
  "created_at",
  "trace_context"
] as const

/** PostgreSQL's types of the columns the hot statements pass that are not text (see `RawBatch`). */
const NUMERIC_COLUMNS = {
  outbox_seq: "bigint",
  attempt_number: "integer",
  max_retries: "integer",
  response_status_code: "integer",
  response_time_ms: "integer",
  expected_attempt: "integer"
} as const

/** The hot statements, as fixed SQL text (see `RawBatch`). */
const statements = (dialect: Dialect) => ({
  insert: rowStatement<readonly [WebhookDeliveryRecord, string | null]>({
    name: "deliveries-insert",
    dialect,
    columns: INSERT_COLUMNS,
    values: ([d, leaseUntil]) =>
      INSERT_COLUMNS.map((column) =>
        column === "envelope"
          ? envelopeJson(d.envelope)
          : column === "lease_expires_at"
          ? leaseUntil
          : column === "trace_context"
          ? traceparentTextOf(d.envelope)
          : d[column]
      ),
    types: NUMERIC_COLUMNS,
    // Only deliveries whose endpoint still exists in their tenant: a worker stores a delivery after its attempt, and the
    // endpoint may have been deleted meanwhile (its deliveries went with it). On PostgreSQL the endpoint
    // row is key-share locked as the foreign key check would, so a delete running at the same time
    // either waits for this insert (and then removes its rows) or is seen finished (and nothing is stored).
    text: (rows) =>
      `WITH v (${INSERT_COLUMNS.join(", ")}) AS (${rows})
      INSERT INTO webhook_deliveries (${INSERT_COLUMNS.join(", ")})
      SELECT ${INSERT_COLUMNS.map((c) => `v.${c}`).join(", ")} FROM v
      WHERE EXISTS (SELECT 1 FROM webhook_endpoints e WHERE e.id = v.webhook_endpoint_id AND e.tenant_id = v.tenant_id${
        dialect === "postgres" ? " FOR KEY SHARE" : ""
      })`
  }),
  // One UPDATE … FROM (rows) per chunk, the same text on both dialects (SQLite ≥ 3.35 for RETURNING); on
  // PostgreSQL the ids also as an array, so the rows are reached by the primary key whatever the statistics say.
  save: rowStatement<DeliverySave>({
    name: "deliveries-save",
    dialect,
    columns: ["id", ...MACHINE_COLUMNS, "expected_status", "expected_attempt"],
    values: ({ state, expected }) => [
      state.id,
      ...MACHINE_COLUMNS.map((column) => state[column]),
      expected?.status ?? null,
      expected?.attempt_number ?? null
    ],
    types: NUMERIC_COLUMNS,
    text: (rows) =>
      `WITH v (id, ${MACHINE_COLUMNS.join(", ")}, expected_status, expected_attempt) AS (${rows})
      UPDATE webhook_deliveries SET ${MACHINE_COLUMNS.map((c) => `${c} = v.${c}`).join(", ")}, lease_expires_at = NULL
      FROM v WHERE webhook_deliveries.id = v.id${dialect === "postgres" ? " AND webhook_deliveries.id = ANY(ARRAY(SELECT id FROM v))" : ""}
        AND (v.expected_status IS NULL
          OR (webhook_deliveries.status = v.expected_status AND webhook_deliveries.attempt_number = v.expected_attempt))
      RETURNING webhook_deliveries.id`
  }),
  states: rowStatement<string>({
    name: "deliveries-states",
    dialect,
    columns: ["id"],
    values: (id) => [id],
    // By the primary key whatever the statistics say (as `keyIn`): a join on the rows was planned as a
    // walk of the whole table while its statistics were those of a nearly empty one.
    text: (rows) => `SELECT ${STATE_COLUMNS.join(", ")} FROM webhook_deliveries WHERE id ${dialect === "postgres" ? `= ANY(ARRAY(${rows}))` : `IN (${rows})`}`
  })
})

/** An outbox event as `takeFanOut` took it, with whether an endpoint may want it (a boolean, or 0/1 on SQLite). */
type Taken = {
  seq: number | string
  id: string
  tenant_id: string
  type: string
  event_id: string
  created_at: string
  data: string
  trace_context: string | null
  wanted: boolean | number
}

/** The taken rows as `takeFanOut` resolves them: the wanted events in append order, the others counted. */
const fanOutTaken = (rows: ReadonlyArray<Taken>): FanOutTaken => {
  const wanted = rows.filter((row) => Number(row.wanted) === 1)
  return {
    leased: wanted.map(({ wanted: _wanted, ...row }) => toPlaced(row)).sort((a, b) => a.seq - b.seq),
    unwanted: rows.length - wanted.length
  }
}

/**
 * `WebhookDeliveryStore` on Kysely. The dialects differ where PostgreSQL has several writers: claims
 * skip rows others locked (`skipLocked`, `amongKeys` in Connection.ts), inserts key-share lock the
 * endpoint they belong to, `holdFanOuts` locks the leases until commit, and `takeFanOut` is one
 * statement there and a short transaction on SQLite; the hot statements' texts come from `RawBatch`.
 */
export const webhookDeliveryStoreLayer: Layer.Layer<WebhookDeliveryStore, never, KyselyConnection> = Layer.effect(
  WebhookDeliveryStore,
  Effect.gen(function*() {
    const connection = yield* KyselyConnection
    const statement = statements(connection.dialect)
    const forEndpoint = (tenantId: string, endpointId: string, statuses: ReadonlyArray<DeliveryStatus>) =>
    (db: typeof connection.db) =>
      db.updateTable("webhook_deliveries").where("tenant_id", "=", tenantId).where("webhook_endpoint_id", "=", endpointId)
        .where("status", "in", statuses)
    return WebhookDeliveryStore.of({
      insertMany: (deliveries, leaseUntil) =>
        deliveries.length === 0 ? Effect.void : query(connection, (db) =>
          runInChunks(db, statement.insert, deliveries.map((d) => [d, leaseUntil ?? null] as const))).pipe(Effect.asVoid),
      // The two due kinds come from their own partial indexes (written with the same literal terms,
      // so SQLite's planner matches them too), the oldest `limit` of both are leased in one statement.
      // PostgreSQL: concurrent claimers skip each other's rows instead of waiting or doubling up; the
      // rows locked but not among the oldest are let go when the statement ends.
      claimDue: (now, leaseUntil, limit) =>
        query(connection, (db) => {
          const lock = skipLocked(connection.dialect)
          const due = sql`SELECT id FROM (
              SELECT * FROM (SELECT id, created_at, outbox_seq FROM webhook_deliveries
                WHERE status = 'pending' AND lease_expires_at IS NULL
                ORDER BY created_at, outbox_seq LIMIT ${limit}${lock}) AS pending
              UNION ALL
              SELECT * FROM (SELECT id, created_at, outbox_seq FROM webhook_deliveries
                WHERE status = 'retrying' AND lease_expires_at IS NULL AND next_retry_at <= ${now}
                ORDER BY next_retry_at, created_at, outbox_seq LIMIT ${limit}${lock}) AS retrying
            ) AS due ORDER BY created_at, outbox_seq LIMIT ${limit}`
          return sql<WebhookDeliveriesTable>`UPDATE webhook_deliveries SET lease_expires_at = ${leaseUntil}
            WHERE ${amongKeys(connection.dialect, "id", due)}
            RETURNING *`.execute(db)
        }).pipe(Effect.map(({ rows }) => rows.map(fromRow).sort(byAge))),
      claimExpired: (now, leaseUntil, limit) =>
        query(connection, (db) => {
          const lock = skipLocked(connection.dialect)
          const expired = sql`SELECT id FROM webhook_deliveries
              WHERE lease_expires_at IS NOT NULL AND lease_expires_at <= ${now}
                AND (status = 'pending' OR (status = 'retrying' AND next_retry_at <= ${now}))
              ORDER BY lease_expires_at LIMIT ${limit}${lock}`
          return sql<WebhookDeliveriesTable>`UPDATE webhook_deliveries SET lease_expires_at = ${leaseUntil}
            WHERE ${amongKeys(connection.dialect, "id", expired)}
            RETURNING *`.execute(db)
        }).pipe(Effect.map(({ rows }) => rows.map(fromRow).sort(byAge))),
      // Only the machine's columns change after creation: the envelope is not serialized and rewritten per attempt.
      saveMany: (saves) =>
        saves.length === 0 ? Effect.succeed(new Set<string>()) : query(connection, (db) =>
          runInChunks<DeliverySave, { id: string }>(db, statement.save, saves)).pipe(
            Effect.map((rows) => new Set(rows.map((row) => row.id)))
          ),
      getStates: (keys) =>
        keys.length === 0 ? Effect.succeed([]) : query(connection, (db) =>
          runInChunks<string, Pick<WebhookDeliveriesTable, typeof STATE_COLUMNS[number]>>(db, statement.states, keys.map((k) => k.id)))
          .pipe(Effect.map((rows) => {
            const tenantOf = new Map(keys.map((k) => [k.id, k.tenant_id]))
            return rows.filter((row) => tenantOf.get(row.id) === row.tenant_id).map((row): DeliveryStateOf => stateFromRow(row))
          })),
      get: (tenantId, endpointId, id) =>
        query(connection, (db) =>
          db.selectFrom("webhook_deliveries").selectAll().where("tenant_id", "=", tenantId)
            .where("webhook_endpoint_id", "=", endpointId).where("id", "=", id).executeTakeFirst())
          .pipe(Effect.map((row) => Option.map(Option.fromNullishOr(row), fromRow))),
      list: (tenantId, endpointId, filter) =>
        query(connection, async (db) => {
          let base = db.selectFrom("webhook_deliveries").where("tenant_id", "=", tenantId)
            .where("webhook_endpoint_id", "=", endpointId)
          if (filter.status !== undefined) base = base.where("status", "=", filter.status)
          if (filter.event_type !== undefined) base = base.where("event_type", "=", filter.event_type)
          const items = await base.selectAll().orderBy("created_at", "desc").orderBy("outbox_seq", "desc")
            .orderBy("id", "desc").limit(filter.limit).offset(filter.offset).execute()
          const count = await base.select((eb) => eb.fn.countAll().as("n")).executeTakeFirstOrThrow()
          return { items: items.map(fromRow), total: Number(count.n) }
        }),
      countByStatus: (byTenant) =>
        query(connection, async (db): Promise<ReadonlyArray<{ status: string; tenant_id: string | null; n: unknown }>> => {
          const counted = db.selectFrom("webhook_deliveries")
            .where("status", "in", ["pending", "retrying", "queued", "dead_letter"])
          if (byTenant) {
            return counted.select((eb) => ["status", "tenant_id", eb.fn.countAll().as("n")]).groupBy(["status", "tenant_id"]).execute()
          }
          const rows = await counted.select((eb) => ["status", eb.fn.countAll().as("n")]).groupBy("status").execute()
          return rows.map((row) => ({ ...row, tenant_id: null }))
        }).pipe(Effect.map((rows) =>
          rows.map((row) => ({
            status: row.status as "pending" | "retrying" | "queued" | "dead_letter",
            tenant_id: row.tenant_id,
            count: Number(row.n)
          }))
        )),
      countQueued: (tenantId, endpointId) =>
        query(connection, (db) =>
          db.selectFrom("webhook_deliveries").select((eb) => eb.fn.countAll().as("n")).where("tenant_id", "=", tenantId)
            .where("webhook_endpoint_id", "=", endpointId).where("status", "=", "queued").executeTakeFirstOrThrow())
          .pipe(Effect.map((row) => Number(row.n))),
      parkOutstanding: (tenantId, endpointId) =>
        query(connection, (db) =>
          forEndpoint(tenantId, endpointId, ["pending", "retrying"])(db).set({ status: "queued", next_retry_at: null }).execute())
          .pipe(Effect.asVoid),
      replayQueued: (tenantId, endpointId) =>
        query(connection, (db) =>
          forEndpoint(tenantId, endpointId, ["queued"])(db).set({ status: "pending", next_retry_at: null }).execute())
          .pipe(Effect.asVoid),
      deadLetterOutstanding: (tenantId, endpointId, reason, at) =>
        query(connection, (db) =>
          forEndpoint(tenantId, endpointId, ["pending", "retrying", "queued"])(db)
            .set({ status: "dead_letter", next_retry_at: null, error_message: reason, completed_at: at }).execute())
          .pipe(Effect.asVoid),
      // In `seq` order, so it is read from the partial index of waiting events: unordered, the planner may
      // scan the table from its oldest rows, all fanned out long ago.
      anyToFanOut: query(connection, (db) =>
        db.selectFrom("outbox_events").select("seq").where("fanned_out_at", "is", null).orderBy("seq").limit(1).execute())
        .pipe(Effect.map((waiting) => waiting.length > 0)),
      // On PostgreSQL one statement marks the events and stores their lease, so it needs no transaction of
      // its own.
      takeFanOut: (limit, lease) => {
        const unfanned = sql`SELECT seq FROM outbox_events WHERE fanned_out_at IS NULL
          ORDER BY seq LIMIT ${limit}${skipLocked(connection.dialect)}`
        const take = sql`UPDATE outbox_events SET fanned_out_at = ${lease.fanned_at}
          WHERE ${amongKeys(connection.dialect, "seq", unfanned)}
          RETURNING seq, id, tenant_id, type, event_id, created_at, data, trace_context,
            ${sql.raw(mayBeWanted(connection.dialect, "outbox_events"))} AS wanted`
        return connection.dialect === "postgres"
          ? query(connection, (db) =>
            sql<Taken>`${sql.raw(statementName("fanout-take"))}WITH taken AS (${take}),
              leased AS (INSERT INTO webhook_fanout_leases (id, seqs, fanned_at, holder, lease_until)
                SELECT ${lease.id}, '[' || string_agg(seq::text, ',' ORDER BY seq) || ']', ${lease.fanned_at},
                  ${lease.holder}, ${lease.lease_until}
                FROM taken WHERE wanted HAVING count(*) > 0)
              SELECT * FROM taken`.execute(db)).pipe(Effect.map(({ rows }) => fanOutTaken(rows)))
          : atomically(connection, async (db) => {
            const taken = fanOutTaken((await sql<Taken>`${take}`.execute(db)).rows)
            if (taken.leased.length > 0) {
              await db.insertInto("webhook_fanout_leases").values({ ...lease, seqs: JSON.stringify(taken.leased.map((t) => t.seq)) })
                .execute()
            }
            return taken
          })
      },
      holdFanOuts: (holds) =>
        holds.length === 0 ? Effect.succeed(new Set<string>()) : query(connection, (db) => {
          const q = db.selectFrom("webhook_fanout_leases").select(["id", "holder"]).where("id", "in", holds.map((h) => h.id))
          return (connection.dialect === "postgres" ? q.forUpdate() : q).execute()
        }).pipe(Effect.map((rows) => {
          const holderOf = new Map(holds.map((h) => [h.id, h.holder]))
          return new Set(rows.filter((row) => holderOf.get(row.id) === row.holder).map((row) => row.id))
        })),
      releaseFanOuts: (holds) =>
        holds.length === 0 ? Effect.void : query(connection, (db) =>
          db.deleteFrom("webhook_fanout_leases")
            .where((eb) => eb.or(holds.map((h) => eb.and([eb("id", "=", h.id), eb("holder", "=", h.holder)]))))
            .execute()).pipe(Effect.asVoid),
      claimExpiredFanOuts: (now, leaseUntil, holder, limit) =>
        query(connection, (db) => {
          const lock = skipLocked(connection.dialect)
          const expired = sql`SELECT id FROM webhook_fanout_leases WHERE lease_until <= ${now}
              ORDER BY lease_until LIMIT ${limit}${lock}`
          return sql<WebhookFanOutLeasesTable>`UPDATE webhook_fanout_leases SET holder = ${holder}, lease_until = ${leaseUntil}
            WHERE ${amongKeys(connection.dialect, "id", expired)}
            RETURNING *`.execute(db)
        }).pipe(Effect.map(({ rows }) =>
          rows.map((row): FanOutLease => ({ ...row, seqs: (JSON.parse(row.seqs) as Array<number>).map(Number) }))
            .sort((a, b) => (a.fanned_at < b.fanned_at ? -1 : a.fanned_at > b.fanned_at ? 1 : 0))
        )),
      // Through the endpoint index: every status listed so the index's leading columns are all bound.
      existingAt: (endpoints, createdAt, seqs) =>
        endpoints.length === 0 || seqs.length === 0 ? Effect.succeed(new Set<string>()) : query(connection, (db) =>
          db.selectFrom("webhook_deliveries").select(["tenant_id", "webhook_endpoint_id", "outbox_seq"])
            .where("webhook_endpoint_id", "in", endpoints.map((e) => e.id))
            .where("status", "in", [...DeliveryStatus.literals])
            .where("created_at", "=", createdAt)
            .where("outbox_seq", "in", [...seqs])
            .execute())
          .pipe(Effect.map((rows) => {
            const tenantOf = new Map(endpoints.map((e) => [e.id, e.tenant_id]))
            return new Set(rows.filter((row) => tenantOf.get(row.webhook_endpoint_id) === row.tenant_id)
              .map((row) => `${row.webhook_endpoint_id} ${Number(row.outbox_seq)}`))
          })),
      pruneFinished: (before, limit) => query(connection, (db) => pruneFinishedDeliveries(connection, db, before, limit))
    })
  })
)
