import { Effect } from "effect"
import type { SendingLimitService } from "../channels/SendingLimitService.ts"
import type { CampaignRecord, CampaignStore } from "../ports/CampaignStore.ts"
import { planBatches } from "./CampaignAudience.ts"
import { limitOf } from "./CampaignWarmup.ts"

/** What planning reads. */
export interface PlanDeps {
  readonly store: CampaignStore["Service"]
  readonly limits: SendingLimitService["Service"]
}

/** Each number's pending recipients (by index of `channel_ids`), counted in one statement. */
const pendingPerChannel = (store: CampaignStore["Service"], campaign: CampaignRecord) =>
  Effect.map(store.batchCounts(campaign.tenant_id, campaign.id), (counts) =>
    campaign.channel_ids.map((channelId) =>
      counts.filter((c) => c.channel_id === channelId && c.state === "pending").reduce((sum, c) => sum + c.n, 0)
    ))

/**
 * Each number's next batch day: the one after the last day that handed anybody to the operator (a
 * day that passed while paused, with nobody sent, does not count); 0 for a number that sent nobody.
 */
const nextDays = (store: CampaignStore["Service"], campaign: CampaignRecord) =>
  Effect.map(store.batchCounts(campaign.tenant_id, campaign.id), (counts) => {
    const handed = counts.filter((c) => c.state !== "pending" && c.state !== "skipped")
    return campaign.channel_ids.map((channelId) => {
      const begun = handed.filter((c) => c.channel_id === channelId).map((c) => c.day)
      return begun.length === 0 ? 0 : Math.max(...begun) + 1
    })
  })

/** Each number's planned batches (by index of `channel_ids`). */
export type Plans = Extract<ReturnType<typeof planBatches>, { readonly ok: true }>["plans"]

/**
 * The batches of the campaign's pending recipients from `startMs` (the machine's `Plan` intent):
 * each number from its first day, or from the day after the last one that handed anybody.
 */
export const planPending = (deps: PlanDeps, campaign: CampaignRecord, startMs: number, from: "first_day" | "next_day") =>
  Effect.gen(function*() {
    const counts = yield* pendingPerChannel(deps.store, campaign)
    const startDays = from === "first_day" ? campaign.channel_ids.map(() => 0) : yield* nextDays(deps.store, campaign)
    const limits = yield* Effect.forEach(campaign.channel_ids, (id) => Effect.map(limitOf(deps.limits, campaign.tenant_id, id), (l) => l.limit))
    return planBatches(campaign, counts, limits, startMs, startDays)
  })
