import type { WorkSignal } from "./WorkSignal.ts"
import { Cause, Context, Deferred, Effect } from "effect"
import type { StorageError } from "./StorageError.ts"
import { untraced } from "./TraceContext.ts"

/** Tells a long-running job when to wind down, and how long to wait between looks when idle. */
export interface Running {
  /** Completes when the worker is asked to stop. */
  readonly stopping: Deferred.Deferred<void>
  /** Real milliseconds to wait before looking again after finding nothing to do. */
  readonly idleMs: number
  /** A job that works as a pipeline (`runUntil`) calls this at each of its rounds: it is alive. */
  readonly beat?: () => void
}

/**
 * A kind of background work. `runDue` does what is due now (by the Clock) and says how many
 * units it did; a drain calls it until it finds nothing. A job that works as a pipeline also has
 * `runUntil`: it keeps working, and looking for work while idle, until `stopping` completes, then
 * finishes what it holds and returns; a worker prefers it to polling `runDue`.
 */
export interface BackgroundJob {
  readonly name: string
  readonly runDue: Effect.Effect<number, StorageError>
  readonly runUntil?: (running: Running) => Effect.Effect<void, StorageError>
  /** The least real time a worker waits before polling `runDue` again when it found nothing. */
  readonly pollEveryMs?: number
  /** Ends that wait early when new work is stored in this process (see `WorkSignal`). */
  readonly wake?: WorkSignal
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
      for (const job of jobs) done += yield* untraced(job.runDue)
      total += done
      if (done === 0) break
    }
    return total
  })

/**
 * Waits `ms` of real time, or less if `stopping` completes first. Poll intervals are real time on
 * purpose: a manual test clock moves "now", and must not freeze a worker's loop.
 */
export const idle = (running: Running, ms = running.idleMs): Effect.Effect<void> =>
  Effect.raceFirst(
    Effect.callback<void>((resume) => {
      const timer = setTimeout(() => resume(Effect.void), ms)
      return Effect.sync(() => clearTimeout(timer))
    }),
    Deferred.await(running.stopping)
  )

/**
 * One worker: every job in its own loop, at once, until `running.stopping` completes; then each
 * finishes what it holds. A failed round is reported to `onError` and the loop goes on after an
 * idle wait: a database that is briefly away must not stop background work for good. `onBeat` hears
 * each loop's rounds (a pipeline's too), so a host can tell a live worker from a stuck one. Rounds
 * run untraced: only the work they find makes spans (`inJobSpan`).
 */
export const runWorker = (
  jobs: ReadonlyArray<BackgroundJob>,
  running: Running,
  onError: (job: string, cause: Cause.Cause<unknown>) => Effect.Effect<void>,
  onBeat: (job: string) => void = () => undefined
): Effect.Effect<void> =>
  Effect.forEach(jobs, (job) =>
    Effect.gen(function*() {
      const beat = () => onBeat(job.name)
      const pipeline: Running = { ...running, beat }
      while (!(yield* Deferred.isDone(running.stopping))) {
        beat()
        const round = untraced(job.runUntil === undefined ? job.runDue : Effect.as(job.runUntil(pipeline), 1))
        const mark = job.wake?.mark()
        const exit = yield* Effect.exit(round)
        if (exit._tag === "Failure") {
          yield* onError(job.name, exit.cause)
          yield* idle(running)
        } else if (exit.value === 0) {
          const wait = idle(running, Math.max(running.idleMs, job.pollEveryMs ?? 0))
          yield* job.wake === undefined || mark === undefined ? wait : Effect.raceFirst(wait, job.wake.after(mark))
        }
      }
    }), { concurrency: "unbounded", discard: true })
