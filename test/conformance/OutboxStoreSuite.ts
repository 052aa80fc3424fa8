import { Effect, Exit } from "effect"
import { describe, expect, it } from "vitest"
import { envelopeJson } from "../../src/kernel/EventEnvelope.ts"
import { OutboxStore } from "../../src/ports/OutboxStore.ts"
import { Transactor } from "../../src/ports/Transactor.ts"
import { outboxEvent } from "./Fixtures.ts"
import type { UseHarness } from "./Harness.ts"

const NEEDS_CONNECTIONS = "needs several connections: the adapter runs one transaction at a time"
const AT = "2026-11-22T12:00:00.000Z"

/** Takes up to `limit` unfanned events in a transaction, as the fan-out does. */
const take = (limit: number) => Transactor.use((t) => t.withTransaction(OutboxStore.use((s) => s.takeUnfanned(limit, AT))))

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

    describe("takeUnfanned", () => {
      // Other tests leave unfanned events; each test takes them all first, so what follows is its own.
      const takeAll = (h2: typeof h) => h2().run(take(1_000_000))

      it("takes events in append order, up to the limit, each once", async () => {
        await takeAll(h)
        const tenantId = freshTenantId()
        const events = Array.from({ length: 5 }, () => outboxEvent(tenantId))
        await h().run(OutboxStore.use((s) => s.append(events.slice(0, 3))))
        await h().run(OutboxStore.use((s) => s.append(events.slice(3))))

        const first = await h().run(take(2))
        expect(first.map((t) => t.event)).toEqual(events.slice(0, 2))
        expect(first[0]!.seq).toBeLessThan(first[1]!.seq)
        expect((await h().run(take(10))).map((t) => t.event)).toEqual(events.slice(2))
        expect(await h().run(take(10))).toEqual([])
        // Taking marks, nothing more: the event log still shows every event.
        expect(await h().stored.outboxEvents(tenantId)).toEqual(events)
      })

      it("says whether any event waits to be taken", async () => {
        await takeAll(h)
        const waiting = () => h().run(OutboxStore.use((s) => s.hasUnfanned))
        expect(await waiting()).toBe(false)
        await h().run(OutboxStore.use((s) => s.append([outboxEvent(freshTenantId())])))
        expect(await waiting()).toBe(true)
        await h().run(take(10))
        expect(await waiting()).toBe(false)
      })

      it("leaves the events to take again when the transaction that took them fails", async () => {
        await takeAll(h)
        const tenantId = freshTenantId()
        const events = Array.from({ length: 3 }, () => outboxEvent(tenantId))
        await h().run(OutboxStore.use((s) => s.append(events)))

        const exit = await h().exit(Transactor.use((t) => t.withTransaction(
          OutboxStore.use((s) => s.takeUnfanned(10, AT)).pipe(Effect.andThen(Effect.fail("fan-out failed")))
        )))
        expect(Exit.isFailure(exit)).toBe(true)
        expect((await h().run(take(10))).map((t) => t.event)).toEqual(events)
      })

      it("gives two concurrent takers disjoint events (needs several connections)", async (ctx) => {
        ctx.skip(!h().capabilities.concurrentConnections, NEEDS_CONNECTIONS)
        await takeAll(h)
        const tenantId = freshTenantId()
        const events = Array.from({ length: 60 }, () => outboxEvent(tenantId))
        await h().run(OutboxStore.use((s) => s.append(events)))

        const [a, b] = await h().run(Effect.all([take(40), take(40)], { concurrency: 2 }))
        const ids = [...a, ...b].map((t) => t.event.id)
        expect(new Set(ids).size).toBe(60)
        expect(ids.sort()).toEqual(events.map((e) => e.id).sort())
      })
    })

    it("hands out events whose JSON is the JSON of the event as read, whatever its data holds", async () => {
      await h().run(take(1_000_000))
      const tenantId = freshTenantId()
      const events = [
        { quote: "say \"hi\"\n\t\\", "2": "integer-like keys first", b: [1, 2.5, -0, 1e21, null, true] },
        // An own "__proto__" key, as only parsed JSON makes one.
        JSON.parse(`{"__proto__": {"polluted": true}, "": "", "emoji": "🚀 山田 \u2028", "nested": {"deep": [{"a": {}}]}}`)
      ].map((data) => outboxEvent(tenantId, { data }))
      await h().run(OutboxStore.use((s) => s.append(events)))

      for (const { event } of await h().run(take(10))) {
        expect(envelopeJson(event)).toBe(JSON.stringify(event))
      }
      const read = await h().run(OutboxStore.use((s) => s.listByTenant(tenantId, { limit: 10 })))
      expect(read.map(envelopeJson)).toEqual(read.map((event) => JSON.stringify(event)))
    })

    it("reads events back by sequence number, in append order, leaving out unknown numbers", async () => {
      await h().run(take(1_000_000))
      const tenantId = freshTenantId()
      const events = Array.from({ length: 4 }, () => outboxEvent(tenantId))
      await h().run(OutboxStore.use((s) => s.append(events)))
      const taken = await h().run(take(10))
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
