import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { makeAdvanceTime } from "../../support/AdvanceTime.ts"
import {
  type CampaignEvent,
  type CampaignIntent,
  type CampaignState,
  type PlanFacts,
  type Refusal,
  type RoundFacts,
  transition,
  type WarmupFacts,
  withFacts
} from "../../../src/campaigns/CampaignMachine.ts"
import type { CampaignStatus, ThrottleReason } from "../../../src/ports/CampaignStore.ts"

const T0 = Date.parse("2026-11-22T12:00:00.000Z")
const MINUTE = 60_000
const DAY = 24 * 60 * MINUTE
// Fixed, so a failure is the same on every run; change it to explore other sequences.
const SEED = 2028

/**
 * The model: the campaign lifecycle as DECISIONS.md and the spec state it, times as plain
 * milliseconds. `round`: the engine is in a sending round with the campaign as it read it.
 */
interface Model {
  now: number
  status: CampaignStatus
  reason: ThrottleReason | null
  sendAt: number | null
  nextRun: number | null
  startedAt: number | null
  pausedAt: number | null
  completedAt: number | null
  audience: number | null
  confirmed: { readonly at: number; readonly audience: number } | null
  round: boolean
}

/** The machine under test: the stored row it decides on, and the row a round in flight read. */
interface Real {
  now: number
  row: CampaignState
  round: CampaignState | null
}

const draft: CampaignState = {
  status: "draft",
  throttle_reason: null,
  send_at: null,
  next_run_at: null,
  started_at: null,
  paused_at: null,
  completed_at: null,
  audience_size: null,
  warmup_acknowledged_at: null,
  warmup_acknowledged_audience: null
}

const agree = (m: Model, r: Real) => {
  expect(r.row).toEqual({
    status: m.status,
    throttle_reason: m.reason,
    send_at: m.sendAt,
    next_run_at: m.nextRun,
    started_at: m.startedAt,
    paused_at: m.pausedAt,
    completed_at: m.completedAt,
    audience_size: m.audience,
    warmup_acknowledged_at: m.confirmed?.at ?? null,
    warmup_acknowledged_audience: m.confirmed?.audience ?? null
  })
  // What every status promises, whatever led there.
  const { next_run_at, status, throttle_reason } = r.row
  if (status === "draft") expect([throttle_reason, r.row.audience_size]).toEqual([null, null])
  if (status === "scheduled") expect([throttle_reason, next_run_at]).toEqual([null, r.row.send_at])
  if (status === "sending") {
    expect(next_run_at).not.toBeNull()
    expect([null, "daily_batch_limit", "chatapp_messaging_limit", "throughput"]).toContain(throttle_reason)
  }
  if (status === "paused") {
    expect(next_run_at).toBeNull()
    expect(r.row.paused_at).not.toBeNull()
    expect([null, "warmup_acknowledgement_required", "quality_restricted"]).toContain(throttle_reason)
  }
  if (status === "completed") expect([throttle_reason, next_run_at, r.row.completed_at === null]).toEqual([null, null, false])
}

/** What a request or engine event came to: the facts asked for, a refusal, and the intents after its write. */
interface Outcome {
  readonly asked: ReadonlyArray<CampaignIntent>
  readonly refusal: Refusal | null
  readonly wrote: boolean
  readonly after: ReadonlyArray<CampaignIntent>
}

/**
 * Feeds `event` to the machine on `state` as a service does: with the facts it asks for, until it
 * refuses, writes or does nothing. A write applies to the stored row only while the row's status is
 * one expected; the machine's next state must be the state it decided on with the write applied.
 */
const feed = (r: Real, state: CampaignState, event: CampaignEvent, facts: { warmup?: WarmupFacts; plan?: PlanFacts }): Outcome => {
  const asked: Array<CampaignIntent> = []
  let current = event
  for (;;) {
    const { intents, state: next } = transition(state, current)
    const gather = intents.filter((i) => i._tag === "CheckShape" || i._tag === "CheckWarmup" || i._tag === "Plan")
    asked.push(...gather)
    if (intents.some((i) => i._tag === "CheckWarmup")) {
      expect(next).toEqual(state)
      current = withFacts(current, { warmup: facts.warmup! })
      continue
    }
    if (intents.some((i) => i._tag === "Plan")) {
      expect(next).toEqual(state)
      current = withFacts(current, { plan: facts.plan! })
      continue
    }
    const refuse = intents.find((i) => i._tag === "Refuse")
    if (refuse !== undefined) {
      expect(intents).toEqual([refuse])
      expect(next).toEqual(state)
      return { asked, refusal: refuse.refusal, wrote: false, after: [] }
    }
    const writes = intents.filter((i) => i._tag === "Write")
    expect(writes.length).toBeLessThanOrEqual(1)
    const write = writes[0]
    if (write === undefined) {
      expect(next).toEqual(state)
      return { asked, refusal: null, wrote: false, after: intents.filter((i) => i._tag !== "CheckShape") }
    }
    // One write, under the status decided on, and the next state is exactly what it writes.
    expect(write.expected).toEqual([state.status])
    expect(next).toEqual({ ...state, ...write.set })
    const applies = write.expected.includes(r.row.status)
    if (applies) r.row = { ...r.row, ...write.set }
    return { asked, refusal: null, wrote: applies, after: intents.slice(intents.indexOf(write) + 1) }
  }
}

const wrongStatus = (command: "send" | "schedule" | "pause" | "resume" | "edit", status: CampaignStatus): Refusal => ({
  _tag: "WrongStatus",
  command,
  status
})

const due = (m: Model) => m.nextRun !== null && m.nextRun <= m.now

/** Stops the model's campaign until the user resumes. */
const pauseModel = (m: Model, reason: ThrottleReason | null) => Object.assign(m, { status: "paused", reason, pausedAt: m.now, nextRun: null })

/** Whether a confirmation given for `confirmed` recipients still holds for `audience`: growth of more than 20 % and at least 250 voids it. */
const stillConfirmed = (confirmed: number, audience: number) => {
  const growth = audience - confirmed
  return !(growth > confirmed / 5 && growth >= 250)
}

/** What the warm-up check reports and the user says. */
interface Warmup {
  readonly required: boolean
  readonly audience: number
  readonly acknowledged: boolean
}

const warmupArb = fc.record({ required: fc.boolean(), audience: fc.integer({ min: 0, max: 2_000 }), acknowledged: fc.boolean() })

class SendCommand implements fc.Command<Model, Real> {
  constructor(readonly warmup: Warmup) {}
  check = () => true
  run(m: Model, r: Real) {
    const { acknowledged, audience, required } = this.warmup
    const out = feed(r, r.row, { _tag: "Send", now: r.now, acknowledged }, { warmup: { required, audience } })
    if (m.status !== "draft" && m.status !== "scheduled") {
      expect(out).toMatchObject({ asked: [], refusal: wrongStatus("send", m.status) })
    } else {
      expect(out.asked).toEqual([{ _tag: "CheckShape" }, { _tag: "CheckWarmup", at: m.now }])
      if (required && !acknowledged) {
        expect(out.refusal).toEqual({ _tag: "WarmupUnconfirmed" })
      } else {
        expect(out).toMatchObject({ refusal: null, wrote: true, after: [] })
        Object.assign(m, { status: "sending", sendAt: null, nextRun: m.now, confirmed: acknowledged ? { at: m.now, audience } : null })
      }
    }
    agree(m, r)
  }
  toString = () => `Send(${JSON.stringify(this.warmup)})`
}

class ScheduleCommand implements fc.Command<Model, Real> {
  /** `inMs`: send_at from now (null: not a time with a zone offset). */
  constructor(readonly inMs: number | null, readonly warmup: Warmup) {}
  check = () => true
  run(m: Model, r: Real) {
    const { acknowledged, audience, required } = this.warmup
    const sendAt = this.inMs === null ? null : m.now + this.inMs
    const out = feed(r, r.row, { _tag: "Schedule", now: r.now, send_at: sendAt, acknowledged }, { warmup: { required, audience } })
    if (m.status !== "draft" && m.status !== "scheduled") {
      expect(out.refusal).toEqual(wrongStatus("schedule", m.status))
    } else if (sendAt === null) {
      expect(out.refusal).toEqual({ _tag: "InvalidSendAt", message: "Must be an ISO-8601 time with a time zone offset" })
    } else if (sendAt <= m.now) {
      expect(out.refusal).toEqual({ _tag: "InvalidSendAt", message: "Must be in the future" })
    } else {
      // The warm-up as it will be when the campaign goes out.
      expect(out.asked).toEqual([{ _tag: "CheckShape" }, { _tag: "CheckWarmup", at: sendAt }])
      if (required && !acknowledged) {
        expect(out.refusal).toEqual({ _tag: "WarmupUnconfirmed" })
      } else {
        expect(out).toMatchObject({ refusal: null, wrote: true })
        Object.assign(m, { status: "scheduled", sendAt, nextRun: sendAt, confirmed: acknowledged ? { at: sendAt, audience } : null })
      }
    }
    agree(m, r)
  }
  toString = () => `Schedule(${this.inMs}, ${JSON.stringify(this.warmup)})`
}

class PauseCommand implements fc.Command<Model, Real> {
  check = () => true
  run(m: Model, r: Real) {
    const out = feed(r, r.row, { _tag: "Pause", now: r.now }, {})
    if (m.status === "paused") {
      expect(out).toEqual({ asked: [], refusal: null, wrote: false, after: [] })
    } else if (m.status === "sending" || m.status === "scheduled") {
      expect(out).toMatchObject({ refusal: null, wrote: true, after: [] })
      pauseModel(m, null)
    } else {
      expect(out.refusal).toEqual(wrongStatus("pause", m.status))
    }
    agree(m, r)
  }
  toString = () => "Pause"
}

class ResumeCommand implements fc.Command<Model, Real> {
  constructor(readonly warmup: Warmup, readonly plan: PlanFacts) {}
  check = () => true
  run(m: Model, r: Real) {
    const { acknowledged, audience, required } = this.warmup
    const out = feed(r, r.row, { _tag: "Resume", now: r.now, acknowledged }, { warmup: { required, audience }, plan: this.plan })
    if (m.status !== "paused") {
      expect(out.refusal).toEqual(wrongStatus("resume", m.status))
      return agree(m, r)
    }
    const recheck = m.reason === "warmup_acknowledgement_required" || m.confirmed === null
    const checked = recheck ? [{ _tag: "CheckWarmup", at: m.now }] : []
    if (recheck && required && !acknowledged) {
      expect(out).toEqual({ asked: checked, refusal: { _tag: "WarmupUnconfirmed" }, wrote: false, after: [] })
      return agree(m, r)
    }
    if (recheck) m.confirmed = acknowledged ? { at: m.now, audience } : null
    if (m.audience === null) {
      expect(out).toEqual({ asked: checked, refusal: null, wrote: true, after: [] })
      const later = m.sendAt !== null && m.sendAt > m.now
      Object.assign(m, { status: later ? "scheduled" : "sending", reason: null, pausedAt: null, nextRun: later ? m.sendAt : m.now })
    } else if (this.plan.ok) {
      expect(out).toEqual({ asked: [...checked, { _tag: "Plan", at: m.now, from: "next_day" }], refusal: null, wrote: true, after: [{ _tag: "AssignPlan" }] })
      Object.assign(m, { status: "sending", reason: null, pausedAt: null, nextRun: m.now })
    } else {
      expect(out.after).toEqual([{ _tag: "Warn", message: this.plan.reason }])
      pauseModel(m, null)
    }
    agree(m, r)
  }
  toString = () => `Resume(${JSON.stringify(this.warmup)}, ${JSON.stringify(this.plan)})`
}

class EditCommand implements fc.Command<Model, Real> {
  check = () => true
  run(m: Model, r: Real) {
    const out = feed(r, r.row, { _tag: "Edit", now: r.now }, {})
    if ((m.status === "draft" || m.status === "scheduled" || m.status === "paused") && m.audience === null) {
      expect(out).toEqual({ asked: [{ _tag: "CheckShape" }], refusal: null, wrote: true, after: [] })
      m.confirmed = null
    } else {
      expect(out.refusal).toEqual(wrongStatus("edit", m.status))
    }
    agree(m, r)
  }
  toString = () => "Edit"
}

/** The engine looks at the campaign without acting on what it is told. */
class DueCommand implements fc.Command<Model, Real> {
  check = () => true
  run(m: Model, r: Real) {
    const { intents, state } = transition(r.row, { _tag: "Due", now: r.now })
    expect(state).toEqual(r.row)
    const unstarted = m.status === "scheduled" || (m.status === "sending" && m.audience === null)
    expect(intents).toEqual(
      !due(m) ? [] : unstarted ? [{ _tag: "ReadAudience" }] : m.status === "sending" ? [{ _tag: "SendPage" }] : []
    )
    agree(m, r)
  }
  toString = () => "Due"
}

/**
 * The engine starts a due campaign: reads its audience, checks the warm-up, plans. The audience
 * read is the confirmed one grown by `growth` when there is a confirmation (around the 20 % and 250
 * that void it), else `growth` itself.
 */
class StartCommand implements fc.Command<Model, Real> {
  constructor(readonly growth: number, readonly required: boolean, readonly plan: PlanFacts) {}
  check = (m: Readonly<Model>) => due(m) && (m.status === "scheduled" || (m.status === "sending" && m.audience === null))
  run(m: Model, r: Real) {
    expect(transition(r.row, { _tag: "Due", now: r.now }).intents).toEqual([{ _tag: "ReadAudience" }])
    const audience = Math.max(0, (m.confirmed?.audience ?? 0) + this.growth)
    const read: CampaignEvent = { _tag: "AudienceRead", now: r.now, audience, warmupRequired: this.required }
    const out = feed(r, r.row, read, { plan: this.plan })
    expect(out.wrote).toBe(true)
    Object.assign(m, { audience, startedAt: m.now })
    const held = this.required && !(m.confirmed !== null && stillConfirmed(m.confirmed.audience, audience))
    if (held) {
      expect(out).toMatchObject({ asked: [], after: [] })
      pauseModel(m, "warmup_acknowledgement_required")
      m.confirmed = null
    } else if (this.plan.ok) {
      expect(out).toMatchObject({ asked: [{ _tag: "Plan", at: m.now, from: "first_day" }], after: [{ _tag: "AssignPlan" }, { _tag: "SendPage" }] })
      Object.assign(m, { status: "sending", reason: null, pausedAt: null, nextRun: m.now })
    } else {
      expect(out.after).toEqual([{ _tag: "Warn", message: this.plan.reason }])
      pauseModel(m, null)
    }
    agree(m, r)
  }
  toString = () => `Start(${this.growth}, ${this.required}, ${JSON.stringify(this.plan)})`
}

/** The engine begins a round with the campaign as it reads it now. */
class BeginRoundCommand implements fc.Command<Model, Real> {
  check = (m: Readonly<Model>) => !m.round && m.status === "sending" && m.audience !== null && due(m)
  run(m: Model, r: Real) {
    expect(transition(r.row, { _tag: "Due", now: r.now }).intents).toEqual([{ _tag: "SendPage" }])
    r.round = r.row
    m.round = true
    agree(m, r)
  }
  toString = () => "BeginRound"
}

/** The round ends, deciding on the campaign as it read it: whatever the user did meanwhile must stand. */
class FinishRoundCommand implements fc.Command<Model, Real> {
  constructor(
    readonly facts: Omit<RoundFacts, "nextBatchAt" | "inDoubtUntil">,
    readonly nextBatchIn: number | null,
    readonly inDoubtIn: number | null
  ) {}
  check = (m: Readonly<Model>) => m.round
  run(m: Model, r: Real) {
    const round: RoundFacts = {
      ...this.facts,
      nextBatchAt: this.nextBatchIn === null ? null : m.now + this.nextBatchIn,
      inDoubtUntil: this.inDoubtIn === null ? null : m.now + this.inDoubtIn
    }
    const read = r.round!
    const out = feed(r, read, { _tag: "RoundFinished", now: r.now, round }, {})
    r.round = null
    m.round = false
    expect(out).toMatchObject({ asked: [], refusal: null, after: [] })
    // Paused (or moved on) meanwhile: the round's write finds another status and changes nothing.
    if (m.status === "sending") {
      expect(out.wrote).toBe(true)
      if (round.restricted) pauseModel(m, "quality_restricted")
      else if (round.fullPage && round.backoff === null) Object.assign(m, { reason: null, nextRun: m.now })
      else if (round.backoff !== null) {
        Object.assign(m, { reason: round.backoff.throughput ? "throughput" : null, nextRun: m.now + round.backoff.afterMs })
      } else if (round.limited) Object.assign(m, { reason: "chatapp_messaging_limit", nextRun: m.now + MINUTE })
      else if (!round.pendingLeft && round.inDoubtUntil !== null) Object.assign(m, { reason: null, nextRun: round.inDoubtUntil })
      else if (!round.pendingLeft) Object.assign(m, { status: "completed", reason: null, completedAt: m.now, nextRun: null })
      else Object.assign(m, { reason: "daily_batch_limit", nextRun: Math.min(round.nextBatchAt ?? m.now, round.inDoubtUntil ?? Infinity) })
    } else {
      expect(out.wrote).toBe(false)
    }
    agree(m, r)
  }
  toString = () => `FinishRound(${JSON.stringify(this.facts)}, ${this.nextBatchIn}, ${this.inDoubtIn})`
}

class QualityRestrictedCommand implements fc.Command<Model, Real> {
  check = () => true
  run(m: Model, r: Real) {
    const out = feed(r, r.row, { _tag: "QualityRestricted", now: r.now }, {})
    expect(out).toMatchObject({ asked: [], refusal: null, after: [] })
    if (m.status === "sending" || m.status === "scheduled") pauseModel(m, "quality_restricted")
    agree(m, r)
  }
  toString = () => "QualityRestricted"
}

const AdvanceTimeCommand = makeAdvanceTime<Model, Real>(agree)

/** Jumps to the campaign's next run, so rounds and scheduled starts happen on time. */
class AdvanceToNextRunCommand implements fc.Command<Model, Real> {
  check = (m: Readonly<Model>) => m.nextRun !== null && m.now < m.nextRun
  run(m: Model, r: Real) {
    m.now = m.nextRun!
    r.now = m.now
    agree(m, r)
  }
  toString = () => "AdvanceToNextRun"
}

/** Jumps to the campaign's send_at, so a resume can land exactly on it. */
class AdvanceToSendAtCommand implements fc.Command<Model, Real> {
  check = (m: Readonly<Model>) => m.sendAt !== null && m.now < m.sendAt
  run(m: Model, r: Real) {
    m.now = m.sendAt!
    r.now = m.now
    agree(m, r)
  }
  toString = () => "AdvanceToSendAt"
}

const planArb: fc.Arbitrary<PlanFacts> = fc.oneof(
  { weight: 5, arbitrary: fc.constant({ ok: true } as const) },
  { weight: 1, arbitrary: fc.constant({ ok: false, reason: "Channel c: the split needs more than 60 days" } as const) }
)

const roundArb = fc.record({
  restricted: fc.oneof({ weight: 8, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
  backoff: fc.option(fc.record({ afterMs: fc.integer({ min: 1, max: 2 * MINUTE }), throughput: fc.boolean() }), { freq: 3 }),
  limited: fc.boolean(),
  fullPage: fc.boolean(),
  pendingLeft: fc.oneof({ weight: 3, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) })
})

// Rounds need a started campaign: the engine's commands and the jumps to the next run come often
// enough that most runs send, and the user's requests land between and during rounds.
const commands = fc.commands([
  fc.oneof(
    { weight: 3, arbitrary: warmupArb.map((w) => new SendCommand(w)) },
    {
      weight: 2,
      arbitrary: fc.tuple(fc.option(fc.integer({ min: -MINUTE, max: 2 * DAY }), { freq: 6 }), warmupArb)
        .map(([inMs, w]) => new ScheduleCommand(inMs, w))
    },
    { weight: 1, arbitrary: fc.constant(new PauseCommand()) },
    { weight: 2, arbitrary: fc.tuple(warmupArb, planArb).map(([w, plan]) => new ResumeCommand(w, plan)) },
    { weight: 1, arbitrary: fc.constant(new EditCommand()) },
    { weight: 1, arbitrary: fc.constant(new DueCommand()) },
    {
      weight: 4,
      arbitrary: fc.tuple(
        fc.oneof(fc.integer({ min: -100, max: 2_000 }), fc.constantFrom(249, 250, 251, 400, 1_249, 1_250, 1_251)),
        fc.oneof({ weight: 3, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
        planArb
      ).map(([growth, required, plan]) => new StartCommand(growth, required, plan))
    },
    { weight: 6, arbitrary: fc.constant(new BeginRoundCommand()) },
    {
      weight: 6,
      arbitrary: fc.tuple(roundArb, fc.option(fc.integer({ min: 1, max: 2 * DAY })), fc.option(fc.integer({ min: 1, max: 15 * MINUTE }), { freq: 4 }))
        .map(([facts, next, inDoubt]) => new FinishRoundCommand(facts, next, inDoubt))
    },
    { weight: 1, arbitrary: fc.constant(new QualityRestrictedCommand()) },
    { weight: 1, arbitrary: fc.integer({ min: 1, max: DAY }).map((ms) => new AdvanceTimeCommand(ms)) },
    { weight: 3, arbitrary: fc.constant(new AdvanceToNextRunCommand()) },
    { weight: 1, arbitrary: fc.constant(new AdvanceToSendAtCommand()) }
  )
], { size: "medium" })

describe("campaign machine against a model", () => {
  it("agrees on status, throttle_reason, times and the confirmation after any sequence of requests, rounds and restrictions; a round never undoes what the user did meanwhile", () => {
    fc.assert(
      fc.property(commands, (cmds) => {
        const setup = () => ({
          model: {
            now: T0,
            status: "draft" as const,
            reason: null,
            sendAt: null,
            nextRun: null,
            startedAt: null,
            pausedAt: null,
            completedAt: null,
            audience: null,
            confirmed: null,
            round: false
          },
          real: { now: T0, row: draft, round: null }
        })
        fc.modelRun(setup, cmds)
      }),
      { numRuns: 500, seed: SEED }
    )
  })
})
