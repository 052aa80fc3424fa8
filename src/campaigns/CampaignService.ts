import { Clock, Context, Effect, Layer, Option } from "effect"
import { ChannelService } from "../channels/ChannelService.ts"
import { SendingLimitService } from "../channels/SendingLimitService.ts"
import { ThroughputService } from "../channels/ThroughputService.ts"
import { ContactService } from "../contacts/ContactService.ts"
import { ListService } from "../lists/ListService.ts"
import { TemplateService } from "../templates/TemplateService.ts"
import { ConversationService } from "../conversations/ConversationService.ts"
import { MessageService, nextOutboundStatus } from "../messages/MessageService.ts"
import { ChatPlatform } from "../ports/ChatPlatform.ts"
import { type ChannelUnavailable, Conflict, errorBody, FailedWithBody, InvalidRequest, NotFound } from "../kernel/ApiError.ts"
import type { BackgroundJob } from "../kernel/BackgroundWork.ts"
import { type ChatappStatusHandler, type ChatappStatusInput, settleStatuses } from "../kernel/ChatappEvents.ts"
import { newId } from "../kernel/Id.ts"
import { type PageRequest, toWindow } from "../kernel/Pagination.ts"
import type { StorageError } from "../kernel/StorageError.ts"
import { fromMillis } from "../kernel/Timestamp.ts"
import { type CampaignChanges, type CampaignRecord, CampaignStore, type RecipientState } from "../ports/CampaignStore.ts"
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
import { assignBatches, estimateAudience } from "./CampaignAudience.ts"
import { CampaignSettings, type EngineDeps, makeCampaignJob } from "./CampaignEngine.ts"
import { type CampaignEvent, columnsOf, conflictMessage, type Refusal, stateOf, transition, withFacts } from "./CampaignMachine.ts"
import { planPending, type Plans } from "./CampaignPlan.ts"
import { makeWarmupCheck, shareOf } from "./CampaignWarmup.ts"
import { checkCampaignShape } from "./CampaignRules.ts"

const notFound = (id: string) => new NotFound({ message: `Campaign ${id} not found` })


type Transition = { readonly warmup_acknowledged?: boolean }

/** The fields a PATCH changes. */
const contentOf = (campaign: CampaignRecord): CampaignChanges => ({
  name: campaign.name,
  channel_ids: campaign.channel_ids,
  template_id: campaign.template_id,
  variable_values: campaign.variable_values,
  audience: campaign.audience,
  timezone: campaign.timezone,
  skip_duplicates: campaign.skip_duplicates,
  split_sending: campaign.split_sending
})

/** Keeps the errors a request can raise; any other the machine never asks of it is a defect. */
const only = <Tag extends string>(tags: ReadonlyArray<Tag>) =>
<A, E extends { readonly _tag: string }>(effect: Effect.Effect<A, E>): Effect.Effect<A, Extract<E, { readonly _tag: Tag }>> =>
  Effect.catch(effect, (error) =>
    (tags as ReadonlyArray<string>).includes(error._tag) ? Effect.fail(error as Extract<E, { readonly _tag: Tag }>) : Effect.die(error))

// A request that keeps losing its write to the engine gives up: each loss is another writer's progress.
const MAX_ATTEMPTS = 10

/** What a request gathered for the machine: the warm-up check (a refusal's body), the plan (`AssignPlan`). */
interface Gathered {
  readonly check?: WarmupCheck
  readonly plans?: Plans
}

/**
 * Campaigns: written, checked for warm-up, sent now or scheduled, paused and resumed; read with
 * their statistics. Sending is the background job `job`.
 */
export class CampaignService extends Context.Service<CampaignService, {
  readonly create: (
    tenantId: string,
    request: CreateCampaignRequest
  ) => Effect.Effect<Campaign, NotFound | InvalidRequest | ChannelUnavailable | StorageError>
  readonly update: (
    tenantId: string,
    id: string,
    request: UpdateCampaignRequest
  ) => Effect.Effect<Campaign, NotFound | InvalidRequest | ChannelUnavailable | Conflict | StorageError>
  readonly get: (tenantId: string, id: string) => Effect.Effect<Campaign, NotFound | StorageError>
  readonly list: (
    tenantId: string,
    page: PageRequest
  ) => Effect.Effect<{ readonly items: ReadonlyArray<Campaign>; readonly total: number }, StorageError>
  readonly warmupCheck: (tenantId: string, id: string) => Effect.Effect<WarmupCheck, NotFound | StorageError>
  /** Sends now; 409 `warmup_acknowledgement_required` when a warming-up number would reach more than 250 at once unconfirmed. */
  readonly send: (
    tenantId: string,
    id: string,
    body: Transition
  ) => Effect.Effect<Campaign, NotFound | InvalidRequest | ChannelUnavailable | Conflict | FailedWithBody | StorageError>
  readonly schedule: (
    tenantId: string,
    id: string,
    body: Transition & { readonly send_at: string }
  ) => Effect.Effect<Campaign, NotFound | InvalidRequest | ChannelUnavailable | Conflict | FailedWithBody | StorageError>
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

      const throughput = yield* ThroughputService
      const deps: EngineDeps = {
        store,
        transactor,
        contacts,
        lists,
        templates,
        limits,
        warmup: warmupKnown,
        templateFor,
        messages: yield* MessageService,
        conversations: yield* ConversationService,
        platform: yield* ChatPlatform,
        throughput
      }
      const job = makeCampaignJob(deps, yield* CampaignSettings)

      const record = Effect.fnUntraced(function*(tenantId: string, id: string) {
        const found = yield* store.get(tenantId, id)
        if (Option.isNone(found)) return yield* notFound(id)
        return found.value
      })

      const shape = (tenantId: string, campaign: CampaignRecord) =>
        checkCampaignShape({ channels, lists, contacts, templates, templateFor, limits }, tenantId, campaign)

      // The warm-up check on the audience as it would be read now (an upper bound before sending).
      const checkNow = Effect.fnUntraced(function*(campaign: CampaignRecord, now: number) {
        const total = campaign.audience_size ?? (yield* estimateAudience({ store, contacts, lists }, campaign))
        const n = campaign.channel_ids.length
        return { total, check: yield* warmup(campaign, (i) => shareOf(total, n, i), now) }
      })

      const refuse = (campaign: CampaignRecord, refusal: Refusal, check: WarmupCheck | undefined) => {
        switch (refusal._tag) {
          case "WrongStatus":
            return Effect.fail(new Conflict({ message: conflictMessage(campaign.id, refusal) }))
          case "InvalidSendAt":
            return InvalidRequest.single(["body", "send_at"], refusal.message, "value_error")
          case "WarmupUnconfirmed":
            return Effect.fail(
              new FailedWithBody({
                status: 409,
                body: errorBody(
                  "warmup_acknowledgement_required",
                  "A number of this campaign is warming up and would reach more than 250 people at once. Check GET /campaigns/{id}/warmup-check, then send again with warmup_acknowledged: true (or use split sending with a first batch of 250 or fewer)",
                  { warmup: check }
                )
              })
            )
        }
      }

      // Performs what the campaign machine answers a request: gathers the facts it asks for (the
      // shape and warm-up checks, the plan) and feeds the request again with them, refuses, or makes
      // its one conditional write. `edited` is the campaign with a PATCH's changes (the campaign
      // itself otherwise): its shape is the one checked, its fields are written with the machine's.
      // Resolves to the campaign as written, or undefined when the write found another status.
      type RequestError =
        | Effect.Error<ReturnType<typeof shape>>
        | Effect.Error<ReturnType<typeof checkNow>>
        | Conflict
        | InvalidRequest
        | FailedWithBody
        | StorageError
      const perform = (
        campaign: CampaignRecord,
        edited: CampaignRecord,
        event: CampaignEvent,
        gathered: Gathered
      ): Effect.Effect<CampaignRecord | undefined, RequestError> =>
        Effect.gen(function*() {
          let result = campaign
          for (const intent of transition(stateOf(campaign), event).intents) {
            switch (intent._tag) {
              case "Refuse":
                return yield* refuse(campaign, intent.refusal, gathered.check)
              case "CheckShape":
                yield* shape(campaign.tenant_id, edited)
                break
              case "CheckWarmup": {
                const { check, total } = yield* checkNow(campaign, intent.at)
                const warmup = { required: check.requires_acknowledgement, audience: total }
                return yield* perform(campaign, edited, withFacts(event, { warmup }), { ...gathered, check })
              }
              case "Plan":
                // The plan, the status and the recipients' batches commit together.
                return yield* transactor.withTransaction(Effect.gen(function*() {
                  const planned = yield* planPending({ store, limits }, campaign, intent.at, intent.from)
                  return yield* planned.ok
                    ? perform(campaign, edited, withFacts(event, { plan: { ok: true } }), { ...gathered, plans: planned.plans })
                    : perform(campaign, edited, withFacts(event, { plan: { ok: false, reason: planned.reason } }), gathered)
                }))
              case "Write": {
                const set: CampaignChanges = {
                  ...(edited === campaign ? {} : contentOf(edited)),
                  ...columnsOf(intent.set),
                  updated_at: fromMillis(event.now)
                }
                if (!(yield* store.transition(campaign.tenant_id, campaign.id, { expected: intent.expected, set }))) return undefined
                result = { ...edited, ...set }
                break
              }
              case "AssignPlan":
                yield* assignBatches(store, result, gathered.plans ?? [])
                break
              case "Warn":
                yield* Effect.logWarning(`campaign ${campaign.id} cannot be planned: ${intent.message}`)
                break
              case "ReadAudience":
              case "SendPage":
                return yield* Effect.die(new Error(`the campaign machine answered a request with the engine's ${intent._tag}`))
            }
          }
          return result
        })

      // A request on the campaign as stored now; read again and decided anew when its write lost to
      // another writer (the engine started, finished or held the campaign meanwhile).
      const handleRequest = Effect.fnUntraced(function*(
        tenantId: string,
        id: string,
        eventAt: (now: number) => CampaignEvent,
        edit: (campaign: CampaignRecord) => CampaignRecord = (campaign) => campaign
      ) {
        for (let attempt = 1;; attempt++) {
          const campaign = yield* record(tenantId, id)
          const done = yield* perform(campaign, edit(campaign), eventAt(yield* nowMs), {})
          if (done !== undefined) return toCampaign(done)
          if (attempt === MAX_ATTEMPTS) return yield* Effect.die(new Error(`campaign ${id} kept changing under ${MAX_ATTEMPTS} requests`))
        }
      })

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
              // The message's own forward-only rule: `failed` after `delivered` or `read` moves neither.
              const next = nextOutboundStatus(move.state, event.status)
              if (next === null) continue
              move.error = next === "failed" ? (event.error?.message ?? "failed") : move.error
              move.state = next
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
        handleMany: handleStatuses,
        // Forward-only moves: a status again moves no recipient.
        repeatable: () => true
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
          const edit = (before: CampaignRecord): CampaignRecord => ({
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
            split_sending: request.split_sending === undefined
              ? before.split_sending
              : request.split_sending === null
              ? null
              : { mode: request.split_sending.mode, daily_batch: request.split_sending.daily_batch ?? null, send_time: request.split_sending.send_time ?? null }
          })
          return yield* handleRequest(tenantId, id, (now) => ({ _tag: "Edit", now }), edit).pipe(Effect.catchTag("FailedWithBody", Effect.die))
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
          const acknowledged = body.warmup_acknowledged === true
          return yield* handleRequest(tenantId, id, (now) => ({ _tag: "Send", now, acknowledged }))
        }),
        schedule: Effect.fn("CampaignService.schedule")(function*(tenantId, id, body) {
          const acknowledged = body.warmup_acknowledged === true
          const parsed = Date.parse(body.send_at)
          const sendAt = Number.isNaN(parsed) || !/[zZ]|[+-]\d\d:?\d\d$/.test(body.send_at) ? null : parsed
          return yield* handleRequest(tenantId, id, (now) => ({ _tag: "Schedule", now, send_at: sendAt, acknowledged }))
        }),
        pause: Effect.fn("CampaignService.pause")(function*(tenantId, id) {
          return yield* handleRequest(tenantId, id, (now) => ({ _tag: "Pause", now })).pipe(only(["NotFound", "Conflict", "StorageError"]))
        }),
        resume: Effect.fn("CampaignService.resume")(function*(tenantId, id, body) {
          const acknowledged = body.warmup_acknowledged === true
          return yield* handleRequest(tenantId, id, (now) => ({ _tag: "Resume", now, acknowledged })).pipe(
            only(["NotFound", "Conflict", "FailedWithBody", "StorageError"])
          )
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
            })),
            throughput: yield* Effect.forEach(campaign.channel_ids, (channelId) =>
              Effect.map(throughput.rate(tenantId, channelId), (perSecond) => ({ channel_id: channelId, per_second: perSecond })))
          }
        }),
        statusHandler,
        job
      })
    })
  )
}
