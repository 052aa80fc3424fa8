// CPU profiles of a benchmark's burst (BENCH_CPU_PROF), taken, written and summed by where the code
// lives: shared by the benches.
import { mkdirSync, writeFileSync } from "node:fs"
import { Session } from "node:inspector/promises"
import { join } from "node:path"

/** A node of a V8 CPU profile (`Profiler.stop`'s `profile.nodes`). */
export interface ProfileNode {
  readonly id: number
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number; readonly columnNumber: number }
  readonly children?: ReadonlyArray<number>
}

/** A file of a package or of ours, node's internals, or V8's own `(garbage collector)`-like entries. */
const fileOf = (url: string, name: string): string =>
  url === "" ? (name.startsWith("(") ? name : "(native)") : /node_modules\/(.+)$/.exec(url)?.[1] ??
    /\/((?:src|adapters|bench|test|examples)\/.+)$/.exec(url)?.[1] ?? url.replace(/^node:internal\//, "node:")

/**
 * Self time by file and by function, and the time spent under (in or called from) each file; with
 * `subsystems`, first self time by subsystem: each sample counts for the first subsystem whose
 * pattern matches a file met from the running function outwards.
 */
export const summarizeProfile = (
  { nodes, samples }: { readonly nodes: ReadonlyArray<ProfileNode>; readonly samples: ReadonlyArray<number> },
  subsystems: ReadonlyArray<readonly [string, RegExp]> = []
): ReadonlyArray<string> => {
  const byId = new Map(nodes.map((node) => [node.id, node]))
  const parent = new Map<number, number>()
  for (const node of nodes) for (const child of node.children ?? []) parent.set(child, node.id)
  const add = (map: Map<string, number>, key: string) => map.set(key, (map.get(key) ?? 0) + 1)
  const byFile = new Map<string, number>(), byFunction = new Map<string, number>(), under = new Map<string, number>()
  const bySubsystem = new Map<string, number>()
  for (const id of samples) {
    const { functionName, url, lineNumber, columnNumber } = byId.get(id)!.callFrame
    if (subsystems.length > 0) {
      let subsystem = url === "" && functionName.startsWith("(") ? functionName : undefined
      for (let at: number | undefined = id; at !== undefined && subsystem === undefined; at = parent.get(at)) {
        subsystem = subsystems.find(([, pattern]) => pattern.test(byId.get(at!)!.callFrame.url))?.[0]
      }
      add(bySubsystem, subsystem ?? "other (Node's events, task queues, ...)")
    }
    add(byFile, fileOf(url, functionName))
    add(byFunction, `${functionName || "(anonymous)"} ${fileOf(url, functionName)}:${lineNumber + 1}:${columnNumber + 1}`)
    const files = new Set<string>()
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) files.add(fileOf(byId.get(at)!.callFrame.url, ""))
    for (const file of files) if (file !== "(native)") add(under, file)
  }
  const top = (map: Map<string, number>, n: number) =>
    [...map].sort((a, b) => b[1] - a[1]).slice(0, n).map(([key, hits]) => `${(100 * hits / samples.length).toFixed(1).padStart(5)} %  ${key}`)
  return [
    ...(subsystems.length > 0 ? ["self time by subsystem:", ...top(bySubsystem, 20)] : []),
    "self time by file:",
    ...top(byFile, 12),
    "self time by function:",
    ...top(byFunction, 15),
    "time under each file:",
    ...top(under, 30)
  ]
}

/** A V8 CPU profile of this process being taken (see `startProfile`). */
export interface RunningProfile {
  /**
   * Stops the profile, writes it as `<dir>/<name>-<label>-<time>.cpuprofile` when `dir` is given,
   * and sums it by `subsystems`.
   */
  readonly stop: (
    dir: string | undefined,
    name: string,
    label: string,
    subsystems?: ReadonlyArray<readonly [string, RegExp]>
  ) => Promise<{ readonly file: string | undefined; readonly summary: ReadonlyArray<string> }>
}

/** Starts sampling this process every 200 µs through the inspector. */
export const startProfile = async (): Promise<RunningProfile> => {
  const session = new Session()
  session.connect()
  await session.post("Profiler.enable")
  await session.post("Profiler.setSamplingInterval", { interval: 200 })
  await session.post("Profiler.start")
  return {
    stop: async (dir, name, label, subsystems = []) => {
      try {
        const { profile } = await session.post("Profiler.stop")
        let file: string | undefined
        if (dir !== undefined) {
          mkdirSync(dir, { recursive: true })
          file = join(dir, `${name}-${label.replace(/\W+/g, "-")}-${Date.now()}.cpuprofile`)
          writeFileSync(file, JSON.stringify(profile))
        }
        return { file, summary: summarizeProfile(profile as never, subsystems) }
      } finally {
        session.disconnect()
      }
    }
  }
}
