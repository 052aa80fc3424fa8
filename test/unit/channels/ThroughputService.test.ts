import { Clock, Context, Effect, Exit, Fiber, Layer, Option, type Scope } from "effect"
import { TestClock } from "effect/testing"
import type { Kysely } from "kysely"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Database, layer as kyselyLayer, migrate, openSqlite } from "../../../adapters/kysely/KyselyStorage.ts"
import { HIGH_PER_SECOND, perSecondOf, reservationSizeOf, slotMicrosOf, STANDARD_PER_SECOND } from "../../../src/channels/Throughput.ts"
import { type ThroughputGrant, ThroughputService } from "../../../src/channels/ThroughputService.ts"
import { ChannelStore } from "../../../src/ports/ChannelStore.ts"
import { SendingLimitStore } from "../../../src/ports/SendingLimitStore.ts"
import { channelRecord, seedTenant, sendingLimitRecord } from "../../conformance/Fixtures.ts"

// The pace of a number as its senders see it: slots reserved in the database, waits on Effect's test
// clock. Each "process" is a ThroughputService of its own (its own cache of rates) over one SQLite
// database, as processes share one database.

const T = Date.parse("2026-12-07T12:00:00.000Z")

let db: Kysely<Database>
beforeAll(async () => {
  db = openSqlite(":memory:")
  await migrate(db, "sqlite")
})
afterAll(() => db.destroy())

const storage = () => kyselyLayer(db, "sqlite")

/** A sending process: a ThroughputService built on its own. */
const aProcess = Effect.suspend(() =>
  Effect.map(Layer.build(ThroughputService.layer.pipe(Layer.provide(storage()))), (context) => Context.get(context, ThroughputService)))

/** A tenant with a chat-app channel, and the number's level as the operator last reported it (none unless given). */
const aNumber = (throughputLevel?: string) =>
  Effect.gen(function*() {
    const { tenant } = yield* seedTenant
    const channel = channelRecord(tenant.id)
    yield* ChannelStore.use((s) => s.insert(channel))
    if (throughputLevel !== undefined) {
      yield* SendingLimitStore.use((s) => s.put(sendingLimitRecord(tenant.id, { channel_id: channel.id, throughput_level: throughputLevel })))
    }
    return { tenantId: tenant.id, channelId: channel.id }
  }).pipe(Effect.provide(storage()))

const onTestClock = <A, E>(effect: Effect.Effect<A, E, Scope.Scope>) =>
  Effect.runPromise(Effect.scoped(Effect.andThen(TestClock.setTime(T), effect)).pipe(Effect.provide(TestClock.layer())))

// Lets queries answer and woken senders reserve and go back to sleep before the clock moves again.
const settle = Effect.promise(() => new Promise<void>((resolve) => setImmediate(resolve))).pipe(Effect.repeat({ times: 3 }))

/** Moves the test clock `ms` forward a millisecond at a time, letting the senders act at each. */
const run = (ms: number) =>
  Effect.gen(function*() {
    yield* settle
    for (let i = 0; i < ms; i++) {
      yield* TestClock.adjust(1)
      yield* settle
    }
  })

/** A grant and the test clock when `acquire` returned it. */
interface Granted extends ThroughputGrant {
  readonly returnedAt: number
}

/** Sends `total` messages through `service`, as a campaign would: acquire, take what was granted, acquire again. */
const sender = (service: ThroughputService["Service"], number: { tenantId: string; channelId: string }, total: number) =>
  Effect.gen(function*() {
    const grants: Array<Granted> = []
    for (let sent = 0; sent < total;) {
      const grant = yield* service.acquire(number.tenantId, number.channelId, total - sent)
      grants.push({ ...grant, returnedAt: yield* Clock.currentTimeMillis })
      sent += grant.count
    }
    return grants
  })

/** The send times of grants: the i-th send of each at start + i × spacing, all sorted. */
const sendTimes = (grants: ReadonlyArray<ThroughputGrant>) =>
  grants.flatMap((g) => Array.from({ length: g.count }, (_, i) => g.startMs + i * g.spacingMs)).sort((a, b) => a - b)

describe("a number's rate", () => {
  it("is 80 a second at STANDARD, at a level not known and with none reported, 1,000 at HIGH, and the host's when set", () => {
    expect(perSecondOf("STANDARD", null)).toBe(STANDARD_PER_SECOND)
    expect(perSecondOf(null, null)).toBe(80)
    expect(perSecondOf("NOT_APPLICABLE", null)).toBe(80)
    expect(perSecondOf("HIGH", null)).toBe(HIGH_PER_SECOND)
    expect(perSecondOf("high", null)).toBe(1_000)
    expect(perSecondOf("HIGH", 250)).toBe(250)
    expect(perSecondOf("STANDARD", 5_000)).toBe(5_000)
  })

  it("gives slots that never pass the rate, and reservations of a tenth of a second's sends", () => {
    expect(slotMicrosOf(80)).toBe(12_500)
    expect(slotMicrosOf(1_000)).toBe(1_000)
    // 333,333.3 µs rounds up: three a second at most.
    expect(slotMicrosOf(3)).toBe(333_334)
    expect([reservationSizeOf(80), reservationSizeOf(1_000), reservationSizeOf(3)]).toEqual([8, 100, 1])
  })
})

describe("ThroughputService", () => {
  it("paces a STANDARD number to 80 a second: reservations of 8, 12.5 ms apart, each given when its first slot opens", async () => {
    await onTestClock(Effect.gen(function*() {
      const number = yield* aNumber("STANDARD")
      const service = yield* aProcess
      const sending = yield* Effect.forkChild(sender(service, number, 160))
      yield* run(2_100)
      const grants = yield* Fiber.join(sending)

      expect(grants.map((g) => [g.count, g.spacingMs, g.perSecond])).toEqual(Array(20).fill([8, 12.5, 80]))
      expect(grants.map((g) => g.startMs)).toEqual(Array.from({ length: 20 }, (_, k) => T + k * 100))
      for (const g of grants) {
        expect(g.returnedAt).toBeGreaterThanOrEqual(g.startMs)
        expect(g.returnedAt - g.startMs).toBeLessThanOrEqual(1)
      }
    }))
  })

  it("grants what is asked when it is less than a reservation", async () => {
    await onTestClock(Effect.gen(function*() {
      const number = yield* aNumber()
      const service = yield* aProcess
      const asking = yield* Effect.forkChild(Effect.all([
        service.acquire(number.tenantId, number.channelId, 3),
        service.acquire(number.tenantId, number.channelId, 1)
      ]))
      yield* run(50)
      expect(yield* Fiber.join(asking)).toEqual([
        { count: 3, startMs: T, spacingMs: 12.5, perSecond: 80 },
        { count: 1, startMs: T + 37.5, spacingMs: 12.5, perSecond: 80 }
      ])
    }))
  })

  it("keeps two processes sending through one number to its rate together, and uses at least 95 % of it", async () => {
    await onTestClock(Effect.gen(function*() {
      const number = yield* aNumber("STANDARD")
      const [a, b] = [yield* aProcess, yield* aProcess]
      const sending = yield* Effect.forkChild(Effect.all([sender(a, number, 200), sender(b, number, 200)], { concurrency: 2 }))
      yield* run(5_100)
      const [ofA, ofB] = yield* Fiber.join(sending)

      const times = sendTimes([...ofA, ...ofB])
      expect(times).toHaveLength(400)
      // No two sends of the number closer than a slot, whichever process made them.
      for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!).toBeGreaterThanOrEqual(12.5)
      const perSecond = times.length / ((times.at(-1)! - times[0]! + 12.5) / 1000)
      expect(perSecond).toBeLessThanOrEqual(80)
      expect(perSecond).toBeGreaterThanOrEqual(0.95 * 80)
      // Both processes had their share.
      expect(ofA.every((g) => g.returnedAt >= g.startMs) && ofB.every((g) => g.returnedAt >= g.startMs)).toBe(true)
    }))
  })

  it("paces a HIGH number to 1,000 a second, in reservations of 100", async () => {
    await onTestClock(Effect.gen(function*() {
      const number = yield* aNumber("HIGH")
      const service = yield* aProcess
      const sending = yield* Effect.forkChild(sender(service, number, 1_000))
      yield* run(1_000)
      const grants = yield* Fiber.join(sending)

      expect(grants.map((g) => [g.count, g.spacingMs, g.perSecond])).toEqual(Array(10).fill([100, 1, 1_000]))
      expect(grants.at(-1)!.startMs).toBe(T + 900)
    }))
  })

  it("sees the number's upgrade within a second, and reads its rate at most once a second meanwhile", async () => {
    await onTestClock(Effect.gen(function*() {
      const number = yield* aNumber("STANDARD")
      const service = yield* aProcess
      expect(yield* service.rate(number.tenantId, number.channelId)).toBe(80)
      yield* SendingLimitStore.use((s) => s.put(sendingLimitRecord(number.tenantId, { channel_id: number.channelId, throughput_level: "HIGH" })))
        .pipe(Effect.provide(storage()))
      expect(yield* service.rate(number.tenantId, number.channelId)).toBe(80)
      yield* TestClock.adjust(999)
      expect(yield* service.rate(number.tenantId, number.channelId)).toBe(80)
      yield* TestClock.adjust(1)
      expect(yield* service.rate(number.tenantId, number.channelId)).toBe(1_000)
    }))
  })

  it("holds every process's sends after a refusal for the time asked, once however many report it", async () => {
    await onTestClock(Effect.gen(function*() {
      const number = yield* aNumber()
      const [a, b] = [yield* aProcess, yield* aProcess]
      expect((yield* a.acquire(number.tenantId, number.channelId, 8)).startMs).toBe(T)
      // Three sends in flight came back 130429.
      for (let i = 0; i < 3; i++) yield* a.penalize(number.tenantId, number.channelId, 2_000)

      const waiting = yield* Effect.forkChild(sender(b, number, 8))
      yield* run(1_990)
      expect(waiting.pollUnsafe()).toBeUndefined()
      yield* run(20)
      const [grant] = yield* Fiber.join(waiting)
      expect(grant).toMatchObject({ count: 8, startMs: T + 2_000 })
      expect(grant!.returnedAt).toBeGreaterThanOrEqual(T + 2_000)
    }))
  })

  it("sets a channel's rate for the host, seen at once by the process that set it and within a second by others", async () => {
    await onTestClock(Effect.gen(function*() {
      const number = yield* aNumber("STANDARD")
      const [a, b] = [yield* aProcess, yield* aProcess]
      expect(yield* b.rate(number.tenantId, number.channelId)).toBe(80)

      expect(yield* a.setRate(number.tenantId, number.channelId, 250)).toEqual({
        channel_id: number.channelId,
        throughput_per_second: 250,
        set_by_host: true
      })
      expect(yield* a.rate(number.tenantId, number.channelId)).toBe(250)
      expect(yield* b.rate(number.tenantId, number.channelId)).toBe(80)
      yield* TestClock.adjust(1_000)
      expect(yield* b.rate(number.tenantId, number.channelId)).toBe(250)
      expect(yield* b.acquire(number.tenantId, number.channelId, 100)).toMatchObject({ count: 25, spacingMs: 4, perSecond: 250 })

      expect(yield* a.setRate(number.tenantId, number.channelId, null)).toEqual({
        channel_id: number.channelId,
        throughput_per_second: 80,
        set_by_host: false
      })
    }))
  })

  it("refuses a rate for a channel unknown to the tenant (404), not chat-app, or not a whole number from 1 to 100,000 (422)", async () => {
    await onTestClock(Effect.gen(function*() {
      const number = yield* aNumber()
      const other = yield* aNumber()
      const bot = channelRecord(number.tenantId, { platform: "botchat" })
      yield* ChannelStore.use((s) => s.insert(bot)).pipe(Effect.provide(storage()))
      const service = yield* aProcess
      const failure = (channelId: string, perSecond: number | null, tenantId = number.tenantId) =>
        Effect.map(Effect.exit(service.setRate(tenantId, channelId, perSecond)), (exit) =>
          Exit.isFailure(exit) ? Option.getOrUndefined(Exit.findErrorOption(exit))?._tag : "succeeded")

      expect(yield* failure("no-such-channel", 100)).toBe("NotFound")
      expect(yield* failure(other.channelId, 100)).toBe("NotFound")
      expect(yield* failure(bot.id, 100)).toBe("InvalidRequest")
      for (const perSecond of [0, -5, 1.5, 100_001, Number.NaN]) expect(yield* failure(number.channelId, perSecond)).toBe("InvalidRequest")
      expect(yield* failure(number.channelId, 100_000)).toBe("succeeded")
      expect(yield* failure(number.channelId, 1)).toBe("succeeded")
    }))
  })
})
