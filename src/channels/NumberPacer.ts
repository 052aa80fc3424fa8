import { Clock, Duration, Effect, Semaphore } from "effect"
import type { StorageError } from "../kernel/StorageError.ts"

/** The sliding window a number's rate is counted in by the operator, with a margin for the way there (ns). */
const WINDOW_NS = 1_015_000_000
/** The share of a number's rate sent within any such window from one process. */
const WINDOW_SHARE = 0.98
/** A send slot this close (ms) goes at once: timers cannot wait less than a millisecond or two. */
const EARLY_MS = 3

/** A number's latest sends from this process (monotonic ns), at most a window's worth, and its rate. */
export interface NumberWindow {
  readonly sends: Array<{ atNs: number }>
  perSecond: number
}

/** A send slot taken: `answered` counts the send in its number's window from its answer on. */
export interface SendSlot {
  readonly answered: Effect.Effect<void>
}

/** One sender's pace through a number: `take` waits for its next send slot. */
export interface NumberPacer {
  readonly take: Effect.Effect<SendSlot, StorageError>
}

/**
 * A pacer over a number's shared slots (`reserve`, a few at a time) and this process's window of
 * its sends: never more sends of the number within any second than its rate, so a send late after a
 * stall is not followed by a burst the operator would refuse. Each send counts from its answer: it
 * reached the operator no later, even after a stall.
 */
export const makeNumberPacer = (
  reserve: Effect.Effect<{ readonly count: number; readonly spacingMs: number; readonly perSecond: number }, StorageError>,
  window: NumberWindow
): Effect.Effect<NumberPacer> =>
  Effect.map(Semaphore.make(1), (lock) => {
    let slots: Array<number> = []
    const take = lock.withPermits(1)(Effect.gen(function*() {
      if (slots.length === 0) {
        const grant = yield* reserve
        const base = Number(yield* Clock.monotonicTimeNanos)
        slots = Array.from({ length: grant.count }, (_, i) => base + i * grant.spacingMs * 1e6)
        window.perSecond = grant.perSecond
      }
      const slot = slots.shift()!
      // A little under the rate within any second, for sends that leave together after a stall.
      const perWindow = Math.max(1, Math.floor(window.perSecond * WINDOW_SHARE))
      const { sends } = window
      const oldest = sends.length >= perWindow ? sends[sends.length - perWindow]!.atNs : Number.NEGATIVE_INFINITY
      const startNs = Math.max(slot, oldest + WINDOW_NS)
      // Timers are coarse: a slot a few milliseconds ahead goes now, the window still holding the rate.
      const waitMs = (startNs - Number(yield* Clock.monotonicTimeNanos)) / 1e6
      if (waitMs >= EARLY_MS || (waitMs > 0 && startNs !== slot)) yield* Effect.sleep(Duration.millis(Math.ceil(waitMs)))
      const sent = { atNs: Number(yield* Clock.monotonicTimeNanos) }
      sends.push(sent)
      if (sends.length > perWindow) sends.splice(0, sends.length - perWindow)
      return { answered: Effect.map(Clock.monotonicTimeNanos, (ns) => void (sent.atNs = Number(ns))) }
    }))
    return { take }
  })
