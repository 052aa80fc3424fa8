import { type ChildProcess, execFile, spawn } from "node:child_process"
import { join } from "node:path"
import { promisify } from "node:util"
import { runAdmin } from "../../examples/server/AdminCli.ts"
import { BUILT_SCRIPTS, HOST_BUILD_VARIABLE } from "./HostBuild.ts"
import { ROOT } from "./Root.ts"

export { ROOT }

const run = promisify(execFile)

/**
 * How to run `script` as a process on the Node that runs the tests: its built file when the global
 * setup built the hosts (plain JavaScript on the built package), else the source through tsx (as
 * `npm start` does; benchmarks and a single file run without the setup take this way).
 */
const nodeArguments = (script: string): Array<string> => {
  const built = builtHosts()
  const file = BUILT_SCRIPTS[script]
  return built !== undefined && file !== undefined ? [join(built, file)] : ["--import", "tsx", script]
}

/** Where the global setup built the hosts, when it did. */
const builtHosts = (): string | undefined => {
  const built = process.env[HOST_BUILD_VARIABLE]
  return built === "" ? undefined : built
}

/**
 * The environment of a process a test starts: this process's, with Node's compile cache in the
 * built hosts' folder (the built files are compiled once for the run, a third of a host's start-up),
 * then `env`.
 */
const processEnvironment = (env: Readonly<Record<string, string>>): Record<string, string | undefined> => {
  const built = builtHosts()
  return {
    ...process.env,
    ...(built === undefined ? {} : { NODE_COMPILE_CACHE: join(built, "compile-cache") }),
    ...env
  }
}

/** A reference host running as a child process. */
export interface HostProcess {
  readonly url: string
  readonly child: ChildProcess
  /** Everything the host printed so far (stdout and stderr). */
  readonly output: () => string
  /** Sends SIGTERM and resolves with the exit code. */
  readonly stop: () => Promise<number | null>
  /** Sends SIGKILL (a crash: no cleanup, claims left behind) and resolves once the process is gone. */
  readonly kill: () => Promise<number | null>
}

/**
 * Starts `examples/server/main.ts` (or another host `script`) as its own process (built, or through
 * tsx: see `nodeArguments`), with `env` added, and resolves once it prints `listening on`.
 */
export const startHost = (
  env: Readonly<Record<string, string>>,
  script = "examples/server/main.ts"
): Promise<HostProcess> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, nodeArguments(script), {
      cwd: ROOT,
      env: processEnvironment({ PORT: "0", ...env }),
      stdio: ["ignore", "pipe", "pipe"]
    })
    let output = ""
    const exited = new Promise<number | null>((done) => child.once("exit", (code) => done(code)))
    const timer = setTimeout(() => {
      child.kill("SIGKILL")
      reject(new Error(`host did not start within 60 s:\n${output}`))
    }, 60_000)
    // The output is kept whole for `output()`; the start line is looked for only until it came (a
    // busy host writes a line per request, and a look over all of it per chunk costs the test's CPU).
    let started = false
    const onData = (chunk: Buffer) => {
      output += chunk.toString()
      if (started) return
      const match = /listening on (http:\/\/[\w.:[\]]+)/.exec(output)
      if (match !== null) {
        started = true
        clearTimeout(timer)
        resolve({
          url: match[1]!,
          child,
          output: () => output,
          stop: () => {
            child.kill("SIGTERM")
            return exited
          },
          kill: () => {
            child.kill("SIGKILL")
            return exited
          }
        })
      }
    }
    child.stdout.on("data", onData)
    child.stderr.on("data", onData)
    void exited.then((code) => {
      clearTimeout(timer)
      reject(new Error(`host exited with ${code} before listening:\n${output}`))
    })
  })

/**
 * Runs an operator CLI command in this process (the CLI's own code, `runAdmin`, with `env` over this
 * process's environment) and parses the one JSON object it prints; fails with its stderr when it
 * exits non-zero. Tests of the CLI as a process use `adminFailing` or `adminProcess`.
 */
export const admin = async (
  env: Readonly<Record<string, string>>,
  ...args: ReadonlyArray<string>
): Promise<any> => {
  // One command at a time, as separate processes would take turns on a SQLite file: better-sqlite3
  // waits for a lock synchronously, so two commands' connections in one process would block the
  // event loop the other needs to commit.
  const turn = adminTurn.then(() => runAdmin(args, { ...process.env, ...env }))
  adminTurn = turn.then(() => undefined, () => undefined)
  const { code, stdout, stderr } = await turn
  if (code !== 0) throw new Error(`admin ${args.join(" ")} exited with ${code}: ${stderr}`)
  return JSON.parse(stdout)
}
let adminTurn: Promise<void> = Promise.resolve()

/** Runs the operator CLI as its own process (`npm run admin`'s script) and parses the one JSON object it prints. */
export const adminProcess = async (
  env: Readonly<Record<string, string>>,
  ...args: ReadonlyArray<string>
): Promise<any> => {
  const { stdout } = await run(process.execPath, [...nodeArguments("examples/server/admin.ts"), ...args], {
    cwd: ROOT,
    env: processEnvironment(env)
  })
  return JSON.parse(stdout)
}

/** Runs the operator CLI as its own process expecting failure; resolves with its exit code, stdout and stderr. */
export const adminFailing = async (
  env: Readonly<Record<string, string>>,
  ...args: ReadonlyArray<string>
): Promise<{ readonly code: number; readonly stdout: string; readonly stderr: string }> => {
  try {
    const { stdout, stderr } = await run(process.execPath, [...nodeArguments("examples/server/admin.ts"), ...args], {
      cwd: ROOT,
      env: processEnvironment(env)
    })
    return { code: 0, stdout, stderr }
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string }
    return { code: e.code, stdout: e.stdout, stderr: e.stderr }
  }
}

/** Calls the host's API and returns status and parsed body. */
export const http = async (
  base: string,
  method: string,
  path: string,
  options: { readonly token?: string; readonly body?: unknown; readonly headers?: Record<string, string> } = {}
): Promise<{ readonly status: number; readonly body: any }> => {
  const headers: Record<string, string> = { ...options.headers }
  if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`
  if (options.body !== undefined) headers["content-type"] = "application/json"
  const response = await fetch(`${base}${path}`, {
    method,
    headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body)
  })
  const text = await response.text()
  return { status: response.status, body: text === "" ? undefined : JSON.parse(text) }
}
