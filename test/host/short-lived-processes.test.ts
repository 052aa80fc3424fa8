import { type ChildProcess, execFile, spawn } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { availableParallelism, tmpdir } from "node:os"
import { join } from "node:path"
import { build } from "tsup"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ROOT } from "../support/Host.ts"
import { seededRandom } from "../support/Random.ts"

// A process that ends while a worker thread loads better-sqlite3's native addon aborts (SIGABRT, exit
// 134): the thread's start-up must be over before the process ends. These run short processes by the
// dozen, four at a time on one core (or, without taskset, three beside a child spinning on a core), so
// threads start late and exits land anywhere.

const random = seededRandom()

const CLI_RUNS = 50
const OPEN_CLOSE_PROCESSES = 60
const OPENS_PER_PROCESS = 8

/** How a child process ended. */
interface Ended {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
  readonly stdout: string
  readonly stderr: string
}

// Where taskset is, the short processes share one core (the last), four at a time: each has a quarter
// of it, as under a spinner beside three, and the other core stays with the rest of the suite. Without
// it, three run at a time while a child spins on a core.
const TASKSET = "/usr/bin/taskset"
const PINNED = existsSync(TASKSET)
const AT_ONCE = PINNED ? 4 : 3
const onOneCore = (args: ReadonlyArray<string>): [string, Array<string>] =>
  PINNED
    ? [TASKSET, ["--cpu-list", String(availableParallelism() - 1), process.execPath, ...args]]
    : [process.execPath, [...args]]

const runNode = (args: ReadonlyArray<string>, env: Readonly<Record<string, string>>): Promise<Ended> =>
  new Promise((resolve) => {
    const [command, commandArgs] = onOneCore(args)
    const child = execFile(command, commandArgs, { env: { ...process.env, ...env } }, (_error, stdout, stderr) =>
      resolve({ code: child.exitCode, signal: child.signalCode, stdout, stderr }))
  })

/** Runs `task` for 0 … count-1, `limit` at a time. */
const runAll = async <A>(count: number, limit: number, task: (index: number) => Promise<A>): Promise<Array<A>> => {
  const results: Array<A> = []
  let next = 0
  await Promise.all(Array.from({ length: limit }, async () => {
    while (next < count) {
      const index = next++
      results[index] = await task(index)
    }
  }))
  return results
}

// Without taskset, one process spinning keeps a core busy.
const spin = (): ChildProcess | undefined =>
  PINNED ? undefined : spawn(process.execPath, ["-e", "for (;;) {}"], { stdio: "ignore" })

// The entry the open-and-close processes run: for each pause given, open a file database, write to
// it, wait that pause, close it; then exit at once. Random pauses of a few milliseconds (drawn by the
// test, seeded) leave, where closing does not wait for the thread, several threads at some point of
// their start-up at the exit.
const OPEN_CLOSE_SOURCE = `
import { join } from "node:path"
import { openSqlite } from ${JSON.stringify(join(ROOT, "adapters/kysely/KyselyStorage.ts"))}
const [dir, ...pausesMs] = process.argv.slice(2)
for (const [i, pauseMs] of pausesMs.entries()) {
  const db = openSqlite(join(dir, i + ".sqlite"))
  await db.schema.createTable("t").addColumn("n", "integer").execute()
  await new Promise((resolve) => setTimeout(resolve, Number(pauseMs)))
  await db.destroy()
}
process.exit(0)
`

describe("short-lived processes", () => {
  let out: string
  let spinner: ChildProcess | undefined
  // Compiled once into plain JavaScript (through tsx, each run would spend over a second compiling),
  // with Node's compile cache shared by the runs.
  const env = () => ({ NODE_COMPILE_CACHE: join(out, "compile-cache") })

  beforeAll(async () => {
    out = mkdtempSync(join(tmpdir(), "omni-short-lived-"))
    symlinkSync(join(ROOT, "node_modules"), join(out, "node_modules"))
    writeFileSync(join(out, "package.json"), JSON.stringify({ type: "module", private: true }))
    writeFileSync(join(out, "open-close.ts"), OPEN_CLOSE_SOURCE)
    await build({
      entry: { admin: join(ROOT, "examples/server/admin.ts"), "open-close": join(out, "open-close.ts") },
      format: "esm",
      platform: "node",
      target: "node22",
      outDir: out,
      config: false,
      tsconfig: join(ROOT, "tsconfig.json"),
      silent: true,
      // Bundled, they load faster; better-sqlite3 stays outside, as its addon must.
      noExternal: [/^effect/, /^kysely/]
    })
  }, 120_000)
  afterAll(() => {
    spinner?.kill("SIGKILL")
    rmSync(out, { recursive: true, force: true })
  })

  it(`runs the operator CLI ${CLI_RUNS} times under load, every run exiting 0`, async () => {
    spinner = spin()
    const ended = await runAll(CLI_RUNS, AT_ONCE, async (index) => {
      const dataDir = join(out, `cli-${index}`)
      const run = await runNode([join(out, "admin.js"), "bootstrap", "--email", `owner${index}@example.com`], {
        ...env(),
        OMNI_DATA_DIR: dataDir,
        DATABASE_URL: ""
      })
      rmSync(dataDir, { recursive: true, force: true })
      return run
    })
    spinner?.kill("SIGKILL")
    const failed = ended.filter((run) => run.code !== 0 || run.signal !== null)
    expect(failed.map(({ code, signal, stderr }) => ({ code, signal, stderr: stderr.slice(0, 2_000) }))).toEqual([])
    for (const run of ended) expect(JSON.parse(run.stdout)).toHaveProperty("tenant_id")
  }, 240_000)

  it(`opens and closes file databases in ${OPEN_CLOSE_PROCESSES} processes that exit right after, none aborting or leaving a log`, async () => {
    // Each process's pauses, below 5, 10, 15 or 20 ms in turn.
    const pauses = Array.from({ length: OPEN_CLOSE_PROCESSES }, (_, index) =>
      Array.from({ length: OPENS_PER_PROCESS }, () => (random.next() * (5 + index % 4 * 5)).toFixed(3)))
    spinner = spin()
    const ended = await runAll(OPEN_CLOSE_PROCESSES, AT_ONCE, async (index) => {
      const dir = join(out, `open-close-${index}`)
      mkdirSync(dir)
      const run = await runNode([join(out, "open-close.js"), dir, ...pauses[index]!], env())
      // Every connection was closed before the exit: the last one to close removes the log and shared memory.
      const left = readdirSync(dir).filter((name) => !name.endsWith(".sqlite"))
      rmSync(dir, { recursive: true, force: true })
      return { ...run, left }
    })
    spinner?.kill("SIGKILL")
    const failed = ended.filter((run) => run.code !== 0 || run.signal !== null || run.left.length > 0)
    expect(failed.map(({ code, signal, stderr, left }) => ({ code, signal, stderr: stderr.slice(0, 2_000), left }))).toEqual([])
  }, 240_000)
})
