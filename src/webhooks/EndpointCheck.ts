import { Effect, Option } from "effect"
import { newId } from "../kernel/Id.ts"
import { now } from "../kernel/Timestamp.ts"
import type { StorageError } from "../ports/StorageError.ts"
import { Transactor } from "../ports/Transactor.ts"
import type { WebhookEndpointRecord } from "../ports/WebhookEndpointStore.ts"
import { makeAttemptOnce, type Outcome } from "./DeliveryAttempt.ts"
import { makeEndpointIntents } from "./EndpointIntents.ts"
import type * as EndpointMachine from "./EndpointMachine.ts"
import { makeNoticeSender } from "./EndpointNotices.ts"

/** Who asked for a check: a user (`POST …/verify`) or the re-verification schedule of a suspension. */
export type CheckReason = "manual" | "re-verification"

/** What a check did: the endpoint as it left it, and what the request came to. */
export interface CheckResult {
  readonly endpoint: WebhookEndpointRecord
  readonly outcome: Outcome
}

const eventOf = (reason: CheckReason, outcome: Outcome): EndpointMachine.EndpointEvent =>
  reason === "manual"
    ? outcome.ok ? { _tag: "ManualVerifySucceeded" } : { _tag: "ManualVerifyFailed", error: outcome.error }
    : outcome.ok
    ? { _tag: "ReverificationSucceeded" }
    : { _tag: "ReverificationFailed", error: outcome.error }

/**
 * Resolves to the check of an endpoint, manual or scheduled: a signed `webhook.verification` event
 * is sent, and the answer moves the circuit breaker (a success lifts a suspension and replays the
 * queue); the account is told of what changed.
 */
export const makeEndpointCheck = Effect.gen(function*() {
  const attemptOnce = yield* makeAttemptOnce
  const intents = yield* makeEndpointIntents
  const sendNotices = yield* makeNoticeSender
  const transactor = yield* Transactor
  return (endpoint: WebhookEndpointRecord, reason: CheckReason): Effect.Effect<CheckResult, StorageError> =>
    Effect.gen(function*() {
      const id = yield* newId
      const outcome = yield* attemptOnce(endpoint, {
        id,
        type: "webhook.verification",
        event_id: id,
        created_at: yield* now,
        tenant_id: endpoint.tenant_id,
        data: { webhook_endpoint_id: endpoint.id, reason }
      })
      const moved = yield* transactor.withTransaction(intents.move(endpoint.tenant_id, endpoint.id, eventOf(reason, outcome)))
      yield* sendNotices(moved.notices)
      return { endpoint: Option.getOrElse(moved.endpoint, () => endpoint), outcome }
    })
})
