/**
 * The inbound benchmark's worker process: the library wired as the reference host wires it, running
 * its background work with one worker (`OMNI_WORKERS=1`, idle 50 ms, as `examples/server/main.ts`)
 * once told to start, serving no HTTP. Stopping the work and closing the database are two steps, so
 * the benchmark can read the CPU of the process and of its database connections in between. Driven
 * over IPC by `InboundServers.ts`; with `BENCH_CPU_PROF=dir` it writes a V8 CPU profile when it exits
 * (see `ChildProcess.ts`).
 */
import { performance } from "node:perf_hooks"
import type { Workers } from "../src/app/Omnichannel.ts"
import { type HostSettings, makeHostApp } from "./InboundDatabase.ts"

/** What the worker process is asked; each carries the `id` its reply echoes. */
export type InboundWorkerRequest = { readonly id: number } & (
  /** Build the library over the database (migrated), without starting work. */
  | { readonly type: "open"; readonly settings: HostSettings }
  | { readonly type: "start" }
  /** Stop the work (each worker finishes what it holds), keeping the database open. */
  | { readonly type: "stop" }
  /** Close the database and exit. */
  | { readonly type: "close" }
)

/** What the worker process answers. */
export type InboundWorkerReply = { readonly id: number } & (
  | { readonly type: "ready" }
  /** Work started at `at` (wall-clock ms). */
  | { readonly type: "started"; readonly at: number }
  | { readonly type: "stopped"; readonly errors: number; readonly firstError: string | undefined }
  | { readonly type: "closed" }
  | { readonly type: "failed"; readonly message: string }
)

const reply = (message: InboundWorkerReply) => process.send?.(message)

let host: Awaited<ReturnType<typeof makeHostApp>> | undefined
let workers: Workers | undefined
let errors = 0
let firstError: string | undefined
const failed = (error: unknown) => {
  errors += 1
  firstError ??= error instanceof Error ? error.message : String(error)
}

process.on("message", async (message: InboundWorkerRequest) => {
  try {
    switch (message.type) {
      case "open":
        host = await makeHostApp(message.settings)
        return reply({ id: message.id, type: "ready" })
      case "start": {
        if (host === undefined) throw new Error("start before open")
        const at = performance.timeOrigin + performance.now()
        workers = host.app.startWorkers({ count: 1, idleMs: 50, onError: (_job, error) => failed(error) })
        return reply({ id: message.id, type: "started", at })
      }
      case "stop":
        await workers?.stop()
        return reply({ id: message.id, type: "stopped", errors, firstError })
      case "close":
        await host?.close()
        reply({ id: message.id, type: "closed" })
        return process.disconnect()
    }
  } catch (error) {
    failed(error)
    reply({ id: message.id, type: "failed", message: firstError ?? String(error) })
  }
})
process.on("disconnect", () => setTimeout(() => process.exit(0), 100).unref())
