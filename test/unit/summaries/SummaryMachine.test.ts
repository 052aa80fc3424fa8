import { Effect } from "effect"
import { TestClock } from "effect/testing"
import { describe, expect, it } from "vitest"
import { now } from "../../../src/kernel/Timestamp.ts"
import {
  availability,
  LEASE_SECONDS,
  rateBuckets,
  rateDecision,
  rateWindow,
  summarizable,
  type SummaryEvent,
  type SummaryState,
  transition
} from "../../../src/summaries/SummaryMachine.ts"

const T0 = Date.parse("2026-11-26T12:00:10.000Z")
const MB = 1024 * 1024

/** Runs `body` under a TestClock standing at T0; it moves only by `TestClock.adjust`. */
const underTestClock = <A>(body: Effect.Effect<A>) =>
  Effect.runPromise(Effect.provide(Effect.andThen(TestClock.setTime(T0), body), TestClock.layer()))

/** The transition at the TestClock's current time. */
const step = (state: SummaryState, event: SummaryEvent) => Effect.map(now, (at) => transition(state, event, at))

const onDemand = (kind: "image" | "pdf", balance = 100): SummaryEvent => ({ type: "requested", source: "on_demand", kind, balance })
const byAgent = (kind: "image" | "pdf"): SummaryEvent => ({ type: "requested", source: "agent", kind, balance: 0 })

const leaseFrom = (ms: number) => new Date(ms + LEASE_SECONDS * 1000).toISOString()

describe("summary transitions (spec: File summary status)", () => {
  it("none → pending on an on-demand request: claims generation 1 with a lease, then generates", () =>
    underTestClock(Effect.gen(function*() {
      const { state, intents } = yield* step({ status: "none" }, onDemand("pdf"))
      expect(state).toEqual({ status: "pending", generation: 1, lease_until: leaseFrom(T0), source: "on_demand", kind: "pdf" })
      expect(intents).toEqual([
        { type: "claim", generation: 1, lease_until: leaseFrom(T0), source: "on_demand", kind: "pdf" },
        { type: "generate" }
      ])
    })))

  it("none stays none when the balance is below the price: refused, nothing claimed", () =>
    underTestClock(Effect.gen(function*() {
      const { state, intents } = yield* step({ status: "none" }, onDemand("pdf", 2))
      expect(state).toEqual({ status: "none" })
      expect(intents).toEqual([{ type: "refuse_credits", required: 3, balance: 2 }])
    })))

  it("none → pending for an agent whatever the balance: agents pay nothing", () =>
    underTestClock(Effect.gen(function*() {
      const { state, intents } = yield* step({ status: "none" }, byAgent("image"))
      expect(state).toMatchObject({ status: "pending", generation: 1, source: "agent", kind: "image" })
      expect(intents.map((i) => i.type)).toEqual(["claim", "generate"])
    })))

  it("pending → ok on its generation's summary: stored, charged 3 for a PDF on demand, announced, answered 201", () =>
    underTestClock(Effect.gen(function*() {
      const pending = (yield* step({ status: "none" }, onDemand("pdf"))).state
      yield* TestClock.adjust("20 seconds")
      const { state, intents } = yield* step(pending, { type: "generated", generation: 1, announce: true })
      expect(state).toEqual({ status: "ok", generation: 1 })
      expect(intents).toEqual([
        { type: "store_ok" },
        { type: "charge", credits: 3 },
        { type: "announce" },
        { type: "answer_created", credits_charged: 3 }
      ])
    })))

  it("pending → ok for an image on demand charges 2; team chat (announce false) emits no event", () =>
    underTestClock(Effect.gen(function*() {
      const pending = (yield* step({ status: "none" }, onDemand("image"))).state
      const { intents } = yield* step(pending, { type: "generated", generation: 1, announce: false })
      expect(intents).toEqual([{ type: "store_ok" }, { type: "charge", credits: 2 }, { type: "answer_created", credits_charged: 2 }])
    })))

  it("pending → ok for an agent charges nothing and still announces", () =>
    underTestClock(Effect.gen(function*() {
      const pending = (yield* step({ status: "none" }, byAgent("pdf"))).state
      const { intents } = yield* step(pending, { type: "generated", generation: 1, announce: true })
      expect(intents).toEqual([{ type: "store_ok" }, { type: "announce" }, { type: "answer_created", credits_charged: 0 }])
    })))

  it("pending → failed on its generation's failure: stored failed, nothing charged, answered 502", () =>
    underTestClock(Effect.gen(function*() {
      const pending = (yield* step({ status: "none" }, onDemand("pdf"))).state
      const { state, intents } = yield* step(pending, { type: "generation_failed", generation: 1 })
      expect(state).toEqual({ status: "failed", generation: 1 })
      expect(intents).toEqual([{ type: "store_failed" }, { type: "answer_failed" }])
    })))

  it("pending stays pending on a request while its lease runs: 202, nothing charged, nothing claimed", () =>
    underTestClock(Effect.gen(function*() {
      const pending = (yield* step({ status: "none" }, onDemand("pdf"))).state
      yield* TestClock.adjust(`${LEASE_SECONDS * 1000 - 1} millis`)
      const { state, intents } = yield* step(pending, onDemand("pdf"))
      expect(state).toBe(pending)
      expect(intents).toEqual([{ type: "answer_pending" }])
    })))

  it("pending past its lease → a new generation on the next request (a crashed generator's summary is taken over)", () =>
    underTestClock(Effect.gen(function*() {
      const pending = (yield* step({ status: "none" }, byAgent("pdf"))).state
      yield* TestClock.adjust(`${LEASE_SECONDS} seconds`)
      const { state, intents } = yield* step(pending, onDemand("pdf"))
      const at = T0 + LEASE_SECONDS * 1000
      expect(state).toEqual({ status: "pending", generation: 2, lease_until: leaseFrom(at), source: "on_demand", kind: "pdf" })
      expect(intents.map((i) => i.type)).toEqual(["claim", "generate"])
    })))

  it("ignores the outcome of a generation that was taken over", () =>
    underTestClock(Effect.gen(function*() {
      const first = (yield* step({ status: "none" }, onDemand("pdf"))).state
      yield* TestClock.adjust(`${LEASE_SECONDS} seconds`)
      const second = (yield* step(first, onDemand("pdf"))).state
      expect(yield* step(second, { type: "generated", generation: 1, announce: true })).toEqual({ state: second, intents: [] })
      expect(yield* step(second, { type: "generation_failed", generation: 1 })).toEqual({ state: second, intents: [] })
    })))

  it("failed → pending under the next generation on a request again", () =>
    underTestClock(Effect.gen(function*() {
      const { state, intents } = yield* step({ status: "failed", generation: 4 }, onDemand("image"))
      expect(state).toEqual({ status: "pending", generation: 5, lease_until: leaseFrom(T0), source: "on_demand", kind: "image" })
      expect(intents[0]).toEqual({ type: "claim", generation: 5, lease_until: leaseFrom(T0), source: "on_demand", kind: "image" })
    })))

  it("ok stays ok on a request: returned without charge (200), whoever asks and whatever the balance", () =>
    underTestClock(Effect.gen(function*() {
      const ok: SummaryState = { status: "ok", generation: 2 }
      for (const event of [onDemand("pdf"), onDemand("pdf", 0), byAgent("image")]) {
        expect(yield* step(ok, event)).toEqual({ state: ok, intents: [{ type: "answer_existing" }] })
      }
    })))

  it("ignores an outcome when nothing is pending (none, ok, failed)", () =>
    underTestClock(Effect.gen(function*() {
      for (const state of [{ status: "none" }, { status: "ok", generation: 1 }, { status: "failed", generation: 1 }] as const) {
        expect(yield* step(state, { type: "generated", generation: 1, announce: true })).toEqual({ state, intents: [] })
        expect(yield* step(state, { type: "generation_failed", generation: 1 })).toEqual({ state, intents: [] })
      }
    })))
})

describe("what can be summarized (spec: Summary input, availability)", () => {
  const file = (contentType: string, fileSize: number, inbound = true, offered = true) => ({ contentType, fileSize, inbound, offered })

  it("takes inbound images up to 10 MB and PDFs up to 20 MB", () => {
    expect(summarizable(file("image/jpeg", 10 * MB))).toEqual({ summarizable: true, kind: "image" })
    expect(summarizable(file("image/png", 1))).toEqual({ summarizable: true, kind: "image" })
    expect(summarizable(file("application/pdf", 20 * MB))).toEqual({ summarizable: true, kind: "pdf" })
    expect(summarizable(file("image/jpeg", 10 * MB + 1)).summarizable).toBe(false)
    expect(summarizable(file("application/pdf", 20 * MB + 1)).summarizable).toBe(false)
  })

  it("refuses other types, files the workspace sent, and places that offer no summaries", () => {
    expect(summarizable(file("audio/ogg", 10)).summarizable).toBe(false)
    expect(summarizable(file("text/plain", 10)).summarizable).toBe(false)
    expect(summarizable(file("image/svg+xml", 10)).summarizable).toBe(false)
    expect(summarizable(file("image/png", 10, false)).summarizable).toBe(false)
    expect(summarizable(file("application/pdf", 10, true, false)).summarizable).toBe(false)
  })

  it("is available with its price when AI features are on and no summary is ok or pending; a failed one may be asked again", () => {
    expect(availability(true, file("application/pdf", 10), null)).toEqual({ ai_summary_available: true, ai_summary_credits: 3 })
    expect(availability(true, file("image/webp", 10), "failed")).toEqual({ ai_summary_available: true, ai_summary_credits: 2 })
    expect(availability(true, file("image/webp", 10), "ok")).toEqual({ ai_summary_available: false, ai_summary_credits: null })
    expect(availability(true, file("image/webp", 10), "pending")).toEqual({ ai_summary_available: false, ai_summary_credits: null })
    expect(availability(false, file("image/webp", 10), null)).toEqual({ ai_summary_available: false, ai_summary_credits: null })
    expect(availability(true, file("image/webp", 10, false), null)).toEqual({ ai_summary_available: false, ai_summary_credits: null })
  })
})

describe("request rates (spec: 30 per minute per user or API key, 60 per workspace)", () => {
  it("counts in fixed minutes of the clock; Retry-After is the whole seconds left in the minute", () =>
    underTestClock(Effect.gen(function*() {
      const at = T0 // 12:00:10
      expect(rateWindow(at)).toEqual({ start: "2026-11-26T12:00:00.000Z", retryAfterSeconds: 50 })
      expect(rateWindow(at + 49_500).retryAfterSeconds).toBe(1)
      expect(rateWindow(at + 50_000)).toEqual({ start: "2026-11-26T12:01:00.000Z", retryAfterSeconds: 60 })
    })))

  it("takes from the caller's bucket before the workspace's, and refuses with the full one's limit", () => {
    expect(rateBuckets({ kind: "api_key", id: "k1" })).toEqual([
      { key: "api_key:k1", limit: 30 },
      { key: "workspace", limit: 60 }
    ])
    expect(rateBuckets({ kind: "user", id: "u1" })[0]).toEqual({ key: "user:u1", limit: 30 })
    expect(rateDecision(null, T0)).toEqual({ allowed: true })
    expect(rateDecision("api_key:k1", T0)).toEqual({ allowed: false, scope: "caller", limit: 30, retryAfter: 50 })
    expect(rateDecision("workspace", T0)).toEqual({ allowed: false, scope: "workspace", limit: 60, retryAfter: 50 })
  })
})
