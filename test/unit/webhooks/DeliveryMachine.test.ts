import { describe, expect, it } from "vitest"
import {
  canRetry,
  type DeliveryEvent,
  type DeliveryState,
  type DeliveryStatus,
  make,
  maxAttempts,
  QUEUE_FULL,
  type RetrySettings,
  transition
} from "../../../src/webhooks/DeliveryMachine.ts"

const T0 = Date.parse("2026-11-22T12:00:00.000Z")
const at = (ms: number): string => new Date(ms).toISOString()
const SECOND = 1000
const MINUTE = 60 * SECOND
const HOUR = 60 * MINUTE

/** The spec's defaults: exponential, 8 retries. */
const defaults: RetrySettings = { max_retries: 8, retry_strategy: "exponential" }

const pending = (settings: RetrySettings = defaults): DeliveryState =>
  make(settings, { _tag: "Deliver" }, at(T0)).state

const delivery = (overrides: Partial<DeliveryState>): DeliveryState => ({ ...pending(), ...overrides })

const succeeded: DeliveryEvent = { _tag: "AttemptSucceeded", status_code: 204, time_ms: 120 }
const failed = (error = "HTTP 500"): DeliveryEvent => ({
  _tag: "AttemptFailed",
  status_code: 500,
  time_ms: 80,
  error
})

/** Applies `n` failed attempts one second apart, starting at T0. */
const failTimes = (state: DeliveryState, n: number) => {
  let result = { state, intents: [] as ReadonlyArray<unknown> }
  for (let i = 0; i < n; i++) result = transition(result.state, failed(), at(T0 + i * SECOND))
  return result
}

describe("creating a delivery", () => {
  it("creates a pending delivery with no attempts yet, due now", () => {
    const { intents, state } = make(defaults, { _tag: "Deliver" }, at(T0))
    expect(state).toEqual({
      status: "pending",
      attempt_number: 0,
      max_retries: 8,
      retry_strategy: "exponential",
      next_retry_at: null,
      completed_at: null,
      response_status_code: null,
      response_time_ms: null,
      error_message: null
    })
    // Due at once: `pending` is what the claims look for; no intent is needed to schedule it.
    expect(intents).toEqual([])
  })

  it("stores a matching event as queued while the endpoint is suspended", () => {
    const { intents, state } = make(defaults, { _tag: "Queue", queued: 9_999 }, at(T0))
    expect(state.status).toBe("queued")
    expect(state.attempt_number).toBe(0)
    expect(intents).toEqual([])
  })

  it("stores the 10,001st queued delivery as dead_letter with error_message \"queue full\", still retryable", () => {
    const { intents, state } = make(defaults, { _tag: "Queue", queued: 10_000 }, at(T0))
    expect(state).toMatchObject({ status: "dead_letter", completed_at: at(T0), error_message: QUEUE_FULL })
    expect(QUEUE_FULL).toBe("queue full")
    expect(canRetry(state)).toBe(true)
    expect(intents).toEqual([])
  })
})

describe("attempts", () => {
  it("moves to success when the endpoint answers 2xx within the timeout", () => {
    const { intents, state } = transition(pending(), succeeded, at(T0 + SECOND))
    expect(state).toEqual(delivery({
      status: "success",
      attempt_number: 1,
      completed_at: at(T0 + SECOND),
      response_status_code: 204,
      response_time_ms: 120
    }))
    expect(intents).toEqual([{ _tag: "ResetFailures" }])
  })

  it("clears the previous attempt's error when a retry succeeds", () => {
    const retrying = failTimes(pending(), 2).state
    const { state } = transition(retrying, succeeded, at(T0 + 60 * SECOND))
    expect(state).toMatchObject({ status: "success", attempt_number: 3, next_retry_at: null, error_message: null })
  })

  it("is retried per strategy when an attempt fails and retries remain: retrying, 5 s later", () => {
    const { intents, state } = transition(pending(), failed(), at(T0))
    expect(state).toEqual(delivery({
      status: "retrying",
      attempt_number: 1,
      next_retry_at: at(T0 + 5 * SECOND),
      response_status_code: 500,
      response_time_ms: 80,
      error_message: "HTTP 500"
    }))
    expect(intents).toEqual([{ _tag: "CountFailure", error: "HTTP 500" }])
  })

  it("waits the exponential delay of the retry number: after the 5th failed attempt, 5 min", () => {
    const { state } = transition(failTimes(pending(), 4).state, failed(), at(T0 + 100 * SECOND))
    expect(state).toMatchObject({ status: "retrying", attempt_number: 5, next_retry_at: at(T0 + 400 * SECOND) })
  })

  it("waits a fixed 60 s between linear retries", () => {
    const { state } = failTimes(pending({ max_retries: 5, retry_strategy: "linear" }), 3)
    expect(state).toMatchObject({ status: "retrying", attempt_number: 3, next_retry_at: at(T0 + 2 * SECOND + 60 * SECOND) })
  })

  it("records a timeout as a failure without a status code or time", () => {
    const timeout: DeliveryEvent = { _tag: "AttemptFailed", status_code: null, time_ms: null, error: "timed out after 30 s" }
    const { intents, state } = transition(pending(), timeout, at(T0))
    expect(state).toMatchObject({
      status: "retrying",
      response_status_code: null,
      response_time_ms: null,
      error_message: "timed out after 30 s"
    })
    expect(intents[0]).toEqual({ _tag: "CountFailure", error: "timed out after 30 s" })
  })

  it("moves to failed when attempts reach max_retries: the first attempt plus max_retries retries", () => {
    const settings: RetrySettings = { max_retries: 2, retry_strategy: "exponential" }
    const lastRetry = failTimes(pending(settings), 2).state
    expect(lastRetry).toMatchObject({ status: "retrying", attempt_number: 2 })
    const { intents, state } = transition(lastRetry, failed("HTTP 503"), at(T0 + HOUR))
    expect(state).toMatchObject({
      status: "failed",
      attempt_number: 3,
      next_retry_at: null,
      completed_at: at(T0 + HOUR),
      error_message: "HTTP 503"
    })
    expect(intents).toEqual([{ _tag: "CountFailure", error: "HTTP 503" }])
    expect(canRetry(state)).toBe(true)
  })

  it("makes 9 attempts with the default max_retries of 8", () => {
    expect(maxAttempts(defaults)).toBe(9)
    expect(failTimes(pending(), 8).state.status).toBe("retrying")
    expect(failTimes(pending(), 9).state).toMatchObject({ status: "failed", attempt_number: 9 })
  })

  it("makes exactly one attempt when max_retries is 0", () => {
    const { state } = transition(pending({ max_retries: 0, retry_strategy: "exponential" }), failed(), at(T0))
    expect(state).toMatchObject({ status: "failed", attempt_number: 1 })
  })

  it("makes no retries with strategy none, whatever max_retries says", () => {
    const settings: RetrySettings = { max_retries: 15, retry_strategy: "none" }
    expect(maxAttempts(settings)).toBe(1)
    const { intents, state } = transition(pending(settings), failed(), at(T0))
    expect(state).toMatchObject({ status: "failed", attempt_number: 1, next_retry_at: null })
    expect(intents).toEqual([{ _tag: "CountFailure", error: "HTTP 500" }])
  })

  it.each<DeliveryStatus>(["success", "failed", "dead_letter"])("ignores an attempt outcome on a %s delivery", (status) => {
    const finished = delivery({ status, attempt_number: 1, completed_at: at(T0) })
    expect(transition(finished, succeeded, at(T0 + SECOND))).toEqual({ state: finished, intents: [] })
    expect(transition(finished, failed(), at(T0 + SECOND))).toEqual({ state: finished, intents: [] })
  })
})

describe("circuit breaker", () => {
  it.each<DeliveryStatus>(["pending", "retrying"])("parks a %s delivery as queued when the endpoint is suspended", (status) => {
    const before = status === "pending" ? pending() : failTimes(pending(), 2).state
    const { intents, state } = transition(before, { _tag: "EndpointSuspended" }, at(T0 + HOUR))
    expect(state).toEqual({ ...before, status: "queued", next_retry_at: null })
    expect(intents).toEqual([])
  })

  it.each<DeliveryStatus>(["success", "failed", "dead_letter", "queued"])(
    "leaves a %s delivery alone when the endpoint is suspended",
    (status) => {
      const before = delivery({ status })
      expect(transition(before, { _tag: "EndpointSuspended" }, at(T0))).toEqual({ state: before, intents: [] })
    }
  )

  it("replays a queued delivery as pending, due now, keeping its attempts so far", () => {
    const queued = transition(failTimes(pending(), 3).state, { _tag: "EndpointSuspended" }, at(T0 + MINUTE)).state
    const { intents, state } = transition(queued, { _tag: "Replay" }, at(T0 + HOUR))
    expect(state).toMatchObject({ status: "pending", attempt_number: 3, next_retry_at: null })
    expect(intents).toEqual([])
  })

  it("continues the retry count after a replay: the next failure waits the 4th retry's 2 min", () => {
    const queued = transition(failTimes(pending(), 3).state, { _tag: "EndpointSuspended" }, at(T0 + MINUTE)).state
    const replayed = transition(queued, { _tag: "Replay" }, at(T0 + HOUR)).state
    const { state } = transition(replayed, failed(), at(T0 + HOUR))
    expect(state).toMatchObject({ status: "retrying", attempt_number: 4, next_retry_at: at(T0 + HOUR + 2 * MINUTE) })
  })

  it.each<DeliveryStatus>(["pending", "retrying", "success", "failed", "dead_letter"])("does not replay a %s delivery", (status) => {
    const before = delivery({ status })
    expect(transition(before, { _tag: "Replay" }, at(T0))).toEqual({ state: before, intents: [] })
  })

  it("moves queued to dead_letter when the final check at +12h fails", () => {
    const queued = make(defaults, { _tag: "Queue", queued: 0 }, at(T0)).state
    const reason = "endpoint permanently deactivated after failed re-verification"
    const { intents, state } = transition(queued, { _tag: "DeadLetter", reason }, at(T0 + 12 * HOUR))
    expect(state).toMatchObject({ status: "dead_letter", completed_at: at(T0 + 12 * HOUR), error_message: reason })
    expect(canRetry(state)).toBe(true)
    expect(intents).toEqual([])
  })

  it.each<DeliveryStatus>(["pending", "retrying"])("dead-letters a %s delivery when its endpoint is set inactive", (status) => {
    const before = status === "pending" ? pending() : failTimes(pending(), 1).state
    const { state } = transition(before, { _tag: "DeadLetter", reason: "endpoint set inactive" }, at(T0 + HOUR))
    expect(state).toMatchObject({ status: "dead_letter", next_retry_at: null, error_message: "endpoint set inactive" })
  })

  it.each<DeliveryStatus>(["success", "failed", "dead_letter"])("does not dead-letter a %s delivery", (status) => {
    const before = delivery({ status, completed_at: at(T0) })
    expect(transition(before, { _tag: "DeadLetter", reason: "x" }, at(T0 + HOUR))).toEqual({ state: before, intents: [] })
  })

  it("records as success an attempt that was in flight when its delivery was parked", () => {
    const queued = transition(pending(), { _tag: "EndpointSuspended" }, at(T0)).state
    const { intents, state } = transition(queued, succeeded, at(T0 + SECOND))
    expect(state).toMatchObject({ status: "success", attempt_number: 1, completed_at: at(T0 + SECOND) })
    expect(intents).toEqual([{ _tag: "ResetFailures" }])
  })

  it("drops a failure of an attempt that was in flight when its delivery was parked: it will be replayed", () => {
    const queued = transition(pending(), { _tag: "EndpointSuspended" }, at(T0)).state
    expect(transition(queued, failed(), at(T0 + SECOND))).toEqual({ state: queued, intents: [] })
  })
})

describe("can_retry", () => {
  it("is true only when the status is failed or dead_letter", () => {
    const statuses: ReadonlyArray<DeliveryStatus> = ["pending", "success", "failed", "retrying", "dead_letter", "queued"]
    expect(statuses.filter((status) => canRetry(delivery({ status })))).toEqual(["failed", "dead_letter"])
  })
})
