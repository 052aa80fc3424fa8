import { Clock, Effect } from "effect"

/**
 * Timestamps travel and are stored as fixed-width ISO 8601 UTC strings with milliseconds
 * (`2026-11-22T10:00:00.000Z`), so text order equals time order in every database.
 */
export type Timestamp = string

/** The current time from Effect's Clock, so the test clock drives everything. */
export const now: Effect.Effect<Timestamp> = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms).toISOString())

/** The current time in epoch milliseconds from Effect's Clock. */
export const nowMillis: Effect.Effect<number> = Clock.currentTimeMillis

/** `timestamp` moved by `seconds` (negative moves back). */
export const addSeconds = (timestamp: Timestamp, seconds: number): Timestamp =>
  new Date(Date.parse(timestamp) + seconds * 1000).toISOString()

/** Epoch milliseconds as a wire timestamp. */
export const fromMillis = (ms: number): Timestamp => new Date(ms).toISOString()
