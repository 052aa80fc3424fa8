import { Context, Effect } from "effect"
import type { StorageError } from "../ports/StorageError.ts"

/** A kind of background work: `runDue` does what is due now (by the Clock) and says how many units it did. */
export interface BackgroundJob {
  readonly name: string
  readonly runDue: Effect.Effect<number, StorageError>
}

/** The background jobs the composed areas contribute; hosts run them on workers, tests drain them. */
export class BackgroundWork extends Context.Service<BackgroundWork, {
  readonly jobs: ReadonlyArray<BackgroundJob>
}>()("omnichannel-core/kernel/BackgroundWork") {}

/**
 * Runs every job until none reports work left, at most `maxRounds` rounds (a guard against a job
 * that always finds work). Returns the units done.
 */
export const drainDueWork = (jobs: ReadonlyArray<BackgroundJob>, maxRounds = 10_000): Effect.Effect<number, StorageError> =>
  Effect.gen(function*() {
    let total = 0
    for (let round = 0; round < maxRounds; round++) {
      let done = 0
      for (const job of jobs) done += yield* job.runDue
      total += done
      if (done === 0) break
    }
    return total
  })
