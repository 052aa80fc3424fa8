import { setTimeout as sleep } from "node:timers/promises"
import { Pool } from "undici"
import { type BarePoster, postAll } from "./BarePost.ts"
import type { SignedPayload } from "./InboundPayloads.ts"
import { quantile, stamp } from "./Load.ts"

/**
 * The operator's side: undici's keep-alive pool (the existing benches' fair client: `connections`
 * connections, no pipelining) posting signed payloads to `url`, counting answers other than 200.
 * It is a `BarePoster` whose id slot carries the payload's `X-Hub-Signature-256`, so `postAll`
 * drives it as it drives the webhook baselines.
 */
export interface OperatorClient extends BarePoster {
  /** Answers other than 200 (and failed requests) so far, with the first one. */
  readonly refused: () => { readonly count: number; readonly first: string | undefined }
}

export const makeOperatorClient = (url: string, connections: number): OperatorClient => {
  const target = new URL(url)
  const pool = new Pool(target.origin, { connections, pipelining: 1 })
  let refused = 0
  let first: string | undefined
  const refuse = (what: string) => {
    refused += 1
    first ??= what
  }
  return {
    post: async (signature, body) => {
      try {
        const response = await pool.request({
          method: "POST",
          path: target.pathname,
          headers: { "content-type": "application/json", "x-hub-signature-256": signature },
          body
        })
        await response.body.dump()
        if (response.statusCode !== 200) refuse(`answered ${response.statusCode}`)
        return response.statusCode
      } catch (error) {
        refuse(error instanceof Error ? error.message : String(error))
        return 0
      }
    },
    refused: () => ({ count: refused, first }),
    close: () => void pool.destroy()
  }
}

/** What a burst of acknowledgements came to. */
export interface AckBurst {
  readonly payloads: number
  readonly seconds: number
  readonly perSecond: number
  /** Answers other than 200 during the burst. */
  readonly refused: number
}

/** Posts every payload with `inFlight` at a time and times it from the first request to the last answer. */
export const ackBurst = async (
  client: OperatorClient,
  payloads: ReadonlyArray<SignedPayload>,
  inFlight: number
): Promise<AckBurst> => {
  const refusedBefore = client.refused().count
  const started = stamp()
  await postAll(client, payloads.map((payload) => [payload.signature, payload.body] as const), inFlight)
  const seconds = (stamp() - started) / 1000
  return {
    payloads: payloads.length,
    seconds,
    perSecond: payloads.length / seconds,
    refused: client.refused().count - refusedBefore
  }
}

/** Acknowledgement latency under a steady load: request sent to answer read, in ms. */
export interface AckLatency {
  readonly sent: number
  /** Answered 200. */
  readonly acknowledged: number
  /** Payloads per second the sender achieved. */
  readonly achievedRate: number
  /** When the last payload was sent (wall-clock ms): the end of the load. */
  readonly lastSentAt: number
  readonly p50: number
  readonly p95: number
  readonly p99: number
  readonly max: number
}

/**
 * Posts `rate` payloads per second for `seconds` (`next` makes each), open loop: a payload is sent
 * when it is due whether or not earlier ones were answered, so a slow answer does not hold back the
 * load (no coordinated omission). Latency runs from just before the request to the answer's end.
 */
export const ackSteady = async (
  client: OperatorClient,
  next: () => SignedPayload,
  rate: number,
  seconds: number
): Promise<AckLatency> => {
  const latencies: Array<number> = []
  const inFlight = new Set<Promise<void>>()
  const started = stamp()
  let sent = 0
  let acknowledged = 0
  let lastSentAt = started
  while (stamp() - started < seconds * 1000) {
    const due = Math.floor(((stamp() - started) / 1000) * rate) - sent
    for (let i = 0; i < due; i++) {
      const payload = next()
      const at = stamp()
      lastSentAt = at
      const request = client.post(payload.signature, payload.body).then((status) => {
        latencies.push(stamp() - at)
        if (status === 200) acknowledged += 1
      })
      inFlight.add(request)
      void request.finally(() => inFlight.delete(request))
    }
    sent += Math.max(0, due)
    // Sleep until the next payload is due; timers round up to whole milliseconds.
    await sleep(Math.max(0, started + ((sent + 1) / rate) * 1000 - stamp()))
  }
  const achievedRate = sent / ((stamp() - started) / 1000)
  await Promise.all(inFlight)
  latencies.sort((a, b) => a - b)
  return {
    sent,
    acknowledged,
    achievedRate,
    lastSentAt,
    p50: quantile(latencies, 0.5),
    p95: quantile(latencies, 0.95),
    p99: quantile(latencies, 0.99),
    max: latencies.at(-1) ?? Number.NaN
  }
}
