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
   * The events of a fan-out batch being taken over (`WebhookDeliveryStore.claimExpiredFanOuts`):
   * those with these sequence numbers, in append order, whatever their tenants, each carrying its
   * `tenant_id`; missing ones are left out. Background work only: nothing a tenant asks reaches it.
   */
  readonly getForFanOut: (
    seqs: ReadonlyArray<number>
  ) => Effect.Effect<ReadonlyArray<{ readonly seq: number; readonly event: EventEnvelope }>, StorageError>
}>()("omnichannel-core/ports/OutboxStore") {}
