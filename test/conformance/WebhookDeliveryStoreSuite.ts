import { Effect, Option } from "effect"
import { afterEach, describe, expect, it } from "vitest"
import type { AccountStore } from "../../src/ports/AccountStore.ts"
import type { OutboxStore } from "../../src/ports/OutboxStore.ts"
import type { TenantStore } from "../../src/ports/TenantStore.ts"
import type { Transactor } from "../../src/ports/Transactor.ts"
import { type WebhookDeliveryRecord, WebhookDeliveryStore } from "../../src/ports/WebhookDeliveryStore.ts"
import { type WebhookEndpointRecord, WebhookEndpointStore } from "../../src/ports/WebhookEndpointStore.ts"
import { at, deliveryRecord, LEASE_UNTIL, NOW, reserveSeqs } from "./DeliveryFixtures.ts"
import { fanOutLeaseTests } from "./FanOutLeaseTests.ts"
import { seedTenant, webhookEndpointRecord } from "./Fixtures.ts"
import { byId, makeSuite, type Suite, type UseHarness } from "./Harness.ts"

/**
 * What the WebhookDeliveryStore suite runs against: the port, the endpoints and tenants deliveries
 * belong to, the outbox fan-out takes events from, and transactions for its locks.
 */
type DeliveryPorts = WebhookDeliveryStore | WebhookEndpointStore | OutboxStore | Transactor | TenantStore | AccountStore

const NEEDS_CONNECTIONS = "needs several connections: the adapter runs one transaction at a time"

type UseDeliveries = UseHarness<WebhookDeliveryStore, "webhookDeliveries">

const store = <A, E>(f: (s: WebhookDeliveryStore["Service"]) => Effect.Effect<A, E>) => WebhookDeliveryStore.use(f)

const insert = (h: UseDeliveries, deliveries: ReadonlyArray<WebhookDeliveryRecord>) => h().run(store((s) => s.insertMany(deliveries)))

const getDelivery = (h: UseDeliveries, delivery: WebhookDeliveryRecord) =>
  h().run(store((s) => s.get(delivery.tenant_id, delivery.webhook_endpoint_id, delivery.id))).then(Option.getOrUndefined)

/** Every delivery of the endpoint, newest first. */
const listAll = (h: UseDeliveries, endpoint: WebhookEndpointRecord) =>
  h().run(store((s) => s.list(endpoint.tenant_id, endpoint.id, { limit: 10_000, offset: 0 }))).then((page) => page.items)

/** Every delivery of the endpoint as stored, by id. */
const storedOf = async (h: UseDeliveries, endpoint: WebhookEndpointRecord) =>
  (await h().stored.webhookDeliveries(endpoint.tenant_id)).filter((d) => d.webhook_endpoint_id === endpoint.id)

/**
 * WebhookDeliveryStore: rows round-trip; claims take only due, unleased rows, oldest first, and
 * disjoint ones across connections; fan-out takes events and stores their lease as one step, and
 * leases lock until the transaction ends; suspension moves are bulk and per endpoint; reads are
 * tenant-scoped.
 */
export const webhookDeliveryStoreSuite: Suite<DeliveryPorts, "webhookDeliveries" | "outboxEvents" | "fanOutLease"> = makeSuite({
  name: "WebhookDeliveryStore",
  tables: ["webhookDeliveries", "outboxEvents", "fanOutLease"],
  tests: (h) => {
    // Claims are not scoped by tenant, so each test's rows are finished afterwards and never crowd
    // a later test's claim.
    const endpointsMade: Array<WebhookEndpointRecord> = []
    afterEach(async () => {
      const made = endpointsMade.splice(0)
      await h().run(store((s) =>
        Effect.forEach(made, (e) => s.deadLetterOutstanding(e.tenant_id, e.id, "test over", NOW), { discard: true })
      ))
    })

    /** A new tenant with `count` endpoints (subscribed to contact.created unless `overrides` say otherwise). */
    const endpointsOfNewTenant = async (count = 1, overrides: Partial<WebhookEndpointRecord> = {}) => {
      const { tenant } = await h().run(seedTenant)
      const endpoints = Array.from({ length: count }, () => webhookEndpointRecord(tenant.id, overrides))
      await h().run(WebhookEndpointStore.use((s) => Effect.forEach(endpoints, (e) => s.insert(e), { discard: true })))
      endpointsMade.push(...endpoints)
      return endpoints
    }

    /** Claims at `now`, keeping only the rows of `endpoint` (other tests' rows are none of this test's business). */
    const claim = async (endpoint: WebhookEndpointRecord, now = NOW, leaseUntil = LEASE_UNTIL, limit = 1_000) =>
      (await h().run(store((s) => s.claimDue(now, leaseUntil, limit)))).filter((d) => d.webhook_endpoint_id === endpoint.id)

    it("stores a delivery with every field set, unicode in its envelope, and reads it back unchanged", async () => {
      const [endpoint] = await endpointsOfNewTenant()
      const original = deliveryRecord(endpoint!, { status: "failed" })
      const retried = deliveryRecord(endpoint!, {
        event_id: original.event_id,
        event_type: "contact.updated",
        envelope: { ...original.envelope, type: "contact.updated", data: { contact: { name: "Zoë 山田 🚀", tags: ["a\"b", "c\\d"], vip: null } } },
        previous_delivery_id: original.id,
        status: "retrying",
        attempt_number: 15,
        max_retries: 15,
        retry_strategy: "linear",
        next_retry_at: at("12:01:00.000"),
        completed_at: at("11:59:59.999"),
        response_status_code: 503,
        response_time_ms: 60_000,
        // What array literals and VALUES lists must carry through: quotes, backslashes, braces, commas, a bare NULL.
        error_message: "HTTP 503: \"busy\"\nretry later {a,b} \\ NULL",
        created_at: at("11:00:00.001")
      })
      await insert(h, [original, retried])

      expect(await storedOf(h, endpoint!)).toEqual([original, retried].sort(byId))
      expect(await getDelivery(h, original)).toEqual(original)
      expect(await getDelivery(h, retried)).toEqual(retried)
    })

    it("stores a batch larger than one statement holds", async () => {
      const [endpoint] = await endpointsOfNewTenant()
      const batch = Array.from({ length: 1_201 }, () => deliveryRecord(endpoint!, { status: "success" }))
      await insert(h, batch)

      const page = await h().run(store((s) => s.list(endpoint!.tenant_id, endpoint!.id, { limit: 1, offset: 0 })))
      expect(page.total).toBe(1_201)
      expect(await getDelivery(h, batch.at(-1)!)).toEqual(batch.at(-1))
      expect(await storedOf(h, endpoint!)).toEqual([...batch].sort(byId))
    })

    it("leaves out deliveries whose endpoint was deleted, and stores the rest of the batch", async () => {
      const [kept, deleted] = await endpointsOfNewTenant(2)
      await h().run(WebhookEndpointStore.use((s) => s.delete(deleted!.tenant_id, deleted!.id)))
      const stored = deliveryRecord(kept!)
      await insert(h, [deliveryRecord(deleted!), stored, deliveryRecord(deleted!)])

      expect(await listAll(h, kept!)).toEqual([stored])
      expect(await listAll(h, deleted!)).toEqual([])
      expect(await h().stored.webhookDeliveries(kept!.tenant_id)).toEqual([stored])
    })

    it("accepts an empty batch", async () => {
      const [endpoint] = await endpointsOfNewTenant()
      await insert(h, [])
      expect(await listAll(h, endpoint!)).toEqual([])
      expect(await h().stored.webhookDeliveries(endpoint!.tenant_id)).toEqual([])
    })

    describe("claimDue", () => {
      it("claims pending rows and retrying rows whose next_retry_at has come, nothing else", async () => {
        const [endpoint] = await endpointsOfNewTenant()
        const pending = deliveryRecord(endpoint!)
        const retryingNow = deliveryRecord(endpoint!, { status: "retrying", attempt_number: 1, next_retry_at: NOW })
        const retryingLater = deliveryRecord(endpoint!, { status: "retrying", attempt_number: 1, next_retry_at: at("12:00:00.001") })
        const others = (["queued", "success", "failed", "dead_letter"] as const).map((status) => deliveryRecord(endpoint!, { status }))
        await insert(h, [pending, retryingNow, retryingLater, ...others])

        const claimed = await claim(endpoint!)
        expect(claimed.map((d) => d.id).sort()).toEqual([pending.id, retryingNow.id].sort())
        expect(claimed.find((d) => d.id === retryingNow.id)).toEqual(retryingNow)
      })

      it("claims oldest first, by created_at and then outbox order, up to the limit", async () => {
        const [endpoint] = await endpointsOfNewTenant()
        const seqs = reserveSeqs(10)
        const [first, second, third, fourth] = [
          deliveryRecord(endpoint!, { created_at: at("09:59:00.000"), outbox_seq: seqs + 9 }),
          deliveryRecord(endpoint!, { created_at: at("10:00:00.000"), outbox_seq: seqs + 5 }),
          deliveryRecord(endpoint!, { created_at: at("10:00:00.000"), outbox_seq: seqs + 7 }),
          deliveryRecord(endpoint!, { created_at: at("10:01:00.000"), outbox_seq: seqs + 1 })
        ]
        await insert(h, [third!, fourth!, first!, second!])

        // Earlier tests' rows are finished, so the oldest due rows anywhere are this test's.
        expect((await claim(endpoint!, NOW, LEASE_UNTIL, 2)).map((d) => d.id)).toEqual([first!.id, second!.id])
        expect((await claim(endpoint!, NOW, LEASE_UNTIL, 2)).map((d) => d.id)).toEqual([third!.id, fourth!.id])
        expect(await claim(endpoint!)).toEqual([])
      })

      it("never claims a leased row; claimExpired takes it back once its lease has passed, and not before", async () => {
        const [endpoint] = await endpointsOfNewTenant()
        const delivery = deliveryRecord(endpoint!)
        await insert(h, [delivery])
        const expired = async (now: string, leaseUntil: string) =>
          (await h().run(store((s) => s.claimExpired(now, leaseUntil, 1_000)))).filter((d) => d.webhook_endpoint_id === endpoint!.id)

        expect(await claim(endpoint!, NOW, LEASE_UNTIL)).toEqual([delivery])
        expect(await expired(at("12:01:59.999"), at("12:03:59.999"))).toEqual([])
        expect(await claim(endpoint!, at("12:05:00.000"), at("12:07:00.000"))).toEqual([])
        expect(await expired(LEASE_UNTIL, at("12:04:00.000"))).toEqual([delivery])
        // Taken back, it is leased again: until 12:04, not a moment less.
        expect(await expired(at("12:03:59.999"), at("12:05:00.000"))).toEqual([])
        expect(await expired(at("12:04:00.000"), at("12:06:00.000"))).toEqual([delivery])
      })

      it("stores rows leased when asked, for claimExpired alone to take back after the lease", async () => {
        const [endpoint] = await endpointsOfNewTenant()
        const leased = deliveryRecord(endpoint!)
        const free = deliveryRecord(endpoint!)
        await h().run(store((s) => s.insertMany([leased], LEASE_UNTIL)))
        await insert(h, [free])
        const expired = (now: string) =>
          h().run(store((s) => s.claimExpired(now, at("13:00:00.000"), 1_000)))
            .then((rows) => rows.filter((d) => d.webhook_endpoint_id === endpoint!.id))

        expect(await claim(endpoint!, at("12:30:00.000"), at("12:32:00.000"))).toEqual([free])
        expect(await expired(at("12:01:59.999"))).toEqual([])
        expect(await expired(LEASE_UNTIL)).toEqual([leased])
        expect(await getDelivery(h, leased)).toEqual(leased)
      })

      it("takes back only due rows whose lease passed: not queued or finished ones, nor retries not yet due", async () => {
        const [endpoint] = await endpointsOfNewTenant()
        const pending = deliveryRecord(endpoint!)
        const retryingDue = deliveryRecord(endpoint!, { status: "retrying", attempt_number: 1, next_retry_at: at("12:00:00.000") })
        const retryingLater = deliveryRecord(endpoint!, { status: "retrying", attempt_number: 1, next_retry_at: at("12:10:00.000") })
        const others = (["queued", "success", "failed", "dead_letter"] as const).map((status) => deliveryRecord(endpoint!, { status }))
        await h().run(store((s) => s.insertMany([pending, retryingDue, retryingLater, ...others], NOW)))

        const taken = (await h().run(store((s) => s.claimExpired(at("12:05:00.000"), at("12:07:00.000"), 1_000))))
          .filter((d) => d.webhook_endpoint_id === endpoint!.id)
        expect(taken.map((d) => d.id).sort()).toEqual([pending.id, retryingDue.id].sort())
      })

      it("merges due retries and pending rows oldest first", async () => {
        const [endpoint] = await endpointsOfNewTenant()
        const olderRetry = deliveryRecord(endpoint!, {
          status: "retrying",
          attempt_number: 2,
          next_retry_at: at("11:59:00.000"),
          created_at: at("09:00:00.000")
        })
        const pending = deliveryRecord(endpoint!, { created_at: at("10:00:00.000") })
        const newerRetry = deliveryRecord(endpoint!, {
          status: "retrying",
          attempt_number: 1,
          next_retry_at: at("11:00:00.000"),
          created_at: at("10:30:00.000")
        })
        await insert(h, [newerRetry, pending, olderRetry])

        expect((await claim(endpoint!, NOW, LEASE_UNTIL, 2)).map((d) => d.id)).toEqual([olderRetry.id, pending.id])
        expect((await claim(endpoint!)).map((d) => d.id)).toEqual([newerRetry.id])
      })

      it("frees the lease when the delivery is saved", async () => {
        const [endpoint] = await endpointsOfNewTenant()
        const delivery = deliveryRecord(endpoint!)
        await insert(h, [delivery])
        const [claimed] = await claim(endpoint!)

        const attempted = { ...claimed!, status: "retrying" as const, attempt_number: 1, next_retry_at: at("12:00:05.000"), error_message: "HTTP 500" }
        await h().run(store((s) => s.saveMany([{ state: attempted }])))

        expect(await getDelivery(h, delivery)).toEqual(attempted)
        expect(await storedOf(h, endpoint!)).toEqual([attempted])
        expect(await claim(endpoint!, at("12:00:05.000"), at("12:02:05.000"))).toEqual([attempted])
      })

      it("gives two concurrent claims disjoint rows (needs several connections)", async (ctx) => {
        ctx.skip(!h().capabilities.concurrentConnections, NEEDS_CONNECTIONS)
        const [endpoint] = await endpointsOfNewTenant()
        for (let round = 0; round < 5; round++) {
          const due = Array.from({ length: 40 }, () => deliveryRecord(endpoint!))
          await insert(h, due)

          const [a, b] = await h().run(Effect.all([
            store((s) => s.claimDue(NOW, LEASE_UNTIL, 30)),
            store((s) => s.claimDue(NOW, LEASE_UNTIL, 30))
          ], { concurrency: 2 }))
          const ids = [...a, ...b].map((d) => d.id)
          expect(new Set(ids).size).toBe(ids.length)
          expect(ids.sort()).toEqual(due.map((d) => d.id).sort())
          await h().run(store((s) => s.deadLetterOutstanding(endpoint!.tenant_id, endpoint!.id, "round over", NOW)))
        }
      })

      it("gives two concurrent take-backs of expired leases disjoint rows (needs several connections)", async (ctx) => {
        ctx.skip(!h().capabilities.concurrentConnections, NEEDS_CONNECTIONS)
        const [endpoint] = await endpointsOfNewTenant()
        for (let round = 0; round < 5; round++) {
          const leased = Array.from({ length: 40 }, () => deliveryRecord(endpoint!))
          await h().run(store((s) => s.insertMany(leased, NOW)))

          const later = at("12:00:00.001")
          const [a, b] = await h().run(Effect.all([
            store((s) => s.claimExpired(later, LEASE_UNTIL, 30)),
            store((s) => s.claimExpired(later, LEASE_UNTIL, 30))
          ], { concurrency: 2 }))
          const ids = [...a, ...b].filter((d) => d.webhook_endpoint_id === endpoint!.id).map((d) => d.id)
          expect(new Set(ids).size).toBe(ids.length)
          expect(ids.sort()).toEqual(leased.map((d) => d.id).sort())
          await h().run(store((s) => s.deadLetterOutstanding(endpoint!.tenant_id, endpoint!.id, "round over", NOW)))
        }
      })
    })

    fanOutLeaseTests(h, endpointsOfNewTenant, (endpoint) =>
      h().run(WebhookEndpointStore.use((s) => s.update(endpoint.tenant_id, endpoint))).then(() => undefined))

    describe("recording attempts", () => {
      const attempted = (d: WebhookDeliveryRecord, n: number): WebhookDeliveryRecord => ({
        ...d,
        status: n % 3 === 0 ? "success" : n % 3 === 1 ? "retrying" : "failed",
        attempt_number: n % 15,
        max_retries: 15,
        retry_strategy: n % 2 === 0 ? "linear" : "exponential",
        next_retry_at: n % 3 === 1 ? at("12:10:00.000") : null,
        completed_at: n % 3 === 1 ? null : at("12:00:01.000"),
        response_status_code: n % 3 === 0 ? 204 : n % 3 === 1 ? null : 503,
        response_time_ms: n,
        error_message: n % 3 === 0 ? null : n % 7 === 0 ? "NULL" : `failure ${n}: "quoted" {a,b} \\ 山田 🚀`
      })

      it("saves a batch larger than one statement holds, every row's state exactly, and frees the leases", async () => {
        const [endpoint] = await endpointsOfNewTenant()
        const batch = Array.from({ length: 1_203 }, () => deliveryRecord(endpoint!))
        await h().run(store((s) => s.insertMany(batch, LEASE_UNTIL)))
        const saved = batch.map((d, n) => attempted(d, n))
        expect((await h().run(store((s) => s.saveMany(saved.map((state) => ({ state })))))).size).toBe(1_203)

        const stored = new Map((await listAll(h, endpoint!)).map((d) => [d.id, d]))
        expect(stored.size).toBe(1_203)
        for (const expected of saved) expect(stored.get(expected.id)).toEqual(expected)
        expect(await storedOf(h, endpoint!)).toEqual([...saved].sort(byId))
        // Leases are free: the retrying rows come due at 12:10, and nothing is left to take back.
        const due = await claim(endpoint!, at("12:10:00.000"), at("12:12:00.000"), 2_000)
        expect(due.length).toBe(saved.filter((d) => d.status === "retrying").length)
        expect(await h().run(store((s) => s.claimExpired(at("13:00:00.000"), at("13:02:00.000"), 2_000))).then((rows) =>
          rows.filter((d) => d.webhook_endpoint_id === endpoint!.id && d.status !== "retrying"))).toEqual([])
      })

      it("saves only the machine's columns and leaves other rows alone", async () => {
        const [endpoint, other] = await endpointsOfNewTenant(2)
        const mine = deliveryRecord(endpoint!)
        const theirs = deliveryRecord(other!)
        await insert(h, [mine, theirs])
        // Fields outside the machine's state are not written, whatever the record says.
        await h().run(store((s) =>
          s.saveMany([{ state: { ...attempted(mine, 3), event_type: "changed", envelope: { ...mine.envelope, type: "changed" } } as never }])))

        expect(await getDelivery(h, mine)).toEqual(attempted(mine, 3))
        expect(await getDelivery(h, theirs)).toEqual(theirs)
        expect(await h().stored.webhookDeliveries(endpoint!.tenant_id)).toEqual([attempted(mine, 3), theirs].sort(byId))
        await h().run(store((s) => s.saveMany([])))
      })

      it("writes a save with an expected state only where the row still has that status and attempt count", async () => {
        const [endpoint] = await endpointsOfNewTenant()
        const asClaimed = deliveryRecord(endpoint!, { status: "retrying", attempt_number: 2, next_retry_at: NOW })
        const parked = deliveryRecord(endpoint!, { status: "retrying", attempt_number: 2, next_retry_at: NOW })
        const retaken = deliveryRecord(endpoint!, { status: "retrying", attempt_number: 2, next_retry_at: NOW })
        await h().run(store((s) => s.insertMany([asClaimed, parked, retaken], LEASE_UNTIL)))
        // Meanwhile one row is parked by a suspension and another attempted by a worker that took it over.
        await h().run(store((s) => s.saveMany([
          { state: { ...parked, status: "queued", next_retry_at: null } },
          { state: { ...retaken, attempt_number: 3, next_retry_at: at("12:01:00.000") } }
        ])))
        const expected = { status: "retrying", attempt_number: 2 } as const
        const succeeded = (d: WebhookDeliveryRecord) => ({ ...attempted(d, 3), attempt_number: 3 })

        const written = await h().run(store((s) =>
          s.saveMany([asClaimed, parked, retaken].map((d) => ({ state: succeeded(d), expected })))))
        expect([...written]).toEqual([asClaimed.id])
        expect(await getDelivery(h, asClaimed)).toEqual(succeeded(asClaimed))
        expect(await getDelivery(h, parked)).toEqual({ ...parked, status: "queued", next_retry_at: null })
        expect((await getDelivery(h, retaken))?.next_retry_at).toBe(at("12:01:00.000"))
        expect(await storedOf(h, endpoint!)).toEqual([
          succeeded(asClaimed),
          { ...parked, status: "queued", next_retry_at: null },
          { ...retaken, attempt_number: 3, next_retry_at: at("12:01:00.000") }
        ].sort(byId))
      })

      it("reads states by id, each only within the tenant it is named with, leaving out unknown ids", async () => {
        const [endpoint] = await endpointsOfNewTenant()
        const [stranger] = await endpointsOfNewTenant()
        const batch = Array.from({ length: 601 }, (_, n) => attempted(deliveryRecord(endpoint!), n))
        await insert(h, batch)

        const states = await h().run(store((s) => s.getStates([
          ...batch.map((d) => ({ id: d.id, tenant_id: d.tenant_id })),
          { id: globalThis.crypto.randomUUID(), tenant_id: endpoint!.tenant_id }
        ])))
        const { envelope: _e, event_id: _i, event_type: _t, outbox_seq: _s, previous_delivery_id: _p, created_at: _c, webhook_endpoint_id: _w, ...state } = batch[7]!
        expect(states.length).toBe(601)
        expect(states.find((d) => d.id === batch[7]!.id)).toEqual(state)
        expect(await h().run(store((s) => s.getStates([{ id: batch[0]!.id, tenant_id: stranger!.tenant_id }])))).toEqual([])
        expect(await h().run(store((s) => s.getStates([])))).toEqual([])
      })
    })

    describe("suspension moves", () => {
      /** One row in every status for each of two endpoints of one tenant. */
      const everyStatus = async () => {
        const [suspended, other] = await endpointsOfNewTenant(2)
        const rows = (endpoint: WebhookEndpointRecord) => ({
          pending: deliveryRecord(endpoint),
          retrying: deliveryRecord(endpoint, { status: "retrying", attempt_number: 2, next_retry_at: at("12:00:10.000"), error_message: "HTTP 500" }),
          queued: deliveryRecord(endpoint, { status: "queued", attempt_number: 1 }),
          success: deliveryRecord(endpoint, { status: "success", attempt_number: 1, completed_at: at("11:00:00.000"), response_status_code: 200 }),
          failed: deliveryRecord(endpoint, { status: "failed", attempt_number: 9, completed_at: at("11:00:00.000"), error_message: "HTTP 500" }),
          dead_letter: deliveryRecord(endpoint, { status: "dead_letter", completed_at: at("11:00:00.000"), error_message: "queue full" })
        })
        const mine = rows(suspended!)
        const theirs = rows(other!)
        await insert(h, [...Object.values(mine), ...Object.values(theirs)])
        const read = (delivery: WebhookDeliveryRecord) => getDelivery(h, delivery)
        const unchanged = async (records: Record<string, WebhookDeliveryRecord>, keys: ReadonlyArray<string>) => {
          for (const key of keys) expect(await read(records[key]!)).toEqual(records[key])
        }
        /** Checks every row of the tenant as stored: the suspended endpoint's rows as `changed` says, all others as made. */
        const storedAre = async (changed: Partial<Record<keyof typeof mine, WebhookDeliveryRecord>>) =>
          expect(await h().stored.webhookDeliveries(suspended!.tenant_id))
            .toEqual([...Object.values({ ...mine, ...changed }), ...Object.values(theirs)].sort(byId))
        return { suspended: suspended!, mine, theirs, read, unchanged, storedAre }
      }
      const ALL = ["pending", "retrying", "queued", "success", "failed", "dead_letter"]

      it("parks the endpoint's pending and retrying rows as queued, keeping their attempts, and touches nothing else", async () => {
        const { suspended, mine, theirs, read, unchanged, storedAre } = await everyStatus()
        await h().run(store((s) => s.parkOutstanding(suspended.tenant_id, suspended.id)))

        expect(await read(mine.pending)).toEqual({ ...mine.pending, status: "queued" })
        expect(await read(mine.retrying)).toEqual({ ...mine.retrying, status: "queued", next_retry_at: null })
        await unchanged(mine, ["queued", "success", "failed", "dead_letter"])
        await unchanged(theirs, ALL)
        await storedAre({
          pending: { ...mine.pending, status: "queued" },
          retrying: { ...mine.retrying, status: "queued", next_retry_at: null }
        })
        expect(await h().run(store((s) => s.countQueued(suspended.tenant_id, suspended.id)))).toBe(3)
      })

      it("replays the endpoint's queued rows as pending, and touches nothing else", async () => {
        const { suspended, mine, theirs, read, unchanged, storedAre } = await everyStatus()
        await h().run(store((s) => s.replayQueued(suspended.tenant_id, suspended.id)))

        expect(await read(mine.queued)).toEqual({ ...mine.queued, status: "pending" })
        await unchanged(mine, ["pending", "retrying", "success", "failed", "dead_letter"])
        await unchanged(theirs, ALL)
        await storedAre({ queued: { ...mine.queued, status: "pending" } })
        expect(await h().run(store((s) => s.countQueued(suspended.tenant_id, suspended.id)))).toBe(0)
      })

      it("dead-letters the endpoint's pending, retrying and queued rows with the reason, and touches nothing else", async () => {
        const { suspended, mine, theirs, read, unchanged, storedAre } = await everyStatus()
        const when = at("12:30:00.000")
        await h().run(store((s) => s.deadLetterOutstanding(suspended.tenant_id, suspended.id, "endpoint set inactive", when)))
        const deadLettered = (d: WebhookDeliveryRecord): WebhookDeliveryRecord => ({
          ...d,
          status: "dead_letter",
          next_retry_at: null,
          completed_at: when,
          error_message: "endpoint set inactive"
        })

        for (const key of ["pending", "retrying", "queued"] as const) {
          expect(await read(mine[key])).toEqual(deadLettered(mine[key]))
        }
        await unchanged(mine, ["success", "failed", "dead_letter"])
        await unchanged(theirs, ALL)
        await storedAre({ pending: deadLettered(mine.pending), retrying: deadLettered(mine.retrying), queued: deadLettered(mine.queued) })
      })

      it("moves, counts and finds an endpoint's deliveries only in the tenant named with it", async () => {
        const { suspended, mine, read, unchanged, storedAre } = await everyStatus()
        const [stranger] = await endpointsOfNewTenant()
        await h().run(store((s) => s.parkOutstanding(stranger!.tenant_id, suspended.id)))
        await h().run(store((s) => s.replayQueued(stranger!.tenant_id, suspended.id)))
        await h().run(store((s) => s.deadLetterOutstanding(stranger!.tenant_id, suspended.id, "not theirs", NOW)))
        await unchanged(mine, ALL)
        await storedAre({})
        expect(await read(mine.queued)).toEqual(mine.queued)
        expect(await h().run(store((s) => s.countQueued(stranger!.tenant_id, suspended.id)))).toBe(0)
        const asked = Object.values(mine).map((d) => d.outbox_seq)
        expect(await h().run(store((s) => s.existingAt([{ id: suspended.id, tenant_id: stranger!.tenant_id }], NOW, asked))))
          .toEqual(new Set())
      })
    })

    describe("reads", () => {
      it("lists newest first (created_at, then outbox order), filtered by status and event_type, with the matching total", async () => {
        const [endpoint] = await endpointsOfNewTenant()
        const [oldest, middle, newest, updated] = [
          deliveryRecord(endpoint!, { status: "success", created_at: at("10:00:00.000") }),
          deliveryRecord(endpoint!, { status: "failed", created_at: at("10:00:00.000") }),
          deliveryRecord(endpoint!, { status: "success", created_at: at("11:00:00.000") }),
          deliveryRecord(endpoint!, { status: "success", created_at: at("10:30:00.000"), event_type: "contact.updated" })
        ]
        await insert(h, [updated!, oldest!, newest!, middle!])
        const list = (filter: { status?: "success"; event_type?: string; limit?: number; offset?: number }) =>
          h().run(store((s) => s.list(endpoint!.tenant_id, endpoint!.id, { limit: 10, offset: 0, ...filter })))
            .then((page) => ({ ids: page.items.map((d) => d.id), total: page.total }))

        expect(await list({})).toEqual({ ids: [newest!.id, updated!.id, middle!.id, oldest!.id], total: 4 })
        expect(await list({ limit: 2, offset: 1 })).toEqual({ ids: [updated!.id, middle!.id], total: 4 })
        expect(await list({ status: "success" })).toEqual({ ids: [newest!.id, updated!.id, oldest!.id], total: 3 })
        expect(await list({ status: "success", event_type: "contact.created", limit: 1 })).toEqual({ ids: [newest!.id], total: 2 })
        expect(await list({ event_type: "message.sent" })).toEqual({ ids: [], total: 0 })
      })

      it("finds no delivery through another tenant or another endpoint, and lists none of another tenant's", async () => {
        const [endpoint, sibling] = await endpointsOfNewTenant(2)
        const [stranger] = await endpointsOfNewTenant()
        const delivery = deliveryRecord(endpoint!, { status: "success" })
        await insert(h, [delivery])

        const get = (tenantId: string, endpointId: string) =>
          h().run(store((s) => s.get(tenantId, endpointId, delivery.id))).then(Option.getOrUndefined)
        expect(await get(endpoint!.tenant_id, endpoint!.id)).toEqual(delivery)
        expect(await get(stranger!.tenant_id, endpoint!.id)).toBeUndefined()
        expect(await get(endpoint!.tenant_id, sibling!.id)).toBeUndefined()
        expect(await h().run(store((s) => s.list(stranger!.tenant_id, endpoint!.id, { limit: 10, offset: 0 }))))
          .toEqual({ items: [], total: 0 })
        expect(await listAll(h, sibling!)).toEqual([])
      })

      it("counts pending, retrying, queued and dead_letter rows across tenants, and per tenant when asked", async () => {
        const [endpoint] = await endpointsOfNewTenant()
        const [stranger] = await endpointsOfNewTenant()
        const statuses = ["pending", "retrying", "queued", "dead_letter"] as const
        const count = (byTenant: boolean) => h().run(store((s) => s.countByStatus(byTenant)))
        const totals = async () => {
          const rows = await count(false)
          expect(rows.every((row) => row.tenant_id === null)).toBe(true)
          return statuses.map((status) => rows.find((row) => row.status === status)?.count ?? 0)
        }
        const before = await totals()
        await insert(h, [
          deliveryRecord(endpoint!, { status: "pending" }),
          deliveryRecord(endpoint!, { status: "pending" }),
          deliveryRecord(endpoint!, { status: "retrying", attempt_number: 1, next_retry_at: at("12:00:05.000") }),
          deliveryRecord(endpoint!, { status: "queued" }),
          deliveryRecord(endpoint!, { status: "dead_letter", completed_at: NOW }),
          deliveryRecord(endpoint!, { status: "success", attempt_number: 1, completed_at: NOW }),
          deliveryRecord(endpoint!, { status: "failed", attempt_number: 1, completed_at: NOW }),
          deliveryRecord(stranger!, { status: "queued" }),
          deliveryRecord(stranger!, { status: "queued" })
        ])
        expect((await totals()).map((n, i) => n - before[i]!)).toEqual([2, 1, 3, 1])
        const mine = (await count(true)).filter((row) => row.tenant_id === endpoint!.tenant_id || row.tenant_id === stranger!.tenant_id)
        expect(mine.sort((a, b) => `${a.tenant_id === stranger!.tenant_id} ${a.status}`.localeCompare(`${b.tenant_id === stranger!.tenant_id} ${b.status}`)))
          .toEqual([
            { status: "dead_letter", tenant_id: endpoint!.tenant_id, count: 1 },
            { status: "pending", tenant_id: endpoint!.tenant_id, count: 2 },
            { status: "queued", tenant_id: endpoint!.tenant_id, count: 1 },
            { status: "retrying", tenant_id: endpoint!.tenant_id, count: 1 },
            { status: "queued", tenant_id: stranger!.tenant_id, count: 2 }
          ])
      })

      it("counts only the endpoint's queued rows", async () => {
        const [endpoint, other] = await endpointsOfNewTenant(2)
        await insert(h, [
          deliveryRecord(endpoint!, { status: "queued" }),
          deliveryRecord(endpoint!, { status: "queued" }),
          deliveryRecord(endpoint!, { status: "dead_letter" }),
          deliveryRecord(other!, { status: "queued" })
        ])
        expect(await h().run(store((s) => s.countQueued(endpoint!.tenant_id, endpoint!.id)))).toBe(2)
      })
    })
  }
})
