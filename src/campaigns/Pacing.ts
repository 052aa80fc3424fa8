/**
 * Campaign pacing as pure functions: the warm-up check of a chat-app number, whether a warm-up
 * confirmation still holds, and the split-sending planner (daily batches in the campaign's time
 * zone, correct across DST changes). Zoned times come from the platform's `Intl.DateTimeFormat`.
 */

const MINUTE = 60_000
const HOUR = 60 * MINUTE
const DAY = 24 * HOUR

// ---------------------------------------------------------------------------------------------
// Messaging limit and warm-up
// ---------------------------------------------------------------------------------------------

const TIERS: Readonly<Record<string, number | null>> = {
  TIER_50: 50,
  TIER_250: 250,
  TIER_1K: 1_000,
  TIER_2K: 2_000,
  TIER_10K: 10_000,
  TIER_100K: 100_000,
  TIER_UNLIMITED: null
}

/** The operator's messaging limit of a tier (unique recipients per rolling 24 h): TIER_50 → 50, TIER_250 → 250, TIER_1K → 1000, TIER_2K → 2000, TIER_10K → 10000, TIER_100K → 100000, TIER_UNLIMITED → null (no cap); unknown or null tier → undefined (cannot be read). Case and surrounding spaces are ignored. */
export const messagingLimitOf = (tier: string | null): number | null | undefined => {
  if (tier === null) return undefined
  const key = tier.trim().toUpperCase()
  return Object.hasOwn(TIERS, key) ? TIERS[key] : undefined
}

/** The warm-up thresholds: connection age in days, completed campaigns, campaign messages sent, the most people reached at once without confirmation, and the audience growth (ratio and count, both exceeded) that voids a confirmation. */
export const WARMUP = {
  connectedDays: 30,
  completedCampaigns: 3,
  campaignMessages: 1000,
  atOnce: 250,
  regrowthRatio: 0.2,
  regrowthAtLeast: 250
} as const

/** A criterion that makes a chat-app number count as warming up. */
export type WarmupReason =
  | "connected_recently"
  | "few_completed_campaigns"
  | "few_campaign_messages"
  | "audience_above_limit"
  | "quality_not_green"

/** What the warm-up check needs to know about one chat-app number and the campaign's reach through it. */
export interface WarmupInput {
  /** When the number was connected (ms epoch). */
  readonly connectedAt: number
  /** The current time (ms epoch). */
  readonly now: number
  /** Earlier campaigns completed through the number. */
  readonly completedCampaigns: number
  /** Campaign messages sent through the number so far. */
  readonly campaignMessagesSent: number
  /** Recipients this campaign reaches through the number. */
  readonly audience: number
  /** The number's messaging limit: null is unlimited; undefined could not be read. */
  readonly messagingLimit: number | null | undefined
  /** GREEN, YELLOW or RED (any case); null when unknown. */
  readonly qualityRating: string | null
  /** How many it would reach at once (the whole audience without split sending, else the first batch). */
  readonly firstBatch: number
}

/** The warm-up verdict for one number: the criteria that hold, and whether sending needs a confirmation. */
export interface WarmupResult {
  readonly warmingUp: boolean
  readonly reasons: ReadonlyArray<WarmupReason>
  readonly requiresAcknowledgement: boolean
}

/** The spec's five criteria; when the limit cannot be read (undefined), the limit and quality criteria are not applied and the history checks still are; an unknown (null) quality rating is not applied either. requiresAcknowledgement = warmingUp && firstBatch > 250. */
export const warmupCheck = (input: WarmupInput): WarmupResult => {
  const reasons: Array<WarmupReason> = []
  if (input.now - input.connectedAt < WARMUP.connectedDays * DAY) reasons.push("connected_recently")
  if (input.completedCampaigns < WARMUP.completedCampaigns) reasons.push("few_completed_campaigns")
  if (input.campaignMessagesSent < WARMUP.campaignMessages) reasons.push("few_campaign_messages")
  if (input.messagingLimit !== undefined) {
    if (input.messagingLimit !== null && input.audience > input.messagingLimit) reasons.push("audience_above_limit")
    if (input.qualityRating !== null && input.qualityRating.trim().toUpperCase() !== "GREEN") {
      reasons.push("quality_not_green")
    }
  }
  const warmingUp = reasons.length > 0
  return { warmingUp, reasons, requiresAcknowledgement: warmingUp && input.firstBatch > WARMUP.atOnce }
}

/** Whether a confirmation given for `acknowledgedAudience` still holds for `audience`: not when the audience grew by more than 20 % and at least 250. */
export const acknowledgementHolds = (acknowledgedAudience: number, audience: number): boolean => {
  const growth = audience - acknowledgedAudience
  // growth > 20 % of the confirmed audience, in integers: growth * 5 > acknowledged.
  const aboveRatio = growth * 5 > acknowledgedAudience
  return !(aboveRatio && growth >= WARMUP.regrowthAtLeast)
}

// ---------------------------------------------------------------------------------------------
// Zoned time (Intl.DateTimeFormat)
// ---------------------------------------------------------------------------------------------

const formatters = new Map<string, Intl.DateTimeFormat>()

const formatterOf = (timeZone: string): Intl.DateTimeFormat => {
  let formatter = formatters.get(timeZone)
  if (formatter === undefined) {
    formatter = new Intl.DateTimeFormat("en-US", {
      timeZone,
      hourCycle: "h23",
      era: "short",
      year: "numeric",
      month: "numeric",
      day: "numeric",
      hour: "numeric",
      minute: "numeric",
      second: "numeric"
    })
    formatters.set(timeZone, formatter)
  }
  return formatter
}

/** The local wall clock of `instant` in `timeZone`, as if it were UTC (ms, whole seconds plus the instant's milliseconds). */
const wallClockOf = (instant: number, timeZone: string): number => {
  const parts = formatterOf(timeZone).formatToParts(new Date(instant))
  let year = 0
  let month = 1
  let day = 1
  let hour = 0
  let minute = 0
  let second = 0
  let bc = false
  for (const part of parts) {
    switch (part.type) {
      case "year":
        year = Number(part.value)
        break
      case "month":
        month = Number(part.value)
        break
      case "day":
        day = Number(part.value)
        break
      case "hour":
        hour = Number(part.value)
        break
      case "minute":
        minute = Number(part.value)
        break
      case "second":
        second = Number(part.value)
        break
      case "era":
        bc = part.value.toUpperCase().startsWith("B")
        break
    }
  }
  const date = new Date(0)
  date.setUTCFullYear(bc ? 1 - year : year, month - 1, day)
  date.setUTCHours(hour, minute, second, 0)
  const millis = ((instant % 1000) + 1000) % 1000
  return date.getTime() + millis
}

/** The UTC offset (ms) of `timeZone` at `instant`. */
const offsetAt = (instant: number, timeZone: string): number => wallClockOf(instant, timeZone) - instant

/**
 * The instant at which the wall clock of `timeZone` reads `wall` (a local date-time written as if
 * UTC). A wall time skipped by a forward change moves forward by the gap (it is read with the offset
 * in force before the change); a wall time that occurs twice takes the earlier instant.
 */
const instantOfWallClock = (wall: number, timeZone: string): number => {
  const before = offsetAt(wall - DAY, timeZone)
  const after = offsetAt(wall + DAY, timeZone)
  const candidates = before === after ? [wall - before] : [wall - before, wall - after]
  const matching = candidates.filter((instant) => wallClockOf(instant, timeZone) === wall)
  if (matching.length > 0) return Math.min(...matching)
  // No instant shows this wall time (a gap): read it with the offset before the change.
  return wall - before
}

const SEND_TIME = /^([01]\d|2[0-3]):([0-5]\d)$/

/** "HH:MM" 00:00–23:59. */
export const isSendTime = (value: string): boolean => SEND_TIME.test(value)

/** True when `name` is an IANA time zone the platform knows (fixed offsets such as "+05:30" are not IANA names). */
export const isTimeZone = (name: string): boolean => {
  if (!/^[A-Za-z]/.test(name)) return false
  try {
    formatterOf(name)
    return true
  } catch {
    return false
  }
}

const minutesOfSendTime = (time: string): number => {
  const match = SEND_TIME.exec(time)
  if (match === null) throw new RangeError(`send time must be "HH:MM" between 00:00 and 23:59: ${time}`)
  return Number(match[1]) * 60 + Number(match[2])
}

const requireTimeZone = (timeZone: string): void => {
  if (!isTimeZone(timeZone)) throw new RangeError(`unknown time zone: ${timeZone}`)
}

/** The instant of local date (y, m, d) at "HH:MM" in timeZone: a local time that does not exist that day moves forward by the gap, an ambiguous one takes the earlier instant. Throws RangeError for a malformed time or an unknown zone. */
export const zonedInstant = (year: number, month: number, day: number, time: string, timeZone: string): number => {
  const minutes = minutesOfSendTime(time)
  requireTimeZone(timeZone)
  const date = new Date(0)
  date.setUTCFullYear(year, month - 1, day)
  return instantOfWallClock(date.getTime() + minutes * MINUTE, timeZone)
}

// ---------------------------------------------------------------------------------------------
// Split sending
// ---------------------------------------------------------------------------------------------

/** The most days one split-sending plan may span. */
export const SPLIT_MAX_DAYS = 60

/** The first ramp batch; each following day doubles the previous one. */
export const RAMP_FIRST_BATCH = 250

/** What the planner needs for the recipients of one chat-app number. */
export interface SplitPlanInput {
  /** The recommended ramp, or a fixed daily batch. */
  readonly mode: "ramp" | "fixed"
  /** Fixed mode only: the count each day (an integer >= 1). */
  readonly dailyBatch: number | null
  /** Caps each ramp day; null or undefined: no cap known. Fixed batches are not capped. */
  readonly messagingLimit: number | null | undefined
  /** Recipients through this number. */
  readonly recipients: number
  /** When day `startDay` begins (ms epoch). */
  readonly firstBatchAt: number
  /** 0 normally; after a resume, the next day's index (its batch size applies from the resume). */
  readonly startDay: number
  /** "HH:MM" local; null: the local time of day of firstBatchAt. */
  readonly sendTime: string | null
  /** IANA time zone of the campaign. */
  readonly timeZone: string
}

/** One day's batch: its day index, how many recipients, and when it starts (ms epoch). */
export interface PlannedBatch {
  readonly day: number
  readonly size: number
  readonly startsAt: number
}

/** The batches of a split, or why it cannot be planned (more than 60 days needed). */
export type SplitPlan =
  | { readonly ok: true; readonly batches: ReadonlyArray<PlannedBatch> }
  | { readonly ok: false; readonly reason: string; readonly daysNeeded: number }

/** The ramp's batch size on `day` (0-based): 250 doubling each day, capped at the messaging limit when one is known (a limit below 1 counts as 1). */
export const rampSizeOf = (day: number, messagingLimit: number | null | undefined): number => {
  // 250 * 2^40 exceeds any audience; the cap keeps the number finite and exact.
  const size = RAMP_FIRST_BATCH * 2 ** Math.min(Math.max(0, day), 40)
  return typeof messagingLimit === "number" ? Math.min(size, Math.max(1, Math.floor(messagingLimit))) : size
}

const sizeOnDay = (input: SplitPlanInput, day: number): number =>
  input.mode === "fixed" ? (input.dailyBatch as number) : rampSizeOf(day, input.messagingLimit)

/** Days needed to plan `recipients` from `startDay` on, computed without walking every constant day. */
const daysNeededFor = (input: SplitPlanInput): number => {
  let remaining = input.recipients
  let days = 0
  let day = input.startDay
  while (remaining > 0) {
    const size = sizeOnDay(input, day)
    if (size === sizeOnDay(input, day + 1)) return days + Math.ceil(remaining / size)
    remaining -= size
    days += 1
    day += 1
  }
  return days
}

/**
 * How many recipients one plan can carry in its 60 days from `startDay`: every day's size added (a
 * fixed batch 60 times; the ramp's growing days, each capped at the limit when one is known).
 */
export const splitCapacity = (input: Pick<SplitPlanInput, "mode" | "dailyBatch" | "messagingLimit" | "startDay">): number => {
  let capacity = 0
  for (let day = input.startDay; day < input.startDay + SPLIT_MAX_DAYS; day++) {
    capacity += input.mode === "fixed" ? (input.dailyBatch as number) : rampSizeOf(day, input.messagingLimit)
  }
  return capacity
}

/** The smallest fixed daily batch that reaches `recipients` within the 60 days of a split (at least 1). */
export const smallestDailyBatch = (recipients: number): number => Math.max(1, Math.ceil(recipients / SPLIT_MAX_DAYS))

const validateSplit = (input: SplitPlanInput): void => {
  if (input.mode !== "ramp" && input.mode !== "fixed") throw new RangeError(`unknown split mode: ${String(input.mode)}`)
  if (input.mode === "fixed" && !(Number.isSafeInteger(input.dailyBatch) && (input.dailyBatch as number) >= 1)) {
    throw new RangeError("a fixed split needs a daily batch that is an integer of at least 1")
  }
  if (!(Number.isSafeInteger(input.recipients) && input.recipients >= 0)) {
    throw new RangeError("recipients must be a non-negative integer")
  }
  if (!(Number.isSafeInteger(input.startDay) && input.startDay >= 0)) {
    throw new RangeError("startDay must be a non-negative integer")
  }
  if (!Number.isFinite(input.firstBatchAt)) throw new RangeError("firstBatchAt must be a finite instant")
  if (input.sendTime !== null) minutesOfSendTime(input.sendTime)
  requireTimeZone(input.timeZone)
}

/**
 * Ramp: 250 on day 0, doubling each day (250, 500, 1000, …), each day capped at the limit; fixed:
 * dailyBatch each day (not capped: the operator's limit throttles it while sending). With startDay
 * > 0 (a resume) the sizes start from that day's size and the day numbers continue from it. The
 * first batch starts at firstBatchAt; the batch i days later starts on the i-th following local
 * calendar day of firstBatchAt in timeZone, at sendTime, or without one at the first batch's local
 * time of day (to the millisecond), correct across DST (a local time that does not exist that day
 * moves forward by the gap; an ambiguous one takes the earlier instant). Sizes sum to exactly
 * `recipients`; the last batch takes what remains. The 60-day limit counts the days of this plan:
 * at most 60 batches (days startDay..startDay+59); needing more → { ok: false, reason:
 * "split_exceeds_60_days", daysNeeded }. Zero recipients → no batches. Invalid input (fixed mode
 * without a daily batch >= 1, a malformed send time, an unknown zone, negative counts) throws RangeError.
 */
export const planSplit = (input: SplitPlanInput): SplitPlan => {
  validateSplit(input)
  if (input.recipients === 0) return { ok: true, batches: [] }
  const daysNeeded = daysNeededFor(input)
  if (daysNeeded > SPLIT_MAX_DAYS) return { ok: false, reason: "split_exceeds_60_days", daysNeeded }

  const firstWall = wallClockOf(input.firstBatchAt, input.timeZone)
  const firstLocalDate = Math.floor(firstWall / DAY) * DAY
  const timeOfDay = input.sendTime === null ? firstWall - firstLocalDate : minutesOfSendTime(input.sendTime) * MINUTE

  const batches: Array<PlannedBatch> = []
  let remaining = input.recipients
  for (let i = 0; remaining > 0; i++) {
    const day = input.startDay + i
    const size = Math.min(sizeOnDay(input, day), remaining)
    const startsAt = i === 0 ? input.firstBatchAt : instantOfWallClock(firstLocalDate + i * DAY + timeOfDay, input.timeZone)
    batches.push({ day, size, startsAt })
    remaining -= size
  }
  return { ok: true, batches }
}
