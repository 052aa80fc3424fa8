import { Effect, Option } from "effect"
import type { ChannelService } from "../channels/ChannelService.ts"
import type { SendingLimitService } from "../channels/SendingLimitService.ts"
import type { ContactService } from "../contacts/ContactService.ts"
import type { ListService } from "../lists/ListService.ts"
import type { TemplateService } from "../templates/TemplateService.ts"
import { ChannelUnavailable, InvalidRequest, NotFound } from "../kernel/ApiError.ts"
import type { StorageError } from "../kernel/StorageError.ts"
import type { CampaignRecord } from "../ports/CampaignStore.ts"
import { estimateAudience } from "./CampaignAudience.ts"
import { limitOf, shareOf } from "./CampaignWarmup.ts"
import { isTimeZone, planSplit, smallestDailyBatch, SPLIT_MAX_DAYS } from "./Pacing.ts"

/** What checking a campaign reads. */
export interface ShapeDeps {
  readonly channels: ChannelService["Service"]
  readonly lists: ListService["Service"]
  readonly contacts: ContactService["Service"]
  readonly templates: TemplateService["Service"]
  readonly templateFor: (campaign: CampaignRecord) => Effect.Effect<ReadonlyArray<string | null>, StorageError>
  readonly limits: SendingLimitService["Service"]
}

/**
 * Checks what a campaign names before it is stored or sent: its numbers are connected chat-app
 * channels of the tenant, its lists exist, its template is approved and adopted on every number
 * (the same name and language), its values fit the template, its time zone and split are valid
 * (a split reaches the audience as estimated now within 60 days), and it has an audience.
 */
export const checkCampaignShape = (deps: ShapeDeps, tenantId: string, campaign: CampaignRecord) =>
  Effect.gen(function*() {
    if (!isTimeZone(campaign.timezone)) {
      return yield* InvalidRequest.single(["body", "timezone"], `Unknown time zone '${campaign.timezone}'; use an IANA name such as Europe/Berlin`)
    }
    const split = campaign.split_sending
    if (split !== null && split.mode === "fixed" && split.daily_batch === null) {
      return yield* InvalidRequest.single(["body", "split_sending", "daily_batch"], "Field required for a fixed daily batch", "missing")
    }
    if (split !== null && split.mode === "ramp" && split.daily_batch !== null) {
      return yield* InvalidRequest.single(["body", "split_sending", "daily_batch"], "The ramp sets its own batches; give daily_batch only with mode fixed", "not_allowed")
    }
    if (campaign.audience.list_ids.length === 0 && campaign.audience.contact_ids.length === 0) {
      return yield* InvalidRequest.single(["body", "audience"], "Give list_ids or contact_ids", "missing")
    }
    for (const channelId of campaign.channel_ids) {
      const channel = yield* deps.channels.get(tenantId, channelId)
      if (channel.platform !== "chatapp" || channel.status !== "active") return yield* ChannelUnavailable.of(channel.id)
    }
    for (const listId of campaign.audience.list_ids) yield* deps.lists.record(tenantId, listId)
    if (campaign.template_id === null) {
      return yield* InvalidRequest.single(["body", "template_id"], "Field required: chat-app recipients receive an approved template", "missing")
    }
    const template = yield* Effect.catchTag(
      deps.templates.get(tenantId, campaign.template_id),
      "NotFound",
      () => Effect.fail(new NotFound({ message: `Template ${campaign.template_id} not found` }))
    )
    const perChannel = yield* deps.templateFor(campaign)
    const missing = perChannel.findIndex((id) => id === null)
    if (missing >= 0) {
      return yield* InvalidRequest.single(
        ["body", "channel_ids", missing],
        `No approved template '${template.name}' (${template.language}) on channel ${campaign.channel_ids[missing]}; adopt it there first`,
        "template_not_on_channel"
      )
    }
    if (template.placeholders.length !== campaign.variable_values.length) {
      return yield* InvalidRequest.single(
        ["body", "variable_values"],
        `Expected ${template.placeholders.length} value(s), got ${campaign.variable_values.length}`,
        "value_count_mismatch"
      )
    }
    const blank = campaign.variable_values.findIndex((value) => value.trim() === "")
    if (blank >= 0) return yield* InvalidRequest.single(["body", "variable_values", blank], "Must not be blank", "value_error")
    yield* checkSplitFits(deps, campaign)
    // Contact ids are checked exactly when the audience is read; an unknown one is skipped there.
    return Option.none()
  })

/**
 * Refuses split sending that cannot reach the audience in the 60 days a split may last (422
 * `split_exceeds_60_days`, with `ctx`: `max_days`, `days_needed`, `recipients`, `channel_id` and
 * `smallest_daily_batch`, the smallest fixed batch that fits). The audience is estimated as the
 * warm-up check does before sending (every source's size added) and shared over the numbers; the
 * ramp is capped at each number's messaging limit as last known.
 */
const checkSplitFits = (deps: Pick<ShapeDeps, "lists" | "limits">, campaign: CampaignRecord) =>
  Effect.gen(function*() {
    const split = campaign.split_sending
    if (split === null || (split.mode === "fixed" && split.daily_batch === null)) return
    const total = yield* estimateAudience(deps, campaign)
    for (const [index, channelId] of campaign.channel_ids.entries()) {
      const recipients = shareOf(total, campaign.channel_ids.length, index)
      const { limit } = yield* limitOf(deps.limits, campaign.tenant_id, channelId)
      const plan = planSplit({
        mode: split.mode,
        dailyBatch: split.daily_batch,
        messagingLimit: limit,
        recipients,
        firstBatchAt: 0,
        startDay: 0,
        sendTime: split.send_time,
        timeZone: campaign.timezone
      })
      if (plan.ok) continue
      const smallest = smallestDailyBatch(recipients)
      const pace = split.mode === "fixed"
        ? `at ${split.daily_batch} a day`
        : `on the ramp, capped at the number's messaging limit of ${String(limit)} a day,`
      return yield* InvalidRequest.single(
        ["body", "split_sending", split.mode === "fixed" ? "daily_batch" : "mode"],
        `A split lasts at most ${SPLIT_MAX_DAYS} days: the ${recipients} recipients through channel ${channelId} need ${plan.daysNeeded} days ${pace}. The smallest daily_batch that fits is ${smallest}`,
        "split_exceeds_60_days",
        { max_days: SPLIT_MAX_DAYS, days_needed: plan.daysNeeded, recipients, channel_id: channelId, smallest_daily_batch: smallest }
      )
    }
  })
