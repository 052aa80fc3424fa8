import { Effect } from "effect"
import { TestClock } from "effect/testing"
import { describe, expect, it } from "vitest"
import { makeNumberPacer, type NumberWindow, type PacerGrant } from "../../../src/channels/NumberPacer.ts"

// A pacer over made-up reservations of at most 4 slots half a millisecond apart (close enough to go at once): what it
// reserves, and when.
const run = <A, E>(effect: Effect.Effect<A, E>) => Effect.runPromise(effect.pipe(Effect.provide(TestClock.layer())))

const recorder = () => {
  const asked: Array<number> = []
  const reserve = (upTo: number) =>
    Effect.sync((): PacerGrant => {
      asked.push(upTo)
      return { count: Math.min(upTo, 4), spacingMs: 0.5, perSecond: 1_000 }
    })
  return { asked, reserve }
}

describe("NumberPacer", () => {
  it("reserves the next slots while a quarter of the grant is left, and never more than its sends", async () => {
    const { asked, reserve } = recorder()
    const askedBefore: Array<number> = []
    await run(Effect.gen(function*() {
      const window: NumberWindow = { sends: [], perSecond: 1 }
      const pacer = yield* makeNumberPacer(reserve, 10, window)
      for (let i = 0; i < 10; i++) {
        askedBefore.push(asked.length)
        yield* pacer.take
        // Lets a reservation made ahead run before the next take.
        yield* Effect.yieldNow
      }
    }))
    expect(asked).toEqual([10, 6, 2])
    // The second grant was asked for at the first grant's fourth send, before its slots ran out; the
    // third at the second grant's fourth (the eighth send).
    expect(askedBefore).toEqual([0, 1, 1, 1, 2, 2, 2, 2, 3, 3])
  })

  it("keeps about a second of answered sends in the number's window, and every send not yet answered, however many go out", async () => {
    // A number of 100,000 a second: the count alone (99,500) would keep every send of this test.
    const reserve = (upTo: number) => Effect.succeed<PacerGrant>({ count: upTo, spacingMs: 0, perSecond: 100_000 })
    const window: NumberWindow = { sends: [], perSecond: 1 }
    const lengths: Array<number> = []
    let unanswered: { atNs: number; answered: boolean } | undefined
    await run(Effect.gen(function*() {
      const pacer = yield* makeNumberPacer(reserve, 5_000, window)
      // Ten bursts of 500 sends, 400 ms apart: 5,000 sends over 3.6 s.
      for (let burst = 0; burst < 10; burst++) {
        for (let i = 0; i < 500; i++) {
          const slot = yield* pacer.take
          // The very first send is never answered (its request hangs): it may still count, so it stays.
          if (burst === 0 && i === 0) unanswered = window.sends.at(-1)
          else yield* slot.answered
        }
        lengths.push(window.sends.length)
        yield* TestClock.adjust("400 millis")
      }
    }))
    // Within any 1.005 s at most three bursts count (1,500 sends), plus what the last pass left to drop.
    expect(Math.max(...lengths)).toBeLessThanOrEqual(2 * 1_500 + 1)
    expect(lengths.at(-1)).toBeLessThan(5_000)
    expect(window.sends).toContain(unanswered)
    expect(window.sends.filter((sent) => !sent.answered)).toHaveLength(1)
  })

  it("reserves one slot at a time for a pacer of one send, and again if asked for more sends than planned", async () => {
    const { asked, reserve } = recorder()
    await run(Effect.gen(function*() {
      const pacer = yield* makeNumberPacer(reserve, 1, { sends: [], perSecond: 1 })
      yield* pacer.take
      yield* pacer.take
    }))
    expect(asked).toEqual([1, 1])
  })
})
