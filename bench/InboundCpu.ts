import { readdirSync, readFileSync } from "node:fs"
import { type CpuPerEvent, type Roles, startCpuMeter } from "./CpuMeter.ts"

const TICKS_PER_SECOND = 100

/** utime + stime (clock ticks) of every PostgreSQL backend serving `database`, by pid (its process title names the database). */
const backendTicks = (database: string): Map<number, number> => {
  const ticks = new Map<number, number>()
  let pids: Array<string>
  try {
    pids = readdirSync("/proc").filter((entry) => /^\d+$/.test(entry))
  } catch {
    return ticks
  }
  for (const pid of pids) {
    try {
      const title = readFileSync(`/proc/${pid}/cmdline`, "utf8")
      if (!title.startsWith("postgres: ") || !title.includes(` ${database} `)) continue
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
      ticks.set(Number(pid), Number(fields[11]) + Number(fields[12]))
    } catch {
      // Gone meanwhile.
    }
  }
  return ticks
}

/**
 * `CpuMeter`'s roles, plus the CPU of the PostgreSQL backends serving `database` when one is given,
 * as role "PostgreSQL". The PostgreSQL server is shared (other runs' tests use it too), so its
 * processes are counted by the database their title names, not all of them: backends started
 * during the measurement count in full, ones that ended before its end are missed, and the server's
 * shared processes (WAL writer, checkpointer) are left out.
 */
export const startInboundCpuMeter = (
  roles: Roles,
  database?: string
): { readonly perEvent: (events: number) => CpuPerEvent | undefined } => {
  const meter = startCpuMeter(roles)
  const linux = process.platform === "linux"
  const before = database === undefined || !linux ? new Map<number, number>() : backendTicks(database)
  return {
    perEvent: (events) => {
      const perProcess = meter.perEvent(events)
      if (perProcess === undefined || database === undefined) return perProcess
      let ticks = 0
      for (const [pid, after] of backendTicks(database)) ticks += Math.max(0, after - (before.get(pid) ?? 0))
      return { ...perProcess, PostgreSQL: ticks * (1_000_000 / TICKS_PER_SECOND) / events }
    }
  }
}

/** The database a `postgres://…` URL names; undefined for SQLite URLs. */
export const databaseOf = (databaseUrl: string): string | undefined =>
  databaseUrl.startsWith("postgres") ? decodeURIComponent(new URL(databaseUrl).pathname.slice(1)) : undefined
