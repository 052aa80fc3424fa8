/**
 * A benchmark worker process: either the library's background work in a polling loop (as the
 * reference host's workers run it) or a graphile-worker runner whose one task makes the same POST.
 * Driven over IPC by `Workers.ts`; started with `--expose-gc` so memory samples count live objects.
 */
import { performance } from "node:perf_hooks"
import { Logger, run, type Runner } from "graphile-worker"
import { openPostgres } from "../adapters/kysely/KyselyStorage.ts"
import { makeBarePoster } from "./BarePost.ts"
import { startEngine } from "./Engine.ts"
import type { MemorySample, WorkerReply, WorkerRequest } from "./Workers.ts"

const reply = (message: WorkerReply) => process.send?.(message)

let stop: () => Promise<void> = async () => {}
let errors = 0
let firstError: string | undefined
const failed = (error: unknown) => {
  errors += 1
  firstError ??= error instanceof Error ? error.message : String(error)
}

let samples: Array<MemorySample> = []
let sampler: NodeJS.Timeout | undefined
const sample = () => {
  // A full collection first, so the sample is what the process holds rather than when GC last ran.
  globalThis.gc?.()
  const { heapUsed, rss } = process.memoryUsage()
  samples.push({ at: performance.timeOrigin + performance.now(), heapUsed, rss })
}

/** graphile-worker's own log, errors only: at info it prints a line per completed job. */
const quietLogger = new Logger(() => (level, message) => {
  if (level === "error") console.error(`graphile-worker: ${message}`)
})

process.on("message", async (message: WorkerRequest) => {
  try {
    switch (message.type) {
      case "engine": {
        const engine = await startEngine(openPostgres(message.databaseUrl), "postgres", { ca: message.ca })
        const workers = engine.app.startWorkers({ idleMs: message.idleMs, onError: (_job, error) => failed(error) })
        stop = async () => {
          await workers.stop()
          await engine.close()
        }
        return reply({ id: message.id, type: "ready" })
      }
      case "graphile": {
        const poster = makeBarePoster(message.receiverUrl, message.ca, message.client)
        const runner: Runner = await run({
          connectionString: message.databaseUrl,
          concurrency: message.concurrency,
          maxPoolSize: message.concurrency + 2,
          noHandleSignals: true,
          pollInterval: 2_000,
          logger: quietLogger,
          taskList: {
            post: async (payload) => {
              const envelope = payload as { readonly id: string }
              const status = await poster.post(envelope.id, JSON.stringify(envelope))
              if (status < 200 || status >= 300) throw new Error(`receiver answered ${status}`)
            }
          },
          preset: {
            worker: message.batched
              ? { localQueue: { size: message.localQueueSize }, completeJobBatchDelay: 0, failJobBatchDelay: 0 }
              : {}
          }
        })
        runner.events.on("job:error", ({ error }) => failed(error))
        stop = async () => {
          await runner.stop()
          poster.close()
        }
        return reply({ id: message.id, type: "ready" })
      }
      case "sample-memory":
        clearInterval(sampler)
        samples = []
        sample()
        sampler = setInterval(sample, message.everyMs)
        return reply({ id: message.id, type: "ok" })
      case "memory":
        clearInterval(sampler)
        sample()
        return reply({ id: message.id, type: "memory", samples })
      case "stop":
        clearInterval(sampler)
        await stop()
        reply({ id: message.id, type: "stopped", errors, firstError })
        return process.disconnect()
    }
  } catch (error) {
    failed(error)
    reply({ id: message.id, type: "failed", message: firstError ?? String(error) })
  }
})
process.on("disconnect", () => setTimeout(() => process.exit(0), 100).unref())
