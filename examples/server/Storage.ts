import { mkdirSync } from "node:fs"
import { dirname } from "node:path"
import { layerFromUrl, type SqliteOptions } from "omnichannel-core/kysely"

/** The storage layer for `DATABASE_URL` (SQLite opened with `sqlite`), creating the folder of a SQLite file first. */
export const storageFor = (databaseUrl: string, sqlite: SqliteOptions = {}) => {
  if (databaseUrl.startsWith("file:")) mkdirSync(dirname(databaseUrl.slice("file:".length)), { recursive: true })
  return layerFromUrl(databaseUrl, sqlite)
}
