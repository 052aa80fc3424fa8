import { Effect, Option, Schema, Tracer } from "effect"
import { afterEach, describe, expect, it } from "vitest"
import { traceparentOf } from "../../src/kernel/TraceContext.ts"
import { type InboundClaim, type InboundOutcome, type InboundPayloadRecord, InboundStore } from "../../src/ports/InboundStore.ts"
import { Transactor } from "../../src/ports/Transactor.ts"
import { contend } from "./Contention.ts"
import { AWKWARD_TEXTS, inboundPayloadRecord } from "./Fixtures.ts"
import { makeSuite, type Suite } from "./Harness.ts"

/** What the InboundStore suite runs against: the port, and transactions for what commits with a handled item. */
type InboundPorts = InboundStore | Transactor

const NEEDS_CONNECTIONS = "needs several connections: the adapter runs one transaction at a time"

/** An instant of the claims' day as stored, from `HH:MM:SS.mmm`. */
const at = (time: string): string => `2026-11-26T${time}Z`
const NOW = at("12:00:00.000")
const LEASE_UNTIL = at("12:02:00.000")
/** Later than any lease a test takes: the clean-up claims there. */
const END_OF_TIME = "9999-12-31T23:59:59.999Z"

/** The failure a use case raises after writing, to see whether its writes survive. */
class UseCaseFailed extends Schema.TaggedError<UseCaseFailed>()("UseCaseFailed", {}) {}

const store = <A, E, R>(f: (s: InboundStore["Service"]) => Effect.Effect<A, E, R>) => InboundStore.use(f)

const newHolder = () => `holder-${globalThis.crypto.randomUUID()}`

/** Every byte value, then NUL, 0xff and sequences that are no UTF-8 (a lone continuation byte, a surrogate's encoding). */
const AWKWARD_BYTES = Uint8Array.from([
  ...Array.from({ length: 256 }, (_, i) => i),
  0x00, 0xff, 0xfe, 0xc3, 0x28, 0x80, 0xed, 0xa0, 0x80, 0xf8, 0x88, 0x80, 0x80, 0x80, 0x5c, 0x27, 0x22, 0x00
])

/**
 * InboundStore: payloads keep their bytes exactly; claims lease only due, pending, unleased payloads,
 * oldest first, count the try, and never hand one payload to two claimers; a try is finished only by
 * its holder; an item's key is marked handled once, and only if its transaction commits.
 */
export const inboundStoreSuite: Suite<InboundPorts, "inboundPayload" | "inboundHandled"> = makeSuite({
  name: "InboundStore",
  tables: ["inboundPayload", "inboundHandled"],
  tests: (h) => {
    // Claims take payloads of every source and route, so each test's payloads are finished afterwards
    // and never crowd a later test's claim.
    afterEach(async () => {
      await h().run(store((s) =>
        Effect.flatMap(
          s.claim({ now: END_OF_TIME, leaseUntil: END_OF_TIME, limit: 10_000, holder: newHolder() }),
          (claims) =>
            Effect.forEach(claims, (c) => s.finish(c.payload.id, c.holder, { status: "failed", note: "test over" }, END_OF_TIME), {
              discard: true
            })
        )
      ))
    })

    const insert = (payloads: ReadonlyArray<InboundPayloadRecord>) =>
      h().run(store((s) => Effect.forEach(payloads, (p) => s.insert(p), { discard: true })))

    const claim = (input: { readonly now?: string; readonly leaseUntil?: string; readonly limit?: number; readonly holder?: string } = {}) =>
      h().run(store((s) =>
        s.claim({ now: input.now ?? NOW, leaseUntil: input.leaseUntil ?? LEASE_UNTIL, limit: input.limit ?? 1_000, holder: input.holder ?? newHolder() })
      ))

    const finish = (id: string, holder: string, outcome: InboundOutcome, when = at("12:00:30.000")) =>
      h().run(store((s) => s.finish(id, holder, outcome, when)))

    /** The payload as a claim at `NOW` with `LEASE_UNTIL` hands it back: its try counted, its lease taken. */
    const asClaimed = (payload: InboundPayloadRecord, tries = 1, leaseUntil = LEASE_UNTIL): InboundPayloadRecord => ({
      ...payload,
      attempts: payload.attempts + tries,
      lease_until: leaseUntil
    })

    const ids = (claims: ReadonlyArray<InboundClaim>) => claims.map((c) => c.payload.id)

    it("keeps a body byte for byte, with every byte value, NUL, 0xff and bytes that are no UTF-8, and claims it back unchanged", async () => {
      const payload = inboundPayloadRecord({
        source: "email",
        route_key: `integration-${globalThis.crypto.randomUUID()}`,
        body: AWKWARD_BYTES,
        content_type: "message/rfc822",
        received_at: at("11:59:59.999")
      })
      await insert([payload])

      const stored = await h().stored.inboundPayload(payload.id)
      expect(stored).toEqual(payload)
      expect(Object.getPrototypeOf(stored!.body)).toBe(Uint8Array.prototype)
      expect([...stored!.body]).toEqual([...AWKWARD_BYTES])

      const holder = newHolder()
      const [claimed, ...more] = await claim({ holder })
      expect(more).toEqual([])
      expect(claimed).toEqual({ payload: asClaimed(payload), holder, trace_context: null })
      expect(Object.getPrototypeOf(claimed!.payload.body)).toBe(Uint8Array.prototype)
      expect([...claimed!.payload.body]).toEqual([...AWKWARD_BYTES])
    })

    it("keeps an empty body and a payload without a content type", async () => {
      const payload = inboundPayloadRecord({ body: new Uint8Array(0), content_type: null })
      await insert([payload])

      expect(await h().stored.inboundPayload(payload.id)).toEqual(payload)
      expect((await claim()).map((c) => c.payload)).toEqual([asClaimed(payload)])
    })

    it("keeps the trace context of the span that stored a payload, and none without a tracer", async () => {
      const traced = inboundPayloadRecord()
      const untraced = inboundPayloadRecord()
      // Any tracer other than Effect's native one counts as tracing on.
      const tracer = Tracer.make({ span: (options) => Tracer.nativeTracer.span(options) })
      const storedUnder = await h().run(store((s) =>
        Effect.gen(function*() {
          yield* s.insert(traced)
          return traceparentOf(yield* Effect.currentSpan)
        }).pipe(Effect.withSpan("InboundService.receiveChatapp"), Effect.withTracer(tracer))
      ))
      await insert([untraced])

      const claims = await claim()
      expect(Object.fromEntries(claims.map((c) => [c.payload.id, c.trace_context])))
        .toEqual({ [traced.id]: storedUnder, [untraced.id]: null })
      expect(storedUnder).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/)
    })

    describe("insertMany", () => {
      const traceparent = () => `00-${globalThis.crypto.randomUUID().replaceAll("-", "")}-${"ab".repeat(8)}-01`

      it("stores several payloads in one call, each with its bytes and its own trace context, claimed in the order given", async () => {
        const rows = [
          { payload: inboundPayloadRecord({ body: AWKWARD_BYTES }), traceContext: traceparent() },
          { payload: inboundPayloadRecord({ body: new Uint8Array(0), content_type: null }), traceContext: null },
          {
            payload: inboundPayloadRecord({ source: "email", route_key: `integration-${globalThis.crypto.randomUUID()}` }),
            traceContext: traceparent()
          },
          { payload: inboundPayloadRecord(), traceContext: traceparent() },
          { payload: inboundPayloadRecord(), traceContext: null }
        ]
        await h().run(store((s) => s.insertMany(rows)))

        for (const { payload } of rows) expect(await h().stored.inboundPayload(payload.id)).toEqual(payload)
        const holder = newHolder()
        // They tie on both times, so the claim takes them in the order they were stored.
        expect(await claim({ holder })).toEqual(
          rows.map(({ payload, traceContext }) => ({ payload: asClaimed(payload), holder, trace_context: traceContext }))
        )
      })

      it("stores a batch larger than one statement takes, in its order, and nothing for an empty one", async () => {
        const payloads = Array.from({ length: 300 }, () => inboundPayloadRecord())
        await h().run(store((s) => Effect.andThen(s.insertMany([]), s.insertMany(payloads.map((payload) => ({ payload, traceContext: null }))))))

        expect(ids(await claim())).toEqual(payloads.map((p) => p.id))
      })

      it("stores all or none: a batch with a payload whose id is taken fails and stores none of the others", async () => {
        const taken = inboundPayloadRecord()
        await insert([taken])
        const [held] = await claim()
        for (const size of [3, 300]) {
          const others = Array.from({ length: size - 1 }, () => inboundPayloadRecord())
          const failed = await h().run(Effect.flip(store((s) =>
            s.insertMany([...others, { ...taken, body: new Uint8Array([1]) }].map((payload) => ({ payload, traceContext: null })))
          )))

          expect(failed).toMatchObject({ _tag: "StorageError", reason: "UniqueViolation" })
          for (const other of others) expect(await h().stored.inboundPayload(other.id)).toBeUndefined()
        }
        expect(await h().stored.inboundPayload(taken.id)).toEqual(asClaimed(taken))
        expect(await finish(taken.id, held!.holder, { status: "processed", note: null })).toBe(true)
      })
    })

    describe("claim", () => {
      it("takes only pending payloads that are due: not later ones, nor processed or failed ones", async () => {
        const due = inboundPayloadRecord({ next_attempt_at: NOW })
        const later = inboundPayloadRecord({ next_attempt_at: at("12:00:00.001") })
        const processed = inboundPayloadRecord()
        const failed = inboundPayloadRecord()
        await insert([processed, failed])
        const [first, second] = await claim({ now: at("11:00:00.000") })
        for (const c of [first!, second!]) {
          await finish(c.payload.id, c.holder, c.payload.id === processed.id ? { status: "processed", note: null } : { status: "failed", note: "unparseable" })
        }
        await insert([due, later])

        expect(ids(await claim())).toEqual([due.id])
        expect(ids(await claim({ now: at("12:00:00.001"), leaseUntil: at("12:02:00.001") }))).toEqual([later.id])
      })

      it("takes the payload due first, then the one received first, up to the limit", async () => {
        const [first, second, third, fourth] = [
          inboundPayloadRecord({ next_attempt_at: at("11:00:00.000"), received_at: at("11:00:00.000") }),
          inboundPayloadRecord({ next_attempt_at: at("11:30:00.000"), received_at: at("10:00:00.000") }),
          inboundPayloadRecord({ next_attempt_at: at("11:30:00.000"), received_at: at("10:00:00.001") }),
          inboundPayloadRecord({ next_attempt_at: at("11:59:00.000"), received_at: at("09:00:00.000") })
        ]
        await insert([fourth!, third!, first!, second!])

        // Earlier tests' payloads are finished, so the oldest due payloads anywhere are this test's.
        expect(ids(await claim({ limit: 2 }))).toEqual([first!.id, second!.id])
        expect(ids(await claim({ limit: 2 }))).toEqual([third!.id, fourth!.id])
        expect(await claim()).toEqual([])
      })

      it("leases what it takes and counts the try: no claim takes it again until the lease has passed", async () => {
        const payload = inboundPayloadRecord()
        await insert([payload])
        const first = newHolder()
        const second = newHolder()

        expect(await claim({ holder: first })).toEqual([{ payload: asClaimed(payload), holder: first, trace_context: null }])
        expect(await h().stored.inboundPayload(payload.id)).toEqual(asClaimed(payload))
        expect(await claim({ now: at("12:01:59.999"), leaseUntil: at("12:03:59.999") })).toEqual([])
        // Its lease passed: taken again, a second try, under a new lease and holder.
        expect(await claim({ now: LEASE_UNTIL, leaseUntil: at("12:04:00.000"), holder: second }))
          .toEqual([{ payload: asClaimed(payload, 2, at("12:04:00.000")), holder: second, trace_context: null }])
        expect(await claim({ now: at("12:03:59.999"), leaseUntil: at("12:06:00.000") })).toEqual([])
      })

      it("gives two concurrent claims disjoint payloads (needs several connections)", async (ctx) => {
        ctx.skip(!h().capabilities.concurrentConnections, NEEDS_CONNECTIONS)
        for (let round = 0; round < 5; round++) {
          const due = Array.from({ length: 40 }, () => inboundPayloadRecord())
          await insert(due)

          const [a, b] = await h().run(Effect.all([
            store((s) => s.claim({ now: NOW, leaseUntil: LEASE_UNTIL, limit: 30, holder: newHolder() })),
            store((s) => s.claim({ now: NOW, leaseUntil: LEASE_UNTIL, limit: 30, holder: newHolder() }))
          ], { concurrency: 2 }))
          const taken = [...ids(a), ...ids(b)]
          expect(new Set(taken).size).toBe(taken.length)
          expect(taken.sort()).toEqual(due.map((p) => p.id).sort())
          await h().run(store((s) =>
            Effect.forEach([...a, ...b], (c) => s.finish(c.payload.id, c.holder, { status: "processed", note: null }, NOW), {
              discard: true
            })
          ))
        }
      })

      it("does not wait for a claim in another open transaction, and takes other payloads (needs several connections)", async (ctx) => {
        ctx.skip(!h().capabilities.concurrentConnections, NEEDS_CONNECTIONS)
        const due = Array.from({ length: 6 }, (_, i) => inboundPayloadRecord({ received_at: at(`10:00:0${i}.000`) }))
        await insert(due)
        const claimFive = store((s) => s.claim({ now: NOW, leaseUntil: LEASE_UNTIL, limit: 5, holder: newHolder() }))

        const { whileHeld, after } = await h().run(contend({ hold: claimFive, finish: () => Effect.void, contend: claimFive }))

        expect(Option.map(whileHeld, ids)).toEqual(Option.some([due[5]!.id]))
        expect(ids(after)).toEqual([due[5]!.id])
      })
    })

    describe("finish", () => {
      it("records a processed try with its note and time, drops the lease, and the payload is never claimed again", async () => {
        const payload = inboundPayloadRecord()
        await insert([payload])
        const [claimed] = await claim()

        expect(await finish(payload.id, claimed!.holder, { status: "processed", note: "unknown phone number id 1065550199" }, at("12:00:30.000")))
          .toBe(true)
        expect(await h().stored.inboundPayload(payload.id)).toEqual({
          ...asClaimed(payload),
          status: "processed",
          lease_until: null,
          processed_at: at("12:00:30.000"),
          note: "unknown phone number id 1065550199"
        })
        expect(await claim({ now: END_OF_TIME, leaseUntil: END_OF_TIME })).toEqual([])
      })

      it("records a payload given up on, and it is never claimed again", async () => {
        const payload = inboundPayloadRecord()
        await insert([payload])
        const [claimed] = await claim()

        expect(await finish(payload.id, claimed!.holder, { status: "failed", note: "not JSON" }, at("12:00:30.000"))).toBe(true)
        expect(await h().stored.inboundPayload(payload.id)).toEqual({
          ...asClaimed(payload),
          status: "failed",
          lease_until: null,
          processed_at: at("12:00:30.000"),
          note: "not JSON"
        })
        expect(await claim({ now: END_OF_TIME, leaseUntil: END_OF_TIME })).toEqual([])
      })

      it("puts a try to retry back as pending, due at its next attempt, with its tries counted once", async () => {
        const payload = inboundPayloadRecord()
        await insert([payload])
        const [claimed] = await claim()
        const retryAt = at("12:10:00.000")

        expect(await finish(payload.id, claimed!.holder, { status: "pending", note: "database busy", nextAttemptAt: retryAt })).toBe(true)
        const retrying = { ...asClaimed(payload), lease_until: null, next_attempt_at: retryAt, note: "database busy" }
        expect(await h().stored.inboundPayload(payload.id)).toEqual(retrying)
        expect(await claim({ now: at("12:09:59.999") })).toEqual([])
        expect((await claim({ now: retryAt, leaseUntil: at("12:12:00.000") })).map((c) => c.payload))
          .toEqual([{ ...retrying, attempts: 2, lease_until: at("12:12:00.000") }])
      })

      it("changes nothing and reports false for a holder that does not hold the payload, or an unknown payload", async () => {
        const payload = inboundPayloadRecord()
        await insert([payload])
        const [claimed] = await claim()

        expect(await finish(payload.id, newHolder(), { status: "processed", note: null })).toBe(false)
        expect(await finish(inboundPayloadRecord().id, claimed!.holder, { status: "processed", note: null })).toBe(false)
        expect(await h().stored.inboundPayload(payload.id)).toEqual(asClaimed(payload))
        expect(await claim({ now: at("12:01:00.000") })).toEqual([])
      })

      it("refuses the finish of a holder whose lease passed and was taken by another claim", async () => {
        const payload = inboundPayloadRecord()
        await insert([payload])
        const [late] = await claim()
        const [current] = await claim({ now: LEASE_UNTIL, leaseUntil: at("12:04:00.000") })

        expect(await finish(payload.id, late!.holder, { status: "failed", note: "late" })).toBe(false)
        expect(await h().stored.inboundPayload(payload.id)).toEqual(asClaimed(payload, 2, at("12:04:00.000")))
        expect(await finish(payload.id, current!.holder, { status: "processed", note: null }, at("12:02:30.000"))).toBe(true)
        expect(await h().stored.inboundPayload(payload.id))
          .toEqual({ ...payload, attempts: 2, status: "processed", processed_at: at("12:02:30.000") })
      })

      it("reports false for a second finish of the same try", async () => {
        const payload = inboundPayloadRecord()
        await insert([payload])
        const [claimed] = await claim()

        expect(await finish(payload.id, claimed!.holder, { status: "processed", note: null })).toBe(true)
        expect(await finish(payload.id, claimed!.holder, { status: "failed", note: "again" })).toBe(false)
        expect((await h().stored.inboundPayload(payload.id))?.status).toBe("processed")
      })
    })

    describe("handled keys", () => {
      it("marks a key handled once: true the first time, false after, per source", async () => {
        const key = `wamid.${globalThis.crypto.randomUUID()}`
        const mark = (source: "chatapp" | "email", when: string) => h().run(store((s) => s.markHandled(source, key, when)))
        const was = (source: "chatapp" | "email") => h().run(store((s) => s.wasHandled(source, key)))

        expect(await was("chatapp")).toBe(false)
        expect(await h().stored.inboundHandled("chatapp", key)).toBeUndefined()
        expect(await mark("chatapp", at("12:00:00.000"))).toBe(true)
        expect(await mark("chatapp", at("12:05:00.000"))).toBe(false)
        expect(await was("chatapp")).toBe(true)
        expect(await h().stored.inboundHandled("chatapp", key)).toBe(at("12:00:00.000"))

        expect(await was("email")).toBe(false)
        expect(await mark("email", at("12:06:00.000"))).toBe(true)
        expect(await h().stored.inboundHandled("email", key)).toBe(at("12:06:00.000"))
      })

      it("lets exactly one of two concurrent marks of a key report true", async () => {
        const key = `wamid.${globalThis.crypto.randomUUID()}:delivered`
        const results = await h().run(Effect.all([
          store((s) => s.markHandled("chatapp", key, NOW)),
          store((s) => s.markHandled("chatapp", key, NOW))
        ], { concurrency: 2 }))
        expect([...results].sort()).toEqual([false, true])
      })

      it("keeps no mark made in a transaction that fails, so the redelivered item is handled then", async () => {
        const key = `wamid.${globalThis.crypto.randomUUID()}`
        const handle = store((s) => s.markHandled("chatapp", key, NOW))

        const failed = await h().run(Effect.flip(Transactor.use((t) => t.withTransaction(Effect.andThen(handle, Effect.fail(new UseCaseFailed()))))))
        expect(failed._tag).toBe("UseCaseFailed")
        expect(await h().run(store((s) => s.wasHandled("chatapp", key)))).toBe(false)
        expect(await h().stored.inboundHandled("chatapp", key)).toBeUndefined()

        expect(await h().run(Transactor.use((t) => t.withTransaction(handle)))).toBe(true)
        expect(await h().run(Transactor.use((t) => t.withTransaction(handle)))).toBe(false)
      })
    })

    describe("finishMany", () => {
      const finishMany = (tries: ReadonlyArray<{ readonly id: string; readonly holder: string; readonly outcome: InboundOutcome }>, when = at("12:00:30.000")) =>
        h().run(store((s) => s.finishMany(tries, when)))

      it("records how each try ended in one call: a processed or failed one with its time of processing, a retry pending at its next attempt", async () => {
        const [processed, failed, retried] = [inboundPayloadRecord(), inboundPayloadRecord(), inboundPayloadRecord()]
        await insert([processed!, failed!, retried!])
        const holder = newHolder()
        expect(ids(await claim({ holder }))).toEqual([processed!.id, failed!.id, retried!.id])
        const retryAt = at("12:10:00.000")

        expect(await finishMany([
          { id: processed!.id, holder, outcome: { status: "processed", note: null } },
          { id: failed!.id, holder, outcome: { status: "failed", note: "not JSON" } },
          { id: retried!.id, holder, outcome: { status: "pending", note: "database busy", nextAttemptAt: retryAt } }
        ])).toEqual(new Set([processed!.id, failed!.id, retried!.id]))
        const done = { lease_until: null, processed_at: at("12:00:30.000") }
        expect(await h().stored.inboundPayload(processed!.id)).toEqual({ ...asClaimed(processed!), ...done, status: "processed" })
        expect(await h().stored.inboundPayload(failed!.id)).toEqual({ ...asClaimed(failed!), ...done, status: "failed", note: "not JSON" })
        const retrying = { ...asClaimed(retried!), lease_until: null, next_attempt_at: retryAt, note: "database busy" }
        expect(await h().stored.inboundPayload(retried!.id)).toEqual(retrying)
        expect(await claim({ now: at("12:09:59.999") })).toEqual([])
        expect((await claim({ now: retryAt, leaseUntil: at("12:12:00.000") })).map((c) => c.payload))
          .toEqual([{ ...retrying, attempts: 2, lease_until: at("12:12:00.000") }])
      })

      it("finishes only the tries whose holder still holds them: not a late holder's, a finished one's or an unknown payload's", async () => {
        const [taken, done, held] = [inboundPayloadRecord(), inboundPayloadRecord(), inboundPayloadRecord()]
        await insert([taken!, done!, held!])
        const late = newHolder()
        await claim({ holder: late })
        expect(await finish(done!.id, late, { status: "processed", note: null }, at("12:00:10.000"))).toBe(true)
        // The lease passed: the other two are another holder's now.
        const current = newHolder()
        expect(ids(await claim({ now: LEASE_UNTIL, leaseUntil: at("12:04:00.000"), holder: current }))).toEqual([taken!.id, held!.id])

        expect(await finishMany([
          { id: taken!.id, holder: late, outcome: { status: "failed", note: "late" } },
          { id: done!.id, holder: late, outcome: { status: "failed", note: "again" } },
          { id: held!.id, holder: late, outcome: { status: "failed", note: "late" } },
          { id: held!.id, holder: current, outcome: { status: "processed", note: null } },
          { id: inboundPayloadRecord().id, holder: current, outcome: { status: "processed", note: null } }
        ], at("12:02:30.000"))).toEqual(new Set([held!.id]))
        expect(await h().stored.inboundPayload(taken!.id)).toEqual(asClaimed(taken!, 2, at("12:04:00.000")))
        expect(await h().stored.inboundPayload(done!.id)).toEqual({ ...done!, attempts: 1, status: "processed", processed_at: at("12:00:10.000") })
        expect(await h().stored.inboundPayload(held!.id)).toEqual({ ...held!, attempts: 2, status: "processed", processed_at: at("12:02:30.000") })
      })

      it("finishes a try given twice in one batch once, and resolves an empty batch to none", async () => {
        const payload = inboundPayloadRecord()
        await insert([payload])
        const [claimed] = await claim()
        const twice = { id: payload.id, holder: claimed!.holder, outcome: { status: "processed", note: null } } as const

        expect(await finishMany([twice, twice])).toEqual(new Set([payload.id]))
        expect(await finishMany([])).toEqual(new Set())
        expect(await h().stored.inboundPayload(payload.id))
          .toEqual({ ...asClaimed(payload), lease_until: null, status: "processed", processed_at: at("12:00:30.000") })
      })

      it("finishes 1,200 tries in one call, keeping awkward and JSON-looking notes as text", async () => {
        const payloads = Array.from({ length: 1_200 }, () => inboundPayloadRecord())
        await h().run(store((s) => s.insertMany(payloads.map((payload) => ({ payload, traceContext: null })))))
        const holder = newHolder()
        expect(ids(await claim({ holder, limit: 2_000 })).sort()).toEqual(payloads.map((p) => p.id).sort())
        const note = (i: number) => AWKWARD_TEXTS[i % AWKWARD_TEXTS.length]!
        const outcomeOf = (i: number): InboundOutcome =>
          i % 4 === 0
            ? { status: "processed", note: null }
            : i % 4 === 1
            ? { status: "processed", note: note(i) }
            : i % 4 === 2
            ? { status: "failed", note: note(i) }
            : { status: "pending", note: note(i), nextAttemptAt: at("12:10:00.000") }

        expect(await finishMany(payloads.map((p, i) => ({ id: p.id, holder, outcome: outcomeOf(i) }))))
          .toEqual(new Set(payloads.map((p) => p.id)))
        const expected = payloads.map((p, i) => {
          const outcome = outcomeOf(i)
          return outcome.status === "pending"
            ? { ...asClaimed(p), lease_until: null, note: outcome.note, next_attempt_at: outcome.nextAttemptAt }
            : { ...asClaimed(p), lease_until: null, status: outcome.status, note: outcome.note, processed_at: at("12:00:30.000") }
        })
        expect(await Promise.all(payloads.map((p) => h().stored.inboundPayload(p.id)))).toEqual(expected)
      })

      it("loses to a finish of the same try in another open transaction, and leaves that one's outcome (needs several connections)", async (ctx) => {
        ctx.skip(!h().capabilities.concurrentConnections, NEEDS_CONNECTIONS)
        const [contested, other] = [inboundPayloadRecord(), inboundPayloadRecord()]
        await insert([contested!, other!])
        const holder = newHolder()
        await claim({ holder })

        const { whileHeld, after } = await h().run(contend({
          hold: store((s) => s.finish(contested!.id, holder, { status: "processed", note: "by the other" }, at("12:00:10.000"))),
          finish: () => Effect.void,
          contend: store((s) =>
            s.finishMany([
              { id: contested!.id, holder, outcome: { status: "failed", note: "second" } },
              { id: other!.id, holder, outcome: { status: "failed", note: "second" } }
            ], at("12:00:30.000"))
          )
        }))
        // Answering before the other committed, it would have finished the try under that writer.
        expect(whileHeld).toEqual(Option.none())
        expect(after).toEqual(new Set([other!.id]))
        expect(await h().stored.inboundPayload(contested!.id))
          .toEqual({ ...asClaimed(contested!), lease_until: null, status: "processed", note: "by the other", processed_at: at("12:00:10.000") })
        expect(await h().stored.inboundPayload(other!.id))
          .toEqual({ ...asClaimed(other!), lease_until: null, status: "failed", note: "second", processed_at: at("12:00:30.000") })
      })
    })

    describe("markHandledMany", () => {
      const markMany = (source: "chatapp" | "email", keys: ReadonlyArray<string>, when: string) =>
        h().run(store((s) => s.markHandledMany(source, keys, when)))

      it("records every key not handled yet and resolves to those: one handled before, or given twice in the batch, counts once", async () => {
        const [before, k1, k2, k3] = [0, 1, 2, 3].map((i) => `wamid.${globalThis.crypto.randomUUID()}:${i}`)
        expect(await h().run(store((s) => s.markHandled("chatapp", before!, at("11:00:00.000"))))).toBe(true)

        expect(await markMany("chatapp", [before!, k1!, k2!, k1!], at("12:00:00.000"))).toEqual(new Set([k1, k2]))
        expect(await markMany("chatapp", [k2!, k3!], at("12:05:00.000"))).toEqual(new Set([k3]))
        expect(await markMany("email", [before!], at("12:06:00.000"))).toEqual(new Set([before]))
        expect(await markMany("chatapp", [], at("12:07:00.000"))).toEqual(new Set())
        expect(await h().stored.inboundHandled("chatapp", before!)).toBe(at("11:00:00.000"))
        expect(await h().stored.inboundHandled("chatapp", k1!)).toBe(at("12:00:00.000"))
        expect(await h().stored.inboundHandled("chatapp", k2!)).toBe(at("12:00:00.000"))
        expect(await h().stored.inboundHandled("chatapp", k3!)).toBe(at("12:05:00.000"))
        expect(await h().stored.inboundHandled("email", before!)).toBe(at("12:06:00.000"))
      })

      it("records 1,200 keys in one call, awkward and JSON-looking ones kept as text", async () => {
        // The awkward keys exactly as they are, on the one source no other test marks them on.
        const keys = [...AWKWARD_TEXTS, ...Array.from({ length: 1_200 - AWKWARD_TEXTS.length }, (_, i) => `wamid.${globalThis.crypto.randomUUID()}:${i}`)]

        expect(await markMany("email", keys, at("12:00:00.000"))).toEqual(new Set(keys))
        expect(await Promise.all(keys.map((key) => h().stored.inboundHandled("email", key)))).toEqual(keys.map(() => at("12:00:00.000")))
        expect(await markMany("email", [...AWKWARD_TEXTS, `{"a": 1}`], at("12:01:00.000"))).toEqual(new Set([`{"a": 1}`]))
      })

      it("keeps no key of a batch marked in a transaction that fails", async () => {
        const keys = [`wamid.${globalThis.crypto.randomUUID()}`, `wamid.${globalThis.crypto.randomUUID()}`]
        const handle = store((s) => s.markHandledMany("chatapp", keys, NOW))

        await h().run(Effect.flip(Transactor.use((t) => t.withTransaction(Effect.andThen(handle, Effect.fail(new UseCaseFailed()))))))
        for (const key of keys) expect(await h().stored.inboundHandled("chatapp", key)).toBeUndefined()
        expect(await h().run(Transactor.use((t) => t.withTransaction(handle)))).toEqual(new Set(keys))
      })

      it("does not report a key another open transaction marked, once that one commits (needs several connections)", async (ctx) => {
        ctx.skip(!h().capabilities.concurrentConnections, NEEDS_CONNECTIONS)
        const [theirs, mine] = [`wamid.${globalThis.crypto.randomUUID()}`, `wamid.${globalThis.crypto.randomUUID()}`]

        const { whileHeld, after } = await h().run(contend({
          hold: store((s) => s.markHandled("chatapp", theirs, at("11:00:00.000"))),
          finish: () => Effect.void,
          contend: store((s) => s.markHandledMany("chatapp", [theirs, mine], at("12:00:00.000")))
        }))
        // Answering before the other committed, it would have reported that key new as well.
        expect(whileHeld).toEqual(Option.none())
        expect(after).toEqual(new Set([mine]))
        expect(await h().stored.inboundHandled("chatapp", theirs)).toBe(at("11:00:00.000"))
        expect(await h().stored.inboundHandled("chatapp", mine)).toBe(at("12:00:00.000"))
      })
    })
  }
})
