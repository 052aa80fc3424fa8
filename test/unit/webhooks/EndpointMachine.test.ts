import { describe, expect, it } from "vitest"
import {
  dueForReverification,
  type EndpointEvent,
  type EndpointState,
  type EndpointStatus,
  make,
  routeEvent,
  statusOf,
  transition
} from "../../../src/webhooks/EndpointMachine.ts"

const T0 = Date.parse("2026-11-22T12:00:00.000Z")
const MINUTE = 60_000
const HOUR = 60 * MINUTE
const at = (ms: number): string => new Date(ms).toISOString()

/** Minutes after suspension of the nine automatic checks. */
const CHECKS_MINUTES = [1, 5, 15, 30, 60, 120, 240, 480, 720]

const deliveryFailed: EndpointEvent = { _tag: "DeliveryFailed", error: "HTTP 502" }
const checkFailed: EndpointEvent = { _tag: "ReverificationFailed", error: "connection refused" }

/** Applies `n` failed deliveries one millisecond apart, the last one at T0. */
const failTimes = (state: EndpointState, n: number) => {
  let result = { state, intents: [] as ReadonlyArray<unknown> }
  for (let i = n - 1; i >= 0; i--) result = transition(result.state, deliveryFailed, at(T0 - i))
  return result
}

/** An endpoint suspended at T0 by its 20th consecutive failure. */
const suspended = (): EndpointState => failTimes(make(), 20).state

/** The suspended endpoint after its first `n` scheduled checks failed, each on time. */
const afterFailedChecks = (n: number): EndpointState => {
  let state = suspended()
  for (const minutes of CHECKS_MINUTES.slice(0, n)) state = transition(state, checkFailed, at(T0 + minutes * MINUTE)).state
  return state
}

const permanentlyDeactivated = (): EndpointState => afterFailedChecks(9)
const inactive = (): EndpointState => transition(make(), { _tag: "PatchIsActive", value: false }, at(T0)).state

const inStatus: Record<EndpointStatus, () => EndpointState> = {
  active: make,
  inactive,
  suspended,
  permanently_deactivated: permanentlyDeactivated
}

describe("delivery outcomes", () => {
  it("starts active, not verified, with no failures", () => {
    expect(make()).toEqual({
      is_active: true,
      is_verified: false,
      consecutive_failures: 0,
      suspended_at: null,
      next_reactivation_at: null,
      reactivation_attempts: 0,
      permanently_deactivated_at: null,
      last_success_at: null,
      last_failure_at: null,
      last_error: null
    })
    expect(statusOf(make())).toBe("active")
  })

  it("counts consecutive_failures and records last_failure_at and last_error", () => {
    const { intents, state } = transition(make(), deliveryFailed, at(T0))
    expect(state).toEqual({ ...make(), consecutive_failures: 1, last_failure_at: at(T0), last_error: "HTTP 502" })
    expect(intents).toEqual([])
  })

  it("resets consecutive_failures on a successful delivery", () => {
    const { intents, state } = transition(failTimes(make(), 19).state, { _tag: "DeliverySucceeded" }, at(T0 + 1))
    expect(state).toMatchObject({ consecutive_failures: 0, last_success_at: at(T0 + 1), last_error: "HTTP 502" })
    expect(intents).toEqual([])
  })

  it("stays active at 19 consecutive failures", () => {
    const { state } = failTimes(make(), 19)
    expect(statusOf(state)).toBe("active")
    expect(state.consecutive_failures).toBe(19)
  })

  it("suspends the endpoint at 20 consecutive failures", () => {
    const { intents, state } = failTimes(make(), 20)
    expect(state).toEqual({
      ...make(),
      is_active: false,
      consecutive_failures: 20,
      suspended_at: at(T0),
      next_reactivation_at: at(T0 + MINUTE),
      last_failure_at: at(T0),
      last_error: "HTTP 502"
    })
    expect(statusOf(state)).toBe("suspended")
    expect(intents).toEqual([{ _tag: "QueueOutstanding" }, { _tag: "NotifySuspended" }])
  })

  it("records outcomes that land while suspended without moving the frozen counter", () => {
    const failed = transition(suspended(), { _tag: "DeliveryFailed", error: "late" }, at(T0 + 1))
    expect(failed.state).toMatchObject({ consecutive_failures: 20, last_error: "late", suspended_at: at(T0) })
    expect(failed.intents).toEqual([])
    const succeeded = transition(suspended(), { _tag: "DeliverySucceeded" }, at(T0 + 1))
    expect(succeeded.state).toMatchObject({ consecutive_failures: 20, last_success_at: at(T0 + 1), suspended_at: at(T0) })
    expect(succeeded.intents).toEqual([])
  })
})

describe("routing new events", () => {
  it.each<[EndpointStatus, string]>([
    ["active", "deliver"],
    ["suspended", "queue"],
    ["inactive", "drop"],
    ["permanently_deactivated", "drop"]
  ])("routes a matching event for a %s endpoint to %s", (status, route) => {
    expect(routeEvent(inStatus[status]())).toBe(route)
  })
})

describe("automatic re-verification", () => {
  it("is due from next_reactivation_at on, and only while suspended", () => {
    expect(dueForReverification(suspended(), at(T0 + MINUTE - 1))).toBe(false)
    expect(dueForReverification(suspended(), at(T0 + MINUTE))).toBe(true)
    expect(dueForReverification(make(), at(T0 + HOUR))).toBe(false)
    expect(dueForReverification(permanentlyDeactivated(), at(T0 + 24 * HOUR))).toBe(false)
  })

  it("schedules the next check from suspended_at when a check fails", () => {
    const { intents, state } = transition(suspended(), checkFailed, at(T0 + MINUTE))
    expect(state).toMatchObject({
      reactivation_attempts: 1,
      next_reactivation_at: at(T0 + 5 * MINUTE),
      suspended_at: at(T0),
      is_verified: false,
      last_failure_at: at(T0 + MINUTE),
      last_error: "connection refused"
    })
    expect(intents).toEqual([])
  })

  it("checks at 1m, 5m, 15m, 30m, 1h, 2h, 4h, 8h and 12h after suspension", () => {
    let state = suspended()
    const seen: Array<string | null> = [state.next_reactivation_at]
    for (const minutes of CHECKS_MINUTES.slice(0, 8)) {
      state = transition(state, checkFailed, at(T0 + minutes * MINUTE)).state
      seen.push(state.next_reactivation_at)
    }
    expect(seen).toEqual(CHECKS_MINUTES.map((minutes) => at(T0 + minutes * MINUTE)))
    expect(state.reactivation_attempts).toBe(8)
    expect(statusOf(state)).toBe("suspended")
  })

  it("skips checks whose time passed while no worker ran", () => {
    const { state } = transition(suspended(), checkFailed, at(T0 + 3 * HOUR))
    expect(state).toMatchObject({ reactivation_attempts: 1, next_reactivation_at: at(T0 + 4 * HOUR) })
  })

  it("ignores a failed check that lands before next_reactivation_at: a duplicate of one already counted", () => {
    const once = transition(suspended(), checkFailed, at(T0 + MINUTE)).state
    expect(transition(once, checkFailed, at(T0 + MINUTE + 1))).toEqual({ state: once, intents: [] })
  })

  it("reactivates on a successful re-verification and replays the backlog in created_at order", () => {
    const { intents, state } = transition(afterFailedChecks(3), { _tag: "ReverificationSucceeded" }, at(T0 + 30 * MINUTE))
    expect(state).toEqual({
      ...make(),
      is_verified: true,
      last_success_at: at(T0 + 30 * MINUTE),
      last_failure_at: at(T0 + 15 * MINUTE),
      last_error: "connection refused"
    })
    expect(routeEvent(state)).toBe("deliver")
    expect(intents).toEqual([{ _tag: "ReplayQueued" }, { _tag: "NotifyReactivated" }])
  })

  it("permanently deactivates when the final check at +12h fails", () => {
    const { intents, state } = transition(afterFailedChecks(8), checkFailed, at(T0 + 12 * HOUR))
    expect(state).toMatchObject({
      is_active: false,
      suspended_at: null,
      next_reactivation_at: null,
      reactivation_attempts: 9,
      permanently_deactivated_at: at(T0 + 12 * HOUR)
    })
    expect(statusOf(state)).toBe("permanently_deactivated")
    expect(intents).toEqual([
      { _tag: "DeadLetterOutstanding", reason: "endpoint permanently deactivated after failed re-verification" },
      { _tag: "NotifyDisabled" }
    ])
  })

  it.each<EndpointStatus>(["active", "inactive", "permanently_deactivated"])(
    "ignores a check result once the endpoint is %s",
    (status) => {
      const before = inStatus[status]()
      expect(transition(before, { _tag: "ReverificationSucceeded" }, at(T0 + 13 * HOUR))).toEqual({ state: before, intents: [] })
      expect(transition(before, checkFailed, at(T0 + 13 * HOUR))).toEqual({ state: before, intents: [] })
    }
  )
})

describe("verify endpoint", () => {
  it("reactivates a suspended endpoint when verification succeeds, and starts replay", () => {
    const { intents, state } = transition(afterFailedChecks(2), { _tag: "ManualVerifySucceeded" }, at(T0 + 7 * MINUTE))
    expect(statusOf(state)).toBe("active")
    expect(state).toMatchObject({ is_active: true, is_verified: true, suspended_at: null, consecutive_failures: 0, reactivation_attempts: 0 })
    expect(intents).toEqual([{ _tag: "ReplayQueued" }, { _tag: "NotifyReactivated" }])
  })

  it("just marks an active endpoint verified", () => {
    const before = failTimes(make(), 3).state
    const { intents, state } = transition(before, { _tag: "ManualVerifySucceeded" }, at(T0 + 1))
    expect(state).toEqual({ ...before, is_verified: true, last_success_at: at(T0 + 1) })
    expect(intents).toEqual([])
  })

  it.each<EndpointStatus>(["inactive", "permanently_deactivated"])(
    "does not reactivate a %s endpoint: that takes PATCH is_active true",
    (status) => {
      const { intents, state } = transition(inStatus[status](), { _tag: "ManualVerifySucceeded" }, at(T0 + 13 * HOUR))
      expect(statusOf(state)).toBe(status)
      expect(state.is_verified).toBe(true)
      expect(intents).toEqual([])
    }
  )

  it("keeps the automatic schedule when a manual verification of a suspended endpoint fails", () => {
    const before = afterFailedChecks(1)
    const { intents, state } = transition(before, { _tag: "ManualVerifyFailed", error: "HTTP 404" }, at(T0 + 2 * MINUTE))
    expect(state).toEqual({ ...before, is_verified: false, last_failure_at: at(T0 + 2 * MINUTE), last_error: "HTTP 404" })
    expect(intents).toEqual([])
  })

  it("marks an active endpoint unverified when verification fails, without counting a delivery failure", () => {
    const { state } = transition(make(), { _tag: "ManualVerifyFailed", error: "HTTP 404" }, at(T0))
    expect(state).toMatchObject({ is_active: true, is_verified: false, consecutive_failures: 0, last_error: "HTTP 404" })
  })
})

describe("PATCH is_active", () => {
  const patch = (state: EndpointState, value: boolean) => transition(state, { _tag: "PatchIsActive", value }, at(T0 + 13 * HOUR))

  it("moves permanently deactivated → active on PATCH true; already dead-lettered events are not restored", () => {
    const { intents, state } = patch(permanentlyDeactivated(), true)
    expect(state).toMatchObject({
      is_active: true,
      consecutive_failures: 0,
      reactivation_attempts: 0,
      suspended_at: null,
      next_reactivation_at: null,
      permanently_deactivated_at: null
    })
    expect(intents).toEqual([])
  })

  it("moves active → inactive on PATCH false and dead-letters what was still waiting", () => {
    const { intents, state } = patch(make(), false)
    expect(state).toEqual({ ...make(), is_active: false })
    expect(statusOf(state)).toBe("inactive")
    expect(intents).toEqual([{ _tag: "DeadLetterOutstanding", reason: "endpoint set inactive" }])
  })

  it("moves inactive → active on PATCH true with a fresh consecutive_failures count", () => {
    const turnedOff = patch(failTimes(make(), 12).state, false).state
    const { intents, state } = patch(turnedOff, true)
    expect(state).toMatchObject({ is_active: true, consecutive_failures: 0 })
    expect(intents).toEqual([])
  })

  it("moves suspended → inactive on PATCH false: re-verification stops and the queued backlog is dead-lettered", () => {
    const { intents, state } = patch(afterFailedChecks(2), false)
    expect(state).toMatchObject({ is_active: false, suspended_at: null, next_reactivation_at: null })
    expect(statusOf(state)).toBe("inactive")
    expect(dueForReverification(state, at(T0 + 24 * HOUR))).toBe(false)
    expect(intents).toEqual([{ _tag: "DeadLetterOutstanding", reason: "endpoint set inactive" }])
  })

  it("leaves a suspended endpoint suspended on PATCH true: a successful verification is the way out", () => {
    const before = suspended()
    expect(patch(before, true)).toEqual({ state: before, intents: [] })
  })

  it.each<[EndpointStatus, boolean]>([["active", true], ["inactive", false], ["permanently_deactivated", false]])(
    "changes nothing when a %s endpoint is PATCHed to is_active %s",
    (status, value) => {
      const before = inStatus[status]()
      expect(patch(before, value)).toEqual({ state: before, intents: [] })
    }
  )
})
