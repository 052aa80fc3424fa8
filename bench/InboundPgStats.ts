import { setTimeout as sleep } from "node:timers/promises"
import pg from "pg"
import { BENCH_APPLICATION, benchConnectionUrl } from "./InboundDatabase.ts"

/** What `pg_stat_database` counts for one database: rows read and transactions committed. */
export interface DatabaseCounters {
  /** Live rows fetched by index scans (`tup_fetched`). */
  readonly fetched: number
  /** Rows read by sequential scans and index entries returned by index scans (`tup_returned`). */
  readonly returned: number
  /** Transactions committed (`xact_commit`), read-only ones included. */
  readonly commits: number
  /** Rows read from each of the library's tables (`pg_stat_user_tables`: `idx_tup_fetch` + `seq_tup_read`): where the reads go. */
  readonly byTable: ReadonlyMap<string, number>
  /** Of those, the rows sequential scans read (`seq_tup_read`): a hot query not using its index shows here. */
  readonly sequentialByTable: ReadonlyMap<string, number>
}

export const countersBetween = (before: DatabaseCounters, after: DatabaseCounters): DatabaseCounters => ({
  fetched: after.fetched - before.fetched,
  returned: after.returned - before.returned,
  commits: after.commits - before.commits,
  byTable: new Map([...after.byTable].map(([table, rows]) => [table, rows - (before.byTable.get(table) ?? 0)])),
  sequentialByTable: new Map([...after.sequentialByTable].map(([table, rows]) => [table, rows - (before.sequentialByTable.get(table) ?? 0)]))
})

/** The `count` tables `counters` read most rows from, the most first. */
export const busiestTables = (counters: DatabaseCounters, count: number): ReadonlyArray<readonly [string, number]> =>
  [...counters.byTable].filter(([, rows]) => rows > 0).sort((a, b) => b[1] - a[1]).slice(0, count)

/**
 * Reads `pg_stat_database` for the database `databaseUrl` names, over a connection of its own. Since
 * PostgreSQL 15 a backend hands its counts to the shared statistics when it goes idle (at most once a
 * second) and, in full, as it exits; so `quiet` waits until every connection but the benchmark's own
 * has left the database, after which the counts of the work done over them are all in.
 */
export const openDatabaseCounters = async (databaseUrl: string) => {
  const client = new pg.Client({ connectionString: benchConnectionUrl(databaseUrl) })
  // A server ending the connection (the database dropped at clean-up) must not end the process.
  client.on("error", () => undefined)
  await client.connect()
  return {
    /** Waits up to `timeoutMs` until only the benchmark's connections are on the database; resolves to whether they were. */
    quiet: async (timeoutMs = 10_000): Promise<boolean> => {
      const deadline = Date.now() + timeoutMs
      for (;;) {
        const { rows } = await client.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity
            WHERE datname = current_database() AND backend_type = 'client backend' AND application_name IS DISTINCT FROM $1`,
          [BENCH_APPLICATION]
        )
        if (rows[0]!.n === 0) return true
        if (Date.now() > deadline) return false
        await sleep(20)
      }
    },
    read: async (): Promise<DatabaseCounters> => {
      const { rows } = await client.query<{ fetched: string; returned: string; commits: string }>(
        "SELECT tup_fetched AS fetched, tup_returned AS returned, xact_commit AS commits FROM pg_stat_database WHERE datname = current_database()"
      )
      const tables = await client.query<{ table: string; rows: string; sequential: string }>(
        `SELECT relname AS table, coalesce(idx_tup_fetch, 0) + coalesce(seq_tup_read, 0) AS rows, coalesce(seq_tup_read, 0) AS sequential
          FROM pg_stat_user_tables`
      )
      const row = rows[0]!
      return {
        fetched: Number(row.fetched),
        returned: Number(row.returned),
        commits: Number(row.commits),
        byTable: new Map(tables.rows.map((table) => [table.table, Number(table.rows)])),
        sequentialByTable: new Map(tables.rows.map((table) => [table.table, Number(table.sequential)]))
      }
    },
    close: async () => {
      await client.end().catch(() => undefined)
    }
  }
}
