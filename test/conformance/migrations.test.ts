import { type Kysely, sql } from "kysely"
import { type Migration, Migrator } from "kysely/migration"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { type Database, migrate, openPglite, openPostgres, openSqlite } from "../../adapters/kysely/KyselyStorage.ts"
import type { Dialect } from "../../adapters/kysely/Migrations.ts"
import * as Foundation from "../../adapters/kysely/migrations/2026_11_22_0001_foundation.ts"
import * as ChannelsAndConnectTokens from "../../adapters/kysely/migrations/2026_11_22_0002_channels_and_connect_tokens.ts"
import * as WebhookEndpoints from "../../adapters/kysely/migrations/2026_11_22_0003_webhook_endpoints.ts"
import * as WebhookDeliveries from "../../adapters/kysely/migrations/2026_11_22_0004_webhook_deliveries.ts"
import * as WebhookClaimIndexes from "../../adapters/kysely/migrations/2026_11_22_0005_webhook_claim_indexes.ts"
import * as WebhookFanOutLeases from "../../adapters/kysely/migrations/2026_11_24_0006_webhook_fanout_leases.ts"
import { createPostgresDatabase, PG_URL, testDatabases } from "../support/Databases.ts"

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

// The migrations a database had run before 0007 landed, under the names and in the table `migrate` uses.
const UP_TO_0006 = [
  ["2026_11_22_0001_foundation", Foundation.up],
  ["2026_11_22_0002_channels_and_connect_tokens", ChannelsAndConnectTokens.up],
  ["2026_11_22_0003_webhook_endpoints", WebhookEndpoints.up],
  ["2026_11_22_0004_webhook_deliveries", WebhookDeliveries.up],
  ["2026_11_22_0005_webhook_claim_indexes", WebhookClaimIndexes.up],
  ["2026_11_24_0006_webhook_fanout_leases", WebhookFanOutLeases.up]
] as const

const migrateUpTo0006 = async (db: Kysely<Database>, dialect: Dialect) => {
  const migrator = new Migrator({
    db,
    provider: {
      getMigrations: async () =>
        Object.fromEntries(UP_TO_0006.map(([name, up]): [string, Migration] => [name, { up: (m) => up(m, dialect) }]))
    },
    migrationTableName: "omni_migrations",
    migrationLockTableName: "omni_migrations_lock"
  })
  const { error } = await migrator.migrateToLatest()
  if (error !== undefined) throw error
}

describe.each(testDatabases)("migrations on $name", ({ open }) => {
  it("give open conversations a partial unique index and pending inbound payloads a partial index of their own", async () => {
    const { db, dialect, close } = await open()
    try {
      expect(await indexDefinition(db, dialect, "conversations_open_unique"))
        .toMatch(/unique index.*\(.*tenant_id.*channel_id.*contact_id.*\).*where.*status.*=.*'open'/i)
      expect(await indexDefinition(db, dialect, "inbound_payloads_pending_idx"))
        .toMatch(/\(.*next_attempt_at.*received_at.*\).*where.*status.*=.*'pending'/i)
    } finally {
      await close()
    }
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
  })
})
