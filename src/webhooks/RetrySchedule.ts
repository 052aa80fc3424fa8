import { addSeconds, type Timestamp } from "../kernel/Timestamp.ts"
import type { RetryStrategy } from "../ports/WebhookEndpointStore.ts"

/** How an endpoint's failed deliveries are retried: the spec's three strategies (stored as the port declares it). */
export { RetryStrategy } from "../ports/WebhookEndpointStore.ts"

// Retries 1 to 6 wait these; the last entry, 30 minutes, serves the 7th retry and every later one.
const EXPONENTIAL_DELAYS_SECONDS = [5, 10, 30, 2 * 60, 5 * 60, 10 * 60, 30 * 60] as const
const LINEAR_DELAY_SECONDS = 60

/** Seconds to wait before retry `retryNumber` (1-based), or null when the strategy makes no retries. */
export const retryDelaySeconds = (strategy: RetryStrategy, retryNumber: number): number | null => {
  // A retry number below 1 can only come from a counting bug; failing loudly beats a silent 5 s.
  if (!Number.isInteger(retryNumber) || retryNumber < 1) throw new RangeError(`retry number ${retryNumber} is not ≥ 1`)
  switch (strategy) {
    case "exponential":
      return EXPONENTIAL_DELAYS_SECONDS[Math.min(retryNumber, EXPONENTIAL_DELAYS_SECONDS.length) - 1]!
    case "linear":
      return LINEAR_DELAY_SECONDS
    case "none":
      return null
  }
}

/** The circuit breaker trips at this many consecutive failed delivery attempts. */
export const SUSPEND_AFTER_CONSECUTIVE_FAILURES = 20

/** At most this many deliveries wait as `queued` behind one suspended endpoint. */
export const MAX_QUEUED_PER_ENDPOINT = 10_000

// The automatic checks after a suspension, as offsets from suspended_at: 1m, 5m, 15m, 30m, 1h, 2h, 4h, 8h, 12h.
const REVERIFICATION_OFFSETS_SECONDS = [60, 5 * 60, 15 * 60, 30 * 60, 3600, 2 * 3600, 4 * 3600, 8 * 3600, 12 * 3600]

/** The instants of the automatic re-verification checks of an endpoint suspended at `suspended_at`. */
export const reverificationSchedule = (suspended_at: Timestamp): ReadonlyArray<Timestamp> =>
  REVERIFICATION_OFFSETS_SECONDS.map((seconds) => addSeconds(suspended_at, seconds))

/**
 * The first scheduled check strictly after `after`, or null once the +12h check is behind it.
 * Instants already past are skipped rather than run back to back, so a worker that was down
 * cannot burn the 12-hour suspension window in a few seconds of catch-up checks.
 */
export const nextReverificationAt = (suspended_at: Timestamp, after: Timestamp): Timestamp | null =>
  reverificationSchedule(suspended_at).find((instant) => instant > after) ?? null
