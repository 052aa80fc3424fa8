import { Clock, Duration, Effect, Fiber, Semaphore } from "effect"
import type { StorageError } from "../kernel/StorageError.ts"

/**
 * The sliding window a number's rate is counted in by the operator, with a margin (ns). Sends count
 * from their answers, which come after they reached the operator, so the margin is only for clocks.
 */
const WINDOW_NS = 1_005_000_000
/** The share of a number's rate sent within any such window from one process. */
const WINDOW_SHARE = 0.995
/**
 * The next slots are reserved when a grant has this share left: the reservation (a statement, then a
 * wait for its first slot) overlaps the grant's last sends, so the number's slots follow each other
 * without the gap a reservation made after the last send would leave (5 to 7 % of a 1,000/s level).
 */
const PREFETCH_SHARE = 0.25
/** A send slot this close (ms) goes at once: timers cannot wait less than a millisecond or two. */
const EARLY_MS = 3

/**
 * A number's latest sends from this process (monotonic ns; `answered` once its answer moved it
 * there), at most a window's worth, and its rate.
 */
export interface NumberWindow {
  readonly sends: Array<{ atNs: number; answered: boolean }>
  perSecond: number
  /** When `sends` is this long, the sends that count no more are dropped (twice what was kept then). */
  compactAt?: number
}

/** The least length at which a window drops the sends that count no more. */
const COMPACT_FROM = 64

/** A send slot taken: `answered` counts the send in its number's window from its answer on. */
export interface SendSlot {
  readonly answered: Effect.Effect<void>
}

/** One sender's pace through a number: `take` waits for its next send slot. */
export interface NumberPacer {
  readonly take: Effect.Effect<SendSlot, StorageError>
}

/** The slots a reservation granted. */
export interface PacerGrant {
  readonly count: number
  readonly spacingMs: number
  readonly perSecond: number
}

/**
 * A pacer over a number's shared slots (`reserve(upTo)`, a few at a time, resolving when the first
 * opens) for `total` sends, and this process's window of its sends: never more sends of the number
 * within any second than its rate, so a send late after a stall is not followed by a burst the
 * operator would refuse. Each send counts from its answer: it reached the operator no later, even
 * after a stall. The next grant is reserved while the current one still has a quarter left (never
 * beyond `total`), so a steady sender's slots follow each other without a gap.
 */
export const makeNumberPacer = (
  reserve: (upTo: number) => Effect.Effect<PacerGrant, StorageError>,
  total: number,
  window: NumberWindow
): Effect.Effect<NumberPacer> =>
  Effect.map(Semaphore.make(1), (lock) => {
    let slots: Array<number> = []
    // Slots granted so far (used or waiting), and the reservation made ahead, if any.
    let granted = 0
    let prefetchAt = Number.POSITIVE_INFINITY
    let ahead: Fiber.Fiber<PacerGrant, StorageError> | undefined
    const take = lock.withPermits(1)(Effect.gen(function*() {
      if (slots.length === 0) {
        const next = ahead
        ahead = undefined
        const grant = next === undefined ? yield* reserve(Math.max(1, total - granted)) : yield* Fiber.join(next)
        granted += grant.count
        const base = Number(yield* Clock.monotonicTimeNanos)
        slots = Array.from({ length: grant.count }, (_, i) => base + i * grant.spacingMs * 1e6)
        window.perSecond = grant.perSecond
        // The next grant is asked for once this one is a quarter from its end (at once for one slot).
        prefetchAt = slots[Math.floor(grant.count * (1 - PREFETCH_SHARE))]!
      }
      const slot = slots.shift()!
      if (ahead === undefined && granted < total && slot >= prefetchAt) {
        ahead = yield* Effect.forkDetach(reserve(total - granted))
        prefetchAt = Number.POSITIVE_INFINITY
      }
      // A little under the rate within any second, for sends that leave together after a stall.
      const perWindow = Math.max(1, Math.floor(window.perSecond * WINDOW_SHARE))
      const { sends } = window
      const oldest = sends.length >= perWindow ? sends[sends.length - perWindow]!.atNs : Number.NEGATIVE_INFINITY
      const startNs = Math.max(slot, oldest + WINDOW_NS)
      // Timers are coarse: a slot a few milliseconds ahead goes now, the window still holding the rate.
      const waitMs = (startNs - Number(yield* Clock.monotonicTimeNanos)) / 1e6
      if (waitMs >= EARLY_MS || (waitMs > 0 && startNs !== slot)) yield* Effect.sleep(Duration.millis(Math.ceil(waitMs)))
      const sent = { atNs: Number(yield* Clock.monotonicTimeNanos), answered: false }
      sends.push(sent)
      // Only a window's worth is kept, by count and by age: a send answered over a window ago counts no
      // more (one still unanswered may yet count from its answer, so it stays). Dropped in one pass once
      // the window doubled since the last, so the cost per send stays constant at any rate.
      if (sends.length >= (window.compactAt ?? COMPACT_FROM)) {
        let kept = 0
        for (const earlier of sends) if (!earlier.answered || earlier.atNs + WINDOW_NS > sent.atNs) sends[kept++] = earlier
        sends.length = kept
        window.compactAt = Math.max(COMPACT_FROM, 2 * kept)
      }
      if (sends.length > perWindow) sends.splice(0, sends.length - perWindow)
      return {
        answered: Effect.map(Clock.monotonicTimeNanos, (ns) => {
          sent.atNs = Number(ns)
          sent.answered = true
        })
      }
    }))
    return { take }
  })
