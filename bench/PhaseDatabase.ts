import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { Kysely } from "kysely"
import { type Database, type Dialect, openPostgres, openSqlite } from "../adapters/kysely/KyselyStorage.ts"

/** A fresh PostgreSQL database of the run, and how to drop it. */
export type FreshPostgres = () => Promise<{ readonly url: string; readonly drop: () => Promise<void> }>

/**
 * A fresh, migrated database for one phase of `bench:webhooks`: a SQLite file in a temporary
 * folder, or a new PostgreSQL database (pool of 4). `dispose` closes it and removes it.
 */
export const openPhaseDatabase = async (
  dialect: Dialect,
  freshPostgres: FreshPostgres | undefined,
  prefix: string
): Promise<{ readonly db: Kysely<Database>; readonly dispose: () => Promise<void> }> => {
  let db: Kysely<Database>
  let dispose: () => Promise<void>
  if (dialect === "sqlite") {
    const dir = mkdtempSync(join(tmpdir(), prefix))
    db = openSqlite(join(dir, "bench.sqlite"))
    dispose = async () => {
      await db.destroy()
      rmSync(dir, { recursive: true, force: true })
    }
  } else {
    const database = await freshPostgres!()
    db = openPostgres(database.url, { max: 4 })
    dispose = async () => {
      await db.destroy()
      await database.drop()
    }
  }
  return { db, dispose }
}
