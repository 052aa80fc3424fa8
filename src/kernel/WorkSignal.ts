import { Context, Effect } from "effect"

/**
 * Tells this process's waiting workers that new work was stored (an inbound payload), so a worker
 * idle between looks starts on it at once instead of at its next look. Like the outbox signal: a
 * `mark` taken before a round, and `after(mark)` resolving once something came since.
 */
export interface WorkSignal {
  readonly mark: () => number
  readonly notify: () => void
  readonly after: (mark: number) => Effect.Effect<void>
}

/** A signal for one kind of work. */
export const makeWorkSignal = (): WorkSignal => {
  let count = 0
  const waiters = new Set<() => void>()
  return {
    mark: () => count,
    notify: () => {
      count += 1
      for (const wake of waiters) wake()
      waiters.clear()
    },
    after: (mark) =>
      Effect.callback<void>((resume) => {
        if (count !== mark) return resume(Effect.void)
        const wake = () => resume(Effect.void)
        waiters.add(wake)
        return Effect.sync(() => {
          waiters.delete(wake)
        })
      })
  }
}

/** Inbound payloads stored by this process (the webhook routes notify, the inbound worker waits). */
export const InboundSignal = Context.Reference<WorkSignal>("omnichannel-core/kernel/InboundSignal", {
  defaultValue: makeWorkSignal
})
