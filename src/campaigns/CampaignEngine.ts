import { Clock, Context, Data, Duration, Effect, Option, Semaphore } from "effect"
import type { ConversationService } from "../conversations/ConversationService.ts"
import { openKey } from "../conversations/ConversationService.ts"
import { type MessageService, type OutboundOutcome, pendingMessage } from "../messages/MessageService.ts"
import type { ChatPlatform, ChatPlatformError } from "../ports/ChatPlatform.ts"
import type { ConversationRecord } from "../ports/ConversationStore.ts"
import type { MessageError, MessageRecord } from "../ports/MessageStore.ts"
import type { SendingLimitService } from "../channels/SendingLimitService.ts"
import type { ThroughputService } from "../channels/ThroughputService.ts"
import type { TemplateService } from "../templates/TemplateService.ts"
import { inJobSpan } from "../kernel/TraceContext.ts"
import type { BackgroundJob } from "../kernel/BackgroundWork.ts"
import { newId } from "../kernel/Id.ts"
import type { StorageError } from "../kernel/StorageError.ts"
import { fromMillis } from "../kernel/Timestamp.ts"
import type { CampaignRecipientRecord, CampaignRecord, RecipientState } from "../ports/CampaignStore.ts"
import type { Transactor } from "../ports/Transactor.ts"
import { type AudienceDeps, assignBatches, materialize } from "./CampaignAudience.ts"
import { limitOf } from "./CampaignWarmup.ts"
import type { WarmupCheck } from "./Campaign.ts"
import { columnsOf, type RoundFacts as RoundFinishedFacts, stateOf, transition, withFacts } from "./CampaignMachine.ts"
import { planPending, type Plans } from "./CampaignPlan.ts"

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
}

/** The defaults: 4 campaigns a claim, held 2 minutes, 4,000 recipients a round, 96 in flight (32 a transaction). */
export const DEFAULT_CAMPAIGN_ENGINE: CampaignEngineSettings = { batchSize: 4, leaseSeconds: 120, sendPage: 4000, concurrency: 96 }

/** The campaign engine's settings (a host sets the lease with the rest of its background work). */
export const CampaignSettings = Context.Reference<CampaignEngineSettings>("omnichannel-core/campaigns/CampaignSettings", {
  defaultValue: () => DEFAULT_CAMPAIGN_ENGINE
})

const WINDOW_MS = 24 * 60 * 60 * 1000
/** After the operator's throughput limit (130429), the number's sends hold this long, in every process. */
const RETRY_RATE_LIMITED_MS = 250
/** After the operator's pair limit (too fast to one recipient, 131056), the next round waits this long. */
const RETRY_PAIR_MS = 6_000
/** After an operator failure of the moment (5xx, timeout), the next round waits this long. */
const RETRY_TRANSIENT_MS = 30_000
const RETRY_LIMIT_MS = 60_000
/** Recipients handed over, and their answers written back, per transaction. */
const HAND_OVER_GROUP = 32
/** The sliding window a number's rate is counted in by the operator, with a margin for the way there (ns). */
const WINDOW_NS = 1_015_000_000
/** The share of a number's rate sent within any such window from one process. */
const WINDOW_SHARE = 0.98
/** A send slot this close (ms) goes at once: timers cannot wait less than a millisecond or two. */
const EARLY_MS = 3
const INTERRUPTED = "interrupted while being handed to the operator; not sent again, so it is never sent twice"

/** What a round learnt from the operator's answers. */
interface RoundFacts {
  /** Set when the operator asked to slow down (rate limit) or failed for the moment: wait this long. */
  backoffMs: number | null
  /** The number is restricted for quality: the campaign pauses. */
  restricted: boolean
  /** The backoff is the number's throughput (the operator's 130429): the campaign shows `throughput`. */
  throughputHeld: boolean
  /** Nobody is handed over after this time (ms), so the round ends well within its lease. */
  readonly handUntilMs: number
  /** Recipients were due but left for the next round at `handUntilMs`. */
  cutShort: boolean
}

/** One recipient's send and what came of it. */
interface SendResult {
  readonly recipient: CampaignRecipientRecord
  readonly message: MessageRecord
  readonly outcome:
    | { readonly _tag: "sent"; readonly externalId: string }
    | { readonly _tag: "failed"; readonly error: ChatPlatformError }
    | { readonly _tag: "retry" }
  readonly at: string
}

/** The stored error of a message the operator refused. */
const messageErrorOf = (error: ChatPlatformError): MessageError => ({
  code: error.code,
  title: error.userTitle,
  message: error.userMessage ?? error.message,
  details: null
})

/** A recipient's state is its message's: the forward-only rule lives in the message lifecycle. */
const recipientStateOf = (message: MessageRecord): RecipientState =>
  message.status === "delivered" || message.status === "read" || message.status === "failed" ? message.status : "sent"

/** A pending recipient failed before anything was handed to the operator for it. */
const failedUnsent = (recipient: CampaignRecipientRecord, error: string, at: string) => ({
  seq: recipient.seq,
  expected: "pending" as const,
  state: "failed" as const,
  handed_at: null,
  message_id: null,
  external_id: null,
  error,
  updated_at: at
})

const chunksOf = <A>(items: ReadonlyArray<A>, size: number): Array<ReadonlyArray<A>> => {
  const out: Array<ReadonlyArray<A>> = []
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size))
  return out
}

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
  readonly messages: MessageService["Service"]
  readonly conversations: ConversationService["Service"]
  readonly platform: ChatPlatform["Service"]
  /** Each number's send slots, at its throughput, shared by every process sending through it. */
  readonly throughput: ThroughputService["Service"]
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
  // Each number's latest sends from this process (monotonic ns), at most its rate of them, and that rate.
  const recentSends = new Map<string, Array<{ atNs: number }>>()
  const rateOf = new Map<string, number>()

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

  // Recipients a dead worker had handed over: their outcome is unknown, so they are never sent again;
  // their messages, still pending, fail with them. One statement each a page of them.
  const recover = Effect.fnUntraced(function*(campaign: CampaignRecord, at: string) {
    for (;;) {
      const stuck = yield* store.recipientsIn(campaign.tenant_id, campaign.id, "sending", { plannedBy: null, afterSeq: null, limit: 500 })
      if (stuck.length === 0) return
      yield* transactor.withTransaction(Effect.gen(function*() {
        const messageIds = stuck.flatMap((r) => (r.message_id === null ? [] : [r.message_id]))
        yield* deps.messages.outbound.failPending(campaign.tenant_id, messageIds, { code: null, title: null, message: INTERRUPTED, details: null }, at)
        yield* store.settleRecipients(campaign.tenant_id, campaign.id, stuck.map((r) => ({
          seq: r.seq,
          expected: "sending" as const,
          state: "failed" as const,
          handed_at: r.handed_at,
          message_id: r.message_id,
          external_id: r.external_id,
          error: INTERRUPTED,
          updated_at: at
        })))
      }))
    }
  })

  // One number's due recipients of a round, a page at a time: handed over a slice per transaction
  // (their conversations found or opened, their messages stored pending, the recipients marked
  // sending), sent concurrently, and their outcomes written back in gathered groups.
  const sendPage = Effect.fnUntraced(function*(
    campaign: CampaignRecord,
    channelId: string,
    templateId: string | null,
    due: ReadonlyArray<CampaignRecipientRecord>,
    facts: RoundFacts
  ) {
    const tenantId = campaign.tenant_id
    const startAt = fromMillis(yield* Clock.currentTimeMillis)
    const failAll = (error: string) => store.settleRecipients(tenantId, campaign.id, due.map((r) => failedUnsent(r, error, startAt)))
    if (templateId === null) return yield* failAll("no approved template of the campaign on this number")
    // Checked and rendered once for the whole page.
    const prepared = yield* Effect.result(deps.templates.prepareSend(tenantId, templateId, {
      channel_id: channelId,
      variable_values: [...campaign.variable_values]
    }))
    if (prepared._tag === "Failure") {
      if (prepared.failure._tag === "StorageError") return yield* Effect.fail(prepared.failure)
      return yield* failAll(prepared.failure.message)
    }
    const send = prepared.success
    const phones = new Map(
      (yield* deps.contacts.getMany(tenantId, [...new Set(due.map((r) => r.contact_id))])).map((c) => [c.id, c.phone])
    )

    const handOver = (slice: ReadonlyArray<CampaignRecipientRecord>) =>
      transactor.withTransaction(Effect.gen(function*() {
        const at = fromMillis(yield* Clock.currentTimeMillis)
        if (facts.backoffMs !== null || facts.restricted) return new Map<number, { readonly message: MessageRecord; readonly to: string }>()
        if ((yield* Clock.currentTimeMillis) > facts.handUntilMs) {
          facts.cutShort = true
          return new Map<number, { readonly message: MessageRecord; readonly to: string }>()
        }
        // Paused (or otherwise stopped) since the round began: nobody more is handed over.
        const now = yield* store.get(tenantId, campaign.id)
        if (Option.isNone(now) || now.value.status !== "sending") return new Map<number, { readonly message: MessageRecord; readonly to: string }>()
        const reachable = slice.filter((r) => phones.get(r.contact_id) != null)
        const unreachable = slice.filter((r) => phones.get(r.contact_id) == null)
        const open = reachable.length === 0
          ? new Map<string, ConversationRecord>()
          : yield* deps.conversations.openForMany(tenantId, reachable.map((r) => ({ channelId, contactId: r.contact_id })))
        const handed = new Map<number, { readonly message: MessageRecord; readonly to: string }>()
        for (const r of reachable) {
          const conversation = open.get(openKey(channelId, r.contact_id))!
          const message = pendingMessage({ conversation, messageType: send.messageType, text: send.text, content: send.content }, yield* newId, at)
          handed.set(r.seq, { message, to: phones.get(r.contact_id)!.replace(/^\+/, "") })
        }
        yield* deps.messages.outbound.recordPendingMany([...handed.values()].map(({ message }) => message))
        const moved = yield* store.settleRecipients(tenantId, campaign.id, [
          ...reachable.map((r) => ({
            seq: r.seq,
            expected: "pending" as const,
            state: "sending" as const,
            handed_at: at,
            message_id: handed.get(r.seq)!.message.id,
            external_id: null,
            error: null,
            updated_at: at
          })),
          ...unreachable.map((r) => failedUnsent(r, "The contact has no phone number", at))
        ])
        // A recipient no longer pending (settled by another writer) is not sent; its message goes.
        const lost = [...handed.entries()].filter(([seq]) => !moved.has(seq))
        if (lost.length > 0) {
          yield* deps.messages.outbound.dropPending(tenantId, lost.map(([, { message }]) => message.id))
          for (const [seq] of lost) handed.delete(seq)
        }
        return handed
      }))

    // The number's send slots, reserved a few at a time and taken in order by the sends.
    // The number's send slots, reserved a few at a time and taken in order by the sends; and, in this
    // process, never more sends of the number within any second than its rate (a send late after a
    // stall is not followed by a burst that the operator would count against the number).
    const pacing = yield* Semaphore.make(1)
    let slots: Array<number> = []
    const pace = pacing.withPermits(1)(Effect.gen(function*() {
      if (slots.length === 0) {
        const grant = yield* deps.throughput.acquire(tenantId, channelId, due.length)
        const base = Number(yield* Clock.monotonicTimeNanos)
        slots = Array.from({ length: grant.count }, (_, i) => base + i * grant.spacingMs * 1e6)
        rateOf.set(channelKey, grant.perSecond)
      }
      const slot = slots.shift()!
      const window = recentSends.get(channelKey) ?? []
      // A little under the rate within any second, for sends that leave together after a stall.
      const perWindow = Math.max(1, Math.floor((rateOf.get(channelKey) ?? 1) * WINDOW_SHARE))
      const oldest = window.length >= perWindow ? window[window.length - perWindow]!.atNs : Number.NEGATIVE_INFINITY
      const startNs = Math.max(slot, oldest + WINDOW_NS)
      // Timers are coarse: a slot a few milliseconds ahead goes now, the window still holding the rate.
      const waitMs = (startNs - Number(yield* Clock.monotonicTimeNanos)) / 1e6
      if (waitMs >= EARLY_MS || (waitMs > 0 && startNs !== slot)) yield* Effect.sleep(Duration.millis(Math.ceil(waitMs)))
      const sent = { atNs: Number(yield* Clock.monotonicTimeNanos) }
      window.push(sent)
      if (window.length > perWindow) window.splice(0, window.length - perWindow)
      recentSends.set(channelKey, window)
      return sent
    }))
    const channelKey = `${tenantId} ${channelId}`

    const sendOne = (recipient: CampaignRecipientRecord, item: { readonly message: MessageRecord; readonly to: string }) =>
      Effect.gen(function*() {
        if (facts.backoffMs !== null || facts.restricted) {
          return { recipient, message: item.message, outcome: { _tag: "retry" }, at: fromMillis(yield* Clock.currentTimeMillis) } satisfies SendResult
        }
        // The number's slot could not be had (the database failed): not sent, so back to pending.
        const paced = yield* Effect.result(pace)
        if (paced._tag === "Failure") {
          facts.backoffMs = Math.max(facts.backoffMs ?? 0, RETRY_TRANSIENT_MS)
          return { recipient, message: item.message, outcome: { _tag: "retry" }, at: fromMillis(yield* Clock.currentTimeMillis) } satisfies SendResult
        }
        // Refused meanwhile for the number's throughput: this one waits for the next round too.
        if (facts.backoffMs !== null || facts.restricted) {
          return { recipient, message: item.message, outcome: { _tag: "retry" }, at: fromMillis(yield* Clock.currentTimeMillis) } satisfies SendResult
        }
        const answer = yield* Effect.result(deps.platform.sendMessage(send.credentials, item.to, send.operatorMessage))
        // Counted in the window from its answer: it reached the operator no later, even after a stall.
        paced.success.atNs = Number(yield* Clock.monotonicTimeNanos)
        const at = fromMillis(yield* Clock.currentTimeMillis)
        if (answer._tag === "Success") {
          return { recipient, message: item.message, outcome: { _tag: "sent", externalId: answer.success.messageId }, at } satisfies SendResult
        }
        const error = answer.failure
        // The number above its throughput (130429): every sender of the number holds off a second.
        if (error.kind === "rate_limited") {
          facts.throughputHeld = true
          yield* deps.throughput.penalize(tenantId, channelId, RETRY_RATE_LIMITED_MS)
        }
        if (error.kind === "rate_limited" || error.kind === "pair_rate_limited" || error.kind === "transient") {
          // The number's hold lives in its shared slots: the next round may start at once and waits there.
          const wait = error.kind === "rate_limited" ? 0 : error.kind === "pair_rate_limited" ? RETRY_PAIR_MS : RETRY_TRANSIENT_MS
          facts.backoffMs = Math.max(facts.backoffMs ?? 0, wait)
          return { recipient, message: item.message, outcome: { _tag: "retry" }, at } satisfies SendResult
        }
        if (error.kind === "quality_restricted") {
          facts.restricted = true
          return { recipient, message: item.message, outcome: { _tag: "retry" }, at } satisfies SendResult
        }
        return { recipient, message: item.message, outcome: { _tag: "failed", error }, at } satisfies SendResult
      })

    // Groups of 32 (at most half the window) side by side: some in flight while others are handed
    // over or written back, so at most `concurrency` recipients are ever handed over and not settled.
    const group = Math.max(1, Math.min(HAND_OVER_GROUP, Math.floor(settings.concurrency / 2)))
    yield* Effect.forEach(chunksOf(due, group), (slice) =>
      Effect.gen(function*() {
        const handed = yield* handOver(slice)
        if (handed.size === 0) return
        const results = yield* Effect.forEach(slice.filter((r) => handed.has(r.seq)), (r) => sendOne(r, handed.get(r.seq)!), {
          concurrency: "unbounded"
        })
        yield* writeOutcomes(campaign, results)
      }), { concurrency: Math.max(2, Math.floor(settings.concurrency / group)), discard: true })
  })

  // A group of the operator's answers, written in one transaction: the messages settled (sent with
  // the operator's id, or failed with its error) with their conversations' times and `message.sent`
  // events; recipients the operator refused for a reason of the moment back to pending, their
  // messages dropped; each recipient settled from its message's state; opt-outs the operator
  // reported kept on the contact.
  const writeOutcomes = (campaign: CampaignRecord, group: ReadonlyArray<SendResult>) =>
    transactor.withTransaction(Effect.gen(function*() {
      const tenantId = campaign.tenant_id
      const settled = yield* deps.messages.outbound.settle(tenantId, group.flatMap(({ at, message, outcome }): Array<OutboundOutcome> =>
        outcome._tag === "sent"
          ? [{ _tag: "sent", message, externalId: outcome.externalId, at }]
          : outcome._tag === "failed"
          ? [{ _tag: "failed", message, at, error: messageErrorOf(outcome.error) }]
          : []
      ))
      const byMessage = new Map(settled.map((s) => [s.record.id, s.record]))
      const retried = group.filter(({ outcome }) => outcome._tag === "retry")
      yield* deps.messages.outbound.dropPending(tenantId, retried.map(({ message }) => message.id))
      yield* store.settleRecipients(tenantId, campaign.id, group.map(({ at, message, outcome, recipient }) => {
        if (outcome._tag === "retry") {
          return { seq: recipient.seq, expected: "sending" as const, state: "pending" as const, handed_at: null, message_id: null, external_id: null, error: null, updated_at: at }
        }
        const record = byMessage.get(message.id)!
        return {
          seq: recipient.seq,
          expected: "sending" as const,
          state: recipientStateOf(record),
          // A refusal reached nobody: it counts neither toward the messaging limit nor the warm-up history.
          handed_at: outcome._tag === "failed" ? null : recipient.handed_at ?? at,
          message_id: message.id,
          external_id: record.external_id,
          error: outcome._tag === "failed" ? (record.error?.message ?? outcome.error.message) : null,
          updated_at: at
        }
      }))
      const optedOut = group.filter(({ outcome }) => outcome._tag === "failed" && outcome.error.kind === "opted_out")
      yield* Effect.forEach(optedOut, ({ at, recipient }) =>
        deps.lists.recordOptOut({ tenant_id: tenantId, contact_id: recipient.contact_id, channel_id: recipient.channel_id, source: "operator_error", opted_out_at: at }), { discard: true })
    }))

  const work = Effect.fnUntraced(function*(campaign: CampaignRecord, nowMs: number) {
    const at = fromMillis(nowMs)
    yield* recover(campaign, at)
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
      cutShort: false
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
      nextBatchAt: upcoming.length === 0 ? null : Math.min(...upcoming)
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
