import { Effect, Layer } from "effect"
import { type Kysely, sql } from "kysely"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { KyselyConnection, query } from "../../adapters/kysely/Connection.ts"
import { type Database, layer, migrate, openPostgres } from "../../adapters/kysely/KyselyStorage.ts"
import { OutboxStore } from "../../src/ports/OutboxStore.ts"
import type { StoragePorts } from "../../src/ports/StoragePorts.ts"
import { Transactor } from "../../src/ports/Transactor.ts"
import { WebhookDeliveryStore } from "../../src/ports/WebhookDeliveryStore.ts"
import { WebhookEndpointStore } from "../../src/ports/WebhookEndpointStore.ts"
import { createPostgresDatabase, PG_URL } from "../support/Databases.ts"
import { outboxEvent, seedTenant, webhookEndpointRecord } from "./Fixtures.ts"

// The outbox keeps every event and deliveries keep their history, so a claim that read a whole table
// would cost more with every event ever sent. PostgreSQL's own per-transaction statistics show how
// each claim reached its rows: through an index, never by scanning the table.
describe.skipIf(PG_URL === undefined)("PostgreSQL claims read through indexes as tables grow (needs PG_URL)", () => {
  let db: Kysely<Database>
  let drop: () => Promise<void>
  let storage: Layer.Layer<StoragePorts>
  const connection = () => KyselyConnection.of({ db, dialect: "postgres" })
  const HISTORY = 20_000
  const BURST = 3_000
  const AT = "2026-11-24T03:00:00.000Z"

  const run = <A, E>(effect: Effect.Effect<A, E, StoragePorts>) => Effect.runPromise(Effect.provide(effect, storage))

  // The connection's scan counters of `table`. They are the backend's counts not yet reported to the
  // server's totals, which may include earlier transactions': a claim's scans are a difference.
  const countersOf = (table: string) =>
    Effect.map(
      query(connection(), (trx) =>
        sql<{ seq_scan: string; idx_scan: string }>`SELECT seq_scan, idx_scan FROM pg_stat_xact_user_tables
          WHERE relname = ${table}`.execute(trx)),
      ({ rows }) => ({ seq: Number(rows[0]!.seq_scan), index: Number(rows[0]!.idx_scan) })
    )

  /** Runs `claim` in a transaction and reports the table scans and index scans it made on `table`. */
  const scansOf = <A, E>(table: string, claim: Effect.Effect<A, E, StoragePorts>) =>
    run(Transactor.use((transactor) =>
      transactor.withTransaction(Effect.gen(function*() {
        const before = yield* countersOf(table)
        const result = yield* claim
        const after = yield* countersOf(table)
        return { result, seqScans: after.seq - before.seq, indexScans: after.index - before.index }
      }))))

  beforeAll(async () => {
    const created = await createPostgresDatabase(PG_URL!)
    drop = created.drop
    db = openPostgres(created.url, { max: 2 })
    await migrate(db, "postgres")
    storage = layer(db, "postgres")
    const { tenant } = await run(seedTenant)
    const endpoint = webhookEndpointRecord(tenant.id)
    await run(WebhookEndpointStore.use((s) => s.insert(endpoint)))
    // A long history: events already fanned out, and finished deliveries.
    await sql`INSERT INTO outbox_events (id, tenant_id, type, event_id, created_at, data, fanned_out_at)
      SELECT 'evt_old_' || g, ${tenant.id}, 'contact.created', 'evt_old_' || g, ${AT}, '{}', ${AT}
      FROM generate_series(1, ${HISTORY}) AS g`.execute(db)
    await sql`INSERT INTO webhook_deliveries (id, tenant_id, webhook_endpoint_id, event_id, event_type, envelope,
        outbox_seq, status, attempt_number, max_retries, retry_strategy, completed_at, created_at)
      SELECT 'whd_old_' || g, ${tenant.id}, ${endpoint.id}, 'evt_old_' || g, 'contact.created', '{}',
        g, 'success', 1, 8, 'exponential', ${AT}, ${AT}
      FROM generate_series(1, ${HISTORY}) AS g`.execute(db)
    // And a burst of new work, more than one claim takes.
    await run(OutboxStore.use((s) => s.append(Array.from({ length: BURST }, () => outboxEvent(tenant.id)))))
    await sql`INSERT INTO webhook_deliveries (id, tenant_id, webhook_endpoint_id, event_id, event_type, envelope,
        outbox_seq, status, attempt_number, max_retries, retry_strategy, created_at)
      SELECT 'whd_new_' || g, ${tenant.id}, ${endpoint.id}, 'evt_new_' || g, 'contact.created', '{}',
        ${HISTORY} + g, 'pending', 0, 8, 'exponential', ${AT}
      FROM generate_series(1, ${BURST}) AS g`.execute(db)
    await sql`ANALYZE`.execute(db)
  }, 60_000)

  afterAll(async () => {
    await db?.destroy()
    await drop?.()
  })

  it("taking events to fan out reads the outbox through its indexes", async () => {
    const scans = await scansOf("outbox_events", WebhookDeliveryStore.use((s) => s.takeFanOut(500, { id: "lease", holder: "worker", fanned_at: AT, lease_until: AT })))
    expect(scans.result.leased).toHaveLength(500)
    expect(scans.seqScans).toBe(0)
    expect(scans.indexScans).toBeGreaterThan(0)
  })

  it("claiming due deliveries reads the deliveries through their indexes", async () => {
    const scans = await scansOf("webhook_deliveries", WebhookDeliveryStore.use((s) => s.claimDue(AT, "2026-11-24T03:02:00.000Z", 1_000)))
    expect(scans.result).toHaveLength(1_000)
    expect(scans.seqScans).toBe(0)
    expect(scans.indexScans).toBeGreaterThan(0)
  })
})
