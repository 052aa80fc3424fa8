import { Effect, Schema } from "effect"
import { route } from "../http/Route.ts"
import { pathId } from "../kernel/Id.ts"
import { pageQueryFields, paginationInfo, toPageRequest } from "../kernel/Pagination.ts"
import {
  Campaign,
  CampaignList,
  CampaignStatistics,
  CreateCampaignRequest,
  ScheduleCampaignRequest,
  SendCampaignRequest,
  UpdateCampaignRequest,
  WarmupCheck
} from "./Campaign.ts"
import { CampaignService } from "./CampaignService.ts"

/** Default and largest `page_size` of `GET /campaigns`. */
export const CAMPAIGNS_PAGE_SIZE = { default: 25, max: 100 } as const

const id = (params: Readonly<Record<string, string>>) => pathId(params, "campaign_id", "Campaign")
const ListQuery = Schema.Struct({ ...pageQueryFields(CAMPAIGNS_PAGE_SIZE.max) })
const ResumeRequest = SendCampaignRequest

const SPLIT_NOTE =
  "Validation failed: `detail` lists {loc, msg, type}. `type: split_exceeds_60_days` when split sending cannot reach the audience (as estimated now) within the 60 days a split may last; its `ctx` gives max_days, days_needed, recipients, channel_id and smallest_daily_batch"

const WARMUP_NOTE =
  "409 `{detail: {code: warmup_acknowledgement_required, message, warmup}}` (warmup: the warm-up check) when a warming-up number would reach more than 250 people at once unconfirmed: send again with warmup_acknowledged: true"

/** Every route of the campaigns area. */
export const campaignRoutes = [
  route({
    method: "POST",
    path: "/campaigns",
    operationId: "createCampaign",
    summary:
      "Create a campaign (a draft): chat-app numbers, an approved template adopted on each, an audience of lists and contacts (duplicates skipped unless skip_duplicates is false; unsubscribed and opted-out contacts skipped), a time zone and optional split sending (the recommended ramp or a fixed daily batch)",
    tag: "Campaigns",
    auth: { kind: "api_key", scopes: ["campaigns:create"] },
    body: CreateCampaignRequest,
    response: { status: 201, schema: Campaign, description: "The campaign, a draft" },
    errors: [400, 404, 422],
    errorDescriptions: { 422: SPLIT_NOTE },
    handle: ({ principal, body }) => Effect.flatMap(CampaignService, (service) => service.create(principal.tenantId, body))
  }),
  route({
    method: "GET",
    path: "/campaigns",
    operationId: "listCampaigns",
    summary: "List the workspace's campaigns, newest first",
    tag: "Campaigns",
    auth: { kind: "api_key", scopes: ["campaigns:read"] },
    query: ListQuery,
    response: { status: 200, schema: CampaignList, description: "One page of campaigns" },
    errors: [422],
    handle: ({ principal, query }) =>
      Effect.gen(function*() {
        const page = toPageRequest(query, CAMPAIGNS_PAGE_SIZE.default)
        const { items, total } = yield* (yield* CampaignService).list(principal.tenantId, page)
        return { items, pagination: paginationInfo(page, total) }
      })
  }),
  route({
    method: "GET",
    path: "/campaigns/{campaign_id}",
    operationId: "getCampaign",
    summary: "Get a campaign: its status, throttle_reason and when its next batch starts",
    tag: "Campaigns",
    auth: { kind: "api_key", scopes: ["campaigns:read"] },
    response: { status: 200, schema: Campaign, description: "The campaign" },
    errors: [404],
    handle: ({ principal, params }) =>
      Effect.gen(function*() {
        return yield* (yield* CampaignService).get(principal.tenantId, yield* id(params))
      })
  }),
  route({
    method: "PATCH",
    path: "/campaigns/{campaign_id}",
    operationId: "updateCampaign",
    summary: "Change a campaign that has not started; any change resets a warm-up confirmation",
    tag: "Campaigns",
    auth: { kind: "api_key", scopes: ["campaigns:update"] },
    body: UpdateCampaignRequest,
    response: { status: 200, schema: Campaign, description: "The campaign" },
    errors: [400, 404, 409, 422],
    errorDescriptions: { 422: SPLIT_NOTE },
    handle: ({ principal, params, body }) =>
      Effect.gen(function*() {
        return yield* (yield* CampaignService).update(principal.tenantId, yield* id(params), body)
      })
  }),
  route({
    method: "POST",
    path: "/campaigns/{campaign_id}/send",
    operationId: "sendCampaign",
    summary: `Send a draft or scheduled campaign now (in the background; follow it with GET and the statistics). ${WARMUP_NOTE}`,
    tag: "Campaigns",
    auth: { kind: "api_key", scopes: ["campaigns:update"] },
    body: SendCampaignRequest,
    response: { status: 200, schema: Campaign, description: "The campaign, sending" },
    errors: [400, 404, 409, 422],
    errorDescriptions: { 422: SPLIT_NOTE },
    handle: ({ principal, params, body }) =>
      Effect.gen(function*() {
        return yield* (yield* CampaignService).send(principal.tenantId, yield* id(params), body)
      })
  }),
  route({
    method: "POST",
    path: "/campaigns/{campaign_id}/schedule",
    operationId: "scheduleCampaign",
    summary:
      `Schedule a campaign for send_at (ISO-8601 with offset, in the future). It is held (paused, warmup_acknowledgement_required) at that time if a confirmation is missing, was reset by an edit, or the audience grew by more than 20% and at least 250. ${WARMUP_NOTE}`,
    tag: "Campaigns",
    auth: { kind: "api_key", scopes: ["campaigns:update"] },
    body: ScheduleCampaignRequest,
    response: { status: 200, schema: Campaign, description: "The campaign, scheduled" },
    errors: [400, 404, 409, 422],
    errorDescriptions: { 422: SPLIT_NOTE },
    handle: ({ principal, params, body }) =>
      Effect.gen(function*() {
        return yield* (yield* CampaignService).schedule(principal.tenantId, yield* id(params), body)
      })
  }),
  route({
    method: "POST",
    path: "/campaigns/{campaign_id}/pause",
    operationId: "pauseCampaign",
    summary: "Pause a sending or scheduled campaign; pausing a paused one changes nothing",
    tag: "Campaigns",
    auth: { kind: "api_key", scopes: ["campaigns:update"] },
    response: { status: 200, schema: Campaign, description: "The campaign, paused" },
    errors: [404, 409],
    handle: ({ principal, params }) =>
      Effect.gen(function*() {
        return yield* (yield* CampaignService).pause(principal.tenantId, yield* id(params))
      })
  }),
  route({
    method: "POST",
    path: "/campaigns/{campaign_id}/resume",
    operationId: "resumeCampaign",
    summary:
      `Resume a paused campaign: the remaining recipients are planned again from now, each number from its next day's batch size. A campaign held for warm-up needs warmup_acknowledged: true. ${WARMUP_NOTE}`,
    tag: "Campaigns",
    auth: { kind: "api_key", scopes: ["campaigns:update"] },
    body: ResumeRequest,
    response: { status: 200, schema: Campaign, description: "The campaign, sending or scheduled" },
    errors: [404, 409],
    handle: ({ principal, params, body }) =>
      Effect.gen(function*() {
        return yield* (yield* CampaignService).resume(principal.tenantId, yield* id(params), body)
      })
  }),
  route({
    method: "GET",
    path: "/campaigns/{campaign_id}/warmup-check",
    operationId: "campaignWarmupCheck",
    summary:
      "The warm-up check of each number: warming up when connected less than 30 days ago, fewer than 3 earlier completed campaigns, fewer than 1,000 campaign messages, an audience above its messaging limit, or quality not green (the last two only when the limit can be read); whether a confirmation is needed",
    tag: "Campaigns",
    auth: { kind: "api_key", scopes: ["campaigns:read"] },
    response: { status: 200, schema: WarmupCheck, description: "The check" },
    errors: [404],
    handle: ({ principal, params }) =>
      Effect.gen(function*() {
        return yield* (yield* CampaignService).warmupCheck(principal.tenantId, yield* id(params))
      })
  }),
  route({
    method: "GET",
    path: "/campaigns/{campaign_id}/statistics",
    operationId: "campaignStatistics",
    summary: "Recipients by state (and skipped by reason) and each number's batches with their planned size, start and sent count",
    tag: "Campaigns",
    auth: { kind: "api_key", scopes: ["campaigns:read"] },
    response: { status: 200, schema: CampaignStatistics, description: "The statistics" },
    errors: [404],
    handle: ({ principal, params }) =>
      Effect.gen(function*() {
        return yield* (yield* CampaignService).statistics(principal.tenantId, yield* id(params))
      })
  })
]
