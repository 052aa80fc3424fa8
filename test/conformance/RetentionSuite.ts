import { Effect, Option } from "effect"
import { afterEach, beforeAll, describe, expect, it } from "vitest"
import type { AccountStore } from "../../src/ports/AccountStore.ts"
import { type InboundPayloadRecord, InboundStore } from "../../src/ports/InboundStore.ts"
import { type OutboxPruneCursor, OutboxStore } from "../../src/ports/OutboxStore.ts"
import type { TenantStore } from "../../src/ports/TenantStore.ts"
import type { Transactor } from "../../src/ports/Transactor.ts"
import { type FanOutHold, type FanOutLease, type WebhookDeliveryRecord, WebhookDeliveryStore } from "../../src/ports/WebhookDeliveryStore.ts"
import { type WebhookEndpointRecord, WebhookEndpointStore } from "../../src/ports/WebhookEndpointStore.ts"
import { contend } from "./Contention.ts"
import { deliveryRecord, reserveSeqs } from "./DeliveryFixtures.ts"
import { inboundPayloadRecord, outboxEvent, seedTenant, webhookEndpointRecord } from "./Fixtures.ts"
import { byId, makeSuite, type Suite } from "./Harness.ts"

/** What the retention suite runs against: the three pruned stores, what their rows hang on, and transactions. */
type RetentionPorts = WebhookDeliveryStore | WebhookEndpointStore | OutboxStore | InboundStore | TenantStore | AccountStore | Transactor

const NEEDS_CONNECTIONS = "needs several connections: the adapter runs one transaction at a time"

/**
 * The suite's rows finished in the year 2000, long before any other suite's (2026), so a prune at
 * its cut-off, which runs across tenants, only ever meets rows this suite made.
 */
const old = (time: string): string => `2000-01-01T${time}Z`
const CUTOFF = "2000-06-01T00:00:00.000Z"
/** After the cut-off: kept. */
const RECENT = "2000-07-01T00:00:00.000Z"
const END_OF_TIME = "9999-12-31T23:59:59.999Z"

/**
 * An outbox position for a delivery made up without an event. Far past any event's, so that no
 * event of this suite is kept for a made-up delivery that happens to name its position.
 */
const madeUpSeq = (): number => 1_000_000_000_000 + reserveSeqs(1)

const deliveries = <A, E>(f: (s: WebhookDeliveryStore["Service"]) => Effect.Effect<A, E>) => WebhookDeliveryStore.use(f)
const outbox = <A, E>(f: (s: OutboxStore["Service"]) => Effect.Effect<A, E>) => OutboxStore.use(f)
const inbound = <A, E>(f: (s: InboundStore["Service"]) => Effect.Effect<A, E>) => InboundStore.use(f)

/**
 * Retention: each store deletes, in batches across tenants, only rows that finished before the
 * cut-off (finished deliveries, outbox events fanned out with no delivery and no lease left, handled
 * or failed inbound payloads), oldest first; never unfinished, queued, leased or recent rows; and a
 * prune never waits for rows another transaction holds.
 */
export const retentionSuite: Suite<RetentionPorts, "webhookDeliveries" | "outboxEvents" | "inboundPayload" | "inboundHandled"> =
  makeSuite({
    name: "Retention",
    tables: ["webhookDeliveries", "outboxEvents", "inboundPayload", "inboundHandled"],
    tests: (h) => {
      const endpointsMade: Array<WebhookEndpointRecord> = []
      const leasesMade: Array<FanOutHold> = []
      // Claims, fan-out and leases are not scoped by tenant: each test's unfinished rows are finished
      // (long after any cut-off) and its leases released, so no later test or suite meets them.
      afterEach(async () => {
        const made = endpointsMade.splice(0)
        await h().run(deliveries((s) =>
          Effect.forEach(made, (e) => s.deadLetterOutstanding(e.tenant_id, e.id, "test over", END_OF_TIME), { discard: true })
        ))
        await h().run(deliveries((s) => s.releaseFanOuts(leasesMade.splice(0))))
        await h().run(inbound((s) =>
          Effect.flatMap(
            s.claim({ now: END_OF_TIME, leaseUntil: END_OF_TIME, limit: 10_000, holder: "retention-clean-up" }),
            (claims) =>
              Effect.forEach(claims, (c) => s.finish(c.payload.id, c.holder, { status: "failed", note: "test over" }, END_OF_TIME), {
                discard: true
              })
          )
        ))
      })

      const newEndpoint = async () => {
        const { tenant } = await h().run(seedTenant)
        const endpoint = webhookEndpointRecord(tenant.id)
        await h().run(WebhookEndpointStore.use((s) => s.insert(endpoint)))
        endpointsMade.push(endpoint)
        return endpoint
      }
      const insert = (rows: ReadonlyArray<WebhookDeliveryRecord>) => h().run(deliveries((s) => s.insertMany(rows)))
      const pruneDeliveries = (limit: number, before = CUTOFF) => h().run(deliveries((s) => s.pruneFinished(before, limit)))
      const storedDeliveries = async (tenantId: string) => (await h().stored.webhookDeliveries(tenantId)).map((d) => d.id).sort()

      /** A finished delivery as the machine leaves it: completed at `completedAt`. */
      const finished = (
        endpoint: WebhookEndpointRecord,
        status: "success" | "failed" | "dead_letter",
        completedAt: string,
        overrides: Partial<WebhookDeliveryRecord> = {}
      ) =>
        deliveryRecord(endpoint, {
          status,
          attempt_number: 1,
          completed_at: completedAt,
          created_at: old("00:00:00.000"),
          outbox_seq: madeUpSeq(),
          ...overrides
        })

      describe("finished deliveries", () => {
        it("deletes those completed before the cut-off, oldest first and at most the limit per call; keeps later and unfinished ones", async () => {
          const endpoint = await newEndpoint()
          const success = finished(endpoint, "success", old("01:00:00.000"))
          const failed = finished(endpoint, "failed", old("02:00:00.000"))
          const deadLetter = finished(endpoint, "dead_letter", old("03:00:00.000"))
          const atCutoff = finished(endpoint, "success", CUTOFF)
          const recent = finished(endpoint, "dead_letter", RECENT)
          const created = { created_at: old("00:00:00.000"), outbox_seq: madeUpSeq() }
          const unfinished = [
            deliveryRecord(endpoint, created),
            deliveryRecord(endpoint, { ...created, status: "retrying", attempt_number: 1, next_retry_at: old("00:01:00.000") }),
            deliveryRecord(endpoint, { ...created, status: "queued", attempt_number: 1 })
          ]
          await insert([recent, deadLetter, ...unfinished, success, atCutoff, failed])

          expect(await pruneDeliveries(2)).toBe(2)
          expect(await storedDeliveries(endpoint.tenant_id)).toEqual([deadLetter, atCutoff, recent, ...unfinished].map((d) => d.id).sort())
          expect(await pruneDeliveries(2)).toBe(1)
          expect(await pruneDeliveries(2)).toBe(0)
          const kept = [atCutoff, recent, ...unfinished]
          expect(await h().stored.webhookDeliveries(endpoint.tenant_id)).toEqual([...kept].sort(byId))
          // What the API reads goes with them: a pruned delivery is not found, a kept one is.
          const read = (d: WebhookDeliveryRecord) =>
            h().run(deliveries((s) => s.get(endpoint.tenant_id, endpoint.id, d.id))).then(Option.map((found) => found.id))
          expect(await read(success)).toEqual(Option.none())
          expect(await read(recent)).toEqual(Option.some(recent.id))
        })

        it("deletes across tenants: it is background work, not a tenant's request", async () => {
          const [first, second] = [await newEndpoint(), await newEndpoint()]
          await insert([finished(first, "success", old("04:00:00.000")), finished(second, "failed", old("04:00:00.001"))])

          expect(await pruneDeliveries(10)).toBe(2)
          expect(await storedDeliveries(first.tenant_id)).toEqual([])
          expect(await storedDeliveries(second.tenant_id)).toEqual([])
        })

        it("skips rows another transaction holds instead of waiting for them", async (context) => {
          if (!h().capabilities.concurrentConnections) return context.skip(NEEDS_CONNECTIONS)
          const endpoint = await newEndpoint()
          const rows = Array.from({ length: 5 }, (_, i) => finished(endpoint, "success", old(`05:00:00.00${i}`)))
          await insert(rows)

          const { whileHeld, after } = await h().run(contend({
            hold: deliveries((s) => s.pruneFinished(CUTOFF, 2)),
            finish: () => Effect.void,
            contend: deliveries((s) => s.pruneFinished(CUTOFF, 10))
          }))
          expect(whileHeld).toEqual(Option.some(3))
          expect(after).toBe(3)
          expect(await storedDeliveries(endpoint.tenant_id)).toEqual([])
        })
      })

      describe("outbox events", () => {
        // Other suites' made-up deliveries name outbox positions up to what `reserveSeqs` handed out,
        // which events appended now could reach: the outbox first grows past them (filler events,
        // fanned out at the end of time, which no pass ever looks at).
        beforeAll(async () => {
          const tenantId = globalThis.crypto.randomUUID()
          // No endpoint wants them: they are stored fanned out at their own time, the end of time.
          const filler = () => outboxEvent(tenantId, { created_at: END_OF_TIME })
          await h().run(outbox((s) => s.append([filler()])))
          const [probe] = await h().stored.outboxEvents(tenantId)
          const madeUpTo = reserveSeqs(0)
          if (probe!.seq < madeUpTo) {
            await h().run(outbox((s) => s.append(Array.from({ length: madeUpTo - probe!.seq }, filler))))
          }
          const lease = { id: globalThis.crypto.randomUUID(), fanned_at: END_OF_TIME, holder: "retention-filler", lease_until: END_OF_TIME }
          await h().run(deliveries((s) => Effect.andThen(s.takeFanOut(1_000_000, lease), s.releaseFanOuts([lease]))))
        })
        const take = (fannedAt: string, limit = 1_000_000) => {
          const lease: Omit<FanOutLease, "seqs"> = {
            id: globalThis.crypto.randomUUID(),
            fanned_at: fannedAt,
            holder: globalThis.crypto.randomUUID(),
            lease_until: END_OF_TIME
          }
          leasesMade.push(lease)
          return h().run(deliveries((s) => s.takeFanOut(limit, lease))).then((taken) => ({ lease, seqs: taken.leased.map((t) => t.seq) }))
        }
        const release = (lease: FanOutHold) => h().run(deliveries((s) => s.releaseFanOuts([lease])))
        /**
         * Appends `count` events of the tenant, made at `fannedAt`, and fans them out at `fannedAt` (those no
         * endpoint of the tenant wants are stored fanned out at their own time); their lease (if an endpoint
         * wants them) is released unless `keepLease`.
         */
        const fannedOut = async (tenantId: string, count: number, fannedAt: string, keepLease = false) => {
          await take(END_OF_TIME).then(({ lease }) => release(lease))
          await h().run(outbox((s) => s.append(Array.from({ length: count }, () => outboxEvent(tenantId, { created_at: fannedAt })))))
          const { lease, seqs } = await take(fannedAt)
          if (!keepLease) await release(lease)
          return { lease, seqs }
        }
        /**
         * A whole pass in batches of `limit`, from the start or past `from`: rows deleted, and each
         * batch's cursor. Earlier tests' kept events come first in a pass from the start.
         */
        const walk = async (limit: number, from: OutboxPruneCursor | null = null) => {
          let after = from
          let deleted = 0
          const cursors: Array<OutboxPruneCursor> = []
          for (let batch = 0; batch < 10_000; batch++) {
            const result: { readonly deleted: number; readonly next: OutboxPruneCursor | null } = await h().run(
              outbox((s) => s.pruneFannedOut({ before: CUTOFF, after, limit }))
            )
            deleted += result.deleted
            if (result.next === null) return { deleted, cursors }
            cursors.push(result.next)
            after = result.next
          }
          throw new Error("the pass never ended")
        }
        const storedSeqs = async (tenantId: string) => (await h().stored.outboxEvents(tenantId)).map((row) => row.seq)

        it("deletes events fanned out before the cut-off with no delivery left; keeps those a delivery refers to, recent and unfanned ones", async () => {
          const endpoint = await newEndpoint()
          const tenantId = endpoint.tenant_id
          const { seqs: oldSeqs } = await fannedOut(tenantId, 5, old("06:00:00.000"))
          const { seqs: atCutoff } = await fannedOut(tenantId, 1, CUTOFF)
          const { seqs: recent } = await fannedOut(tenantId, 1, RECENT)
          await take(END_OF_TIME).then(({ lease }) => release(lease))
          await h().run(outbox((s) => s.append([outboxEvent(tenantId)])))
          const stored = await h().stored.outboxEvents(tenantId)
          const unfanned = stored.filter((row) => row.fanned_out_at === null).map((row) => row.seq)
          expect(unfanned).toHaveLength(1)
          // One event's delivery finished long ago, another's is still pending.
          const [, delivered, pending] = oldSeqs
          const finishedDelivery = finished(endpoint, "success", old("07:00:00.000"), { outbox_seq: delivered! })
          await insert([finishedDelivery, deliveryRecord(endpoint, { outbox_seq: pending!, created_at: old("06:00:00.000") })])

          expect((await walk(2)).deleted).toBe(3)
          expect(await storedSeqs(tenantId)).toEqual([delivered!, pending!, ...atCutoff, ...recent, ...unfanned])
          // Once its last delivery is pruned, the event goes on the next pass; the pending one's stays.
          expect(await pruneDeliveries(10)).toBe(1)
          expect((await walk(2)).deleted).toBe(1)
          expect(await storedSeqs(tenantId)).toEqual([pending!, ...atCutoff, ...recent, ...unfanned])
        })

        it("keeps events a fan-out lease still holds, until it is released", async () => {
          const tenantId = (await newEndpoint()).tenant_id
          const { lease, seqs } = await fannedOut(tenantId, 3, old("08:00:00.000"), true)

          expect((await walk(10)).deleted).toBe(0)
          expect(await storedSeqs(tenantId)).toEqual(seqs)
          await release(lease)
          expect((await walk(10)).deleted).toBe(3)
          expect(await storedSeqs(tenantId)).toEqual([])
        })

        it("walks in fan-out order by keyset: each batch looks at most `limit` events past the last one's key", async () => {
          const endpoint = await newEndpoint()
          const tenantId = endpoint.tenant_id
          // Two batches fanned out at the same instant: the key's seq breaks the tie.
          const first = await fannedOut(tenantId, 3, old("09:00:00.000"))
          const second = await fannedOut(tenantId, 3, old("09:00:00.000"))
          const kept = [...first.seqs, ...second.seqs]
          // Every event keeps a pending delivery, so each batch deletes nothing and the pass must still move on.
          await insert(kept.map((seq) => deliveryRecord(endpoint, { outbox_seq: seq, created_at: old("09:00:00.000") })))

          // Past every earlier test's events: this test's six, in batches of two, then an empty one ends the pass.
          const { cursors, deleted } = await walk(2, { fanned_out_at: old("08:59:59.999"), seq: 0 })
          expect(deleted).toBe(0)
          expect(cursors).toEqual([kept[1], kept[3], kept[5]].map((seq) => ({ fanned_out_at: old("09:00:00.000"), seq })))
          expect(await storedSeqs(tenantId)).toEqual(kept)
          // A pass from the start meets them too, wherever its batches fall.
          expect((await walk(2)).deleted).toBe(0)
          expect(await storedSeqs(tenantId)).toEqual(kept)
        })

        it("skips events another transaction holds instead of waiting for them", async (context) => {
          if (!h().capabilities.concurrentConnections) return context.skip(NEEDS_CONNECTIONS)
          const tenantId = globalThis.crypto.randomUUID()
          await fannedOut(tenantId, 4, old("10:00:00.000"))
          // Past every earlier test's events, so the first transaction's batch of one is this test's oldest.
          const from = { fanned_out_at: old("09:59:59.999"), seq: 0 }

          const { whileHeld, after } = await h().run(contend({
            hold: outbox((s) => s.pruneFannedOut({ before: CUTOFF, after: from, limit: 1 })),
            finish: () => Effect.void,
            contend: outbox((s) => s.pruneFannedOut({ before: CUTOFF, after: from, limit: 10 }))
          }))
          expect(Option.map(whileHeld, (r) => r.deleted)).toEqual(Option.some(3))
          expect(after.deleted).toBe(3)
          expect(await storedSeqs(tenantId)).toEqual([])
        })
      })

      describe("inbound payloads", () => {
        const insertPayloads = (payloads: ReadonlyArray<InboundPayloadRecord>) =>
          h().run(inbound((s) => Effect.forEach(payloads, (p) => s.insert(p), { discard: true })))
        const claimAt = (now: string) =>
          h().run(inbound((s) => s.claim({ now, leaseUntil: END_OF_TIME, limit: 1_000, holder: globalThis.crypto.randomUUID() })))
        const prunePayloads = (limit: number) => h().run(inbound((s) => s.pruneFinished(CUTOFF, limit)))
        const present = async (payloads: ReadonlyArray<InboundPayloadRecord>) =>
          (await Promise.all(payloads.map((p) => h().stored.inboundPayload(p.id)))).map((p) => p !== undefined)

        it("deletes payloads processed or failed before the cut-off, oldest first; never pending, leased or recent ones", async () => {
          const due = { received_at: old("00:00:00.000"), next_attempt_at: old("00:00:00.000") }
          const [processed, failed, emailProcessed, recent, retried, leased] = Array.from({ length: 6 }, () => inboundPayloadRecord(due))
          const email = { ...emailProcessed!, source: "email" as const, route_key: "integration-1", content_type: "message/rfc822" }
          const waiting = inboundPayloadRecord({ received_at: old("00:00:00.000"), next_attempt_at: RECENT })
          await insertPayloads([processed!, failed!, email, recent!, retried!, leased!, waiting])
          const claims = await claimAt(old("00:00:00.000"))
          const holder = (p: InboundPayloadRecord) => claims.find((c) => c.payload.id === p.id)!.holder
          const finish = (p: InboundPayloadRecord, outcome: Parameters<InboundStore["Service"]["finish"]>[2], at: string) =>
            h().run(inbound((s) => s.finish(p.id, holder(p), outcome, at)))
          await finish(processed!, { status: "processed", note: null }, old("11:00:00.000"))
          await finish(failed!, { status: "failed", note: "unparseable" }, old("11:00:00.001"))
          await finish(email, { status: "processed", note: null }, old("11:00:00.002"))
          await finish(recent!, { status: "processed", note: null }, RECENT)
          await finish(retried!, { status: "pending", note: "try again", nextAttemptAt: RECENT }, old("11:00:00.003"))
          await h().run(inbound((s) => s.markHandled("chatapp", `retention-${processed!.id}`, old("11:00:00.000"))))

          // In no particular order: a DELETE … RETURNING promises none.
          const byId = (a: { readonly id: string }, b: { readonly id: string }) => a.id.localeCompare(b.id)
          expect([...await prunePayloads(2)].sort(byId))
            .toEqual([{ id: processed!.id, source: "chatapp" }, { id: failed!.id, source: "chatapp" }].sort(byId))
          expect(await present([processed!, failed!, email])).toEqual([false, false, true])
          // The email's source comes back, so its bytes kept beside the row can be deleted too.
          expect(await prunePayloads(10)).toEqual([{ id: email.id, source: "email" }])
          expect(await prunePayloads(10)).toEqual([])
          expect(await present([email, recent!, retried!, leased!, waiting])).toEqual([false, true, true, true, true])
          // What a payload was turned into is not the payload: the key of a handled item stays.
          expect(await h().stored.inboundHandled("chatapp", `retention-${processed!.id}`)).toBe(old("11:00:00.000"))
        })

        it("skips payloads another transaction holds instead of waiting for them", async (context) => {
          if (!h().capabilities.concurrentConnections) return context.skip(NEEDS_CONNECTIONS)
          const payloads = Array.from({ length: 4 }, () =>
            inboundPayloadRecord({ received_at: old("00:00:00.000"), next_attempt_at: old("00:00:00.000") }))
          await insertPayloads(payloads)
          for (const claim of await claimAt(old("00:00:00.000"))) {
            await h().run(inbound((s) => s.finish(claim.payload.id, claim.holder, { status: "processed", note: null }, old("12:00:00.000"))))
          }

          const { whileHeld, after } = await h().run(contend({
            hold: inbound((s) => Effect.map(s.pruneFinished(CUTOFF, 1), (pruned) => pruned.length)),
            finish: () => Effect.void,
            contend: inbound((s) => Effect.map(s.pruneFinished(CUTOFF, 10), (pruned) => pruned.length))
          }))
          expect(whileHeld).toEqual(Option.some(3))
          expect(after).toBe(3)
          expect(await present(payloads)).toEqual([false, false, false, false])
        })
      })
    }
  })
