import { Cause, Effect, Exit, Option, Queue } from "effect"
import { idle, type Running } from "../../kernel/BackgroundWork.ts"
import type { StorageError } from "../../ports/StorageError.ts"
import { makeDeliveryFeed } from "./DeliveryFeed.ts"
import { makeDeliveryPump } from "./DeliveryPump.ts"
import { DispatchSettings } from "./DispatchSettings.ts"
import type { Attempted, Leased } from "./Leased.ts"
import { makeOutcomeRecorder } from "./OutcomeRecorder.ts"
import { initialRunState } from "./RunState.ts"

/**
 * A running worker's recorder, holding fewer than `RECORD_GATHER` outcomes while requests are still
 * in flight, waits `RECORD_GATHER_MS` of real time for more before it writes them.
 */
const RECORD_GATHER = 256
const RECORD_GATHER_MS = 50

/**
 * Resolves to one run of delivery work: the feed (claims and fan-out) fills a local queue while the
 * pump keeps requests in flight and the recorder writes outcomes back in group commits (whatever
 * came back while the previous transaction ran goes into the next). The next batch is fetched while
 * the current one is in flight, so the connection pool stays busy.
 *
 * Without `running` (a drain) the run ends once there is nothing new to fan out and nothing due;
 * with it (a worker) it goes on looking every `idleMs` until `stopping`. Either way it ends only
 * after everything it sent is recorded, and returns events fanned out plus attempts made. A
 * storage failure stops the feeding, lets what is in flight finish and be recorded, and then
 * fails the run; deliveries it held come back when their lease passes.
 */
export const makeDeliveryRun = Effect.gen(function*() {
  const settings = yield* DispatchSettings
  const feed = yield* makeDeliveryFeed
  const pump = yield* makeDeliveryPump
  const record = yield* makeOutcomeRecorder

  return (running: Running | undefined): Effect.Effect<number, StorageError> =>
    Effect.gen(function*() {
      const work = yield* Queue.bounded<Leased, Cause.Done>(settings.attemptBatch)
      const finished = yield* Queue.unbounded<Attempted, Cause.Done>()
      const run = initialRunState()
      const recorder = Effect.gen(function*() {
        for (;;) {
          const batch = yield* Queue.takeAll(finished).pipe(Effect.option)
          if (Option.isNone(batch)) return
          const results: Array<Attempted> = [...batch.value]
          // While more is on its way, a running worker lets a small batch gather for a moment: a group
          // commit's statements cost about the same for 20 outcomes as for 250, and receivers already
          // have what is recorded here. Once nothing is in flight, what came back is written at once.
          if (running !== undefined && results.length < RECORD_GATHER && run.inFlight > 0) {
            yield* idle(running, RECORD_GATHER_MS)
            results.push(...yield* Queue.clear(finished))
          }
          for (const endpointId of yield* record(results)) run.stoppedIn.set(endpointId, run.rounds)
        }
      })
      const [fed, , recorded] = yield* Effect.all(
        [Effect.exit(feed(run, running, work)), pump(run, work, finished), Effect.exit(recorder)],
        { concurrency: "unbounded" }
      )
      if (Exit.isFailure(fed)) return yield* Effect.failCause(fed.cause)
      if (Exit.isFailure(recorded)) return yield* Effect.failCause(recorded.cause)
      return run.done
    })
})
