import type { Timestamp } from "../../kernel/Timestamp.ts"
import { EndpointState } from "../../ports/WebhookEndpointStore.ts"
import type { Outcome } from "../DeliveryAttempt.ts"
import * as DeliveryMachine from "../DeliveryMachine.ts"
import * as EndpointMachine from "../EndpointMachine.ts"

/**
 * The delivery machine's move for an attempt's outcome; an outcome of `undefined` (the delivery was
 * let go unsent) moves nothing.
 */
export const transitionOf = <S extends DeliveryMachine.DeliveryState>(
  state: S,
  outcome: Outcome | undefined,
  at: Timestamp
): DeliveryMachine.DeliveryTransition<S> =>
  outcome === undefined
    ? { state, intents: [] }
    : DeliveryMachine.transition(
      state,
      outcome.ok
        ? { _tag: "AttemptSucceeded", status_code: outcome.status_code ?? 200, time_ms: outcome.time_ms ?? 0 }
        : { _tag: "AttemptFailed", status_code: outcome.status_code, time_ms: outcome.time_ms, error: outcome.error },
      at
    )

/** What a delivery's intents tell its endpoint's circuit breaker. */
export const healthOf = (intents: ReadonlyArray<DeliveryMachine.DeliveryIntent>): EndpointMachine.EndpointEvent | undefined => {
  for (const intent of intents) {
    if (intent._tag === "ResetFailures") return { _tag: "DeliverySucceeded" }
    if (intent._tag === "CountFailure") return { _tag: "DeliveryFailed", error: intent.error }
  }
  return undefined
}

const STATE_KEYS = Object.keys(EndpointState.fields) as ReadonlyArray<keyof EndpointState>

/** How stale a stored `last_success_at` may be before a run of successes is written out. */
const SUCCESS_FRESHNESS_MS = 1_000

/**
 * Whether an endpoint's move from `before` to `after` must be written. Everything counts except
 * `last_success_at` moving forward by less than SUCCESS_FRESHNESS_MS: a healthy endpoint takes
 * thousands of deliveries a second, and storing the moment of each would serialize every worker on
 * its row for a timestamp no reader needs to the millisecond.
 */
export const worthStoring = (before: EndpointState, after: EndpointState): boolean => {
  if (before === after) return false
  for (const key of STATE_KEYS) {
    if (key !== "last_success_at" && before[key] !== after[key]) return true
  }
  if (before.last_success_at === after.last_success_at) return false
  if (before.last_success_at === null || after.last_success_at === null) return true
  return Date.parse(after.last_success_at) - Date.parse(before.last_success_at) >= SUCCESS_FRESHNESS_MS
}

/** One attempt of a batch, as the recorder plans it: the delivery as claimed (or fanned out), its outcome, whether it is stored yet. */
export interface PlannedAttempt<D extends DeliveryMachine.DeliveryState> {
  readonly delivery: D
  readonly outcome: Outcome | undefined
  /** Not stored yet: fanned out by this worker and held by its batch's lease. */
  readonly fresh: boolean
}

/**
 * How one endpoint's outcomes are recorded: `fast`, each delivery's transition from the state it
 * was claimed in, written as compare-and-sets with no lock (the transitions are given); or `locked`,
 * under the endpoint's row lock, each delivery read as it is now.
 */
export type RecordPath<D extends DeliveryMachine.DeliveryState> =
  | { readonly _tag: "fast"; readonly transitions: ReadonlyArray<DeliveryMachine.DeliveryTransition<D>> }
  | { readonly _tag: "locked" }

/**
 * Chooses the path for one endpoint's batch, `endpoint` as read just now. Fast only when feeding the
 * batch's results to the endpoint's circuit breaker, in order, gives no intent and nothing worth
 * storing (in practice a healthy endpoint's successes: a counted failure changes
 * `consecutive_failures`), and every delivery not stored yet was attempted while the endpoint took
 * deliveries, so it is stored once, as its attempt left it. Everything else goes under the lock,
 * where the bulk moves of a suspension or deactivation see what the batch recorded.
 */
export const recordPath = <D extends DeliveryMachine.DeliveryState>(
  endpoint: EndpointState,
  attempts: ReadonlyArray<PlannedAttempt<D>>,
  at: Timestamp
): RecordPath<D> => {
  const transitions = attempts.map(({ delivery, outcome }) => transitionOf(delivery, outcome, at))
  let moved = endpoint
  // A success right after a success changes nothing at one instant (the endpoint machine's model
  // test checks it): a batch of successes moves the endpoint once.
  let afterSuccess: EndpointState | undefined
  for (const { intents } of transitions) {
    const health = healthOf(intents)
    if (health === undefined || (health._tag === "DeliverySucceeded" && moved === afterSuccess)) continue
    const next = EndpointMachine.transition(moved, health, at)
    if (next.intents.length > 0) return { _tag: "locked" }
    moved = next.state
    if (health._tag === "DeliverySucceeded") afterSuccess = moved
  }
  const takesDeliveries = EndpointMachine.routeEvent(endpoint) === "deliver"
  if (attempts.some(({ fresh, outcome }) => fresh && (outcome === undefined || !takesDeliveries))) return { _tag: "locked" }
  return worthStoring(endpoint, moved) ? { _tag: "locked" } : { _tag: "fast", transitions }
}
