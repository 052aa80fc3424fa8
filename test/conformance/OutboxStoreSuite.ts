import { expect, it } from "vitest"
import { OutboxStore } from "../../src/ports/OutboxStore.ts"
import { outboxEvent } from "./Fixtures.ts"
import { eventsOf, makeSuite, type Suite } from "./Harness.ts"

// Outbox rows reference no other table, so each test only needs a tenant id nobody else uses.
const freshTenantId = (): string => `tenant-${globalThis.crypto.randomUUID()}`

/**
 * OutboxStore: events round-trip with their data (stored fanned out at their own time when no
 * endpoint of their tenant may want them; the fan-out leases' cases cover those waiting), and come
 * back in append order, filtered by type and limited, or by sequence number.
 */
export const outboxStoreSuite: Suite<OutboxStore, "outboxEvents"> = makeSuite({
  name: "OutboxStore",
  tables: ["outboxEvents"],
  tests: (h) => {
    const storedEvents = (tenantId: string) => h().stored.outboxEvents(tenantId).then(eventsOf)

    it("stores an event with nested unicode data and its own event_id, fanned out at its own time as no endpoint wants it, and reads it back unchanged", async () => {
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

      // The tenant has no endpoint: nothing will fan the event out (see the fan-out leases' cases).
      expect(await h().stored.outboxEvents(tenantId)).toEqual([{ seq: expect.any(Number), event, fanned_out_at: event.created_at }])
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
      const stored = await h().stored.outboxEvents(tenantId)
      expect(eventsOf(stored)).toEqual([first, second, third, fourth])
      // Sequence numbers grow in append order.
      expect(stored.map((row) => row.seq)).toEqual(stored.map((row) => row.seq).sort((a, b) => a - b))
      expect(new Set(stored.map((row) => row.seq)).size).toBe(4)
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
      const tenantId = freshTenantId()
      const events = Array.from({ length: 4 }, () => outboxEvent(tenantId))
      await h().run(OutboxStore.use((s) => s.append(events)))
      const stored = await h().stored.outboxEvents(tenantId)
      const seqs = stored.map((row) => row.seq)

      const read = await h().run(OutboxStore.use((s) => s.getForFanOut([seqs[3]!, seqs[0]!, seqs[3]! + 1_000_000])))
      expect(read).toEqual([{ seq: seqs[0], event: events[0] }, { seq: seqs[3], event: events[3] }])
      expect(await h().run(OutboxStore.use((s) => s.getForFanOut([])))).toEqual([])
    })

    it("accepts an empty batch and stores nothing", async () => {
      const tenantId = freshTenantId()
      await h().run(OutboxStore.use((s) => s.append([])))
      expect(await storedEvents(tenantId)).toEqual([])
    })
  }
})
