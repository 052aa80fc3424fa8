import { Context } from "effect"

/**
 * Commits of events by other processes, where the storage can tell (PostgreSQL's LISTEN/NOTIFY):
 * `subscribe` calls `onNotice` for each (and once after a lost connection is back, for any it
 * missed) until the returned function is called.
 */
export interface OutboxNoticesService {
  readonly subscribe: (onNotice: () => void) => () => void
}

/** Other processes' outbox commits, provided by storage that hears of them; by default there are none. */
export const OutboxNotices = Context.Reference<OutboxNoticesService>("omnichannel-core/ports/OutboxNotices", {
  defaultValue: () => ({ subscribe: () => () => {} })
})
