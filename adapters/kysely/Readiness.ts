import { sql } from "kysely"
import type { KyselyConnection } from "./Connection.ts"
import { migrationNames } from "./Migrations.ts"

/** What the storage's readiness came to: each check `ok` or `fail`, and why it failed (for the log, not the caller). */
export interface StorageReadiness {
  readonly database: "ok" | "fail"
  readonly migrations: "ok" | "fail" | "unknown"
  /** Why a check failed: the database's error, or the migrations not applied. */
  readonly problem: string | undefined
}

/** How long the readiness query may take before the database counts as unreachable. */
const DEFAULT_TIMEOUT_MS = 2_000

/**
 * Whether the database answers and holds every migration this code knows, in one cheap query (the
 * migration table's names), bounded by `timeoutMs` of real time.
 */
export const checkStorageReadiness = async (
  connection: KyselyConnection["Service"],
  timeoutMs = DEFAULT_TIMEOUT_MS
): Promise<StorageReadiness> => {
  let timer: ReturnType<typeof setTimeout> | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs)
  })
  try {
    const { rows } = await Promise.race([
      sql<{ name: string }>`SELECT name FROM omni_migrations`.execute(connection.db),
      timeout
    ])
    const applied = new Set(rows.map((row) => row.name))
    const missing = migrationNames().filter((name) => !applied.has(name))
    return missing.length === 0
      ? { database: "ok", migrations: "ok", problem: undefined }
      : { database: "ok", migrations: "fail", problem: `migrations not applied: ${missing.join(", ")}` }
  } catch (error) {
    return { database: "fail", migrations: "unknown", problem: error instanceof Error ? error.message : String(error) }
  } finally {
    clearTimeout(timer)
  }
}
