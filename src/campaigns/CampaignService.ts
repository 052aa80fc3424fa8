import { Clock, Context, Effect, Layer, Option } from "effect"
import { ChannelService } from "../channels/ChannelService.ts"
import { SendingLimitService } from "../channels/SendingLimitService.ts"
import { ContactService } from "../contacts/ContactService.ts"
import { ListService } from "../lists/ListService.ts"
import { TemplateService } from "../templates/TemplateService.ts"
import { Conflict, FailedWithBody, InvalidRequest, NotFound } from "../kernel/ApiError.ts"
import type { BackgroundJob } from "../kernel/BackgroundWork.ts"
import { type ChatappStatusHandler, type ChatappStatusInput, settleStatuses } from "../kernel/ChatappEvents.ts"
import { newId } from "../kernel/Id.ts"
import { type PageRequest, toWindow } from "../kernel/Pagination.ts"
import type { StorageError } from "../kernel/StorageError.ts"
import { fromMillis } from "../kernel/Timestamp.ts"
import { type CampaignRecord, CampaignStore, type RecipientState } from "../ports/CampaignStore.ts"
import { countingRecipientWrites } from "./RecipientMetrics.ts"
import { Transactor } from "../ports/Transactor.ts"
import {
  type Campaign,
  type CampaignStatistics,
  type CreateCampaignRequest,
  toCampaign,
  type UpdateCampaignRequest,
  type WarmupCheck
} from "./Campaign.ts"
import { estimateAudience } from "./CampaignAudience.ts"
import { DEFAULT_CAMPAIGN_ENGINE, type EngineDeps, launch, makeCampaignJob } from "./CampaignEngine.ts"
import { makeWarmupCheck, shareOf } from "./CampaignWarmup.ts"
import { checkCampaignShape } from "./CampaignRules.ts"

const notFound = (id: string) => new NotFound({ message: `Campaign ${id} not found` })

// Recipient states only move forward with the operator's statuses.
const RANK: Readonly<Record<RecipientState, number>> = { pending: 0, sending: 1, sent: 2, delivered: 3, read: 4, failed: 5, skipped: 6 }

type Transition = { readonly warmup_acknowledged?: boolean }

/**
 * Campaigns: written, checked for warm-up, sent now or scheduled, paused and resumed; read with
 * their statistics. Sending is the background job `job`.
 */
export class CampaignService extends Context.Service<CampaignService, {
  readonly create: (tenantId: string, request: CreateCampaignRequest) => Effect.Effect<Campaign, NotFound | InvalidRequest | StorageError>
  readonly update: (
    tenantId: string,
    id: string,
    request: UpdateCampaignRequest
  ) => Effect.Effect<Campaign, NotFound | InvalidRequest | Conflict | StorageError>
  readonly get: (tenantId: string, id: string) => Effect.Effect<Campaign, NotFound | StorageError>
  readonly list: (
    tenantId: string,
    page: PageRequest
  ) => Effect.Effect<{ readonly items: ReadonlyArray<Campaign>; readonly total: number }, StorageError>
  readonly warmupCheck: (tenantId: string, id: string) => Effect.Effect<WarmupCheck, NotFound | StorageError>
  /** Sends now; 409 `warmup_acknowledgement_required` when a warming-up number would reach more than 250 at once unconfirmed. */
  readonly send: (tenantId: string, id: string, body: Transition) => Effect.Effect<Campaign, NotFound | InvalidRequest | Conflict | FailedWithBody | StorageError>
  readonly schedule: (
    tenantId: string,
    id: string,
    body: Transition & { readonly send_at: string }
  ) => Effect.Effect<Campaign, NotFound | InvalidRequest | Conflict | FailedWithBody | StorageError>
  readonly pause: (tenantId: string, id: string) => Effect.Effect<Campaign, NotFound | Conflict | StorageError>
  readonly resume: (tenantId: string, id: string, body: Transition) => Effect.Effect<Campaign, NotFound | Conflict | FailedWithBody | StorageError>
  readonly statistics: (tenantId: string, id: string) => Effect.Effect<CampaignStatistics, NotFound | StorageError>
  /** The inbound handler that moves recipients by the operator's statuses. */
  readonly statusHandler: ChatappStatusHandler
  /** The background job that sends due campaigns. */
  readonly job: BackgroundJob
}>()("omnichannel-core/campaigns/CampaignService") {
  static readonly layer = Layer.effect(
    CampaignService,
    Effect.gen(function*() {
      // Recipient writes are counted by state for the metrics.
      const store = countingRecipientWrites(yield* CampaignStore)
      const transactor = yield* Transactor
      const channels = yield* ChannelService
      const limits = yield* SendingLimitService
      const contacts = yield* ContactService
      const lists = yield* ListService
      const templates = yield* TemplateService
      const warmup = makeWarmupCheck({ store, channels, limits }, true)
      const warmupKnown = makeWarmupCheck({ store, channels, limits }, false)
      const nowMs = Clock.currentTimeMillis

      // The template each number sends: the campaign's own on its number, else the approved one of
      // the same name and language adopted on that number.
      const templateFor = Effect.fnUntraced(function*(campaign: CampaignRecord) {
        if (campaign.template_id === null) return campaign.channel_ids.map(() => null)
        const chosen = yield* Effect.option(templates.get(campaign.tenant_id, campaign.template_id))
        if (Option.isNone(chosen)) return campaign.channel_ids.map(() => null)
        return yield* Effect.forEach(campaign.channel_ids, (channelId) =>
          Effect.gen(function*() {
            if (chosen.value.channel_id === channelId) return chosen.value.status === "approved" ? chosen.value.id : null
            const { items } = yield* templates.list(campaign.tenant_id, { channel_id: channelId, status: "approved" }, { page: 1, pageSize: 500 })
            return items.find((t) => t.name === chosen.value.name && t.language === chosen.value.language)?.id ?? null
          }))
      })

      const deps: EngineDeps = { store, transactor, contacts, lists, templates, limits, warmup: warmupKnown, templateFor }
      const job = makeCampaignJob(deps, DEFAULT_CAMPAIGN_ENGINE)

      const record = Effect.fnUntraced(function*(tenantId: string, id: string) {
        const found = yield* store.get(tenantId, id)
        if (Option.isNone(found)) return yield* notFound(id)
        return found.value
      })

      const shape = (tenantId: string, campaign: CampaignRecord) =>
        checkCampaignShape({ channels, lists, contacts, templates, templateFor }, tenantId, campaign)

      // The warm-up check on the audience as it would be read now (an upper bound before sending).
      const checkNow = Effect.fnUntraced(function*(campaign: CampaignRecord, now: number) {
        const total = campaign.audience_size ?? (yield* estimateAudience({ store, contacts, lists }, campaign))
        const n = campaign.channel_ids.length
        return { total, check: yield* warmup(campaign, (i) => shareOf(total, n, i), now) }
      })

      // Sending or scheduling: refused with 409 while a warming-up number would reach more than
      // 250 at once unconfirmed; a confirmation is kept with the audience it was given for.
      const confirmOrRefuse = Effect.fnUntraced(function*(campaign: CampaignRecord, body: Transition, now: number) {
        const { total, check } = yield* checkNow(campaign, now)
        if (check.requires_acknowledgement && body.warmup_acknowledged !== true) {
          return yield* new FailedWithBody({
            status: 409,
            body: {
              detail: "A number of this campaign is warming up and would reach more than 250 people at once. Check GET /campaigns/{id}/warmup-check, then send again with warmup_acknowledged: true (or use split sending with a first batch of 250 or fewer)",
              code: "warmup_acknowledgement_required",
              warmup: check
            }
          })
        }
        return body.warmup_acknowledged === true
          ? { warmup_acknowledged_at: fromMillis(now), warmup_acknowledged_audience: total }
          : { warmup_acknowledged_at: null, warmup_acknowledged_audience: null }
      })

      const save = (campaign: CampaignRecord) => Effect.as(store.update(campaign.tenant_id, campaign), toCampaign(campaign))

      // Each known recipient moved by its statuses in order: one read and one compare-and-set write per
      // channel, and for a recipient another writer moved meanwhile, a new read.
      const handleStatuses = Effect.fnUntraced(function*(inputs: ReadonlyArray<ChatappStatusInput>) {
        const at = fromMillis(yield* nowMs)
        yield* settleStatuses(inputs, "campaign recipients", (channel, unsettled) =>
          Effect.gen(function*() {
            const read = yield* store.findRecipientsByExternalIds(channel.tenant_id, channel.id, [...new Set(unsettled.map(({ event }) => event.externalId))])
            const moves = new Map(read.map((r) => [r.external_id!, { read: r, state: r.state, error: r.error, changed: false }]))
            for (const { event } of unsettled) {
              const move = moves.get(event.externalId)
              if (move === undefined) continue
              if (RANK[event.status] <= RANK[move.state] && event.status !== "failed") continue
              if (move.state === "failed" || move.state === "skipped") continue
              move.error = event.status === "failed" ? (event.error?.message ?? "failed") : move.error
              move.state = event.status
              move.changed = true
            }
            const changed = [...moves.values()].filter((move) => move.changed)
            const moved = yield* store.moveRecipients(channel.tenant_id, changed.map(({ error, read, state }) => ({
              campaign_id: read.campaign_id,
              seq: read.seq,
              expected: read.state,
              state,
              error,
              updated_at: at
            })))
            return new Set(changed.filter(({ read }) => !moved.has(`${read.campaign_id} ${read.seq}`)).map(({ read }) => read.external_id))
          }))
      })

      const statusHandler: ChatappStatusHandler = {
        name: "campaign recipients",
        handle: (input) => Effect.as(handleStatuses([input]), "continue" as const),
        handleMany: handleStatuses
      }

      return CampaignService.of({
        create: Effect.fn("CampaignService.create")(function*(tenantId, request) {
          const at = fromMillis(yield* nowMs)
          const campaign: CampaignRecord = {
            id: yield* newId,
            tenant_id: tenantId,
            name: request.name.trim(),
            status: "draft",
            throttle_reason: null,
            channel_ids: [...new Set(request.channel_ids)],
            template_id: request.template_id ?? null,
            variable_values: request.variable_values ?? [],
            audience: { list_ids: [...new Set(request.audience.list_ids ?? [])], contact_ids: [...(request.audience.contact_ids ?? [])] },
            timezone: request.timezone ?? "UTC",
            skip_duplicates: request.skip_duplicates ?? true,
            split_sending: request.split_sending == null
              ? null
              : { mode: request.split_sending.mode, daily_batch: request.split_sending.daily_batch ?? null, send_time: request.split_sending.send_time ?? null },
            send_at: null,
            warmup_acknowledged_at: null,
            warmup_acknowledged_audience: null,
            audience_size: null,
            next_run_at: null,
            started_at: null,
            paused_at: null,
            completed_at: null,
            created_at: at,
            updated_at: null
          }
          yield* shape(tenantId, campaign)
          yield* store.insert(campaign)
          return toCampaign(campaign)
        }),
        update: Effect.fn("CampaignService.update")(function*(tenantId, id, request) {
          const before = yield* record(tenantId, id)
          if (before.status === "sending" || before.status === "completed" || before.audience_size !== null) {
            return yield* new Conflict({ message: `Campaign ${id} is ${before.status}; only a campaign that has not started can be changed` })
          }
          const split = request.split_sending === undefined
            ? before.split_sending
            : request.split_sending === null
            ? null
            : { mode: request.split_sending.mode, daily_batch: request.split_sending.daily_batch ?? null, send_time: request.split_sending.send_time ?? null }
          const after: CampaignRecord = {
            ...before,
            name: request.name?.trim() ?? before.name,
            channel_ids: request.channel_ids === undefined ? before.channel_ids : [...new Set(request.channel_ids)],
            template_id: request.template_id ?? before.template_id,
            variable_values: request.variable_values ?? before.variable_values,
            audience: request.audience === undefined ? before.audience : {
              list_ids: [...new Set(request.audience.list_ids ?? [])],
              contact_ids: [...(request.audience.contact_ids ?? [])]
            },
            timezone: request.timezone ?? before.timezone,
            skip_duplicates: request.skip_duplicates ?? before.skip_duplicates,
            split_sending: split,
            // An edit resets a warm-up confirmation: what was confirmed is no longer what will be sent.
            warmup_acknowledged_at: null,
            warmup_acknowledged_audience: null,
            updated_at: fromMillis(yield* nowMs)
          }
          yield* shape(tenantId, after)
          return yield* save(after)
        }),
        get: Effect.fn("CampaignService.get")(function*(tenantId, id) {
          return toCampaign(yield* record(tenantId, id))
        }),
        list: Effect.fn("CampaignService.list")(function*(tenantId, page) {
          const { items, total } = yield* store.list(tenantId, toWindow(page))
          return { items: items.map(toCampaign), total }
        }),
        warmupCheck: Effect.fn("CampaignService.warmupCheck")(function*(tenantId, id) {
          const campaign = yield* record(tenantId, id)
          return (yield* checkNow(campaign, yield* nowMs)).check
        }),
        send: Effect.fn("CampaignService.send")(function*(tenantId, id, body) {
          const campaign = yield* record(tenantId, id)
          if (campaign.status !== "draft" && campaign.status !== "scheduled") {
            return yield* new Conflict({ message: `Campaign ${id} is ${campaign.status}; only a draft or scheduled campaign can be sent` })
          }
          yield* shape(tenantId, campaign)
          const now = yield* nowMs
          const ack = yield* confirmOrRefuse(campaign, body, now)
          return yield* save({ ...campaign, ...ack, status: "sending", send_at: null, next_run_at: fromMillis(now), updated_at: fromMillis(now) })
        }),
        schedule: Effect.fn("CampaignService.schedule")(function*(tenantId, id, body) {
          const campaign = yield* record(tenantId, id)
          if (campaign.status !== "draft" && campaign.status !== "scheduled") {
            return yield* new Conflict({ message: `Campaign ${id} is ${campaign.status}; only a draft or scheduled campaign can be scheduled` })
          }
          const sendAt = Date.parse(body.send_at)
          const now = yield* nowMs
          if (Number.isNaN(sendAt) || !/[zZ]|[+-]\d\d:?\d\d$/.test(body.send_at)) {
            return yield* InvalidRequest.single(["body", "send_at"], "Must be an ISO-8601 time with a time zone offset", "value_error")
          }
          if (sendAt <= now) return yield* InvalidRequest.single(["body", "send_at"], "Must be in the future", "value_error")
          yield* shape(tenantId, campaign)
          const ack = yield* confirmOrRefuse(campaign, body, sendAt)
          return yield* save({
            ...campaign,
            ...ack,
            status: "scheduled",
            send_at: fromMillis(sendAt),
            next_run_at: fromMillis(sendAt),
            updated_at: fromMillis(now)
          })
        }),
        pause: Effect.fn("CampaignService.pause")(function*(tenantId, id) {
          const campaign = yield* record(tenantId, id)
          if (campaign.status === "paused") return toCampaign(campaign)
          if (campaign.status !== "sending" && campaign.status !== "scheduled") {
            return yield* new Conflict({ message: `Campaign ${id} is ${campaign.status}; only a sending or scheduled campaign can be paused` })
          }
          const at = fromMillis(yield* nowMs)
          return yield* save({ ...campaign, status: "paused", throttle_reason: null, paused_at: at, next_run_at: null, updated_at: at })
        }),
        resume: Effect.fn("CampaignService.resume")(function*(tenantId, id, body) {
          const campaign = yield* record(tenantId, id)
          if (campaign.status !== "paused") {
            return yield* new Conflict({ message: `Campaign ${id} is ${campaign.status}; only a paused campaign can be resumed` })
          }
          const now = yield* nowMs
          const at = fromMillis(now)
          const ack = campaign.throttle_reason === "warmup_acknowledgement_required" || campaign.warmup_acknowledged_at === null
            ? yield* confirmOrRefuse(campaign, body, now)
            : { warmup_acknowledged_at: campaign.warmup_acknowledged_at, warmup_acknowledged_audience: campaign.warmup_acknowledged_audience }
          if (campaign.audience_size === null) {
            // Never started: scheduled again, or sent now when its time has passed.
            const later = campaign.send_at !== null && Date.parse(campaign.send_at) > now
            return yield* save({
              ...campaign,
              ...ack,
              status: later ? "scheduled" : "sending",
              throttle_reason: null,
              paused_at: null,
              next_run_at: later ? campaign.send_at : at,
              updated_at: at
            })
          }
          // Started: the remaining recipients are planned again from now, each number from the day
          // after the last one that handed anybody to the operator (a day that passed while paused,
          // with nobody sent, does not count).
          const handedDays = (yield* store.batchCounts(tenantId, id)).filter((c) => c.state !== "pending" && c.state !== "skipped")
          const startDays = campaign.channel_ids.map((channelId) => {
            const begun = handedDays.filter((c) => c.channel_id === channelId).map((c) => c.day)
            return begun.length === 0 ? 0 : Math.max(...begun) + 1
          })
          const resumed = yield* transactor.withTransaction(
            launch(deps, { ...campaign, ...ack, paused_at: null }, now, startDays)
          )
          return toCampaign(resumed)
        }),
        statistics: Effect.fn("CampaignService.statistics")(function*(tenantId, id) {
          const campaign = yield* record(tenantId, id)
          const counts = yield* store.counts(tenantId, id)
          const perBatch = yield* store.batchCounts(tenantId, id)
          const batches = yield* store.batchesOf(tenantId, id)
          const n = (state: RecipientState) => counts.byState[state] ?? 0
          return {
            campaign_id: id,
            status: campaign.status,
            throttle_reason: campaign.throttle_reason,
            audience_size: campaign.audience_size,
            recipients: {
              pending: n("pending"),
              sending: n("sending"),
              sent: n("sent"),
              delivered: n("delivered"),
              read: n("read"),
              failed: n("failed"),
              skipped: n("skipped")
            },
            skipped_by_reason: { ...counts.skippedByReason },
            batches: batches.map((b) => ({
              channel_id: b.channel_id,
              day: b.day,
              planned_size: b.planned_size,
              starts_at: b.starts_at,
              sent: perBatch
                .filter((c) => c.channel_id === b.channel_id && c.day === b.day && (c.state === "sent" || c.state === "delivered" || c.state === "read"))
                .reduce((sum, c) => sum + c.n, 0)
            }))
          }
        }),
        statusHandler,
        job
      })
    })
  )
}
