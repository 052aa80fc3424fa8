import { Context, type Effect, type Option } from "effect"
import type { StorageError } from "./StorageError.ts"

/** A channel's sending rate as stored: the next free send slot of its number, and the rate a host set. */
export interface SendRateRecord {
  readonly tenant_id: string
  readonly channel_id: string
  /** When the number's next send slot opens, in epoch microseconds (0 when no slot was ever reserved). */
  readonly next_free_us: number
  /** Sends a second the host set for the channel; null when the operator's throughput level decides. */
  readonly host_per_second: number | null
}

/** What `reserve` asks for; every time is in epoch microseconds, so a slot 12.5 ms long stays exact. */
export interface SlotRequest {
  /** How many consecutive slots, at least 1. */
  readonly count: number
  /** How long one slot lasts (1,000,000 / sends a second, rounded up), at least 1. */
  readonly intervalUs: number
  /** The caller's clock. */
  readonly nowUs: number
  /** How far past `nowUs` the next free slot may be and still be reserved. */
  readonly maxAheadUs: number
}

/** What a reservation got: slots from `startUs`, one every `intervalUs`; or none, and when the next one is free. */
export type ReservedSlots =
  | { readonly reserved: true; readonly startUs: number }
  | { readonly reserved: false; readonly nextFreeUs: number }

/**
 * The send slots of chat-app numbers, shared by every process on the database (a virtual-scheduling
 * rate limiter, GCRA: one row per channel holds when its next slot opens); every method is scoped by
 * tenant id. Each write is one atomic statement, so two processes reserving at once never get
 * overlapping slots. Call it outside a transaction: inside one, the row stays locked until the commit.
 */
export class SendRateStore extends Context.Service<SendRateStore, {
  readonly get: (tenantId: string, channelId: string) => Effect.Effect<Option.Option<SendRateRecord>, StorageError>
  /**
   * Reserves `count` slots when the next free one is at most `maxAheadUs` past `nowUs`: they start at
   * the later of the next free slot and `nowUs` (a clock gone backwards gains nothing), and the next
   * free slot moves `count × intervalUs` past that start. Otherwise nothing is reserved.
   */
  readonly reserve: (tenantId: string, channelId: string, request: SlotRequest) => Effect.Effect<ReservedSlots, StorageError>
  /** No slot opens before `untilUs` (the operator refused for sending too fast); a later next free slot stays. */
  readonly holdUntil: (tenantId: string, channelId: string, untilUs: number) => Effect.Effect<void, StorageError>
  /** Stores the sends a second the host set for the channel (null: the operator's level decides again). */
  readonly setHostRate: (tenantId: string, channelId: string, perSecond: number | null) => Effect.Effect<void, StorageError>
}>()("omnichannel-core/ports/SendRateStore") {}
