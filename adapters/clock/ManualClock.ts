import { Clock, Duration, Effect } from "effect"

/** A clock that stands still until advanced; what the host's `OMNI_TEST_CLOCK=manual` installs. */
export interface ManualClock {
  readonly clock: Clock.Clock
  /** Moves "now" forward by `ms` milliseconds. */
  readonly advance: (ms: number) => void
  readonly nowMillis: () => number
}

/**
 * A manual clock starting at `startMillis`. Only "now" is manual: sleeps (poll intervals, network
 * timeouts) still take real time, so the host keeps running while the clock stands still.
 */
export const makeManualClock = (startMillis: number): ManualClock => {
  let current = startMillis
  const realSleep = (duration: Duration.Duration) =>
    Effect.callback<void>((resume) => {
      const timer = setTimeout(() => resume(Effect.void), Duration.toMillis(duration))
      return Effect.sync(() => clearTimeout(timer))
    })
  const startNanos = process.hrtime.bigint()
  const clock: Clock.Clock = {
    currentTimeMillisUnsafe: () => current,
    currentTimeMillis: Effect.sync(() => current),
    currentTimeNanosUnsafe: () => BigInt(current) * 1_000_000n,
    currentTimeNanos: Effect.sync(() => BigInt(current) * 1_000_000n),
    monotonicTimeNanosUnsafe: () => process.hrtime.bigint() - startNanos,
    monotonicTimeNanos: Effect.sync(() => process.hrtime.bigint() - startNanos),
    sleep: realSleep
  }
  return {
    clock,
    advance: (ms) => {
      if (!Number.isFinite(ms) || ms < 0) throw new RangeError("the clock only moves forward")
      current += ms
    },
    nowMillis: () => current
  }
}
