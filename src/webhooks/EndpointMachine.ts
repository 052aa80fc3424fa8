import { Schema } from "effect"
import type { Timestamp } from "../kernel/Timestamp.ts"
import type { EndpointState } from "../ports/WebhookEndpointStore.ts"
import { nextReverificationAt, SUSPEND_AFTER_CONSECUTIVE_FAILURES } from "./RetrySchedule.ts"

/** The part of a webhook endpoint its circuit breaker reads and writes (stored as the port declares it). */
export { EndpointState } from "../ports/WebhookEndpointStore.ts"

/** An endpoint's state in the spec's table, derived from its fields. */
export const EndpointStatus = Schema.Literals(["active", "inactive", "suspended", "permanently_deactivated"])
/** An endpoint's state in the spec's table. */
export type EndpointStatus = typeof EndpointStatus.Type
export declare namespace EndpointStatus {}

/** What can happen to an endpoint's health. */
export type EndpointEvent =
  /** One of its delivery attempts got a 2xx in time. */
  | { readonly _tag: "DeliverySucceeded" }
  /** One of its delivery attempts failed (non-2xx, timeout, unreachable). */
  | { readonly _tag: "DeliveryFailed"; readonly error: string }
  /** A scheduled automatic re-verification check succeeded. */
  | { readonly _tag: "ReverificationSucceeded" }
  /** A scheduled automatic re-verification check failed. */
  | { readonly _tag: "ReverificationFailed"; readonly error: string }
  /** `POST /webhook-endpoints/{id}/verify` succeeded. */
  | { readonly _tag: "ManualVerifySucceeded" }
  /** `POST /webhook-endpoints/{id}/verify` failed. */
  | { readonly _tag: "ManualVerifyFailed"; readonly error: string }
  /** `PATCH /webhook-endpoints/{id}` with `is_active`. */
  | { readonly _tag: "PatchIsActive"; readonly value: boolean }

/** What the service must do after a transition. */
export type EndpointIntent =
  /** Park the endpoint's `pending` and `retrying` deliveries (delivery event `EndpointSuspended`). */
  | { readonly _tag: "QueueOutstanding" }
  /** Replay the endpoint's `queued` deliveries in created_at order (delivery event `Replay`). */
  | { readonly _tag: "ReplayQueued" }
  /** Dead-letter the endpoint's unfinished deliveries (delivery event `DeadLetter` with this `reason`). */
  | { readonly _tag: "DeadLetterOutstanding"; readonly reason: string }
  /** Email the account: the endpoint was suspended. */
  | { readonly _tag: "NotifySuspended" }
  /** Email the account: the suspended endpoint is active again. */
  | { readonly _tag: "NotifyReactivated" }
  /** Email the account: the endpoint was permanently deactivated. */
  | { readonly _tag: "NotifyDisabled" }

/** A transition's result: the next state and what to do about it. */
export interface EndpointTransition<S extends EndpointState> {
  readonly state: S
  readonly intents: ReadonlyArray<EndpointIntent>
}

/** What the fan-out does with a new matching event: deliver it, queue it behind a suspension, or create no delivery. */
export type EventRoute = "deliver" | "queue" | "drop"

/** The health of a newly created endpoint: active, not yet verified, no history. */
export const make = (): EndpointState => ({
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

/** The endpoint's state in the spec's table. */
export const statusOf = (state: EndpointState): EndpointStatus => {
  if (state.permanently_deactivated_at !== null) return "permanently_deactivated"
  if (state.suspended_at !== null) return "suspended"
  return state.is_active ? "active" : "inactive"
}

/**
 * Where a new matching event goes. While suspended it is queued (the service counts the queue and
 * passes the count to the delivery's `make`, which dead-letters the 10,001st); an inactive or
 * permanently deactivated endpoint gets no delivery row at all.
 */
export const routeEvent = (state: EndpointState): EventRoute => {
  switch (statusOf(state)) {
    case "active":
      return "deliver"
    case "suspended":
      return "queue"
    case "inactive":
    case "permanently_deactivated":
      return "drop"
  }
}

/** Whether an automatic re-verification check is due at `now`. */
export const dueForReverification = (state: EndpointState, now: Timestamp): boolean =>
  statusOf(state) === "suspended" && state.next_reactivation_at !== null && now >= state.next_reactivation_at

// error_message of deliveries dead-lettered by a deactivation, so the delivery history explains itself.
const DISABLED_REASON = "endpoint permanently deactivated after failed re-verification"
const PATCHED_INACTIVE_REASON = "endpoint set inactive"

/**
 * What became of the endpoint's unfinished deliveries when it stopped taking them: parked while it
 * is suspended, dead-lettered (with the reason given then) once it is inactive or deactivated. The
 * engine applies the same to a delivery that was in flight then and is stored only afterwards.
 */
export const outstandingMove = (
  state: EndpointState
): { readonly _tag: "EndpointSuspended" } | { readonly _tag: "DeadLetter"; readonly reason: string } | undefined => {
  switch (statusOf(state)) {
    case "active":
      return undefined
    case "suspended":
      return { _tag: "EndpointSuspended" }
    case "inactive":
      return { _tag: "DeadLetter", reason: PATCHED_INACTIVE_REASON }
    case "permanently_deactivated":
      return { _tag: "DeadLetter", reason: DISABLED_REASON }
  }
}

/** Back to active with a fresh circuit breaker: the way out of every non-active state. */
const activated = <S extends EndpointState>(state: S): S => ({
  ...state,
  is_active: true,
  consecutive_failures: 0,
  suspended_at: null,
  next_reactivation_at: null,
  reactivation_attempts: 0,
  permanently_deactivated_at: null
})

const succeeded = <S extends EndpointState>(state: S, now: Timestamp): S => ({ ...state, last_success_at: now })

const failed = <S extends EndpointState>(state: S, error: string, now: Timestamp): S => ({
  ...state,
  last_failure_at: now,
  last_error: error
})

/** A suspended endpoint passed a check: active again, backlog replayed, account told. */
const reactivated = <S extends EndpointState>(state: S, now: Timestamp): EndpointTransition<S> => ({
  state: activated({ ...succeeded(state, now), is_verified: true }),
  intents: [{ _tag: "ReplayQueued" }, { _tag: "NotifyReactivated" }]
})

/** The pure transition: next state plus intents. Stale or duplicate results leave the state as it was. */
export const transition = <S extends EndpointState>(
  state: S,
  event: EndpointEvent,
  now: Timestamp
): EndpointTransition<S> => {
  const status = statusOf(state)
  const unchanged: EndpointTransition<S> = { state, intents: [] }
  switch (event._tag) {
    case "DeliverySucceeded":
      // Outside `active` (an attempt that was in flight when the breaker tripped or a PATCH landed)
      // the result is recorded but the counter stays frozen: only a passed check lifts a suspension.
      return {
        state: status === "active" ? { ...succeeded(state, now), consecutive_failures: 0 } : succeeded(state, now),
        intents: []
      }
    case "DeliveryFailed": {
      // Every failed attempt counts, not only a delivery's final one: the breaker exists to stop
      // hammering a dead endpoint, and 20 attempts is what it takes to notice.
      if (status !== "active") return { state: failed(state, event.error, now), intents: [] }
      const consecutive_failures = state.consecutive_failures + 1
      if (consecutive_failures < SUSPEND_AFTER_CONSECUTIVE_FAILURES) {
        return { state: { ...failed(state, event.error, now), consecutive_failures }, intents: [] }
      }
      return {
        state: {
          ...failed(state, event.error, now),
          consecutive_failures,
          is_active: false,
          suspended_at: now,
          next_reactivation_at: nextReverificationAt(now, now),
          reactivation_attempts: 0
        },
        intents: [{ _tag: "QueueOutstanding" }, { _tag: "NotifySuspended" }]
      }
    }
    case "ReverificationSucceeded":
      // A check result for an endpoint that is no longer suspended is stale (verified or PATCHed meanwhile).
      return status === "suspended" ? reactivated(state, now) : unchanged
    case "ReverificationFailed": {
      // A failed check before next_reactivation_at is a duplicate of one already counted (a second
      // worker after a lease expired): counting it would shorten the suspension window.
      if (state.suspended_at === null || !dueForReverification(state, now)) return unchanged
      const checked = {
        ...failed(state, event.error, now),
        is_verified: false,
        reactivation_attempts: state.reactivation_attempts + 1
      }
      const next = nextReverificationAt(state.suspended_at, now)
      if (next !== null) return { state: { ...checked, next_reactivation_at: next }, intents: [] }
      // The +12h check failed: the suspension window is over.
      return {
        state: { ...checked, suspended_at: null, next_reactivation_at: null, permanently_deactivated_at: now },
        intents: [{ _tag: "DeadLetterOutstanding", reason: DISABLED_REASON }, { _tag: "NotifyDisabled" }]
      }
    }
    case "ManualVerifySucceeded":
      // Verify lifts a suspension only; an endpoint turned off (by PATCH or for good) waits for PATCH is_active true.
      if (status === "suspended") return reactivated(state, now)
      return { state: { ...succeeded(state, now), is_verified: true }, intents: [] }
    case "ManualVerifyFailed":
      // The automatic schedule goes on: a manual check is not one of the nine.
      return { state: { ...failed(state, event.error, now), is_verified: false }, intents: [] }
    case "PatchIsActive":
      if (event.value) {
        // From permanently deactivated the spec says active again, and "already dead-lettered events
        // are not restored", so nothing is replayed. A suspended endpoint stays suspended: verify is
        // the way out, so a dead URL is not hammered on a user's say-so.
        if (status === "inactive" || status === "permanently_deactivated") return { state: activated(state), intents: [] }
        return unchanged
      }
      // Turning off an active or suspended endpoint ends delivery; what was still waiting is
      // dead-lettered rather than dropped, so it stays visible and can be retried by hand.
      if (status === "active" || status === "suspended") {
        return {
          state: { ...state, is_active: false, suspended_at: null, next_reactivation_at: null },
          intents: [{ _tag: "DeadLetterOutstanding", reason: PATCHED_INACTIVE_REASON }]
        }
      }
      return unchanged
  }
}
