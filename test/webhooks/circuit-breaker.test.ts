import { Effect } from "effect"
import { afterEach, beforeAll, describe, expect, it } from "vitest"
import { makeEvent } from "../../src/kernel/EventEnvelope.ts"
import type { DispatchSettings } from "../../src/webhooks/engine/DispatchSettings.ts"
import { outboxEvents } from "../http/OutboxEvents.ts"
import { type Certificate, hasOpenssl, makeCertificate } from "../outbound/LocalServers.ts"
import { verifySignature } from "./Receiver.ts"
import { startWebhookApp, type WebhookApp } from "./WebhookApp.ts"

const MINUTE = 60_000
const HOUR = 60 * MINUTE
// The spec's re-verification instants after suspension.
const CHECKS = [1 * MINUTE, 5 * MINUTE, 15 * MINUTE, 30 * MINUTE, 1 * HOUR, 2 * HOUR, 4 * HOUR, 8 * HOUR, 12 * HOUR]

let certificate: Certificate
let world: WebhookApp
beforeAll(() => {
  if (hasOpenssl) certificate = makeCertificate()
})
afterEach(() => world.close())

const start = async (dispatch: Partial<DispatchSettings> = {}) => {
  world = await startWebhookApp(certificate, { dispatch })
}

/**
 * An endpoint whose receiver answers 500 to 20 events in a row (one attempt each, all still
 * retrying), so the circuit breaker trips; `at(ms)` is the instant `ms` after suspension.
 */
const suspendedEndpoint = async (dispatch: Partial<DispatchSettings> = {}, fields: Record<string, unknown> = {}) => {
  await start(dispatch)
  const receiver = await world.startReceiver(500)
  const tenant = await world.newTenant()
  const endpoint = await tenant.createEndpoint(receiver.url, fields)
  for (let i = 1; i <= 20; i++) await tenant.createContact(`Failing ${i}`)
  await world.drain()
  const suspendedAt = world.test.clock.nowMillis()
  const at = (ms: number) => new Date(suspendedAt + ms).toISOString()
  const advanceTo = (ms: number) => world.advance(suspendedAt + ms - world.test.clock.nowMillis())
  const statuses = async () => (await tenant.deliveries(endpoint.id)).items.map((d: { status: string }) => d.status)
  return { receiver, tenant, endpoint, at, advanceTo, statuses }
}

describe.skipIf(!hasOpenssl)("the circuit breaker (needs the openssl CLI)", () => {
  it("stays closed through 19 consecutive failed attempts and suspends the endpoint at the 20th, telling the account", async () => {
    await start()
    const receiver = await world.startReceiver(500)
    const tenant = await world.newTenant()
    const endpoint = await tenant.createEndpoint(receiver.url)
    for (let i = 1; i <= 19; i++) await tenant.createContact(`Failing ${i}`)
    await world.drain()
    expect(await tenant.endpoint(endpoint.id)).toMatchObject({ status: "active", is_active: true, consecutive_failures: 19 })
    expect(world.notifications).toEqual([])

    await tenant.createContact("Failing 20")
    await world.drain()

    expect(receiver.deliveries()).toHaveLength(20)
    expect(await tenant.endpoint(endpoint.id)).toMatchObject({
      status: "suspended",
      is_active: false,
      consecutive_failures: 20,
      suspended_at: world.now(),
      next_reactivation_at: new Date(world.test.clock.nowMillis() + MINUTE).toISOString(),
      reactivation_attempts: 0,
      last_error: "HTTP 500"
    })
    expect(world.notifications).toEqual([{
      tenant_id: tenant.tenant_id,
      to: expect.stringContaining("@"),
      subject: expect.stringContaining("suspended"),
      text: expect.stringContaining(receiver.url)
    }])
  })

  it("counts consecutive failures only: a success in between starts the count again", async () => {
    await start()
    const receiver = await world.startReceiver(500)
    const tenant = await world.newTenant()
    const endpoint = await tenant.createEndpoint(receiver.url, { retry_strategy: "none" })
    for (let i = 1; i <= 15; i++) await tenant.createContact()
    await world.drain()
    receiver.answerWith(200)
    await tenant.createContact()
    await world.drain()
    receiver.answerWith(500)
    for (let i = 1; i <= 15; i++) await tenant.createContact()
    await world.drain()

    expect(await tenant.endpoint(endpoint.id)).toMatchObject({ status: "active", consecutive_failures: 15 })
    expect(world.notifications).toEqual([])
  })

  it("parks the endpoint's retrying deliveries as queued and attempts none of them while suspended", async () => {
    const { receiver, statuses } = await suspendedEndpoint()

    expect(await statuses()).toEqual(Array(20).fill("queued"))
    world.advance(MINUTE - 1)
    await world.drain()
    expect(receiver.requests).toHaveLength(20)
  })

  it("stores the 10,001st queued delivery as dead_letter with \"queue full\", so it can still be retried by hand", async () => {
    const { tenant, endpoint } = await suspendedEndpoint()
    // 20 parked already; 9,980 more fill the queue and one goes over.
    const events = await world.test.app.run(Effect.all(
      Array.from({ length: 9_981 }, (_, n) => makeEvent({ type: "contact.created", tenantId: tenant.tenant_id, data: { n } }))
    ))
    // Appended in chunks: a change appends a few events, and one statement holds only so many values.
    for (let i = 0; i < events.length; i += 1_000) await tenant.emit(events.slice(i, i + 1_000))
    await world.drain()

    expect((await tenant.deliveries(endpoint.id, "status=queued&page_size=1")).total).toBe(10_000)
    expect((await tenant.deliveries(endpoint.id, "status=dead_letter")).items).toEqual([
      expect.objectContaining({ event_id: events.at(-1)!.event_id, error_message: "queue full", can_retry: true })
    ])
  })

  it("stores events arriving during the suspension as queued and sends none of them", async () => {
    const { receiver, tenant, endpoint, statuses } = await suspendedEndpoint()

    await tenant.createContact("During suspension")
    await tenant.createContact("Also during suspension")
    await world.drain()

    expect(await statuses()).toEqual(Array(22).fill("queued"))
    expect((await tenant.deliveries(endpoint.id, "status=queued&page_size=1")).total).toBe(22)
    expect(receiver.requests).toHaveLength(20)
  })
})

describe.skipIf(!hasOpenssl)("re-verification of a suspended endpoint (needs the openssl CLI)", () => {
  it("checks once at each of 1m, 5m, 15m, 30m, 1h, 2h, 4h, 8h and 12h, with a signed webhook.verification POST", async () => {
    const { receiver, endpoint, tenant, at, advanceTo } = await suspendedEndpoint()

    const seen: Array<[before: number, at: number]> = []
    for (const [i, offset] of CHECKS.entries()) {
      const start = receiver.verifications().length
      advanceTo(offset - 1)
      await world.drain()
      const before = receiver.verifications().length - start
      advanceTo(offset)
      await world.drain()
      seen.push([before, receiver.verifications().length - start - before])
      if (i < CHECKS.length - 1) {
        expect(await tenant.endpoint(endpoint.id)).toMatchObject({
          status: "suspended",
          reactivation_attempts: i + 1,
          next_reactivation_at: at(CHECKS[i + 1]!)
        })
      }
    }
    expect(seen).toEqual(CHECKS.map(() => [0, 1]))

    const checks = receiver.requests.filter((r) => JSON.parse(r.body).type === "webhook.verification")
    for (const check of checks) {
      expect(check.method).toBe("POST")
      expect(verifySignature(endpoint.secret, check)).toMatchObject({
        type: "webhook.verification",
        tenant_id: tenant.tenant_id,
        data: { webhook_endpoint_id: endpoint.id, reason: "re-verification" }
      })
    }
    expect(receiver.deliveries()).toHaveLength(20)
  })

  it("deactivates the endpoint for good when the +12h check fails: queued deliveries dead-lettered, account told, no more checks", async () => {
    const { receiver, tenant, endpoint, at, advanceTo, statuses } = await suspendedEndpoint()
    await tenant.createContact("During suspension")
    await world.drain()

    for (const offset of CHECKS) {
      advanceTo(offset)
      await world.drain()
    }

    expect(await tenant.endpoint(endpoint.id)).toMatchObject({
      status: "permanently_deactivated",
      is_active: false,
      suspended_at: null,
      next_reactivation_at: null,
      reactivation_attempts: 9
    })
    expect(await statuses()).toEqual(Array(21).fill("dead_letter"))
    const [newest] = (await tenant.deliveries(endpoint.id)).items
    expect(newest).toMatchObject({ can_retry: true, completed_at: at(12 * HOUR), error_message: expect.any(String) })
    expect(world.notifications.map((n) => n.subject)).toEqual([
      expect.stringContaining("suspended"),
      expect.stringContaining("disabled")
    ])

    const requestsSoFar = receiver.requests.length
    await tenant.createContact("After deactivation")
    advanceTo(36 * HOUR)
    await world.drain()
    expect(receiver.requests).toHaveLength(requestsSoFar)
    expect((await tenant.deliveries(endpoint.id)).total).toBe(21)
  })

  it("reactivates the endpoint when a check passes and replays the backlog in created_at order", async () => {
    const { receiver, tenant, endpoint, at, advanceTo } = await suspendedEndpoint({ attemptConcurrency: 1 })
    for (const name of ["First queued", "Second queued", "Third queued"]) {
      world.advance(10_000)
      await tenant.createContact(name)
      await world.drain()
    }
    advanceTo(CHECKS[0]!)
    await world.drain()
    expect(receiver.verifications()).toHaveLength(1)

    receiver.answerWith(200)
    const before = receiver.deliveries().length
    advanceTo(CHECKS[1]!)
    await world.drain()

    expect(receiver.verifications()).toHaveLength(2)
    expect(await tenant.endpoint(endpoint.id)).toMatchObject({
      status: "active",
      is_active: true,
      is_verified: true,
      suspended_at: null,
      next_reactivation_at: null,
      consecutive_failures: 0,
      last_success_at: at(CHECKS[1]!)
    })
    const events = await outboxEvents(world.test, tenant.tenant_id, "contact.created")
    expect(receiver.deliveries().slice(before).map((e) => e.id)).toEqual(events.map((e) => e.id))
    const { items } = await tenant.deliveries(endpoint.id)
    expect(items.map((d: { status: string }) => d.status)).toEqual(Array(23).fill("success"))
    expect(world.notifications.map((n) => n.subject)).toEqual([
      expect.stringContaining("suspended"),
      expect.stringContaining("active again")
    ])

    advanceTo(24 * HOUR)
    await world.drain()
    expect(receiver.verifications()).toHaveLength(2)
  })
})

describe.skipIf(!hasOpenssl)("leaving a suspension by hand (needs the openssl CLI)", () => {
  it("POST /verify with a healthy receiver reactivates the endpoint at once and replays the backlog", async () => {
    const { receiver, tenant, endpoint, statuses } = await suspendedEndpoint()
    receiver.answerWith(200)

    const answer = await tenant.as("POST", `/webhook-endpoints/${endpoint.id}/verify`)
    expect(answer.status).toBe(200)
    expect(answer.body).toMatchObject({
      success: true,
      webhook_id: endpoint.id,
      is_verified: true,
      is_active: true,
      status: "active",
      response_status_code: 200
    })
    expect(verifySignature(endpoint.secret, receiver.requests.at(-1)!)).toMatchObject({
      type: "webhook.verification",
      data: { webhook_endpoint_id: endpoint.id, reason: "manual" }
    })

    await world.drain()
    expect(await statuses()).toEqual(Array(20).fill("success"))
    expect(receiver.deliveries()).toHaveLength(40)
    expect(world.notifications.map((n) => n.subject)).toEqual([
      expect.stringContaining("suspended"),
      expect.stringContaining("active again")
    ])
  })

  it("POST /verify that fails leaves the endpoint suspended, on its schedule", async () => {
    const { tenant, endpoint, at, statuses } = await suspendedEndpoint()

    const answer = await tenant.as("POST", `/webhook-endpoints/${endpoint.id}/verify`)
    expect(answer.status).toBe(200)
    expect(answer.body).toMatchObject({ success: false, status: "suspended", response_status_code: 500, error: "HTTP 500" })
    expect(await tenant.endpoint(endpoint.id)).toMatchObject({
      status: "suspended",
      reactivation_attempts: 0,
      next_reactivation_at: at(MINUTE)
    })
    expect(await statuses()).toEqual(Array(20).fill("queued"))
  })

  it("queues a manual retry made during the suspension, and delivers it with the backlog on recovery", async () => {
    const { receiver, tenant, endpoint, statuses } = await suspendedEndpoint({}, { retry_strategy: "none" })
    expect(await statuses()).toEqual(Array(20).fill("failed"))
    const [failed] = (await tenant.deliveries(endpoint.id)).items
    world.advance(1_000)

    const retried = await tenant.as("POST", `/webhook-endpoints/${endpoint.id}/deliveries/${failed.id}/retry`)
    expect(retried.status).toBe(201)
    expect(retried.body.message).toMatch(/queued/)
    expect(await statuses()).toEqual(["queued", ...Array(20).fill("failed")])

    receiver.answerWith(200)
    expect((await tenant.as("POST", `/webhook-endpoints/${endpoint.id}/verify`)).body.status).toBe("active")
    await world.drain()
    expect(await statuses()).toEqual(["success", ...Array(20).fill("failed")])
    expect(receiver.deliveries().at(-1)!.event_id).toBe(failed.event_id)
  })

  it("PATCH is_active true on a suspended endpoint changes nothing", async () => {
    const { receiver, tenant, endpoint, statuses } = await suspendedEndpoint()
    const before = await tenant.endpoint(endpoint.id)

    const answer = await tenant.as("PATCH", `/webhook-endpoints/${endpoint.id}`, { is_active: true })
    expect(answer.status).toBe(200)
    await world.drain()

    const { updated_at: _before, ...unchanged } = before
    expect(await tenant.endpoint(endpoint.id)).toMatchObject({ ...unchanged, status: "suspended", is_active: false })
    expect(await statuses()).toEqual(Array(20).fill("queued"))
    expect(receiver.requests).toHaveLength(20)
  })

  it("PATCH is_active false on a suspended endpoint dead-letters its queued deliveries, and a later PATCH true replays none", async () => {
    const { receiver, tenant, endpoint, statuses } = await suspendedEndpoint()

    expect((await tenant.as("PATCH", `/webhook-endpoints/${endpoint.id}`, { is_active: false })).status).toBe(200)
    expect(await tenant.endpoint(endpoint.id)).toMatchObject({ status: "inactive", is_active: false, suspended_at: null })
    expect(await statuses()).toEqual(Array(20).fill("dead_letter"))
    expect((await tenant.deliveries(endpoint.id)).items[0]).toMatchObject({
      error_message: "endpoint set inactive",
      completed_at: world.now(),
      can_retry: true
    })

    receiver.answerWith(200)
    expect((await tenant.as("PATCH", `/webhook-endpoints/${endpoint.id}`, { is_active: true })).status).toBe(200)
    await world.drain()
    expect(await tenant.endpoint(endpoint.id)).toMatchObject({ status: "active", consecutive_failures: 0 })
    expect(await statuses()).toEqual(Array(20).fill("dead_letter"))
    expect(receiver.requests).toHaveLength(20)
  })

  it("PATCH is_active false on an active endpoint dead-letters the deliveries waiting for a retry", async () => {
    await start()
    const receiver = await world.startReceiver(500)
    const tenant = await world.newTenant()
    const endpoint = await tenant.createEndpoint(receiver.url)
    await tenant.createContact()
    await world.drain()

    expect((await tenant.as("PATCH", `/webhook-endpoints/${endpoint.id}`, { is_active: false })).status).toBe(200)
    world.advance(HOUR)
    await world.drain()

    expect((await tenant.deliveries(endpoint.id)).items).toEqual([
      expect.objectContaining({ status: "dead_letter", attempt_number: 1, error_message: "endpoint set inactive" })
    ])
    expect(receiver.requests).toHaveLength(1)
  })
})
