import { Effect, Option } from "effect"
import { expect, it } from "vitest"
import type { AccountStore } from "../../src/ports/AccountStore.ts"
import { type ReservedSlots, type SendRateRecord, SendRateStore, type SlotRequest } from "../../src/ports/SendRateStore.ts"
import type { TenantStore } from "../../src/ports/TenantStore.ts"
import type { Transactor } from "../../src/ports/Transactor.ts"
import { contend } from "./Contention.ts"
import { seedTenant } from "./Fixtures.ts"
import { makeSuite, type Suite, type UseHarness } from "./Harness.ts"

type SendRatePorts = SendRateStore | TenantStore | AccountStore | Transactor
type UseSendRates = UseHarness<SendRatePorts, never>

const NEEDS_CONNECTIONS = "needs several connections: the adapter runs one transaction at a time"

// 2026-12-07T12:00:00Z in microseconds; a slot at 80 sends a second lasts 12,500 µs.
const T = Date.parse("2026-12-07T12:00:00.000Z") * 1000
const SLOT = 12_500
const SECOND = 1_000_000

const channelId = (): string => globalThis.crypto.randomUUID()

const request = (count: number, nowUs: number, maxAheadUs = SECOND): SlotRequest => ({ count, intervalUs: SLOT, nowUs, maxAheadUs })

const reserve = (tenantId: string, channel: string, slots: SlotRequest) => SendRateStore.use((s) => s.reserve(tenantId, channel, slots))

const get = (h: UseSendRates, tenantId: string, channel: string): Promise<SendRateRecord | undefined> =>
  h().run(SendRateStore.use((s) => s.get(tenantId, channel))).then(Option.getOrUndefined)

const startOf = (slots: ReservedSlots): number => {
  if (!slots.reserved) throw new Error(`expected slots, got none (next free at ${slots.nextFreeUs})`)
  return slots.startUs
}

/** The reserved spans, [start, end) each, sorted; throws if any reservation got nothing. */
const spans = (granted: ReadonlyArray<readonly [ReservedSlots, number]>) =>
  granted.map(([slots, count]) => [startOf(slots), startOf(slots) + count * SLOT] as const).sort((a, b) => a[0] - b[0])

/**
 * SendRateStore: one row per tenant and channel; a reservation starts at the later of the next free
 * slot and now, moves the next free slot past what it took, and takes nothing when the next free slot
 * lies beyond its reach; a hold only ever moves the next free slot later; a host's rate is kept apart
 * from the slots. Racing reservations, from separate connections where the adapter has them, never
 * overlap; no tenant reads or moves another's.
 */
export const sendRateStoreSuite: Suite<SendRatePorts, never> = makeSuite({
  name: "SendRateStore",
  tables: [],
  tests: (h) => {
    it("has no row for a channel never used", async () => {
      const { tenant } = await h().run(seedTenant)
      expect(await get(h, tenant.id, channelId())).toBeUndefined()
    })

    it("starts the first reservation now, and each next one where the one before ended", async () => {
      const { tenant } = await h().run(seedTenant)
      const channel = channelId()

      expect(await h().run(reserve(tenant.id, channel, request(3, T)))).toEqual({ reserved: true, startUs: T })
      expect(await h().run(reserve(tenant.id, channel, request(2, T)))).toEqual({ reserved: true, startUs: T + 3 * SLOT })
      expect(await h().run(reserve(tenant.id, channel, request(1, T + 10_000)))).toEqual({ reserved: true, startUs: T + 5 * SLOT })
      expect(await get(h, tenant.id, channel)).toEqual({ tenant_id: tenant.id, channel_id: channel, next_free_us: T + 6 * SLOT, host_per_second: null })
    })

    it("starts now once the next free slot has passed: time left idle is not saved up", async () => {
      const { tenant } = await h().run(seedTenant)
      const channel = channelId()
      await h().run(reserve(tenant.id, channel, request(1, T)))

      expect(await h().run(reserve(tenant.id, channel, request(4, T + 10 * SECOND)))).toEqual({ reserved: true, startUs: T + 10 * SECOND })
      expect((await get(h, tenant.id, channel))?.next_free_us).toBe(T + 10 * SECOND + 4 * SLOT)
    })

    it("reserves nothing while the next free slot lies beyond the reach asked for, and says when it is", async () => {
      const { tenant } = await h().run(seedTenant)
      const channel = channelId()
      // 100 slots of 12.5 ms: the next free one is 1.25 s away.
      await h().run(reserve(tenant.id, channel, request(100, T)))

      expect(await h().run(reserve(tenant.id, channel, request(1, T)))).toEqual({ reserved: false, nextFreeUs: T + 100 * SLOT })
      expect(await h().run(reserve(tenant.id, channel, request(1, T + 250_000 - 1)))).toEqual({ reserved: false, nextFreeUs: T + 100 * SLOT })
      expect((await get(h, tenant.id, channel))?.next_free_us).toBe(T + 100 * SLOT)
      // Exactly at the reach: reserved, after the slots already taken.
      expect(await h().run(reserve(tenant.id, channel, request(1, T + 250_000)))).toEqual({ reserved: true, startUs: T + 100 * SLOT })
      // A wider reach takes slots further ahead.
      expect(await h().run(reserve(tenant.id, channel, request(1, T, 2 * SECOND)))).toEqual({ reserved: true, startUs: T + 101 * SLOT })
    })

    it("grants nothing extra to a clock gone backwards", async () => {
      const { tenant } = await h().run(seedTenant)
      const channel = channelId()
      await h().run(reserve(tenant.id, channel, request(2, T)))

      // Five seconds back, with reach enough: the slots still come after those taken.
      expect(await h().run(reserve(tenant.id, channel, request(1, T - 5 * SECOND, 10 * SECOND)))).toEqual({ reserved: true, startUs: T + 2 * SLOT })
      // With the usual reach, the slot taken at the true time is out of reach from the past.
      expect(await h().run(reserve(tenant.id, channel, request(1, T - 5 * SECOND)))).toEqual({ reserved: false, nextFreeUs: T + 3 * SLOT })
      expect((await get(h, tenant.id, channel))?.next_free_us).toBe(T + 3 * SLOT)
    })

    it("never lets slots overlap or start before the clock asking for them, whatever order the clocks come in", async () => {
      const { tenant } = await h().run(seedTenant)
      const channel = channelId()
      // Clocks of several processes, some behind others, and sizes 1–7.
      const steps = [0, 3, -40, 25, 25, -900, 1_200, 10, -5, 3_000, 2_990, 4_000, -3_000, 4_100, 4_100, 4_105].map((ms, i) => ({
        nowUs: T + ms * 1000,
        count: (i * 5) % 7 + 1
      }))
      const granted: Array<readonly [ReservedSlots, number]> = []
      for (const step of steps) {
        const slots = await h().run(reserve(tenant.id, channel, request(step.count, step.nowUs, 10 * SECOND)))
        expect(startOf(slots)).toBeGreaterThanOrEqual(step.nowUs)
        granted.push([slots, step.count])
      }
      const taken = spans(granted)
      for (let i = 1; i < taken.length; i++) expect(taken[i]![0]).toBeGreaterThanOrEqual(taken[i - 1]![1])
      expect((await get(h, tenant.id, channel))?.next_free_us).toBe(taken.at(-1)![1])
    })

    it("holds the next free slot until a later time, never an earlier one, on a channel used or not", async () => {
      const { tenant } = await h().run(seedTenant)
      const used = channelId()
      await h().run(reserve(tenant.id, used, request(2, T)))

      await h().run(SendRateStore.use((s) => s.holdUntil(tenant.id, used, T + 3 * SECOND)))
      expect((await get(h, tenant.id, used))?.next_free_us).toBe(T + 3 * SECOND)
      await h().run(SendRateStore.use((s) => s.holdUntil(tenant.id, used, T + SECOND)))
      expect((await get(h, tenant.id, used))?.next_free_us).toBe(T + 3 * SECOND)
      expect(await h().run(reserve(tenant.id, used, request(1, T + 2 * SECOND)))).toEqual({ reserved: true, startUs: T + 3 * SECOND })

      const fresh = channelId()
      await h().run(SendRateStore.use((s) => s.holdUntil(tenant.id, fresh, T + SECOND)))
      expect(await get(h, tenant.id, fresh)).toEqual({ tenant_id: tenant.id, channel_id: fresh, next_free_us: T + SECOND, host_per_second: null })
      expect(await h().run(reserve(tenant.id, fresh, request(1, T)))).toEqual({ reserved: true, startUs: T + SECOND })
    })

    it("keeps the host's rate apart from the slots: each write leaves the other alone", async () => {
      const { tenant } = await h().run(seedTenant)
      const channel = channelId()
      await h().run(SendRateStore.use((s) => s.setHostRate(tenant.id, channel, 250)))
      expect(await get(h, tenant.id, channel)).toEqual({ tenant_id: tenant.id, channel_id: channel, next_free_us: 0, host_per_second: 250 })

      await h().run(reserve(tenant.id, channel, request(2, T)))
      await h().run(SendRateStore.use((s) => s.holdUntil(tenant.id, channel, T + SECOND)))
      expect(await get(h, tenant.id, channel)).toEqual({ tenant_id: tenant.id, channel_id: channel, next_free_us: T + SECOND, host_per_second: 250 })

      await h().run(SendRateStore.use((s) => s.setHostRate(tenant.id, channel, 1_000)))
      expect(await get(h, tenant.id, channel)).toEqual({ tenant_id: tenant.id, channel_id: channel, next_free_us: T + SECOND, host_per_second: 1_000 })
      await h().run(SendRateStore.use((s) => s.setHostRate(tenant.id, channel, null)))
      expect(await get(h, tenant.id, channel)).toEqual({ tenant_id: tenant.id, channel_id: channel, next_free_us: T + SECOND, host_per_second: null })
    })

    it("never gives one tenant another's slots or rate for the same channel id, nor lets it move them", async () => {
      const { a, b } = await h().run(Effect.all({ a: seedTenant, b: seedTenant }))
      const channel = channelId()
      await h().run(reserve(a.tenant.id, channel, request(50, T)))
      await h().run(SendRateStore.use((s) => s.setHostRate(a.tenant.id, channel, 500)))

      expect(await get(h, b.tenant.id, channel)).toBeUndefined()
      expect(await h().run(reserve(b.tenant.id, channel, request(1, T)))).toEqual({ reserved: true, startUs: T })
      await h().run(SendRateStore.use((s) => s.holdUntil(b.tenant.id, channel, T + 60 * SECOND)))
      await h().run(SendRateStore.use((s) => s.setHostRate(b.tenant.id, channel, 80)))

      expect(await get(h, a.tenant.id, channel)).toEqual({ tenant_id: a.tenant.id, channel_id: channel, next_free_us: T + 50 * SLOT, host_per_second: 500 })
      expect(await get(h, b.tenant.id, channel)).toEqual({ tenant_id: b.tenant.id, channel_id: channel, next_free_us: T + 60 * SECOND, host_per_second: 80 })
    })

    it("gives reservations racing on one channel, the first of them included, slots that never overlap and leave no gap", async () => {
      const { tenant } = await h().run(seedTenant)
      for (let round = 0; round < 3; round++) {
        const channel = channelId()
        const counts = Array.from({ length: 16 }, (_, i) => (i * 3 + round) % 5 + 1)
        const granted = await h().run(Effect.forEach(
          counts,
          (count) => Effect.map(reserve(tenant.id, channel, request(count, T, 60 * SECOND)), (slots) => [slots, count] as const),
          { concurrency: "unbounded" }
        ))

        const taken = spans(granted)
        expect(taken[0]![0]).toBe(T)
        for (let i = 1; i < taken.length; i++) expect(taken[i]![0]).toBe(taken[i - 1]![1])
        const total = counts.reduce((sum, count) => sum + count, 0)
        expect((await get(h, tenant.id, channel))?.next_free_us).toBe(T + total * SLOT)
      }
    })

    it("makes a reservation on another connection wait for one not yet committed, then start after it (needs several connections)", async (ctx) => {
      ctx.skip(!h().capabilities.concurrentConnections, NEEDS_CONNECTIONS)
      const { tenant } = await h().run(seedTenant)
      // A channel's first reservation (an insert) and a later one (an update) alike.
      for (const used of [false, true]) {
        const channel = channelId()
        if (used) await h().run(reserve(tenant.id, channel, request(4, T - SECOND)))
        const first = reserve(tenant.id, channel, request(3, T))

        const { whileHeld, after } = await h().run(contend({ hold: first, finish: () => Effect.void, contend: reserve(tenant.id, channel, request(2, T)) }))

        expect(whileHeld).toEqual(Option.none())
        expect(after).toEqual({ reserved: true, startUs: T + 3 * SLOT })
        expect((await get(h, tenant.id, channel))?.next_free_us).toBe(T + 5 * SLOT)
      }
    })
  }
})
