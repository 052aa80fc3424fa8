import { Context, type Effect } from "effect"
import type { EventEnvelope } from "../kernel/EventEnvelope.ts"
import type { StorageError } from "./StorageError.ts"

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
   * Marks up to `limit` events not yet fanned out to webhooks as fanned out at `at`, and returns
   * them in append order. Call inside the transaction that creates their deliveries, so both commit
   * or neither does. Workers taking at once get disjoint events (PostgreSQL skips rows another holds).
   */
  readonly takeUnfanned: (
    limit: number,
    at: string
  ) => Effect.Effect<ReadonlyArray<{ readonly seq: number; readonly event: EventEnvelope }>, StorageError>
  /**
   * Whether any event waits to be fanned out: a look that costs one cheap query, so a worker with
   * nothing to do does not open a transaction to find that out. Another worker may take the events
   * before this one does.
   */
  readonly hasUnfanned: Effect.Effect<boolean, StorageError>
  /** The events with these sequence numbers, in append order; missing ones are left out. */
  readonly getBySeqs: (
    seqs: ReadonlyArray<number>
  ) => Effect.Effect<ReadonlyArray<{ readonly seq: number; readonly event: EventEnvelope }>, StorageError>
}>()("omnichannel-core/ports/OutboxStore") {}
