import type { Certificate } from "../test/outbound/LocalServers.ts"
import { forkChild } from "./ChildProcess.ts"

/** What the receiver process is asked; each carries the `id` its reply echoes. */
export type ReceiverRequest = { readonly id: number } & (
  | { readonly type: "listen"; readonly key: string; readonly cert: string }
  | { readonly type: "status"; readonly status: number }
  | { readonly type: "reset" }
  | { readonly type: "count" }
  | { readonly type: "arrivals" }
  | { readonly type: "close" }
)

/** What the receiver process answers. */
export type ReceiverReply = { readonly id: number } & (
  | { readonly type: "listening"; readonly port: number }
  | { readonly type: "ok" }
  | { readonly type: "count"; readonly unique: number; readonly duplicates: number; readonly lastAt: number }
  | { readonly type: "arrivals"; readonly arrivals: ReadonlyArray<readonly [string, number]> }
)

type Without<T> = T extends unknown ? Omit<T, "id"> : never
type Answer<T extends ReceiverReply["type"]> = Extract<ReceiverReply, { type: T }>

/** Messages received since the last `reset`: distinct ids, repeats, and when the last new id arrived. */
export type ReceiverCount = Omit<Answer<"count">, "id" | "type">

/** The HTTPS receiver every contender posts to, in its own process. */
export interface Receiver {
  readonly url: string
  readonly port: number
  /** The receiver process, for CPU accounting. */
  readonly pid: number
  /** Status the receiver answers with from now on: 204, or 503 to make deliveries fail. */
  readonly answerWith: (status: number) => Promise<void>
  /** Forgets every arrival. */
  readonly reset: () => Promise<void>
  readonly count: () => Promise<ReceiverCount>
  /** First arrival time (wall-clock ms) by message id. */
  readonly arrivals: () => Promise<ReadonlyMap<string, number>>
  /** Polls until `expected` distinct ids have arrived or `deadline` (wall-clock ms) passes. */
  readonly waitFor: (expected: number, deadline: number, onProgress?: (count: ReceiverCount) => void) => Promise<ReceiverCount>
  readonly close: () => Promise<void>
}

/** Starts the receiver process serving `certificate` on a free port of 127.0.0.1. */
export const startReceiver = async (certificate: Certificate): Promise<Receiver> => {
  const child = forkChild<Without<ReceiverRequest>, ReceiverReply>("./receiver-process.ts")
  const ask = async <T extends ReceiverReply["type"]>(message: Without<ReceiverRequest>, type: T): Promise<Answer<T>> => {
    const reply = await child.request(message)
    if (reply.type !== type) throw new Error(`receiver answered ${reply.type} to ${message.type}`)
    return reply as Answer<T>
  }
  const { port } = await ask({ type: "listen", key: certificate.key, cert: certificate.cert }, "listening")
  const count = async (): Promise<ReceiverCount> => {
    const { unique, duplicates, lastAt } = await ask({ type: "count" }, "count")
    return { unique, duplicates, lastAt }
  }
  return {
    url: `https://127.0.0.1:${port}/hook`,
    port,
    pid: child.pid,
    answerWith: async (status) => void await ask({ type: "status", status }, "ok"),
    reset: async () => void await ask({ type: "reset" }, "ok"),
    count,
    arrivals: async () => new Map((await ask({ type: "arrivals" }, "arrivals")).arrivals),
    waitFor: async (expected, deadline, onProgress) => {
      let lastProgress = Date.now()
      for (;;) {
        const current = await count()
        if (current.unique >= expected || Date.now() > deadline) return current
        if (onProgress !== undefined && Date.now() - lastProgress >= 5_000) {
          lastProgress = Date.now()
          onProgress(current)
        }
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
    },
    close: async () => {
      child.tell({ type: "close" })
      await Promise.race([child.exited, new Promise((resolve) => setTimeout(resolve, 2_000))])
      await child.kill()
    }
  }
}
