import { Effect, Fiber, Latch, Option } from "effect"
import { describe, expect, it } from "vitest"
import type { AccountStore } from "../../src/ports/AccountStore.ts"
import { type SummaryOutcome, type SummaryRecord, SummaryStore } from "../../src/ports/SummaryStore.ts"
import type { TenantStore } from "../../src/ports/TenantStore.ts"
import { Transactor } from "../../src/ports/Transactor.ts"
import { creditGrant, seedTenant, summaryRecord } from "./Fixtures.ts"
import { makeSuite, type Suite, type UseHarness } from "./Harness.ts"

/** The tables the summary suite checks writes in. */
type SummaryTables = "attachmentSummaries" | "creditEntries" | "creditBalance" | "rateCounters"

/** What the summary suite runs against: the port, the tenants rows belong to, and transactions for contending claims. */
type SummaryPorts = SummaryStore | TenantStore | AccountStore | Transactor

type UseSummaries = UseHarness<SummaryPorts, SummaryTables>

const NEEDS_CONNECTIONS = "needs several connections: the adapter runs one transaction at a time"

// How many requests contend at once in the concurrency tests.
const CONCURRENT = 8

/** An instant of the summaries' day as stored, from `HH:MM:SS.mmm`. */
const at = (time: string): string => `2026-11-22T${time}Z`

const newId = (): string => globalThis.crypto.randomUUID()

const store = <A, E, R>(f: (s: SummaryStore["Service"]) => Effect.Effect<A, E, R>) => SummaryStore.use(f)

const insert = (h: UseSummaries, summary: SummaryRecord) => h().run(store((s) => s.insertPending(summary)))

const OK: SummaryOutcome = {
  status: "ok",
  text: "Facture n° 2026-118 — Zoë 山田 🚀, \"quoted\" \\ <b>not html</b>\nline two",
  sections: [{ key: "summary", text: "Une facture — 請求書" }, { key: "key_facts", text: "Total: 1 234,50 €\nDue: 2026-12-01" }],
  pages_read: 10,
  pages_total: 14,
  truncated: true,
  model: "embedded-extractive 1.0",
  error: null,
  updated_at: at("10:20:00.000")
}

const FAILED: SummaryOutcome = {
  status: "failed",
  text: "",
  sections: [],
  pages_read: null,
  pages_total: null,
  truncated: false,
  model: "",
  error: "Timeout: the model did not answer",
  updated_at: at("10:20:00.000")
}

/** A stored summary after `outcome` was written over its generation. */
const settled = (summary: SummaryRecord, outcome: SummaryOutcome): SummaryRecord => ({ ...summary, ...outcome, lease_until: null })

/** What `claimNext` writes for the next generation, claimed at `time` with a lease of five minutes. */
const next = (time: string, source: SummaryRecord["source"] = "on_demand") => ({
  kind: "image" as const,
  source,
  lease_until: `2026-11-22T${time.slice(0, 2)}:${String(Number(time.slice(3, 5)) + 5).padStart(2, "0")}${time.slice(5)}Z`,
  updated_at: at(time)
})

const claimed = (summary: SummaryRecord, claim: ReturnType<typeof next>): SummaryRecord => ({
  ...summary,
  ...claim,
  status: "pending",
  generation: summary.generation + 1,
  error: null
})

/** SummaryStore: attachment summaries claimed and settled by generation, the credit ledger, the request counters. */
export const summaryStoreSuite: Suite<SummaryPorts, SummaryTables> = makeSuite({
  name: "SummaryStore",
  tables: ["attachmentSummaries", "creditEntries", "creditBalance", "rateCounters"],
  tests: (h) => {
    describe("summaries", () => {
      it("stores a first pending summary, settles it with unicode text and sections, and reads it back unchanged by attachment and listing", async () => {
        const { tenant } = await h().run(seedTenant)
        const summary = summaryRecord(tenant.id)
        expect(await insert(h, summary)).toBe(true)
        expect(await h().stored.attachmentSummaries(tenant.id)).toEqual([summary])
        expect(await h().run(store((s) => s.get(tenant.id, summary.attachment_id)))).toEqual(Option.some(summary))

        expect(await h().run(store((s) => s.settle(tenant.id, summary.id, 1, OK)))).toBe(true)
        const ok = settled(summary, OK)
        expect(await h().stored.attachmentSummaries(tenant.id)).toEqual([ok])
        expect(await h().run(store((s) => s.get(tenant.id, summary.attachment_id)))).toEqual(Option.some(ok))

        const image = summaryRecord(tenant.id, { kind: "image", source: "agent" })
        await insert(h, image)
        const listed = await h().run(store((s) => s.listByAttachments(tenant.id, [summary.attachment_id, image.attachment_id, newId()])))
        expect([...listed].sort((a, b) => a.id.localeCompare(b.id))).toEqual([ok, image].sort((a, b) => a.id.localeCompare(b.id)))
        expect(await h().run(store((s) => s.listByAttachments(tenant.id, [])))).toEqual([])
        expect(await h().run(store((s) => s.get(tenant.id, newId())))).toEqual(Option.none())
      })

      it("lists the summaries of many attachments at once (more than one query's worth of ids)", async () => {
        const { tenant } = await h().run(seedTenant)
        const summaries = Array.from({ length: 3 }, () => summaryRecord(tenant.id))
        for (const summary of summaries) await insert(h, summary)
        const ids = [...Array.from({ length: 1200 }, newId), ...summaries.map((s) => s.attachment_id)]
        const listed = await h().run(store((s) => s.listByAttachments(tenant.id, ids)))
        expect(listed.map((s) => s.id).sort()).toEqual(summaries.map((s) => s.id).sort())
      })

      it("inserts a first summary once per attachment: a second insert writes nothing; another tenant's attachment id is its own", async () => {
        const { tenant: a } = await h().run(seedTenant)
        const { tenant: b } = await h().run(seedTenant)
        const first = summaryRecord(a.id)
        expect(await insert(h, first)).toBe(true)
        expect(await insert(h, summaryRecord(a.id, { attachment_id: first.attachment_id, kind: "image" }))).toBe(false)
        expect(await h().stored.attachmentSummaries(a.id)).toEqual([first])

        const inB = summaryRecord(b.id, { attachment_id: first.attachment_id })
        expect(await insert(h, inB)).toBe(true)
        expect(await h().stored.attachmentSummaries(b.id)).toEqual([inB])
      })

      it(`inserts a first summary once of ${CONCURRENT} inserts at once`, async () => {
        const { tenant } = await h().run(seedTenant)
        const attachmentId = newId()
        const attempts = Array.from({ length: CONCURRENT }, () => summaryRecord(tenant.id, { attachment_id: attachmentId }))
        const results = await h().run(Effect.forEach(attempts, (a) => store((s) => s.insertPending(a)), { concurrency: "unbounded" }))
        expect(results.filter(Boolean)).toHaveLength(1)
        expect(await h().stored.attachmentSummaries(tenant.id)).toEqual([attempts[results.indexOf(true)]])
      })

      it("claims the next generation of a failed summary, or of a pending one past its lease, only at the generation read", async () => {
        const { tenant } = await h().run(seedTenant)
        const failed = summaryRecord(tenant.id)
        await insert(h, failed)
        await h().run(store((s) => s.settle(tenant.id, failed.id, 1, FAILED)))

        // A stale generation claims nothing.
        expect(await h().run(store((s) => s.claimNext(tenant.id, failed.id, 2, next("10:30:00.000"))))).toBe(false)
        const claim = next("10:30:00.000", "agent")
        expect(await h().run(store((s) => s.claimNext(tenant.id, failed.id, 1, claim)))).toBe(true)
        const second = claimed(settled(failed, FAILED), claim)
        expect(await h().stored.attachmentSummaries(tenant.id)).toEqual([second])

        // Pending with its lease running (10:35): not before it ends, at it yes.
        expect(await h().run(store((s) => s.claimNext(tenant.id, failed.id, 2, next("10:34:59.999"))))).toBe(false)
        const takeover = next("10:35:00.000")
        expect(await h().run(store((s) => s.claimNext(tenant.id, failed.id, 2, takeover)))).toBe(true)
        const third = claimed(second, takeover)
        expect(await h().stored.attachmentSummaries(tenant.id)).toEqual([third])
        expect(third.generation).toBe(3)
      })

      it("never claims an ok summary, even at its generation and past any lease", async () => {
        const { tenant } = await h().run(seedTenant)
        const summary = summaryRecord(tenant.id)
        await insert(h, summary)
        await h().run(store((s) => s.settle(tenant.id, summary.id, 1, OK)))
        expect(await h().run(store((s) => s.claimNext(tenant.id, summary.id, 1, next("23:00:00.000"))))).toBe(false)
        expect(await h().stored.attachmentSummaries(tenant.id)).toEqual([settled(summary, OK)])
      })

      it("settles only the generation still pending: a generation taken over writes nothing, nor does settling twice", async () => {
        const { tenant } = await h().run(seedTenant)
        const summary = summaryRecord(tenant.id)
        await insert(h, summary)
        const takeover = next("12:00:00.000")
        expect(await h().run(store((s) => s.claimNext(tenant.id, summary.id, 1, takeover)))).toBe(true)

        expect(await h().run(store((s) => s.settle(tenant.id, summary.id, 1, OK)))).toBe(false)
        expect(await h().run(store((s) => s.settle(tenant.id, summary.id, 2, FAILED)))).toBe(true)
        expect(await h().run(store((s) => s.settle(tenant.id, summary.id, 2, OK)))).toBe(false)
        expect(await h().stored.attachmentSummaries(tenant.id)).toEqual([settled(claimed(summary, takeover), FAILED)])
      })

      it(`claims a failed summary's next generation once of ${CONCURRENT} claims at once`, async () => {
        const { tenant } = await h().run(seedTenant)
        const summary = summaryRecord(tenant.id)
        await insert(h, summary)
        await h().run(store((s) => s.settle(tenant.id, summary.id, 1, FAILED)))
        const results = await h().run(Effect.forEach(
          Array.from({ length: CONCURRENT }, () => next("10:30:00.000")),
          (claim) => store((s) => s.claimNext(tenant.id, summary.id, 1, claim)),
          { concurrency: "unbounded" }
        ))
        expect(results.filter(Boolean)).toHaveLength(1)
        expect((await h().stored.attachmentSummaries(tenant.id))[0]).toMatchObject({ status: "pending", generation: 2 })
      })

      it(`claims a crashed pending generation once of ${CONCURRENT} transactions that all read it before any claims (needs several connections)`, async (ctx) => {
        ctx.skip(!h().capabilities.concurrentConnections, NEEDS_CONNECTIONS)
        const { tenant } = await h().run(seedTenant)
        const summary = summaryRecord(tenant.id, { lease_until: at("10:00:00.000") })
        await insert(h, summary)

        const results = await h().run(Effect.gen(function*() {
          const allRead = yield* Latch.make(false)
          let reads = 0
          const readThenClaim = (i: number) =>
            Transactor.use((t) =>
              t.withTransaction(Effect.gen(function*() {
                const read = Option.getOrThrow(yield* store((s) => s.get(tenant.id, summary.attachment_id)))
                if (++reads === CONCURRENT) yield* Latch.open(allRead)
                yield* Latch.await(allRead)
                return yield* store((s) => s.claimNext(tenant.id, read.id, read.generation, next(`10:3${i}:00.000`)))
              }))
            )
          const fibers = yield* Effect.forEach(Array.from({ length: CONCURRENT }, (_, i) => i), (i) => Effect.forkChild(readThenClaim(i)))
          return yield* Fiber.joinAll(fibers)
        }))

        expect(results.filter(Boolean)).toHaveLength(1)
        expect((await h().stored.attachmentSummaries(tenant.id))[0]).toMatchObject({ status: "pending", generation: 2 })
      })
    })

    describe("credits", () => {
      it("adds grants and charges to the ledger and moves the balance and charged total with each", async () => {
        const { tenant } = await h().run(seedTenant)
        expect(await h().run(store((s) => s.balance(tenant.id)))).toEqual({ balance: 0, charged_total: 0 })
        expect(await h().stored.creditBalance(tenant.id)).toBeUndefined()

        const grant = creditGrant(tenant.id, 10, { created_at: at("09:00:00.000") })
        const charge = {
          id: newId(),
          tenant_id: tenant.id,
          amount: -3,
          reason: "summary" as const,
          attachment_id: newId(),
          charge_key: `${newId()}:1`,
          created_at: at("09:30:00.000")
        }
        expect(await h().run(store((s) => s.addCredits(grant)))).toBe(true)
        expect(await h().run(store((s) => s.addCredits(charge)))).toBe(true)

        expect(await h().run(store((s) => s.balance(tenant.id)))).toEqual({ balance: 7, charged_total: 3 })
        expect(await h().stored.creditBalance(tenant.id)).toEqual({ balance: 7, charged_total: 3 })
        expect(await h().stored.creditEntries(tenant.id)).toEqual([grant, charge].sort((a, b) => a.id.localeCompare(b.id)))
        expect(await h().run(store((s) => s.listCredits(tenant.id)))).toEqual([grant, charge])
      })

      it("writes a charge once per charge key: the same generation charged again writes nothing and moves nothing", async () => {
        const { tenant } = await h().run(seedTenant)
        await h().run(store((s) => s.addCredits(creditGrant(tenant.id, 5))))
        const key = `${newId()}:1`
        const charge = (amount: number) => ({
          id: newId(),
          tenant_id: tenant.id,
          amount,
          reason: "summary" as const,
          attachment_id: null,
          charge_key: key,
          created_at: at("09:30:00.000")
        })
        expect(await h().run(store((s) => s.addCredits(charge(-2))))).toBe(true)
        expect(await h().run(store((s) => s.addCredits(charge(-2))))).toBe(false)
        expect(await h().run(store((s) => s.addCredits(charge(-3))))).toBe(false)
        expect(await h().run(store((s) => s.balance(tenant.id)))).toEqual({ balance: 3, charged_total: 2 })
        expect((await h().stored.creditEntries(tenant.id)).filter((e) => e.reason === "summary")).toHaveLength(1)
        // Grants carry no key, and repeat freely.
        expect(await h().run(store((s) => s.addCredits(creditGrant(tenant.id, 5))))).toBe(true)
        expect(await h().run(store((s) => s.balance(tenant.id)))).toEqual({ balance: 8, charged_total: 2 })
      })

      it(`writes a charge once of ${CONCURRENT} charges of one generation at once, and the balance moves once`, async () => {
        const { tenant } = await h().run(seedTenant)
        const key = `${newId()}:1`
        const results = await h().run(Effect.forEach(
          Array.from({ length: CONCURRENT }, () => ({
            id: newId(),
            tenant_id: tenant.id,
            amount: -3,
            reason: "summary" as const,
            attachment_id: null,
            charge_key: key,
            created_at: at("09:30:00.000")
          })),
          (entry) => store((s) => s.addCredits(entry)),
          { concurrency: "unbounded" }
        ))
        expect(results.filter(Boolean)).toHaveLength(1)
        expect(await h().stored.creditBalance(tenant.id)).toEqual({ balance: -3, charged_total: 3 })
      })

      it(`keeps every one of ${CONCURRENT} grants made at once in the balance`, async () => {
        const { tenant } = await h().run(seedTenant)
        await h().run(Effect.forEach(
          Array.from({ length: CONCURRENT }, (_, i) => creditGrant(tenant.id, i + 1)),
          (entry) => store((s) => s.addCredits(entry)),
          { concurrency: "unbounded" }
        ))
        expect(await h().stored.creditBalance(tenant.id)).toEqual({ balance: (CONCURRENT * (CONCURRENT + 1)) / 2, charged_total: 0 })
      })
    })

    describe("request counters", () => {
      const WINDOW = at("10:15:00.000")
      const LATER = at("10:16:00.000")
      const buckets = (caller: string) => [{ key: caller, limit: 3 }, { key: "workspace", limit: 5 }]
      const take = (tenantId: string, window: string, caller: string) =>
        h().run(store((s) => s.takeRequest(tenantId, window, buckets(caller))))

      it("takes requests up to each bucket's limit, then names the full bucket; a refused request counts nowhere", async () => {
        const { tenant } = await h().run(seedTenant)
        for (let i = 0; i < 3; i++) expect(await take(tenant.id, WINDOW, "api_key:a")).toEqual(Option.none())
        expect(await take(tenant.id, WINDOW, "api_key:a")).toEqual(Option.some("api_key:a"))
        expect(await take(tenant.id, WINDOW, "api_key:b")).toEqual(Option.none())
        expect(await take(tenant.id, WINDOW, "api_key:b")).toEqual(Option.none())
        // The workspace is full (5): b's own counter is given back.
        expect(await take(tenant.id, WINDOW, "api_key:b")).toEqual(Option.some("workspace"))
        expect(await take(tenant.id, WINDOW, "user:c")).toEqual(Option.some("workspace"))
        expect(await h().stored.rateCounters(tenant.id)).toEqual([
          { key: "api_key:a", window_start: WINDOW, count: 3 },
          { key: "api_key:b", window_start: WINDOW, count: 2 },
          { key: "user:c", window_start: WINDOW, count: 0 },
          { key: "workspace", window_start: WINDOW, count: 5 }
        ])
      })

      it("counts each window apart and removes the counters of windows before the one taken from", async () => {
        const { tenant } = await h().run(seedTenant)
        for (let i = 0; i < 3; i++) await take(tenant.id, WINDOW, "api_key:a")
        expect(await take(tenant.id, LATER, "api_key:a")).toEqual(Option.none())
        expect(await h().stored.rateCounters(tenant.id)).toEqual([
          { key: "api_key:a", window_start: LATER, count: 1 },
          { key: "workspace", window_start: LATER, count: 1 }
        ])
      })

      it("keeps each tenant's counters apart", async () => {
        const { tenant: a } = await h().run(seedTenant)
        const { tenant: b } = await h().run(seedTenant)
        for (let i = 0; i < 3; i++) await take(a.id, WINDOW, "api_key:same")
        expect(await take(a.id, WINDOW, "api_key:same")).toEqual(Option.some("api_key:same"))
        expect(await take(b.id, WINDOW, "api_key:same")).toEqual(Option.none())
        expect(await h().stored.rateCounters(b.id)).toEqual([
          { key: "api_key:same", window_start: WINDOW, count: 1 },
          { key: "workspace", window_start: WINDOW, count: 1 }
        ])
      })

      it("lets exactly the limit through of many requests at once, and counts exactly that many", async () => {
        const { tenant } = await h().run(seedTenant)
        const results = await h().run(Effect.forEach(
          Array.from({ length: 40 }, (_, i) => `api_key:${i % 4}`),
          (caller) => store((s) => s.takeRequest(tenant.id, WINDOW, [{ key: caller, limit: 30 }, { key: "workspace", limit: 30 }])),
          { concurrency: "unbounded" }
        ))
        expect(results.filter(Option.isNone)).toHaveLength(30)
        const counters = await h().stored.rateCounters(tenant.id)
        expect(counters.find((c) => c.key === "workspace")?.count).toBe(30)
        expect(counters.filter((c) => c.key !== "workspace").reduce((sum, c) => sum + c.count, 0)).toBe(30)
      })
    })

    describe("tenant isolation", () => {
      it("reads, claims and settles nothing of another tenant's summaries, and keeps ledgers apart", async () => {
        const { tenant: a } = await h().run(seedTenant)
        const { tenant: b } = await h().run(seedTenant)
        const ofB = summaryRecord(b.id, { lease_until: at("09:00:00.000") })
        await insert(h, ofB)
        await h().run(store((s) => s.addCredits(creditGrant(b.id, 9))))

        expect(await h().run(store((s) => s.get(a.id, ofB.attachment_id)))).toEqual(Option.none())
        expect(await h().run(store((s) => s.listByAttachments(a.id, [ofB.attachment_id])))).toEqual([])
        expect(await h().run(store((s) => s.claimNext(a.id, ofB.id, 1, next("10:00:00.000"))))).toBe(false)
        expect(await h().run(store((s) => s.settle(a.id, ofB.id, 1, OK)))).toBe(false)
        expect(await h().stored.attachmentSummaries(b.id)).toEqual([ofB])

        expect(await h().run(store((s) => s.balance(a.id)))).toEqual({ balance: 0, charged_total: 0 })
        expect(await h().run(store((s) => s.listCredits(a.id)))).toEqual([])
        expect(await h().run(store((s) => s.balance(b.id)))).toEqual({ balance: 9, charged_total: 0 })
      })
    })
  }
})
