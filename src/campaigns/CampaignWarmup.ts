import { Effect } from "effect"
import type { ChannelService } from "../channels/ChannelService.ts"
import type { SendingLimitService } from "../channels/SendingLimitService.ts"
import type { NotFound } from "../kernel/ApiError.ts"
import type { StorageError } from "../kernel/StorageError.ts"
import type { CampaignRecord, CampaignStore } from "../ports/CampaignStore.ts"
import type { WarmupCheck } from "./Campaign.ts"
import { messagingLimitOf, planSplit, warmupCheck } from "./Pacing.ts"

/** What the warm-up check reads. */
export interface WarmupDeps {
  readonly store: CampaignStore["Service"]
  readonly channels: ChannelService["Service"]
  readonly limits: SendingLimitService["Service"]
}

/**
 * A number's messaging limit and quality: read from the operator (`fresh`), or as last known;
 * `limit` undefined when it cannot be read.
 */
export const limitOf = (limits: SendingLimitService["Service"], tenantId: string, channelId: string, fresh = false) =>
  (fresh ? limits.get(tenantId, channelId) : limits.known(tenantId, channelId)).pipe(
    Effect.map((limit) => ({ limit: messagingLimitOf(limit.messaging_limit_tier), quality: limit.quality_rating })),
    Effect.orElseSucceed(() => ({ limit: undefined as number | null | undefined, quality: null as string | null }))
  )

/** How many of `total` recipients go through each of `n` numbers: round robin, the first ones one more. */
export const shareOf = (total: number, n: number, index: number): number =>
  Math.floor(total / n) + (index < total % n ? 1 : 0)

/** How many a number reaches at once: the first day's batch with split sending, else its whole audience. */
export const firstBatchOf = (
  campaign: CampaignRecord,
  audience: number,
  limit: number | null | undefined,
  now: number
): number => {
  if (campaign.split_sending === null || audience === 0) return audience
  const plan = planSplit({
    mode: campaign.split_sending.mode,
    dailyBatch: campaign.split_sending.daily_batch,
    messagingLimit: limit,
    recipients: audience,
    firstBatchAt: now,
    startDay: 0,
    sendTime: campaign.split_sending.send_time,
    timeZone: campaign.timezone
  })
  return plan.ok ? (plan.batches[0]?.size ?? 0) : audience
}

/**
 * The warm-up check of every chat-app number of the campaign for the given audience per number
 * (`audienceOf(index)`): the spec's five criteria, and whether sending needs a confirmation. With
 * `fresh`, each number's limit is read from the operator; else as last known (inside a transaction).
 */
export const makeWarmupCheck = (deps: WarmupDeps, fresh: boolean) =>
  (campaign: CampaignRecord, audienceOf: (index: number) => number, now: number) =>
    Effect.gen(function*() {
      const channels = yield* Effect.forEach(campaign.channel_ids, (channelId, index) =>
        Effect.gen(function*() {
          const channel = yield* deps.channels.get(campaign.tenant_id, channelId)
          const { limit, quality } = yield* limitOf(deps.limits, campaign.tenant_id, channelId, fresh)
          const audience = audienceOf(index)
          const firstBatch = firstBatchOf(campaign, audience, limit, now)
          const result = warmupCheck({
            connectedAt: Date.parse(channel.created_at),
            now,
            completedCampaigns: yield* deps.store.completedThrough(campaign.tenant_id, channelId, campaign.id),
            campaignMessagesSent: yield* deps.store.sentThrough(campaign.tenant_id, channelId),
            audience,
            messagingLimit: limit,
            qualityRating: quality,
            firstBatch
          })
          return {
            channel_id: channelId,
            warming_up: result.warmingUp,
            reasons: [...result.reasons],
            messaging_limit: typeof limit === "number" ? limit : null,
            messaging_limit_known: limit !== undefined,
            quality_rating: quality,
            audience,
            first_batch: firstBatch,
            requires_acknowledgement: result.requiresAcknowledgement
          }
        }))
      return {
        requires_acknowledgement: channels.some((channel) => channel.requires_acknowledgement),
        channels
      } satisfies WarmupCheck
    }) as Effect.Effect<WarmupCheck, NotFound | StorageError>
