import { performance } from "node:perf_hooks"
import { setTimeout as sleep } from "node:timers/promises"
import type { Receiver, ReceiverCount } from "./Receiver.ts"

/** Wall-clock milliseconds with sub-millisecond precision, comparable with the receiver's stamps. */
export const stamp = (): number => performance.timeOrigin + performance.now()

/** Puts `count` new events (or jobs) where the contender picks them up; resolves to their message ids. */
export type Produce = (count: number) => Promise<ReadonlyArray<string>>

/** What a burst came to: deliveries per second from the first append to the last new arrival. */
export interface BurstResult {
  readonly events: number
  readonly delivered: number
  readonly duplicates: number
  readonly seconds: number
  readonly perSecond: number
}

/** What a steady run came to: latency from append to receipt, over the events that arrived. */
export interface SteadyResult {
  readonly sent: number
  readonly received: number
  /** Events per second the producer actually achieved. */
  readonly achievedRate: number
  readonly p50: number
  readonly p99: number
  readonly max: number
}

/** The `q` quantile (0..1) of sorted `values`, nearest rank. */
export const quantile = (sorted: ReadonlyArray<number>, q: number): number =>
  sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!

const waitMs = (events: number) => 30_000 + events * 2

/** Produces `count` events and waits for them all to arrive, so pools, JIT and TLS sessions are warm. */
export const warmUp = async (receiver: Receiver, produce: Produce, count: number): Promise<ReceiverCount> => {
  await receiver.reset()
  for (let sent = 0; sent < count; sent += 1_000) await produce(Math.min(1_000, count - sent))
  const reached = await receiver.waitFor(count, Date.now() + waitMs(count))
  await receiver.reset()
  return reached
}

/**
 * Produces `events` in batches of `batch` as fast as the producer goes, and measures until the last
 * of them arrived (or the deadline passed).
 */
export const burst = async (
  receiver: Receiver,
  produce: Produce,
  events: number,
  onProgress: (count: ReceiverCount) => void,
  batch = 1_000
): Promise<BurstResult> => {
  await receiver.reset()
  const started = stamp()
  for (let sent = 0; sent < events; sent += batch) await produce(Math.min(batch, events - sent))
  const reached = await receiver.waitFor(events, Date.now() + waitMs(events), onProgress)
  const seconds = ((reached.unique >= events ? reached.lastAt : stamp()) - started) / 1000
  return {
    events,
    delivered: reached.unique,
    duplicates: reached.duplicates,
    seconds,
    perSecond: reached.unique / seconds
  }
}

/**
 * Produces `rate` events per second for `seconds`, each stamped just before its append, then waits
 * for them and reports latency from append to receipt.
 */
export const steady = async (receiver: Receiver, produce: Produce, rate: number, seconds: number): Promise<SteadyResult> => {
  await receiver.reset()
  const appendedAt = new Map<string, number>()
  const started = stamp()
  let sent = 0
  while (stamp() - started < seconds * 1000) {
    const due = Math.floor(((stamp() - started) / 1000) * rate) - sent
    if (due > 0) {
      const at = stamp()
      for (const id of await produce(due)) appendedAt.set(id, at)
      sent += due
    }
    // Sleep until the next event is due; timers round up to whole milliseconds.
    await sleep(Math.max(0, started + ((sent + 1) / rate) * 1000 - stamp()))
  }
  const achievedRate = sent / ((stamp() - started) / 1000)
  await receiver.waitFor(sent, Date.now() + 30_000)
  const arrivals = await receiver.arrivals()
  const latencies: Array<number> = []
  for (const [id, at] of appendedAt) {
    const arrived = arrivals.get(id)
    if (arrived !== undefined) latencies.push(arrived - at)
  }
  latencies.sort((a, b) => a - b)
  return {
    sent,
    received: latencies.length,
    achievedRate,
    p50: quantile(latencies, 0.5),
    p99: quantile(latencies, 0.99),
    max: latencies.at(-1) ?? Number.NaN
  }
}
