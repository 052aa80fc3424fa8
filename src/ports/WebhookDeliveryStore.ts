import { Context, type Effect, type Option, Schema } from "effect"
import type { EventEnvelope } from "../kernel/EventEnvelope.ts"
import type { StorageError } from "./StorageError.ts"
import { RetryStrategy } from "./WebhookEndpointStore.ts"

/** A webhook delivery's status: the spec's six values. */
export const DeliveryStatus = Schema.Literals(["pending", "success", "failed", "retrying", "dead_letter", "queued"])
/** A webhook delivery's status. */
export type DeliveryStatus = typeof DeliveryStatus.Type

/**
 * The part of a webhook delivery its state machine (`webhooks/DeliveryMachine`) reads and writes, as
 * stored. `attempt_number` counts the attempts made so far; `pending` means due at once, so only
 * `retrying` carries a `next_retry_at`.
 */
export const DeliveryState = Schema.Struct({
  status: DeliveryStatus,
  attempt_number: Schema.Int,
  max_retries: Schema.Int,
  retry_strategy: RetryStrategy,
  next_retry_at: Schema.NullOr(Schema.String),
  completed_at: Schema.NullOr(Schema.String),
  response_status_code: Schema.NullOr(Schema.Int),
  response_time_ms: Schema.NullOr(Schema.Int),
  error_message: Schema.NullOr(Schema.String)
})
/** The part of a webhook delivery its state machine reads and writes. */
export type DeliveryState = typeof DeliveryState.Type

/** One delivery of one event to one endpoint, as stored: the machine's state plus what to send. */
export interface WebhookDeliveryRecord extends DeliveryState {
  readonly id: string
  readonly tenant_id: string
  readonly webhook_endpoint_id: string
  readonly event_id: string
  readonly event_type: string
  readonly envelope: EventEnvelope
  /** The event's place in the outbox, so a backlog replays in the order events happened. */
  readonly outbox_seq: number
  readonly previous_delivery_id: string | null
  readonly created_at: string
}

/** How the engine names a delivery of some tenant. */
export interface DeliveryKey {
  readonly id: string
  readonly tenant_id: string
}

/** How the engine names an endpoint of some tenant. */
export interface EndpointKey {
  readonly id: string
  readonly tenant_id: string
}

/** A delivery's machine state, with the key it belongs to. */
export type DeliveryStateOf = DeliveryState & DeliveryKey

/**
 * A delivery's new machine state for `saveMany`. With `expected`, the write is a compare-and-set:
 * it happens only if the row is still as the caller read it, which status and attempt count tell.
 */
export interface DeliverySave {
  readonly state: DeliveryStateOf
  readonly expected?: Pick<DeliveryState, "status" | "attempt_number">
}

/**
 * A batch of outbox events that one worker fanned out and holds while it sends their deliveries,
 * which it stores only once each has been attempted. If the worker dies, the lease passes and
 * another worker stores what the batch still lacks as due deliveries.
 */
export interface FanOutLease {
  readonly id: string
  /** The outbox sequence numbers of the batch's events. */
  readonly seqs: ReadonlyArray<number>
  /** When the batch was fanned out: every delivery made from it is created at this time. */
  readonly fanned_at: string
  /** Who holds it; changes with every claim, so a worker whose lease was taken over can tell. */
  readonly holder: string
  readonly lease_until: string
}

/** How a holder names its lease. */
export type FanOutHold = Pick<FanOutLease, "id" | "holder">

/** What `takeFanOut` took: the events under the lease, and how many it marked fanned out without one. */
export interface FanOutTaken {
  readonly leased: ReadonlyArray<{ readonly seq: number; readonly event: EventEnvelope }>
  /** Events no endpoint of their tenant could want when they were taken: fanned out, under no lease. */
  readonly unwanted: number
}

/**
 * Webhook deliveries. Every read and write names the tenant, or carries it with each key or record,
 * except the background work that claims rows across tenants: `claim*`, `anyToFanOut`, `takeFanOut`
 * and the fan-out leases, whose rows then go on under the tenant they carry; and `countByStatus`, the
 * operational counts of the metrics.
 */
export class WebhookDeliveryStore extends Context.Service<WebhookDeliveryStore, {
  /**
   * Stores new deliveries, leaving out those whose endpoint no longer exists (a delivery stored after
   * its attempt may outlive its endpoint by a moment). With `leaseUntil` they are stored claimed, as if
   * `claimDue` had just leased them to the caller, and if the caller dies they come back when the
   * lease passes.
   */
  readonly insertMany: (
    deliveries: ReadonlyArray<WebhookDeliveryRecord>,
    leaseUntil?: string
  ) => Effect.Effect<void, StorageError>
  /**
   * Leases until `leaseUntil` up to `limit` unleased deliveries due at `now` (pending, or retrying
   * with next_retry_at ≤ now), oldest first. Several processes claiming at once get disjoint rows.
   */
  readonly claimDue: (
    now: string,
    leaseUntil: string,
    limit: number
  ) => Effect.Effect<ReadonlyArray<WebhookDeliveryRecord>, StorageError>
  /**
   * Leases again, until `leaseUntil`, up to `limit` due deliveries whose lease passed by `now`
   * without being freed: the claims of a worker that died. Disjoint across processes too.
   */
  readonly claimExpired: (
    now: string,
    leaseUntil: string,
    limit: number
  ) => Effect.Effect<ReadonlyArray<WebhookDeliveryRecord>, StorageError>
  /**
   * Writes each delivery's machine state (the `DeliveryState` fields; nothing else changes after
   * creation) and frees its lease; a save with `expected` only if the row still has that status and
   * attempt count. Resolves to the ids written. A batch costs a statement per few hundred rows.
   */
  readonly saveMany: (saves: ReadonlyArray<DeliverySave>) => Effect.Effect<ReadonlySet<string>, StorageError>
  /**
   * The machine state of the deliveries with these ids, each only if it belongs to the tenant given
   * with it; missing ones are left out. For the engine, which records attempts of many tenants'
   * deliveries at once and needs neither their envelopes nor their other fields.
   */
  readonly getStates: (keys: ReadonlyArray<DeliveryKey>) => Effect.Effect<ReadonlyArray<DeliveryStateOf>, StorageError>
  readonly get: (
    tenantId: string,
    endpointId: string,
    id: string
  ) => Effect.Effect<Option.Option<WebhookDeliveryRecord>, StorageError>
  /** One page of an endpoint's deliveries, newest first, with the total matching the filters. */
  readonly list: (
    tenantId: string,
    endpointId: string,
    filter: { readonly status?: DeliveryStatus; readonly event_type?: string; readonly limit: number; readonly offset: number }
  ) => Effect.Effect<{ readonly items: ReadonlyArray<WebhookDeliveryRecord>; readonly total: number }, StorageError>
  /**
   * For the metrics, across tenants: how many deliveries are `pending`, `retrying`, `queued` and
   * `dead_letter`, per tenant when `byTenant` (`tenant_id` null otherwise). Pairs with none are left
   * out. One grouped count over the status index.
   */
  readonly countByStatus: (
    byTenant: boolean
  ) => Effect.Effect<
    ReadonlyArray<{ readonly status: "pending" | "retrying" | "queued" | "dead_letter"; readonly tenant_id: string | null; readonly count: number }>,
    StorageError
  >
  /** How many of the endpoint's deliveries wait as `queued` behind its suspension. */
  readonly countQueued: (tenantId: string, endpointId: string) => Effect.Effect<number, StorageError>
  /** Suspension: the endpoint's pending and retrying deliveries become `queued`. */
  readonly parkOutstanding: (tenantId: string, endpointId: string) => Effect.Effect<void, StorageError>
  /** Recovery: the endpoint's queued deliveries become `pending`, due at once, replayed in event order. */
  readonly replayQueued: (tenantId: string, endpointId: string) => Effect.Effect<void, StorageError>
  /** Deactivation: the endpoint's unfinished deliveries become `dead_letter` with `reason`. */
  readonly deadLetterOutstanding: (
    tenantId: string,
    endpointId: string,
    reason: string,
    at: string
  ) => Effect.Effect<void, StorageError>
  /** Whether any outbox event waits to be fanned out: one quick read, never a lock or a write. */
  readonly anyToFanOut: Effect.Effect<boolean, StorageError>
  /**
   * Takes up to `limit` outbox events not yet fanned out, oldest first, and marks them fanned out at
   * `lease.fanned_at`; stores `lease` over those an endpoint may want (its `seqs` are theirs), as one
   * atomic step: if the caller dies, the lease passes and another worker stores what the batch
   * lacked. An event may be wanted when an endpoint of its tenant subscribes to its type and still
   * takes events (active or suspended, as `EndpointMachine.routeEvent` routes them); the others are
   * only marked, so events of tenants without endpoints cost no lease. Takers at once get disjoint
   * events (PostgreSQL skips rows another holds). Resolves to the wanted events in append order and
   * how many were only marked; when none is wanted, no lease is stored. A take is a write even when it
   * finds nothing: a worker with no reason to expect events asks `anyToFanOut` first.
   */
  readonly takeFanOut: (
    limit: number,
    lease: Omit<FanOutLease, "seqs">
  ) => Effect.Effect<FanOutTaken, StorageError>
  /**
   * The ids of those leases still held by the holder given with each (whether or not their time
   * passed). Call inside the transaction that stores the leases' deliveries: on PostgreSQL their rows
   * stay locked until it ends, so a worker taking one over waits for it and then finds what it stored.
   */
  readonly holdFanOuts: (holds: ReadonlyArray<FanOutHold>) => Effect.Effect<ReadonlySet<string>, StorageError>
  /** Deletes those leases still held by the holder given with each. */
  readonly releaseFanOuts: (holds: ReadonlyArray<FanOutHold>) => Effect.Effect<void, StorageError>
  /**
   * Takes over, for `holder` until `leaseUntil`, up to `limit` fan-out leases whose time passed by
   * `now`: those of a worker that died. Disjoint across processes.
   */
  readonly claimExpiredFanOuts: (
    now: string,
    leaseUntil: string,
    holder: string,
    limit: number
  ) => Effect.Effect<ReadonlyArray<FanOutLease>, StorageError>
  /**
   * Of the deliveries created at `createdAt` for these endpoints (each only in the tenant given with
   * it) and outbox events, which exist: resolves to `"endpointId seq"` keys. For taking over a
   * fan-out lease, whose events may be several tenants'.
   */
  readonly existingAt: (
    endpoints: ReadonlyArray<EndpointKey>,
    createdAt: string,
    seqs: ReadonlyArray<number>
  ) => Effect.Effect<ReadonlySet<string>, StorageError>
  /**
   * Retention, across tenants: deletes up to `limit` finished deliveries (`success`, `failed`,
   * `dead_letter`) whose `completed_at` is before `before`, oldest first, and resolves to how many it
   * deleted. Unfinished ones (`pending`, `retrying`, `queued`) are never deleted. Several pruners at
   * once take disjoint rows (PostgreSQL skips rows another holds instead of waiting for them).
   */
  readonly pruneFinished: (before: string, limit: number) => Effect.Effect<number, StorageError>
}>()("omnichannel-core/ports/WebhookDeliveryStore") {}
