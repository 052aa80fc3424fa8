import { Effect } from "effect"
import { layer } from "../../adapters/kysely/KyselyStorage.ts"
import type { EventEnvelope } from "../../src/kernel/EventEnvelope.ts"
import { OutboxStore } from "../../src/ports/OutboxStore.ts"
import type { TestApp } from "../support/TestApp.ts"

/**
 * The events a tenant's changes appended to the outbox, oldest first (optionally of one type).
 * Read through the storage adapter, because `app.run` offers the library's services, not its ports.
 */
export const outboxEvents = (
  test: TestApp,
  tenantId: string,
  type?: string
): Promise<ReadonlyArray<EventEnvelope>> =>
  Effect.runPromise(
    Effect.flatMap(OutboxStore, (outbox) =>
      outbox.listByTenant(tenantId, type === undefined ? { limit: 100 } : { limit: 100, type })).pipe(
        Effect.provide(layer(test.database.db, test.database.dialect))
      )
  )
