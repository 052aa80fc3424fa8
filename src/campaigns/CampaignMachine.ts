import { fromMillis } from "../kernel/Timestamp.ts"
import type { CampaignChanges, CampaignRecord, CampaignStatus, ThrottleReason } from "../ports/CampaignStore.ts"
import { acknowledgementHolds } from "./Pacing.ts"

// A campaign's life as one pure function: what the user's requests, the engine's rounds and the
// operator's restrictions do to its status and `throttle_reason`, and what the service or the engine
// must perform for it. Times are epoch milliseconds; the machine reads no clock.

/** The part of a campaign its life reads and writes, times as epoch milliseconds. */
export interface CampaignState {
  readonly status: CampaignStatus
  readonly throttle_reason: ThrottleReason | null
  readonly send_at: number | null
  readonly next_run_at: number | null
  readonly started_at: number | null
  readonly paused_at: number | null
  readonly completed_at: number | null
  /** Recipients once the audience was read; null: not started. */
  readonly audience_size: number | null
  readonly warmup_acknowledged_at: number | null
  readonly warmup_acknowledged_audience: number | null
}

/** What a user asks of a campaign. */
export type CampaignCommand = "send" | "schedule" | "pause" | "resume" | "edit"

/** What a warm-up check found: whether a warming-up number would reach more than 250 at once, and the audience it counted. */
export interface WarmupFacts {
  readonly required: boolean
  readonly audience: number
}

/** Whether the pending recipients could be planned in batches (a split needing more than 60 days cannot). */
export type PlanFacts = { readonly ok: true } | { readonly ok: false; readonly reason: string }

/** What a sending round found, each number's page taken together. */
export interface RoundFacts {
  /** The operator restricted a number for quality or spam (131048): nothing more goes out until the user resumes. */
  readonly restricted: boolean
  /**
   * Recipients were put back to wait: look again after `afterMs`; `throughput` when the number's
   * throughput held them (the operator's 130429, or the number's share of messages per second used up).
   */
  readonly backoff: { readonly afterMs: number; readonly throughput: boolean } | null
  /** A number's 24-hour messaging limit left due recipients unsent. */
  readonly limited: boolean
  /** A number's page was full and all of it went out: more may be due right now. */
  readonly fullPage: boolean
  /** Recipients still pending, whenever planned. */
  readonly pendingLeft: boolean
  /** The earliest batch start after now, if any. */
  readonly nextBatchAt: number | null
  /**
   * Recipients a stopped process had handed to the operator wait for the operator's status to settle
   * them: when to look again (null: none waits). The campaign completes only once none waits.
   */
  readonly inDoubtUntil: number | null
}

/**
 * What can happen to a campaign. A user's request or the engine's start may need facts gathered
 * first: fed without them, the machine answers with the intent that gathers them (`CheckWarmup`,
 * `Plan`), and the same event is fed again with them.
 */
export type CampaignEvent =
  /** `POST /campaigns/{id}/send`; `acknowledged`: `warmup_acknowledged: true` in the body. */
  | { readonly _tag: "Send"; readonly now: number; readonly acknowledged: boolean; readonly warmup?: WarmupFacts }
  /** `POST /campaigns/{id}/schedule`; `send_at` null when it is not a time with a zone offset. */
  | {
    readonly _tag: "Schedule"
    readonly now: number
    readonly send_at: number | null
    readonly acknowledged: boolean
    readonly warmup?: WarmupFacts
  }
  /** `POST /campaigns/{id}/pause`. */
  | { readonly _tag: "Pause"; readonly now: number }
  /** `POST /campaigns/{id}/resume`. */
  | {
    readonly _tag: "Resume"
    readonly now: number
    readonly acknowledged: boolean
    readonly warmup?: WarmupFacts
    readonly plan?: PlanFacts
  }
  /** `PATCH /campaigns/{id}`: the service writes the changed fields with the machine's `Write`. */
  | { readonly _tag: "Edit"; readonly now: number }
  /** The engine claimed the campaign: it is due (or was when claimed). */
  | { readonly _tag: "Due"; readonly now: number }
  /**
   * The engine read the audience (after `ReadAudience`): `audience` reachable recipients, and
   * whether a warming-up number would reach more than 250 of them at once.
   */
  | {
    readonly _tag: "AudienceRead"
    readonly now: number
    readonly audience: number
    readonly warmupRequired: boolean
    readonly plan?: PlanFacts
  }
  /** The engine finished a round (after `SendPage`). */
  | { readonly _tag: "RoundFinished"; readonly now: number; readonly round: RoundFacts }
  /** The operator restricted the campaign's number for quality or spam outside a round. */
  | { readonly _tag: "QualityRestricted"; readonly now: number }

/** Facts gathered for a `CheckWarmup` or `Plan` intent. */
export interface GatheredFacts {
  readonly warmup?: WarmupFacts
  readonly plan?: PlanFacts
}

/** `event` again with the facts gathered for it (only the events that asked for them read them). */
export const withFacts = (event: CampaignEvent, facts: GatheredFacts): CampaignEvent => ({ ...event, ...facts }) as CampaignEvent

/** Why a request is refused. */
export type Refusal =
  /** 409 Conflict: the command does not apply to a campaign in this status (`conflictMessage`). */
  | { readonly _tag: "WrongStatus"; readonly command: CampaignCommand; readonly status: CampaignStatus }
  /** 422 on `body.send_at`. */
  | { readonly _tag: "InvalidSendAt"; readonly message: string }
  /** 409 `warmup_acknowledgement_required`, with the warm-up check that asked for it. */
  | { readonly _tag: "WarmupUnconfirmed" }

/** What the service or the engine performs, in order. */
export type CampaignIntent =
  /** Answer the request with this refusal; nothing changes. */
  | { readonly _tag: "Refuse"; readonly refusal: Refusal }
  /** Check that the campaign (as edited, for an edit) can go out: channels, template, audience; 422 when not. */
  | { readonly _tag: "CheckShape" }
  /** Run the warm-up check as at `at`, then feed the event again with `warmup`. */
  | { readonly _tag: "CheckWarmup"; readonly at: number }
  /** Engine: read the audience into recipients and check the warm-up, then feed `AudienceRead`. */
  | { readonly _tag: "ReadAudience" }
  /**
   * Plan the pending recipients in batches from `at`, each number from its first day or from the
   * day after the last one that handed anybody to the operator, then feed the event again with `plan`.
   */
  | { readonly _tag: "Plan"; readonly at: number; readonly from: "first_day" | "next_day" }
  /**
   * Write the columns of `set` (and `updated_at`) while the status is one of `expected`. A write
   * that finds another status lost to a writer since the read: perform nothing more (roll back an
   * open transaction); a request reads again and is fed again, the engine drops its event.
   */
  | { readonly _tag: "Write"; readonly expected: ReadonlyArray<CampaignStatus>; readonly set: Partial<CampaignState> }
  /** Store the plan gathered for `Plan`: the batches, and each pending recipient's batch. */
  | { readonly _tag: "AssignPlan" }
  /** Engine: hand the due recipients to the operator, a page at a time, then feed `RoundFinished`. */
  | { readonly _tag: "SendPage" }
  /** Log a warning for the host's operator. */
  | { readonly _tag: "Warn"; readonly message: string }

/** The next state and what to perform. */
export interface CampaignTransition {
  readonly state: CampaignState
  readonly intents: ReadonlyArray<CampaignIntent>
}

/** How long recipients held by a number's messaging limit wait before the next look. */
const MESSAGING_LIMIT_RECHECK_MS = 60_000

const ALLOWED: Readonly<Record<CampaignCommand, { readonly from: ReadonlyArray<CampaignStatus>; readonly phrase: string }>> = {
  send: { from: ["draft", "scheduled"], phrase: "only a draft or scheduled campaign can be sent" },
  schedule: { from: ["draft", "scheduled"], phrase: "only a draft or scheduled campaign can be scheduled" },
  pause: { from: ["sending", "scheduled"], phrase: "only a sending or scheduled campaign can be paused" },
  resume: { from: ["paused"], phrase: "only a paused campaign can be resumed" },
  edit: { from: ["draft", "scheduled", "paused"], phrase: "only a campaign that has not started can be changed" }
}

/** The 409's message for a refused command. */
export const conflictMessage = (id: string, refusal: Extract<Refusal, { readonly _tag: "WrongStatus" }>): string =>
  `Campaign ${id} is ${refusal.status}; ${ALLOWED[refusal.command].phrase}`

/** A campaign as stored, as the machine sees it. */
export const stateOf = (campaign: CampaignRecord): CampaignState => {
  const ms = (at: string | null) => (at === null ? null : Date.parse(at))
  return {
    status: campaign.status,
    throttle_reason: campaign.throttle_reason,
    send_at: ms(campaign.send_at),
    next_run_at: ms(campaign.next_run_at),
    started_at: ms(campaign.started_at),
    paused_at: ms(campaign.paused_at),
    completed_at: ms(campaign.completed_at),
    audience_size: campaign.audience_size,
    warmup_acknowledged_at: ms(campaign.warmup_acknowledged_at),
    warmup_acknowledged_audience: campaign.warmup_acknowledged_audience
  }
}

const TIME_COLUMNS = ["send_at", "next_run_at", "started_at", "paused_at", "completed_at", "warmup_acknowledged_at"] as const

/** A `Write`'s columns as stored (times as timestamps). */
export const columnsOf = (set: Partial<CampaignState>): CampaignChanges => {
  const columns: Record<string, unknown> = { ...set }
  for (const key of TIME_COLUMNS) {
    const value = set[key]
    if (value !== undefined) columns[key] = value === null ? null : fromMillis(value)
  }
  return columns as CampaignChanges
}

const refuse = (state: CampaignState, refusal: Refusal): CampaignTransition => ({
  state,
  intents: [{ _tag: "Refuse", refusal }]
})

const wrongStatus = (state: CampaignState, command: CampaignCommand): CampaignTransition | undefined =>
  ALLOWED[command].from.includes(state.status) && !(command === "edit" && state.audience_size !== null)
    ? undefined
    : refuse(state, { _tag: "WrongStatus", command, status: state.status })

/** Writes `set` under the status read, then performs `after`. */
const write = (state: CampaignState, set: Partial<CampaignState>, after: ReadonlyArray<CampaignIntent> = []): CampaignTransition => ({
  state: { ...state, ...set },
  intents: [{ _tag: "Write", expected: [state.status], set }, ...after]
})

const unchanged = (state: CampaignState): CampaignTransition => ({ state, intents: [] })

/** Stopped until the user resumes: nothing due. */
const paused = (now: number, throttle_reason: ThrottleReason | null) =>
  ({ status: "paused", throttle_reason, paused_at: now, next_run_at: null }) as const

/** A confirmation as given with this request, or none. */
const confirmation = (acknowledged: boolean, at: number, warmup: WarmupFacts) =>
  acknowledged
    ? { warmup_acknowledged_at: at, warmup_acknowledged_audience: warmup.audience }
    : { warmup_acknowledged_at: null, warmup_acknowledged_audience: null }

const due = (state: CampaignState, now: number) => state.next_run_at !== null && state.next_run_at <= now

// Sending or scheduling: refused while a warming-up number would reach more than 250 at once
// unconfirmed; a confirmation is kept with the audience it was given for.
const warmupRefused = (warmup: WarmupFacts, acknowledged: boolean) => warmup.required && !acknowledged

/**
 * The pure transition. A request the campaign's status does not allow is refused (409) and changes
 * nothing; an engine event the campaign moved past meanwhile (paused, edited) changes nothing; every
 * change is one `Write` under the status it was decided on.
 */
export const transition = (state: CampaignState, event: CampaignEvent): CampaignTransition => {
  switch (event._tag) {
    case "Send": {
      const refused = wrongStatus(state, "send")
      if (refused !== undefined) return refused
      if (event.warmup === undefined) return { state, intents: [{ _tag: "CheckShape" }, { _tag: "CheckWarmup", at: event.now }] }
      if (warmupRefused(event.warmup, event.acknowledged)) return refuse(state, { _tag: "WarmupUnconfirmed" })
      return write(state, {
        ...confirmation(event.acknowledged, event.now, event.warmup),
        status: "sending",
        send_at: null,
        next_run_at: event.now
      })
    }
    case "Schedule": {
      const refused = wrongStatus(state, "schedule")
      if (refused !== undefined) return refused
      if (event.send_at === null) {
        return refuse(state, { _tag: "InvalidSendAt", message: "Must be an ISO-8601 time with a time zone offset" })
      }
      if (event.send_at <= event.now) return refuse(state, { _tag: "InvalidSendAt", message: "Must be in the future" })
      // The warm-up as it will be when the campaign goes out.
      if (event.warmup === undefined) return { state, intents: [{ _tag: "CheckShape" }, { _tag: "CheckWarmup", at: event.send_at }] }
      if (warmupRefused(event.warmup, event.acknowledged)) return refuse(state, { _tag: "WarmupUnconfirmed" })
      return write(state, {
        ...confirmation(event.acknowledged, event.send_at, event.warmup),
        status: "scheduled",
        send_at: event.send_at,
        next_run_at: event.send_at
      })
    }
    case "Pause":
      // Pausing twice changes nothing (a hold keeps its reason).
      if (state.status === "paused") return unchanged(state)
      return wrongStatus(state, "pause") ?? write(state, paused(event.now, null))
    case "Resume": {
      const refused = wrongStatus(state, "resume")
      if (refused !== undefined) return refused
      // A campaign held for warm-up, or never confirmed, is checked again now; a confirmation still standing is kept.
      const recheck = state.throttle_reason === "warmup_acknowledgement_required" || state.warmup_acknowledged_at === null
      if (recheck && event.warmup === undefined) return { state, intents: [{ _tag: "CheckWarmup", at: event.now }] }
      if (recheck && warmupRefused(event.warmup!, event.acknowledged)) return refuse(state, { _tag: "WarmupUnconfirmed" })
      const confirmed = recheck ? confirmation(event.acknowledged, event.now, event.warmup!) : {}
      if (state.audience_size === null) {
        // Never started: scheduled again, or sent now when its time has passed.
        const later = state.send_at !== null && state.send_at > event.now
        return write(state, {
          ...confirmed,
          status: later ? "scheduled" : "sending",
          throttle_reason: null,
          paused_at: null,
          next_run_at: later ? state.send_at : event.now
        })
      }
      // Started: the remaining recipients are planned again from now, each number from its next day's batch.
      if (event.plan === undefined) return { state, intents: [{ _tag: "Plan", at: event.now, from: "next_day" }] }
      if (!event.plan.ok) {
        return write(state, { ...confirmed, ...paused(event.now, null) }, [{ _tag: "Warn", message: event.plan.reason }])
      }
      return write(state, { ...confirmed, status: "sending", throttle_reason: null, paused_at: null, next_run_at: event.now }, [
        { _tag: "AssignPlan" }
      ])
    }
    case "Edit": {
      const refused = wrongStatus(state, "edit")
      if (refused !== undefined) return refused
      // What was confirmed is no longer what will be sent.
      const reset = write(state, { warmup_acknowledged_at: null, warmup_acknowledged_audience: null })
      return { state: reset.state, intents: [{ _tag: "CheckShape" }, ...reset.intents] }
    }
    case "Due":
      if (!due(state, event.now)) return unchanged(state)
      if (state.status === "scheduled" || (state.status === "sending" && state.audience_size === null)) {
        return { state, intents: [{ _tag: "ReadAudience" }] }
      }
      return state.status === "sending" ? { state, intents: [{ _tag: "SendPage" }] } : unchanged(state)
    case "AudienceRead": {
      if (state.status !== "scheduled" && !(state.status === "sending" && state.audience_size === null)) return unchanged(state)
      const started = { audience_size: event.audience, started_at: event.now }
      // Held when a confirmation is needed and was never given, was reset, or no longer holds for the audience read.
      const confirmed = state.warmup_acknowledged_at !== null &&
        acknowledgementHolds(state.warmup_acknowledged_audience ?? 0, event.audience)
      if (event.warmupRequired && !confirmed) {
        return write(state, {
          ...started,
          ...paused(event.now, "warmup_acknowledgement_required"),
          warmup_acknowledged_at: null,
          warmup_acknowledged_audience: null
        })
      }
      if (event.plan === undefined) return { state, intents: [{ _tag: "Plan", at: event.now, from: "first_day" }] }
      if (!event.plan.ok) return write(state, { ...started, ...paused(event.now, null) }, [{ _tag: "Warn", message: event.plan.reason }])
      return write(state, { ...started, status: "sending", throttle_reason: null, paused_at: null, next_run_at: event.now }, [
        { _tag: "AssignPlan" },
        { _tag: "SendPage" }
      ])
    }
    case "RoundFinished": {
      // Paused (or otherwise moved) during the round: what was handed is recorded; nothing more is planned.
      if (state.status !== "sending") return unchanged(state)
      const { round } = event
      if (round.restricted) return write(state, paused(event.now, "quality_restricted"))
      if (round.fullPage && round.backoff === null) return write(state, { throttle_reason: null, next_run_at: event.now })
      if (round.backoff !== null) {
        return write(state, {
          throttle_reason: round.backoff.throughput ? "throughput" : null,
          next_run_at: event.now + round.backoff.afterMs
        })
      }
      if (round.limited) {
        return write(state, { throttle_reason: "chatapp_messaging_limit", next_run_at: event.now + MESSAGING_LIMIT_RECHECK_MS })
      }
      if (!round.pendingLeft) {
        if (round.inDoubtUntil !== null) return write(state, { throttle_reason: null, next_run_at: round.inDoubtUntil })
        return write(state, { status: "completed", throttle_reason: null, completed_at: event.now, next_run_at: null })
      }
      const nextBatch = round.nextBatchAt ?? event.now
      return write(state, {
        throttle_reason: "daily_batch_limit",
        next_run_at: round.inDoubtUntil === null ? nextBatch : Math.min(nextBatch, round.inDoubtUntil)
      })
    }
    case "QualityRestricted":
      // A campaign the user paused, or one not going out, stays as it is.
      return state.status === "sending" || state.status === "scheduled"
        ? write(state, paused(event.now, "quality_restricted"))
        : unchanged(state)
  }
}
