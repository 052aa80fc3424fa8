import { Effect, Layer, Option } from "effect"
import { sql } from "kysely"
import { type RetryStrategy, type WebhookEndpointRecord, WebhookEndpointStore } from "../../../src/ports/WebhookEndpointStore.ts"
import { amongKeys, KyselyConnection, query, skipLocked } from "../Connection.ts"
import type { WebhookEndpointsTable } from "../Database.ts"
import { fromFlag, toFlag } from "./Rows.ts"

const list = (json: string | null): ReadonlyArray<string> | null =>
  json === null ? null : JSON.parse(json) as Array<string>

// The check lease belongs to the re-verification claim, not to the record.
const fromRow = ({ check_lease_until: _lease, ...row }: WebhookEndpointsTable): WebhookEndpointRecord => ({
  ...row,
  subscribed_events: JSON.parse(row.subscribed_events) as Array<string>,
  source_filter_mode: row.source_filter_mode === "selected" ? "selected" : "all",
  filtered_channel_ids: list(row.filtered_channel_ids),
  filtered_email_integration_ids: list(row.filtered_email_integration_ids),
  retry_strategy: row.retry_strategy as RetryStrategy,
  max_retries: Number(row.max_retries),
  timeout_seconds: Number(row.timeout_seconds),
  consecutive_failures: Number(row.consecutive_failures),
  reactivation_attempts: Number(row.reactivation_attempts),
  is_active: fromFlag(row.is_active),
  is_verified: fromFlag(row.is_verified),
  propagate_trace_context: fromFlag(row.propagate_trace_context)
})

const toRow = (endpoint: WebhookEndpointRecord): Omit<WebhookEndpointsTable, "check_lease_until"> => ({
  ...endpoint,
  subscribed_events: JSON.stringify(endpoint.subscribed_events),
  filtered_channel_ids: endpoint.filtered_channel_ids === null ? null : JSON.stringify(endpoint.filtered_channel_ids),
  filtered_email_integration_ids: endpoint.filtered_email_integration_ids === null
    ? null
    : JSON.stringify(endpoint.filtered_email_integration_ids),
  is_active: toFlag(endpoint.is_active),
  is_verified: toFlag(endpoint.is_verified),
  propagate_trace_context: toFlag(endpoint.propagate_trace_context)
})

/** `WebhookEndpointStore` on Kysely. */
export const webhookEndpointStoreLayer: Layer.Layer<WebhookEndpointStore, never, KyselyConnection> = Layer.effect(
  WebhookEndpointStore,
  Effect.gen(function*() {
    const connection = yield* KyselyConnection
    return WebhookEndpointStore.of({
      insert: (endpoint) =>
        query(connection, (db) => db.insertInto("webhook_endpoints").values(toRow(endpoint)).execute())
          .pipe(Effect.asVoid),
      get: (tenantId, id) =>
        query(connection, (db) =>
          db.selectFrom("webhook_endpoints").selectAll().where("tenant_id", "=", tenantId).where("id", "=", id)
            .executeTakeFirst())
          .pipe(Effect.map((row) => Option.map(Option.fromNullishOr(row), fromRow))),
      getForUpdate: (tenantId, id) =>
        query(connection, (db) => {
          const q = db.selectFrom("webhook_endpoints").selectAll().where("tenant_id", "=", tenantId).where("id", "=", id)
          return (connection.dialect === "postgres" ? q.forUpdate() : q).executeTakeFirst()
        }).pipe(Effect.map((row) => Option.map(Option.fromNullishOr(row), fromRow))),
      list: (tenantId) =>
        query(connection, (db) =>
          db.selectFrom("webhook_endpoints").selectAll().where("tenant_id", "=", tenantId)
            .orderBy("created_at").orderBy("id").execute())
          .pipe(Effect.map((rows) => rows.map(fromRow))),
      update: (tenantId, endpoint) => {
        const { id: _id, tenant_id: _tenant, created_at: _created, ...changes } = toRow(endpoint)
        return query(connection, (db) =>
          db.updateTable("webhook_endpoints").set(changes).where("tenant_id", "=", tenantId)
            .where("id", "=", endpoint.id).executeTakeFirst())
          .pipe(Effect.map((result) => Number(result.numUpdatedRows) > 0))
      },
      claimDueChecks: (now, leaseUntil, limit) =>
        query(connection, (db) => {
          const lock = skipLocked(connection.dialect)
          const due = sql`SELECT id FROM webhook_endpoints
            WHERE suspended_at IS NOT NULL AND next_reactivation_at <= ${now}
              AND (check_lease_until IS NULL OR check_lease_until <= ${now})
            ORDER BY next_reactivation_at LIMIT ${limit}${lock}`
          return db.updateTable("webhook_endpoints").set({ check_lease_until: leaseUntil })
            .where(amongKeys(connection.dialect, "id", due))
            .returningAll().execute()
        }).pipe(Effect.map((rows) => rows.map(fromRow))),
      countSuspended: (byTenant) =>
        query(connection, async (db): Promise<ReadonlyArray<{ tenant_id: string | null; n: unknown }>> => {
          const suspended = db.selectFrom("webhook_endpoints")
            .where("suspended_at", "is not", null).where("permanently_deactivated_at", "is", null)
          if (byTenant) return suspended.select((eb) => ["tenant_id", eb.fn.countAll().as("n")]).groupBy("tenant_id").execute()
          const total = await suspended.select((eb) => eb.fn.countAll().as("n")).executeTakeFirstOrThrow()
          return [{ tenant_id: null, n: total.n }]
        }).pipe(Effect.map((rows) =>
          rows.map((row) => ({ tenant_id: row.tenant_id, count: Number(row.n) })).filter((row) => row.count > 0)
        )),
      delete: (tenantId, id) =>
        query(connection, (db) =>
          db.deleteFrom("webhook_endpoints").where("tenant_id", "=", tenantId).where("id", "=", id)
            .executeTakeFirst())
          .pipe(Effect.map((result) => Number(result.numDeletedRows) > 0))
    })
  })
)
