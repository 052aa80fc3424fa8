import { Context, Effect, Layer } from "effect"
import type { EventEnvelope } from "../kernel/EventEnvelope.ts"
import { type PageRequest, toWindow } from "../kernel/Pagination.ts"
import type { StorageError } from "../kernel/StorageError.ts"
import { OutboxStore } from "../ports/OutboxStore.ts"

/** The tenant's event log: every event its changes emitted, in the order they happened. */
export class EventService extends Context.Service<EventService, {
  /** One page of the tenant's events, oldest first (only those of `type` when given), and whether more follow. */
  readonly list: (
    tenantId: string,
    page: PageRequest,
    type?: string
  ) => Effect.Effect<{ readonly items: ReadonlyArray<EventEnvelope>; readonly has_more: boolean }, StorageError>
}>()("omnichannel-core/events/EventService") {
  static readonly layer = Layer.effect(
    EventService,
    Effect.gen(function*() {
      const outbox = yield* OutboxStore
      return EventService.of({
        list: Effect.fn("EventService.list")(function*(tenantId, page, type) {
          const window = toWindow(page)
          // One row past the page tells whether another page exists, without counting.
          const rows = yield* outbox.listByTenant(tenantId, {
            limit: window.limit + 1,
            offset: window.offset,
            ...(type === undefined ? {} : { type })
          })
          return { items: rows.slice(0, window.limit), has_more: rows.length > window.limit }
        })
      })
    })
  )
}
