import { type ChildProcess, fork } from "node:child_process"

/** A benchmark child process spoken to by request and reply over IPC. */
export interface Child<Req, Rep> {
  readonly pid: number
  /** Sends `message` and resolves with the child's reply to it. */
  readonly request: (message: Req) => Promise<Rep>
  /** Sends `message` without waiting for a reply. */
  readonly tell: (message: Req) => void
  /** Resolves when the child has exited. */
  readonly exited: Promise<void>
  /** Kills the child (SIGKILL) if it is still running and waits for it to go. */
  readonly kill: () => Promise<void>
}

const tsx = import.meta.resolve("tsx")
/** `BENCH_CPU_PROF=dir` makes every child write a V8 CPU profile there when it exits normally (the worker processes do; the receiver is killed) (Node refuses `--cpu-prof` in NODE_OPTIONS). */
const profiling = process.env.BENCH_CPU_PROF ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : []
const running = new Set<ChildProcess>()

/** Kills every child still running; for the exit and signal handlers. */
export const killAllChildren = (): void => {
  for (const child of running) child.kill("SIGKILL")
}

/**
 * Forks `module` (a TypeScript file next to this one) on this Node through tsx. A child that exits
 * before answering fails the pending requests rather than leaving the run hanging.
 */
export const forkChild = <Req extends object, Rep extends { readonly id: number }>(
  module: string,
  nodeOptions: ReadonlyArray<string> = []
): Child<Req, Rep> => {
  const child = fork(new URL(module, import.meta.url), [], {
    execPath: process.execPath,
    execArgv: [...profiling, ...nodeOptions, "--import", tsx],
    stdio: ["ignore", "inherit", "inherit", "ipc"]
  })
  running.add(child)
  let nextId = 0
  const pending = new Map<number, { resolve: (reply: Rep) => void; reject: (error: Error) => void }>()
  child.on("message", (reply: Rep) => {
    const waiter = pending.get(reply.id)
    pending.delete(reply.id)
    waiter?.resolve(reply)
  })
  const exited = new Promise<void>((resolve) =>
    child.once("exit", (code, signal) => {
      running.delete(child)
      for (const waiter of pending.values()) waiter.reject(new Error(`${module} exited (${signal ?? code})`))
      pending.clear()
      resolve()
    })
  )
  // A send racing the child's exit fails through this event rather than throwing.
  child.on("error", (error) => {
    for (const waiter of pending.values()) waiter.reject(error)
    pending.clear()
  })
  const send = (message: Req) => {
    const id = ++nextId
    if (child.connected) child.send({ ...message, id })
    return id
  }
  return {
    pid: child.pid ?? 0,
    request: (message) =>
      new Promise<Rep>((resolve, reject) => {
        if (!child.connected) return reject(new Error(`${module} is not running`))
        pending.set(send(message), { resolve, reject })
      }),
    tell: (message) => void send(message),
    exited,
    kill: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL")
      await exited
    }
  }
}
