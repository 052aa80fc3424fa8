import { describe, expect, it } from "vitest"
import {
  type CampaignEvent,
  type CampaignState,
  columnsOf,
  conflictMessage,
  type RoundFacts,
  stateOf,
  transition,
  withFacts
} from "../../../src/campaigns/CampaignMachine.ts"
import type { CampaignStatus } from "../../../src/ports/CampaignStore.ts"
import { campaignRecord } from "../../conformance/Fixtures.ts"

const NOW = Date.parse("2026-11-22T12:00:00.000Z")
const MINUTE = 60_000
const HOUR = 60 * MINUTE
const DAY = 24 * HOUR

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
const scheduled: CampaignState = { ...draft, status: "scheduled", send_at: NOW + HOUR, next_run_at: NOW + HOUR }
/** Started an hour ago, waiting for its next batch tomorrow. */
const sending: CampaignState = {
  ...draft,
  status: "sending",
  throttle_reason: "daily_batch_limit",
  next_run_at: NOW + DAY,
  started_at: NOW - HOUR,
  audience_size: 600
}
const pausedByUser: CampaignState = { ...sending, status: "paused", throttle_reason: null, next_run_at: null, paused_at: NOW - MINUTE }
const completed: CampaignState = { ...sending, status: "completed", throttle_reason: null, next_run_at: null, completed_at: NOW - MINUTE }
const STATES: Readonly<Record<CampaignStatus, CampaignState>> = { draft, scheduled, sending, paused: pausedByUser, completed }

const noWarmup = { required: false, audience: 300 }
const write = (state: CampaignState, set: Partial<CampaignState>) => ({
  state: { ...state, ...set },
  intents: [{ _tag: "Write", expected: [state.status], set }]
})
const unchanged = (state: CampaignState) => ({ state, intents: [] })
const refused = (state: CampaignState, refusal: object) => ({ state, intents: [{ _tag: "Refuse", refusal }] })

const round = (facts: Partial<RoundFacts> = {}): CampaignEvent => ({
  _tag: "RoundFinished",
  now: NOW,
  round: { restricted: false, backoff: null, limited: false, fullPage: false, pendingLeft: true, nextBatchAt: NOW + DAY, inDoubtUntil: null, ...facts }
})

describe("the campaign machine's refusals", () => {
  it("answers each request in a status that does not allow it with the 409's words, and changes nothing", () => {
    const requests: ReadonlyArray<[CampaignEvent, ReadonlyArray<CampaignStatus>, string]> = [
      [{ _tag: "Send", now: NOW, acknowledged: true }, ["sending", "paused", "completed"], "only a draft or scheduled campaign can be sent"],
      [
        { _tag: "Schedule", now: NOW, send_at: NOW + HOUR, acknowledged: true },
        ["sending", "paused", "completed"],
        "only a draft or scheduled campaign can be scheduled"
      ],
      [{ _tag: "Pause", now: NOW }, ["draft", "completed"], "only a sending or scheduled campaign can be paused"],
      [{ _tag: "Resume", now: NOW, acknowledged: true }, ["draft", "scheduled", "sending", "completed"], "only a paused campaign can be resumed"],
      [{ _tag: "Edit", now: NOW }, ["sending", "paused", "completed"], "only a campaign that has not started can be changed"]
    ]
    for (const [event, statuses, phrase] of requests) {
      for (const status of statuses) {
        const { intents, state } = transition(STATES[status], event)
        expect(state).toEqual(STATES[status])
        expect(intents).toHaveLength(1)
        const [intent] = intents
        if (intent?._tag !== "Refuse" || intent.refusal._tag !== "WrongStatus") throw new Error(`${event._tag} on ${status}: ${JSON.stringify(intents)}`)
        expect(conflictMessage("c-1", intent.refusal)).toBe(`Campaign c-1 is ${status}; ${phrase}`)
      }
    }
  })
})

describe("sending now", () => {
  it("asks for the shape and warm-up checks as of now, then sends a draft now, keeping the confirmation with its audience", () => {
    const send: CampaignEvent = { _tag: "Send", now: NOW, acknowledged: true }
    expect(transition(draft, send)).toEqual({ state: draft, intents: [{ _tag: "CheckShape" }, { _tag: "CheckWarmup", at: NOW }] })
    expect(transition(draft, withFacts(send, { warmup: { required: true, audience: 600 } }))).toEqual(write(draft, {
      warmup_acknowledged_at: NOW,
      warmup_acknowledged_audience: 600,
      status: "sending",
      send_at: null,
      next_run_at: NOW
    }))
  })

  it("sends a scheduled campaign now, dropping its send_at; without a confirmation it keeps none", () => {
    const send: CampaignEvent = { _tag: "Send", now: NOW, acknowledged: false, warmup: noWarmup }
    expect(transition({ ...scheduled, warmup_acknowledged_at: NOW - HOUR, warmup_acknowledged_audience: 300 }, send).state).toMatchObject({
      status: "sending",
      send_at: null,
      next_run_at: NOW,
      warmup_acknowledged_at: null,
      warmup_acknowledged_audience: null
    })
  })

  it("is refused while a warming-up number would reach more than 250 at once unconfirmed", () => {
    expect(transition(draft, { _tag: "Send", now: NOW, acknowledged: false, warmup: { required: true, audience: 600 } }))
      .toEqual(refused(draft, { _tag: "WarmupUnconfirmed" }))
  })
})

describe("scheduling", () => {
  const schedule = (send_at: number | null, acknowledged = true): CampaignEvent => ({ _tag: "Schedule", now: NOW, send_at, acknowledged })

  it("refuses a send_at without a zone offset, and one not in the future, before any check", () => {
    expect(transition(draft, schedule(null))).toEqual(refused(draft, { _tag: "InvalidSendAt", message: "Must be an ISO-8601 time with a time zone offset" }))
    expect(transition(draft, schedule(NOW))).toEqual(refused(draft, { _tag: "InvalidSendAt", message: "Must be in the future" }))
    expect(transition(draft, schedule(NOW - 1))).toEqual(refused(draft, { _tag: "InvalidSendAt", message: "Must be in the future" }))
  })

  it("checks the warm-up as it will be at send_at, then schedules (a scheduled one again), the confirmation dated send_at", () => {
    const at = NOW + DAY
    expect(transition(scheduled, schedule(at))).toEqual({ state: scheduled, intents: [{ _tag: "CheckShape" }, { _tag: "CheckWarmup", at }] })
    expect(transition(scheduled, withFacts(schedule(at), { warmup: { required: true, audience: 400 } }))).toEqual(write(scheduled, {
      warmup_acknowledged_at: at,
      warmup_acknowledged_audience: 400,
      status: "scheduled",
      send_at: at,
      next_run_at: at
    }))
    expect(transition(draft, withFacts(schedule(at, false), { warmup: { required: true, audience: 400 } })))
      .toEqual(refused(draft, { _tag: "WarmupUnconfirmed" }))
  })
})

describe("pausing", () => {
  it("pauses a sending or scheduled campaign: nothing due, no reason", () => {
    for (const state of [sending, scheduled]) {
      expect(transition(state, { _tag: "Pause", now: NOW })).toEqual(write(state, {
        status: "paused",
        throttle_reason: null,
        paused_at: NOW,
        next_run_at: null
      }))
    }
  })

  it("changes nothing on a paused campaign, a hold keeping its reason", () => {
    const held: CampaignState = { ...pausedByUser, throttle_reason: "warmup_acknowledgement_required" }
    expect(transition(held, { _tag: "Pause", now: NOW })).toEqual(unchanged(held))
    expect(transition(pausedByUser, { _tag: "Pause", now: NOW })).toEqual(unchanged(pausedByUser))
  })
})

describe("resuming", () => {
  const resume = (acknowledged: boolean): CampaignEvent => ({ _tag: "Resume", now: NOW, acknowledged })
  const confirmed: CampaignState = { ...pausedByUser, warmup_acknowledged_at: NOW - DAY, warmup_acknowledged_audience: 600 }

  it("plans a started campaign again from now, each number from its next day, and sends; a standing confirmation is kept", () => {
    expect(transition(confirmed, resume(false))).toEqual({ state: confirmed, intents: [{ _tag: "Plan", at: NOW, from: "next_day" }] })
    const resumed = transition(confirmed, withFacts(resume(false), { plan: { ok: true } }))
    expect(resumed.state).toEqual({ ...confirmed, status: "sending", throttle_reason: null, paused_at: null, next_run_at: NOW })
    expect(resumed.intents).toEqual([
      { _tag: "Write", expected: ["paused"], set: { status: "sending", throttle_reason: null, paused_at: null, next_run_at: NOW } },
      { _tag: "AssignPlan" }
    ])
  })

  it("lifts a quality restriction", () => {
    const restricted: CampaignState = { ...confirmed, throttle_reason: "quality_restricted" }
    expect(transition(restricted, withFacts(resume(false), { plan: { ok: true } })).state).toMatchObject({ status: "sending", throttle_reason: null })
  })

  it("stays paused with a warning when the rest cannot be planned", () => {
    expect(transition(confirmed, withFacts(resume(false), { plan: { ok: false, reason: "too long" } }))).toEqual({
      state: { ...confirmed, paused_at: NOW },
      intents: [
        { _tag: "Write", expected: ["paused"], set: { status: "paused", throttle_reason: null, paused_at: NOW, next_run_at: null } },
        { _tag: "Warn", message: "too long" }
      ]
    })
  })

  it("checks the warm-up again for a campaign held for it or never confirmed: refused unconfirmed, confirmed as of now", () => {
    const held: CampaignState = { ...pausedByUser, throttle_reason: "warmup_acknowledgement_required" }
    for (const state of [held, pausedByUser]) {
      expect(transition(state, resume(true))).toEqual({ state, intents: [{ _tag: "CheckWarmup", at: NOW }] })
      expect(transition(state, withFacts(resume(false), { warmup: { required: true, audience: 700 } })))
        .toEqual(refused(state, { _tag: "WarmupUnconfirmed" }))
      const checked = withFacts(resume(true), { warmup: { required: true, audience: 700 } })
      expect(transition(state, checked)).toEqual({ state, intents: [{ _tag: "Plan", at: NOW, from: "next_day" }] })
      expect(transition(state, withFacts(checked, { plan: { ok: true } })).state).toMatchObject({
        status: "sending",
        throttle_reason: null,
        warmup_acknowledged_at: NOW,
        warmup_acknowledged_audience: 700
      })
    }
  })

  it("schedules a never-started campaign again while its send_at is ahead, else sends it now", () => {
    const neverStarted: CampaignState = { ...scheduled, status: "paused", next_run_at: null, paused_at: NOW - MINUTE }
    const event = withFacts(resume(false), { warmup: noWarmup })
    expect(transition(neverStarted, event)).toEqual(write(neverStarted, {
      warmup_acknowledged_at: null,
      warmup_acknowledged_audience: null,
      status: "scheduled",
      throttle_reason: null,
      paused_at: null,
      next_run_at: NOW + HOUR
    }))
    const due: CampaignState = { ...neverStarted, send_at: NOW }
    expect(transition(due, event).state).toMatchObject({ status: "sending", next_run_at: NOW, paused_at: null })
    const sentNow: CampaignState = { ...neverStarted, send_at: null }
    expect(transition(sentNow, event).state).toMatchObject({ status: "sending", next_run_at: NOW })
  })
})

describe("editing", () => {
  it("resets the warm-up confirmation of a campaign that has not started, after the shape check", () => {
    const confirmed: CampaignState = { ...scheduled, warmup_acknowledged_at: NOW - HOUR, warmup_acknowledged_audience: 300 }
    const neverStarted: CampaignState = { ...confirmed, status: "paused", next_run_at: null, paused_at: NOW - MINUTE }
    for (const state of [draft, confirmed, neverStarted]) {
      const reset = write(state, { warmup_acknowledged_at: null, warmup_acknowledged_audience: null })
      expect(transition(state, { _tag: "Edit", now: NOW })).toEqual({ state: reset.state, intents: [{ _tag: "CheckShape" }, ...reset.intents] })
    }
  })
})

describe("the engine's look at a claimed campaign", () => {
  it("reads the audience of a due scheduled campaign, or of one sent but not started; sends a page of a started one", () => {
    const due = { _tag: "Due", now: NOW + HOUR } as const
    expect(transition(scheduled, due)).toEqual({ state: scheduled, intents: [{ _tag: "ReadAudience" }] })
    const sent: CampaignState = { ...draft, status: "sending", next_run_at: NOW }
    expect(transition(sent, { _tag: "Due", now: NOW })).toEqual({ state: sent, intents: [{ _tag: "ReadAudience" }] })
    expect(transition(sending, { _tag: "Due", now: NOW + DAY })).toEqual({ state: sending, intents: [{ _tag: "SendPage" }] })
  })

  it("does nothing with a campaign not due yet, or not going out", () => {
    expect(transition(scheduled, { _tag: "Due", now: NOW + HOUR - 1 })).toEqual(unchanged(scheduled))
    expect(transition(sending, { _tag: "Due", now: NOW })).toEqual(unchanged(sending))
    for (const state of [draft, pausedByUser, completed]) expect(transition(state, { _tag: "Due", now: NOW + DAY })).toEqual(unchanged(state))
  })
})

describe("the audience read at the start", () => {
  const read = (audience: number, warmupRequired: boolean): CampaignEvent => ({ _tag: "AudienceRead", now: NOW, audience, warmupRequired })
  const started = { audience_size: 550, started_at: NOW }
  const held = {
    ...started,
    status: "paused",
    throttle_reason: "warmup_acknowledgement_required",
    paused_at: NOW,
    next_run_at: null,
    warmup_acknowledged_at: null,
    warmup_acknowledged_audience: null
  } as const

  it("holds the campaign (paused, warmup_acknowledgement_required) when a confirmation is needed and was never given", () => {
    expect(transition(scheduled, read(550, true))).toEqual(write(scheduled, held))
  })

  it("holds it when the audience grew by more than 20 % and at least 250 since the confirmation; a smaller growth keeps it", () => {
    const confirmedFor = (audience: number): CampaignState => ({ ...scheduled, warmup_acknowledged_at: NOW - HOUR, warmup_acknowledged_audience: audience })
    // 300 → 550: +250, 83 %.
    expect(transition(confirmedFor(300), read(550, true))).toEqual(write(confirmedFor(300), held))
    // 301 → 550: +249.
    expect(transition(confirmedFor(301), read(550, true)).intents).toEqual([{ _tag: "Plan", at: NOW, from: "first_day" }])
    // 1,250 → 1,500: +250, exactly 20 %.
    expect(transition(confirmedFor(1_250), read(1_500, true)).intents).toEqual([{ _tag: "Plan", at: NOW, from: "first_day" }])
    // 1,249 → 1,500: +251, above 20 %.
    expect(transition(confirmedFor(1_249), read(1_500, true)).state.status).toBe("paused")
  })

  it("plans from the first day, then sends: the campaign starts and its first page goes out", () => {
    expect(transition(scheduled, read(550, false))).toEqual({ state: scheduled, intents: [{ _tag: "Plan", at: NOW, from: "first_day" }] })
    const set = { ...started, status: "sending", throttle_reason: null, paused_at: null, next_run_at: NOW } as const
    expect(transition(scheduled, withFacts(read(550, false), { plan: { ok: true } }))).toEqual({
      state: { ...scheduled, ...set },
      intents: [{ _tag: "Write", expected: ["scheduled"], set }, { _tag: "AssignPlan" }, { _tag: "SendPage" }]
    })
  })

  it("pauses with a warning a campaign whose split cannot be planned", () => {
    const sent: CampaignState = { ...draft, status: "sending", next_run_at: NOW }
    const set = { ...started, status: "paused", throttle_reason: null, paused_at: NOW, next_run_at: null } as const
    expect(transition(sent, withFacts(read(550, false), { plan: { ok: false, reason: "more than 60 days" } }))).toEqual({
      state: { ...sent, ...set },
      intents: [{ _tag: "Write", expected: ["sending"], set }, { _tag: "Warn", message: "more than 60 days" }]
    })
  })

  it("changes nothing on a campaign paused or started meanwhile", () => {
    const neverStarted: CampaignState = { ...scheduled, status: "paused", next_run_at: null, paused_at: NOW }
    for (const state of [neverStarted, sending, draft, completed]) expect(transition(state, read(550, false))).toEqual(unchanged(state))
  })
})

describe("a round's end", () => {
  it("pauses the campaign when the operator restricted a number, whatever else happened", () => {
    expect(transition(sending, round({ restricted: true, fullPage: true, backoff: { afterMs: 1_000, throughput: true }, limited: true })))
      .toEqual(write(sending, { status: "paused", throttle_reason: "quality_restricted", paused_at: NOW, next_run_at: null }))
  })

  it("goes on at once after a full page with nothing to wait for", () => {
    expect(transition(sending, round({ fullPage: true, limited: true }))).toEqual(write(sending, { throttle_reason: null, next_run_at: NOW }))
  })

  it("backs off as asked: held by the number's throughput, or for a failure of the moment", () => {
    expect(transition(sending, round({ fullPage: true, backoff: { afterMs: 1_000, throughput: true }, limited: true })))
      .toEqual(write(sending, { throttle_reason: "throughput", next_run_at: NOW + 1_000 }))
    expect(transition(sending, round({ backoff: { afterMs: 30_000, throughput: false } })))
      .toEqual(write(sending, { throttle_reason: null, next_run_at: NOW + 30_000 }))
  })

  it("looks again in a minute when the messaging limit held recipients back", () => {
    expect(transition(sending, round({ limited: true }))).toEqual(write(sending, { throttle_reason: "chatapp_messaging_limit", next_run_at: NOW + MINUTE }))
  })

  it("completes the campaign once nobody is pending", () => {
    expect(transition(sending, round({ pendingLeft: false }))).toEqual(write(sending, {
      status: "completed",
      throttle_reason: null,
      completed_at: NOW,
      next_run_at: null
    }))
  })

  it("stays sending while recipients a stopped process handed over wait for the operator's status, looking again when asked", () => {
    expect(transition(sending, round({ pendingLeft: false, inDoubtUntil: NOW + 10_000 })))
      .toEqual(write(sending, { throttle_reason: null, next_run_at: NOW + 10_000 }))
    // A batch ahead waits no longer than the look at those recipients, nor that look longer than the batch.
    expect(transition(sending, round({ nextBatchAt: NOW + DAY, inDoubtUntil: NOW + 10_000 })))
      .toEqual(write(sending, { throttle_reason: "daily_batch_limit", next_run_at: NOW + 10_000 }))
    expect(transition(sending, round({ nextBatchAt: NOW + 5_000, inDoubtUntil: NOW + 10_000 })))
      .toEqual(write(sending, { throttle_reason: "daily_batch_limit", next_run_at: NOW + 5_000 }))
  })

  it("waits for the next batch's start, or looks again now when none is ahead", () => {
    expect(transition(sending, round({ nextBatchAt: NOW + 2 * DAY }))).toEqual(write(sending, { throttle_reason: "daily_batch_limit", next_run_at: NOW + 2 * DAY }))
    expect(transition(sending, round({ nextBatchAt: null }))).toEqual(write(sending, { throttle_reason: "daily_batch_limit", next_run_at: NOW }))
  })

  it("changes nothing once the campaign is no longer sending: a pause during the round stands", () => {
    for (const state of [pausedByUser, completed, scheduled]) expect(transition(state, round({ pendingLeft: false }))).toEqual(unchanged(state))
  })

  it("writes under the status the round read, so a store refuses it once the user paused meanwhile", () => {
    const { intents } = transition(sending, round({ fullPage: true }))
    expect(intents).toEqual([{ _tag: "Write", expected: ["sending"], set: { throttle_reason: null, next_run_at: NOW } }])
  })
})

describe("the operator's quality restriction", () => {
  it("pauses a sending or scheduled campaign with the reason; leaves any other as it is", () => {
    const restricted = { status: "paused", throttle_reason: "quality_restricted", paused_at: NOW, next_run_at: null } as const
    expect(transition(sending, { _tag: "QualityRestricted", now: NOW })).toEqual(write(sending, restricted))
    expect(transition(scheduled, { _tag: "QualityRestricted", now: NOW })).toEqual(write(scheduled, restricted))
    for (const state of [draft, pausedByUser, completed]) expect(transition(state, { _tag: "QualityRestricted", now: NOW })).toEqual(unchanged(state))
  })
})

describe("the stored campaign and the machine's state", () => {
  it("reads times as milliseconds, and writes a Write's times back as stored timestamps", () => {
    const record = campaignRecord("t-1", {
      status: "sending",
      throttle_reason: "daily_batch_limit",
      send_at: "2026-11-22T11:00:00.000Z",
      next_run_at: "2026-11-23T09:30:00.000Z",
      started_at: "2026-11-22T11:00:00.001Z",
      audience_size: 600,
      warmup_acknowledged_at: "2026-11-22T10:00:00.000Z",
      warmup_acknowledged_audience: 550
    })
    const state = stateOf(record)
    expect(state).toEqual({
      status: "sending",
      throttle_reason: "daily_batch_limit",
      send_at: Date.parse("2026-11-22T11:00:00.000Z"),
      next_run_at: Date.parse("2026-11-23T09:30:00.000Z"),
      started_at: Date.parse("2026-11-22T11:00:00.001Z"),
      paused_at: null,
      completed_at: null,
      audience_size: 600,
      warmup_acknowledged_at: Date.parse("2026-11-22T10:00:00.000Z"),
      warmup_acknowledged_audience: 550
    })
    expect({ ...record, ...columnsOf(state) }).toEqual(record)
    expect(columnsOf({ status: "paused", paused_at: NOW, next_run_at: null })).toEqual({
      status: "paused",
      paused_at: "2026-11-22T12:00:00.000Z",
      next_run_at: null
    })
  })
})
