import { Clock, Context, Data, Effect, Option } from "effect"
import type { SendingLimitService } from "../channels/SendingLimitService.ts"
import { inJobSpan } from "../kernel/TraceContext.ts"
import type { BackgroundJob } from "../kernel/BackgroundWork.ts"
import { newId } from "../kernel/Id.ts"
import type { StorageError } from "../kernel/StorageError.ts"
import { fromMillis } from "../kernel/Timestamp.ts"
import type { CampaignRecipientRecord, CampaignRecord, CampaignStore, RecipientState } from "../ports/CampaignStore.ts"
import { type AudienceDeps, assignBatches, materialize } from "./CampaignAudience.ts"
import { limitOf } from "./CampaignWarmup.ts"
import type { WarmupCheck } from "./Campaign.ts"
import { columnsOf, type RoundFacts as RoundFinishedFacts, stateOf, transition, withFacts } from "./CampaignMachine.ts"
import { planPending, type Plans } from "./CampaignPlan.ts"
import { makePageSender, type PageDeps, recipientStateOf, type RoundFacts } from "./CampaignPage.ts"

/** How the campaign engine works. */
export interface CampaignEngineSettings {
  /** Campaigns one claim takes. */
  readonly batchSize: number
  /**
   * How long a claim holds a campaign; a crashed holder's campaign is taken over once it lapses. A
   * round hands nobody over past half of it (the rest goes in the next round), so it ends in time.
   */
  readonly leaseSeconds: number
  /** Recipients handed to the operator per campaign and round. */
  readonly sendPage: number
  /**
   * Recipients of a campaign handed over and not yet settled at once (sends in flight included):
   * handed over and written back half of it per transaction. After a crash, at most this many
   * recipients have an unknown fate.
   */
  readonly concurrency: number
  /**
   * How long a recipient whose send was in flight when its process stopped waits for the operator's
   * status to settle it (each send names its message, and the operator echoes that in its statuses).
   * Past this with no status, it fails as interrupted; it is never sent again either way.
   */
  readonly inDoubtSeconds: number
}

/**
 * The defaults: 4 campaigns a claim, held 2 minutes, 4,000 recipients a round, 96 in flight (32 a
 * transaction), and 15 minutes for the operator's status of a send whose process stopped.
 */
export const DEFAULT_CAMPAIGN_ENGINE: CampaignEngineSettings = {
  batchSize: 4,
  leaseSeconds: 120,
  sendPage: 4000,
  concurrency: 96,
  inDoubtSeconds: 900
}

/** The campaign engine's settings (a host sets the lease with the rest of its background work). */
export const CampaignSettings = Context.Reference<CampaignEngineSettings>("omnichannel-core/campaigns/CampaignSettings", {
  defaultValue: () => DEFAULT_CAMPAIGN_ENGINE
})

const WINDOW_MS = 24 * 60 * 60 * 1000
const INTERRUPTED = "interrupted while being handed to the operator, and the operator reported no status for it; not sent again, so it is never sent twice"
/** A recipient handed over by a process that stopped, waiting for the operator's status. */
const IN_DOUBT = "in doubt: handed to the operator by a process that stopped before the answer; waiting for the operator's status"
/** How often the engine looks again at recipients in doubt (statuses settle them meanwhile). */
const IN_DOUBT_LOOK_MS = 10_000

/** A recipient's settlement as `settleRecipients` takes it: its state moved from `sending`, the rest kept. */
type RecipientSettlement = Parameters<CampaignStore["Service"]["settleRecipients"]>[2][number]
const settlementOf = (r: CampaignRecipientRecord, state: RecipientState, at: string): RecipientSettlement => ({
  seq: r.seq,
  expected: "sending",
  state,
  handed_at: r.handed_at,
  message_id: r.message_id,
  external_id: r.external_id,
  error: r.error,
  updated_at: at
})

/** What the engine needs. */
export interface EngineDeps extends AudienceDeps, PageDeps {
  readonly limits: SendingLimitService["Service"]
  readonly warmup: (
    campaign: CampaignRecord,
    audienceOf: (index: number) => number,
    now: number
  ) => Effect.Effect<WarmupCheck, unknown>
  /** The template each number sends (by index of `channel_ids`): the campaign's, or its twin adopted there. */
  readonly templateFor: (campaign: CampaignRecord) => Effect.Effect<ReadonlyArray<string | null>, StorageError>
}


/** The campaign changed since it was claimed: the start's writes are rolled back. */
class LostRace extends Data.TaggedError("LostRace")<{}> {}

/**
 * The background job that sends campaigns: claims due ones with a lease (processes share them),
 * reads the audience when one starts (held for a warm-up confirmation when needed), then hands due
 * recipients to the operator a page at a time, each at most once (marked `sending` and committed
 * before the operator is called; one found `sending` after a crash is failed, never sent again),
 * within each number's rolling 24-hour messaging limit.
 */
export const makeCampaignJob = (deps: EngineDeps, settings: CampaignEngineSettings = DEFAULT_CAMPAIGN_ENGINE) => {
  const { store, transactor } = deps
  const sendPage = makePageSender(deps, settings.concurrency)

  // Reading the audience, the exact warm-up check and the plan commit together: a crash leaves the
  // campaign as it was, to start again. Each number's limit is read from the operator first, never
  // inside the transaction. The machine decides; its writes hold only while the campaign still has the
  // status it was claimed with, so a pause that landed meanwhile stands and the audience read is
  // rolled back with the lost write.
  const start = Effect.fnUntraced(function*(campaign: CampaignRecord, nowMs: number) {
    const at = fromMillis(nowMs)
    yield* Effect.forEach(campaign.channel_ids, (id) => limitOf(deps.limits, campaign.tenant_id, id, true), { discard: true })
    const started = yield* transactor.withTransaction(Effect.gen(function*() {
      const found = yield* materialize(deps, campaign, at)
      const read: CampaignRecord = { ...campaign, audience_size: found.reachable, started_at: at }
      const check = yield* deps.warmup(read, (i) => found.perChannel[i] ?? 0, nowMs).pipe(
        Effect.orElseSucceed(() => ({ requires_acknowledgement: false, channels: [] }) as WarmupCheck)
      )
      const state = stateOf(campaign)
      const event = { _tag: "AudienceRead", now: nowMs, audience: found.reachable, warmupRequired: check.requires_acknowledgement } as const
      let step = transition(state, event)
      let plans: Plans | null = null
      if (step.intents.some((intent) => intent._tag === "Plan")) {
        const planned = yield* planPending({ store, limits: deps.limits }, read, nowMs, "first_day")
        plans = planned.ok ? planned.plans : null
        step = transition(state, withFacts(event, { plan: planned.ok ? { ok: true } : { ok: false, reason: planned.reason } }))
      }
      for (const intent of step.intents) {
        if (intent._tag === "Write") {
          const won = yield* store.transition(campaign.tenant_id, campaign.id, { expected: intent.expected, set: { ...columnsOf(intent.set), updated_at: at } })
          if (!won) return yield* Effect.fail(new LostRace())
        } else if (intent._tag === "AssignPlan" && plans !== null) {
          yield* assignBatches(store, read, plans)
        } else if (intent._tag === "Warn") {
          yield* Effect.logWarning(`campaign ${campaign.id} cannot be planned: ${intent.message}`)
        }
      }
      return true
    })).pipe(Effect.catchTag("LostRace", () => Effect.succeed(false)))
    return started ? Option.getOrElse(yield* store.get(campaign.tenant_id, campaign.id), () => campaign) : campaign
  })

  // Recipients a stopped process had handed over: their sends' fate is the operator's to tell. A status
  // naming one's message (by its send's reference) settles both; one with none yet waits, marked in
  // doubt, `inDoubtSeconds` from when it was first found, then fails as interrupted. Never sent again.
  // Resolves to when to look again at those still waiting (null: none waits).
  const recover = Effect.fnUntraced(function*(campaign: CampaignRecord, nowMs: number) {
    const at = fromMillis(nowMs)
    const inDoubtMs = settings.inDoubtSeconds * 1000
    let afterSeq: number | null = null
    let lookAgainAt: number | null = null
    const waitUntil = (ms: number) => {
      lookAgainAt = Math.min(lookAgainAt ?? ms, ms)
    }
    for (;;) {
      const stuck: ReadonlyArray<CampaignRecipientRecord> = yield* store.recipientsIn(campaign.tenant_id, campaign.id, "sending", {
        plannedBy: null,
        afterSeq,
        limit: 500
      })
      if (stuck.length === 0) return lookAgainAt
      afterSeq = stuck[stuck.length - 1]!.seq
      yield* transactor.withTransaction(Effect.gen(function*() {
        const reported = yield* deps.messages.outbound.settleReported(
          campaign.tenant_id,
          stuck.flatMap((r) => (r.message_id === null ? [] : [r.message_id]))
        )
        const byMessage = new Map(reported.map((record) => [record.id, record]))
        const moves: Array<RecipientSettlement> = []
        const expired: Array<CampaignRecipientRecord> = []
        for (const r of stuck) {
          const record = r.message_id === null ? undefined : byMessage.get(r.message_id)
          if (record !== undefined) {
            moves.push({
              ...settlementOf(r, recipientStateOf(record), at),
              external_id: record.external_id,
              error: record.status === "failed" ? (record.error?.message ?? "failed") : null
            })
          } else if (r.error !== IN_DOUBT) {
            moves.push({ ...settlementOf(r, "sending", at), error: IN_DOUBT })
            waitUntil(nowMs + Math.min(inDoubtMs, IN_DOUBT_LOOK_MS))
          } else if (Date.parse(r.updated_at) + inDoubtMs <= nowMs) {
            expired.push(r)
            moves.push({ ...settlementOf(r, "failed", at), error: INTERRUPTED })
          } else {
            waitUntil(Math.min(Date.parse(r.updated_at) + inDoubtMs, nowMs + IN_DOUBT_LOOK_MS))
          }
        }
        const messageIds = expired.flatMap((r) => (r.message_id === null ? [] : [r.message_id]))
        yield* deps.messages.outbound.failPending(campaign.tenant_id, messageIds, { code: null, title: null, message: INTERRUPTED, details: null }, at)
        yield* store.settleRecipients(campaign.tenant_id, campaign.id, moves)
      }))
    }
  })

  const work = Effect.fnUntraced(function*(campaign: CampaignRecord, nowMs: number) {
    const at = fromMillis(nowMs)
    const inDoubtUntil = yield* recover(campaign, nowMs)
    const templates = yield* deps.templateFor(campaign)
    // Each number's due recipients on their own: one number held back by its limit never starves another.
    const perChannel = Math.max(1, Math.ceil(settings.sendPage / campaign.channel_ids.length))
    let limited = false
    let full = false
    const pages: Array<{ readonly channelId: string; readonly templateId: string | null; readonly due: Array<CampaignRecipientRecord> }> = []
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
      const due: Array<CampaignRecipientRecord> = []
      for (const r of mine) {
        if (already.has(r.contact_id)) {
          due.push(r)
        } else if (room > 0) {
          room--
          due.push(r)
        } else limited = true
      }
      if (mine.length === perChannel && due.length === mine.length) full = true
      if (due.length > 0) pages.push({ channelId, templateId: templates[index] ?? null, due })
    }
    const facts: RoundFacts = {
      backoffMs: null,
      throughputHeld: false,
      restricted: false,
      handUntilMs: (yield* Clock.currentTimeMillis) + settings.leaseSeconds * 500,
      cutShort: false,
      inDoubt: false
    }
    yield* Effect.forEach(pages, ({ channelId, due, templateId }) => sendPage(campaign, channelId, templateId, due, facts), {
      concurrency: "unbounded",
      discard: true
    })
    const retry = facts.backoffMs !== null
    const restricted = facts.restricted

    const endMs = yield* Clock.currentTimeMillis
    const end = fromMillis(endMs)
    // The machine decides what the round leads to; the write changes only the columns it names, and
    // only while the campaign is still sending: a pause that landed meanwhile stands.
    const decided = !restricted && !((full || facts.cutShort) && !retry) && !retry && !limited
    const pendingLeft = !decided ||
      (yield* store.recipientsIn(campaign.tenant_id, campaign.id, "pending", { plannedBy: null, afterSeq: null, limit: 1 })).length > 0
    const upcoming = decided && pendingLeft
      ? (yield* store.batchesOf(campaign.tenant_id, campaign.id)).map((b) => Date.parse(b.starts_at)).filter((t) => t > endMs)
      : []
    const round: RoundFinishedFacts = {
      restricted,
      backoff: retry ? { afterMs: facts.backoffMs!, throughput: facts.throughputHeld } : null,
      limited,
      fullPage: full || facts.cutShort,
      pendingLeft,
      nextBatchAt: upcoming.length === 0 ? null : Math.min(...upcoming),
      // Sends of this round that got no answer are looked at by the next round's recovery.
      inDoubtUntil: facts.inDoubt ? Math.min(inDoubtUntil ?? Number.POSITIVE_INFINITY, endMs + IN_DOUBT_LOOK_MS) : inDoubtUntil
    }
    const { intents } = transition(stateOf(campaign), { _tag: "RoundFinished", now: endMs, round })
    for (const intent of intents) {
      if (intent._tag !== "Write") continue
      yield* store.transition(campaign.tenant_id, campaign.id, { expected: intent.expected, set: { ...columnsOf(intent.set), updated_at: end } })
    }
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
