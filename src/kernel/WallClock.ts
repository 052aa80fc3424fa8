import { Context } from "effect"

/**
 * Real time, for the few things that must not follow the test clock: a webhook signature's
 * timestamp is checked by the receiver against its own wall clock, so it is the moment of sending.
 */
export const WallClock = Context.Reference<{ readonly nowMillis: () => number }>(
  "omnichannel-core/kernel/WallClock",
  { defaultValue: () => ({ nowMillis: () => performance.timeOrigin + performance.now() }) }
)
