import { afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { type Certificate, freePort, hasOpenssl, makeCertificate } from "../outbound/LocalServers.ts"
import type { Receiver } from "./Receiver.ts"
import { startWebhookApp, type Tenant, type WebhookApp } from "./WebhookApp.ts"

const SECOND = 1_000
const MINUTE = 60 * SECOND

let certificate: Certificate
let world: WebhookApp
beforeAll(() => {
  if (hasOpenssl) certificate = makeCertificate()
})
beforeEach(async () => {
  world = await startWebhookApp(certificate)
})
afterEach(() => world.close())

/** A tenant with one endpoint at `receiver` (settings from `fields`) and one event delivered to it once. */
const oneDelivery = async (receiver: Receiver | string, fields: Record<string, unknown> = {}) => {
  const tenant = await world.newTenant()
  const endpoint = await tenant.createEndpoint(typeof receiver === "string" ? receiver : receiver.url, fields)
  await tenant.createContact()
  await world.drain()
  const delivery = async () => (await tenant.deliveries(endpoint.id)).items[0]
  return { tenant, endpoint, delivery }
}

/** Advances to 1 ms before `ms` from now and to `ms`, draining at each: how many requests each step sent. */
const attemptsAround = async (receiver: Receiver, ms: number): Promise<[before: number, at: number]> => {
  const start = receiver.requests.length
  world.advance(ms - 1)
  await world.drain()
  const before = receiver.requests.length - start
  world.advance(1)
  await world.drain()
  return [before, receiver.requests.length - start - before]
}

describe.skipIf(!hasOpenssl)("a failed attempt (needs the openssl CLI)", () => {
  it("records a non-2xx answer with its status code, time and error, and schedules the retry", async () => {
    const receiver = await world.startReceiver(500)
    const { tenant, endpoint, delivery } = await oneDelivery(receiver)

    expect(receiver.requests).toHaveLength(1)
    expect(await delivery()).toMatchObject({
      status: "retrying",
      attempt_number: 1,
      response_status_code: 500,
      response_time_ms: expect.any(Number),
      error_message: "HTTP 500",
      next_retry_at: new Date(world.test.clock.nowMillis() + 5 * SECOND).toISOString(),
      completed_at: null,
      can_retry: false
    })
    expect(await tenant.endpoint(endpoint.id)).toMatchObject({
      consecutive_failures: 1,
      last_failure_at: world.now(),
      last_error: "HTTP 500",
      is_active: true
    })
  })

  it("treats a receiver that does not answer within timeout_seconds as failed, with no status code", async () => {
    const receiver = await world.startReceiver("hang")
    const started = Date.now()
    const { delivery } = await oneDelivery(receiver, { timeout_seconds: 5, retry_strategy: "none" })

    expect(Date.now() - started).toBeGreaterThanOrEqual(5 * SECOND - 50)
    expect(receiver.requests).toHaveLength(1)
    expect(await delivery()).toMatchObject({
      status: "failed",
      attempt_number: 1,
      response_status_code: null,
      error_message: expect.stringMatching(/^Timeout: .*within 5000 ms/),
      can_retry: true
    })
  })

  it("never follows a redirect: a 302 is a failure and its Location gets nothing", async () => {
    const target = await world.startReceiver()
    const receiver = await world.startReceiver({ redirect: target.url })
    const { delivery } = await oneDelivery(receiver, { retry_strategy: "none" })

    expect(receiver.requests).toHaveLength(1)
    expect(target.requests).toEqual([])
    expect(await delivery()).toMatchObject({
      status: "failed",
      response_status_code: 302,
      response_time_ms: expect.any(Number),
      error_message: "HTTP 302: redirects are not followed"
    })
  })

  it("records a refused connection with no status code", async () => {
    const { delivery } = await oneDelivery(`https://127.0.0.1:${await freePort()}/hooks/omni`, { retry_strategy: "none" })

    expect(await delivery()).toMatchObject({
      status: "failed",
      attempt_number: 1,
      response_status_code: null,
      error_message: expect.stringMatching(/^Connection: .*ECONNREFUSED/)
    })
  })

  it("records an address the outbound guard refuses (a private one) as a failed attempt, sending nothing", async () => {
    const receiver = await world.startReceiver()
    const tenant = await world.newTenant()
    const refused = await tenant.createEndpoint("https://10.0.0.1/hooks/omni", { retry_strategy: "none" })
    const reached = await tenant.createEndpoint(receiver.url)
    await tenant.createContact()
    await world.drain()

    expect((await tenant.deliveries(refused.id)).items).toMatchObject([{
      status: "failed",
      attempt_number: 1,
      response_status_code: null,
      error_message: "UrlNotAllowed: it is a private address"
    }])
    // The refusal comes back before the request would be sent; the other endpoint's delivery goes on.
    expect((await tenant.deliveries(reached.id)).items).toMatchObject([{ status: "success" }])
    expect(receiver.requests).toHaveLength(1)
  })
})

describe.skipIf(!hasOpenssl)("retry schedules (needs the openssl CLI)", () => {
  it("waits exactly 5 s, 10 s, 30 s, 2 min, 5 min, 10 min, 30 min and 30 min (exponential), then fails after 1 + max_retries attempts", async () => {
    const receiver = await world.startReceiver(503)
    const { delivery } = await oneDelivery(receiver, { max_retries: 8 })
    expect(receiver.requests).toHaveLength(1)

    const delays = [5 * SECOND, 10 * SECOND, 30 * SECOND, 2 * MINUTE, 5 * MINUTE, 10 * MINUTE, 30 * MINUTE, 30 * MINUTE]
    const seen: Array<[number, number]> = []
    for (const delay of delays) seen.push(await attemptsAround(receiver, delay))
    expect(seen).toEqual(delays.map(() => [0, 1]))

    expect(await delivery()).toMatchObject({
      status: "failed",
      attempt_number: 9,
      next_retry_at: null,
      completed_at: world.now(),
      response_status_code: 503,
      can_retry: true
    })
    world.advance(24 * 60 * MINUTE)
    await world.drain()
    expect(receiver.requests).toHaveLength(9)
  })

  it("waits a fixed 60 s between attempts (linear)", async () => {
    const receiver = await world.startReceiver(500)
    const { delivery } = await oneDelivery(receiver, { retry_strategy: "linear", max_retries: 2 })

    expect(await attemptsAround(receiver, MINUTE)).toEqual([0, 1])
    expect(await attemptsAround(receiver, MINUTE)).toEqual([0, 1])
    expect(await delivery()).toMatchObject({ status: "failed", attempt_number: 3, can_retry: true })
  })

  it("makes one attempt with strategy none, whatever max_retries says", async () => {
    const receiver = await world.startReceiver(500)
    const { delivery } = await oneDelivery(receiver, { retry_strategy: "none", max_retries: 5 })

    expect(await delivery()).toMatchObject({ status: "failed", attempt_number: 1, next_retry_at: null, can_retry: true })
    world.advance(60 * MINUTE)
    await world.drain()
    expect(receiver.requests).toHaveLength(1)
  })

  it("makes one attempt when max_retries is 0", async () => {
    const receiver = await world.startReceiver(500)
    const { delivery } = await oneDelivery(receiver, { max_retries: 0 })

    expect(await delivery()).toMatchObject({ status: "failed", attempt_number: 1 })
    world.advance(60 * MINUTE)
    await world.drain()
    expect(receiver.requests).toHaveLength(1)
  })

  it("ends in success when a retry gets a 2xx, and the endpoint's failure count starts again", async () => {
    const receiver = await world.startReceiver(500)
    const { tenant, endpoint, delivery } = await oneDelivery(receiver)
    receiver.answerWith(200)

    expect(await attemptsAround(receiver, 5 * SECOND)).toEqual([0, 1])
    expect(await delivery()).toMatchObject({
      status: "success",
      attempt_number: 2,
      response_status_code: 200,
      error_message: null,
      next_retry_at: null,
      completed_at: world.now(),
      can_retry: false
    })
    expect(await tenant.endpoint(endpoint.id)).toMatchObject({ consecutive_failures: 0, last_success_at: world.now() })
    expect(new Set(receiver.deliveries().map((e) => e.id)).size).toBe(1)
  })
})

describe.skipIf(!hasOpenssl)("POST /webhook-endpoints/{id}/deliveries/{delivery_id}/retry (needs the openssl CLI)", () => {
  const failedDelivery = async () => {
    const receiver = await world.startReceiver(500)
    const { tenant, endpoint, delivery } = await oneDelivery(receiver, { retry_strategy: "none" })
    return { receiver, tenant, endpoint, original: await delivery() }
  }
  const retry = (tenant: Tenant, endpointId: string, deliveryId: string) =>
    tenant.as("POST", `/webhook-endpoints/${endpointId}/deliveries/${deliveryId}/retry`)

  it("creates a new delivery pointing at the failed one, leaves that one unchanged, and delivers the event again", async () => {
    const { receiver, tenant, endpoint, original } = await failedDelivery()
    receiver.answerWith(200)
    world.advance(MINUTE)

    const answer = await retry(tenant, endpoint.id, original.id)
    expect(answer.status).toBe(201)
    expect(answer.body).toEqual({
      success: true,
      delivery_id: expect.any(String),
      previous_delivery_id: original.id,
      message: expect.any(String)
    })
    expect(answer.body.delivery_id).not.toBe(original.id)

    await world.drain()
    const { items, total } = await tenant.deliveries(endpoint.id)
    expect(total).toBe(2)
    expect(items.find((d: { id: string }) => d.id === original.id)).toEqual(original)
    expect(items.find((d: { id: string }) => d.id === answer.body.delivery_id)).toMatchObject({
      previous_delivery_id: original.id,
      event_id: original.event_id,
      event_type: original.event_type,
      status: "success",
      attempt_number: 1,
      created_at: world.now(),
      can_retry: false
    })
    const [first, second] = receiver.deliveries()
    expect(second).toEqual(first)
  })

  it("answers 409 for a delivery that succeeded, and for one still being retried", async () => {
    const healthy = await world.startReceiver()
    const succeeded = await oneDelivery(healthy)
    const answer = await retry(succeeded.tenant, succeeded.endpoint.id, (await succeeded.delivery()).id)
    expect(answer.status).toBe(409)
    expect(answer.body).toEqual({ detail: { code: "CONFLICT", message: expect.stringContaining("success") } })

    const failing = await world.startReceiver(500)
    const retrying = await oneDelivery(failing)
    expect((await retry(retrying.tenant, retrying.endpoint.id, (await retrying.delivery()).id)).status).toBe(409)
    expect((await retrying.tenant.deliveries(retrying.endpoint.id)).total).toBe(1)
  })

  it("answers 404 for an unknown delivery, a delivery of another endpoint, and another tenant's delivery", async () => {
    const { tenant, endpoint, original } = await failedDelivery()
    const otherEndpoint = await tenant.createEndpoint((await world.startReceiver()).url)
    const stranger = await world.newTenant()

    expect((await retry(tenant, endpoint.id, globalThis.crypto.randomUUID())).status).toBe(404)
    expect((await retry(tenant, otherEndpoint.id, original.id)).status).toBe(404)
    expect((await retry(stranger, endpoint.id, original.id)).body).toMatchObject({ detail: { code: "RESOURCE_NOT_FOUND" } })
    expect((await tenant.deliveries(endpoint.id)).total).toBe(1)
  })
})
