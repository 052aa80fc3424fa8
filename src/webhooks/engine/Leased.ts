import type { FanOutHold, WebhookDeliveryRecord } from "../../ports/WebhookDeliveryStore.ts"
import type { WebhookEndpointRecord } from "../../ports/WebhookEndpointStore.ts"
import type { Outcome } from "../DeliveryAttempt.ts"

/**
 * A batch of outbox events this worker fanned out and holds through a fan-out lease, with the
 * number of its deliveries not yet stored: the recorder counts it down, and lets the lease go at 0.
 */
export interface Batch {
  readonly hold: FanOutHold
  remaining: number
}

/**
 * A delivery this worker holds the lease of, with its endpoint as read in feed round `round` (none
 * if it was gone). A delivery claimed from the store has no `batch`; one this worker just fanned out
 * is not stored yet and has the batch whose lease holds it.
 */
export interface Leased {
  readonly delivery: WebhookDeliveryRecord
  readonly endpoint: WebhookEndpointRecord | undefined
  readonly round: number
  /** When its lease runs out, in epoch milliseconds by the Clock. */
  readonly leaseUntil: number
  readonly batch: Batch | undefined
}

/**
 * A leased delivery and what its attempt came to (none when it was not attempted), with the batch
 * it came from when it is not stored yet.
 */
export type Attempted = readonly [WebhookDeliveryRecord, Outcome | undefined, Batch | undefined]

/** The leases of these batches, each once. */
export const holdsOf = (batches: Iterable<Batch | undefined>): Array<FanOutHold> => {
  const holds = new Set<FanOutHold>()
  for (const batch of batches) if (batch !== undefined) holds.add(batch.hold)
  return [...holds]
}
