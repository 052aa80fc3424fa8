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
  /** The events with these sequence numbers, in append order; missing ones are left out. */
  readonly getBySeqs: (
    seqs: ReadonlyArray<number>
  ) => Effect.Effect<ReadonlyArray<{ readonly seq: number; readonly event: EventEnvelope }>, StorageError>
}>()("omnichannel-core/ports/OutboxStore") {}
