import type { ServerResponse } from "node:http"
import { setImmediate } from "node:timers/promises"
import { Effect } from "effect"
import { afterEach, beforeAll, describe, expect, it } from "vitest"
import type { Workers } from "../../src/app/Omnichannel.ts"
import { type EventEnvelope, makeEvent } from "../../src/kernel/EventEnvelope.ts"
import { type Certificate, hasOpenssl, makeCertificate, startServer } from "../outbound/LocalServers.ts"
import { PG_URL } from "../support/Databases.ts"
import { waitUntil } from "../support/Poll.ts"
import { startWebhookApp, type Tenant, type WebhookApp } from "./WebhookApp.ts"

let certificate: Certificate
beforeAll(() => {
  if (hasOpenssl) certificate = makeCertificate()
})

// Fan-out turns outbox events into deliveries for the endpoints that want them. Events no endpoint
// of their tenant can want are marked fanned out without a fan-out lease, while events stream in.
for (const database of ["sqlite-file", ...(PG_URL === undefined ? [] : ["postgres"])]) {
  describe.skipIf(!hasOpenssl)(`fan-out while events stream in, on ${database} (needs the openssl CLI)`, () => {
    let world: WebhookApp
    let workers: Workers | undefined
    const errors: Array<unknown> = []
    afterEach(async () => {
      await workers?.stop()
      workers = undefined
      await world?.close()
      expect(errors.splice(0)).toEqual([])
    })

    const start = () => {
      workers = world.test.app.startWorkers({ idleMs: 5, onError: (_job, error) => errors.push(error) })
    }
    const contactCreated = (tenant: Tenant, n: number) =>
      world.test.app.run(makeEvent({ type: "contact.created", tenantId: tenant.tenant_id, data: { n } }))
    /** The stored outbox rows of these events: their place and when they were fanned out. */
    const outboxRows = (events: ReadonlyArray<EventEnvelope>) =>
      world.test.database.db.selectFrom("outbox_events").select(["seq", "fanned_out_at"])
        .where("id", "in", events.map((event) => event.id)).orderBy("seq").execute()
    const leases = () => world.test.database.db.selectFrom("webhook_fanout_leases").select("seqs").execute()

    it("delivers each event once to the endpoints that want it, while events nobody wants are committed between them", async () => {
      world = await startWebhookApp(certificate, { database })
      const receiver = await world.startReceiver()
      const subscribed = await world.newTenant()
      const { id } = await subscribed.createEndpoint(receiver.url)
      const otherType = await world.newTenant()
      await otherType.createEndpoint(receiver.url, { subscribed_events: ["message.received"] })
      const withoutEndpoints = await world.newTenant()
      start()

      // Each event its own commit, as requests and inbound messages commit them.
      const wanted: Array<EventEnvelope> = []
      const unwanted: Array<EventEnvelope> = []
      for (let n = 0; n < 40; n++) {
        const nobodys = await contactCreated(withoutEndpoints, n)
        const event = await contactCreated(subscribed, n)
        const notSubscribed = await contactCreated(otherType, n)
        await withoutEndpoints.emit([nobodys])
        await subscribed.emit([event])
        await otherType.emit([notSubscribed])
        wanted.push(event)
        unwanted.push(nobodys, notSubscribed)
      }

      await waitUntil("40 deliveries are recorded", async () => (await subscribed.deliveries(id, "status=success")).total === 40)
      await waitUntil("every event is fanned out", async () =>
        (await outboxRows([...wanted, ...unwanted])).every((row) => row.fanned_out_at !== null))
      await workers!.stop()
      workers = undefined
      expect(receiver.deliveries().map((event) => event.id).sort()).toEqual(wanted.map((event) => event.id).sort())
      expect(await leases()).toEqual([])
    })

    it("sends an endpoint created while events stream every event committed after it, once each", async () => {
      world = await startWebhookApp(certificate, { database })
      const receiver = await world.startReceiver()
      const tenant = await world.newTenant()
      start()

      const before: Array<string> = []
      const after: Array<string> = []
      let created = false
      const stream = (async () => {
        for (let n = 0; after.length < 20 && n < 5_000; n++) {
          const event = await contactCreated(tenant, n)
          // Whether the endpoint existed when the commit began: if it did, the event came after it.
          const afterCreation = created
          await tenant.emit([event])
          ;(afterCreation ? after : before).push(event.id)
          // SQLite commits without leaving the event loop's turn: let the endpoint's request in between.
          await setImmediate()
        }
      })()
      await waitUntil("events stream", () => before.length >= 15)
      const { id } = await tenant.createEndpoint(receiver.url)
      created = true
      await stream

      expect(after).toHaveLength(20)
      await waitUntil("every event after the endpoint arrived", () => {
        const arrived = new Set(receiver.deliveries().map((event) => event.id))
        return after.every((eventId) => arrived.has(eventId))
      })
      await waitUntil("every delivery sent is recorded", async () =>
        (await tenant.deliveries(id, "status=success")).total === receiver.deliveries().length)
      await workers!.stop()
      workers = undefined
      const ids = receiver.deliveries().map((event) => event.id)
      expect(new Set(ids).size).toBe(ids.length)
      // Events committed while the endpoint was being created may go either way; none other does.
      expect(ids.filter((eventId) => !after.includes(eventId)).every((eventId) => before.includes(eventId))).toBe(true)
    })

    it("holds the fan-out lease over the wanted events alone while their batch is in flight, and lets it go once recorded", async () => {
      world = await startWebhookApp(certificate, { database })
      // A receiver that answers only when told, so the batch stays in flight.
      const held: Array<ServerResponse> = []
      const server = await startServer((_req, res) => void held.push(res), certificate)
      try {
        const subscribed = await world.newTenant()
        const { id } = await subscribed.createEndpoint(`${server.origin}/hooks/omni`)
        const withoutEndpoints = await world.newTenant()
        const [first, wanted, last] = [
          await contactCreated(withoutEndpoints, 0),
          await contactCreated(subscribed, 1),
          await contactCreated(withoutEndpoints, 2)
        ]
        await withoutEndpoints.emit([first!])
        await subscribed.emit([wanted!])
        await withoutEndpoints.emit([last!])

        const drained = world.drain()
        await waitUntil("the delivery was sent", () => held.length === 1)
        const [unwantedRow, wantedRow] = [await outboxRows([first!, last!]), await outboxRows([wanted!])]
        expect((await leases()).map((lease) => JSON.parse(lease.seqs).map(Number))).toEqual([[wantedRow[0]!.seq]])
        expect(unwantedRow.every((row) => row.fanned_out_at !== null)).toBe(true)

        held[0]!.writeHead(204).end()
        await drained
        expect(await leases()).toEqual([])
        expect((await subscribed.deliveries(id)).items.map((d: any) => [d.event_id, d.status])).toEqual([[wanted!.event_id, "success"]])
        expect(server.requests).toHaveLength(1)
      } finally {
        await server.close()
      }
    })
  })
}
