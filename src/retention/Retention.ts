import { Context } from "effect"
import { fromMillis, type Timestamp } from "../kernel/Timestamp.ts"

/** Milliseconds in a day of retention: 24 hours of the Clock, whatever the calendar says. */
export const DAY_MS = 86_400_000

/**
 * How long an upload or a fetched file waits for a send: one day of the Clock. No message carried it
 * by then, so the retention job deletes it, record and bytes, whatever `days` says.
 */
export const UNSENT_UPLOAD_MS = DAY_MS

/** The longest retention accepted: 100 years, so a cut-off stays a four-digit year. */
export const MAX_RETENTION_DAYS = 36_500

/** How long finished work is kept, and how the prune paces itself. */
export interface RetentionSettings {
  /** Days a finished delivery, its outbox event or a handled inbound payload is kept after it finished. */
  readonly days: number
  /** Rows one statement deletes at most. */
  readonly batchSize: number
  /** Real milliseconds a worker rests at least between two batches, so other writers get the database in between. */
  readonly pauseMs: number
  /**
   * A worker's rest after a batch, as a multiple of the real time the batch took: 9 keeps the prune
   * to at most a tenth of the worker's time however slow the database is at that moment.
   */
  readonly restFactor: number
  /** Real milliseconds a worker waits before looking again once a pass found nothing left. */
  readonly pollEveryMs: number
}

/** Retention's settings; the defaults keep 30 days and delete 500 rows a statement. */
export const RetentionSettings = Context.Reference<RetentionSettings>("omnichannel-core/retention/RetentionSettings", {
  defaultValue: () => ({ days: 30, batchSize: 500, pauseMs: 25, restFactor: 9, pollEveryMs: 60_000 })
})

/**
 * The cut-off of a pass at `nowMillis` (from the Clock): rows that finished strictly before it have
 * been kept `days` full days and may go; a row that finished exactly `days` days ago stays.
 */
export const cutoffOf = (nowMillis: number, days: number): Timestamp => fromMillis(nowMillis - days * DAY_MS)

/** Whether `value` is an accepted retention: a whole number of days from 1 to `MAX_RETENTION_DAYS`. */
export const isRetentionDays = (value: unknown): value is number =>
  typeof value === "number" && Number.isInteger(value) && value >= 1 && value <= MAX_RETENTION_DAYS

/**
 * `value` as retention days, or an error saying what is accepted, named after the setting `name`
 * (`retentionDays` for the library, `OMNI_RETENTION_DAYS` for the host): hosts fail at start-up
 * rather than keep rows forever, or prune everything, on a typo.
 */
export const checkRetentionDays = (name: string, value: unknown): number => {
  if (isRetentionDays(value)) return value
  throw new Error(`${name} must be a whole number of days from 1 to ${MAX_RETENTION_DAYS}, got ${typeof value === "string" ? JSON.stringify(value) : String(value)}`)
}
