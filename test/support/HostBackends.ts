import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { createPostgresDatabase, PG_URL } from "./Databases.ts"

/** A database kind a host test runs on: the env that points a host at a fresh one, and its teardown. */
export interface HostBackend {
  readonly name: string
  readonly setUp: () => Promise<{ readonly env: Record<string, string>; readonly tearDown: () => Promise<void> }>
}

const sqlite: HostBackend = {
  name: "SQLite",
  setUp: async () => {
    const dir = mkdtempSync(join(tmpdir(), "omni-host-"))
    return {
      env: { OMNI_DATA_DIR: dir, DATABASE_URL: `file:${join(dir, "db", "omni.sqlite")}` },
      tearDown: async () => rmSync(dir, { recursive: true, force: true })
    }
  }
}

const postgres: HostBackend = {
  name: "PostgreSQL",
  setUp: async () => {
    const dir = mkdtempSync(join(tmpdir(), "omni-host-"))
    const database = await createPostgresDatabase(PG_URL!)
    return {
      env: { OMNI_DATA_DIR: dir, DATABASE_URL: database.url },
      tearDown: async () => {
        await database.drop()
        rmSync(dir, { recursive: true, force: true })
      }
    }
  }
}

/** SQLite always; PostgreSQL too when `PG_URL` is set. */
export const hostBackends: ReadonlyArray<HostBackend> = PG_URL === undefined ? [sqlite] : [sqlite, postgres]
