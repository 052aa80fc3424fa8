import { type Kysely, sql } from "kysely"
import { describe, expect, it } from "vitest"
import { type Database, migrate } from "../../adapters/kysely/KyselyStorage.ts"
import type { Dialect } from "../../adapters/kysely/Migrations.ts"
import { testDatabases } from "../support/Databases.ts"

/** How the database defines index `name`, as its own catalogue prints it. */
const indexDefinition = async (db: Kysely<Database>, dialect: Dialect, name: string): Promise<string | undefined> => {
  const { rows } = dialect === "sqlite"
    ? await sql<{ definition: string }>`SELECT sql AS definition FROM sqlite_master WHERE type = 'index' AND name = ${name}`
      .execute(db)
    : await sql<{ definition: string }>`SELECT indexdef AS definition FROM pg_indexes WHERE indexname = ${name}`.execute(db)
  return rows[0]?.definition
}

describe.each(testDatabases)("migrations on $name", ({ open }) => {
  // Migration 0005 was edited after it landed: as first landed (commit 917d23a) it left 0004's index
  // over every outbox event in place. Such a database, migrated on, gets the partial index too.
  it("give a database migrated with 0005 as first landed the partial index on unfanned outbox events", async () => {
    const database = await open()
    const { db, dialect } = database
    try {
      const fresh = await indexDefinition(db, dialect, "outbox_events_unfanned_idx")
      expect(fresh).toMatch(/where.*fanned_out_at.*is null/i)

      await db.schema.dropIndex("outbox_events_unfanned_idx").execute()
      await db.schema.createIndex("outbox_events_unfanned_idx").on("outbox_events").columns(["fanned_out_at", "seq"]).execute()
      await sql`DELETE FROM omni_migrations WHERE name = '2026_11_24_0007_outbox_unfanned_partial_index'`.execute(db)
      expect(await indexDefinition(db, dialect, "outbox_events_unfanned_idx")).not.toMatch(/where/i)

      await migrate(db, dialect)
      expect(await indexDefinition(db, dialect, "outbox_events_unfanned_idx")).toBe(fresh)
    } finally {
      await database.close()
    }
  })
})
