import { loadavg } from "node:os"
import pg from "pg"
import { killAllChildren } from "./ChildProcess.ts"

/**
 * A benchmark run's bookkeeping: progress lines stamped with the time since the start, and what each
 * phase acquires released newest first, also when the run fails, is interrupted or passes
 * `hardLimitMs`. Once cleaning up has begun, `progress` throws, so the phase in progress stops at its
 * next step.
 */
export const startRun = (hardLimitMs: number) => {
  const began = Date.now()
  const loadAtStart = loadavg()[0]!.toFixed(1)
  const cleanups: Array<() => Promise<void>> = []
  let cleaning: Promise<void> | undefined
  let aborting = false

  const progress = (phase: string, message: string) => {
    if (cleaning !== undefined) throw new Error("interrupted")
    const elapsed = Math.round((Date.now() - began) / 1000)
    console.log(`[${String(Math.floor(elapsed / 60)).padStart(2, "0")}:${String(elapsed % 60).padStart(2, "0")}] ${phase}: ${message}`)
  }
  /** Registers a release step and returns it, to be run by `release` or at clean-up. */
  const onCleanup = (step: () => Promise<void>) => {
    cleanups.push(step)
    return step
  }
  /** Runs a registered step now, and no more at clean-up. */
  const release = async (step: () => Promise<void>) => {
    const index = cleanups.lastIndexOf(step)
    if (index >= 0) cleanups.splice(index, 1)
    await step()
  }
  const cleanUp = () =>
    (cleaning ??= (async () => {
      killAllChildren()
      for (const step of cleanups.splice(0).reverse()) await step().catch((error) => console.error("cleanup:", error))
    })())
  const abort = (why: string) => {
    if (aborting) return
    aborting = true
    console.error(`\n${why}: cleaning up`)
    void cleanUp().finally(() => process.exit(1))
  }
  // Not `once`: under npm and tsx a Ctrl-C arrives twice (from the terminal's process group and
  // relayed by tsx), and a second, unhandled one would end the process before it has cleaned up.
  process.on("SIGINT", () => abort("interrupted"))
  process.on("SIGTERM", () => abort("terminated"))
  setTimeout(() => abort(`still running after ${hardLimitMs / 60_000} minutes`), hardLimitMs).unref()

  return {
    began,
    loadAtStart,
    progress,
    onCleanup,
    release,
    cleanUp,
    /** Whether clean-up has begun (an interruption): the failure it causes is not news. */
    cleaningUp: () => cleaning !== undefined,
    /** Seconds since the start. */
    elapsedSeconds: () => Math.round((Date.now() - began) / 1000)
  }
}

/** Whether PostgreSQL answers at `url` (within 3 seconds). */
export const postgresReachable = async (url: string): Promise<boolean> => {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3_000 })
  try {
    await client.connect()
    await client.query("SELECT 1")
    return true
  } catch {
    return false
  } finally {
    await client.end().catch(() => undefined)
  }
}
