import { graphError } from "../test/support/FakeGraph.ts"

/**
 * The operator's two send limits, as `bench:campaigns`' pacing phase enforces them at its fake
 * operator: a number's throughput (at most `perSecond` sends accepted within any sliding second,
 * else 130429) and the pair limit (a second send to the same `to` within six seconds of one accepted,
 * else 131056). Only accepted sends count toward either limit: a refused send reached nobody.
 */

/** The pair limit's window: one message to the same recipient every six seconds. */
export const PAIR_WINDOW_MS = 6_000
const THROUGHPUT_WINDOW_MS = 1_000

/** An answer of the fake operator. */
export interface OperatorAnswer {
  readonly status: number
  readonly json: unknown
}

/** The operator's answers, the error object as `FakeGraph` and the operator shape it (HTTP 400). */
export const throughputReached = (): OperatorAnswer => ({
  status: 400,
  json: graphError(400, {
    code: 130429,
    message: "(#130429) Rate limit hit",
    error_data: { messaging_product: "whatsapp", details: "Cloud API message throughput has been reached." }
  }).json
})
export const pairRateLimitHit = (): OperatorAnswer => ({
  status: 400,
  json: graphError(400, {
    code: 131056,
    message: "(#131056) (Business Account, Consumer Account) pair rate limit hit",
    error_data: {
      messaging_product: "whatsapp",
      details: "Message failed to send because there were too many messages sent from this phone number to the same phone number in a short period of time."
    }
  }).json
})

export interface OperatorLimitsSettings {
  /** Sends accepted within any sliding second; null: not enforced. */
  readonly perSecond: number | null
  /**
   * Recipients (`to`) another flow of the business messaged just before the campaign's first send to
   * them: that first send (and any within six seconds of it) is answered 131056.
   */
  readonly pairBusy?: ReadonlyArray<string>
}

/** What the limits did over a run. */
export interface OperatorLimitsCount {
  /** Arrival times of the accepted sends, in order (ms). */
  readonly accepted: ReadonlyArray<number>
  readonly throughputRefusals: number
  readonly pairRefusals: number
  /** How many sends to each `to` were accepted. */
  readonly acceptedBy: ReadonlyMap<string, number>
  /** The most sends accepted within one sliding second (at most `perSecond` when enforced). */
  readonly busiestSecond: number
}

/**
 * The limits' state for one run: `decide(to, at)` says whether a send arriving at `at` (ms, in order)
 * is accepted, or which refusal it gets.
 */
export const startOperatorLimits = (settings: OperatorLimitsSettings) => {
  const accepted: Array<number> = []
  let windowStart = 0 // index of the first accepted send inside the current sliding second
  let busiestSecond = 0
  let throughputRefusals = 0, pairRefusals = 0
  const lastAccepted = new Map<string, number>()
  const acceptedBy = new Map<string, number>()
  const busy = new Set(settings.pairBusy ?? [])

  const decide = (to: string, at: number): "accepted" | "throughput" | "pair" => {
    while (windowStart < accepted.length && accepted[windowStart]! <= at - THROUGHPUT_WINDOW_MS) windowStart += 1
    if (settings.perSecond !== null && accepted.length - windowStart >= settings.perSecond) {
      throughputRefusals += 1
      return "throughput"
    }
    // Another flow's message to this recipient, accepted just now (it counts toward the pair only).
    if (busy.delete(to)) lastAccepted.set(to, at)
    const last = lastAccepted.get(to)
    if (last !== undefined && at - last < PAIR_WINDOW_MS) {
      pairRefusals += 1
      return "pair"
    }
    accepted.push(at)
    busiestSecond = Math.max(busiestSecond, accepted.length - windowStart)
    lastAccepted.set(to, at)
    acceptedBy.set(to, (acceptedBy.get(to) ?? 0) + 1)
    return "accepted"
  }

  const count = (): OperatorLimitsCount => ({ accepted, throughputRefusals, pairRefusals, acceptedBy, busiestSecond })
  return { decide, count }
}

/**
 * Whether every one of `expected` was accepted exactly once and nobody else was: the recipients never
 * accepted, accepted more than once, and accepted though not expected.
 */
export const exactlyOnce = (acceptedBy: ReadonlyMap<string, number>, expected: ReadonlyArray<string>) => {
  const wanted = new Set(expected)
  const missing = expected.filter((to) => !acceptedBy.has(to)).length
  let duplicated = 0, strangers = 0
  for (const [to, times] of acceptedBy) {
    if (times > 1) duplicated += 1
    if (!wanted.has(to)) strangers += 1
  }
  return { ok: missing === 0 && duplicated === 0 && strangers === 0, missing, duplicated, strangers }
}

/** Accepted sends a second between the first and the last accepted send. */
export const sustainedPerSecond = (accepted: ReadonlyArray<number>): number =>
  accepted.length < 2 ? Number.NaN : (accepted.length - 1) / ((accepted.at(-1)! - accepted[0]!) / 1000)

/** Seconds spent in gaps of more than `overMs` between two accepted sends (a back-off, a stall), and how many. */
export const stalls = (accepted: ReadonlyArray<number>, overMs: number) => {
  let seconds = 0, count = 0
  for (let i = 1; i < accepted.length; i++) {
    const gap = accepted[i]! - accepted[i - 1]!
    if (gap > overMs) (seconds += gap / 1000, count += 1)
  }
  return { seconds, count }
}
