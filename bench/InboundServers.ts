import { startHost } from "../test/support/Host.ts"
import { forkChild } from "./ChildProcess.ts"
import type { BareReply, BareRequest } from "./InboundBareServer.ts"
import { type HostSettings, hostEnvironment } from "./InboundDatabase.ts"
import type { InboundWorkerReply, InboundWorkerRequest } from "./InboundWorkerProcess.ts"

type Without<T> = T extends unknown ? Omit<T, "id"> : never

/** A server the benchmark posts operator webhooks to, in a process of its own. */
export interface InboundServer {
  /** Where `POST /webhooks/chatapp` goes. */
  readonly url: string
  /** The server process, for CPU accounting. */
  readonly pid: number
  readonly close: () => Promise<void>
}

/** The baseline: a bare `node:http` server that checks the HMAC and answers 200 (`InboundBareServer.ts`). */
export const startBareServer = async (secret: string): Promise<InboundServer> => {
  const child = forkChild<Without<BareRequest>, BareReply>("./InboundBareServer.ts")
  try {
    const { port } = await child.request({ type: "listen", secret })
    return {
      url: `http://127.0.0.1:${port}/webhooks/chatapp`,
      pid: child.pid,
      close: async () => {
        child.tell({ type: "close" })
        await Promise.race([child.exited, new Promise((resolve) => setTimeout(resolve, 2_000))])
        await child.kill()
      }
    }
  } catch (error) {
    await child.kill()
    throw error
  }
}

/**
 * The reference host (`examples/server/main.ts`, as `npm start` runs it) over `settings`, with
 * `workers` background workers (`OMNI_WORKERS`; 0 serves the edge only). `close` stops it with
 * SIGTERM, as an operator would, and kills it if it has not gone after 10 s.
 */
export const startHostProcess = async (settings: HostSettings, workers: number): Promise<InboundServer & { readonly output: () => string }> => {
  const host = await startHost(hostEnvironment(settings, { OMNI_WORKERS: String(workers), HOST: "127.0.0.1" }))
  return {
    url: `${host.url}/webhooks/chatapp`,
    pid: host.child.pid ?? 0,
    output: host.output,
    close: async () => {
      if (host.child.exitCode !== null || host.child.signalCode !== null) return
      const stopped = host.stop()
      const timer = setTimeout(() => void host.kill(), 10_000)
      await stopped
      clearTimeout(timer)
    }
  }
}

/** The processing phase's worker process (`InboundWorkerProcess.ts`), built and waiting for `start`. */
export interface InboundWorker {
  readonly pid: number
  /** Starts the background work; resolves to when it started (wall-clock ms, the worker's own stamp). */
  readonly start: () => Promise<number>
  /** Stops the work (what each worker holds is finished), the database still open; reports the errors it met. */
  readonly stop: () => Promise<{ readonly errors: number; readonly firstError: string | undefined }>
  /** Closes the database and lets the process exit (killed if it has not within 5 s). */
  readonly close: () => Promise<void>
  readonly kill: () => Promise<void>
}

export const startInboundWorker = async (settings: HostSettings): Promise<InboundWorker> => {
  const child = forkChild<Without<InboundWorkerRequest>, InboundWorkerReply>("./InboundWorkerProcess.ts")
  const ask = async <T extends InboundWorkerReply["type"]>(message: Without<InboundWorkerRequest>, type: T) => {
    const reply = await child.request(message)
    if (reply.type === "failed") throw new Error(`worker ${child.pid}: ${reply.message}`)
    if (reply.type !== type) throw new Error(`worker ${child.pid} answered ${reply.type} to ${message.type}`)
    return reply as Extract<InboundWorkerReply, { type: T }>
  }
  try {
    await ask({ type: "open", settings }, "ready")
  } catch (error) {
    await child.kill()
    throw error
  }
  return {
    pid: child.pid,
    start: async () => (await ask({ type: "start" }, "started")).at,
    stop: async () => {
      const { errors, firstError } = await ask({ type: "stop" }, "stopped")
      return { errors, firstError }
    },
    close: async () => {
      await ask({ type: "close" }, "closed")
      await Promise.race([child.exited, new Promise((resolve) => setTimeout(resolve, 5_000))])
      await child.kill()
    },
    kill: child.kill
  }
}
