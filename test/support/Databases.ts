import type { Kysely } from "kysely"
import pg from "pg"
import { type Database, migrate, openPglite, openPostgres, openSqlite } from "../../adapters/kysely/KyselyStorage.ts"
import type { Dialect } from "../../adapters/kysely/Migrations.ts"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { eventually } from "./Poll.ts"

/** `PG_URL` when the run has a real PostgreSQL (CI always sets it). */
export const PG_URL = process.env.PG_URL

/**
 * A new, empty PostgreSQL database on the `PG_URL` server, and a function that drops it.
 * Every test run makes its own, so runs sharing the server never see each other's rows.
 */
export const createPostgresDatabase = async (
  baseUrl: string
): Promise<{ readonly url: string; readonly drop: () => Promise<void> }> => {
  const name = `omni_test_${process.pid}_${Math.random().toString(36).slice(2, 10)}`
  const admin = new pg.Client({ connectionString: baseUrl })
  await admin.connect()
  await admin.query(`CREATE DATABASE ${name}`)
  await admin.end()
  const url = new URL(baseUrl)
  url.pathname = `/${name}`
  return {
    url: url.toString(),
    drop: async () => {
      const client = new pg.Client({ connectionString: baseUrl })
      await client.connect()
      // pg's Pool.end() resolves before its clients have hung up; forcing the drop while one is still
      // closing makes that client emit an unhandled FATAL error. Give them a moment to go first.
      await eventually(2_000, async () => {
        const { rows } = await client.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1", [name])
        return rows[0].n === 0
      }, 20)
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
      await client.end()
    }
  }
}

/** A migrated database of one kind, ready for a suite, and how to throw it away. */
export interface TestDatabase {
  readonly name: string
  readonly dialect: Dialect
  readonly db: Kysely<Database>
  /** Whether several connections can contend for locks (false for SQLite and single-connection PGlite). */
  readonly concurrentConnections: boolean
  readonly close: () => Promise<void>
}

/** The database kinds every storage suite runs against; PostgreSQL only when `PG_URL` is set. */
export const testDatabases: ReadonlyArray<{ readonly name: string; readonly open: () => Promise<TestDatabase> }> = [
  {
    name: "sqlite-memory",
    open: async () => {
      const db = openSqlite(":memory:")
      await migrate(db, "sqlite")
      return { name: "sqlite-memory", dialect: "sqlite", db, concurrentConnections: false, close: () => db.destroy() }
    }
  },
  {
    name: "sqlite-file",
    open: async () => {
      const dir = mkdtempSync(join(tmpdir(), "omni-sqlite-"))
      const db = openSqlite(join(dir, "test.sqlite"))
      await migrate(db, "sqlite")
      return {
        name: "sqlite-file",
        dialect: "sqlite",
        db,
        concurrentConnections: false,
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
      await migrate(db, "postgres")
      return { name: "pglite", dialect: "postgres", db, concurrentConnections: false, close: () => db.destroy() }
    }
  },
  ...(PG_URL === undefined ? [] : [{
    name: "postgres",
    open: async (): Promise<TestDatabase> => {
      const created = await createPostgresDatabase(PG_URL)
      const db = openPostgres(created.url)
      await migrate(db, "postgres")
      return {
        name: "postgres",
        dialect: "postgres",
        db,
        concurrentConnections: true,
        close: async () => {
          await db.destroy()
          await created.drop()
        }
      }
    }
  }])
]

/**
 * The databases a service or HTTP test in the shared unit worker runs on: in-memory SQLite, and
 * PostgreSQL — the real server when `PG_URL` is set, else PGlite. The storage project tests every
 * kind; PGlite instances made and freed over and over in one long-lived process trip a V8 bug in
 * WebAssembly code bookkeeping (`Check failed: jit_page_->allocations_.erase(addr) == 1`), so the
 * shared worker makes none when a real server is there.
 */
export const serviceDatabases = testDatabases.filter((database) =>
  database.name === "sqlite-memory" || database.name === (PG_URL === undefined ? "pglite" : "postgres"))
