import { addSeconds, type Timestamp } from "../kernel/Timestamp.ts"
import type { DeliveryState, DeliveryStatus } from "../ports/WebhookDeliveryStore.ts"
import { MAX_QUEUED_PER_ENDPOINT, retryDelaySeconds } from "./RetrySchedule.ts"

/** A delivery's status and the part of a delivery this machine reads and writes, stored as the port declares them. */
export { DeliveryState, DeliveryStatus } from "../ports/WebhookDeliveryStore.ts"

/** An endpoint's retry settings, copied onto each delivery when it is created. */
export type RetrySettings = Pick<DeliveryState, "max_retries" | "retry_strategy">

/** Where a new delivery goes: attempted now, or parked behind a suspended endpoint whose queue holds `queued` rows. */
export type Placement = { readonly _tag: "Deliver" } | { readonly _tag: "Queue"; readonly queued: number }

/** What can happen to a delivery: an attempt's outcome, or its endpoint's circuit breaker moving. */
export type DeliveryEvent =
  /** The endpoint answered 2xx within its timeout. */
  | { readonly _tag: "AttemptSucceeded"; readonly status_code: number; readonly time_ms: number }
  /** The endpoint answered non-2xx (`status_code`), timed out or was unreachable (`status_code` null). */
  | {
    readonly _tag: "AttemptFailed"
    readonly status_code: number | null
    readonly time_ms: number | null
    readonly error: string
  }
  /** The endpoint was suspended: an unfinished delivery is parked as `queued`. */
  | { readonly _tag: "EndpointSuspended" }
  /** The endpoint recovered: a `queued` delivery becomes `pending`, due at once. */
  | { readonly _tag: "Replay" }
  /** The endpoint was deactivated: an unfinished delivery gives up, with `reason` as its error_message. */
  | { readonly _tag: "DeadLetter"; readonly reason: string }

/** What the service must do after a transition. */
export type DeliveryIntent =
  /** Tell the endpoint's circuit breaker an attempt succeeded (`DeliverySucceeded`). */
  | { readonly _tag: "ResetFailures" }
  /** Tell the endpoint's circuit breaker an attempt failed (`DeliveryFailed`). */
  | { readonly _tag: "CountFailure"; readonly error: string }

/** A transition's result: the next state and what to do about it. */
export interface DeliveryTransition<S extends DeliveryState> {
  readonly state: S
  readonly intents: ReadonlyArray<DeliveryIntent>
}

/** The error_message of a delivery refused because its endpoint already holds the maximum of queued deliveries. */
export const QUEUE_FULL = "queue full"

/**
 * Attempts a delivery may make in all: the first plus `max_retries` retries. The spec's "retries
 * continue until max_retries attempts" is read as max_retries *retries* (so 0 still means one
 * attempt, and the default 8 means 9), and strategy `none` makes no retries whatever max_retries says.
 */
export const maxAttempts = (settings: RetrySettings): number =>
  settings.retry_strategy === "none" ? 1 : 1 + settings.max_retries

/** The spec's `can_retry`: a manual retry (a new delivery row) is allowed once the delivery is failed or dead-lettered. */
export const canRetry = (state: DeliveryState): boolean => state.status === "failed" || state.status === "dead_letter"

/**
 * A new delivery row, as the fan-out or a manual retry creates it. The delivery that would exceed
 * MAX_QUEUED_PER_ENDPOINT is stored as `dead_letter` ("queue full") rather than dropped, so nothing
 * is silently lost and it can still be retried by hand.
 */
export const make = (settings: RetrySettings, placement: Placement, now: Timestamp): DeliveryTransition<DeliveryState> => {
  const fresh: DeliveryState = {
    status: "pending",
    attempt_number: 0,
    max_retries: settings.max_retries,
    retry_strategy: settings.retry_strategy,
    next_retry_at: null,
    completed_at: null,
    response_status_code: null,
    response_time_ms: null,
    error_message: null
  }
  if (placement._tag === "Deliver") return { state: fresh, intents: [] }
  if (placement.queued < MAX_QUEUED_PER_ENDPOINT) return { state: { ...fresh, status: "queued" }, intents: [] }
  return { state: { ...fresh, status: "dead_letter", completed_at: now, error_message: QUEUE_FULL }, intents: [] }
}

const finished = (status: DeliveryStatus): boolean =>
  status === "success" || status === "failed" || status === "dead_letter"

/** The pure transition: next state plus intents. Stale results and moves that do not apply leave the state as it was. */
export const transition = <S extends DeliveryState>(
  state: S,
  event: DeliveryEvent,
  now: Timestamp
): DeliveryTransition<S> => {
  const unchanged: DeliveryTransition<S> = { state, intents: [] }
  switch (event._tag) {
    case "AttemptSucceeded":
      // A result for a finished delivery is stale (a duplicate, or one dead-lettered meanwhile). A
      // parked (`queued`) delivery whose attempt was in flight did reach the receiver, so it is recorded
      // as a success rather than replayed as a duplicate later.
      if (finished(state.status)) return unchanged
      return {
        state: {
          ...state,
          status: "success",
          attempt_number: state.attempt_number + 1,
          next_retry_at: null,
          completed_at: now,
          response_status_code: event.status_code,
          response_time_ms: event.time_ms,
          error_message: null
        },
        intents: [{ _tag: "ResetFailures" }]
      }
    case "AttemptFailed": {
      // A failure that lands on a parked delivery is dropped: it will be replayed in full after
      // recovery, and the suspended endpoint's counter is frozen anyway.
      if (state.status !== "pending" && state.status !== "retrying") return unchanged
      const attempts = state.attempt_number + 1
      const outcome = {
        ...state,
        attempt_number: attempts,
        response_status_code: event.status_code,
        response_time_ms: event.time_ms,
        error_message: event.error
      }
      const count: DeliveryIntent = { _tag: "CountFailure", error: event.error }
      // The retry after attempt k is retry number k.
      const delay = attempts < maxAttempts(state) ? retryDelaySeconds(state.retry_strategy, attempts) : null
      if (delay === null) {
        return { state: { ...outcome, status: "failed", next_retry_at: null, completed_at: now }, intents: [count] }
      }
      const at = addSeconds(now, delay)
      return {
        state: { ...outcome, status: "retrying", next_retry_at: at },
        intents: [count]
      }
    }
    case "EndpointSuspended":
      // Unfinished deliveries stop hammering the suspended endpoint and wait with the backlog;
      // attempt_number is kept, so parking never grants extra attempts.
      if (state.status !== "pending" && state.status !== "retrying") return unchanged
      return { state: { ...state, status: "queued", next_retry_at: null }, intents: [] }
    case "Replay":
      if (state.status !== "queued") return unchanged
      return { state: { ...state, status: "pending", next_retry_at: null }, intents: [] }
    case "DeadLetter":
      if (finished(state.status)) return unchanged
      return {
        state: { ...state, status: "dead_letter", next_retry_at: null, completed_at: now, error_message: event.reason },
        intents: []
      }
  }
}
