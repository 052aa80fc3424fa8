import fc from "fast-check"
import { describe, expect, it } from "vitest"
import type { Outcome } from "../../../src/webhooks/DeliveryAttempt.ts"
import * as DeliveryMachine from "../../../src/webhooks/DeliveryMachine.ts"
import {
  type EndpointEvent,
  type EndpointState,
  make,
  statusOf,
  transition
} from "../../../src/webhooks/EndpointMachine.ts"
import { recordPath, worthStoring } from "../../../src/webhooks/engine/RecordPlan.ts"

const T0 = Date.parse("2026-11-22T12:00:00.000Z")
const at = (ms: number): string => new Date(ms).toISOString()

const deliveryFailed: EndpointEvent = { _tag: "DeliveryFailed", error: "HTTP 502" }

/** Applies `n` failed deliveries one millisecond apart, the last one at T0. */
const failTimes = (state: EndpointState, n: number) => {
  let result = { state, intents: [] as ReadonlyArray<unknown> }
  for (let i = n - 1; i >= 0; i--) result = transition(result.state, deliveryFailed, at(T0 - i))
  return result
}

describe("what is worth storing", () => {
  const succeeded = (state: EndpointState, ms: number) => transition(state, { _tag: "DeliverySucceeded" }, at(ms)).state

  it("skips a healthy endpoint's last_success_at moving by less than a second, and stores it once it moved a second", () => {
    const first = succeeded(make(), T0)
    expect(worthStoring(make(), first)).toBe(true)
    expect(worthStoring(first, succeeded(first, T0 + 999))).toBe(false)
    expect(worthStoring(first, succeeded(first, T0 + 1_000))).toBe(true)
    expect(worthStoring(first, first)).toBe(false)
  })

  it("stores every other change, however soon: a failure, its count, a reset of the count, a suspension", () => {
    const healthy = succeeded(make(), T0)
    const failed = transition(healthy, deliveryFailed, at(T0 + 1)).state
    expect(worthStoring(healthy, failed)).toBe(true)
    const twice = transition(failed, deliveryFailed, at(T0 + 1)).state
    expect(worthStoring(failed, twice)).toBe(true)
    // A success right after failures resets the count: stored, though last_success_at barely moved.
    expect(worthStoring(twice, succeeded(twice, T0 + 2))).toBe(true)
    expect(worthStoring(failTimes(make(), 19).state, failTimes(make(), 20).state)).toBe(true)
  })
})

// Endpoints as the machine makes them: a history of events, a millisecond or more apart, before T0.
const endpointEvent: fc.Arbitrary<EndpointEvent> = fc.oneof(
  { weight: 4, arbitrary: fc.constant<EndpointEvent>({ _tag: "DeliverySucceeded" }) },
  { weight: 4, arbitrary: fc.constant(deliveryFailed) },
  { weight: 1, arbitrary: fc.boolean().map((value): EndpointEvent => ({ _tag: "PatchIsActive", value })) },
  { weight: 1, arbitrary: fc.constant<EndpointEvent>({ _tag: "ManualVerifySucceeded" }) }
)
const endpointArb = fc.array(fc.tuple(endpointEvent, fc.integer({ min: 1, max: 1_500 })), { maxLength: 40 }).map((history) => {
  let ms = T0 - history.reduce((sum, [, gap]) => sum + gap, 0)
  let state = make()
  for (const [event, gap] of history) {
    ms += gap
    state = transition(state, event, at(ms)).state
  }
  return state
})

const outcomeArb: fc.Arbitrary<Outcome | undefined> = fc.oneof(
  { weight: 6, arbitrary: fc.constant<Outcome>({ ok: true, status_code: 200, time_ms: 3, error: "" }) },
  { weight: 2, arbitrary: fc.constant<Outcome>({ ok: false, status_code: 500, time_ms: 3, error: "HTTP 500" }) },
  { weight: 1, arbitrary: fc.constant(undefined) }
)
const attemptArb = fc.record({
  outcome: outcomeArb,
  fresh: fc.boolean(),
  retrying: fc.boolean()
})

const claimedDelivery = (retrying: boolean): DeliveryMachine.DeliveryState => ({
  ...DeliveryMachine.make({ max_retries: 8, retry_strategy: "exponential" }, { _tag: "Deliver" }, at(T0 - 60_000)).state,
  ...(retrying ? { status: "retrying" as const, attempt_number: 2, next_retry_at: at(T0) } : {})
})

/**
 * The rule, written from the recorder's contract rather than from the code: outcomes may skip the
 * endpoint's lock only when the circuit breaker, fed every attempt's result in order, asks for
 * nothing and its row would change in nothing but a `last_success_at` already set that moves by
 * under a second; and every delivery not stored yet was attempted while the endpoint was active.
 */
const mayGoFast = (endpoint: EndpointState, attempts: ReadonlyArray<{ outcome: Outcome | undefined; fresh: boolean }>, now: string) => {
  if (attempts.some(({ fresh, outcome }) => fresh && (outcome === undefined || statusOf(endpoint) !== "active"))) return false
  let state = endpoint
  for (const { outcome } of attempts) {
    if (outcome === undefined) continue
    const moved = transition(state, outcome.ok ? { _tag: "DeliverySucceeded" } : { _tag: "DeliveryFailed", error: outcome.error }, now)
    if (moved.intents.length > 0) return false
    state = moved.state
  }
  for (const key of Object.keys(endpoint) as Array<keyof EndpointState>) {
    if (key !== "last_success_at" && state[key] !== endpoint[key]) return false
  }
  if (state.last_success_at === endpoint.last_success_at) return true
  return endpoint.last_success_at !== null && Date.parse(state.last_success_at!) - Date.parse(endpoint.last_success_at) < 1_000
}

describe("choosing how a batch of outcomes is recorded", () => {
  it("goes without the endpoint's lock exactly when the rule allows, with each delivery's own transition", () => {
    fc.assert(
      fc.property(endpointArb, fc.array(attemptArb, { minLength: 1, maxLength: 30 }), fc.integer({ min: 0, max: 3_000 }), (endpoint, drawn, later) => {
        const now = at(T0 + later)
        const attempts = drawn.map(({ outcome, fresh, retrying }) => ({ delivery: claimedDelivery(retrying), outcome, fresh }))
        const path = recordPath(endpoint, attempts, now)
        expect(path._tag).toBe(mayGoFast(endpoint, attempts, now) ? "fast" : "locked")
        if (path._tag === "fast") {
          expect(path.transitions.map((t) => t.state)).toEqual(attempts.map(({ delivery, outcome }) =>
            outcome === undefined
              ? delivery
              : DeliveryMachine.transition(
                delivery,
                outcome.ok
                  ? { _tag: "AttemptSucceeded", status_code: 200, time_ms: 3 }
                  : { _tag: "AttemptFailed", status_code: 500, time_ms: 3, error: outcome.error },
                now
              ).state
          ))
        }
      }),
      { numRuns: 2_000 }
    )
  })

  it("records a healthy endpoint's successes a moment after its last stored success without the lock", () => {
    const healthy = transition(make(), { _tag: "DeliverySucceeded" }, at(T0)).state
    const attempts = [true, false, true].map((fresh) => ({
      delivery: claimedDelivery(false),
      outcome: { ok: true, status_code: 200, time_ms: 3, error: "" },
      fresh
    }))
    expect(recordPath(healthy, attempts, at(T0 + 500))._tag).toBe("fast")
    expect(recordPath(healthy, attempts, at(T0 + 1_000))._tag).toBe("locked")
  })

  it("takes the lock for a failure, for an unsent fresh delivery, and for a fresh delivery to a stopped endpoint", () => {
    const healthy = transition(make(), { _tag: "DeliverySucceeded" }, at(T0)).state
    const ok = { ok: true, status_code: 200, time_ms: 3, error: "" }
    const failed = { ok: false, status_code: 500, time_ms: 3, error: "HTTP 500" }
    const one = (outcome: Outcome | undefined, fresh: boolean) => [{ delivery: claimedDelivery(false), outcome, fresh }]
    expect(recordPath(healthy, one(failed, false), at(T0 + 1))._tag).toBe("locked")
    expect(recordPath(healthy, one(undefined, true), at(T0 + 1))._tag).toBe("locked")
    expect(recordPath(healthy, one(undefined, false), at(T0 + 1))._tag).toBe("fast")
    const off = transition(healthy, { _tag: "PatchIsActive", value: false }, at(T0)).state
    expect(recordPath(off, one(ok, true), at(T0 + 1))._tag).toBe("locked")
  })
})
