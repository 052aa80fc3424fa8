import { Effect, Exit, Option } from "effect"
import { afterEach, describe, expect, it } from "vitest"
import { type EventEnvelope, envelopeJson } from "../../src/kernel/EventEnvelope.ts"
import { OutboxStore } from "../../src/ports/OutboxStore.ts"
import { Transactor } from "../../src/ports/Transactor.ts"
import { type FanOutHold, type FanOutLease, WebhookDeliveryStore } from "../../src/ports/WebhookDeliveryStore.ts"
import type { WebhookEndpointRecord } from "../../src/ports/WebhookEndpointStore.ts"
import { contend } from "./Contention.ts"
import { at, deliveryRecord, LEASE_UNTIL, NOW, reserveSeqs } from "./DeliveryFixtures.ts"
import { outboxEvent } from "./Fixtures.ts"
import { eventsOf, type UseHarness } from "./Harness.ts"

const NEEDS_CONNECTIONS = "needs several connections: the adapter runs one transaction at a time"

const store = <A, E>(f: (s: WebhookDeliveryStore["Service"]) => Effect.Effect<A, E>) => WebhookDeliveryStore.use(f)

/** What the fan-out tests run against: the delivery store, the outbox it takes from, and transactions. */
export type UseFanOut = UseHarness<WebhookDeliveryStore | OutboxStore | Transactor, "outboxEvents" | "fanOutLease">

/**
 * The fan-out half of WebhookDeliveryStore: takeFanOut marks events and stores their lease as one
 * step, over the events an endpoint may want only; a lease is held by its holder alone, and locked
 * while held until the transaction ends; expired leases are taken over once each.
 * Events of a tenant with no endpoint taking events when they are appended are stored fanned out already
 * and never taken.
 * `endpointsOfNewTenant` makes endpoints (subscribed to contact.created unless told otherwise) the
 * suite cleans up; `saveEndpoint` stores an endpoint's new state.
 */
export const fanOutLeaseTests = (
  h: UseFanOut,
  endpointsOfNewTenant: (count?: number, overrides?: Partial<WebhookEndpointRecord>) => Promise<ReadonlyArray<WebhookEndpointRecord>>,
  saveEndpoint: (endpoint: WebhookEndpointRecord) => Promise<void>
): void => {
  describe("fan-out leases", () => {
    // Leases are not scoped by tenant, nor are outbox events waiting to be fanned out: each test takes
    // whatever waits, keeps to the events and leases it made, and its leases are released afterwards.
    const leasesMade: Array<FanOutHold> = []
    afterEach(async () => {
      await h().run(store((s) => s.releaseFanOuts(leasesMade.splice(0))))
    })
    const leaseOf = (overrides: Partial<Omit<FanOutLease, "seqs">> = {}): Omit<FanOutLease, "seqs"> => {
      const lease = {
        id: globalThis.crypto.randomUUID(),
        fanned_at: NOW,
        holder: globalThis.crypto.randomUUID(),
        lease_until: LEASE_UNTIL,
        ...overrides
      }
      leasesMade.push(lease)
      return lease
    }
    const takeFanOut = (limit: number, lease: Omit<FanOutLease, "seqs">) => h().run(store((s) => s.takeFanOut(limit, lease)))
    const append = (events: ReadonlyArray<EventEnvelope>) => h().run(OutboxStore.use((s) => s.append(events)))
    /** A new tenant whose endpoint wants its contact.created events (the events `outboxEvent` makes). */
    const subscribedTenant = async () => (await endpointsOfNewTenant())[0]!.tenant_id
    /** Takes whatever waits to be fanned out, so that what a test appends next is all that waits. */
    const takeWaiting = () => takeFanOut(1_000_000, leaseOf())
    /** A lease over three events fanned out just now, as a worker holds one. */
    const fanOutLease = async (overrides: Partial<Omit<FanOutLease, "seqs">> = {}): Promise<FanOutLease> => {
      const tenantId = await subscribedTenant()
      await takeWaiting()
      await append(Array.from({ length: 3 }, () => outboxEvent(tenantId)))
      const lease = leaseOf(overrides)
      const taken = await takeFanOut(10, lease)
      return { ...lease, seqs: taken.leased.map((t) => t.seq) }
    }
    const hold = (holds: ReadonlyArray<FanOutHold>) => h().run(store((s) => s.holdFanOuts(holds)))
    const takeOver = async (now: string, holder: string, mine: ReadonlyArray<FanOutLease>) => {
      const ids = new Set(mine.map((lease) => lease.id))
      const taken = await h().run(store((s) => s.claimExpiredFanOuts(now, at("12:10:00.000"), holder, 1_000)))
      const ours = taken.filter((lease) => ids.has(lease.id))
      leasesMade.push(...ours)
      return ours
    }
    /** The tenant's outbox rows as stored: which were taken, and when. */
    const marks = async (tenantId: string) =>
      (await h().stored.outboxEvents(tenantId)).map((row) => ({ seq: row.seq, fanned_out_at: row.fanned_out_at }))

    describe("takeFanOut", () => {
      it("takes events in append order, up to the limit, each once, under a lease over them", async () => {
        const tenantId = await subscribedTenant()
        await takeWaiting()
        const events = Array.from({ length: 5 }, () => outboxEvent(tenantId))
        await append(events.slice(0, 3))
        await append(events.slice(3))

        const firstLease = leaseOf({ fanned_at: at("11:58:00.000"), lease_until: at("11:59:00.000") })
        const first = await takeFanOut(2, firstLease)
        expect(first.leased.map((t) => t.event)).toEqual(events.slice(0, 2))
        expect(first.leased[0]!.seq).toBeLessThan(first.leased[1]!.seq)
        const rest = await takeFanOut(10, leaseOf())
        expect(rest).toEqual({ leased: events.slice(2).map((event) => ({ seq: expect.any(Number), event })), unwanted: 0 })
        expect(await takeFanOut(10, leaseOf())).toEqual({ leased: [], unwanted: 0 })
        // Taking marks, nothing more: the event log still shows every event.
        expect(eventsOf(await h().stored.outboxEvents(tenantId))).toEqual(events)
        // The lease holds exactly the events taken with it, with the fan-out time.
        expect(await hold([firstLease])).toEqual(new Set([firstLease.id]))
        expect(await takeOver(NOW, "second worker", [{ ...firstLease, seqs: [] }])).toEqual([
          { ...firstLease, seqs: first.leased.map((t) => t.seq), holder: "second worker", lease_until: at("12:10:00.000") }
        ])
      })

      it("marks the events it takes fanned out at the lease's time, and stores the lease over exactly their seqs", async () => {
        const tenantId = await subscribedTenant()
        await takeWaiting()
        await append(Array.from({ length: 4 }, () => outboxEvent(tenantId)))
        const seqs = (await h().stored.outboxEvents(tenantId)).map((row) => row.seq)

        const lease = leaseOf({ fanned_at: at("11:58:00.000") })
        const taken = await takeFanOut(3, lease)

        expect(taken.leased.map((t) => t.seq)).toEqual(seqs.slice(0, 3))
        expect(await marks(tenantId)).toEqual([
          ...seqs.slice(0, 3).map((seq) => ({ seq, fanned_out_at: at("11:58:00.000") })),
          { seq: seqs[3], fanned_out_at: null }
        ])
        expect(await h().stored.fanOutLease(lease.id)).toEqual({ ...lease, seqs: seqs.slice(0, 3) })
      })

      it("stores events of tenants with no endpoint taking events fanned out at their own time, never taken: without endpoints, endpoints switched off or deactivated; a type not subscribed to is taken, unwanted", async () => {
        const subscribed = await subscribedTenant()
        const otherTypes = (await endpointsOfNewTenant(1, { subscribed_events: ["message.received", "contact.updated"] }))[0]!.tenant_id
        const switchedOff = (await endpointsOfNewTenant(1, { is_active: false }))[0]!.tenant_id
        const deactivated =
          (await endpointsOfNewTenant(1, { is_active: false, permanently_deactivated_at: at("11:00:00.000") }))[0]!.tenant_id
        const withoutEndpoints = globalThis.crypto.randomUUID()
        await takeWaiting()
        const wanted = [outboxEvent(subscribed), outboxEvent(otherTypes, { type: "contact.updated" })]
        const notSubscribed = outboxEvent(otherTypes)
        const neverTaken = [
          outboxEvent(withoutEndpoints, { created_at: at("11:30:00.000") }),
          outboxEvent(switchedOff, { created_at: at("11:32:00.000") }),
          outboxEvent(deactivated, { created_at: at("11:33:00.000") }),
          outboxEvent(withoutEndpoints, { type: "message.received", created_at: at("11:34:00.000") })
        ]
        await append([neverTaken[0]!, wanted[0]!, notSubscribed, neverTaken[1]!, wanted[1]!, neverTaken[2]!, neverTaken[3]!])

        const lease = leaseOf({ fanned_at: at("11:58:00.000") })
        const taken = await takeFanOut(10, lease)

        expect(taken).toEqual({ leased: wanted.map((event) => ({ seq: expect.any(Number), event })), unwanted: 1 })
        expect(await h().stored.fanOutLease(lease.id)).toEqual({ ...lease, seqs: taken.leased.map((t) => t.seq) })
        for (const tenantId of [subscribed, otherTypes, switchedOff, deactivated, withoutEndpoints]) {
          for (const row of await h().stored.outboxEvents(tenantId)) {
            const stored = neverTaken.some((event) => event.id === row.event.id)
            expect(row.fanned_out_at).toBe(stored ? row.event.created_at : at("11:58:00.000"))
          }
        }
        expect(await takeFanOut(10, leaseOf())).toEqual({ leased: [], unwanted: 0 })
      })

      it("marks events no endpoint wants any more when taken fanned out under no lease: endpoints switched off, deactivated or unsubscribed since", async () => {
        const [switchedOff] = await endpointsOfNewTenant()
        const [deactivated] = await endpointsOfNewTenant()
        const [unsubscribed] = await endpointsOfNewTenant()
        const [kept] = await endpointsOfNewTenant()
        await takeWaiting()
        const events = [switchedOff, deactivated, unsubscribed, kept].map((endpoint) => outboxEvent(endpoint!.tenant_id))
        await append(events)
        await saveEndpoint({ ...switchedOff!, is_active: false })
        await saveEndpoint({ ...deactivated!, is_active: false, permanently_deactivated_at: at("11:00:00.000") })
        await saveEndpoint({ ...unsubscribed!, subscribed_events: ["message.received"] })

        const lease = leaseOf({ fanned_at: at("11:58:00.000") })
        const taken = await takeFanOut(10, lease)

        expect(taken).toEqual({ leased: [{ seq: expect.any(Number), event: events[3] }], unwanted: 3 })
        expect(await h().stored.fanOutLease(lease.id)).toEqual({ ...lease, seqs: taken.leased.map((t) => t.seq) })
        // Every event taken is fanned out, wanted or not: none is taken again.
        for (const endpoint of [switchedOff, deactivated, unsubscribed, kept]) {
          expect((await marks(endpoint!.tenant_id)).map((row) => row.fanned_out_at)).toEqual([at("11:58:00.000")])
        }
        expect(await takeFanOut(10, leaseOf())).toEqual({ leased: [], unwanted: 0 })
      })

      it("stores no lease when none of the events it takes can be wanted", async () => {
        const [endpoint] = await endpointsOfNewTenant()
        await takeWaiting()
        await append(Array.from({ length: 3 }, () => outboxEvent(endpoint!.tenant_id)))
        await saveEndpoint({ ...endpoint!, is_active: false })

        const lease = leaseOf({ fanned_at: at("11:58:00.000") })
        expect(await takeFanOut(10, lease)).toEqual({ leased: [], unwanted: 3 })
        expect(await h().stored.fanOutLease(lease.id)).toBeUndefined()
        expect(await hold([lease])).toEqual(new Set())
        expect((await marks(endpoint!.tenant_id)).map((row) => row.fanned_out_at)).toEqual(Array(3).fill(at("11:58:00.000")))
      })

      it("leases a suspended endpoint's events, which queue behind its suspension", async () => {
        const [suspended] = await endpointsOfNewTenant(1, { suspended_at: at("11:00:00.000"), next_reactivation_at: at("13:00:00.000") })
        await takeWaiting()
        const event = outboxEvent(suspended!.tenant_id)
        await append([event])

        const taken = await takeFanOut(10, leaseOf())
        expect(taken).toEqual({ leased: [{ seq: expect.any(Number), event }], unwanted: 0 })
      })

      it("tells whether any event waits to be fanned out, none once what was appended is taken or was never wanted", async () => {
        const anyToFanOut = () => h().run(store((s) => s.anyToFanOut))
        await takeWaiting()
        expect(await anyToFanOut()).toBe(false)
        await append([outboxEvent(globalThis.crypto.randomUUID())])
        expect(await anyToFanOut()).toBe(false)
        await append([outboxEvent(await subscribedTenant())])
        expect(await anyToFanOut()).toBe(true)
        await takeWaiting()
        expect(await anyToFanOut()).toBe(false)
      })

      it("stores no lease when there is nothing to take", async () => {
        await takeWaiting()
        const lease = leaseOf()
        expect(await takeFanOut(10, lease)).toEqual({ leased: [], unwanted: 0 })
        expect(await hold([lease])).toEqual(new Set())
        expect(await h().stored.fanOutLease(lease.id)).toBeUndefined()
      })

      it("leaves the events to take again, and no lease, when the transaction that took them fails", async () => {
        const tenantId = await subscribedTenant()
        await takeWaiting()
        const events = Array.from({ length: 3 }, () => outboxEvent(tenantId))
        await append(events)

        const lease = leaseOf()
        const exit = await h().exit(Transactor.use((t) => t.withTransaction(
          store((s) => s.takeFanOut(10, lease)).pipe(Effect.andThen(Effect.fail("fan-out failed")))
        )))
        expect(Exit.isFailure(exit)).toBe(true)
        expect((await marks(tenantId)).map((row) => row.fanned_out_at)).toEqual([null, null, null])
        expect(await h().stored.fanOutLease(lease.id)).toBeUndefined()
        expect(await hold([lease])).toEqual(new Set())
        expect((await takeFanOut(10, leaseOf())).leased.map((t) => t.event)).toEqual(events)
      })

      it("gives two concurrent takers disjoint events, each lease over its own (needs several connections)", async (ctx) => {
        ctx.skip(!h().capabilities.concurrentConnections, NEEDS_CONNECTIONS)
        const [endpoint] = await endpointsOfNewTenant()
        const [switchedOff] = await endpointsOfNewTenant()
        await takeWaiting()
        const events = Array.from({ length: 60 }, () => outboxEvent(endpoint!.tenant_id))
        await append(events.flatMap((event) => [event, outboxEvent(switchedOff!.tenant_id)]))
        await saveEndpoint({ ...switchedOff!, is_active: false })

        const [leaseA, leaseB] = [leaseOf(), leaseOf()]
        const [a, b] = await h().run(Effect.all([
          store((s) => s.takeFanOut(80, leaseA)),
          store((s) => s.takeFanOut(80, leaseB))
        ], { concurrency: 2 }))
        const ids = [...a.leased, ...b.leased].map((t) => t.event.id)
        expect(new Set(ids).size).toBe(60)
        expect(ids.sort()).toEqual(events.map((e) => e.id).sort())
        expect(a.unwanted + b.unwanted).toBe(60)
        expect((await h().stored.fanOutLease(leaseA.id))?.seqs).toEqual(a.leased.map((t) => t.seq))
        expect((await h().stored.fanOutLease(leaseB.id))?.seqs).toEqual(b.leased.map((t) => t.seq))
      })

      it("hands out events whose JSON is the JSON of the event as read, whatever its data holds", async () => {
        const tenantId = await subscribedTenant()
        await takeWaiting()
        const events = [
          { quote: "say \"hi\"\n\t\\", "2": "integer-like keys first", b: [1, 2.5, -0, 1e21, null, true] },
          // An own "__proto__" key, as only parsed JSON makes one.
          JSON.parse(`{"__proto__": {"polluted": true}, "": "", "emoji": "🚀 山田 \u2028", "nested": {"deep": [{"a": {}}]}}`)
        ].map((data) => outboxEvent(tenantId, { data }))
        await append(events)

        const taken = await takeFanOut(10, leaseOf())
        expect(taken.leased).toHaveLength(2)
        for (const { event } of taken.leased) expect(envelopeJson(event)).toBe(JSON.stringify(event))
        const read = await h().run(OutboxStore.use((s) => s.listByTenant(tenantId, { limit: 10 })))
        expect(read.map(envelopeJson)).toEqual(read.map((event) => JSON.stringify(event)))
      })
    })

    describe("holdFanOuts and releaseFanOuts", () => {
      it("is held by its holder alone, and released only by it", async () => {
        const lease = await fanOutLease()
        const other = await fanOutLease()

        expect(await hold([lease, { id: other.id, holder: lease.holder }])).toEqual(new Set([lease.id]))
        await h().run(store((s) => s.releaseFanOuts([{ id: lease.id, holder: other.holder }])))
        expect(await hold([lease])).toEqual(new Set([lease.id]))
        expect(await h().stored.fanOutLease(lease.id)).toEqual(lease)
        await h().run(store((s) => s.releaseFanOuts([lease])))
        expect(await hold([lease, other])).toEqual(new Set([other.id]))
        expect(await h().stored.fanOutLease(lease.id)).toBeUndefined()
        expect(await h().stored.fanOutLease(other.id)).toEqual(other)
        expect(await hold([])).toEqual(new Set())
      })

      it("locks the leases until the transaction ends: another transaction's hold waits, then finds them as the first left them (needs several connections)", async (ctx) => {
        ctx.skip(!h().capabilities.concurrentConnections, NEEDS_CONNECTIONS)
        const lease = await fanOutLease()
        const other = await fanOutLease()

        // The first stores its batch and lets the lease go, as a worker does; the second asks for both leases.
        const { whileHeld, after } = await h().run(contend({
          hold: store((s) => s.holdFanOuts([lease])),
          finish: () => store((s) => s.releaseFanOuts([lease])),
          contend: store((s) => s.holdFanOuts([lease, other]))
        }))

        expect(Option.isNone(whileHeld)).toBe(true)
        expect(after).toEqual(new Set([other.id]))
      })
    })

    describe("claimExpiredFanOuts", () => {
      it("is taken over only once its time passed, by a new holder, with its events and fan-out time", async () => {
        const passed = await fanOutLease({ lease_until: at("12:01:00.000"), fanned_at: at("11:59:00.000") })
        const running = await fanOutLease({ lease_until: at("12:03:00.000") })

        expect(await takeOver(at("12:00:59.999"), "early", [passed, running])).toEqual([])
        const taken = await takeOver(at("12:01:00.000"), "second worker", [passed, running])
        expect(taken).toEqual([{ ...passed, holder: "second worker", lease_until: at("12:10:00.000") }])
        expect(await h().stored.fanOutLease(passed.id)).toEqual(taken[0])
        // The first holder can no longer store the batch; the new one can.
        expect(await hold([passed])).toEqual(new Set())
        expect(await hold(taken)).toEqual(new Set([passed.id]))
        expect(await hold([running])).toEqual(new Set([running.id]))
      })

      it("gives two concurrent take-overs disjoint leases (needs several connections)", async (ctx) => {
        ctx.skip(!h().capabilities.concurrentConnections, NEEDS_CONNECTIONS)
        const leases: Array<FanOutLease> = []
        for (let i = 0; i < 30; i++) leases.push(await fanOutLease({ lease_until: at("11:00:00.000") }))
        const ids = new Set(leases.map((lease) => lease.id))

        const [a, b] = await h().run(Effect.all([
          store((s) => s.claimExpiredFanOuts(NOW, LEASE_UNTIL, "a", 20)),
          store((s) => s.claimExpiredFanOuts(NOW, LEASE_UNTIL, "b", 20))
        ], { concurrency: 2 }))
        const taken = [...a, ...b].filter((lease) => ids.has(lease.id))
        leasesMade.push(...taken)
        expect(new Set(taken.map((lease) => lease.id)).size).toBe(taken.length)
        expect(taken.length).toBeGreaterThanOrEqual(20)
      })

      it("never hands a lease over half-stored: a take-over while its holder stores the batch finds it stored (needs several connections)", async (ctx) => {
        ctx.skip(!h().capabilities.concurrentConnections, NEEDS_CONNECTIONS)
        const [endpoint] = await endpointsOfNewTenant()
        const lease = await fanOutLease({ lease_until: at("11:00:00.000") })
        const delivery = deliveryRecord(endpoint!, { outbox_seq: lease.seqs[0]!, created_at: lease.fanned_at })
        // What a worker taking the lease over finds of the batch, if it took the lease.
        const takeOverAndLook = store((s) =>
          Effect.gen(function*() {
            const taken = (yield* s.claimExpiredFanOuts(NOW, LEASE_UNTIL, "taker", 1_000)).filter((l) => l.id === lease.id)
            leasesMade.push(...taken)
            return taken.length === 0 ? undefined : yield* s.existingAt([endpoint!], lease.fanned_at, lease.seqs)
          })
        )

        // The holder stores a delivery of its batch; the lease's time has passed, so it can be taken over.
        const { after } = await h().run(contend({
          hold: store((s) => Effect.andThen(s.holdFanOuts([lease]), s.insertMany([delivery]))),
          finish: () => Effect.void,
          contend: takeOverAndLook
        }))
        // A take-over that stepped aside while the batch was being stored takes the lease now.
        const found = after ?? await h().run(takeOverAndLook)

        expect(found).toEqual(new Set([`${endpoint!.id} ${lease.seqs[0]}`]))
      })
    })

    describe("existingAt", () => {
      it("tells which deliveries of a fan-out exist, by endpoint and event, whatever their status", async () => {
        const [first, second] = await endpointsOfNewTenant(2)
        const statuses = ["pending", "success", "failed", "retrying", "queued", "dead_letter"] as const
        const made = statuses.map((status) => deliveryRecord(first!, { status }))
        const seqs = made.map((d) => d.outbox_seq)
        const elsewhere = [
          // Another endpoint, and a delivery of the same event made at another time (a manual retry).
          deliveryRecord(second!, { outbox_seq: seqs[0]! }),
          deliveryRecord(first!, { created_at: at("12:30:00.000"), previous_delivery_id: made[1]!.id })
        ]
        await h().run(store((s) => s.insertMany([...made, ...elsewhere])))

        const asked = [...seqs, elsewhere[1]!.outbox_seq, reserveSeqs(1)]
        const existing = await h().run(store((s) => s.existingAt([first!], NOW, asked)))
        expect(existing).toEqual(new Set(seqs.map((seq) => `${first!.id} ${seq}`)))
        const both = await h().run(store((s) => s.existingAt([first!, second!], NOW, [seqs[0]!])))
        expect(both).toEqual(new Set([`${first!.id} ${seqs[0]}`, `${second!.id} ${seqs[0]}`]))
        expect(await h().run(store((s) => s.existingAt([], NOW, seqs)))).toEqual(new Set())
      })
    })
  })
}
