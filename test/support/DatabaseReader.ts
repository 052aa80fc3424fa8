import Database from "better-sqlite3"
import pg from "pg"

/** Reads a host's database directly, to check what was stored: SQLite read-only through better-sqlite3, PostgreSQL through pg. */
export interface DatabaseReader {
  readonly all: (query: string, params?: ReadonlyArray<unknown>) => Promise<Array<Record<string, any>>>
  readonly close: () => Promise<void>
}

/** Opens a reader on the host database `databaseUrl` names (`file:…` or `postgres://…`); `$1`… are its parameters in both. */
export const openDatabaseReader = async (databaseUrl: string): Promise<DatabaseReader> => {
  if (databaseUrl.startsWith("file:")) {
    const db = new Database(databaseUrl.slice("file:".length), { readonly: true, fileMustExist: true })
    return {
      all: async (query, params = []) => db.prepare(query.replace(/\$\d+/g, "?")).all(...params) as Array<Record<string, any>>,
      close: async () => void db.close()
    }
  }
  const client = new pg.Client({ connectionString: databaseUrl })
  await client.connect()
  return { all: async (query, params = []) => (await client.query(query, [...params])).rows, close: () => client.end() }
}
