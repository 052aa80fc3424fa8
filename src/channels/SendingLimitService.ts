import { Context, Effect, Layer, Option, Schema } from "effect"
import { NotFound, type OperatorFailed } from "../kernel/ApiError.ts"
import { chatappCredentialsOf } from "../kernel/ChatappChannel.ts"
import type { ChatappFieldHandler } from "../kernel/ChatappEvents.ts"
import { UuidId } from "../kernel/Id.ts"
import { operatorFailure } from "../kernel/OperatorFailure.ts"
import type { StorageError } from "../kernel/StorageError.ts"
import { now } from "../kernel/Timestamp.ts"
import { ChannelStore } from "../ports/ChannelStore.ts"
import { ChatPlatform } from "../ports/ChatPlatform.ts"
import { type SendingLimitRecord, SendingLimitStore } from "../ports/SendingLimitStore.ts"
import { SendRateStore } from "../ports/SendRateStore.ts"
import { perSecondOf } from "./Throughput.ts"

/** The sending limit of a channel as the API returns it (the spec's Sending limit of a chat-app channel). */
export const SendingLimit = Schema.Struct({
  channel_id: UuidId,
  channel_type: Schema.String,
  messaging_limit_tier: Schema.NullOr(Schema.String),
  /** `GREEN`, `YELLOW`, `RED` (or `UNKNOWN`), in upper case. */
  quality_rating: Schema.NullOr(Schema.String),
  throughput_level: Schema.NullOr(Schema.String),
  phone_status: Schema.NullOr(Schema.String),
  /**
   * The messages a second the number is paced to: the rate a host set for the channel, else 1,000 at
   * throughput level `HIGH` and 80 at any other; null for channels that are not chat-app.
   */
  throughput_per_second: Schema.NullOr(Schema.Int),
  stale: Schema.Boolean,
  supported: Schema.Boolean
})
/** The sending limit of a channel. */
export type SendingLimit = typeof SendingLimit.Type
export declare namespace SendingLimit {}

const upper = (value: string | null): string | null => (value === null ? null : value.toUpperCase())
const digits = (value: string | undefined): string => (value ?? "").replace(/\D/g, "")

/**
 * The operator's sending limit of chat-app channels: read from the operator each time it is asked,
 * the last values kept, so they are served (`stale: true`) when the operator cannot be read;
 * `phone_number_quality_update` webhooks refresh what is kept.
 */
export class SendingLimitService extends Context.Service<SendingLimitService, {
  readonly get: (tenantId: string, channelId: string) => Effect.Effect<SendingLimit, NotFound | OperatorFailed | StorageError>
  /**
   * The limit as last read or reported, without asking the operator (`stale: true` when it comes
   * from the store); read from the operator only when nothing is stored yet. For work that looks
   * often (a campaign's every round) after a fresh `get` at its start.
   */
  readonly known: (tenantId: string, channelId: string) => Effect.Effect<SendingLimit, NotFound | OperatorFailed | StorageError>
  /** The inbound handler of `phone_number_quality_update`, routed by business account and display number. */
  readonly qualityHandler: ChatappFieldHandler
}>()("omnichannel-core/channels/SendingLimitService") {
  static readonly layer = Layer.effect(
    SendingLimitService,
    Effect.gen(function*() {
      const channels = yield* ChannelStore
      const limits = yield* SendingLimitStore
      const platform = yield* ChatPlatform
      const rates = yield* SendRateStore

      /** The sends a second the host set for the channel, if it did. */
      const hostRate = (tenantId: string, channelId: string) =>
        Effect.map(rates.get(tenantId, channelId), (stored) => Option.getOrNull(Option.flatMap(stored, (r) => Option.fromNullishOr(r.host_per_second))))

      const wire = Effect.fnUntraced(function*(
        channel: { readonly id: string; readonly tenant_id: string; readonly platform: string },
        record: SendingLimitRecord,
        stale: boolean
      ) {
        return {
          channel_id: channel.id,
          channel_type: channel.platform,
          messaging_limit_tier: record.messaging_limit_tier,
          quality_rating: upper(record.quality_rating),
          throughput_level: record.throughput_level,
          phone_status: record.phone_status,
          throughput_per_second: perSecondOf(record.throughput_level, yield* hostRate(channel.tenant_id, channel.id)),
          stale,
          supported: true
        } satisfies SendingLimit
      })

      const qualityHandler: ChatappFieldHandler = {
        name: "phone number quality",
        handle: (event) =>
          Effect.gen(function*() {
            const value = event.value as Record<string, unknown> | null
            const number = digits(typeof value?.display_phone_number === "string" ? value.display_phone_number : undefined)
            const reported = typeof value?.event === "string" ? value.event.toUpperCase() : null
            const tier = typeof value?.current_limit === "string" ? value.current_limit : null
            if (number === "" || (reported === null && tier === null)) return "continue" as const
            const at = yield* now
            for (const channel of yield* channels.findActiveByConfig("chatapp", "business_account_id", event.entryId)) {
              if (digits(channel.config.display_phone_number) !== number) continue
              const known = yield* limits.get(channel.tenant_id, channel.id)
              const before = Option.getOrUndefined(known)
              yield* limits.put({
                tenant_id: channel.tenant_id,
                channel_id: channel.id,
                messaging_limit_tier: tier ?? before?.messaging_limit_tier ?? null,
                // Flagging happens when quality is low; unflagging says it improved, not to what: the
                // next read of the number says.
                quality_rating: reported === "FLAGGED" ? "RED" : before?.quality_rating ?? null,
                // The operator upgrades a number's throughput by itself and says so here (from 80 to
                // 1,000 messages a second); a read of the number names the level `HIGH`.
                throughput_level: reported === "THROUGHPUT_UPGRADE" ? "HIGH" : before?.throughput_level ?? null,
                phone_status: reported === "FLAGGED" ? "FLAGGED" : reported === "UNFLAGGED" ? "CONNECTED" : before?.phone_status ?? null,
                source: "webhook",
                updated_at: at
              })
            }
            return "continue" as const
          })
      }

      const get = Effect.fn("SendingLimitService.get")(function*(tenantId: string, channelId: string) {
        const found = yield* channels.get(tenantId, channelId)
        if (Option.isNone(found)) return yield* new NotFound({ message: `Channel ${channelId} not found` })
        const channel = found.value
        if (channel.platform !== "chatapp") {
          return {
            channel_id: channel.id,
            channel_type: channel.platform,
            messaging_limit_tier: null,
            quality_rating: null,
            throughput_level: null,
            phone_status: null,
            throughput_per_second: null,
            stale: false,
            supported: false
          }
        }
        const credentials = chatappCredentialsOf(channel)
        const read = channel.status === "active" && Option.isSome(credentials)
          ? yield* Effect.result(platform.phoneNumber(credentials.value))
          : undefined
        if (read !== undefined && read._tag === "Success") {
          const number = read.success
          const record: SendingLimitRecord = {
            tenant_id: tenantId,
            channel_id: channel.id,
            messaging_limit_tier: number.messagingLimitTier,
            quality_rating: upper(number.qualityRating),
            throughput_level: number.throughputLevel,
            phone_status: number.status,
            source: "operator",
            updated_at: yield* now
          }
          yield* limits.put(record)
          return yield* wire(channel, record, false)
        }
        const known = yield* limits.get(tenantId, channel.id)
        if (Option.isSome(known)) return yield* wire(channel, known.value, true)
        if (read !== undefined && read._tag === "Failure") return yield* operatorFailure(read.failure)
        // A disconnected channel never read: nothing is known and nothing can be asked.
        return {
          channel_id: channel.id,
          channel_type: channel.platform,
          messaging_limit_tier: null,
          quality_rating: null,
          throughput_level: null,
          phone_status: channel.status === "active" ? null : "DISCONNECTED",
          throughput_per_second: perSecondOf(null, yield* hostRate(tenantId, channel.id)),
          stale: true,
          supported: true
        }
      })

      return SendingLimitService.of({
        get,
        known: Effect.fn("SendingLimitService.known")(function*(tenantId, channelId) {
          const found = yield* channels.get(tenantId, channelId)
          if (Option.isNone(found)) return yield* new NotFound({ message: `Channel ${channelId} not found` })
          const stored = yield* limits.get(tenantId, channelId)
          if (Option.isSome(stored)) return yield* wire(found.value, stored.value, true)
          return yield* get(tenantId, channelId)
        }),
        qualityHandler
      })
    })
  )
}
