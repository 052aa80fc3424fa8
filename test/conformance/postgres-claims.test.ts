import { Effect, Layer } from "effect"
import { sql } from "kysely"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { KyselyConnection, query } from "../../adapters/kysely/Connection.ts"
import { layer, migrate, openPostgres } from "../../adapters/kysely/KyselyStorage.ts"
import { CampaignStore } from "../../src/ports/CampaignStore.ts"
import { ContactStore } from "../../src/ports/ContactStore.ts"
import { ConversationStore } from "../../src/ports/ConversationStore.ts"
import { InboundStore } from "../../src/ports/InboundStore.ts"
import { ListStore } from "../../src/ports/ListStore.ts"
import { MessageStore } from "../../src/ports/MessageStore.ts"
import { OutboxStore } from "../../src/ports/OutboxStore.ts"
import type { StoragePorts } from "../../src/ports/StoragePorts.ts"
import { Transactor } from "../../src/ports/Transactor.ts"
import { WebhookDeliveryStore } from "../../src/ports/WebhookDeliveryStore.ts"
import { WebhookEndpointStore } from "../../src/ports/WebhookEndpointStore.ts"
import { createPostgresDatabase, PG_URL } from "../support/Databases.ts"
import { contactRecord, conversationRecord, outboxEvent, seedTenant, webhookEndpointRecord } from "./Fixtures.ts"

/**
 * Runs `work` in a transaction over `storage` and reports what it did to `table`: its sequential and
 * index scans, the rows its index scans fetched and the index entries they read. PostgreSQL's per-transaction statistics
 * (`pg_stat_xact_user_tables`) are the backend's counts not yet reported, which may include earlier
 * transactions': the work's reads are a difference.
 */
const readsOf = <A, E>(
  connection: KyselyConnection["Service"],
  storage: Layer.Layer<StoragePorts>,
  table: string,
  work: Effect.Effect<A, E, StoragePorts>
) => {
  const counters = Effect.map(
    query(connection, (trx) =>
      sql<{ seq_scan: string; idx_scan: string; idx_tup_fetch: string; entries: string }>`SELECT seq_scan, idx_scan, idx_tup_fetch,
        (SELECT coalesce(sum(pg_stat_get_xact_tuples_returned(i.indexrelid)), 0) FROM pg_index i WHERE i.indrelid = t.relid) AS entries
        FROM pg_stat_xact_user_tables t WHERE relname = ${table}`.execute(trx)),
    ({ rows }) => ({
      seq: Number(rows[0]!.seq_scan),
      index: Number(rows[0]!.idx_scan),
      fetched: Number(rows[0]!.idx_tup_fetch),
      entries: Number(rows[0]!.entries)
    })
  )
  return Effect.runPromise(Effect.provide(
    Transactor.use((transactor) =>
      transactor.withTransaction(Effect.gen(function*() {
        const before = yield* counters
        const result = yield* work
        const after = yield* counters
        return {
          result,
          seqScans: after.seq - before.seq,
          indexScans: after.index - before.index,
          fetched: after.fetched - before.fetched,
          indexEntries: after.entries - before.entries
        }
      }))),
    storage
  ))
}

/** A new migrated PostgreSQL database through `openPostgres`, its storage layer, and how to drop it. */
const freshPostgres = async (connections = 2) => {
  const created = await createPostgresDatabase(PG_URL!)
  const db = openPostgres(created.url, { max: connections })
  await migrate(db, "postgres")
  const storage = layer(db, "postgres")
  return {
    db,
    storage,
    connection: KyselyConnection.of({ db, dialect: "postgres" }),
    run: <A, E>(effect: Effect.Effect<A, E, StoragePorts>) => Effect.runPromise(Effect.provide(effect, storage)),
    close: async () => {
      await db.destroy()
      await created.drop()
    }
  }
}

// The outbox keeps every event and deliveries keep their history, so a claim that read a whole table
// would cost more with every event ever sent. PostgreSQL's own per-transaction statistics show how
// each claim reached its rows: through an index, never by scanning the table.
describe.skipIf(PG_URL === undefined)("PostgreSQL claims read through indexes as tables grow (needs PG_URL)", () => {
  let pg: Awaited<ReturnType<typeof freshPostgres>>
  const HISTORY = 20_000
  const BURST = 3_000
  const AT = "2026-11-24T03:00:00.000Z"

  const run = <A, E>(effect: Effect.Effect<A, E, StoragePorts>) => pg.run(effect)

  /** Runs `claim` in a transaction and reports the table scans and index scans it made on `table`. */
  const scansOf = <A, E>(table: string, claim: Effect.Effect<A, E, StoragePorts>) => readsOf(pg.connection, pg.storage, table, claim)

  beforeAll(async () => {
    pg = await freshPostgres()
    const { tenant } = await run(seedTenant)
    const endpoint = webhookEndpointRecord(tenant.id)
    await run(WebhookEndpointStore.use((s) => s.insert(endpoint)))
    // A long history: events already fanned out, and finished deliveries.
    await sql`INSERT INTO outbox_events (id, tenant_id, type, event_id, created_at, data, fanned_out_at)
      SELECT 'evt_old_' || g, ${tenant.id}, 'contact.created', 'evt_old_' || g, ${AT}, '{}', ${AT}
      FROM generate_series(1, ${HISTORY}) AS g`.execute(pg.db)
    await sql`INSERT INTO webhook_deliveries (id, tenant_id, webhook_endpoint_id, event_id, event_type, envelope,
        outbox_seq, status, attempt_number, max_retries, retry_strategy, completed_at, created_at)
      SELECT 'whd_old_' || g, ${tenant.id}, ${endpoint.id}, 'evt_old_' || g, 'contact.created', '{}',
        g, 'success', 1, 8, 'exponential', ${AT}, ${AT}
      FROM generate_series(1, ${HISTORY}) AS g`.execute(pg.db)
    // And a burst of new work, more than one claim takes.
    await run(OutboxStore.use((s) => s.append(Array.from({ length: BURST }, () => outboxEvent(tenant.id)))))
    await sql`INSERT INTO webhook_deliveries (id, tenant_id, webhook_endpoint_id, event_id, event_type, envelope,
        outbox_seq, status, attempt_number, max_retries, retry_strategy, created_at)
      SELECT 'whd_new_' || g, ${tenant.id}, ${endpoint.id}, 'evt_new_' || g, 'contact.created', '{}',
        ${HISTORY} + g, 'pending', 0, 8, 'exponential', ${AT}
      FROM generate_series(1, ${BURST}) AS g`.execute(pg.db)
    await sql`ANALYZE`.execute(pg.db)
  }, 60_000)

  afterAll(() => pg?.close())

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

// Production runs autovacuum, but a table loaded in one go stays planned from its last statistics for a
// while: here they are taken while every table is empty, then the tables fill. The hot statements must
// still reach their rows through an index led by what they look up, never a scan of the table nor a
// walk of the whole tenant through an index led by the tenant.
describe.skipIf(PG_URL === undefined)("PostgreSQL hot statements with statistics taken while the tables were empty (needs PG_URL)", () => {
  let pg: Awaited<ReturnType<typeof freshPostgres>>
  let tenantId: string
  const CONTACTS = 3_000
  const AT = "2026-12-07T03:00:00.000Z"
  const phoneOf = (n: number) => `+4477009${String(n).padStart(5, "0")}`
  const run = <A, E>(effect: Effect.Effect<A, E, StoragePorts>) => pg.run(effect)

  const readsIn = <A, E>(table: string, work: Effect.Effect<A, E, StoragePorts>) => readsOf(pg.connection, pg.storage, table, work)

  beforeAll(async () => {
    pg = await freshPostgres()
    tenantId = (await run(seedTenant)).tenant.id
    await sql`ANALYZE`.execute(pg.db)
    await sql`INSERT INTO contacts (id, tenant_id, name, phone, custom_fields, created_at, updated_at)
      SELECT 'contact_' || g, ${tenantId}, 'C' || g, '+4477009' || lpad(g::text, 5, '0'), '{}', ${AT}, ${AT}
      FROM generate_series(1, ${CONTACTS}) AS g`.execute(pg.db)
    await sql`INSERT INTO outbox_events (id, tenant_id, type, event_id, created_at, data, fanned_out_at)
      SELECT 'evt_' || g, ${tenantId}, 'contact.created', 'evt_' || g, ${AT}, '{}', CASE WHEN g <= 9900 THEN ${AT} END
      FROM generate_series(1, 10000) AS g`.execute(pg.db)
    await sql`INSERT INTO lists (id, tenant_id, name, slug, is_default, type, created_at)
      VALUES ('list_1', ${tenantId}, 'All', 'all', 0, 'static', ${AT})`.execute(pg.db)
    await sql`INSERT INTO list_subscriptions (tenant_id, list_id, contact_id, status, optin_method, subscribed_at, updated_at)
      SELECT ${tenantId}, 'list_1', 'contact_' || g, 'subscribed', 'import', ${AT}, ${AT}
      FROM generate_series(1, ${CONTACTS}) AS g`.execute(pg.db)
    await sql`INSERT INTO conversations (id, tenant_id, channel_id, contact_id, status, kind, created_at)
      SELECT 'conversation_' || g, ${tenantId}, 'channel_1', 'contact_' || g, 'open', 'chat', ${AT}
      FROM generate_series(1, ${CONTACTS}) AS g`.execute(pg.db)
    await sql`INSERT INTO campaign_recipients (tenant_id, campaign_id, seq, contact_id, state, batch_day, planned_at, updated_at)
      SELECT ${tenantId}, 'campaign_1', g, 'contact_' || g, 'sent', 0, ${AT}, ${AT}
      FROM generate_series(1, ${CONTACTS}) AS g`.execute(pg.db)
  }, 60_000)

  afterAll(() => pg?.close())

  it("the library's connections price sequential scans out and never compile a query (jit off)", async () => {
    const { rows } = await sql<{ seqscan: string; jit: string; plans: string }>`SELECT current_setting('enable_seqscan') AS seqscan,
      current_setting('jit') AS jit, current_setting('plan_cache_mode') AS plans`.execute(pg.db)
    expect(rows[0]).toEqual({ seqscan: "off", jit: "off", plans: "auto" })
  })

  it("an inbound batch finds its senders by phone, reading their rows alone", async () => {
    const senders = [7, 700, 2999, 1500, 42].map((n) => contactRecord(tenantId, { phone: phoneOf(n), email: null }))
    const reads = await readsIn("contacts", ContactStore.use((s) => s.findOrInsertByPhones(tenantId, senders)))
    expect(reads.result.inserted.size).toBe(0)
    expect(reads.result.contacts.map((c) => c.phone).sort()).toEqual(senders.map((c) => c.phone).sort())
    expect(reads.seqScans).toBe(0)
    expect(reads.fetched).toBeLessThanOrEqual(senders.length)
  })

  it("a campaign's page of contacts reads their subscriptions alone", async () => {
    // A page as the audience reads it: 500 contacts of the tenant's 3,000.
    const contactIds = Array.from({ length: 500 }, (_, i) => `contact_${1 + i * 6}`)
    const reads = await readsIn("list_subscriptions", ListStore.use((s) => s.subscriptionsAmong(tenantId, contactIds)))
    expect(reads.result.map((row) => row.contact_id).sort()).toEqual([...contactIds].sort())
    expect(reads.seqScans).toBe(0)
    expect(reads.fetched).toBeLessThanOrEqual(contactIds.length)
  })

  it("taking events to fan out reads only the waiting events", async () => {
    const reads = await readsIn("outbox_events", WebhookDeliveryStore.use((s) => s.takeFanOut(500, { id: "lease", holder: "worker", fanned_at: AT, lease_until: AT })))
    expect(reads.result.leased.length + reads.result.unwanted).toBe(100)
    expect(reads.seqScans).toBe(0)
    expect(reads.fetched).toBeLessThanOrEqual(2 * 100)
  })

  it("an inbound batch finds its contacts' open conversations, reading their index entries alone", async () => {
    const pairs = [7, 700, 2999, 1500, 42].map((n) =>
      conversationRecord(tenantId, { channel_id: "channel_1", contact_id: `contact_${n}`, created_at: AT }))
    const reads = await readsIn("conversations", ConversationStore.use((s) => s.openMany(tenantId, pairs)))
    expect(reads.result.inserted.size).toBe(0)
    expect(reads.result.conversations.map((c) => c.contact_id).sort()).toEqual(pairs.map((p) => p.contact_id).sort())
    expect(reads.seqScans).toBe(0)
    expect(reads.indexEntries).toBeLessThanOrEqual(2 * pairs.length)
  })

  it("a campaign's look for recipients in a state none of its recipients is in reads none of them", async () => {
    const reads = await readsIn("campaign_recipients", CampaignStore.use((s) =>
      Effect.all([
        s.recipientsIn(tenantId, "campaign_1", "sending", { plannedBy: null, afterSeq: null, limit: 500 }),
        s.recipientsIn(tenantId, "campaign_1", "sent", { plannedBy: null, afterSeq: 2990, limit: 500 })
      ])))
    expect(reads.result[0]).toEqual([])
    expect(reads.result[1].map((r) => r.seq)).toEqual([2991, 2992, 2993, 2994, 2995, 2996, 2997, 2998, 2999, 3000])
    expect(reads.seqScans).toBe(0)
    expect(reads.fetched).toBeLessThanOrEqual(10)
    expect(reads.indexEntries).toBeLessThanOrEqual(12)
  })
})

// As above, with the statements run while the tables held a row or two each (statistics taken then),
// then the tables grown to thousands of rows: what is looked up by key is read by that key, never
// through the rows that share a channel, a campaign or a pending status with it.
describe.skipIf(PG_URL === undefined)("PostgreSQL hot statements run while the tables were nearly empty, then grown (needs PG_URL)", () => {
  let pg: Awaited<ReturnType<typeof freshPostgres>>
  let tenantId: string
  const ROWS = 3_000
  const AT = "2026-12-07T03:00:00.000Z"
  const run = <A, E>(effect: Effect.Effect<A, E, StoragePorts>) => pg.run(effect)
  const readsIn = <A, E>(table: string, work: Effect.Effect<A, E, StoragePorts>) => readsOf(pg.connection, pg.storage, table, work)
  const phoneOf = (n: number) => `+4477008${String(n).padStart(5, "0")}`
  /**
   * A contact, its open conversation and a message for each of `ids`: sent (`wamid.<n>`), or a send
   * still pending without the operator's id; and a pending payload.
   */
  const fill = async (ids: ReadonlyArray<number>, message: "sent" | "pending") => {
    const list = sql`unnest(${`{${ids.join(",")}}`}::int[])`
    await sql`INSERT INTO contacts (id, tenant_id, name, phone, custom_fields, created_at, updated_at)
      SELECT 'contact_' || g, ${tenantId}, 'C' || g, '+4477008' || lpad(g::text, 5, '0'), '{}', ${AT}, ${AT} FROM ${list} AS g`.execute(pg.db)
    await sql`INSERT INTO conversations (id, tenant_id, channel_id, contact_id, status, kind, created_at)
      SELECT 'conversation_' || g, ${tenantId}, 'channel_1', 'contact_' || g, 'open', 'chat', ${AT} FROM ${list} AS g`.execute(pg.db)
    await sql`INSERT INTO messages (id, tenant_id, conversation_id, channel_id, contact_id, direction, message_type, content, status,
        external_id, created_at, sent_at)
      SELECT 'message_' || g, ${tenantId}, 'conversation_' || g, 'channel_1', 'contact_' || g, 'outbound', 'text', '{}', ${message},
        CASE WHEN ${message} = 'sent' THEN 'wamid.' || g END, ${AT}, CASE WHEN ${message} = 'sent' THEN ${AT} END FROM ${list} AS g`.execute(pg.db)
    await sql`INSERT INTO inbound_payloads (id, source, body, received_at, status, attempts, next_attempt_at)
      SELECT 'payload_' || g, 'chatapp', '\\x7b7d'::bytea, ${AT}, 'pending', 0, ${AT} FROM ${list} AS g`.execute(pg.db)
    await sql`INSERT INTO campaign_recipients (tenant_id, campaign_id, seq, contact_id, channel_id, state, batch_day, planned_at, external_id, updated_at)
      SELECT ${tenantId}, 'campaign_1', g, 'contact_' || g, 'channel_1', ${message === "sent" ? "sending" : "pending"}, 0, ${AT},
        CASE WHEN ${message} = 'sent' THEN 'wamid.' || g END, ${AT} FROM ${list} AS g`.execute(pg.db)
    await sql`INSERT INTO webhook_deliveries (id, tenant_id, webhook_endpoint_id, event_id, event_type, envelope,
        outbox_seq, status, attempt_number, max_retries, retry_strategy, created_at)
      SELECT 'whd_' || g, ${tenantId}, 'endpoint_1', 'evt_' || g, 'contact.created', '{}', g,
        CASE WHEN ${message} = 'sent' THEN 'pending' ELSE 'success' END, 0, 8, 'exponential', ${AT}
      FROM ${list} AS g`.execute(pg.db)
    await sql`INSERT INTO outbox_events (id, tenant_id, type, event_id, created_at, data, fanned_out_at)
      SELECT 'evt_' || g, ${tenantId}, 'contact.created', 'evt_' || g, ${AT}, '{}', CASE WHEN ${message} = 'sent' THEN NULL ELSE ${AT} END
      FROM ${list} AS g`.execute(pg.db)
  }
  const settled = (id: string) => ({
    id,
    external_id: null,
    status: "failed" as const,
    error: null,
    sent_at: null,
    delivered_at: null,
    read_at: null,
    failed_at: AT,
    updated_at: AT
  })
  const ns = [7, 700, 2999, 1500, 42]
  const LATER = "2026-12-07T03:02:00.000Z"
  const statements = {
    contacts: () => ContactStore.use((s) => s.findOrInsertByPhones(tenantId, ns.map((n) => contactRecord(tenantId, { phone: phoneOf(n), email: null })))),
    open: () =>
      ConversationStore.use((s) =>
        s.openMany(tenantId, ns.map((n) => conversationRecord(tenantId, { channel_id: "channel_1", contact_id: `contact_${n}`, created_at: AT })))),
    note: () => ConversationStore.use((s) => s.noteMessages(tenantId, ns.map((n) => ({ id: `conversation_${n}`, at: AT, inbound_at: AT })))),
    messages: () => MessageStore.use((s) => s.findByExternalIds(tenantId, "channel_1", ns.map((n) => `wamid.${n}`))),
    // The looked-up messages are sent: these change nothing, and must not walk the pending sends to find so.
    settle: () => MessageStore.use((s) => s.settlePending(tenantId, ns.map((n) => settled(`message_${n}`)))),
    attach: () => MessageStore.use((s) => s.attachExternalIds(tenantId, "channel_1", ns.map((n) => ({ id: `message_${n}`, external_id: `wamid.x${n}` })))),
    drop: () => MessageStore.use((s) => s.deletePending(tenantId, ns.map((n) => `message_${n}`))),
    // Payloads another holder has: nothing finished, and the pending ones not walked.
    finish: () =>
      InboundStore.use((s) => s.finishMany(ns.map((n) => ({ id: `payload_${n}`, holder: "another", outcome: { status: "processed" as const, note: null } })), AT)),
    // A campaign's recipients in flight, by the statuses' operator ids and by their place; these expect
    // a state they are not in, so nothing changes.
    recipients: () => CampaignStore.use((s) => s.findRecipientsByExternalIds(tenantId, "channel_1", ns.map((n) => `wamid.${n}`))),
    settleRecipients: () =>
      CampaignStore.use((s) =>
        s.settleRecipients(tenantId, "campaign_1", ns.map((n) => ({
          seq: n,
          expected: "pending" as const,
          state: "sent" as const,
          handed_at: AT,
          message_id: `message_${n}`,
          external_id: `wamid.${n}`,
          error: null,
          updated_at: AT
        })))),
    moveRecipients: () =>
      CampaignStore.use((s) =>
        s.moveRecipients(tenantId, ns.map((n) => ({ campaign_id: "campaign_1", seq: n, expected: "read" as const, state: "failed" as const, error: null, updated_at: AT })))),
    // Webhook deliveries' states, read and written back as they are.
    // Claims: the looked-up events are taken in the first runs, so later takes find none waiting, and
    // must not read the fanned-out ones to find so; deliveries and payloads due are claimed by due order.
    fanOut: () => WebhookDeliveryStore.use((s) => s.takeFanOut(500, { id: "lease", holder: "worker", fanned_at: AT, lease_until: LATER })),
    due: () => WebhookDeliveryStore.use((s) => s.claimDue(AT, LATER, 100)),
    payloads: () => InboundStore.use((s) => s.claim({ holder: "worker", leaseUntil: LATER, limit: 50, now: AT })),
    deliveries: () =>
      WebhookDeliveryStore.use((s) =>
        Effect.flatMap(s.getStates(ns.map((n) => ({ id: `whd_${n}`, tenant_id: tenantId }))), (states) => s.saveMany(states.map((state) => ({ state })))))
  }

  beforeAll(async () => {
    pg = await freshPostgres(1)
    tenantId = (await run(seedTenant)).tenant.id
    await run(WebhookEndpointStore.use((s) => s.insert(webhookEndpointRecord(tenantId, { id: "endpoint_1" }))))
    // The rows the statements look up alone, statistics taken, the statements run (and their prepared
    // forms made) a few times. Then the tables grow to thousands of rows.
    await fill(ns, "sent")
    await sql`ANALYZE`.execute(pg.db)
    const all: ReadonlyArray<() => Effect.Effect<unknown, unknown, StoragePorts>> = Object.values(statements)
    for (let i = 0; i < 8; i++) for (const statement of all) await run(statement())
    await fill(Array.from({ length: ROWS }, (_, i) => i + 1).filter((n) => !ns.includes(n)), "pending")
  }, 60_000)

  afterAll(() => pg?.close())

  it("they run by generic plans made on the nearly empty tables, but for those never prepared", async () => {
    const { rows } = await sql<{ name: string; generic_plans: string }>`SELECT name, generic_plans FROM pg_prepared_statements
      WHERE name LIKE 'omni_%'`.execute(pg.db)
    const generic = rows.filter((row) => Number(row.generic_plans) > 0).map((row) => row.name)
    expect(generic).toEqual(expect.arrayContaining([
      "omni_contacts-by-phones",
      "omni_conversations-note",
      "omni_conversations-open-of",
      "omni_deliveries-save",
      "omni_deliveries-states",
      "omni_fanout-take",
      "omni_inbound-finish",
      "omni_messages-attach-external-ids",
      "omni_messages-by-external-ids",
      "omni_messages-delete-pending",
      "omni_messages-settle-pending"
    ]))
    expect(rows.map((row) => row.name).filter((name) => name.startsWith("omni_campaign-recipients"))).toEqual([])
  })

  it("claims of outbox events, deliveries and payloads read only what they take", async () => {
    const fanOut = await readsIn("outbox_events", statements.fanOut())
    expect(fanOut.result.leased.length + fanOut.result.unwanted).toBe(0)
    // The looked-up deliveries are due again (their saved states let their leases go).
    const due = await readsIn("webhook_deliveries", statements.due())
    expect(due.result.map((d) => d.id).sort()).toEqual(ns.map((n) => `whd_${n}`).sort())
    const payloads = await readsIn("inbound_payloads", statements.payloads())
    expect(payloads.result).toHaveLength(50)
    // A claim reads each row it takes twice (found in due order, then updated by id), and passes over
    // the rows leased earlier: never the thousands of others.
    expect({
      seqScans: fanOut.seqScans + due.seqScans + payloads.seqScans,
      fanOut: fanOut.fetched <= 2 * ns.length,
      due: due.fetched <= 2 * ns.length,
      payloads: payloads.fetched <= 2 * (50 + ns.length)
    }).toEqual({ seqScans: 0, fanOut: true, due: true, payloads: true })
  })

  it("an inbound batch's senders, open conversations, conversation times and statuses' messages are read by their keys", async () => {
    const contacts = await readsIn("contacts", statements.contacts())
    expect(contacts.result.contacts.map((c) => c.phone).sort()).toEqual(ns.map(phoneOf).sort())
    const open = await readsIn("conversations", statements.open())
    expect(open.result.inserted.size).toBe(0)
    const note = await readsIn("conversations", statements.note())
    const messages = await readsIn("messages", statements.messages())
    expect(messages.result.map((m) => m.external_id).sort()).toEqual(ns.map((n) => `wamid.${n}`).sort())
    for (const reads of [contacts, open, note, messages]) {
      expect(reads.seqScans).toBe(0)
      expect(reads.fetched).toBeLessThanOrEqual(2 * ns.length)
      expect(reads.indexEntries).toBeLessThanOrEqual(3 * ns.length)
    }
  })

  it("a campaign's statuses and outcomes, and webhook deliveries' states, reach their rows by key", async () => {
    const recipients = await readsIn("campaign_recipients", statements.recipients())
    expect(recipients.result.map((r) => r.seq).sort((a, b) => a - b)).toEqual([...ns].sort((a, b) => a - b))
    const settleRecipients = await readsIn("campaign_recipients", statements.settleRecipients())
    const moveRecipients = await readsIn("campaign_recipients", statements.moveRecipients())
    expect([settleRecipients.result.size, moveRecipients.result.size]).toEqual([0, 0])
    const deliveries = await readsIn("webhook_deliveries", statements.deliveries())
    expect(deliveries.result.size).toBe(ns.length)
    const reads = { recipients, settleRecipients, moveRecipients, deliveries }
    expect(Object.fromEntries(Object.entries(reads).map(([name, r]) => [name, { seqScans: r.seqScans, fetched: r.fetched <= 2 * ns.length }])))
      .toEqual(Object.fromEntries(Object.keys(reads).map((name) => [name, { seqScans: 0, fetched: true }])))
  })

  it("settling, naming and dropping sends and finishing payloads reach their rows by key, never through the pending ones", async () => {
    const settle = await readsIn("messages", statements.settle())
    const attach = await readsIn("messages", statements.attach())
    const drop = await readsIn("messages", statements.drop())
    const finish = await readsIn("inbound_payloads", statements.finish())
    expect([settle.result.size, attach.result.size, finish.result.size]).toEqual([0, 0, 0])
    const reads = { settle, attach, drop, finish }
    expect(Object.fromEntries(Object.entries(reads).map(([name, r]) => [name, { seqScans: r.seqScans, fetched: r.fetched <= 2 * ns.length }])))
      .toEqual(Object.fromEntries(Object.keys(reads).map((name) => [name, { seqScans: 0, fetched: true }])))
  })
})
