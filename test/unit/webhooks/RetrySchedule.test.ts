import { describe, expect, it } from "vitest"
import {
  MAX_QUEUED_PER_ENDPOINT,
  nextReverificationAt,
  retryDelaySeconds,
  reverificationSchedule,
  SUSPEND_AFTER_CONSECUTIVE_FAILURES
} from "../../../src/webhooks/RetrySchedule.ts"

const retries = Array.from({ length: 10 }, (_, i) => i + 1)
const SUSPENDED_AT = "2026-11-22T12:00:00.000Z"

describe("retry schedule", () => {
  it("waits 5 s, 10 s, 30 s, 2 min, 5 min, 10 min, then 30 min for the 7th retry and beyond (exponential)", () => {
    expect(retries.map((n) => retryDelaySeconds("exponential", n))).toEqual([
      5, 10, 30, 120, 300, 600, 1800, 1800, 1800, 1800
    ])
    expect(retryDelaySeconds("exponential", 15)).toBe(1800)
  })

  it("waits a fixed 60 s before every retry (linear)", () => {
    expect(retries.map((n) => retryDelaySeconds("linear", n))).toEqual(Array(10).fill(60))
  })

  it("makes no retries (none)", () => {
    expect(retries.map((n) => retryDelaySeconds("none", n))).toEqual(Array(10).fill(null))
  })

  it.each([0, -1, 1.5])("refuses retry number %s: retries count from 1", (n) => {
    expect(() => retryDelaySeconds("exponential", n)).toThrow(RangeError)
  })
})

describe("re-verification schedule", () => {
  it("checks at 1m, 5m, 15m, 30m, 1h, 2h, 4h, 8h and 12h after suspended_at", () => {
    expect(reverificationSchedule(SUSPENDED_AT)).toEqual([
      "2026-11-22T12:01:00.000Z",
      "2026-11-22T12:05:00.000Z",
      "2026-11-22T12:15:00.000Z",
      "2026-11-22T12:30:00.000Z",
      "2026-11-22T13:00:00.000Z",
      "2026-11-22T14:00:00.000Z",
      "2026-11-22T16:00:00.000Z",
      "2026-11-22T20:00:00.000Z",
      "2026-11-23T00:00:00.000Z"
    ])
  })

  it("names the first check strictly after a moment, so a check made on time points at the next one", () => {
    expect(nextReverificationAt(SUSPENDED_AT, SUSPENDED_AT)).toBe("2026-11-22T12:01:00.000Z")
    expect(nextReverificationAt(SUSPENDED_AT, "2026-11-22T12:01:00.000Z")).toBe("2026-11-22T12:05:00.000Z")
    expect(nextReverificationAt(SUSPENDED_AT, "2026-11-22T20:00:00.000Z")).toBe("2026-11-23T00:00:00.000Z")
  })

  it("skips checks whose time has already passed", () => {
    expect(nextReverificationAt(SUSPENDED_AT, "2026-11-22T15:30:00.000Z")).toBe("2026-11-22T16:00:00.000Z")
  })

  it("has no check after the one at +12h", () => {
    expect(nextReverificationAt(SUSPENDED_AT, "2026-11-23T00:00:00.000Z")).toBeNull()
    expect(nextReverificationAt(SUSPENDED_AT, "2026-11-23T09:00:00.000Z")).toBeNull()
  })
})

describe("circuit breaker limits", () => {
  it("trips at 20 consecutive failures and queues up to 10,000 deliveries per endpoint", () => {
    expect(SUSPEND_AFTER_CONSECUTIVE_FAILURES).toBe(20)
    expect(MAX_QUEUED_PER_ENDPOINT).toBe(10_000)
  })
})
