import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { makeAdvanceTime } from "../../support/AdvanceTime.ts"
import {
  LEASE_SECONDS,
  type SummaryIntent,
  type SummaryKind,
  type SummarySource,
  type SummaryState,
  transition
} from "../../../src/summaries/SummaryMachine.ts"

const T0 = Date.parse("2026-11-26T12:00:00.000Z")
const at = (ms: number): string => new Date(ms).toISOString()

// The spec's prices (Limits: "2 AI credits per image, 3 per PDF; 0 when one already exists or is pending;
// agent summaries cost nothing extra"), written here from the spec, not taken from the code under test.
const SPEC_PRICE: Record<SummaryKind, number> = { image: 2, pdf: 3 }

/**
 * The model: the spec's File summary status table (none → pending → ok | failed; failed → new
 * generation; ok unchanged, free) with its prices, and a pending generation that may be taken over
 * once its lease ran out. Times are plain milliseconds.
 */
interface Model {
  now: number
  status: "none" | "pending" | "ok" | "failed"
  /** The generation that may still settle the summary (the pending one), counted from 1. */
  generation: number
  pendingSince: number
  source: SummarySource
  kind: SummaryKind
  balance: number
  charged: number
  announced: number
  /** The answer the last request got: 200, 201, 202, 402 or 502. */
  lastAnswer: number | null
}

/** The machine, its intents performed on a ledger and an event count. */
interface Real {
  now: number
  state: SummaryState
  balance: number
  charged: number
  announced: number
  lastAnswer: number | null
}

const agree = (m: Model, r: Real) => {
  expect(r.state.status).toBe(m.status)
  if (r.state.status !== "none") expect(r.state.generation).toBe(m.generation)
  expect(r.balance).toBe(m.balance)
  expect(r.charged).toBe(m.charged)
  expect(r.announced).toBe(m.announced)
  expect(r.lastAnswer).toBe(m.lastAnswer)
}

/** Performs a transition's intents on the real side, answering as the service would. */
const perform = (r: Real, next: SummaryState, intents: ReadonlyArray<SummaryIntent>) => {
  r.state = next
  for (const intent of intents) {
    switch (intent.type) {
      case "answer_existing":
        r.lastAnswer = 200
        break
      case "answer_pending":
        r.lastAnswer = 202
        break
      case "refuse_credits":
        r.lastAnswer = 402
        break
      case "charge":
        r.balance -= intent.credits
        r.charged += intent.credits
        break
      case "announce":
        r.announced += 1
        break
      case "answer_created":
        r.lastAnswer = 201
        break
      case "answer_failed":
        r.lastAnswer = 502
        break
      case "claim":
      case "generate":
      case "store_ok":
      case "store_failed":
        break
    }
  }
}

class RequestCommand implements fc.Command<Model, Real> {
  constructor(readonly source: SummarySource, readonly kind: SummaryKind) {}
  check = () => true
  run(m: Model, r: Real) {
    // Model: the spec's table.
    const leaseRunning = m.status === "pending" && m.now < m.pendingSince + LEASE_SECONDS * 1000
    if (m.status === "ok") m.lastAnswer = 200
    else if (leaseRunning) m.lastAnswer = 202
    else if (this.source === "on_demand" && m.balance < SPEC_PRICE[this.kind]) m.lastAnswer = 402
    else {
      m.status = "pending"
      m.generation += 1
      m.pendingSince = m.now
      m.source = this.source
      m.kind = this.kind
    }
    const requested = transition(r.state, {
      type: "requested",
      source: this.source,
      kind: this.kind,
      balance: r.balance
    }, at(r.now))
    perform(r, requested.state, requested.intents)
    agree(m, r)
  }
  toString = () => `Request(${this.source}, ${this.kind})`
}

class OutcomeCommand implements fc.Command<Model, Real> {
  /** `stale`: the outcome of the generation before the current one (a taken-over generator finishing late). */
  constructor(readonly ok: boolean, readonly stale: boolean, readonly announce: boolean) {}
  check = () => true
  run(m: Model, r: Real) {
    const generation = this.stale ? m.generation - 1 : m.generation
    if (m.status === "pending" && !this.stale) {
      if (this.ok) {
        m.status = "ok"
        const price = m.source === "on_demand" ? SPEC_PRICE[m.kind] : 0
        m.balance -= price
        m.charged += price
        if (this.announce) m.announced += 1
        m.lastAnswer = 201
      } else {
        m.status = "failed"
        m.lastAnswer = 502
      }
    }
    const outcome = transition(
      r.state,
      this.ok ? { type: "generated", generation, announce: this.announce } : { type: "generation_failed", generation },
      at(r.now)
    )
    perform(r, outcome.state, outcome.intents)
    agree(m, r)
  }
  toString = () => `Outcome(${this.ok ? "ok" : "failed"}${this.stale ? ", stale" : ""}${this.announce ? "" : ", team chat"})`
}

class GrantCommand implements fc.Command<Model, Real> {
  constructor(readonly credits: number) {}
  check = () => true
  run(m: Model, r: Real) {
    m.balance += this.credits
    r.balance += this.credits
    agree(m, r)
  }
  toString = () => `Grant(${this.credits})`
}

const AdvanceTime = makeAdvanceTime<Model, Real>(agree)

const commands = [
  fc.tuple(fc.constantFrom<SummarySource>("on_demand", "agent"), fc.constantFrom<SummaryKind>("image", "pdf"))
    .map(([source, kind]) => new RequestCommand(source, kind)),
  fc.tuple(fc.boolean(), fc.boolean(), fc.boolean()).map(([ok, stale, announce]) => new OutcomeCommand(ok, stale, announce)),
  fc.integer({ min: 1, max: 5 }).map((credits) => new GrantCommand(credits)),
  fc.integer({ min: 1, max: LEASE_SECONDS * 1500 }).map((ms) => new AdvanceTime(ms))
]

describe("summary machine against the spec's model", () => {
  it("agrees with the model on states, answers, charges and events over random sequences", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 6 }), fc.commands(commands, { size: "+1" }), (balance, cmds) => {
        const model: Model = {
          now: T0,
          status: "none",
          generation: 0,
          pendingSince: T0,
          source: "on_demand",
          kind: "pdf",
          balance,
          charged: 0,
          announced: 0,
          lastAnswer: null
        }
        const real: Real = { now: T0, state: { status: "none" }, balance, charged: 0, announced: 0, lastAnswer: null }
        fc.modelRun(() => ({ model, real }), cmds)
      }),
      { numRuns: 300 }
    )
  })

  it("never charges more than once per generation, and never lets a balance go below zero by a charge", () => {
    fc.assert(
      fc.property(fc.commands(commands, { size: "+1" }), (cmds) => {
        const model: Model = {
          now: T0,
          status: "none",
          generation: 0,
          pendingSince: T0,
          source: "on_demand",
          kind: "pdf",
          balance: 0,
          charged: 0,
          announced: 0,
          lastAnswer: null
        }
        const real: Real = { now: T0, state: { status: "none" }, balance: 0, charged: 0, announced: 0, lastAnswer: null }
        fc.modelRun(() => ({ model, real }), cmds)
        // Checked by the machine alone (one generation at a time): the price was there when it was claimed.
        expect(real.balance).toBeGreaterThanOrEqual(0)
        expect(real.charged).toBeLessThanOrEqual(real.state.status === "none" ? 0 : 3 * real.state.generation)
      }),
      { numRuns: 200 }
    )
  })
})
