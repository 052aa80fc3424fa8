import { readdirSync, readFileSync } from "node:fs"

/**
 * CPU time (user + system) that processes spend during a phase, by role, read from Linux's /proc:
 * where the time goes when everything shares the machine's cores. A role is a list of process ids,
 * or "postgres" for every PostgreSQL server process on the machine (the server is shared, so other
 * databases' work would count too; the benchmark runs alone). Elsewhere than Linux it reads nothing.
 */
export type Roles = Readonly<Record<string, ReadonlyArray<number> | "postgres">>

/** Microseconds of CPU per event, by role. */
export type CpuPerEvent = Readonly<Record<string, number>>

const TICKS_PER_SECOND = 100

/** utime + stime of process `pid` in clock ticks (fields 14 and 15 of /proc/<pid>/stat), and its name. */
const readStat = (pid: string): { readonly name: string; readonly ticks: number } | undefined => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    const close = stat.lastIndexOf(")")
    const fields = stat.slice(close + 2).split(" ")
    return { name: stat.slice(stat.indexOf("(") + 1, close), ticks: Number(fields[11]) + Number(fields[12]) }
  } catch {
    return undefined
  }
}

const snapshot = (roles: Roles): Map<string, number> => {
  const totals = new Map<string, number>()
  let everyProcess: Array<string> | undefined
  for (const [role, who] of Object.entries(roles)) {
    let ticks = 0
    if (who === "postgres") {
      everyProcess ??= (() => {
        try {
          return readdirSync("/proc").filter((entry) => /^\d+$/.test(entry))
        } catch {
          return []
        }
      })()
      for (const pid of everyProcess) {
        const stat = readStat(pid)
        if (stat?.name === "postgres") ticks += stat.ticks
      }
    } else {
      for (const pid of who) ticks += readStat(String(pid))?.ticks ?? 0
    }
    totals.set(role, ticks)
  }
  return totals
}

/** Starts measuring; `perEvent(events)` gives each role's CPU since then, per event (none off Linux). */
export const startCpuMeter = (roles: Roles): { readonly perEvent: (events: number) => CpuPerEvent | undefined } => {
  const linux = process.platform === "linux"
  const before = linux ? snapshot(roles) : new Map<string, number>()
  return {
    perEvent: (events) => {
      if (!linux) return undefined
      const after = snapshot(roles)
      const result: Record<string, number> = {}
      for (const [role, ticks] of after) {
        // A process that exited meanwhile reads as 0: its share is unknown, not negative.
        result[role] = Math.max(0, ticks - (before.get(role) ?? 0)) * (1_000_000 / TICKS_PER_SECOND) / events
      }
      return result
    }
  }
}
