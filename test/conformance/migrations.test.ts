import { type Kysely, sql } from "kysely"
import { type Migration, Migrator } from "kysely/migration"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest"
import { type Database, migrate, openPglite, openPostgres, openSqlite } from "../../adapters/kysely/KyselyStorage.ts"
import { type Dialect, migrationsThrough } from "../../adapters/kysely/Migrations.ts"
import type { ChannelRecord } from "../../src/ports/ChannelStore.ts"
import { createPostgresDatabase, PG_URL, testDatabases } from "../support/Databases.ts"
import { billingAccountRecord, channelRecord, conversationRecord, tenantRecord, userRecord } from "./Fixtures.ts"

/** How the database defines index `name`, as its own catalogue prints it. */
const indexDefinition = async (db: Kysely<Database>, dialect: Dialect, name: string): Promise<string | undefined> => {
  const { rows } = dialect === "sqlite"
    ? await sql<{ definition: string }>`SELECT sql AS definition FROM sqlite_master WHERE type = 'index' AND name = ${name}`
      .execute(db)
    : await sql<{ definition: string }>`SELECT indexdef AS definition FROM pg_indexes WHERE indexname = ${name}`.execute(db)
  return rows[0]?.definition
}

const pgUrl = PG_URL

/** A database of each kind the suites run on, with no table yet. */
const emptyDatabases: ReadonlyArray<{
  readonly name: string
  readonly open: () => Promise<{ readonly db: Kysely<Database>; readonly dialect: Dialect; readonly close: () => Promise<void> }>
}> = [
  {
    name: "sqlite-memory",
    open: async () => {
      const db = openSqlite(":memory:")
      return { db, dialect: "sqlite", close: () => db.destroy() }
    }
  },
  {
    name: "sqlite-file",
    open: async () => {
      const dir = mkdtempSync(join(tmpdir(), "omni-sqlite-"))
      const db = openSqlite(join(dir, "test.sqlite"))
      return {
        db,
        dialect: "sqlite",
        close: async () => {
          await db.destroy()
          rmSync(dir, { recursive: true, force: true })
        }
      }
    }
  },
  {
    name: "pglite",
    open: async () => {
      const db = await openPglite()
      return { db, dialect: "postgres", close: () => db.destroy() }
    }
  },
  ...(pgUrl === undefined ? [] : [{
    name: "postgres",
    open: async () => {
      const created = await createPostgresDatabase(pgUrl)
      const db = openPostgres(created.url)
      return {
        db,
        dialect: "postgres" as const,
        close: async () => {
          await db.destroy()
          await created.drop()
        }
      }
    }
  }])
]

// The migrations a database had run before 0007, 0010 and 0019 landed.
const UP_TO_0006 = migrationsThrough("2026_11_24_0006_webhook_fanout_leases")
const UP_TO_0009 = migrationsThrough("2026_11_26_0009_templates_and_sending_limits")
const UP_TO_0018 = migrationsThrough("2026_11_26_0018_inbound_trace_context")

/** Stores a new tenant (and its owner and billing account) directly, as the schema of any version holds it. */
const insertTenant = async (db: Kysely<Database>): Promise<string> => {
  const user = userRecord()
  const account = billingAccountRecord(user.id)
  const { is_trial, is_active, ai_features_enabled, multi_agent_mode, sms_enabled, ...tenant } = tenantRecord(account.id)
  const flag = (value: boolean): 0 | 1 => (value ? 1 : 0)
  await db.insertInto("users").values(user).execute()
  await db.insertInto("billing_accounts").values(account).execute()
  await db.insertInto("tenants").values({
    ...tenant,
    is_trial: flag(is_trial),
    is_active: flag(is_active),
    ai_features_enabled: flag(ai_features_enabled),
    multi_agent_mode: flag(multi_agent_mode),
    sms_enabled: flag(sms_enabled)
  }).execute()
  return tenant.id
}

const insertChannels = (db: Kysely<Database>, channels: ReadonlyArray<ChannelRecord>) =>
  db.insertInto("channels")
    .values(channels.map((c) => ({ ...c, config: JSON.stringify(c.config), secrets: JSON.stringify(c.secrets) })))
    .execute()

const migrateUpTo0006 = (db: Kysely<Database>, dialect: Dialect) => migrateThrough(db, dialect, UP_TO_0006)

const migrateThrough = async (
  db: Kysely<Database>,
  dialect: Dialect,
  migrations: ReadonlyArray<readonly [string, (db: Kysely<unknown>, dialect: Dialect) => Promise<void>]>
) => {
  const migrator = new Migrator({
    db,
    provider: {
      getMigrations: async () =>
        Object.fromEntries(migrations.map(([name, up]): [string, Migration] => [name, { up: (m) => up(m, dialect) }]))
    },
    migrationTableName: "omni_migrations",
    migrationLockTableName: "omni_migrations_lock"
  })
  const { error } = await migrator.migrateToLatest()
  if (error !== undefined) throw error
}

describe.each(testDatabases)("migrations on $name", ({ open }) => {
  // These read the catalogue only: one migrated database serves them all.
  let opened: Awaited<ReturnType<typeof open>>
  beforeAll(async () => {
    opened = await open()
  })
  afterAll(() => opened?.close())

  it("give open chat conversations a partial unique index and pending inbound payloads a partial index of their own", async () => {
    const { db, dialect } = opened
    expect(await indexDefinition(db, dialect, "conversations_open_unique"))
      .toMatch(/unique index.*\(.*tenant_id.*channel_id.*contact_id.*\).*where.*status.*=.*'open'.*and.*kind.*=.*'chat'/i)
    expect(await indexDefinition(db, dialect, "inbound_payloads_pending_idx"))
      .toMatch(/\(.*next_attempt_at.*received_at.*\).*where.*status.*=.*'pending'/i)
  })

  it("give lists unique slugs and one default among live lists, and subscriptions indexes by contact and for paging a list", async () => {
    const { db, dialect } = opened
    expect(await indexDefinition(db, dialect, "lists_tenant_slug_unique"))
      .toMatch(/unique index.*\(.*tenant_id.*slug.*\).*where.*deleted_at.*is null/i)
    expect(await indexDefinition(db, dialect, "lists_tenant_default_unique"))
      .toMatch(/unique index.*\("?tenant_id"?\).*where.*is_default.*=.*1.*and.*deleted_at.*is null/i)
    expect(await indexDefinition(db, dialect, "list_subscriptions_tenant_contact_idx"))
      .toMatch(/\(.*tenant_id.*contact_id.*\)/i)
    expect(await indexDefinition(db, dialect, "list_subscriptions_tenant_list_status_idx"))
      .toMatch(/\(.*tenant_id.*list_id.*status.*contact_id.*\)/i)
  })

  it("give campaigns a partial index of those with a next run and one for listing, and recipients indexes for paging, duplicates, status reports and channel history", async () => {
    const { db, dialect } = opened
    expect(await indexDefinition(db, dialect, "campaigns_next_run_idx"))
      .toMatch(/\("?next_run_at"?\).*where.*next_run_at.*is not null/i)
    expect(await indexDefinition(db, dialect, "campaigns_tenant_created_idx"))
      .toMatch(/\(.*tenant_id.*created_at.*id.*\)/i)
    expect(await indexDefinition(db, dialect, "campaign_recipients_tenant_state_idx"))
      .toMatch(/\(.*tenant_id.*campaign_id.*state.*planned_at.*seq.*\)/i)
    expect(await indexDefinition(db, dialect, "campaign_recipients_tenant_contact_idx"))
      .toMatch(/\(.*tenant_id.*campaign_id.*contact_id.*\)/i)
    expect(await indexDefinition(db, dialect, "campaign_recipients_channel_external_idx"))
      .toMatch(/\(.*channel_id.*external_id.*\)/i)
    expect(await indexDefinition(db, dialect, "campaign_recipients_tenant_channel_handed_idx"))
      .toMatch(/\(.*tenant_id.*channel_id.*handed_at.*\)/i)
  })

  it("give flows indexes for listing definitions and finding them by platform flow id, unique version numbers and token hashes, sessions indexes for listing with filters, and unique custom field keys and tag names", async () => {
    const { db, dialect } = opened
    expect(await indexDefinition(db, dialect, "flow_definitions_tenant_created_idx"))
      .toMatch(/\(.*tenant_id.*created_at.*id.*\)/i)
    expect(await indexDefinition(db, dialect, "flow_definitions_meta_flow_idx"))
      .toMatch(/\("?meta_flow_id"?\)/i)
    expect(await indexDefinition(db, dialect, "flow_versions_definition_number_unique"))
      .toMatch(/unique index.*\(.*definition_id.*number.*\)/i)
    expect(await indexDefinition(db, dialect, "flow_sessions_token_unique"))
      .toMatch(/unique index.*\("?flow_token_hash"?\)/i)
    expect(await indexDefinition(db, dialect, "flow_sessions_tenant_definition_created_idx"))
      .toMatch(/\(.*tenant_id.*definition_id.*created_at.*id.*\)/i)
    expect(await indexDefinition(db, dialect, "flow_sessions_tenant_definition_status_idx"))
      .toMatch(/\(.*tenant_id.*definition_id.*status.*created_at.*id.*\)/i)
    expect(await indexDefinition(db, dialect, "flow_sessions_tenant_definition_contact_idx"))
      .toMatch(/\(.*tenant_id.*definition_id.*contact_id.*created_at.*id.*\)/i)
    expect(await indexDefinition(db, dialect, "custom_fields_tenant_key_unique"))
      .toMatch(/unique index.*\(.*tenant_id.*key.*\)/i)
    expect(await indexDefinition(db, dialect, "tags_tenant_name_unique"))
      .toMatch(/unique index.*\(.*tenant_id.*name.*\)/i)
  })
})

describe.each(emptyDatabases)("migrations from an older schema on $name", ({ name, open }) => {
  // Migration 0005 was edited after it landed: as first landed (commit 917d23a) it left 0004's index
  // over every outbox event in place. Such a database, migrated on, gets the partial index too.
  it("give a database migrated with 0005 as first landed the partial index on unfanned outbox events", async () => {
    const fresh = testDatabases.find((d) => d.name === name)!
    const reference = await fresh.open()
    const wanted = await indexDefinition(reference.db, reference.dialect, "outbox_events_unfanned_idx").finally(reference.close)
    expect(wanted).toMatch(/where.*fanned_out_at.*is null/i)

    const { db, dialect, close } = await open()
    try {
      await migrateUpTo0006(db, dialect)
      await db.schema.dropIndex("outbox_events_unfanned_idx").execute()
      await db.schema.createIndex("outbox_events_unfanned_idx").on("outbox_events").columns(["fanned_out_at", "seq"]).execute()
      expect(await indexDefinition(db, dialect, "outbox_events_unfanned_idx")).not.toMatch(/where/i)

      await migrate(db, dialect)
      expect(await indexDefinition(db, dialect, "outbox_events_unfanned_idx")).toBe(wanted)
    } finally {
      await close()
    }
  }, 120_000)

  // Migration 0010 gives conversations a kind and narrows conversations_open_unique to chat ones.
  it("give the conversations stored before 0010 the chat kind, still one open per contact and channel", async () => {
    const { db, dialect, close } = await open()
    try {
      await migrateThrough(db, dialect, UP_TO_0009)
      const tenant = { id: await insertTenant(db) }
      const { kind: _kind, ...open } = conversationRecord(tenant.id)
      // Before 0010 the table has no kind column, which the current row type requires.
      await sql`INSERT INTO conversations (id, tenant_id, channel_id, contact_id, status, created_at)
        VALUES (${open.id}, ${open.tenant_id}, ${open.channel_id}, ${open.contact_id}, 'open', ${open.created_at})`.execute(db)

      await migrate(db, dialect)

      expect(await db.selectFrom("conversations").select(["id", "kind"]).where("tenant_id", "=", tenant.id).execute())
        .toEqual([{ id: open.id, kind: "chat" }])
      const again = conversationRecord(tenant.id, { channel_id: open.channel_id, contact_id: open.contact_id })
      await expect(db.insertInto("conversations").values(again).execute()).rejects.toThrow(/unique|duplicate/i)
      const thread = { ...again, kind: "email" as const }
      await db.insertInto("conversations").values(thread).execute()
      expect(await db.selectFrom("conversations").select("id").where("tenant_id", "=", tenant.id).orderBy("id").execute())
        .toEqual([{ id: open.id }, { id: thread.id }].sort((x, y) => (x.id < y.id ? -1 : 1)))
    } finally {
      await close()
    }
  }, 120_000)

  // Migration 0019 allows one active channel per number; numbers active in several channels before it
  // keep the oldest (created_at, then id) and the others are disconnected.
  it("settle a number active in several channels before 0019 by keeping the oldest and disconnecting the others, and refuse another after", async () => {
    const { db, dialect, close } = await open()
    const warn = vi.spyOn(console, "warn").mockImplementation(() => undefined)
    try {
      await migrateThrough(db, dialect, UP_TO_0018)
      const [a, b] = [await insertTenant(db), await insertTenant(db)]
      const prefix = globalThis.crypto.randomUUID()
      const taken = channelRecord(a)
      const number = taken.external_id
      // The oldest holder is in B; two later ones, created at one instant, in A and B.
      const oldest = channelRecord(b, { id: `${prefix}-z`, external_id: number, created_at: "2026-11-20T08:00:00.000Z" })
      const laterOfA = channelRecord(a, { id: `${prefix}-a`, external_id: number, created_at: "2026-11-21T09:00:00.000Z" })
      const laterOfB = channelRecord(b, { id: `${prefix}-b`, external_id: number, created_at: "2026-11-21T09:00:00.000Z" })
      const alreadyGone = channelRecord(a, {
        external_id: number,
        status: "disconnected",
        created_at: "2026-11-19T08:00:00.000Z",
        updated_at: "2026-11-19T09:00:00.000Z",
        disconnected_at: "2026-11-19T09:00:00.000Z"
      })
      // A second number held twice from one instant: the smaller id is kept.
      const twin = channelRecord(a, { id: `${prefix}-c`, created_at: "2026-11-21T09:00:00.000Z" })
      const twinLater = channelRecord(b, { id: `${prefix}-d`, external_id: twin.external_id, created_at: "2026-11-21T09:00:00.000Z" })
      const alone = channelRecord(a)
      const otherPlatform = channelRecord(b, { platform: "sms", external_id: number })
      await insertChannels(db, [laterOfB, oldest, alreadyGone, laterOfA, twinLater, twin, alone, otherPlatform])

      await migrate(db, dialect)

      const rows = await db.selectFrom("channels").select(["id", "status", "updated_at", "disconnected_at"])
        .where("tenant_id", "in", [a, b]).orderBy("id").execute()
      const byId = new Map(rows.map((row) => [row.id, row]))
      for (const kept of [oldest, twin, alone, otherPlatform]) {
        expect(byId.get(kept.id)).toEqual({ id: kept.id, status: "active", updated_at: null, disconnected_at: null })
      }
      expect(byId.get(alreadyGone.id)).toEqual({
        id: alreadyGone.id,
        status: "disconnected",
        updated_at: "2026-11-19T09:00:00.000Z",
        disconnected_at: "2026-11-19T09:00:00.000Z"
      })
      for (const settled of [laterOfA, laterOfB, twinLater]) {
        const row = byId.get(settled.id)!
        expect(row.status).toBe("disconnected")
        expect(row.disconnected_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
        expect(row.updated_at).toBe(row.disconnected_at)
      }
      const warnings = warn.mock.calls.map((args) => args.join(" "))
      expect(warnings).toHaveLength(2)
      expect(warnings.find((w) => w.includes(oldest.id))).toMatch(
        new RegExp(`kept the oldest, ${oldest.id} \\(tenant ${b}\\), and disconnected ${laterOfA.id} \\(tenant ${a}\\), ${laterOfB.id} \\(tenant ${b}\\)`)
      )
      expect(warnings.find((w) => w.includes(twin.id))).toContain(`disconnected ${twinLater.id} (tenant ${b})`)

      expect(await indexDefinition(db, dialect, "channels_active_external_unique"))
        .toMatch(/unique index.*\(.*platform.*external_id.*\).*where.*status.*=.*'active'/i)
      await expect(insertChannels(db, [channelRecord(a, { external_id: number })])).rejects.toThrow(/unique|duplicate/i)
      await insertChannels(db, [channelRecord(a, { external_id: number, status: "disconnected" })])
    } finally {
      warn.mockRestore()
      await close()
    }
  }, 120_000)
})
