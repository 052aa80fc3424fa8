import { Clock, Effect, Option } from "effect"
import type { SendingLimitService } from "../channels/SendingLimitService.ts"
import type { TemplateService } from "../templates/TemplateService.ts"
import { inJobSpan } from "../kernel/TraceContext.ts"
import type { BackgroundJob } from "../kernel/BackgroundWork.ts"
import { newId } from "../kernel/Id.ts"
import type { StorageError } from "../kernel/StorageError.ts"
import { fromMillis } from "../kernel/Timestamp.ts"
import type { CampaignRecipientRecord, CampaignRecord, ThrottleReason } from "../ports/CampaignStore.ts"
import type { Transactor } from "../ports/Transactor.ts"
import { type AudienceDeps, assignBatches, materialize, planBatches } from "./CampaignAudience.ts"
import { limitOf } from "./CampaignWarmup.ts"
import type { WarmupCheck } from "./Campaign.ts"
import { acknowledgementHolds } from "./Pacing.ts"

/** How the campaign engine works. */
export interface CampaignEngineSettings {
  /** Campaigns one claim takes. */
  readonly batchSize: number
  /** How long a claim holds a campaign. */
  readonly leaseSeconds: number
  /** Recipients handed to the operator per campaign and round. */
  readonly sendPage: number
  /** Sends in flight at once per campaign. */
  readonly concurrency: number
}

/** The defaults: 4 campaigns a claim, held 5 minutes, 200 recipients a round, 8 sends at once. */
export const DEFAULT_CAMPAIGN_ENGINE: CampaignEngineSettings = { batchSize: 4, leaseSeconds: 300, sendPage: 200, concurrency: 8 }

// The operator's code for a number restricted for quality or spam: the campaign pauses.
const QUALITY_RESTRICTED_CODE = 131048
const WINDOW_MS = 24 * 60 * 60 * 1000
const RETRY_RATE_LIMITED_MS = 30_000
const RETRY_LIMIT_MS = 60_000

/** What the engine needs. */
export interface EngineDeps extends AudienceDeps {
  readonly transactor: Transactor["Service"]
  readonly templates: TemplateService["Service"]
  readonly limits: SendingLimitService["Service"]
  readonly warmup: (
    campaign: CampaignRecord,
    audienceOf: (index: number) => number,
    now: number
  ) => Effect.Effect<WarmupCheck, unknown>
  /** The template each number sends (by index of `channel_ids`): the campaign's, or its twin adopted there. */
  readonly templateFor: (campaign: CampaignRecord) => Effect.Effect<ReadonlyArray<string | null>, StorageError>
}

type SendOutcome = "sent" | "failed" | "retry" | "restricted"

/**
 * Plans the batches of a started campaign from `startMs` and sets it sending: each number's
 * remaining recipients in `seq` order, from `startDays` (after a resume, the next day's index).
 */
export const launch = (deps: EngineDeps, campaign: CampaignRecord, startMs: number, startDays: ReadonlyArray<number>) =>
  Effect.gen(function*() {
    const { store } = deps
    const counts = campaign.channel_ids.map(() => 0)
    const index = new Map(campaign.channel_ids.map((id, i) => [id, i]))
    let after: number | null = null
    for (;;) {
      const page: ReadonlyArray<CampaignRecipientRecord> = yield* store.recipientsIn(campaign.tenant_id, campaign.id, "pending", {
        plannedBy: null,
        afterSeq: after,
        limit: 1000
      })
      if (page.length === 0) break
      for (const r of page) {
        const i = r.channel_id === null ? undefined : index.get(r.channel_id)
        if (i !== undefined) counts[i]!++
      }
      after = page.at(-1)!.seq
    }
    const limits = yield* Effect.forEach(campaign.channel_ids, (id) => Effect.map(limitOf(deps.limits, campaign.tenant_id, id), (l) => l.limit))
    const planned = planBatches(campaign, counts, limits, startMs, startDays)
    const at = fromMillis(startMs)
    if (!planned.ok) {
      yield* Effect.logWarning(`campaign ${campaign.id} cannot be planned: ${planned.reason}`)
      const paused: CampaignRecord = { ...campaign, status: "paused", throttle_reason: null, paused_at: at, next_run_at: null, updated_at: at }
      yield* store.update(campaign.tenant_id, paused)
      return paused
    }
    yield* assignBatches(store, campaign, planned.plans)
    const sending: CampaignRecord = {
      ...campaign,
      status: "sending",
      throttle_reason: null,
      started_at: campaign.started_at ?? at,
      paused_at: null,
      next_run_at: at,
      updated_at: at
    }
    yield* store.update(campaign.tenant_id, sending)
    return sending
  })

/**
 * The background job that sends campaigns: claims due ones with a lease (processes share them),
 * reads the audience when one starts (held for a warm-up confirmation when needed), then hands due
 * recipients to the operator a page at a time, each at most once (marked `sending` and committed
 * before the operator is called; one found `sending` after a crash is failed, never sent again),
 * within each number's rolling 24-hour messaging limit.
 */
export const makeCampaignJob = (deps: EngineDeps, settings: CampaignEngineSettings = DEFAULT_CAMPAIGN_ENGINE) => {
  const { store, transactor } = deps

  const save = (campaign: CampaignRecord, changes: Partial<CampaignRecord>, at: string) =>
    Effect.as(store.update(campaign.tenant_id, { ...campaign, ...changes, updated_at: at }), { ...campaign, ...changes, updated_at: at })

  // Reading the audience, the exact warm-up check and the plan commit together: a crash leaves the
  // campaign as it was, to start again. Each number's limit is read from the operator first, never
  // inside the transaction.
  const start = Effect.fnUntraced(function*(campaign: CampaignRecord, nowMs: number) {
    const at = fromMillis(nowMs)
    yield* Effect.forEach(campaign.channel_ids, (id) => limitOf(deps.limits, campaign.tenant_id, id, true), { discard: true })
    return yield* transactor.withTransaction(Effect.gen(function*() {
      const found = yield* materialize(deps, campaign, at)
      const started: CampaignRecord = { ...campaign, audience_size: found.reachable, started_at: at, updated_at: at }
      const check = yield* deps.warmup(started, (i) => found.perChannel[i] ?? 0, nowMs).pipe(
        Effect.orElseSucceed(() => ({ requires_acknowledgement: false, channels: [] }) as WarmupCheck)
      )
      const confirmed = started.warmup_acknowledged_at !== null &&
        acknowledgementHolds(started.warmup_acknowledged_audience ?? 0, found.reachable)
      if (check.requires_acknowledgement && !confirmed) {
        return yield* save(started, {
          status: "paused",
          throttle_reason: "warmup_acknowledgement_required",
          paused_at: at,
          next_run_at: null,
          warmup_acknowledged_at: null,
          warmup_acknowledged_audience: null
        }, at)
      }
      return yield* launch(deps, started, nowMs, started.channel_ids.map(() => 0))
    }))
  })

  // Recipients a dead worker had handed over: their outcome is unknown, so they are never sent again.
  const recover = Effect.fnUntraced(function*(campaign: CampaignRecord, at: string) {
    for (;;) {
      const stuck = yield* store.recipientsIn(campaign.tenant_id, campaign.id, "sending", { plannedBy: null, afterSeq: null, limit: 500 })
      if (stuck.length === 0) return
      yield* Effect.forEach(stuck, (r) =>
        store.updateRecipient({
          ...r,
          state: "failed",
          error: "interrupted while being handed to the operator; not sent again, so it is never sent twice",
          updated_at: at
        }), { discard: true })
    }
  })

  const sendOne = (campaign: CampaignRecord, templateId: string, recipient: CampaignRecipientRecord) =>
    deps.templates.send(campaign.tenant_id, templateId, {
      channel_id: recipient.channel_id!,
      contact_id: recipient.contact_id,
      variable_values: [...campaign.variable_values]
    }).pipe(
      Effect.map((message) => ({ outcome: "sent" as SendOutcome, message, error: null as string | null })),
      Effect.catch((error): Effect.Effect<{ outcome: SendOutcome; message: null; error: string | null }, StorageError> => {
        if (error._tag === "StorageError") return Effect.fail(error)
        if (error._tag === "OperatorFailed") {
          if (error.operator.kind === "rate_limited" || error.operator.kind === "transient") {
            return Effect.succeed({ outcome: "retry", message: null, error: null })
          }
          if (error.operator.code === QUALITY_RESTRICTED_CODE) return Effect.succeed({ outcome: "restricted", message: null, error: null })
        }
        return Effect.succeed({ outcome: "failed", message: null, error: error.message })
      })
    )

  const work = Effect.fnUntraced(function*(campaign: CampaignRecord, nowMs: number) {
    const at = fromMillis(nowMs)
    yield* recover(campaign, at)
    const templates = yield* deps.templateFor(campaign)
    // Each number's due recipients on their own: one number held back by its limit never starves another.
    const perChannel = Math.max(1, Math.ceil(settings.sendPage / campaign.channel_ids.length))
    let limited = false
    let full = false
    const chosen: Array<CampaignRecipientRecord> = []
    for (const [index, channelId] of campaign.channel_ids.entries()) {
      const mine = yield* store.recipientsIn(campaign.tenant_id, campaign.id, "pending", {
        plannedBy: at,
        afterSeq: null,
        limit: perChannel,
        channelId
      })
      if (mine.length === 0) continue
      const { limit } = yield* limitOf(deps.limits, campaign.tenant_id, channelId)
      let room = typeof limit === "number" && templates[index] !== null ? limit : Number.POSITIVE_INFINITY
      const reached = Number.isFinite(room)
        ? yield* store.reachedSince(campaign.tenant_id, channelId, fromMillis(nowMs - WINDOW_MS), mine.map((r) => r.contact_id))
        : { distinct: 0, already: [] as ReadonlyArray<string> }
      const already = new Set(reached.already)
      room -= reached.distinct
      let taken = 0
      for (const r of mine) {
        if (already.has(r.contact_id)) {
          chosen.push(r)
          taken++
        } else if (room > 0) {
          room--
          chosen.push(r)
          taken++
        } else limited = true
      }
      if (mine.length === perChannel && taken === mine.length) full = true
    }
    let retry = false
    let restricted = false
    yield* Effect.forEach(chosen, (due) =>
      Effect.gen(function*() {
        // Handed over and committed just before its own call to the operator: never handed twice,
        // and only the sends really in flight can be caught by a crash.
        const handedAt = fromMillis(yield* Clock.currentTimeMillis)
        const recipient: CampaignRecipientRecord = { ...due, state: "sending", handed_at: handedAt, updated_at: handedAt }
        yield* store.updateRecipient(recipient)
        const templateId = templates[campaign.channel_ids.indexOf(recipient.channel_id!)] ?? null
        const result = templateId === null
          ? { outcome: "failed" as SendOutcome, message: null, error: "no approved template of the campaign on this number" }
          : yield* sendOne(campaign, templateId, recipient)
        const doneAt = fromMillis(yield* Clock.currentTimeMillis)
        if (result.outcome === "retry" || result.outcome === "restricted") {
          if (result.outcome === "retry") retry = true
          else restricted = true
          return yield* store.updateRecipient({ ...recipient, state: "pending", handed_at: null, updated_at: doneAt })
        }
        const message = result.message
        yield* store.updateRecipient({
          ...recipient,
          // A refusal reached nobody: it counts neither toward the messaging limit nor the warm-up history.
          handed_at: message === null ? null : recipient.handed_at,
          state: message === null ? "failed" : message.status === "failed" ? "failed" : message.status === "pending" ? "sent" : message.status as CampaignRecipientRecord["state"],
          message_id: message?.id ?? null,
          external_id: message?.external_id ?? null,
          error: result.error,
          updated_at: doneAt
        })
      }), { concurrency: settings.concurrency, discard: true })

    const endMs = yield* Clock.currentTimeMillis
    const end = fromMillis(endMs)
    const fresh = Option.getOrElse(yield* store.get(campaign.tenant_id, campaign.id), () => campaign)
    // Paused meanwhile by the user: what was handed is recorded; nothing more is planned.
    if (fresh.status !== "sending") return fresh
    if (restricted) {
      return yield* save(fresh, { status: "paused", throttle_reason: "quality_restricted", paused_at: end, next_run_at: null }, end)
    }
    if (full && !retry) return yield* save(fresh, { throttle_reason: null, next_run_at: end }, end)
    if (retry) return yield* save(fresh, { next_run_at: fromMillis(endMs + RETRY_RATE_LIMITED_MS) }, end)
    if (limited) {
      return yield* save(fresh, { throttle_reason: "chatapp_messaging_limit" as ThrottleReason, next_run_at: fromMillis(endMs + RETRY_LIMIT_MS) }, end)
    }
    const left = yield* store.recipientsIn(campaign.tenant_id, campaign.id, "pending", { plannedBy: null, afterSeq: null, limit: 1 })
    if (left.length === 0) {
      return yield* save(fresh, { status: "completed", throttle_reason: null, completed_at: end, next_run_at: null }, end)
    }
    const upcoming = (yield* store.batchesOf(campaign.tenant_id, campaign.id))
      .map((b) => Date.parse(b.starts_at))
      .filter((t) => t > endMs)
    const nextAt = upcoming.length === 0 ? endMs : Math.min(...upcoming)
    return yield* save(fresh, { throttle_reason: "daily_batch_limit", next_run_at: fromMillis(nextAt) }, end)
  })

  const processOne = (campaign: CampaignRecord, holder: string) =>
    Effect.gen(function*() {
      const nowMs = yield* Clock.currentTimeMillis
      let current = campaign
      if (current.status === "scheduled" || (current.status === "sending" && current.audience_size === null)) {
        current = yield* start(current, nowMs)
      }
      if (current.status === "sending" && current.next_run_at !== null && Date.parse(current.next_run_at) <= nowMs) {
        yield* work(current, nowMs)
      }
    }).pipe(
      inJobSpan("CampaignEngine.batch", { attributes: { "tenant.id": campaign.tenant_id, "campaign.id": campaign.id } }),
      Effect.catchCause((cause) => Effect.logError(`campaign ${campaign.id}: round failed`, cause)),
      Effect.ensuring(Effect.ignore(store.release(campaign.tenant_id, campaign.id, holder)))
    )

  const runDue: Effect.Effect<number, StorageError> = Effect.gen(function*() {
    const nowMs = yield* Clock.currentTimeMillis
    const claims = yield* store.claimDue({
      now: fromMillis(nowMs),
      limit: settings.batchSize,
      leaseUntil: fromMillis(nowMs + settings.leaseSeconds * 1000),
      holder: yield* newId
    })
    yield* Effect.forEach(claims, (claim) => processOne(claim.campaign, claim.holder), { concurrency: "unbounded", discard: true })
    return claims.length
  }).pipe(Effect.withSpan("CampaignEngine.runDue"))

  return { name: "campaigns", runDue, pollEveryMs: 250 } satisfies BackgroundJob
}
