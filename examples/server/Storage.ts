import { closeSync, mkdirSync, openSync } from "node:fs"
import { dirname } from "node:path"
import { layerFromUrl, type SqliteOptions } from "omnichannel-core/kysely"

/**
 * Creates `path` (and its parents) owner-only, as `secrets/` is: what lands there (customer data,
 * stored files, mail) is no other local user's to read. A folder that exists already is left as it is.
 */
export const ownerOnlyDirectory = (path: string): void => {
  mkdirSync(path, { recursive: true, mode: 0o700 })
}

/**
 * The storage layer for `DATABASE_URL` (SQLite opened with `sqlite`). A SQLite file is created
 * owner-only (0600, in a folder created 0700) before SQLite opens it; its `-wal` and `-shm` files
 * take the database file's permissions.
 */
export const storageFor = (databaseUrl: string, sqlite: SqliteOptions = {}) => {
  if (databaseUrl.startsWith("file:")) {
    const path = databaseUrl.slice("file:".length)
    if (path !== "" && !path.startsWith(":memory:")) {
      ownerOnlyDirectory(dirname(path))
      // `a` creates the file with the mode when it is missing and changes nothing when it exists.
      closeSync(openSync(path, "a", 0o600))
    }
  }
  return layerFromUrl(databaseUrl, sqlite)
}
