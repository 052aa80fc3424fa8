import type { PostClient } from "./BarePost.ts"
import { forkChild } from "./ChildProcess.ts"

/** What a worker process is asked; each carries the `id` its reply echoes. */
export type WorkerRequest = { readonly id: number } & (
  /** Run the library's background work over `databaseUrl`, idling `idleMs` when nothing is due. */
  | { readonly type: "engine"; readonly databaseUrl: string; readonly ca: string; readonly idleMs: number }
  /** Run graphile-worker over `databaseUrl` with a `post` task to `receiverUrl`. */
  | {
    readonly type: "graphile"
    readonly databaseUrl: string
    readonly ca: string
    readonly receiverUrl: string
    /** What the `post` task posts with. */
    readonly client: PostClient
    readonly concurrency: number
    /** Local queue and batched completion on (graphile-worker's fastest mode) or its defaults. */
    readonly batched: boolean
    readonly localQueueSize: number
  }
  | { readonly type: "sample-memory"; readonly everyMs: number }
  | { readonly type: "memory" }
  | { readonly type: "stop" }
)

/** One memory sample of a worker process, after a full collection. */
export interface MemorySample {
  readonly at: number
  readonly heapUsed: number
  readonly rss: number
}

/** What a worker process answers. */
export type WorkerReply = { readonly id: number } & (
  | { readonly type: "ready" }
  | { readonly type: "ok" }
  | { readonly type: "memory"; readonly samples: ReadonlyArray<MemorySample> }
  | { readonly type: "stopped"; readonly errors: number; readonly firstError: string | undefined }
  | { readonly type: "failed"; readonly message: string }
)

type Without<T> = T extends unknown ? Omit<T, "id"> : never
type Answer<T extends WorkerReply["type"]> = Omit<Extract<WorkerReply, { type: T }>, "id" | "type">

/** A worker process running either the library's loop or graphile-worker. */
export interface WorkerProcess {
  readonly pid: number
  /** Starts sampling memory every `everyMs`, forgetting earlier samples. */
  readonly sampleMemory: (everyMs: number) => Promise<void>
  /** The samples taken since `sampleMemory`; sampling stops. */
  readonly memory: () => Promise<ReadonlyArray<MemorySample>>
  /** Stops the work, closes its connections and lets the process exit; reports the errors it met. */
  readonly stop: () => Promise<Answer<"stopped">>
  readonly kill: () => Promise<void>
}

/** Starts a worker process and waits until it runs `start`'s work. */
export const startWorkerProcess = async (start: Without<WorkerRequest>): Promise<WorkerProcess> => {
  const child = forkChild<Without<WorkerRequest>, WorkerReply>("./worker-process.ts", ["--expose-gc"])
  const ask = async <T extends WorkerReply["type"]>(message: Without<WorkerRequest>, type: T): Promise<Answer<T>> => {
    const reply = await child.request(message)
    if (reply.type === "failed") throw new Error(`worker ${child.pid}: ${reply.message}`)
    if (reply.type !== type) throw new Error(`worker ${child.pid} answered ${reply.type} to ${message.type}`)
    return reply as Extract<WorkerReply, { type: T }>
  }
  try {
    await ask(start, "ready")
  } catch (error) {
    await child.kill()
    throw error
  }
  return {
    pid: child.pid,
    sampleMemory: async (everyMs) => void await ask({ type: "sample-memory", everyMs }, "ok"),
    memory: async () => (await ask({ type: "memory" }, "memory")).samples,
    stop: async () => {
      const stopped = await ask({ type: "stop" }, "stopped")
      await Promise.race([child.exited, new Promise((resolve) => setTimeout(resolve, 5_000))])
      await child.kill()
      return stopped
    },
    kill: child.kill
  }
}
