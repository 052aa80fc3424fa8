import { Deferred, Effect, Fiber, Latch, type Option } from "effect"
import { Transactor } from "../../src/ports/Transactor.ts"

// How long the second transaction is given to answer while the first holds its rows: far longer than
// any query takes that does not wait, so one that answers within it was not held back.
const GRACE = "300 millis"

const inTransaction = <A, E, R>(effect: Effect.Effect<A, E, R>) => Transactor.use((t) => t.withTransaction(effect))

/** What the second of two contending transactions answered. */
export interface Contended<A> {
  /** Its answer while the first transaction was still open: none if it was waiting for it. */
  readonly whileHeld: Option.Option<A>
  /** Its answer once the first transaction committed. */
  readonly after: A
}

/**
 * Two transactions on separate connections: the first runs `hold` and stays open; meanwhile the
 * second runs `contend`; once that answered or the grace period passed, the first runs `finish`
 * with what `hold` returned, and commits. For the ports' promises that a row read or held "until the transaction
 * ends" keeps another transaction waiting, and that it then sees what the first one wrote.
 */
export const contend = <H, A, E, R>(steps: {
  readonly hold: Effect.Effect<H, E, R>
  readonly finish: (held: H) => Effect.Effect<unknown, E, R>
  readonly contend: Effect.Effect<A, E, R>
}): Effect.Effect<Contended<A>, unknown, R | Transactor> =>
  Effect.gen(function*() {
    const holding = yield* Latch.make(false)
    const release = yield* Latch.make(false)
    const answered = yield* Deferred.make<A>()
    const first = yield* Effect.forkChild(inTransaction(Effect.gen(function*() {
      const held = yield* steps.hold
      yield* Latch.open(holding)
      yield* Latch.await(release)
      yield* steps.finish(held)
    // A first transaction that fails before holding must not leave the second waiting to start.
    })).pipe(Effect.ensuring(Latch.open(holding))))
    yield* Latch.await(holding)
    const second = yield* Effect.forkChild(inTransaction(Effect.tap(steps.contend, (a) => Deferred.succeed(answered, a))))
    const whileHeld = yield* Deferred.await(answered).pipe(Effect.timeoutOption(GRACE))
    yield* Latch.open(release)
    yield* Fiber.join(first)
    return { whileHeld, after: yield* Fiber.join(second) }
  })
