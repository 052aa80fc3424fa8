import { Schema } from "effect"
import { UuidId, UuidString } from "../kernel/Id.ts"
import { PaginationInfo } from "../kernel/Pagination.ts"
import { type CampaignRecord, THROTTLE_REASONS } from "../ports/CampaignStore.ts"

const SendTime = Schema.String.check(Schema.isPattern(/^([01]\d|2[0-3]):[0-5]\d$/, { message: "Must be HH:MM, 00:00 to 23:59" }))

/** Split sending as the API takes and returns it. */
export const SplitSendingSchema = Schema.Struct({
  mode: Schema.Literals(["ramp", "fixed"]),
  daily_batch: Schema.optionalKey(Schema.NullOr(Schema.Int.check(Schema.isGreaterThanOrEqualTo(1), Schema.isLessThanOrEqualTo(1_000_000)))),
  send_time: Schema.optionalKey(Schema.NullOr(SendTime))
})

const Audience = Schema.Struct({
  list_ids: Schema.optionalKey(Schema.Array(UuidString).check(Schema.isMaxLength(100))),
  contact_ids: Schema.optionalKey(Schema.Array(UuidString).check(Schema.isMaxLength(10_000)))
})

const Name = Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(200))
const Values = Schema.Array(Schema.String.check(Schema.isMaxLength(1024))).check(Schema.isMaxLength(20))

/** Body of `POST /campaigns`. */
export const CreateCampaignRequest = Schema.Struct({
  name: Name,
  channel_ids: Schema.Array(UuidString).check(Schema.isMinLength(1), Schema.isMaxLength(20)),
  template_id: Schema.optionalKey(Schema.String),
  variable_values: Schema.optionalKey(Values),
  audience: Audience,
  timezone: Schema.optionalKey(Schema.String),
  skip_duplicates: Schema.optionalKey(Schema.Boolean),
  split_sending: Schema.optionalKey(Schema.NullOr(SplitSendingSchema))
})
/** Body of `POST /campaigns`. */
export type CreateCampaignRequest = typeof CreateCampaignRequest.Type
export declare namespace CreateCampaignRequest {}

/** Body of `PATCH /campaigns/{id}`: fields present change; any change resets a warm-up confirmation. */
export const UpdateCampaignRequest = Schema.Struct({
  name: Schema.optionalKey(Name),
  channel_ids: Schema.optionalKey(Schema.Array(UuidString).check(Schema.isMinLength(1), Schema.isMaxLength(20))),
  template_id: Schema.optionalKey(Schema.String),
  variable_values: Schema.optionalKey(Values),
  audience: Schema.optionalKey(Audience),
  timezone: Schema.optionalKey(Schema.String),
  skip_duplicates: Schema.optionalKey(Schema.Boolean),
  split_sending: Schema.optionalKey(Schema.NullOr(SplitSendingSchema))
})
/** Body of `PATCH /campaigns/{id}`. */
export type UpdateCampaignRequest = typeof UpdateCampaignRequest.Type
export declare namespace UpdateCampaignRequest {}

/** Body of `POST /campaigns/{id}/send`. */
export const SendCampaignRequest = Schema.Struct({
  warmup_acknowledged: Schema.optionalKey(Schema.Boolean)
})
/** Body of `POST /campaigns/{id}/schedule`. */
export const ScheduleCampaignRequest = Schema.Struct({
  send_at: Schema.String,
  warmup_acknowledged: Schema.optionalKey(Schema.Boolean)
})

/** A campaign as the API returns it. */
export const Campaign = Schema.Struct({
  id: UuidId,
  tenant_id: UuidId,
  name: Schema.String,
  status: Schema.Literals(["draft", "scheduled", "sending", "paused", "completed"]),
  throttle_reason: Schema.NullOr(Schema.Literals(THROTTLE_REASONS)),
  channel_ids: Schema.Array(UuidId),
  template_id: Schema.NullOr(UuidId),
  variable_values: Schema.Array(Schema.String),
  audience: Schema.Struct({ list_ids: Schema.Array(UuidId), contact_ids: Schema.Array(UuidId) }),
  timezone: Schema.String,
  skip_duplicates: Schema.Boolean,
  split_sending: Schema.NullOr(Schema.Struct({
    mode: Schema.Literals(["ramp", "fixed"]),
    daily_batch: Schema.NullOr(Schema.Int),
    send_time: Schema.NullOr(Schema.String)
  })),
  send_at: Schema.NullOr(Schema.String),
  warmup_acknowledged: Schema.Boolean,
  audience_size: Schema.NullOr(Schema.Int),
  next_batch_at: Schema.NullOr(Schema.String),
  started_at: Schema.NullOr(Schema.String),
  paused_at: Schema.NullOr(Schema.String),
  completed_at: Schema.NullOr(Schema.String),
  created_at: Schema.String,
  updated_at: Schema.NullOr(Schema.String)
})
/** A campaign as the API returns it. */
export type Campaign = typeof Campaign.Type
export declare namespace Campaign {}

/** Response of `GET /campaigns`. */
export const CampaignList = Schema.Struct({ items: Schema.Array(Campaign), pagination: PaginationInfo })

/** One number's warm-up check. */
export const WarmupChannel = Schema.Struct({
  channel_id: UuidId,
  warming_up: Schema.Boolean,
  reasons: Schema.Array(Schema.String),
  /** Unique recipients per rolling 24 hours; null when unlimited or not known. */
  messaging_limit: Schema.NullOr(Schema.Int),
  messaging_limit_known: Schema.Boolean,
  quality_rating: Schema.NullOr(Schema.String),
  audience: Schema.Int,
  /** How many it would reach at once: the first day's batch with split sending, else the whole audience. */
  first_batch: Schema.Int,
  requires_acknowledgement: Schema.Boolean
})

/** Response of `GET /campaigns/{id}/warmup-check` (and the body of its 409). */
export const WarmupCheck = Schema.Struct({
  requires_acknowledgement: Schema.Boolean,
  channels: Schema.Array(WarmupChannel)
})
/** Response of `GET /campaigns/{id}/warmup-check`. */
export type WarmupCheck = typeof WarmupCheck.Type
export declare namespace WarmupCheck {}

/** Response of `GET /campaigns/{id}/statistics`. */
export const CampaignStatistics = Schema.Struct({
  campaign_id: UuidId,
  status: Schema.String,
  throttle_reason: Schema.NullOr(Schema.String),
  audience_size: Schema.NullOr(Schema.Int),
  recipients: Schema.Struct({
    pending: Schema.Int,
    sending: Schema.Int,
    sent: Schema.Int,
    delivered: Schema.Int,
    read: Schema.Int,
    failed: Schema.Int,
    skipped: Schema.Int
  }),
  skipped_by_reason: Schema.Record(Schema.String, Schema.Int),
  batches: Schema.Array(Schema.Struct({
    channel_id: UuidId,
    day: Schema.Int,
    planned_size: Schema.Int,
    starts_at: Schema.String,
    sent: Schema.Int
  })),
  /** Each number's sends a second (its throughput level's, or what the host set): the pace it is sent at. */
  throughput: Schema.Array(Schema.Struct({
    channel_id: UuidId,
    per_second: Schema.Int
  }))
})
/** Response of `GET /campaigns/{id}/statistics`. */
export type CampaignStatistics = typeof CampaignStatistics.Type
export declare namespace CampaignStatistics {}

/** The wire form of a stored campaign. */
export const toCampaign = (record: CampaignRecord): Campaign => ({
  id: record.id,
  tenant_id: record.tenant_id,
  name: record.name,
  status: record.status,
  throttle_reason: record.throttle_reason,
  channel_ids: [...record.channel_ids],
  template_id: record.template_id,
  variable_values: [...record.variable_values],
  audience: { list_ids: [...record.audience.list_ids], contact_ids: [...record.audience.contact_ids] },
  timezone: record.timezone,
  skip_duplicates: record.skip_duplicates,
  split_sending: record.split_sending,
  send_at: record.send_at,
  warmup_acknowledged: record.warmup_acknowledged_at !== null,
  audience_size: record.audience_size,
  next_batch_at: record.status === "sending" || record.status === "scheduled" ? record.next_run_at : null,
  started_at: record.started_at,
  paused_at: record.paused_at,
  completed_at: record.completed_at,
  created_at: record.created_at,
  updated_at: record.updated_at
})
