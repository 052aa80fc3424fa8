import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { simulatedProviders } from "../../adapters/providers/SimulatedProviders.ts"
import type { ChannelType } from "../../src/kernel/ChannelType.ts"
import type { Scope } from "../../src/kernel/Scope.ts"
import { OutboxStore } from "../../src/ports/OutboxStore.ts"
import { connectChannel, createLink, PUBLIC_URL, validInputs } from "../support/ConnectCustomer.ts"
import { testDatabases } from "../support/Databases.ts"
import { startTestApp, type TestApp } from "../support/TestApp.ts"

type Channel = { readonly id: string } & Record<string, unknown>

let test: TestApp
beforeAll(async () => {
  test = await startTestApp(await testDatabases.find((d) => d.name === "sqlite-memory")!.open(), {
    providers: simulatedProviders,
    publicUrl: PUBLIC_URL
  })
})
afterAll(() => test.close())

const now = () => new Date(test.clock.nowMillis()).toISOString()

/** A fresh tenant, its parent key, and a way to connect its channels through a connect link. */
const newTenant = async () => {
  const owner = await test.operator((operator) => operator.bootstrap({}))
  const as = (method: string, path: string) => test.call(method, path, { token: owner.api_key })
  const connect = async (type: ChannelType, inputs = validInputs(type)): Promise<Channel> => {
    const link = await createLink(test, owner.api_key, { allowed_channel_types: [type] })
    const page = await connectChannel(test, link.connect_url, type, inputs)
    if (page.status !== 200) throw new Error(`connecting ${type} answered ${page.status}`)
    return (await as("GET", "/channels")).body.items[0]
  }
  const events = () => test.app.run(Effect.flatMap(OutboxStore, (s) => s.listByTenant(owner.tenant_id, { limit: 100 })))
  return { ...owner, as, connect, events }
}

const issueKey = (tenantId: string, scopes: ReadonlyArray<Scope>) =>
  test.operator((operator) => operator.createApiKey({ tenantId, scopes }))

describe("GET /channels", () => {
  it("lists the tenant's channels newest first, with pagination", async () => {
    const tenant = await newTenant()
    const chatapp = await tenant.connect("chatapp")
    test.clock.advance(1_000)
    const webmail = await tenant.connect("webmail")

    const answer = await tenant.as("GET", "/channels")
    expect(answer.status).toBe(200)
    expect(answer.body).toEqual({
      items: [webmail, chatapp],
      pagination: { page: 1, page_size: 25, total: 2, total_pages: 1 }
    })
    expect((await tenant.as("GET", "/channels?page=2&page_size=1")).body.items).toEqual([chatapp])
  })

  it("answers an empty list for a tenant without channels", async () => {
    const tenant = await newTenant()
    expect((await tenant.as("GET", "/channels")).body).toEqual({
      items: [],
      pagination: { page: 1, page_size: 25, total: 0, total_pages: 0 }
    })
  })

  it("answers 422 for a page_size over 100", async () => {
    const tenant = await newTenant()
    const answer = await tenant.as("GET", "/channels?page_size=101")
    expect(answer.status).toBe(422)
    expect(answer.body.detail).toContainEqual({ loc: ["query", "page_size"], msg: expect.any(String), type: expect.any(String) })
  })
})

describe("GET /channels/{channel_id}", () => {
  it("answers the channel with its non-secret settings", async () => {
    const tenant = await newTenant()
    const inputs = validInputs("smtp_imap")
    const address = inputs.email_address!
    const channel = await tenant.connect("smtp_imap", inputs)

    const answer = await tenant.as("GET", `/channels/${channel.id}`)
    expect(answer.status).toBe(200)
    expect(answer.body).toEqual({
      id: channel.id,
      tenant_id: tenant.tenant_id,
      platform: "smtp_imap",
      name: address,
      status: "active",
      external_id: address,
      config: {
        email_address: address,
        imap_host: "imap.example.com",
        imap_port: "993",
        smtp_host: "smtp.example.com",
        smtp_port: "587",
        username: "ada"
      },
      created_via_connect_token_id: expect.any(String),
      created_at: now(),
      updated_at: null,
      disconnected_at: null
    })
  })

  it("finds a channel by its id in upper case, and answers 404 for an unknown or malformed id", async () => {
    const tenant = await newTenant()
    const channel = await tenant.connect("chatapp")
    const unknown = crypto.randomUUID()

    expect((await tenant.as("GET", `/channels/${channel.id.toUpperCase()}`)).body).toEqual(channel)
    expect(await tenant.as("GET", `/channels/${unknown}`)).toMatchObject({ status: 404, body: { detail: { code: "not_found", message: `Channel ${unknown} not found` } } })
    expect((await tenant.as("GET", "/channels/not-a-uuid")).status).toBe(404)
  })
})

describe("secrets", () => {
  it.each(["chatapp", "smtp_imap", "relay_a_byok", "botchat"] as const)(
    "never returns what the %s provider was given as a secret, in any response",
    async (type) => {
      const tenant = await newTenant()
      const inputs = validInputs(type)
      const channel = await tenant.connect(type, inputs)
      const secrets = simulatedProviders[type]!.fields.filter((f) => f.secret).map((f) => inputs[f.name]!)
      expect(secrets.length).toBeGreaterThan(0)

      const answers = [
        await tenant.as("GET", "/channels"),
        await tenant.as("GET", `/channels/${channel.id}`),
        await tenant.as("POST", `/channels/${channel.id}/disconnect`)
      ]
      for (const answer of answers) {
        const text = JSON.stringify(answer.body)
        expect(text).not.toContain("secrets")
        for (const secret of secrets) expect(text).not.toContain(secret)
      }
      const events = JSON.stringify(await tenant.events())
      for (const secret of secrets) expect(events).not.toContain(secret)
    }
  )
})

describe("POST /channels/{channel_id}/disconnect", () => {
  it("answers 200 with the channel disconnected now, and GET shows the same", async () => {
    const tenant = await newTenant()
    const channel = await tenant.connect("chatapp")
    test.clock.advance(60_000)

    const answer = await tenant.as("POST", `/channels/${channel.id}/disconnect`)
    expect(answer.status).toBe(200)
    expect(answer.body).toEqual({ ...channel, status: "disconnected", disconnected_at: now(), updated_at: now() })
    expect((await tenant.as("GET", `/channels/${channel.id}`)).body).toEqual(answer.body)
  })

  it("announces the change with channel.updated", async () => {
    const tenant = await newTenant()
    const channel = await tenant.connect("chatapp")

    await tenant.as("POST", `/channels/${channel.id}/disconnect`)

    const events = await tenant.events()
    expect(events.map((e) => e.type)).toEqual(["channel.created", "channel.updated"])
    expect(events[1]).toEqual({
      id: expect.any(String),
      type: "channel.updated",
      event_id: events[1]!.id,
      created_at: now(),
      tenant_id: tenant.tenant_id,
      data: {
        channel: {
          id: channel.id,
          platform: "chatapp",
          status: "disconnected",
          created_via_connect_token_id: channel.created_via_connect_token_id,
          name: channel.name
        },
        changed_fields: ["status"]
      }
    })
  })

  it("changes nothing and announces nothing when disconnected twice", async () => {
    const tenant = await newTenant()
    const channel = await tenant.connect("chatapp")
    const first = await tenant.as("POST", `/channels/${channel.id}/disconnect`)
    test.clock.advance(60_000)

    const second = await tenant.as("POST", `/channels/${channel.id}/disconnect`)
    expect(second.status).toBe(200)
    expect(second.body).toEqual(first.body)
    expect((await tenant.events()).map((e) => e.type)).toEqual(["channel.created", "channel.updated"])
  })

  it("answers 404 for an unknown id", async () => {
    const tenant = await newTenant()
    expect((await tenant.as("POST", `/channels/${crypto.randomUUID()}/disconnect`)).status).toBe(404)
  })
})

describe("tenant isolation", () => {
  it("keeps another tenant's channels out of sight and out of reach", async () => {
    const owner = await newTenant()
    const stranger = await newTenant()
    const channel = await owner.connect("chatapp")
    const notFound = { status: 404, body: { detail: { code: "not_found", message: `Channel ${channel.id} not found` } } }

    expect(await stranger.as("GET", `/channels/${channel.id}`)).toMatchObject(notFound)
    expect(await stranger.as("POST", `/channels/${channel.id}/disconnect`)).toMatchObject(notFound)
    expect((await stranger.as("GET", "/channels")).body.items).toEqual([])
    expect((await owner.as("GET", `/channels/${channel.id}`)).body).toEqual(channel)
    expect((await owner.events()).map((e) => e.type)).toEqual(["channel.created"])
    expect(await stranger.events()).toEqual([])
  })
})

describe("scopes", () => {
  it("needs channels:read to list and get channels", async () => {
    const tenant = await newTenant()
    const channel = await tenant.connect("chatapp")
    const reader = await issueKey(tenant.tenant_id, ["channels:read"])
    const other = await issueKey(tenant.tenant_id, ["channels:create"])

    expect((await test.call("GET", "/channels", { token: reader.api_key })).status).toBe(200)
    expect((await test.call("GET", `/channels/${channel.id}`, { token: reader.api_key })).status).toBe(200)
    expect(await test.call("GET", "/channels", { token: other.api_key })).toMatchObject({
      status: 403,
      body: { detail: "Missing required permission(s): channels:read" }
    })
  })

  it("needs channels:admin to disconnect, and leaves the channel active without it", async () => {
    const tenant = await newTenant()
    const channel = await tenant.connect("chatapp")
    const reader = await issueKey(tenant.tenant_id, ["channels:read", "channels:create"])
    const admin = await issueKey(tenant.tenant_id, ["channels:admin"])

    expect(await test.call("POST", `/channels/${channel.id}/disconnect`, { token: reader.api_key })).toMatchObject({
      status: 403,
      body: { detail: "Missing required permission(s): channels:admin" }
    })
    expect((await tenant.as("GET", `/channels/${channel.id}`)).body.status).toBe("active")
    expect((await test.call("POST", `/channels/${channel.id}/disconnect`, { token: admin.api_key })).status).toBe(200)
  })
})
