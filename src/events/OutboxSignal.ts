import { Context, Effect, Layer } from "effect"
import { OutboxNotices } from "../ports/OutboxNotices.ts"
import { OutboxStore } from "../ports/OutboxStore.ts"
import { Transactor } from "../ports/Transactor.ts"

/**
 * Tells this process's workers that events were committed to the outbox, so a worker waiting for
 * work starts on them at once rather than at its next look: commits of this process, and those of
 * other processes where the storage passes them on (`OutboxNotices`). Otherwise workers find
 * events at their next look (`idleMs`).
 */
export interface OutboxSignalService {
  /** How many commits with events this process has made so far. */
  readonly mark: () => number
  /** Resolves once a commit with events came after `mark` (at once if one already did). */
  readonly after: (mark: number) => Effect.Effect<void>
}

/** The signal; by default none, so workers only look every `idleMs` (see `withOutboxSignal`). */
export const OutboxSignal = Context.Reference<OutboxSignalService>("omnichannel-core/events/OutboxSignal", {
  defaultValue: () => ({ mark: () => 0, after: () => Effect.never })
})

// The outermost running transaction, and whether it appended events so far.
const Appending = Context.Reference<{ appended: boolean } | undefined>("omnichannel-core/events/OutboxSignal/Appending", {
  defaultValue: () => undefined
})

/**
 * `storage` with the outbox signal: its transactor signals after a transaction that appended events
 * commits (a rolled-back one never does), an append outside a transaction signals at once, and the
 * storage's `OutboxNotices` are listened to from the first wait on. `make` wraps the storage it is
 * given; Effect users composing `servicesLayer` wrap theirs.
 */
export const withOutboxSignal = <A, E, R>(
  storage: Layer.Layer<A | Transactor | OutboxStore, E, R>
): Layer.Layer<A | Transactor | OutboxStore, E, R> =>
  Layer.flatMap(storage, (context) => Layer.effectContext(Effect.gen(function*() {
    let commits = 0
    const waiters = new Set<() => void>()
    const committed = () => {
      commits += 1
      for (const wake of waiters) wake()
      waiters.clear()
    }
    // Other processes' commits are listened to only where a worker waits: an API-only process holds
    // no listening connection.
    const notices = Context.get(context, OutboxNotices)
    let unsubscribe: (() => void) | undefined
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        unsubscribe?.()
      })
    )
    const signal: OutboxSignalService = {
      mark: () => commits,
      after: (mark) =>
        Effect.callback<void>((resume) => {
          unsubscribe ??= notices.subscribe(committed)
          if (commits !== mark) return resume(Effect.void)
          const wake = () => resume(Effect.void)
          waiters.add(wake)
          return Effect.sync(() => {
            waiters.delete(wake)
          })
        })
    }
    const transactor = Context.get(context, Transactor)
    const outbox = Context.get(context, OutboxStore)
    return context.pipe(
      Context.add(Transactor, Transactor.of({
        withTransaction: (effect) =>
          Effect.flatMap(Appending, (outer) => {
            if (outer !== undefined) return transactor.withTransaction(effect)
            const state = { appended: false }
            return transactor.withTransaction(Effect.provideService(effect, Appending, state)).pipe(
              Effect.tap(() =>
                Effect.sync(() => {
                  if (state.appended) committed()
                })
              )
            )
          })
      })),
      Context.add(OutboxStore, OutboxStore.of({
        ...outbox,
        append: (events) =>
          Effect.tap(outbox.append(events), () =>
            Effect.map(Appending, (state) => {
              if (events.length === 0) return
              if (state === undefined) committed()
              else state.appended = true
            }))
      })),
      Context.add(OutboxSignal, signal)
    )
  })))
