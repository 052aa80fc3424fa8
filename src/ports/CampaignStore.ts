import { Context, type Effect, type Option } from "effect"
import type { StorageError } from "./StorageError.ts"

/**
 * Where a campaign stands: `draft` (being written), `scheduled` (goes out at `send_at`), `sending`
 * (recipients being reached, batch by batch), `paused` (by the user, or held: see
 * `throttle_reason`), `completed` (every recipient reached, failed or skipped).
 */
export type CampaignStatus = "draft" | "scheduled" | "sending" | "paused" | "completed"

/**
 * Why a campaign is not sending right now: held for a warm-up confirmation (paused); waiting for
 * the next day's batch (split sending); waiting for the operator's 24-hour messaging limit to
 * allow more recipients; paused after the operator restricted the number for quality or spam;
 * waiting for the number's throughput (messages per second) to allow more. A new reason is one
 * more entry here.
 */
export const THROTTLE_REASONS = [
  "warmup_acknowledgement_required",
  "daily_batch_limit",
  "chatapp_messaging_limit",
  "quality_restricted",
  "throughput"
] as const

/** Why a campaign is not sending right now: one of `THROTTLE_REASONS`. */
export type ThrottleReason = typeof THROTTLE_REASONS[number]

/** Split sending: the recommended ramp or a fixed daily batch, and the local time later batches start. */
export interface SplitSending {
  readonly mode: "ramp" | "fixed"
  /** For `fixed`: recipients per day and number. */
  readonly daily_batch: number | null
  /** `HH:MM` in the campaign's timezone; null: the first batch's time of day. */
  readonly send_time: string | null
}

/** A campaign as stored. */
export interface CampaignRecord {
  readonly id: string
  readonly tenant_id: string
  readonly name: string
  readonly status: CampaignStatus
  readonly throttle_reason: ThrottleReason | null
  readonly channel_ids: ReadonlyArray<string>
  /** The template chat-app recipients receive (the service's template id). */
  readonly template_id: string | null
  readonly variable_values: ReadonlyArray<string>
  readonly audience: { readonly list_ids: ReadonlyArray<string>; readonly contact_ids: ReadonlyArray<string> }
  /** IANA time zone of `send_time` and of the days of split sending. */
  readonly timezone: string
  readonly skip_duplicates: boolean
  readonly split_sending: SplitSending | null
  readonly send_at: string | null
  /** When the warm-up warning was confirmed, and the audience then; reset by an edit. */
  readonly warmup_acknowledged_at: string | null
  readonly warmup_acknowledged_audience: number | null
  /** Recipients once the audience was read (at the start of sending); null before. */
  readonly audience_size: number | null
  /** When background work should look at the campaign next; null: nothing to do. */
  readonly next_run_at: string | null
  readonly started_at: string | null
  readonly paused_at: string | null
  readonly completed_at: string | null
  readonly created_at: string
  readonly updated_at: string | null
}

/** Columns of a campaign a conditional write may set: all but its identity and creation time. */
export type CampaignChanges = Partial<Omit<CampaignRecord, "id" | "tenant_id" | "created_at">>

/** Where a recipient stands. `sending`: handed to the operator; never handed again (at most once). */
export type RecipientState = "pending" | "sending" | "sent" | "delivered" | "read" | "failed" | "skipped"

/** One person a campaign reaches (or skipped), through one channel. */
export interface CampaignRecipientRecord {
  readonly tenant_id: string
  readonly campaign_id: string
  /** Order of the audience as read; also the recipient's idempotency key within the campaign. */
  readonly seq: number
  readonly contact_id: string
  /** Null for a skipped recipient no channel can reach. */
  readonly channel_id: string | null
  readonly state: RecipientState
  /** `unsubscribed`, `opted_out`, `unreachable`, `duplicate`, … */
  readonly skip_reason: string | null
  /** The day of its batch on its channel (0 = the first), and when that batch may start. */
  readonly batch_day: number
  readonly planned_at: string
  /** When it was handed to the operator (the rolling messaging-limit window counts from it). */
  readonly handed_at: string | null
  /** The conversation message sent, and the operator's id of it. */
  readonly message_id: string | null
  readonly external_id: string | null
  readonly error: string | null
  readonly updated_at: string
}

/** One day's batch of a campaign on a channel. */
export interface CampaignBatchRecord {
  readonly tenant_id: string
  readonly campaign_id: string
  readonly channel_id: string
  readonly day: number
  readonly planned_size: number
  readonly starts_at: string
}

/** A claimed campaign and the holder token that must be shown to release it. */
export interface CampaignClaim {
  readonly campaign: CampaignRecord
  readonly holder: string
}

/** Counts of a campaign's recipients. */
export interface RecipientCounts {
  readonly byState: Readonly<Partial<Record<RecipientState, number>>>
  readonly skippedByReason: Readonly<Record<string, number>>
}

/** Campaigns, their recipients and batches; every method but the claim is scoped by tenant id. */
export class CampaignStore extends Context.Service<CampaignStore, {
  readonly insert: (campaign: CampaignRecord) => Effect.Effect<void, StorageError>
  readonly get: (tenantId: string, id: string) => Effect.Effect<Option.Option<CampaignRecord>, StorageError>
  /** One page, newest first, and the total. */
  readonly list: (
    tenantId: string,
    window: { readonly limit: number; readonly offset: number }
  ) => Effect.Effect<{ readonly items: ReadonlyArray<CampaignRecord>; readonly total: number }, StorageError>
  /** Replaces campaign `campaign.id` of the tenant; `false` when it does not exist there. */
  readonly update: (tenantId: string, campaign: CampaignRecord) => Effect.Effect<boolean, StorageError>
  /**
   * Writes the columns `set` names (and no other) of campaign `id` of the tenant, only while its
   * status is one of `expected`; `true` when it did. A writer that read the campaign earlier so never
   * undoes another's status change made since (a pause during a sending round stays paused).
   */
  readonly transition: (
    tenantId: string,
    id: string,
    change: { readonly expected: ReadonlyArray<CampaignStatus>; readonly set: CampaignChanges }
  ) => Effect.Effect<boolean, StorageError>
  /**
   * Leases up to `limit` campaigns whose `next_run_at` is due at `now` and whose lease (if any) has
   * passed, oldest due first, until `leaseUntil`. Concurrent claimers never take the same one.
   * Cross-tenant, like the other background claims.
   */
  readonly claimDue: (input: {
    readonly now: string
    readonly limit: number
    readonly leaseUntil: string
    readonly holder: string
  }) => Effect.Effect<ReadonlyArray<CampaignClaim>, StorageError>
  /** Drops the lease `holder` holds; `false` when it no longer held it. */
  readonly release: (tenantId: string, id: string, holder: string) => Effect.Effect<boolean, StorageError>

  /**
   * Stores recipients; a `seq` already stored for the campaign is left as it is (reading the
   * audience again after a crash adds nobody twice).
   */
  readonly insertRecipients: (recipients: ReadonlyArray<CampaignRecipientRecord>) => Effect.Effect<void, StorageError>
  /** Whether the campaign already has a recipient for the contact (duplicate skipping). */
  readonly hasRecipient: (tenantId: string, campaignId: string, contactId: string) => Effect.Effect<boolean, StorageError>
  /**
   * Up to `limit` recipients in `state` planned at or before `plannedBy` (null: whenever planned):
   * after `afterSeq` by `seq` (a keyset page), or, with `plannedBy` and no `afterSeq`, the earliest
   * planned first, then by `seq`; only those through `channelId` when it is given (so one number
   * held back never starves another).
   */
  readonly recipientsIn: (
    tenantId: string,
    campaignId: string,
    state: RecipientState,
    page: {
      readonly plannedBy: string | null
      readonly afterSeq: number | null
      readonly limit: number
      readonly channelId?: string
    }
  ) => Effect.Effect<ReadonlyArray<CampaignRecipientRecord>, StorageError>
  /** Replaces recipient (`campaign_id`, `seq`) of the tenant. */
  readonly updateRecipient: (recipient: CampaignRecipientRecord) => Effect.Effect<void, StorageError>
  /** Sets the batch of many pending recipients at once (a new plan after a resume). */
  readonly replanRecipients: (
    tenantId: string,
    campaignId: string,
    plan: ReadonlyArray<{ readonly seq: number; readonly batch_day: number; readonly planned_at: string }>
  ) => Effect.Effect<void, StorageError>
  /** The recipient the operator knows by `externalId` (status webhooks move it). */
  readonly findRecipientByExternalId: (
    tenantId: string,
    channelId: string,
    externalId: string
  ) => Effect.Effect<Option.Option<CampaignRecipientRecord>, StorageError>
  /** The recipients the operator knows by `externalIds` on `channelId` (any order; unknown ids are left out). */
  readonly findRecipientsByExternalIds: (
    tenantId: string,
    channelId: string,
    externalIds: ReadonlyArray<string>
  ) => Effect.Effect<ReadonlyArray<CampaignRecipientRecord>, StorageError>
  /**
   * Moves recipients of `tenantId` to `state` (with `error` and `updated_at`), each only if it is
   * still in the state it was read in (`expected`), and resolves to the moved ones as
   * `campaign_id seq`. Writes only those columns.
   */
  readonly moveRecipients: (
    tenantId: string,
    moves: ReadonlyArray<{
      readonly campaign_id: string
      readonly seq: number
      readonly expected: RecipientState
      readonly state: RecipientState
      readonly error: string | null
      readonly updated_at: string
    }>
  ) => Effect.Effect<ReadonlySet<string>, StorageError>
  /**
   * Settles recipients of one campaign of `tenantId` in one statement: each moves to `state` with
   * its hand-over (`handed_at`), its message (`message_id`, `external_id`), `error` and `updated_at`,
   * only if it is still in the state it was expected in (`expected`). Resolves to the `seq`s moved.
   * Writes only those columns: the hand-over of a page (`pending` → `sending`) and the operator's
   * answers (`sending` → `sent`, `failed`, or back to `pending`) are each a compare-and-set.
   */
  readonly settleRecipients: (
    tenantId: string,
    campaignId: string,
    moves: ReadonlyArray<
      Pick<CampaignRecipientRecord, "seq" | "state" | "handed_at" | "message_id" | "external_id" | "error" | "updated_at"> & {
        readonly expected: RecipientState
      }
    >
  ) => Effect.Effect<ReadonlySet<number>, StorageError>
  readonly counts: (tenantId: string, campaignId: string) => Effect.Effect<RecipientCounts, StorageError>
  /** Recipients per channel and batch day, by state (for the statistics' batches). */
  readonly batchCounts: (
    tenantId: string,
    campaignId: string
  ) => Effect.Effect<
    ReadonlyArray<{ readonly channel_id: string; readonly day: number; readonly state: RecipientState; readonly n: number }>,
    StorageError
  >

  /** Replaces the campaign's batches (the plan). */
  readonly putBatches: (
    tenantId: string,
    campaignId: string,
    batches: ReadonlyArray<CampaignBatchRecord>
  ) => Effect.Effect<void, StorageError>
  /** The campaign's batches, by channel id and then day. */
  readonly batchesOf: (tenantId: string, campaignId: string) => Effect.Effect<ReadonlyArray<CampaignBatchRecord>, StorageError>

  /** Campaigns of the tenant completed through the channel, but `exceptCampaignId` (the warm-up history). */
  readonly completedThrough: (tenantId: string, channelId: string, exceptCampaignId: string) => Effect.Effect<number, StorageError>
  /** Campaign messages sent through the channel (recipients past `sending`), every campaign of the tenant. */
  readonly sentThrough: (tenantId: string, channelId: string) => Effect.Effect<number, StorageError>
  /**
   * Distinct contacts the tenant's campaigns handed to the operator through the channel since
   * `since` (the operator's rolling 24-hour messaging limit), and whether `contactIds` are among them.
   */
  readonly reachedSince: (
    tenantId: string,
    channelId: string,
    since: string,
    contactIds: ReadonlyArray<string>
  ) => Effect.Effect<{ readonly distinct: number; readonly already: ReadonlyArray<string> }, StorageError>
}>()("omnichannel-core/ports/CampaignStore") {}
