import { Effect } from "effect"
import type { EventEnvelope } from "../../src/kernel/EventEnvelope.ts"
import { OutboxStore } from "../../src/ports/OutboxStore.ts"
import type { TestApp } from "../support/TestApp.ts"

/** The events a tenant's changes appended to the outbox, oldest first (optionally of one type). */
export const outboxEvents = (
  test: TestApp,
  tenantId: string,
  type?: string
): Promise<ReadonlyArray<EventEnvelope>> =>
  test.app.run(
    Effect.flatMap(OutboxStore, (outbox) =>
      outbox.listByTenant(tenantId, type === undefined ? { limit: 1000 } : { limit: 1000, type }))
  )
