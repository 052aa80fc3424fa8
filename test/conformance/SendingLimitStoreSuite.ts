import { Effect, Option } from "effect"
import { expect, it } from "vitest"
import type { AccountStore } from "../../src/ports/AccountStore.ts"
import { type SendingLimitRecord, SendingLimitStore } from "../../src/ports/SendingLimitStore.ts"
import type { TenantStore } from "../../src/ports/TenantStore.ts"
import { seedTenant, sendingLimitRecord } from "./Fixtures.ts"
import { makeSuite, type Suite, type UseHarness } from "./Harness.ts"

type UseSendingLimits = UseHarness<SendingLimitStore | TenantStore | AccountStore, never>

const put = (h: UseSendingLimits, record: SendingLimitRecord) => h().run(SendingLimitStore.use((s) => s.put(record)))

const get = (h: UseSendingLimits, tenantId: string, channelId: string) =>
  h().run(SendingLimitStore.use((s) => s.get(tenantId, channelId))).then(Option.getOrUndefined)

/** Every value null: what a number the operator said nothing about reads back as. */
const NOTHING_REPORTED = { messaging_limit_tier: null, quality_rating: null, throughput_level: null, phone_status: null } as const

/**
 * SendingLimitStore: one row per tenant and channel, every field round-tripping, replaced whole by
 * each put; no tenant reads another's. Needs TenantStore and AccountStore for the tenants rows belong to.
 */
export const sendingLimitStoreSuite: Suite<SendingLimitStore | TenantStore | AccountStore, never> = makeSuite({
  name: "SendingLimitStore",
  tables: [],
  tests: (h) => {
    it("has no sending limit for a channel never stored", async () => {
      const { tenant } = await h().run(seedTenant)
      expect(await get(h, tenant.id, sendingLimitRecord(tenant.id).channel_id)).toBeUndefined()
    })

    it("reads back every field it stored", async () => {
      const { tenant } = await h().run(seedTenant)
      const limit = sendingLimitRecord(tenant.id, {
        messaging_limit_tier: "TIER_100K",
        quality_rating: "YELLOW",
        throughput_level: "HIGH",
        phone_status: "FLAGGED",
        source: "webhook",
        updated_at: "2026-11-26T10:15:30.123Z"
      })
      await put(h, limit)

      expect(await get(h, tenant.id, limit.channel_id)).toEqual(limit)
    })

    it("reads back null for every value not reported", async () => {
      const { tenant } = await h().run(seedTenant)
      const limit = sendingLimitRecord(tenant.id, NOTHING_REPORTED)
      await put(h, limit)

      expect(await get(h, tenant.id, limit.channel_id)).toEqual(limit)
    })

    it("replaces every field with each put, nulls included, and back", async () => {
      const { tenant } = await h().run(seedTenant)
      const first = sendingLimitRecord(tenant.id)
      const second: SendingLimitRecord = {
        ...first,
        messaging_limit_tier: "TIER_10K",
        quality_rating: "RED",
        throughput_level: "HIGH",
        phone_status: "RESTRICTED",
        source: "webhook",
        updated_at: "2026-11-26T11:00:00.000Z"
      }
      const third: SendingLimitRecord = { ...first, ...NOTHING_REPORTED, source: "operator", updated_at: "2026-11-26T12:00:00.000Z" }
      const fourth: SendingLimitRecord = { ...second, updated_at: "2026-11-26T13:00:00.000Z" }

      for (const limit of [first, second, third, fourth]) {
        await put(h, limit)
        expect(await get(h, tenant.id, first.channel_id)).toEqual(limit)
      }
    })

    it("keeps one row per channel, each replaced alone", async () => {
      const { tenant } = await h().run(seedTenant)
      const one = sendingLimitRecord(tenant.id)
      const other = sendingLimitRecord(tenant.id, { quality_rating: "UNKNOWN", source: "webhook" })
      await put(h, one)
      await put(h, other)
      const changed: SendingLimitRecord = { ...one, quality_rating: "RED", updated_at: "2026-11-26T11:00:00.000Z" }
      await put(h, changed)

      expect(await get(h, tenant.id, one.channel_id)).toEqual(changed)
      expect(await get(h, tenant.id, other.channel_id)).toEqual(other)
    })

    it("never gives one tenant another's sending limit for the same channel id, nor lets it replace one", async () => {
      const { a, b } = await h().run(Effect.all({ a: seedTenant, b: seedTenant }))
      const ofA = sendingLimitRecord(a.tenant.id)
      await put(h, ofA)

      expect(await get(h, b.tenant.id, ofA.channel_id)).toBeUndefined()

      const ofB: SendingLimitRecord = { ...ofA, tenant_id: b.tenant.id, ...NOTHING_REPORTED, source: "webhook" }
      await put(h, ofB)
      expect(await get(h, b.tenant.id, ofA.channel_id)).toEqual(ofB)
      expect(await get(h, a.tenant.id, ofA.channel_id)).toEqual(ofA)
    })
  }
})
