import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { makeAdvanceTime } from "../../support/AdvanceTime.ts"
import {
  canRetry,
  type DeliveryEvent,
  type DeliveryState,
  type DeliveryStatus,
  make,
  transition
} from "../../../src/webhooks/DeliveryMachine.ts"
import type { RetryStrategy } from "../../../src/webhooks/RetrySchedule.ts"

const T0 = Date.parse("2026-11-22T12:00:00.000Z")
const SECOND = 1000
const at = (ms: number): string => new Date(ms).toISOString()

// The spec's delays, in seconds, for exponential retries 1 to 6; every later retry waits 30 minutes.
const EXPONENTIAL = [5, 10, 30, 120, 300, 600]
const delayMs = (strategy: RetryStrategy, retry: number): number =>
  (strategy === "linear" ? 60 : EXPONENTIAL[retry - 1] ?? 1800) * SECOND

/** The model: the spec's reading of one delivery, with times as plain milliseconds. */
interface Model {
  now: number
  readonly strategy: RetryStrategy
  /** Retries the spec allows: max_retries, or none at all under strategy `none`. */
  readonly retries: number
  status: DeliveryStatus
  attempts: number
  retryAt: number | undefined
  succeeded: boolean
}

/** The machine under test, fed one event at a time. */
interface Real {
  now: number
  state: DeliveryState
  readonly maxRetries: number
}

const unfinished = (m: Model) => m.status === "pending" || m.status === "retrying" || m.status === "queued"

const agree = (m: Model, r: Real) => {
  expect(r.state.status).toBe(m.status)
  expect(r.state.attempt_number).toBe(m.attempts)
  // Total attempts never exceed the first one plus max_retries.
  expect(r.state.attempt_number).toBeLessThanOrEqual(1 + r.maxRetries)
  expect(r.state.next_retry_at).toBe(m.retryAt === undefined ? null : at(m.retryAt))
  expect(r.state.completed_at === null).toBe(unfinished(m))
  expect(canRetry(r.state)).toBe(m.status === "failed" || m.status === "dead_letter")
  // Success is terminal.
  if (m.succeeded) expect(r.state.status).toBe("success")
}

const apply = (r: Real, event: DeliveryEvent) => {
  const { intents, state } = transition(r.state, event, at(r.now))
  r.state = state
  return intents
}

class AttemptSucceededCommand implements fc.Command<Model, Real> {
  // Attempts are made when due; a result on a parked or finished delivery stands for one that was in flight.
  check = (m: Readonly<Model>) => m.status !== "retrying" || m.now >= m.retryAt!
  run(m: Model, r: Real) {
    const intents = apply(r, { _tag: "AttemptSucceeded", status_code: 200, time_ms: 40 })
    if (unfinished(m)) {
      expect(intents).toEqual([{ _tag: "ResetFailures" }])
      Object.assign(m, { status: "success", attempts: m.attempts + 1, retryAt: undefined, succeeded: true })
    } else {
      expect(intents).toEqual([])
    }
    agree(m, r)
  }
  toString = () => "AttemptSucceeded"
}

class AttemptFailedCommand implements fc.Command<Model, Real> {
  constructor(readonly statusCode: number | null) {}
  check = (m: Readonly<Model>) => m.status !== "retrying" || m.now >= m.retryAt!
  run(m: Model, r: Real) {
    const error = this.statusCode === null ? "timed out" : `HTTP ${this.statusCode}`
    const intents = apply(r, { _tag: "AttemptFailed", status_code: this.statusCode, time_ms: null, error })
    if (m.status === "pending" || m.status === "retrying") {
      m.attempts += 1
      // The retry after attempt k is retry k; it exists while retries used (k - 1) stay below the allowance.
      if (m.attempts - 1 < m.retries) {
        m.status = "retrying"
        m.retryAt = m.now + delayMs(m.strategy, m.attempts)
        expect(r.state.next_retry_at! > at(r.now)).toBe(true)
        // The next attempt is told by the state alone: `retrying` with its next_retry_at.
        expect(r.state.next_retry_at).toBe(at(m.retryAt))
        expect(intents).toEqual([{ _tag: "CountFailure", error }])
      } else {
        m.status = "failed"
        m.retryAt = undefined
        expect(intents).toEqual([{ _tag: "CountFailure", error }])
      }
      expect(r.state.response_status_code).toBe(this.statusCode)
      expect(r.state.error_message).toBe(error)
    } else {
      expect(intents).toEqual([])
    }
    agree(m, r)
  }
  toString = () => `AttemptFailed(${this.statusCode})`
}

class EndpointSuspendedCommand implements fc.Command<Model, Real> {
  check = () => true
  run(m: Model, r: Real) {
    expect(apply(r, { _tag: "EndpointSuspended" })).toEqual([])
    if (m.status === "pending" || m.status === "retrying") Object.assign(m, { status: "queued", retryAt: undefined })
    agree(m, r)
  }
  toString = () => "EndpointSuspended"
}

class ReplayCommand implements fc.Command<Model, Real> {
  check = () => true
  run(m: Model, r: Real) {
    const intents = apply(r, { _tag: "Replay" })
    if (m.status === "queued") {
      m.status = "pending"
      expect(intents).toEqual([])
    } else {
      expect(intents).toEqual([])
    }
    agree(m, r)
  }
  toString = () => "Replay"
}

class DeadLetterCommand implements fc.Command<Model, Real> {
  check = () => true
  run(m: Model, r: Real) {
    expect(apply(r, { _tag: "DeadLetter", reason: "endpoint deactivated" })).toEqual([])
    if (unfinished(m)) Object.assign(m, { status: "dead_letter", retryAt: undefined })
    agree(m, r)
  }
  toString = () => "DeadLetter"
}

const AdvanceTimeCommand = makeAdvanceTime<Model, Real>(agree)

/** Jumps to the scheduled retry, so attempts also happen exactly on time. */
class AdvanceToRetryCommand implements fc.Command<Model, Real> {
  check = (m: Readonly<Model>) => m.status === "retrying" && m.now < m.retryAt!
  run(m: Model, r: Real) {
    m.now = m.retryAt!
    r.now = m.retryAt!
    agree(m, r)
  }
  toString = () => "AdvanceToRetry"
}

// Failures and jumps to the retry time dominate and the terminal events are rare, so runs reach
// long retry chains (the 7th retry's 30 minutes, the 16th attempt) rather than stopping early.
const commands = fc.commands([
  fc.oneof(
    { weight: 1, arbitrary: fc.constant(new AttemptSucceededCommand()) },
    {
      weight: 20,
      arbitrary: fc.option(fc.constantFrom(404, 500, 503), { nil: null }).map((code) => new AttemptFailedCommand(code))
    },
    { weight: 1, arbitrary: fc.constant(new EndpointSuspendedCommand()) },
    { weight: 2, arbitrary: fc.constant(new ReplayCommand()) },
    { weight: 1, arbitrary: fc.constant(new DeadLetterCommand()) },
    { weight: 2, arbitrary: fc.integer({ min: 1, max: 2 * 3600 * SECOND }).map((ms) => new AdvanceTimeCommand(ms)) },
    { weight: 20, arbitrary: fc.constant(new AdvanceToRetryCommand()) }
  )
], { size: "medium" })

describe("delivery machine against a model", () => {
  it("agrees on status, attempts, next_retry_at and can_retry: at most 1 + max_retries attempts, success terminal", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 15 }),
        // Mostly exponential, the strategy with the most to get wrong; mostly starting as pending.
        fc.constantFrom<RetryStrategy>("exponential", "exponential", "exponential", "linear", "none"),
        fc.oneof({ weight: 3, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
        commands,
        (max_retries, retry_strategy, startQueued, cmds) => {
          const placement = startQueued ? { _tag: "Queue" as const, queued: 0 } : { _tag: "Deliver" as const }
          const setup = () => ({
            model: {
              now: T0,
              strategy: retry_strategy,
              retries: retry_strategy === "none" ? 0 : max_retries,
              status: startQueued ? "queued" as const : "pending" as const,
              attempts: 0,
              retryAt: undefined,
              succeeded: false
            },
            real: { now: T0, state: make({ max_retries, retry_strategy }, placement, at(T0)).state, maxRetries: max_retries }
          })
          fc.modelRun(setup, cmds)
        }
      ),
      { numRuns: 500 }
    )
  })
})
