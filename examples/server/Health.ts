import { type StorageReadiness } from "omnichannel-core/kysely"
import { writeLogLine } from "./Observability.ts"

/** A worker loop silent for longer than this is taken for stuck (a receiver times out within 60 s). */
export const WORKER_STALE_MS = 120_000

/** What `/readyz` looks at. */
export interface ReadinessSources {
  /** The database: reachable, and every migration applied. */
  readonly storage: () => Promise<StorageReadiness>
  /** When each worker loop last showed it was alive (real epoch milliseconds); empty with no workers. */
  readonly heartbeats: () => ReadonlyMap<string, number>
}

type Check = "ok" | "fail" | "unknown"

const json = (status: number, body: unknown) =>
  new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json; charset=utf-8", "cache-control": "no-store" }
  })

/**
 * Serves `GET /healthz` (200 while the process serves) and `GET /readyz` (200 when the database
 * answers, every migration is applied and each worker loop beat within `WORKER_STALE_MS`; else 503
 * naming the failing checks) before `handler`. Both outside `/api/v1` and without credentials,
 * so the answer names checks only; why one failed goes to the log, once per change.
 */
export const withHealthRoutes = (
  sources: ReadinessSources,
  handler: (request: Request) => Promise<Response>
): (request: Request) => Promise<Response> => {
  let lastProblem: string | undefined
  const readiness = async () => {
    const storage = await sources.storage()
    const now = Date.now()
    const stale = [...sources.heartbeats()].filter(([, at]) => now - at > WORKER_STALE_MS).map(([loop]) => loop)
    const checks: Record<string, Check> = {
      database: storage.database,
      migrations: storage.migrations,
      workers: stale.length === 0 ? "ok" : "fail"
    }
    const problem = [storage.problem, stale.length === 0 ? undefined : `worker loops silent: ${stale.join(", ")}`]
      .filter((p) => p !== undefined).join("; ") || undefined
    if (problem !== lastProblem) {
      writeLogLine({
        time: new Date(now).toISOString(),
        level: problem === undefined ? "info" : "warn",
        msg: problem === undefined ? "ready" : "not ready",
        checks,
        ...(problem === undefined ? {} : { problem })
      })
      lastProblem = problem
    }
    const ready = Object.values(checks).every((check) => check === "ok")
    return json(ready ? 200 : 503, { status: ready ? "ok" : "fail", checks })
  }
  return (request) => {
    const { pathname } = new URL(request.url)
    if (pathname !== "/healthz" && pathname !== "/readyz") return handler(request)
    if (request.method !== "GET" && request.method !== "HEAD") {
      return Promise.resolve(new Response(null, { status: 405, headers: { allow: "GET, HEAD" } }))
    }
    return pathname === "/healthz" ? Promise.resolve(json(200, { status: "ok" })) : readiness()
  }
}
