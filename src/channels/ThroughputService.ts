import { Clock, Context, Duration, Effect, Layer, Option } from "effect"
import { makeNumberPacer, type NumberPacer, type NumberWindow } from "./NumberPacer.ts"
import { InvalidRequest, NotFound } from "../kernel/ApiError.ts"
import type { StorageError } from "../kernel/StorageError.ts"
import { ChannelStore } from "../ports/ChannelStore.ts"
import { SendingLimitStore } from "../ports/SendingLimitStore.ts"
import { SendRateStore } from "../ports/SendRateStore.ts"
import { MAX_AHEAD_MS, MAX_HOST_PER_SECOND, perSecondOf, reservationSizeOf, slotMicrosOf } from "./Throughput.ts"

export type { NumberPacer, SendSlot } from "./NumberPacer.ts"

/**
 * Send slots granted by `acquire`: `count` sends, the i-th at `startMs + i × spacingMs` (`acquire`
 * returns once `startMs` has come, so the first may go at once).
 */
export interface ThroughputGrant {
  /** How many sends were granted, from 1 to what was asked. */
  readonly count: number
  /** When the first slot opens, in epoch milliseconds (a fraction for slots shorter than a millisecond's multiple). */
  readonly startMs: number
  /** The time between two sends, in milliseconds (12.5 at 80 a second). */
  readonly spacingMs: number
  /** The number's sends a second the grant was made at. */
  readonly perSecond: number
}

/** A channel's throughput as a host set it (`admin channel set-throughput`). */
export interface ChannelThroughput {
  readonly channel_id: string
  /** The sends a second the channel's number is paced to now. */
  readonly throughput_per_second: number
  /** Whether the host set it (otherwise the operator's throughput level decides). */
  readonly set_by_host: boolean
}

// How long this process goes on using a number's rate before reading it again: an upgrade, or a
// host's new rate, reaches every process within a second, at two reads a second per sending number.
const RATE_FRESH_MS = 1_000

/**
 * The pace of chat-app numbers, shared by every process sending through one: each send takes a slot
 * of its number, reserved in the database (`SendRateStore`), at the number's rate (`Throughput.ts`).
 */
export class ThroughputService extends Context.Service<ThroughputService, {
  /** The sends a second the channel's number is paced to: the host's rate if set, else its throughput level's. */
  readonly rate: (tenantId: string, channelId: string) => Effect.Effect<number, StorageError>
  /**
   * Reserves up to `n` (at least 1) consecutive send slots of the channel's number, at most a tenth of
   * a second's worth, and waits until the first opens (on Effect's clock); while the number's slots
   * are taken more than a second ahead, waits for them first. Call it outside a transaction.
   */
  readonly acquire: (tenantId: string, channelId: string, n: number) => Effect.Effect<ThroughputGrant, StorageError>
  /**
   * Opens no slot of the number for `ms` from now: for when the operator answered 130429 (the number
   * sent above its throughput) or 131056 (too fast to one recipient). Reports of one refusal from
   * several sends in flight hold it once, not once each.
   */
  readonly penalize: (tenantId: string, channelId: string, ms: number) => Effect.Effect<void, StorageError>
  /**
   * A pacer for up to `n` sends through the channel's number: each `take` waits for a slot reserved
   * with `acquire`, and this process never sends the number more than its rate within any second.
   */
  readonly pacer: (tenantId: string, channelId: string, n: number) => Effect.Effect<NumberPacer>
  /** Sets the channel's sends a second (a whole number, 1 to 100,000), or with null leaves it to the operator's level. */
  readonly setRate: (
    tenantId: string,
    channelId: string,
    perSecond: number | null
  ) => Effect.Effect<ChannelThroughput, NotFound | InvalidRequest | StorageError>
}>()("omnichannel-core/channels/ThroughputService") {
  static readonly layer = Layer.effect(
    ThroughputService,
    Effect.gen(function*() {
      const channels = yield* ChannelStore
      const limits = yield* SendingLimitStore
      const slots = yield* SendRateStore
      const known = new Map<string, { readonly perSecond: number; readonly readAt: number }>()
      const keyOf = (tenantId: string, channelId: string) => `${tenantId}\u0000${channelId}`

      const read = (tenantId: string, channelId: string) =>
        Effect.map(
          Effect.all([limits.get(tenantId, channelId), slots.get(tenantId, channelId)]),
          ([limit, stored]) =>
            perSecondOf(
              Option.getOrNull(Option.map(limit, (l) => l.throughput_level)),
              Option.getOrNull(Option.flatMap(stored, (s) => Option.fromNullishOr(s.host_per_second)))
            )
        )

      const rate = Effect.fn("ThroughputService.rate")(function*(tenantId: string, channelId: string) {
        const at = yield* Clock.currentTimeMillis
        const key = keyOf(tenantId, channelId)
        const cached = known.get(key)
        // A clock gone backwards reads again rather than trusting a time it cannot place.
        if (cached !== undefined && at >= cached.readAt && at - cached.readAt < RATE_FRESH_MS) return cached.perSecond
        const perSecond = yield* read(tenantId, channelId)
        known.set(key, { perSecond, readAt: at })
        return perSecond
      })

      // The time slots are reserved in: the clock's, moved on by real (monotonic) time while the clock
      // stands still, as a host's manual test clock does, so a frozen clock never stalls a paced
      // sender. With a wall clock the two agree to the millisecond.
      let still: { readonly clockMs: number; readonly monoNs: bigint } | undefined
      const pacingNowMs = Effect.gen(function*() {
        const clockMs = yield* Clock.currentTimeMillis
        const monoNs = yield* Clock.monotonicTimeNanos
        if (still === undefined || still.clockMs !== clockMs) {
          still = { clockMs, monoNs }
          return clockMs
        }
        return clockMs + Math.floor(Number(monoNs - still.monoNs) / 1e6)
      })

      const acquire = Effect.fn("ThroughputService.acquire")(function*(tenantId: string, channelId: string, n: number) {
        const perSecond = yield* rate(tenantId, channelId)
        const intervalUs = slotMicrosOf(perSecond)
        const count = Math.max(1, Math.min(Math.floor(n), reservationSizeOf(perSecond)))
        while (true) {
          const nowMs = yield* pacingNowMs
          const got = yield* slots.reserve(tenantId, channelId, {
            count,
            intervalUs,
            nowUs: nowMs * 1000,
            maxAheadUs: MAX_AHEAD_MS * 1000
          })
          if (got.reserved) {
            const wait = Math.ceil(got.startUs / 1000) - nowMs
            if (wait > 0) yield* Effect.sleep(Duration.millis(wait))
            return { count, startMs: got.startUs / 1000, spacingMs: intervalUs / 1000, perSecond }
          }
          // Taken too far ahead (other senders, or a hold after a refusal): wait until in reach.
          yield* Effect.sleep(Duration.millis(Math.max(1, Math.ceil(got.nextFreeUs / 1000) - MAX_AHEAD_MS - nowMs)))
        }
      })

      // Each number's sends from this process, shared by all its pacers.
      const windows = new Map<string, NumberWindow>()

      return ThroughputService.of({
        rate,
        acquire,
        pacer: (tenantId, channelId, n) => {
          const key = keyOf(tenantId, channelId)
          let window = windows.get(key)
          if (window === undefined) {
            window = { sends: [], perSecond: 1 }
            windows.set(key, window)
          }
          return makeNumberPacer((upTo) => acquire(tenantId, channelId, upTo), n, window)
        },
        penalize: Effect.fn("ThroughputService.penalize")(function*(tenantId: string, channelId: string, ms: number) {
          const nowMs = yield* pacingNowMs
          yield* slots.holdUntil(tenantId, channelId, Math.ceil((nowMs + Math.max(0, ms)) * 1000))
        }),
        setRate: Effect.fn("ThroughputService.setRate")(function*(tenantId: string, channelId: string, perSecond: number | null) {
          const found = yield* channels.get(tenantId, channelId)
          if (Option.isNone(found)) return yield* new NotFound({ message: `Channel ${channelId} not found` })
          if (found.value.platform !== "chatapp") {
            return yield* InvalidRequest.single(["channel_id"], `Channel ${channelId} is not a chat-app channel: only chat-app numbers are paced`)
          }
          if (perSecond !== null && !(Number.isInteger(perSecond) && perSecond >= 1 && perSecond <= MAX_HOST_PER_SECOND)) {
            return yield* InvalidRequest.single(["per_second"], `Sends a second must be a whole number from 1 to ${MAX_HOST_PER_SECOND}`)
          }
          yield* slots.setHostRate(tenantId, channelId, perSecond)
          known.delete(keyOf(tenantId, channelId))
          return { channel_id: channelId, throughput_per_second: yield* rate(tenantId, channelId), set_by_host: perSecond !== null }
        })
      })
    })
  )
}
