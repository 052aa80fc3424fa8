import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { makeAdvanceTime } from "../../support/AdvanceTime.ts"
import {
  dueForReverification,
  type EndpointEvent,
  type EndpointIntent,
  type EndpointState,
  type EndpointStatus,
  make,
  routeEvent,
  statusOf,
  transition
} from "../../../src/webhooks/EndpointMachine.ts"

const T0 = Date.parse("2026-11-22T12:00:00.000Z")
const MINUTE = 60_000
const at = (ms: number): string => new Date(ms).toISOString()
const atOrNull = (ms: number | undefined): string | null => (ms === undefined ? null : at(ms))

// The spec's re-verification instants, in minutes after suspension.
const CHECKS_MINUTES = [1, 5, 15, 30, 60, 120, 240, 480, 720]

/** The model: the spec's circuit breaker, with times as plain milliseconds. */
interface Model {
  now: number
  status: EndpointStatus
  /** Failed delivery attempts since the last success or (re)activation. */
  failures: number
  suspendedAt: number | undefined
  /** The scheduled checks still ahead while suspended; a failed check drops every instant up to now. */
  checksAhead: Array<number>
  checksMade: number
  verified: boolean
  lastSuccess: number | undefined
  lastFailure: number | undefined
  lastError: string | null
}

/** The machine under test, fed one event at a time. */
interface Real {
  now: number
  state: EndpointState
}

const ROUTES: Record<EndpointStatus, string> = {
  active: "deliver",
  suspended: "queue",
  inactive: "drop",
  permanently_deactivated: "drop"
}

const agree = (m: Model, r: Real) => {
  expect(statusOf(r.state)).toBe(m.status)
  expect(r.state.is_active).toBe(m.status === "active")
  expect(r.state.consecutive_failures).toBe(m.failures)
  // An active endpoint has fewer than 20 consecutive failures; a suspended one got there.
  if (m.status === "active") expect(r.state.consecutive_failures).toBeLessThan(20)
  if (m.status === "suspended") expect(r.state.consecutive_failures).toBe(20)
  expect(r.state.suspended_at).toBe(atOrNull(m.suspendedAt))
  expect(r.state.next_reactivation_at).toBe(atOrNull(m.checksAhead[0]))
  expect(r.state.reactivation_attempts).toBe(m.checksMade)
  expect(r.state.is_verified).toBe(m.verified)
  expect(r.state.last_success_at).toBe(atOrNull(m.lastSuccess))
  expect(r.state.last_failure_at).toBe(atOrNull(m.lastFailure))
  expect(r.state.last_error).toBe(m.lastError)
  expect(routeEvent(r.state)).toBe(ROUTES[m.status])
  expect(dueForReverification(r.state, at(r.now))).toBe(m.checksAhead[0] !== undefined && m.now >= m.checksAhead[0])
}

const apply = (r: Real, event: EndpointEvent): ReadonlyArray<EndpointIntent> => {
  const { intents, state } = transition(r.state, event, at(r.now))
  r.state = state
  return intents
}

const recordFailure = (m: Model, error: string) => {
  m.lastFailure = m.now
  m.lastError = error
}

const activate = (m: Model) => Object.assign(m, { status: "active", failures: 0, suspendedAt: undefined, checksAhead: [], checksMade: 0 })

const reactivate = (m: Model, intents: ReadonlyArray<EndpointIntent>) => {
  activate(m)
  m.verified = true
  m.lastSuccess = m.now
  expect(intents).toEqual([{ _tag: "ReplayQueued" }, { _tag: "NotifyReactivated" }])
}

class DeliverySucceededCommand implements fc.Command<Model, Real> {
  check = () => true
  run(m: Model, r: Real) {
    expect(apply(r, { _tag: "DeliverySucceeded" })).toEqual([])
    // A second success at the same instant changes nothing, which lets the recorder skip it.
    expect(transition(r.state, { _tag: "DeliverySucceeded" }, at(r.now))).toEqual({ state: r.state, intents: [] })
    m.lastSuccess = m.now
    if (m.status === "active") m.failures = 0
    agree(m, r)
  }
  toString = () => "DeliverySucceeded"
}

class DeliveryFailedCommand implements fc.Command<Model, Real> {
  check = () => true
  run(m: Model, r: Real) {
    const intents = apply(r, { _tag: "DeliveryFailed", error: "HTTP 500" })
    recordFailure(m, "HTTP 500")
    if (m.status === "active" && ++m.failures === 20) {
      Object.assign(m, {
        status: "suspended",
        suspendedAt: m.now,
        checksAhead: CHECKS_MINUTES.map((minutes) => m.now + minutes * MINUTE),
        checksMade: 0
      })
      expect(intents).toEqual([{ _tag: "QueueOutstanding" }, { _tag: "NotifySuspended" }])
    } else {
      expect(intents).toEqual([])
    }
    agree(m, r)
  }
  toString = () => "DeliveryFailed"
}

class ReverificationSucceededCommand implements fc.Command<Model, Real> {
  check = (m: Readonly<Model>) => m.status === "suspended"
  run(m: Model, r: Real) {
    reactivate(m, apply(r, { _tag: "ReverificationSucceeded" }))
    agree(m, r)
  }
  toString = () => "ReverificationSucceeded"
}

/** A failed check: on time, late, or (before its instant) a duplicate that must change nothing. */
class ReverificationFailedCommand implements fc.Command<Model, Real> {
  check = (m: Readonly<Model>) => m.status === "suspended"
  run(m: Model, r: Real) {
    const intents = apply(r, { _tag: "ReverificationFailed", error: "refused" })
    if (m.now >= m.checksAhead[0]!) {
      recordFailure(m, "refused")
      m.verified = false
      m.checksMade += 1
      m.checksAhead = m.checksAhead.filter((instant) => instant > m.now)
      if (m.checksAhead.length === 0) {
        Object.assign(m, { status: "permanently_deactivated", suspendedAt: undefined })
        expect(intents).toEqual([
          { _tag: "DeadLetterOutstanding", reason: "endpoint permanently deactivated after failed re-verification" },
          { _tag: "NotifyDisabled" }
        ])
      } else {
        expect(intents).toEqual([])
      }
    } else {
      expect(intents).toEqual([])
    }
    agree(m, r)
  }
  toString = () => "ReverificationFailed"
}

class ManualVerifySucceededCommand implements fc.Command<Model, Real> {
  check = () => true
  run(m: Model, r: Real) {
    const intents = apply(r, { _tag: "ManualVerifySucceeded" })
    if (m.status === "suspended") {
      reactivate(m, intents)
    } else {
      m.verified = true
      m.lastSuccess = m.now
      expect(intents).toEqual([])
    }
    agree(m, r)
  }
  toString = () => "ManualVerifySucceeded"
}

class ManualVerifyFailedCommand implements fc.Command<Model, Real> {
  check = () => true
  run(m: Model, r: Real) {
    expect(apply(r, { _tag: "ManualVerifyFailed", error: "HTTP 404" })).toEqual([])
    recordFailure(m, "HTTP 404")
    m.verified = false
    agree(m, r)
  }
  toString = () => "ManualVerifyFailed"
}

class PatchIsActiveCommand implements fc.Command<Model, Real> {
  constructor(readonly value: boolean) {}
  check = () => true
  run(m: Model, r: Real) {
    const intents = apply(r, { _tag: "PatchIsActive", value: this.value })
    if (this.value && (m.status === "inactive" || m.status === "permanently_deactivated")) {
      activate(m)
      expect(intents).toEqual([])
    } else if (!this.value && (m.status === "active" || m.status === "suspended")) {
      Object.assign(m, { status: "inactive", suspendedAt: undefined, checksAhead: [] })
      expect(intents).toEqual([{ _tag: "DeadLetterOutstanding", reason: "endpoint set inactive" }])
    } else {
      expect(intents).toEqual([])
    }
    agree(m, r)
  }
  toString = () => `PatchIsActive(${this.value})`
}

const AdvanceTimeCommand = makeAdvanceTime<Model, Real>(agree)

/** Jumps to the next scheduled check, so checks also happen exactly on time. */
class AdvanceToCheckCommand implements fc.Command<Model, Real> {
  check = (m: Readonly<Model>) => m.checksAhead[0] !== undefined && m.now < m.checksAhead[0]
  run(m: Model, r: Real) {
    m.now = m.checksAhead[0]!
    r.now = m.now
    agree(m, r)
  }
  toString = () => "AdvanceToCheck"
}

// Failed deliveries and failed checks dominate, so runs reach suspension and, through all nine
// checks, permanent deactivation; successes and PATCHes are rare enough not to reset every run.
const commands = fc.commands([
  fc.oneof(
    { weight: 1, arbitrary: fc.constant(new DeliverySucceededCommand()) },
    { weight: 25, arbitrary: fc.constant(new DeliveryFailedCommand()) },
    { weight: 1, arbitrary: fc.constant(new ReverificationSucceededCommand()) },
    { weight: 15, arbitrary: fc.constant(new ReverificationFailedCommand()) },
    { weight: 1, arbitrary: fc.constant(new ManualVerifySucceededCommand()) },
    { weight: 1, arbitrary: fc.constant(new ManualVerifyFailedCommand()) },
    { weight: 1, arbitrary: fc.boolean().map((value) => new PatchIsActiveCommand(value)) },
    { weight: 2, arbitrary: fc.integer({ min: 1, max: 5 * 60 * MINUTE }).map((ms) => new AdvanceTimeCommand(ms)) },
    { weight: 15, arbitrary: fc.constant(new AdvanceToCheckCommand()) }
  )
], { size: "large" })

describe("endpoint machine against a model", () => {
  it("agrees on status, consecutive_failures, the re-verification schedule and routing after any sequence of events", () => {
    fc.assert(
      fc.property(commands, (cmds) => {
        const setup = () => ({
          model: {
            now: T0,
            status: "active" as const,
            failures: 0,
            suspendedAt: undefined,
            checksAhead: [],
            checksMade: 0,
            verified: false,
            lastSuccess: undefined,
            lastFailure: undefined,
            lastError: null
          },
          real: { now: T0, state: make() }
        })
        fc.modelRun(setup, cmds)
      }),
      { numRuns: 200 }
    )
  })
})
