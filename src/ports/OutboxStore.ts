import { Context, type Effect } from "effect"
import type { EventEnvelope } from "../kernel/EventEnvelope.ts"
import type { StorageError } from "./StorageError.ts"

/** Where a pass of `OutboxStore.pruneFannedOut` goes on: after this event, in fan-out order. */
export interface OutboxPruneCursor {
  readonly fanned_out_at: string
  readonly seq: number
}

/** The transactional outbox: events are appended inside the transaction of the change that caused them. */
export class OutboxStore extends Context.Service<OutboxStore, {
  /** Appends events; call inside `Transactor.withTransaction` with the change they describe. */
  readonly append: (events: ReadonlyArray<EventEnvelope>) => Effect.Effect<void, StorageError>
  /** The tenant's events in the order they were appended, oldest first, skipping `offset` of them. */
  readonly listByTenant: (
    tenantId: string,
    options: { readonly limit: number; readonly offset?: number; readonly type?: string }
  ) => Effect.Effect<ReadonlyArray<EventEnvelope>, StorageError>
  /**
   * The events of a fan-out batch being taken over (`WebhookDeliveryStore.claimExpiredFanOuts`):
   * those with these sequence numbers, in append order, whatever their tenants, each carrying its
   * `tenant_id`; missing ones are left out. Background work only: nothing a tenant asks reaches it.
   */
  readonly getForFanOut: (
    seqs: ReadonlyArray<number>
  ) => Effect.Effect<ReadonlyArray<{ readonly seq: number; readonly event: EventEnvelope }>, StorageError>
  /**
   * Retention, across tenants, background work only: looks at up to `limit` events fanned out before
   * `before`, in fan-out order (`fanned_out_at`, then `seq`) after `after`, and deletes those that no
   * webhook delivery refers to and no fan-out lease holds. Events not yet fanned out are never
   * deleted. Resolves to how many it deleted and where the next batch starts: null once it looked at
   * fewer than `limit` (the pass is over). Several pruners at once never wait for each other's rows.
   */
  readonly pruneFannedOut: (input: {
    readonly before: string
    readonly after: OutboxPruneCursor | null
    readonly limit: number
  }) => Effect.Effect<{ readonly deleted: number; readonly next: OutboxPruneCursor | null }, StorageError>
}>()("omnichannel-core/ports/OutboxStore") {}
