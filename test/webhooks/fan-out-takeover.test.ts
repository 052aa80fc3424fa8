import { Effect } from "effect"
import { afterEach, beforeAll, describe, expect, it } from "vitest"
import { makeEvent } from "../../src/kernel/EventEnvelope.ts"
import { type FanOutLease, WebhookDeliveryStore } from "../../src/ports/WebhookDeliveryStore.ts"
import { BackgroundWork, drainDueWork } from "../../src/kernel/BackgroundWork.ts"
import { type Certificate, hasOpenssl, makeCertificate, startServer } from "../outbound/LocalServers.ts"
import { PG_URL } from "../support/Databases.ts"
import { waitUntil } from "../support/Poll.ts"
import { startWebhookApp, type WebhookApp } from "./WebhookApp.ts"

let certificate: Certificate
beforeAll(() => {
  if (hasOpenssl) certificate = makeCertificate()
})

const LEASE_SECONDS = 120

// A worker stores a delivery it fanned out only once it has been attempted, and holds the batch
// through a fan-out lease meanwhile. These tests change the endpoint during an attempt, or leave
// such a lease behind as a worker that died would, and check what is stored and sent.
for (const database of ["sqlite-memory", ...(PG_URL === undefined ? [] : ["postgres"])]) {
  describe.skipIf(!hasOpenssl)(`deliveries stored after their attempt, and a fan-out whose worker died, on ${database} (needs the openssl CLI)`, () => {
    let world: WebhookApp
    afterEach(() => world?.close())

    /** Takes every unfanned event as a worker would, leaves its lease behind, and stores nothing else. */
    const fanOutAndDie = () =>
      world.test.app.run(Effect.gen(function*() {
        const deliveries = yield* WebhookDeliveryStore
        const at = world.now()
        const lease = {
          id: globalThis.crypto.randomUUID(),
          fanned_at: at,
          holder: "the worker that died",
          lease_until: new Date(Date.parse(at) + LEASE_SECONDS * 1000).toISOString()
        }
        const taken = yield* deliveries.takeFanOut(1_000, lease)
        return { ...taken, lease: { ...lease, seqs: taken.leased.map((t) => t.seq) } satisfies FanOutLease }
      }))

    it("stores and sends, after the lease, what the batch lacked: once each, in its place, and nothing it had", async () => {
      world = await startWebhookApp(certificate, { database, dispatch: { leaseSeconds: LEASE_SECONDS } })
      const tenant = await world.newTenant()
      const receiver = await world.startReceiver()
      const endpoint = await tenant.createEndpoint(receiver.url)
      const events = await world.test.app.run(Effect.all(
        [0, 1, 2].map((n) => makeEvent({ type: "contact.created", tenantId: tenant.tenant_id, data: { n } }))
      ))
      // Events nobody wants (those of a tenant without endpoints) are stored fanned out: the batch never holds them.
      const withoutEndpoints = await world.newTenant()
      const unwanted = await world.test.app.run(Effect.all(
        [0, 1].map((n) => makeEvent({ type: "contact.created", tenantId: withoutEndpoints.tenant_id, data: { n } }))
      ))
      await withoutEndpoints.emit(unwanted.slice(0, 1))
      await tenant.emit(events)
      await withoutEndpoints.emit(unwanted.slice(1))
      const taken = await fanOutAndDie()
      const { lease } = taken
      expect(taken.leased.map((t) => t.event.id)).toEqual(events.map((e) => e.id))
      expect(taken.unwanted).toBe(0)
      // It had attempted and stored the first event's delivery before it died.
      await world.test.app.run(WebhookDeliveryStore.use((s) =>
        s.insertMany([{
          id: globalThis.crypto.randomUUID(),
          tenant_id: tenant.tenant_id,
          webhook_endpoint_id: endpoint.id,
          event_id: events[0]!.event_id,
          event_type: events[0]!.type,
          envelope: events[0]!,
          outbox_seq: taken.leased[0]!.seq,
          previous_delivery_id: null,
          created_at: lease.fanned_at,
          status: "success",
          attempt_number: 1,
          max_retries: 5,
          retry_strategy: "exponential",
          next_retry_at: null,
          completed_at: lease.fanned_at,
          response_status_code: 204,
          response_time_ms: 3,
          error_message: null
        }])
      ))
      // An endpoint made after the fan-out never wanted these events, nor those stored fanned out.
      world.advance(1_000)
      const later = await world.startReceiver()
      await tenant.createEndpoint(later.url)
      await withoutEndpoints.createEndpoint(later.url)

      // While the lease runs, the batch is still the dead worker's: nothing is sent.
      expect(await world.drain()).toBe(0)
      expect(receiver.requests).toHaveLength(0)

      world.advance(LEASE_SECONDS * 1000)
      expect(await world.drain()).toBe(2)
      // Both are attempted at once, so they may arrive in either order; each arrives once.
      expect(receiver.deliveries().map((e) => e.id).sort()).toEqual([events[1]!.id, events[2]!.id].sort())
      expect(later.requests).toHaveLength(0)
      const page = await tenant.deliveries(endpoint.id)
      expect(page.items.map((d: any) => [d.status, d.created_at])).toEqual([
        ["success", lease.fanned_at],
        ["success", lease.fanned_at],
        ["success", lease.fanned_at]
      ])
      expect(new Set(page.items.map((d: any) => d.event_id))).toEqual(new Set(events.map((e) => e.event_id)))

      // The lease is gone with the batch: nothing is stored or sent again.
      world.advance(LEASE_SECONDS * 1000)
      expect(await world.drain()).toBe(0)
      expect(receiver.requests).toHaveLength(2)
    })

    it("stores a delivery whose endpoint was set inactive during its attempt as dead-lettered, like the endpoint's others", async () => {
      world = await startWebhookApp(certificate, { database, dispatch: { leaseSeconds: LEASE_SECONDS } })
      const tenant = await world.newTenant()
      const slow = await world.startReceiver("hang")
      const endpoint = await tenant.createEndpoint(slow.url, { timeout_seconds: 5 })
      await tenant.createContact()
      const drained = world.drain()
      await waitUntil("the delivery was sent", () => slow.requests.length >= 1, 10_000)
      // Not stored yet: it is stored once its attempt is over.
      expect((await tenant.deliveries(endpoint.id)).items).toEqual([])
      expect((await tenant.as("PATCH", `/webhook-endpoints/${endpoint.id}`, { is_active: false })).status).toBe(200)

      await drained
      const page = await tenant.deliveries(endpoint.id)
      expect(page.items.map((d: any) => [d.status, d.error_message])).toEqual([["dead_letter", "endpoint set inactive"]])
      expect(slow.requests).toHaveLength(1)
    }, 20_000)

    it("queues what the batch lacked behind a suspension that came meanwhile", async () => {
      world = await startWebhookApp(certificate, { database, dispatch: { leaseSeconds: LEASE_SECONDS } })
      const tenant = await world.newTenant()
      const failing = await world.startReceiver(503)
      const endpoint = await tenant.createEndpoint(failing.url, { retry_strategy: "none" })
      const event = await world.test.app.run(makeEvent({ type: "contact.created", tenantId: tenant.tenant_id, data: {} }))
      await tenant.emit([event])
      await fanOutAndDie()
      // Twenty later events fail in a row and suspend the endpoint.
      await tenant.emit(await world.test.app.run(Effect.all(
        Array.from({ length: 20 }, () => makeEvent({ type: "contact.created", tenantId: tenant.tenant_id, data: {} }))
      )))
      await world.drain()
      expect((await tenant.endpoint(endpoint.id)).status).toBe("suspended")

      world.advance(LEASE_SECONDS * 1000)
      await world.drain()
      const queued = await tenant.deliveries(endpoint.id, "status=queued")
      expect(queued.items.map((d: any) => d.event_id)).toEqual([event.event_id])
      expect(failing.deliveries().filter((e) => e.id === event.id)).toHaveLength(0)
    })

    it("abandons the requests in flight when a delivery run is interrupted, and sends them again after the lease", async () => {
      world = await startWebhookApp(certificate, { database, dispatch: { leaseSeconds: LEASE_SECONDS } })
      // A receiver that holds the first request open and notes when the client drops it.
      let dropped = 0
      let answer = false
      const server = await startServer((_req, res) => {
        res.on("close", () => {
          if (!res.writableFinished) dropped += 1
        })
        if (answer) res.writeHead(204).end()
      }, certificate)
      try {
        const tenant = await world.newTenant()
        const endpoint = await tenant.createEndpoint(`${server.origin}/hooks/omni`, { timeout_seconds: 30 })
        await tenant.createContact()
        const run = world.test.app.run(Effect.flatMap(BackgroundWork, (work) => drainDueWork(work.jobs)).pipe(
          Effect.timeoutOption("1 second")
        ))
        await run
        // The run was cut off with its request unanswered: the request is dropped, nothing is stored.
        await waitUntil("the request in flight was abandoned", () => dropped >= 1, 5_000)
        expect(server.requests).toHaveLength(1)
        expect((await tenant.deliveries(endpoint.id)).items).toEqual([])

        // Its batch comes back after the lease: sent again with the same webhook-id, and recorded.
        answer = true
        world.advance(LEASE_SECONDS * 1000)
        await world.drain()
        expect(server.requests).toHaveLength(2)
        expect(server.requests[1]!.headers["webhook-id"]).toBe(server.requests[0]!.headers["webhook-id"])
        expect((await tenant.deliveries(endpoint.id)).items).toMatchObject([{ status: "success", attempt_number: 1 }])
      } finally {
        await server.close()
      }
    }, 20_000)
  })
}
