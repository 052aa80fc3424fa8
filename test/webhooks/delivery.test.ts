import { Exit } from "effect"
import { afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { simulatedProviders } from "../../adapters/providers/SimulatedProviders.ts"
import type { ChannelType } from "../../src/kernel/ChannelType.ts"
import { makeEvent } from "../../src/kernel/EventEnvelope.ts"
import { outboxEvents } from "../http/OutboxEvents.ts"
import { waitUntil } from "../support/Poll.ts"
import { type Certificate, hasOpenssl, makeCertificate } from "../outbound/LocalServers.ts"
import { connectChannel, createLink, PUBLIC_URL } from "../support/ConnectCustomer.ts"
import { verifySignature } from "./Receiver.ts"
import { startWebhookApp, type Tenant, type WebhookApp } from "./WebhookApp.ts"

let certificate: Certificate
let world: WebhookApp
beforeAll(() => {
  if (hasOpenssl) certificate = makeCertificate()
})
beforeEach(async () => {
  world = await startWebhookApp(certificate, { providers: simulatedProviders, publicUrl: PUBLIC_URL })
})
afterEach(() => world.close())

/** Connects a `type` channel through a connect link and returns its id. */
const connect = async (tenant: Tenant, type: ChannelType): Promise<string> => {
  const link = await createLink(world.test, tenant.api_key, { allowed_channel_types: [type] })
  const page = await connectChannel(world.test, link.connect_url, type)
  if (page.status !== 200) throw new Error(`connecting ${type} answered ${page.status}`)
  const channels: Array<{ id: string; created_via_connect_token_id: string | null }> = (await tenant.as("GET", "/channels")).body.items
  return channels.find((channel) => channel.created_via_connect_token_id === link.id)!.id
}

/** An event of `tenant` as a change would append it, stamped by the app's clock. */
const event = (tenant: Tenant, type: string, data: Record<string, unknown>) =>
  world.test.app.run(makeEvent({ type, tenantId: tenant.tenant_id, data }))

describe.skipIf(!hasOpenssl)("an event reaches the endpoints that subscribe to it (needs the openssl CLI)", () => {
  it("POSTs contact.created once, as the spec's envelope in JSON, signed by Standard Webhooks, with the configured Authorization", async () => {
    const tenant = await world.newTenant()
    const receiver = await world.startReceiver()
    const endpoint = await tenant.createEndpoint(receiver.url, { authorization_header: "Bearer receiver-token-1" })

    await tenant.createContact("Ada")
    await world.drain()
    await world.drain()

    const [emitted] = await outboxEvents(world.test, tenant.tenant_id, "contact.created")
    expect(receiver.requests).toHaveLength(1)
    const request = receiver.requests[0]!
    expect(request.method).toBe("POST")
    expect(request.url).toBe("/hooks/omni")
    expect(request.headers["content-type"]).toMatch(/^application\/json\b/)
    expect(request.headers.authorization).toBe("Bearer receiver-token-1")
    const body = JSON.parse(request.body)
    expect(Object.keys(body).sort()).toEqual(["created_at", "data", "event_id", "id", "tenant_id", "type"])
    expect(body).toEqual(emitted)
    expect(body).toMatchObject({ type: "contact.created", tenant_id: tenant.tenant_id, data: { contact: { name: "Ada" } } })
    expect(request.headers["webhook-id"]).toBe(body.id)
    expect(verifySignature(endpoint.secret, request)).toEqual(body)
  })

  it("records the delivery as a success: one attempt, the answer's status and time, nothing left to retry", async () => {
    const tenant = await world.newTenant()
    const receiver = await world.startReceiver(204)
    const endpoint = await tenant.createEndpoint(receiver.url)

    await tenant.createContact()
    await world.drain()

    const [emitted] = await outboxEvents(world.test, tenant.tenant_id, "contact.created")
    const list = await tenant.deliveries(endpoint.id)
    expect(list).toMatchObject({ total: 1, page: 1, has_more: false })
    expect(list.items).toEqual([{
      id: expect.any(String),
      tenant_id: tenant.tenant_id,
      webhook_endpoint_id: endpoint.id,
      event_type: "contact.created",
      event_id: emitted!.event_id,
      attempt_number: 1,
      status: "success",
      response_status_code: 204,
      response_time_ms: expect.any(Number),
      error_message: null,
      next_retry_at: null,
      created_at: world.now(),
      completed_at: world.now(),
      can_retry: false,
      previous_delivery_id: null
    }])
    expect((await tenant.endpoint(endpoint.id)).last_success_at).toBe(world.now())
  })

  it("signs with the current secret only: a regenerated secret signs the next delivery, the old one no longer verifies", async () => {
    const tenant = await world.newTenant()
    const receiver = await world.startReceiver()
    const endpoint = await tenant.createEndpoint(receiver.url)
    const regenerated = await tenant.as("POST", `/webhook-endpoints/${endpoint.id}/regenerate-secret`)
    expect(regenerated.status).toBe(200)

    await tenant.createContact()
    await world.drain()

    const request = receiver.requests[0]!
    expect(() => verifySignature(regenerated.body.secret_key, request)).not.toThrow()
    expect(() => verifySignature(endpoint.secret, request)).toThrow(/signature/i)
  })

  it("sends no Authorization header when the endpoint has none", async () => {
    const tenant = await world.newTenant()
    const receiver = await world.startReceiver()
    await tenant.createEndpoint(receiver.url)

    await tenant.createContact()
    await world.drain()

    expect(receiver.requests).toHaveLength(1)
    expect(receiver.requests[0]!.headers.authorization).toBeUndefined()
  })

  it("delivers to every subscribed endpoint of the tenant, each once", async () => {
    const tenant = await world.newTenant()
    const first = await world.startReceiver()
    const second = await world.startReceiver()
    await tenant.createEndpoint(first.url)
    await tenant.createEndpoint(second.url, { subscribed_events: ["contact.updated", "contact.created"] })

    const contactId = await tenant.createContact()
    await world.drain()

    expect(first.deliveries().map((e) => e.data)).toEqual([{ contact: expect.objectContaining({ id: contactId }) }])
    expect(second.deliveries().map((e) => e.data)).toEqual([{ contact: expect.objectContaining({ id: contactId }) }])
  })

  it("sends nothing, and stores no delivery, for event types the endpoint does not subscribe to", async () => {
    const tenant = await world.newTenant()
    const receiver = await world.startReceiver()
    const endpoint = await tenant.createEndpoint(receiver.url, { subscribed_events: ["contact.updated"] })

    await tenant.createContact()
    await world.drain()

    expect(receiver.requests).toEqual([])
    expect((await tenant.deliveries(endpoint.id)).total).toBe(0)
  })

  it("sends nothing to another tenant's endpoints", async () => {
    const tenant = await world.newTenant()
    const other = await world.newTenant()
    const ours = await world.startReceiver()
    const theirs = await world.startReceiver()
    await tenant.createEndpoint(ours.url)
    const theirEndpoint = await other.createEndpoint(theirs.url)

    await tenant.createContact()
    await world.drain()

    expect(ours.deliveries()).toHaveLength(1)
    expect(theirs.requests).toEqual([])
    expect((await other.deliveries(theirEndpoint.id)).total).toBe(0)
  })

  it("creates no delivery for an inactive endpoint, and delivers only later events once it is active again", async () => {
    const tenant = await world.newTenant()
    const receiver = await world.startReceiver()
    const endpoint = await tenant.createEndpoint(receiver.url)
    expect((await tenant.as("PATCH", `/webhook-endpoints/${endpoint.id}`, { is_active: false })).status).toBe(200)

    await tenant.createContact("While inactive")
    await world.drain()
    expect(receiver.requests).toEqual([])
    expect((await tenant.deliveries(endpoint.id)).total).toBe(0)

    expect((await tenant.as("PATCH", `/webhook-endpoints/${endpoint.id}`, { is_active: true })).status).toBe(200)
    await tenant.createContact("Once active")
    await world.drain()
    expect(receiver.deliveries().map((e) => (e.data.contact as { name: string }).name)).toEqual(["Once active"])
  })
})

describe.skipIf(!hasOpenssl)("the source filter of an endpoint in selected mode (needs the openssl CLI)", () => {
  it("lets through channel.created of a channel connected by link for `all`, and not for a `selected` endpoint listing other channels", async () => {
    const tenant = await world.newTenant()
    const everything = await world.startReceiver()
    const selective = await world.startReceiver()
    await tenant.createEndpoint(everything.url, { subscribed_events: ["channel.created"] })
    await tenant.createEndpoint(selective.url, {
      subscribed_events: ["channel.created"],
      source_filter_mode: "selected",
      filtered_channel_ids: [globalThis.crypto.randomUUID()]
    })

    const link = await createLink(world.test, tenant.api_key, { allowed_channel_types: ["chatapp"] })
    await connectChannel(world.test, link.connect_url, "chatapp")
    await world.drain()

    const [created] = everything.deliveries()
    expect(created).toMatchObject({
      type: "channel.created",
      data: { channel: { platform: "chatapp", status: "active", created_via_connect_token_id: link.id } }
    })
    expect(selective.requests).toEqual([])
  })

  it("delivers the events of the listed channels only", async () => {
    const tenant = await world.newTenant()
    const listed = await connect(tenant, "chatapp")
    const unlisted = await connect(tenant, "webmail")
    const receiver = await world.startReceiver()
    await tenant.createEndpoint(receiver.url, {
      subscribed_events: ["channel.updated"],
      source_filter_mode: "selected",
      filtered_channel_ids: [listed]
    })

    await tenant.as("POST", `/channels/${unlisted}/disconnect`)
    await tenant.as("POST", `/channels/${listed}/disconnect`)
    await tenant.emit([
      await event(tenant, "channel.updated", { channel_id: listed, note: "flat channel_id" }),
      await event(tenant, "channel.updated", { channel_id: unlisted, note: "flat channel_id" })
    ])
    await world.drain()

    // Attempts run concurrently, so arrival order is not asserted here.
    const sources = receiver.deliveries().map((e) => [(e.data.channel as { id?: string } | undefined)?.id ?? e.data.channel_id, e.data.note])
    expect(sources).toHaveLength(2)
    expect(sources).toEqual(expect.arrayContaining([[listed, undefined], [listed, "flat channel_id"]]))
  })

  it("delivers the events of the listed email integrations only", async () => {
    const tenant = await world.newTenant()
    const receiver = await world.startReceiver()
    await tenant.createEndpoint(receiver.url, {
      subscribed_events: ["message.received"],
      source_filter_mode: "selected",
      filtered_channel_ids: [],
      filtered_email_integration_ids: ["imap-listed"]
    })

    await tenant.emit([
      await event(tenant, "message.received", { email_integration_id: "imap-other" }),
      await event(tenant, "message.received", { email_integration_id: "imap-listed" })
    ])
    await world.drain()

    expect(receiver.deliveries().map((e) => e.data.email_integration_id)).toEqual(["imap-listed"])
  })

  it("lets through events tied to no channel or email integration, such as a contact's", async () => {
    const tenant = await world.newTenant()
    const receiver = await world.startReceiver()
    await tenant.createEndpoint(receiver.url, {
      source_filter_mode: "selected",
      filtered_channel_ids: [globalThis.crypto.randomUUID()],
      filtered_email_integration_ids: ["imap-1"]
    })

    await tenant.createContact()
    await world.drain()

    expect(receiver.deliveries().map((e) => e.type)).toEqual(["contact.created"])
  })

  it("in all mode delivers every channel's events", async () => {
    const tenant = await world.newTenant()
    const first = await connect(tenant, "chatapp")
    const second = await connect(tenant, "webmail")
    const receiver = await world.startReceiver()
    await tenant.createEndpoint(receiver.url, { subscribed_events: ["channel.updated"] })

    await tenant.as("POST", `/channels/${first}/disconnect`)
    await tenant.as("POST", `/channels/${second}/disconnect`)
    await world.drain()

    expect(receiver.deliveries().map((e) => (e.data.channel as { id: string }).id).sort()).toEqual([first, second].sort())
  })
})

describe.skipIf(!hasOpenssl)("a host's own outbound client (needs the openssl CLI)", () => {
  it("delivers through a client that only has `request`, signed the same, and records a refused address as failed", async () => {
    const requests: Array<string> = []
    const own = await startWebhookApp(certificate, {
      outboundOf: (guarded) => ({
        request: (request) => {
          requests.push(request.url)
          return guarded.request(request)
        }
      })
    })
    try {
      const tenant = await own.newTenant()
      const receiver = await own.startReceiver()
      const reached = await tenant.createEndpoint(receiver.url)
      const refused = await tenant.createEndpoint("https://10.0.0.1/hooks/omni", { retry_strategy: "none" })
      await tenant.createContact("Ada")
      await own.drain()

      expect(requests.sort()).toEqual(["https://10.0.0.1/hooks/omni", receiver.url].sort())
      expect(receiver.requests).toHaveLength(1)
      expect(verifySignature(reached.secret, receiver.requests[0]!)).toMatchObject({ type: "contact.created" })
      expect((await tenant.deliveries(reached.id)).items).toMatchObject([{ status: "success", attempt_number: 1 }])
      expect((await tenant.deliveries(refused.id)).items).toMatchObject([{
        status: "failed",
        error_message: expect.stringMatching(/^UrlNotAllowed: /)
      }])
    } finally {
      await own.close()
    }
  })

  it("fails the run when the client's callback reports neither an answer nor a failed request, storing nothing", async () => {
    const own = await startWebhookApp(certificate, {
      outboundOf: (guarded) => ({
        request: guarded.request,
        send: (_request, done) => {
          setTimeout(() => done(Exit.die(new Error("the client broke"))), 10)
          return () => {}
        }
      })
    })
    try {
      const tenant = await own.newTenant()
      const endpoint = await tenant.createEndpoint("https://receiver.example/hooks/omni")
      await tenant.createContact("Ada")
      await expect(own.drain()).rejects.toThrow("the client broke")
      // Not recorded as an attempt: the batch's lease brings the event back.
      expect((await tenant.deliveries(endpoint.id)).items).toEqual([])

      // A running worker reports it too, and goes on.
      const errors: Array<unknown> = []
      const workers = own.test.app.startWorkers({ idleMs: 50, onError: (_job, error) => errors.push(error) })
      try {
        await tenant.createContact("Grace")
        await waitUntil("the worker reported the broken client", () => errors.length > 0)
        expect(String(errors[0])).toContain("the client broke")
      } finally {
        await workers.stop()
      }
    } finally {
      await own.close()
    }
  })
})
