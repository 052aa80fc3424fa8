import fc from "fast-check"
import { describe, expect, it } from "vitest"
import {
  acknowledgementHolds,
  isSendTime,
  isTimeZone,
  messagingLimitOf,
  type PlannedBatch,
  planSplit,
  rampSizeOf,
  type SplitPlanInput,
  WARMUP,
  warmupCheck,
  type WarmupInput,
  zonedInstant
} from "../../../src/campaigns/Pacing.ts"

const MINUTE = 60_000
const HOUR = 60 * MINUTE
const DAY = 24 * HOUR
const at = (iso: string): number => Date.parse(iso)
const iso = (instant: number): string => new Date(instant).toISOString()

// ---------------------------------------------------------------------------------------------
// A local-time oracle for the assertions, written separately from the module under test.
// ---------------------------------------------------------------------------------------------

const oracleFormatters = new Map<string, Intl.DateTimeFormat>()
interface Local {
  readonly date: string // YYYY-MM-DD
  readonly time: string // HH:MM:SS.mmm
}
const local = (instant: number, timeZone: string): Local => {
  let f = oracleFormatters.get(timeZone)
  if (!f) {
    f = new Intl.DateTimeFormat("en-GB", {
      timeZone,
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
      second: "2-digit",
      hourCycle: "h23"
    })
    oracleFormatters.set(timeZone, f)
  }
  const p = Object.fromEntries(f.formatToParts(new Date(instant)).map((x) => [x.type, x.value]))
  const ms = String(((instant % 1000) + 1000) % 1000).padStart(3, "0")
  return { date: `${p.year}-${p.month}-${p.day}`, time: `${p.hour}:${p.minute}:${p.second}.${ms}` }
}
const nextDate = (date: string, days: number): string => {
  const d = new Date(`${date}T00:00:00Z`)
  d.setUTCDate(d.getUTCDate() + days)
  return d.toISOString().slice(0, 10)
}
const toMs = (time: string): number => {
  const [h, m, s] = time.split(":")
  return (Number(h) * 60 + Number(m)) * MINUTE + Math.round(Number(s ?? "0") * 1000)
}
/** UTC offset (ms) at an instant, by the oracle. */
const offsetOf = (instant: number, timeZone: string): number => {
  const l = local(instant, timeZone)
  return Date.parse(`${l.date}T${l.time}Z`) - instant
}

const ZONES = [
  "Europe/Berlin",
  "America/New_York",
  "Asia/Kolkata",
  "Australia/Adelaide",
  "Asia/Kathmandu",
  "Pacific/Chatham",
  "UTC"
] as const

/** The local dates of the 2026 clock changes per zone (none for fixed offsets). */
const CHANGES: Readonly<Record<(typeof ZONES)[number], ReadonlyArray<string>>> = {
  "Europe/Berlin": ["2026-03-29", "2026-10-25"],
  "America/New_York": ["2026-03-08", "2026-11-01"],
  "Asia/Kolkata": [],
  "Australia/Adelaide": ["2026-04-05", "2026-10-04"],
  "Asia/Kathmandu": [],
  "Pacific/Chatham": ["2026-04-05", "2026-09-27"],
  UTC: []
}
const pad = (n: number): string => String(n).padStart(2, "0")
/** A send time, often in the small hours where the clocks change. */
const sendTimeArb = fc.oneof(
  fc.tuple(fc.integer({ min: 0, max: 23 }), fc.integer({ min: 0, max: 59 })),
  fc.tuple(fc.integer({ min: 1, max: 3 }), fc.integer({ min: 0, max: 59 }))
).map(([h, m]) => `${pad(h)}:${pad(m)}`)
/** A zone with a 2026 date, often a day of its clock change. */
const zoneAndDateArb = fc.constantFrom(...ZONES).chain((zone) =>
  fc
    .oneof(
      fc.integer({ min: 0, max: 364 }).map((d) => new Date(Date.UTC(2026, 0, 1 + d)).toISOString().slice(0, 10)),
      ...(CHANGES[zone].length > 0 ? [fc.constantFrom(...CHANGES[zone])] : [])
    )
    .map((date) => ({ zone, date }))
)

// ---------------------------------------------------------------------------------------------
// Messaging limit, warm-up, confirmation
// ---------------------------------------------------------------------------------------------

describe("messagingLimitOf", () => {
  it("reads each tier, unlimited as null, anything else as unreadable", () => {
    expect(messagingLimitOf("TIER_250")).toBe(250)
    expect(messagingLimitOf("TIER_1K")).toBe(1000)
    expect(messagingLimitOf("TIER_2K")).toBe(2000)
    expect(messagingLimitOf("TIER_10K")).toBe(10_000)
    expect(messagingLimitOf("TIER_100K")).toBe(100_000)
    expect(messagingLimitOf("TIER_UNLIMITED")).toBeNull()
    expect(messagingLimitOf("tier_1k")).toBe(1000)
    expect(messagingLimitOf(null)).toBeUndefined()
    expect(messagingLimitOf("TIER_7")).toBeUndefined()
    expect(messagingLimitOf("")).toBeUndefined()
    expect(messagingLimitOf("toString")).toBeUndefined()
  })
})

const NOW = at("2026-06-01T12:00:00Z")
/** A seasoned number: none of the criteria holds. */
const SEASONED: WarmupInput = {
  connectedAt: NOW - 90 * DAY,
  now: NOW,
  completedCampaigns: 5,
  campaignMessagesSent: 20_000,
  audience: 800,
  messagingLimit: 1000,
  qualityRating: "GREEN",
  firstBatch: 800
}

describe("warmupCheck", () => {
  it("a seasoned number with a green rating and an audience within its limit is not warming up", () => {
    expect(warmupCheck(SEASONED)).toEqual({ warmingUp: false, reasons: [], requiresAcknowledgement: false })
  })

  it("connected less than 30 days ago (exactly 30 days is no longer recent)", () => {
    expect(warmupCheck({ ...SEASONED, connectedAt: NOW - 29 * DAY }).reasons).toEqual(["connected_recently"])
    expect(warmupCheck({ ...SEASONED, connectedAt: NOW - 30 * DAY + 1 }).reasons).toEqual(["connected_recently"])
    expect(warmupCheck({ ...SEASONED, connectedAt: NOW - 30 * DAY }).warmingUp).toBe(false)
  })

  it("fewer than 3 earlier completed campaigns", () => {
    expect(warmupCheck({ ...SEASONED, completedCampaigns: 2 }).reasons).toEqual(["few_completed_campaigns"])
    expect(warmupCheck({ ...SEASONED, completedCampaigns: 3 }).warmingUp).toBe(false)
  })

  it("fewer than 1,000 campaign messages sent", () => {
    expect(warmupCheck({ ...SEASONED, campaignMessagesSent: 999 }).reasons).toEqual(["few_campaign_messages"])
    expect(warmupCheck({ ...SEASONED, campaignMessagesSent: 1000 }).warmingUp).toBe(false)
  })

  it("audience above the current messaging limit (equal is within it; unlimited never)", () => {
    expect(warmupCheck({ ...SEASONED, audience: 1001 }).reasons).toEqual(["audience_above_limit"])
    expect(warmupCheck({ ...SEASONED, audience: 1000 }).warmingUp).toBe(false)
    expect(warmupCheck({ ...SEASONED, audience: 5_000_000, messagingLimit: null }).warmingUp).toBe(false)
  })

  it("quality rating not green (any case); green in lower case counts as green", () => {
    expect(warmupCheck({ ...SEASONED, qualityRating: "YELLOW" }).reasons).toEqual(["quality_not_green"])
    expect(warmupCheck({ ...SEASONED, qualityRating: "RED" }).reasons).toEqual(["quality_not_green"])
    expect(warmupCheck({ ...SEASONED, qualityRating: "green" }).warmingUp).toBe(false)
    expect(warmupCheck({ ...SEASONED, qualityRating: null }).warmingUp).toBe(false)
  })

  it("limit unreadable: limit and quality criteria are not applied, the history checks still are", () => {
    const unreadable = { ...SEASONED, messagingLimit: undefined, audience: 50_000, qualityRating: "RED" }
    expect(warmupCheck(unreadable)).toEqual({ warmingUp: false, reasons: [], requiresAcknowledgement: false })
    const young = warmupCheck({
      ...unreadable,
      connectedAt: NOW - DAY,
      completedCampaigns: 0,
      campaignMessagesSent: 0,
      firstBatch: 50_000
    })
    expect(young.reasons).toEqual(["connected_recently", "few_completed_campaigns", "few_campaign_messages"])
    expect(young.requiresAcknowledgement).toBe(true)
  })

  it("all five criteria at once, in the spec's order", () => {
    const result = warmupCheck({
      connectedAt: NOW,
      now: NOW,
      completedCampaigns: 0,
      campaignMessagesSent: 0,
      audience: 300,
      messagingLimit: 250,
      qualityRating: "YELLOW",
      firstBatch: 300
    })
    expect(result.reasons).toEqual([
      "connected_recently",
      "few_completed_campaigns",
      "few_campaign_messages",
      "audience_above_limit",
      "quality_not_green"
    ])
  })

  it("confirmation is needed only when warming up and more than 250 are reached at once", () => {
    const warming = { ...SEASONED, completedCampaigns: 0 }
    expect(warmupCheck({ ...warming, firstBatch: 251 }).requiresAcknowledgement).toBe(true)
    expect(warmupCheck({ ...warming, firstBatch: 250 }).requiresAcknowledgement).toBe(false)
    expect(warmupCheck({ ...warming, firstBatch: 250 }).warmingUp).toBe(true)
    expect(warmupCheck({ ...SEASONED, firstBatch: 100_000 }).requiresAcknowledgement).toBe(false)
  })

  it("property: confirmation implies warming up and a first batch above 250; reasons non-empty iff warming up", () => {
    const input = fc.record({
      connectedAt: fc.integer({ min: NOW - 60 * DAY, max: NOW }),
      now: fc.constant(NOW),
      completedCampaigns: fc.integer({ min: 0, max: 6 }),
      campaignMessagesSent: fc.integer({ min: 0, max: 3000 }),
      audience: fc.integer({ min: 0, max: 200_000 }),
      messagingLimit: fc.constantFrom<number | null | undefined>(undefined, null, 250, 1000, 10_000, 100_000),
      qualityRating: fc.constantFrom<string | null>(null, "GREEN", "YELLOW", "RED", "green"),
      firstBatch: fc.integer({ min: 0, max: 200_000 })
    })
    fc.assert(
      fc.property(input, (i) => {
        const r = warmupCheck(i)
        if (r.requiresAcknowledgement) {
          expect(r.warmingUp).toBe(true)
          expect(i.firstBatch).toBeGreaterThan(WARMUP.atOnce)
        }
        expect(r.reasons.length > 0).toBe(r.warmingUp)
        expect(r.requiresAcknowledgement).toBe(r.warmingUp && i.firstBatch > 250)
        expect(new Set(r.reasons).size).toBe(r.reasons.length)
        if (i.messagingLimit === undefined) {
          expect(r.reasons).not.toContain("audience_above_limit")
          expect(r.reasons).not.toContain("quality_not_green")
        }
      }),
      { numRuns: 500 }
    )
  })
})

describe("acknowledgementHolds", () => {
  it("voided only when the audience grew by more than 20 % and by at least 250", () => {
    expect(acknowledgementHolds(1000, 1000)).toBe(true)
    expect(acknowledgementHolds(1000, 900)).toBe(true)
    // 250 more is 25 % of 1,000: both hold.
    expect(acknowledgementHolds(1000, 1250)).toBe(false)
    expect(acknowledgementHolds(1000, 1249)).toBe(true)
    // 20 % exactly is not more than 20 %.
    expect(acknowledgementHolds(2000, 2400)).toBe(true)
    expect(acknowledgementHolds(2000, 2401)).toBe(false)
    expect(acknowledgementHolds(1250, 1500)).toBe(true) // +250 = 20 % exactly
    expect(acknowledgementHolds(1250, 1501)).toBe(false)
    // Small audiences: more than 20 % but fewer than 250 more.
    expect(acknowledgementHolds(100, 349)).toBe(true)
    expect(acknowledgementHolds(100, 350)).toBe(false)
    expect(acknowledgementHolds(0, 249)).toBe(true)
    expect(acknowledgementHolds(0, 250)).toBe(false)
  })

  it("property: matches the rule read literally", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 100_000 }), fc.integer({ min: 0, max: 150_000 }), (ack, now) => {
        const growth = now - ack
        const voided = growth > ack * WARMUP.regrowthRatio + 1e-9 && growth >= WARMUP.regrowthAtLeast
        expect(acknowledgementHolds(ack, now)).toBe(!voided)
      }),
      { numRuns: 500 }
    )
  })
})

// ---------------------------------------------------------------------------------------------
// Zoned time
// ---------------------------------------------------------------------------------------------

describe("isTimeZone and isSendTime", () => {
  it("knows IANA zones and refuses other strings", () => {
    for (const z of ZONES) expect(isTimeZone(z)).toBe(true)
    expect(isTimeZone("Asia/Calcutta")).toBe(true)
    expect(isTimeZone("Mars/Olympus_Mons")).toBe(false)
    expect(isTimeZone("")).toBe(false)
    expect(isTimeZone("+05:30")).toBe(false)
  })

  it("accepts HH:MM from 00:00 to 23:59 only", () => {
    for (const t of ["00:00", "09:05", "12:30", "23:59"]) expect(isSendTime(t)).toBe(true)
    for (const t of ["24:00", "9:05", "12:60", "12:30:00", "", "ab:cd", " 12:30"]) expect(isSendTime(t)).toBe(false)
  })
})

describe("zonedInstant", () => {
  const cases: ReadonlyArray<[string, number, number, number, string, string]> = [
    ["UTC", 2026, 7, 1, "08:15", "2026-07-01T08:15:00.000Z"],
    // Berlin: CET +01:00 / CEST +02:00.
    ["Europe/Berlin", 2026, 1, 15, "12:00", "2026-01-15T11:00:00.000Z"],
    ["Europe/Berlin", 2026, 7, 15, "12:00", "2026-07-15T10:00:00.000Z"],
    ["Europe/Berlin", 2026, 3, 29, "02:30", "2026-03-29T01:30:00.000Z"], // does not exist → 03:30 CEST
    ["Europe/Berlin", 2026, 3, 29, "02:00", "2026-03-29T01:00:00.000Z"], // start of the gap → 03:00 CEST
    ["Europe/Berlin", 2026, 3, 29, "03:00", "2026-03-29T01:00:00.000Z"],
    ["Europe/Berlin", 2026, 10, 25, "02:30", "2026-10-25T00:30:00.000Z"], // twice → the earlier (CEST)
    ["Europe/Berlin", 2026, 10, 25, "03:00", "2026-10-25T02:00:00.000Z"],
    // New York: EST -05:00 / EDT -04:00.
    ["America/New_York", 2026, 3, 8, "02:30", "2026-03-08T07:30:00.000Z"], // → 03:30 EDT
    ["America/New_York", 2026, 11, 1, "01:30", "2026-11-01T05:30:00.000Z"], // earlier: EDT
    ["America/New_York", 2026, 12, 1, "09:00", "2026-12-01T14:00:00.000Z"],
    // Kolkata +05:30, no DST.
    ["Asia/Kolkata", 2026, 6, 1, "09:00", "2026-06-01T03:30:00.000Z"],
    ["Asia/Kolkata", 2026, 1, 1, "00:00", "2025-12-31T18:30:00.000Z"],
    // Adelaide: ACST +09:30 / ACDT +10:30.
    ["Australia/Adelaide", 2026, 4, 5, "02:30", "2026-04-04T16:00:00.000Z"], // twice → ACDT
    ["Australia/Adelaide", 2026, 10, 4, "02:30", "2026-10-03T17:00:00.000Z"], // gap → 03:30 ACDT
    ["Australia/Adelaide", 2026, 6, 1, "09:00", "2026-05-31T23:30:00.000Z"],
    // Kathmandu +05:45.
    ["Asia/Kathmandu", 2026, 3, 1, "10:00", "2026-03-01T04:15:00.000Z"],
    // Chatham: +12:45 / +13:45, changes at 02:45 standard time.
    ["Pacific/Chatham", 2026, 4, 5, "03:00", "2026-04-04T13:15:00.000Z"], // twice → +13:45
    ["Pacific/Chatham", 2026, 9, 27, "03:00", "2026-09-26T14:15:00.000Z"], // gap → 04:00 +13:45
    ["Pacific/Chatham", 2026, 9, 27, "02:45", "2026-09-26T14:00:00.000Z"], // gap start → 03:45
    ["Pacific/Chatham", 2026, 7, 1, "12:00", "2026-06-30T23:15:00.000Z"]
  ]
  it.each(cases)("%s %i-%i-%i %s → %s", (zone, y, m, d, time, expected) => {
    expect(iso(zonedInstant(y, m, d, time, zone))).toBe(expected)
  })

  it("refuses a malformed time and an unknown zone", () => {
    expect(() => zonedInstant(2026, 1, 1, "25:00", "UTC")).toThrow(RangeError)
    expect(() => zonedInstant(2026, 1, 1, "10:00", "Nowhere/Town")).toThrow(RangeError)
  })

  it("property: every existing local time round-trips; a skipped one lands after its gap", () => {
    const seen = { plain: 0, gap: 0, twice: 0 }
    fc.assert(
      fc.property(zoneAndDateArb, sendTimeArb, ({ zone, date }, time) => {
        const [y, mo, d] = date.split("-").map(Number) as [number, number, number]
        const instant = zonedInstant(y, mo, d, time, zone)
        seen[checkWallClock(instant, zone, date, toMs(time))]++
      }),
      { numRuns: 500 }
    )
    // The generators reach the clock changes: both kinds were met.
    expect(seen.gap).toBeGreaterThan(0)
    expect(seen.twice).toBeGreaterThan(0)
  })
})

/**
 * The instant shows `date` at `timeOfDay` locally, or the wall time did not exist that day and the
 * instant shows it moved forward by the gap; and no earlier instant shows the same wall time (the
 * earlier of an ambiguous pair).
 */
const checkWallClock = (instant: number, zone: string, date: string, timeOfDay: number): "plain" | "gap" | "twice" => {
  const shown = local(instant, zone)
  const shownMs = toMs(shown.time)
  if (shown.date === date && shownMs === timeOfDay) {
    // All our zones shift by one hour: the instant an hour earlier must not show the same wall time.
    const hourEarlier = local(instant - HOUR, zone)
    expect(`${hourEarlier.date} ${hourEarlier.time}`).not.toBe(`${shown.date} ${shown.time}`)
    const hourLater = local(instant + HOUR, zone)
    return hourLater.date === shown.date && hourLater.time === shown.time ? "twice" : "plain"
  }
  // A gap: the offset changed within the last hours and the shown time is the wanted one plus the gap.
  const gap = offsetOf(instant, zone) - offsetOf(instant - 3 * HOUR, zone)
  expect(gap, `${iso(instant)} in ${zone} shows ${shown.date} ${shown.time}, wanted ${date} ${timeOfDay}`).toBeGreaterThan(0)
  expect(shown.date).toBe(date)
  expect(shownMs).toBe(timeOfDay + gap)
  return "gap"
}

// ---------------------------------------------------------------------------------------------
// Split sending
// ---------------------------------------------------------------------------------------------

const base: SplitPlanInput = {
  mode: "ramp",
  dailyBatch: null,
  messagingLimit: undefined,
  recipients: 0,
  firstBatchAt: at("2026-05-04T08:00:00Z"),
  startDay: 0,
  sendTime: null,
  timeZone: "UTC"
}
const batchesOf = (input: Partial<SplitPlanInput>): ReadonlyArray<PlannedBatch> => {
  const plan = planSplit({ ...base, ...input })
  if (!plan.ok) throw new Error(`not planned: ${plan.reason} (${plan.daysNeeded} days)`)
  return plan.batches
}
const sizes = (batches: ReadonlyArray<PlannedBatch>) => batches.map((b) => b.size)

describe("planSplit: sizes", () => {
  it("zero recipients: no batches", () => {
    expect(batchesOf({ recipients: 0 })).toEqual([])
    expect(batchesOf({ recipients: 0, mode: "fixed", dailyBatch: 10 })).toEqual([])
  })

  it("ramp: 250, doubling each day, the last batch takes what remains", () => {
    expect(sizes(batchesOf({ recipients: 100 }))).toEqual([100])
    expect(sizes(batchesOf({ recipients: 250 }))).toEqual([250])
    expect(sizes(batchesOf({ recipients: 3000 }))).toEqual([250, 500, 1000, 1250])
    expect(sizes(batchesOf({ recipients: 3750 }))).toEqual([250, 500, 1000, 2000])
    expect(sizes(batchesOf({ recipients: 3751 }))).toEqual([250, 500, 1000, 2000, 1])
    expect(sizes(batchesOf({ recipients: 3000, messagingLimit: null }))).toEqual([250, 500, 1000, 1250])
  })

  it("ramp capped at the messaging limit (TIER_1K → 1000 each day from day 2)", () => {
    const limit = messagingLimitOf("TIER_1K")
    expect(sizes(batchesOf({ recipients: 5000, messagingLimit: limit }))).toEqual([250, 500, 1000, 1000, 1000, 1000, 250])
    expect(sizes(batchesOf({ recipients: 700, messagingLimit: messagingLimitOf("TIER_250") }))).toEqual([250, 250, 200])
    expect(sizes(batchesOf({ recipients: 120, messagingLimit: 50 }))).toEqual([50, 50, 20])
    expect(rampSizeOf(0, 1000)).toBe(250)
    expect(rampSizeOf(5, 1000)).toBe(1000)
    expect(rampSizeOf(5, null)).toBe(8000)
  })

  it("fixed: the same count each day, not capped by the limit", () => {
    expect(sizes(batchesOf({ mode: "fixed", dailyBatch: 300, recipients: 1000 }))).toEqual([300, 300, 300, 100])
    expect(sizes(batchesOf({ mode: "fixed", dailyBatch: 300, recipients: 900 }))).toEqual([300, 300, 300])
    expect(sizes(batchesOf({ mode: "fixed", dailyBatch: 5000, recipients: 6000, messagingLimit: 1000 }))).toEqual([
      5000, 1000
    ])
  })

  it("at most 60 days: exactly 60 plans, 61 does not", () => {
    const limit = 250
    expect(batchesOf({ recipients: 60 * 250, messagingLimit: limit })).toHaveLength(60)
    expect(planSplit({ ...base, recipients: 60 * 250 + 1, messagingLimit: limit })).toEqual({
      ok: false,
      reason: "split_exceeds_60_days",
      daysNeeded: 61
    })
    expect(planSplit({ ...base, mode: "fixed", dailyBatch: 1, recipients: 200_000 })).toMatchObject({
      ok: false,
      daysNeeded: 200_000
    })
    expect(batchesOf({ mode: "fixed", dailyBatch: 10, recipients: 600 })).toHaveLength(60)
  })

  it("after a resume: sizes start from that day's ramp size and the days continue from it", () => {
    const batches = batchesOf({ recipients: 5000, startDay: 2 })
    expect(batches.map((b) => [b.day, b.size])).toEqual([
      [2, 1000],
      [3, 2000],
      [4, 2000]
    ])
    expect(batchesOf({ recipients: 2500, startDay: 3, messagingLimit: 1000 }).map((b) => [b.day, b.size])).toEqual([
      [3, 1000],
      [4, 1000],
      [5, 500]
    ])
    expect(batchesOf({ mode: "fixed", dailyBatch: 100, recipients: 250, startDay: 7 }).map((b) => b.day)).toEqual([7, 8, 9])
  })

  it("after a resume: the 60 days count from the resume (days startDay..startDay+59)", () => {
    const batches = batchesOf({ recipients: 60 * 250, messagingLimit: 250, startDay: 10 })
    expect(batches).toHaveLength(60)
    expect(batches[0]?.day).toBe(10)
    expect(batches.at(-1)?.day).toBe(69)
    expect(planSplit({ ...base, recipients: 60 * 250 + 1, messagingLimit: 250, startDay: 10 })).toMatchObject({
      ok: false,
      daysNeeded: 61
    })
  })

  it("refuses invalid input", () => {
    expect(() => planSplit({ ...base, mode: "fixed", dailyBatch: null, recipients: 5 })).toThrow(RangeError)
    expect(() => planSplit({ ...base, mode: "fixed", dailyBatch: 0, recipients: 5 })).toThrow(RangeError)
    expect(() => planSplit({ ...base, recipients: -1 })).toThrow(RangeError)
    expect(() => planSplit({ ...base, recipients: 5, sendTime: "7:00" })).toThrow(RangeError)
    expect(() => planSplit({ ...base, recipients: 5, timeZone: "Nowhere/Town" })).toThrow(RangeError)
    expect(() => planSplit({ ...base, recipients: 5, startDay: -1 })).toThrow(RangeError)
  })
})

describe("planSplit: start times", () => {
  const startsOf = (input: Partial<SplitPlanInput>) => batchesOf({ recipients: 3750, ...input }).map((b) => iso(b.startsAt))

  it("UTC, default time of day: every 24 hours from the first batch, to the millisecond", () => {
    expect(startsOf({ firstBatchAt: at("2026-05-04T08:00:12.345Z") })).toEqual([
      "2026-05-04T08:00:12.345Z",
      "2026-05-05T08:00:12.345Z",
      "2026-05-06T08:00:12.345Z",
      "2026-05-07T08:00:12.345Z"
    ])
  })

  it("a send time: the next local calendar day even when that is less than 24 hours later", () => {
    expect(startsOf({ firstBatchAt: at("2026-05-04T22:10:00Z"), sendTime: "07:00" })).toEqual([
      "2026-05-04T22:10:00.000Z",
      "2026-05-05T07:00:00.000Z",
      "2026-05-06T07:00:00.000Z",
      "2026-05-07T07:00:00.000Z"
    ])
    // 23:30 local Kolkata on 4 May is 18:00Z; the next local day starts at 18:30Z.
    expect(startsOf({ firstBatchAt: at("2026-05-04T18:00:00Z"), sendTime: "00:00", timeZone: "Asia/Kolkata" })).toEqual([
      "2026-05-04T18:00:00.000Z",
      "2026-05-04T18:30:00.000Z",
      "2026-05-05T18:30:00.000Z",
      "2026-05-06T18:30:00.000Z"
    ])
  })

  it("Europe/Berlin spring forward: 02:30 on 29 March does not exist and becomes 03:30", () => {
    // First batch 27 March 02:30 CET (01:30Z).
    expect(startsOf({ firstBatchAt: at("2026-03-27T01:30:00Z"), timeZone: "Europe/Berlin" })).toEqual([
      "2026-03-27T01:30:00.000Z",
      "2026-03-28T01:30:00.000Z", // 02:30 CET
      "2026-03-29T01:30:00.000Z", // 03:30 CEST (02:30 skipped)
      "2026-03-30T00:30:00.000Z" // 02:30 CEST
    ])
  })

  it("Europe/Berlin fall back: 02:30 on 25 October happens twice and takes the earlier", () => {
    expect(
      startsOf({ firstBatchAt: at("2026-10-23T10:00:00Z"), sendTime: "02:30", timeZone: "Europe/Berlin" })
    ).toEqual([
      "2026-10-23T10:00:00.000Z",
      "2026-10-24T00:30:00.000Z", // 02:30 CEST
      "2026-10-25T00:30:00.000Z", // the first 02:30 (CEST)
      "2026-10-26T01:30:00.000Z" // 02:30 CET
    ])
  })

  it("America/New_York: 09:00 local stays 09:00 across the March change", () => {
    expect(
      startsOf({ firstBatchAt: at("2026-03-06T14:00:00Z"), sendTime: "09:00", timeZone: "America/New_York" })
    ).toEqual([
      "2026-03-06T14:00:00.000Z",
      "2026-03-07T14:00:00.000Z", // EST
      "2026-03-08T13:00:00.000Z", // EDT
      "2026-03-09T13:00:00.000Z"
    ])
  })

  it("Australia/Adelaide (+09:30 / +10:30): 02:30 in the April overlap and the October gap", () => {
    expect(startsOf({ firstBatchAt: at("2026-04-03T16:00:00Z"), timeZone: "Australia/Adelaide" })).toEqual([
      "2026-04-03T16:00:00.000Z", // 4 April 02:30 ACDT
      "2026-04-04T16:00:00.000Z", // 5 April, the first 02:30 (ACDT)
      "2026-04-05T17:00:00.000Z", // 6 April 02:30 ACST
      "2026-04-06T17:00:00.000Z"
    ])
    expect(
      startsOf({ firstBatchAt: at("2026-10-02T00:00:00Z"), sendTime: "02:30", timeZone: "Australia/Adelaide" })
    ).toEqual([
      "2026-10-02T00:00:00.000Z", // 2 October 09:30 ACST
      "2026-10-02T17:00:00.000Z", // 3 October 02:30 ACST
      "2026-10-03T17:00:00.000Z", // 4 October: 02:30 skipped → 03:30 ACDT
      "2026-10-04T16:00:00.000Z" // 5 October 02:30 ACDT
    ])
  })

  it("Asia/Kathmandu (+05:45) and Pacific/Chatham (+12:45 / +13:45)", () => {
    expect(
      startsOf({ firstBatchAt: at("2026-08-10T03:00:00Z"), sendTime: "10:00", timeZone: "Asia/Kathmandu" })
    ).toEqual(["2026-08-10T03:00:00.000Z", "2026-08-11T04:15:00.000Z", "2026-08-12T04:15:00.000Z", "2026-08-13T04:15:00.000Z"])
    expect(
      startsOf({ firstBatchAt: at("2026-09-25T00:00:00Z"), sendTime: "03:00", timeZone: "Pacific/Chatham" })
    ).toEqual([
      "2026-09-25T00:00:00.000Z", // 25 September 12:45 local
      "2026-09-25T14:15:00.000Z", // 26 September 03:00 +12:45
      "2026-09-26T14:15:00.000Z", // 27 September: 03:00 skipped → 04:00 +13:45
      "2026-09-27T13:15:00.000Z" // 28 September 03:00 +13:45
    ])
  })
})

describe("planSplit: model", () => {
  /** A zone and a first batch in 2026, often in the days before one of the zone's clock changes. */
  const zoneAndStartArb = zoneAndDateArb.chain(({ zone, date }) =>
    fc
      .tuple(
        fc.integer({ min: 0, max: 6 }),
        fc.oneof(fc.integer({ min: 0, max: DAY - 1 }), fc.integer({ min: HOUR, max: 4 * HOUR - 1 }))
      )
      .map(([daysBefore, msOfDay]) => ({
        timeZone: zone,
        // Local midnight is near UTC midnight minus the offset; either way it lands near the change.
        firstBatchAt: Math.max(at("2026-01-01T00:00:00Z"), Date.parse(`${date}T00:00:00Z`) - daysBefore * DAY + msOfDay)
      }))
  )
  const input = fc.record({
    mode: fc.constantFrom<"ramp" | "fixed">("ramp", "fixed"),
    dailyBatch: fc.oneof(fc.integer({ min: 1, max: 20_000 }), fc.integer({ min: 1, max: 5000 })),
    messagingLimit: fc.constantFrom<number | null | undefined>(undefined, null, 250, 1000, 10_000),
    recipients: fc.oneof(fc.integer({ min: 0, max: 200_000 }), fc.integer({ min: 0, max: 20_000 })),
    zoneAndStart: zoneAndStartArb,
    startDay: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 6 })),
    sendTime: fc.option(sendTimeArb, { nil: null, freq: 3 })
  })

  const toInput = ({ zoneAndStart, ...rest }: typeof input extends fc.Arbitrary<infer T> ? T : never): SplitPlanInput => ({
    ...rest,
    ...zoneAndStart,
    dailyBatch: rest.mode === "fixed" ? rest.dailyBatch : null
  })

  /** The reference: walk the days one by one. */
  const model = (i: SplitPlanInput): Array<number> => {
    const out: Array<number> = []
    let left = i.recipients
    for (let day = i.startDay; left > 0; day++) {
      const cap =
        i.mode === "fixed"
          ? (i.dailyBatch as number)
          : Math.min(250 * 2 ** day, typeof i.messagingLimit === "number" ? i.messagingLimit : Infinity)
      const size = Math.min(cap, left)
      out.push(size)
      left -= size
    }
    return out
  }

  it("sizes, the 60-day cap and local start times hold for every zone, start, send time and audience", () => {
    fc.assert(
      fc.property(input, (generated) => {
        const i = toInput(generated)
        const plan = planSplit(i)
        const expected = model(i)
        if (expected.length > 60) {
          expect(plan).toEqual({ ok: false, reason: "split_exceeds_60_days", daysNeeded: expected.length })
          return
        }
        if (!plan.ok) throw new Error(`refused a plan of ${expected.length} days`)
        const { batches } = plan
        // Every recipient planned exactly once, in at most 60 batches, with the model's sizes.
        expect(batches.reduce((sum, b) => sum + b.size, 0)).toBe(i.recipients)
        expect(batches.length).toBeLessThanOrEqual(60)
        expect(sizes(batches)).toEqual(expected)
        batches.forEach((b, k) => {
          expect(b.day).toBe(i.startDay + k)
          expect(b.size).toBeGreaterThan(0)
          if (i.mode === "fixed") expect(b.size).toBeLessThanOrEqual(i.dailyBatch as number)
          else {
            expect(b.size).toBeLessThanOrEqual(250 * 2 ** b.day)
            if (typeof i.messagingLimit === "number") expect(b.size).toBeLessThanOrEqual(i.messagingLimit)
          }
          if (k < batches.length - 1) expect(b.size).toBe(i.mode === "fixed" ? i.dailyBatch : rampSizeOf(b.day, i.messagingLimit))
        })
        if (batches.length === 0) return
        // Start times: the first at firstBatchAt, then consecutive local dates at the send time.
        expect(batches[0]?.startsAt).toBe(i.firstBatchAt)
        const first = local(i.firstBatchAt, i.timeZone)
        const timeOfDay = i.sendTime === null ? toMs(first.time) : toMs(i.sendTime)
        for (let k = 1; k < batches.length; k++) {
          const b = batches[k] as PlannedBatch
          expect(b.startsAt).toBeGreaterThan((batches[k - 1] as PlannedBatch).startsAt)
          checkWallClock(b.startsAt, i.timeZone, nextDate(first.date, k), timeOfDay)
        }
      }),
      { numRuns: 600 }
    )
  })

  it("across the clock changes: each later batch at the send time of its own local date, or after the gap", () => {
    const dstZones = ZONES.filter((z) => CHANGES[z].length > 0)
    const crossing = fc
      .constantFrom(...dstZones)
      .chain((zone) =>
        fc.record({
          timeZone: fc.constant(zone),
          change: fc.constantFrom(...CHANGES[zone]),
          daysBefore: fc.integer({ min: 1, max: 5 }),
          firstTime: fc.tuple(fc.integer({ min: 0, max: 23 }), fc.integer({ min: 0, max: 59 })).map(([h, m]) => `${pad(h)}:${pad(m)}`),
          extraMs: fc.integer({ min: 0, max: MINUTE - 1 }),
          sendTime: fc.option(sendTimeArb, { nil: null }),
          mode: fc.constantFrom<"ramp" | "fixed">("ramp", "fixed"),
          messagingLimit: fc.constantFrom<number | null | undefined>(undefined, null, 250, 1000)
        })
      )
    const seen = { plain: 0, gap: 0, twice: 0 }
    fc.assert(
      fc.property(crossing, (c) => {
        const [y, m, d] = nextDate(c.change, -c.daysBefore).split("-").map(Number) as [number, number, number]
        // A default time of day in the small hours when no send time is given, so the change day is hit.
        const firstTime = c.sendTime === null ? `0${1 + (Number(c.firstTime.slice(0, 2)) % 3)}${c.firstTime.slice(2)}` : c.firstTime
        const firstBatchAt = zonedInstant(y, m, d, firstTime, c.timeZone) + c.extraMs
        const i: SplitPlanInput = {
          mode: c.mode,
          dailyBatch: c.mode === "fixed" ? 100 : null,
          messagingLimit: c.messagingLimit,
          recipients: 10_000, // 6 to 40 ramp days
          firstBatchAt,
          startDay: 0,
          sendTime: c.sendTime,
          timeZone: c.timeZone
        }
        const plan = planSplit(c.mode === "fixed" ? { ...i, recipients: 100 * 12 } : i)
        if (!plan.ok) throw new Error("expected a plan")
        expect(plan.batches.length).toBeGreaterThan(c.daysBefore)
        const first = local(firstBatchAt, c.timeZone)
        const timeOfDay = c.sendTime === null ? toMs(first.time) : toMs(c.sendTime)
        plan.batches.forEach((b, k) => {
          if (k === 0) return
          expect(b.startsAt).toBeGreaterThan((plan.batches[k - 1] as PlannedBatch).startsAt)
          seen[checkWallClock(b.startsAt, c.timeZone, nextDate(first.date, k), timeOfDay)]++
        })
      }),
      { numRuns: 500 }
    )
    expect(seen.gap).toBeGreaterThan(0)
    expect(seen.twice).toBeGreaterThan(0)
  })

  it("ok:false exactly when more than 60 days are needed, with the days needed", () => {
    fc.assert(
      fc.property(input, (generated) => {
        const i = toInput(generated)
        const plan = planSplit(i)
        const needed = model(i).length
        expect(plan.ok).toBe(needed <= 60)
        if (!plan.ok) expect(plan.daysNeeded).toBe(needed)
      }),
      { numRuns: 500 }
    )
  })
})
