import { Effect } from "effect"
import { describe, expect, it } from "vitest"
import { OutboxStore } from "../../src/ports/OutboxStore.ts"
import { WebhookDeliveryStore } from "../../src/ports/WebhookDeliveryStore.ts"
import { outboxEvent } from "./Fixtures.ts"
import type { UseHarness } from "./Harness.ts"

const AT = "2026-11-22T12:00:00.000Z"

/**
 * Takes every event not yet fanned out, as webhook fan-out does, and lets the lease go: the one way to
 * learn appended events' sequence numbers.
 */
const takeAll = WebhookDeliveryStore.use((s) =>
  Effect.gen(function*() {
    const hold = { id: globalThis.crypto.randomUUID(), holder: globalThis.crypto.randomUUID() }
    const taken = yield* s.takeFanOut(1_000_000, { ...hold, fanned_at: AT, lease_until: AT })
    yield* s.releaseFanOuts([hold])
    return taken
  })
)

// Outbox rows reference no other table, so each test only needs a tenant id nobody else uses.
const freshTenantId = (): string => `tenant-${globalThis.crypto.randomUUID()}`

/** OutboxStore: events round-trip with their data and come back in append order, filtered by type and limited. */
export const outboxStoreSuite = (h: UseHarness): void => {
  describe("OutboxStore", () => {
    it("stores an event with nested unicode data and its own event_id, and reads it back unchanged", async () => {
      const tenantId = freshTenantId()
      const event = outboxEvent(tenantId, {
        type: "contact.updated",
        event_id: "flow-session-42",
        created_at: "2026-11-22T10:15:30.123Z",
        data: {
          contact: { id: "c-1", name: "Zoë 山田 🚀", custom_fields: { vip: true, seats: 3, notes: null } },
          changed_fields: ["name", "custom_fields"]
        }
      })
      await h().run(OutboxStore.use((s) => s.append([event])))

      expect(await h().stored.outboxEvents(tenantId)).toEqual([event])
      expect(await h().run(OutboxStore.use((s) => s.listByTenant(tenantId, { limit: 10 })))).toEqual([event])
    })

    it("lists events in the order they were appended, not by their timestamps", async () => {
      const tenantId = freshTenantId()
      const first = outboxEvent(tenantId, { created_at: "2026-11-22T12:00:00.000Z" })
      const second = outboxEvent(tenantId, { created_at: "2026-11-22T09:00:00.000Z" })
      const third = outboxEvent(tenantId, { created_at: "2026-11-22T10:00:00.000Z" })
      const fourth = outboxEvent(tenantId, { created_at: "2026-11-22T10:00:00.000Z" })
      await h().run(OutboxStore.use((s) => s.append([first, second])))
      await h().run(OutboxStore.use((s) => s.append([third])))
      await h().run(OutboxStore.use((s) => s.append([fourth])))

      expect(await h().run(OutboxStore.use((s) => s.listByTenant(tenantId, { limit: 10 }))))
        .toEqual([first, second, third, fourth])
      expect(await h().stored.outboxEvents(tenantId)).toEqual([first, second, third, fourth])
    })

    it("returns only the oldest events up to the limit", async () => {
      const tenantId = freshTenantId()
      const events = Array.from({ length: 4 }, () => outboxEvent(tenantId))
      await h().run(OutboxStore.use((s) => s.append(events)))

      expect(await h().run(OutboxStore.use((s) => s.listByTenant(tenantId, { limit: 2 })))).toEqual(events.slice(0, 2))
    })

    it("returns only events of the requested type", async () => {
      const tenantId = freshTenantId()
      const created = outboxEvent(tenantId, { type: "contact.created" })
      const updated = outboxEvent(tenantId, { type: "contact.updated" })
      const createdAgain = outboxEvent(tenantId, { type: "contact.created" })
      await h().run(OutboxStore.use((s) => s.append([created, updated, createdAgain])))

      expect(await h().run(OutboxStore.use((s) => s.listByTenant(tenantId, { limit: 10, type: "contact.created" }))))
        .toEqual([created, createdAgain])
      expect(await h().run(OutboxStore.use((s) => s.listByTenant(tenantId, { limit: 10, type: "tenant.created" }))))
        .toEqual([])
    })

    it("reads events back by sequence number, in append order, leaving out unknown numbers", async () => {
      await h().run(takeAll)
      const tenantId = freshTenantId()
      const events = Array.from({ length: 4 }, () => outboxEvent(tenantId))
      await h().run(OutboxStore.use((s) => s.append(events)))
      const taken = await h().run(takeAll)
      const seqs = taken.map((t) => t.seq)

      const read = await h().run(OutboxStore.use((s) => s.getBySeqs([seqs[3]!, seqs[0]!, seqs[2]! + 1_000_000])))
      expect(read).toEqual([taken[0], taken[3]])
      expect(await h().run(OutboxStore.use((s) => s.getBySeqs([])))).toEqual([])
    })

    it("accepts an empty batch and stores nothing", async () => {
      const tenantId = freshTenantId()
      await h().run(OutboxStore.use((s) => s.append([])))
      expect(await h().stored.outboxEvents(tenantId)).toEqual([])
    })
  })
}
