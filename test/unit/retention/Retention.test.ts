import { Effect } from "effect"
import { describe, expect, it } from "vitest"
import { layer, openSqlite } from "../../../adapters/kysely/KyselyStorage.ts"
import { make } from "../../../src/app/Omnichannel.ts"
import { InboundStore } from "../../../src/ports/InboundStore.ts"
import { WebhookDeliveryStore } from "../../../src/ports/WebhookDeliveryStore.ts"
import { WebhookEndpointStore } from "../../../src/ports/WebhookEndpointStore.ts"
import { checkRetentionDays, cutoffOf, DAY_MS, isRetentionDays, MAX_RETENTION_DAYS } from "../../../src/retention/Retention.ts"
import { deliveryRecord } from "../../conformance/DeliveryFixtures.ts"
import { inboundPayloadRecord, seedTenant, webhookEndpointRecord } from "../../conformance/Fixtures.ts"
import { testDatabases } from "../../support/Databases.ts"
import { startTestApp } from "../../support/TestApp.ts"

const millis = (iso: string) => Date.parse(iso)

describe("the retention cut-off", () => {
  it("is now less the kept days, as a stored timestamp (fixed-width ISO 8601 UTC with milliseconds)", () => {
    expect(cutoffOf(millis("2026-11-26T12:34:56.789Z"), 30)).toBe("2026-10-27T12:34:56.789Z")
    expect(cutoffOf(millis("2026-11-26T00:00:00.000Z"), 1)).toBe("2026-11-25T00:00:00.000Z")
  })

  it("counts days of 24 hours on the clock, not calendar days: a daylight-saving change moves nothing", () => {
    // Europe changes its clocks on 2026-10-25; UTC does not, and neither does the cut-off.
    expect(cutoffOf(millis("2026-10-26T12:00:00.000Z"), 2)).toBe("2026-10-24T12:00:00.000Z")
    expect(millis(cutoffOf(millis("2026-10-26T12:00:00.000Z"), 2))).toBe(millis("2026-10-26T12:00:00.000Z") - 2 * DAY_MS)
  })

  it("crosses month, year and leap-day boundaries", () => {
    expect(cutoffOf(millis("2028-03-01T00:00:00.000Z"), 1)).toBe("2028-02-29T00:00:00.000Z")
    expect(cutoffOf(millis("2027-01-15T08:00:00.000Z"), 30)).toBe("2026-12-16T08:00:00.000Z")
  })

  it("lets a row go only once it is older than the kept days: finished exactly at the cut-off, it stays", async () => {
    const test = await startTestApp(await testDatabases[0]!.open(), { retentionDays: 30 })
    try {
      const now = test.clock.nowMillis()
      const { tenant } = await test.app.run(seedTenant)
      const endpoint = webhookEndpointRecord(tenant.id)
      await test.app.run(WebhookEndpointStore.use((s) => s.insert(endpoint)))
      // One finished delivery and one processed inbound payload per instant around the cut-off.
      const cutoff = now - 30 * DAY_MS
      const rows = (["before", "at", "after"] as const).map((name, i) => {
        const finishedAt = new Date(cutoff + i - 1).toISOString()
        return {
          name,
          delivery: deliveryRecord(endpoint, { status: "success", attempt_number: 1, created_at: finishedAt, completed_at: finishedAt }),
          payload: inboundPayloadRecord({ status: "processed", processed_at: finishedAt })
        }
      })
      await test.app.run(WebhookDeliveryStore.use((s) => s.insertMany(rows.map((r) => r.delivery))))
      await test.app.run(InboundStore.use((s) => Effect.forEach(rows, (r) => s.insert(r.payload), { discard: true })))
      /** The names of the instants whose delivery, and whose payload, are still stored. */
      const kept = async () => {
        const deliveries = new Set((await test.database.db.selectFrom("webhook_deliveries").select("id").execute()).map((r) => r.id))
        const payloads = new Set((await test.database.db.selectFrom("inbound_payloads").select("id").execute()).map((r) => r.id))
        return {
          deliveries: rows.filter((r) => deliveries.has(r.delivery.id)).map((r) => r.name),
          payloads: rows.filter((r) => payloads.has(r.payload.id)).map((r) => r.name)
        }
      }
      expect(await kept()).toEqual({ deliveries: ["before", "at", "after"], payloads: ["before", "at", "after"] })

      await test.app.drainDueWork()
      expect(await kept()).toEqual({ deliveries: ["at", "after"], payloads: ["at", "after"] })

      // One millisecond later the row finished at the old cut-off is older than the kept days.
      test.clock.advance(1)
      await test.app.drainDueWork()
      expect(await kept()).toEqual({ deliveries: ["after"], payloads: ["after"] })
    } finally {
      await test.close()
    }
  })

  it("stays a four-digit year at the longest retention", () => {
    expect(cutoffOf(millis("2026-11-26T00:00:00.000Z"), MAX_RETENTION_DAYS)).toMatch(/^1926-\d\d-\d\dT00:00:00\.000Z$/)
  })
})

describe("the retention setting", () => {
  it("accepts whole days from 1 to 36500", () => {
    for (const days of [1, 2, 30, 365, MAX_RETENTION_DAYS]) expect(isRetentionDays(days)).toBe(true)
  })

  it("refuses 0, negative, fractional, too large and non-numbers, naming the setting", () => {
    for (const days of [0, -1, 1.5, MAX_RETENTION_DAYS + 1, Number.NaN, Number.POSITIVE_INFINITY, "30", null]) {
      expect(isRetentionDays(days)).toBe(false)
      expect(() => checkRetentionDays("retentionDays", days)).toThrow(/^retentionDays must be a whole number of days from 1 to 36500, got /)
    }
    expect(() => checkRetentionDays("OMNI_RETENTION_DAYS", 0)).toThrow("OMNI_RETENTION_DAYS must be a whole number of days from 1 to 36500, got 0")
    expect(checkRetentionDays("retentionDays", 7)).toBe(7)
  })

  it("makes the library refuse to start with a retention of 0 days, before it opens anything", async () => {
    const db = openSqlite(":memory:")
    try {
      await expect(make({ storage: layer(db, "sqlite"), retentionDays: 0 })).rejects.toThrow(
        "retentionDays must be a whole number of days from 1 to 36500, got 0"
      )
    } finally {
      await db.destroy()
    }
  })
})
