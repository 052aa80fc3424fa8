import { Context, type Effect, type Option } from "effect"
import type { StorageError } from "./StorageError.ts"

/** The last known sending limit of a chat-app channel's number, as the operator reported it. */
export interface SendingLimitRecord {
  readonly tenant_id: string
  readonly channel_id: string
  /** e.g. `TIER_1K`; null when not reported. */
  readonly messaging_limit_tier: string | null
  /** `GREEN`, `YELLOW`, `RED` or `UNKNOWN`, in upper case. */
  readonly quality_rating: string | null
  /** e.g. `STANDARD`, `HIGH`. */
  readonly throughput_level: string | null
  /** e.g. `CONNECTED`, `FLAGGED`, `RESTRICTED`. */
  readonly phone_status: string | null
  /** Where the values last came from: a read of the number, or a quality webhook. */
  readonly source: "operator" | "webhook"
  readonly updated_at: string
}

/** Sending limits per channel; every method is scoped by tenant id. */
export class SendingLimitStore extends Context.Service<SendingLimitStore, {
  readonly get: (tenantId: string, channelId: string) => Effect.Effect<Option.Option<SendingLimitRecord>, StorageError>
  /** Stores the channel's values, replacing the ones before. */
  readonly put: (record: SendingLimitRecord) => Effect.Effect<void, StorageError>
}>()("omnichannel-core/ports/SendingLimitStore") {}
