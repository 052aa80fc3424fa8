import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type GuardedHttp, makeGuardedHttp } from "../../adapters/http/GuardedHttp.ts"
import { layer as kyselyLayer, migrate, openPostgres } from "../../adapters/kysely/KyselyStorage.ts"
import { make, type Omnichannel } from "../../src/app/Omnichannel.ts"
import { makeEvent } from "../../src/kernel/EventEnvelope.ts"
import type { Notification } from "../../src/ports/Notifier.ts"
import { OutboxStore } from "../../src/ports/OutboxStore.ts"
import { type Certificate, hasOpenssl, makeCertificate } from "../outbound/LocalServers.ts"
import { createPostgresDatabase, PG_URL } from "../support/Databases.ts"
import { waitUntil } from "../support/Poll.ts"
import { bootstrap, startTestApp, type TestApp } from "../support/TestApp.ts"
import { type Receiver, startReceiver } from "./Receiver.ts"

const BURST = 200

// Two processes' worth of the library over one PostgreSQL database: they claim with
// FOR UPDATE SKIP LOCKED, so neither sends what the other has claimed.
describe.skipIf(PG_URL === undefined || !hasOpenssl)("two workers on one PostgreSQL database (needs PG_URL)", () => {
  let outbound: GuardedHttp
  let first: TestApp
  let second: Omnichannel
  let closeSecond: () => Promise<void>
  let receiver: Receiver
  let failing: Receiver
  const notifications: Array<Notification> = []

  let certificate: Certificate
  beforeAll(async () => {
    certificate = makeCertificate()
    outbound = makeGuardedHttp({ allow: ["127.0.0.1/32"], ca: certificate.cert })
    receiver = await startReceiver(certificate)
    failing = await startReceiver(certificate, 500)
    const notifier = { send: (notification: Notification) => Effect.sync(() => void notifications.push(notification)) }
    const created = await createPostgresDatabase(PG_URL!)
    const firstDb = openPostgres(created.url)
    await migrate(firstDb, "postgres")
    const secondDb = openPostgres(created.url)
    // Small batches, so the burst takes many claims and both workers have a share of them.
    const dispatch = { fanOutBatch: 20, attemptBatch: 10, attemptConcurrency: 4 }
    first = await startTestApp({
      name: "postgres",
      dialect: "postgres",
      db: firstDb,
      concurrentConnections: true,
      close: async () => {
        await firstDb.destroy()
        await created.drop()
      }
    }, { outbound, notifier, dispatch })
    second = await make({ storage: kyselyLayer(secondDb, "postgres"), clock: first.clock.clock, outbound, notifier, dispatch })
    closeSecond = async () => {
      await second.dispose()
      await secondDb.destroy()
    }
  })
  afterAll(async () => {
    await receiver?.close()
    await failing?.close()
    await closeSecond?.()
    await first?.close()
    outbound?.close()
  })

  /** A new tenant with an endpoint at `url`, and a way to append `count` contact.created events to the outbox. */
  const tenantWithEndpoint = async (url: string, fields: Record<string, unknown> = {}) => {
    const owner = await bootstrap(first)
    const as = (method: string, path: string, body?: unknown) => first.call(method, path, { token: owner.api_key, body })
    const created = await as("POST", "/webhook-endpoints", { name: "Burst", url, subscribed_events: ["contact.created"], ...fields })
    expect(created.status).toBe(201)
    const emit = async (count: number) => {
      const events = await first.app.run(Effect.all(
        Array.from({ length: count }, (_, n) => makeEvent({ type: "contact.created", tenantId: owner.tenant_id, data: { n } }))
      ))
      await first.app.run(Effect.flatMap(OutboxStore, (outbox) => outbox.append(events)))
      return events
    }
    return { endpointId: created.body.webhook_id as string, as, emit }
  }
  const drainBoth = () => Promise.all([first.app.drainDueWork(), second.drainDueWork()])

  it(`delivers a burst of ${BURST} events exactly once each while both drain at the same time`, async () => {
    const { endpointId, as, emit } = await tenantWithEndpoint(receiver.url)
    const events = await emit(BURST)

    const [doneByFirst, doneBySecond] = await drainBoth()

    expect(doneByFirst).toBeGreaterThan(0)
    expect(doneBySecond).toBeGreaterThan(0)
    const received = receiver.deliveries().map((e) => e.id)
    expect(received).toHaveLength(BURST)
    expect([...received].sort()).toEqual(events.map((e) => e.id).sort())
    expect((await as("GET", `/webhook-endpoints/${endpointId}/deliveries?status=success&page_size=1`)).body.total).toBe(BURST)
    expect(await first.app.drainDueWork()).toBe(0)
    expect(receiver.requests).toHaveLength(BURST)
  })

  it("loses no failure count between the workers, and suspends the endpoint once", async () => {
    const { endpointId, as, emit } = await tenantWithEndpoint(failing.url, { retry_strategy: "none" })
    const endpoint = async () => (await as("GET", `/webhook-endpoints/${endpointId}`)).body

    await emit(19)
    await drainBoth()
    expect(await endpoint()).toMatchObject({ status: "active", consecutive_failures: 19 })

    await emit(11)
    await drainBoth()
    expect(await endpoint()).toMatchObject({ status: "suspended", consecutive_failures: 20 })
    expect(notifications.filter((n) => n.subject.includes("suspended"))).toHaveLength(1)
    // Exactly the 20 counted failures are final; the rest wait for replay, even those whose attempt
    // was already in flight when the breaker tripped (their late failure is dropped).
    const total = async (status: string) =>
      (await as("GET", `/webhook-endpoints/${endpointId}/deliveries?status=${status}&page_size=1`)).body.total
    expect([await total("failed"), await total("queued")]).toEqual([20, 10])
    expect(failing.deliveries().length).toBeGreaterThanOrEqual(20)
  })

  it("lets go of a delivery whose lease ran out while it waited behind slow requests, so it is not sent twice", async () => {
    const slow = await startReceiver(certificate, "hang")
    try {
      const { endpointId, as, emit } = await tenantWithEndpoint(slow.url, { retry_strategy: "none", timeout_seconds: 5 })
      // Four requests hang (the first worker's four senders) and the fifth waits in its queue.
      const events = await emit(5)
      const firstDrain = first.app.drainDueWork()
      await waitUntil("the first four requests arrived", () => slow.requests.length >= 4, 10_000)
      // The leases pass: the second worker takes all five over and delivers them.
      first.clock.advance(125_000)
      slow.answerWith(200)
      await second.drainDueWork()
      await firstDrain

      const sent = (id: string) => slow.requests.filter((request) => JSON.parse(request.body).id === id).length
      // The four hung requests were sent by both workers; the fifth, only by the one that held it.
      expect(events.slice(0, 4).map((e) => sent(e.id))).toEqual([2, 2, 2, 2])
      expect(sent(events[4]!.id)).toBe(1)
      expect((await as("GET", `/webhook-endpoints/${endpointId}/deliveries?status=success&page_size=1`)).body.total).toBe(5)
    } finally {
      await slow.close()
    }
  }, 30_000)
})
