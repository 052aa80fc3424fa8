import { existsSync, mkdtempSync, rmSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type Kysely, sql } from "kysely"
import { afterEach, describe, expect, it } from "vitest"
import { type Database, openSqlite, type SqliteOptions } from "../../adapters/kysely/KyselyStorage.ts"
import { waitUntil } from "../support/Poll.ts"

// A file database's write-ahead log is copied into the database file by a thread of its own, not by
// the application's connection inside a commit. Seen from outside: the database file fills while the
// application only writes, with the log far below the size at which its connection would checkpoint.
describe("SQLite checkpoints in the background", () => {
  const dirs: Array<string> = []
  const open = (options?: SqliteOptions) => {
    const dir = mkdtempSync(join(tmpdir(), "omni-checkpoints-"))
    dirs.push(dir)
    const path = join(dir, "db.sqlite")
    return { path, db: openSqlite(path, options) }
  }
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
  })

  // About 2 MB in 20 commits: some 500 pages, under the 1,000 at which SQLite's own checkpoint runs.
  const write = async (db: Kysely<Database>) => {
    await sql`CREATE TABLE filler (id INTEGER PRIMARY KEY, body TEXT NOT NULL)`.execute(db)
    for (let commit = 0; commit < 20; commit++) {
      await sql`INSERT INTO filler (body) SELECT printf('%.1000c', 'x') FROM (
        WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100) SELECT i FROM n)`.execute(db)
    }
  }
  const MB = 1024 * 1024
  const sizeOf = (path: string) => (existsSync(path) ? statSync(path).size : 0)

  it("copies the log into the database file while the application only writes", async () => {
    const { path, db } = open()
    try {
      await write(db)
      await waitUntil("the database file holds the rows", () => sizeOf(path) >= 1.5 * MB)
      const { rows } = await sql<{ n: number }>`SELECT count(*) AS n FROM filler`.execute(db)
      expect(rows[0]!.n).toBe(2_000)
    } finally {
      await db.destroy()
    }
  })

  it("leaves checkpoints to the connection when asked to (inline)", async () => {
    const inline = open({ checkpoints: "inline" })
    const background = open()
    try {
      await write(inline.db)
      await write(background.db)
      // A thread started with the same writes, later, has copied them by now; none copied the inline ones.
      await waitUntil("the background database's file holds its rows", () => sizeOf(background.path) >= 1.5 * MB)
      expect(sizeOf(inline.path)).toBeLessThan(MB)
      expect(sizeOf(`${inline.path}-wal`)).toBeGreaterThan(1.5 * MB)
    } finally {
      await inline.db.destroy()
      await background.db.destroy()
    }
  })

  it("leaves every row in the database file and no log once closed", async () => {
    const { path, db } = open()
    await write(db)
    // Closing waits for the thread: the last connection to close checkpoints everything and removes the log.
    await db.destroy()
    expect([existsSync(`${path}-wal`), existsSync(`${path}-shm`)]).toEqual([false, false])
    const reopened = openSqlite(path)
    try {
      const { rows } = await sql<{ n: number }>`SELECT count(*) AS n FROM filler`.execute(reopened)
      expect(rows[0]!.n).toBe(2_000)
    } finally {
      await reopened.destroy()
    }
  })

  it("opens nothing before the first query, so an instance never used leaves nothing open", async () => {
    const { path, db } = open()
    await db.destroy()
    expect(existsSync(path)).toBe(false)
  })
})
