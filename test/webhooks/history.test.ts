import { afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { type Certificate, hasOpenssl, makeCertificate } from "../outbound/LocalServers.ts"
import { startWebhookApp, type WebhookApp } from "./WebhookApp.ts"

let certificate: Certificate
let world: WebhookApp
beforeAll(() => {
  if (hasOpenssl) certificate = makeCertificate()
})
beforeEach(async () => {
  world = await startWebhookApp(certificate)
})
afterEach(() => world.close())

const ids = (page: { items: Array<{ id: string }> }) => page.items.map((d) => d.id)

describe.skipIf(!hasOpenssl)("GET /webhook-endpoints/{id}/deliveries (needs the openssl CLI)", () => {
  it("lists newest first in pages, with flat total, page, page_size and has_more", async () => {
    const tenant = await world.newTenant()
    const endpoint = await tenant.createEndpoint((await world.startReceiver()).url)
    for (let i = 0; i < 5; i++) {
      await tenant.createContact(`Contact ${i}`)
      await world.drain()
      world.advance(1_000)
    }
    const all = await tenant.deliveries(endpoint.id, "")
    expect(all).toMatchObject({ total: 5, page: 1, page_size: 50, has_more: false })
    const createdAt = all.items.map((d: { created_at: string }) => d.created_at)
    expect(createdAt).toEqual([...createdAt].sort().reverse())

    const first = await tenant.deliveries(endpoint.id, "page=1&page_size=2")
    const third = await tenant.deliveries(endpoint.id, "page=3&page_size=2")
    expect(first).toMatchObject({ total: 5, page: 1, page_size: 2, has_more: true })
    expect(ids(first)).toEqual(ids(all).slice(0, 2))
    expect(third).toMatchObject({ total: 5, page: 3, page_size: 2, has_more: false })
    expect(ids(third)).toEqual(ids(all).slice(4))
    expect((await tenant.deliveries(endpoint.id, "page=4&page_size=2")).items).toEqual([])
  })

  it("filters by status and event_type, the total counting the matches only", async () => {
    const tenant = await world.newTenant()
    const receiver = await world.startReceiver(200)
    const endpoint = await tenant.createEndpoint(receiver.url, { subscribed_events: ["contact.created", "contact.updated"] })
    const contactId = await tenant.createContact("Delivered")
    await world.drain()
    receiver.answerWith(500)
    await tenant.createContact("Retrying")
    expect((await tenant.as("PATCH", `/contacts/${contactId}`, { name: "Renamed" })).status).toBe(200)
    await world.drain()

    const success = await tenant.deliveries(endpoint.id, "status=success")
    expect(success.total).toBe(1)
    expect(success.items.map((d: { event_type: string }) => d.event_type)).toEqual(["contact.created"])
    expect((await tenant.deliveries(endpoint.id, "status=retrying")).total).toBe(2)
    expect((await tenant.deliveries(endpoint.id, "event_type=contact.updated")).items).toEqual([
      expect.objectContaining({ event_type: "contact.updated", status: "retrying" })
    ])
    expect((await tenant.deliveries(endpoint.id, "status=retrying&event_type=contact.created")).total).toBe(1)
    expect(await tenant.deliveries(endpoint.id, "status=dead_letter")).toMatchObject({ items: [], total: 0, has_more: false })
  })

  it("answers 404 for an unknown endpoint and for another tenant's, 422 for a bad page_size or status", async () => {
    const tenant = await world.newTenant()
    const stranger = await world.newTenant()
    const endpoint = await tenant.createEndpoint((await world.startReceiver()).url)

    const unknown = await tenant.as("GET", `/webhook-endpoints/${globalThis.crypto.randomUUID()}/deliveries`)
    expect(unknown.status).toBe(404)
    expect(unknown.body).toEqual({ detail: { code: "RESOURCE_NOT_FOUND", message: expect.any(String) } })
    expect((await stranger.as("GET", `/webhook-endpoints/${endpoint.id}/deliveries`)).status).toBe(404)
    for (const query of ["page_size=0", "page_size=101", "page=0", "status=delivered"]) {
      const answer = await tenant.as("GET", `/webhook-endpoints/${endpoint.id}/deliveries?${query}`)
      expect([query, answer.status, answer.body.detail.code]).toEqual([query, 422, "VALIDATION_ERROR"])
    }
  })

  it("needs webhooks:read", async () => {
    const tenant = await world.newTenant()
    const endpoint = await tenant.createEndpoint((await world.startReceiver()).url)
    const key = await world.test.operator((operator) => operator.createApiKey({ tenantId: tenant.tenant_id, scopes: ["contacts:read"] }))

    const answer = await world.test.call("GET", `/webhook-endpoints/${endpoint.id}/deliveries`, { token: key.api_key })
    expect(answer.status).toBe(403)
    expect(answer.body).toEqual({
      detail: { code: "INSUFFICIENT_SCOPE", message: "Missing required permission(s): webhooks:read" }
    })
  })
})
