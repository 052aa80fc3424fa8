import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { simulatedProviders } from "../../adapters/providers/SimulatedProviders.ts"
import type { Scope } from "../../src/kernel/Scope.ts"
import { OutboxStore } from "../../src/ports/OutboxStore.ts"
import { connectChannel, createLink, openForm, openPage, PUBLIC_URL, submit, validInputs } from "../support/ConnectCustomer.ts"
import { testDatabases } from "../support/Databases.ts"
import { startTestApp, type TestApp } from "../support/TestApp.ts"

const HOUR_MS = 3_600_000
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/
const RAW_TOKEN = /^occ_[0-9A-Za-z]{12}_[0-9A-Za-z]{40}$/

let test: TestApp
beforeAll(async () => {
  test = await startTestApp(await testDatabases.find((d) => d.name === "sqlite-memory")!.open(), {
    providers: simulatedProviders,
    publicUrl: PUBLIC_URL
  })
})
afterAll(() => test.close())

const now = (plusMs = 0) => new Date(test.clock.nowMillis() + plusMs).toISOString()

/** A fresh tenant named `Acme Support` and its parent key holding every scope. */
const newTenant = async () => {
  const owner = await test.operator((operator) => operator.bootstrap({ tenantName: "Acme Support" }))
  const as = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
    test.call(method, path, { token: owner.api_key, body, headers })
  return { ...owner, as }
}

const issueKey = (tenantId: string, scopes: ReadonlyArray<Scope>) =>
  test.operator((operator) => operator.createApiKey({ tenantId, scopes }))

const rawTokenOf = (connectUrl: string) => connectUrl.slice(`${PUBLIC_URL}/connect/`.length)

const events = (tenantId: string) => test.app.run(Effect.flatMap(OutboxStore, (s) => s.listByTenant(tenantId, { limit: 100 })))

// A valid link body with `fields` added.
const chatapp = (fields: Record<string, unknown>) => ({ allowed_channel_types: ["chatapp"], ...fields })

// The token as list and get show it: the creation response without connect_url.
const withoutUrl = ({ connect_url: _url, ...token }: Record<string, unknown>) => token

describe("POST /channel-connect-tokens", () => {
  it("answers 201 with the spec's defaults, the tenant's name as partner_name and a connect_url on the public URL", async () => {
    const tenant = await newTenant()
    const answer = await tenant.as("POST", "/channel-connect-tokens", { allowed_channel_types: ["chatapp"] })

    expect(answer.status).toBe(201)
    expect(answer.body).toEqual({
      id: expect.stringMatching(UUID),
      tenant_id: tenant.tenant_id,
      name: null,
      token_prefix: expect.stringMatching(/^occ_[0-9A-Za-z]{12}$/),
      status: "valid",
      allowed_channel_types: ["chatapp"],
      partner_name: "Acme Support",
      partner_redirect_url: null,
      expires_at: now(24 * HOUR_MS),
      max_uses: 10,
      uses_count: 0,
      use_window_minutes: 30,
      use_window_ends_at: null,
      revoked_at: null,
      created_at: now(),
      connect_url: expect.stringMatching(/^http:\/\/connect\.test\/connect\/occ_[0-9A-Za-z]{12}_[0-9A-Za-z]{40}$/)
    })
    expect(answer.headers.get("cache-control")).toBe("no-store")
  })

  it("shows the start of the raw token as token_prefix", async () => {
    const tenant = await newTenant()
    const { body } = await tenant.as("POST", "/channel-connect-tokens", { allowed_channel_types: ["chatapp"] })
    const raw = rawTokenOf(body.connect_url)

    expect(raw).toMatch(RAW_TOKEN)
    expect(raw.startsWith(`${body.token_prefix}_`)).toBe(true)
  })

  it("keeps everything it was given, and GET returns the same token", async () => {
    const tenant = await newTenant()
    const answer = await tenant.as("POST", "/channel-connect-tokens", {
      allowed_channel_types: ["webmail", "chatapp", "smtp_imap"],
      name: "Onboarding — São Paulo",
      expires_in_hours: 168,
      max_uses: 100,
      use_window_minutes: 1440,
      partner_name: "Partner Agency",
      partner_redirect_url: "https://partner.example/done?step=2"
    })

    expect(answer.status).toBe(201)
    expect(answer.body).toMatchObject({
      allowed_channel_types: ["webmail", "chatapp", "smtp_imap"],
      name: "Onboarding — São Paulo",
      expires_at: now(168 * HOUR_MS),
      max_uses: 100,
      use_window_minutes: 1440,
      partner_name: "Partner Agency",
      partner_redirect_url: "https://partner.example/done?step=2"
    })
    const fetched = await tenant.as("GET", `/channel-connect-tokens/${answer.body.id}`)
    expect(fetched.status).toBe(200)
    expect(fetched.body).toEqual(withoutUrl(answer.body))
  })

  it("accepts the smallest value of each range: 1 hour, 1 use, a 5-minute window", async () => {
    const tenant = await newTenant()
    const answer = await tenant.as("POST", "/channel-connect-tokens", chatapp({ expires_in_hours: 1, max_uses: 1, use_window_minutes: 5 }))

    expect(answer.status).toBe(201)
    expect(answer.body).toMatchObject({ expires_at: now(HOUR_MS), max_uses: 1, use_window_minutes: 5 })
  })

  it.each([
    ["allowed_channel_types missing", {}, ["body", "allowed_channel_types"]],
    ["allowed_channel_types empty", { allowed_channel_types: [] }, ["body", "allowed_channel_types"]],
    ["allowed_channel_types repeating a type", { allowed_channel_types: ["chatapp", "chatapp"] }, ["body", "allowed_channel_types"]],
    ["allowed_channel_types naming an unknown type", { allowed_channel_types: ["chatapp", "fax"] }, ["body", "allowed_channel_types", 1]],
    ["allowed_channel_types not a list", { allowed_channel_types: "chatapp" }, ["body", "allowed_channel_types"]],
    ["expires_in_hours 0", chatapp({ expires_in_hours: 0 }), ["body", "expires_in_hours"]],
    ["expires_in_hours 169", chatapp({ expires_in_hours: 169 }), ["body", "expires_in_hours"]],
    ["expires_in_hours not whole", chatapp({ expires_in_hours: 1.5 }), ["body", "expires_in_hours"]],
    ["expires_in_hours as text", chatapp({ expires_in_hours: "24" }), ["body", "expires_in_hours"]],
    ["expires_in_hours null", chatapp({ expires_in_hours: null }), ["body", "expires_in_hours"]],
    ["max_uses 0", chatapp({ max_uses: 0 }), ["body", "max_uses"]],
    ["max_uses 101", chatapp({ max_uses: 101 }), ["body", "max_uses"]],
    ["max_uses negative", chatapp({ max_uses: -1 }), ["body", "max_uses"]],
    ["use_window_minutes 4", chatapp({ use_window_minutes: 4 }), ["body", "use_window_minutes"]],
    ["use_window_minutes 1441", chatapp({ use_window_minutes: 1441 }), ["body", "use_window_minutes"]],
    ["partner_redirect_url relative", chatapp({ partner_redirect_url: "/done" }), ["body", "partner_redirect_url"]],
    ["partner_redirect_url javascript:", chatapp({ partner_redirect_url: "javascript:alert(1)" }), ["body", "partner_redirect_url"]],
    ["partner_redirect_url ftp:", chatapp({ partner_redirect_url: "ftp://partner.example/" }), ["body", "partner_redirect_url"]],
    ["partner_redirect_url with credentials", chatapp({ partner_redirect_url: "https://user:pw@partner.example/" }), ["body", "partner_redirect_url"]],
    ["partner_name empty", chatapp({ partner_name: "" }), ["body", "partner_name"]],
    ["name empty", chatapp({ name: "" }), ["body", "name"]],
    ["a field the token does not have", chatapp({ tenant_id: "00000000-0000-4000-8000-000000000000" }), ["body", "tenant_id"]]
  ])("answers 422 naming the field: %s", async (_, body, loc) => {
    const tenant = await newTenant()
    const answer = await tenant.as("POST", "/channel-connect-tokens", body)

    expect(answer.status).toBe(422)
    expect(answer.body.detail).toContainEqual({ loc, msg: expect.any(String), type: expect.any(String) })
    expect((await tenant.as("GET", "/channel-connect-tokens")).body.pagination.total).toBe(0)
  })
})

describe("the SMS gate", () => {
  const SMS_DISABLED = {
    detail: { code: "feature_disabled", feature: "sms", message: expect.stringMatching(/SMS is not enabled/) }
  }

  it("answers 403 feature_disabled for a link offering sms while SMS is off, and creates nothing", async () => {
    const tenant = await newTenant()
    const answer = await tenant.as("POST", "/channel-connect-tokens", { allowed_channel_types: ["chatapp", "sms"] })

    expect(answer.status).toBe(403)
    expect(answer.body).toEqual(SMS_DISABLED)
    expect((await tenant.as("GET", "/channel-connect-tokens")).body.pagination.total).toBe(0)
  })

  it("allows sms once the operator enables SMS for the tenant, and refuses again once disabled", async () => {
    const tenant = await newTenant()
    await test.operator((operator) => operator.setSmsEnabled(tenant.tenant_id, true))
    const allowed = await tenant.as("POST", "/channel-connect-tokens", { allowed_channel_types: ["sms"] })
    expect(allowed.status).toBe(201)
    expect(allowed.body.allowed_channel_types).toEqual(["sms"])

    await test.operator((operator) => operator.setSmsEnabled(tenant.tenant_id, false))
    const refused = await tenant.as("POST", "/channel-connect-tokens", { allowed_channel_types: ["sms"] })
    expect(refused.status).toBe(403)
    expect(refused.body).toEqual(SMS_DISABLED)
  })

  it("gates only the sms type: SMS relay channels need no switch", async () => {
    const tenant = await newTenant()
    const answer = await tenant.as("POST", "/channel-connect-tokens", {
      allowed_channel_types: ["relay_a_byok", "relay_b_byok", "relay_a_managed"]
    })
    expect(answer.status).toBe(201)
  })
})

describe("scopes", () => {
  it("needs channels:create to create, revoke or delete a link", async () => {
    const tenant = await newTenant()
    const { id } = await createLink(test, tenant.api_key, { allowed_channel_types: ["chatapp"] })
    const reader = await issueKey(tenant.tenant_id, ["channels:read"])
    const as = (method: string, path: string, body?: unknown) => test.call(method, path, { token: reader.api_key, body })
    const MISSING = { detail: "Missing required permission(s): channels:create" }

    for (const [method, path, body] of [
      ["POST", "/channel-connect-tokens", { allowed_channel_types: ["chatapp"] }],
      ["DELETE", `/channel-connect-tokens/${id}`, undefined],
      ["POST", `/channel-connect-tokens/${id}/revoke`, undefined]
    ] as const) {
      const answer = await as(method, path, body)
      expect({ method, path, status: answer.status, body: answer.body }).toEqual({ method, path, status: 403, body: MISSING })
    }
    expect((await tenant.as("GET", `/channel-connect-tokens/${id}`)).body.status).toBe("valid")
  })

  it("lets channels:read or channels:create list and get links", async () => {
    const tenant = await newTenant()
    const { id } = await createLink(test, tenant.api_key, { allowed_channel_types: ["chatapp"] })
    for (const scope of ["channels:read", "channels:create"] as const) {
      const key = await issueKey(tenant.tenant_id, [scope])
      expect((await test.call("GET", "/channel-connect-tokens", { token: key.api_key })).status).toBe(200)
      expect((await test.call("GET", `/channel-connect-tokens/${id}`, { token: key.api_key })).status).toBe(200)
    }
  })

  it("lets a key holding only channels:create issue and revoke a link", async () => {
    const tenant = await newTenant()
    const creator = await issueKey(tenant.tenant_id, ["channels:create"])
    const created = await createLink(test, creator.api_key, { allowed_channel_types: ["chatapp"] })
    const revoked = await test.call("DELETE", `/channel-connect-tokens/${created.id}`, { token: creator.api_key })
    expect(revoked.status).toBe(200)
  })

  it("refuses a key with neither channels scope, naming both", async () => {
    const tenant = await newTenant()
    const other = await issueKey(tenant.tenant_id, ["contacts:read"])
    const answer = await test.call("GET", "/channel-connect-tokens", { token: other.api_key })
    expect(answer.status).toBe(403)
    expect(answer.body).toEqual({ detail: "Missing required permission(s): channels:read or channels:create" })
  })

  it("answers 401 without a key", async () => {
    expect((await test.call("POST", "/channel-connect-tokens", { body: { allowed_channel_types: ["chatapp"] } })).status)
      .toBe(401)
  })
})

describe("GET /channel-connect-tokens and GET /channel-connect-tokens/{id}", () => {
  it("lists the tenant's links newest first, each as GET shows it", async () => {
    const tenant = await newTenant()
    const first = await createLink(test, tenant.api_key, { allowed_channel_types: ["chatapp"], name: "first" })
    test.clock.advance(1_000)
    const second = await createLink(test, tenant.api_key, { allowed_channel_types: ["webmail"], name: "second" })

    const answer = await tenant.as("GET", "/channel-connect-tokens")
    expect(answer.status).toBe(200)
    expect(answer.body).toEqual({
      items: [withoutUrl(second), withoutUrl(first)],
      pagination: { page: 1, page_size: 25, total: 2, total_pages: 1 }
    })
    const paged = await tenant.as("GET", "/channel-connect-tokens?page=2&page_size=1")
    expect(paged.body.items.map((t: { id: string }) => t.id)).toEqual([first.id])
  })

  it("never shows the raw token again, nor its secret part", async () => {
    const tenant = await newTenant()
    const created = await createLink(test, tenant.api_key, { allowed_channel_types: ["chatapp"] })
    const raw = rawTokenOf(created.connect_url)
    const secret = raw.slice(-40)

    for (const path of ["/channel-connect-tokens", `/channel-connect-tokens/${created.id}`]) {
      const text = JSON.stringify((await tenant.as("GET", path)).body)
      expect(text).not.toContain(secret)
      expect(text).not.toContain("connect_url")
    }
  })

  it("finds a link by its id in upper case, and answers 404 for an unknown or malformed id", async () => {
    const tenant = await newTenant()
    const created = await createLink(test, tenant.api_key, { allowed_channel_types: ["chatapp"] })
    const unknown = crypto.randomUUID()

    expect((await tenant.as("GET", `/channel-connect-tokens/${created.id.toUpperCase()}`)).body.id).toBe(created.id)
    expect(await tenant.as("GET", `/channel-connect-tokens/${unknown}`)).toMatchObject({
      status: 404,
      body: { detail: { code: "not_found", message: `Connect token ${unknown} not found` } }
    })
    expect((await tenant.as("GET", "/channel-connect-tokens/not-a-uuid")).status).toBe(404)
  })

  it("answers 422 for a page_size over 100", async () => {
    const tenant = await newTenant()
    const answer = await tenant.as("GET", "/channel-connect-tokens?page_size=101")
    expect(answer.status).toBe(422)
    expect(answer.body.detail).toContainEqual({ loc: ["query", "page_size"], msg: expect.any(String), type: expect.any(String) })
  })

  it("shows the status the link has now: expired once expires_in_hours have passed", async () => {
    const tenant = await newTenant()
    const created = await createLink(test, tenant.api_key, { allowed_channel_types: ["chatapp"], expires_in_hours: 1 })
    test.clock.advance(HOUR_MS)
    expect((await tenant.as("GET", `/channel-connect-tokens/${created.id}`)).body.status).toBe("expired")
  })

  it("keeps another tenant's links out of sight: 404 to get, revoke or delete, absent from the list", async () => {
    const owner = await newTenant()
    const stranger = await newTenant()
    const created = await createLink(test, owner.api_key, { allowed_channel_types: ["chatapp"] })
    const notFound = { status: 404, body: { detail: { code: "not_found", message: `Connect token ${created.id} not found` } } }

    expect(await stranger.as("GET", `/channel-connect-tokens/${created.id}`)).toMatchObject(notFound)
    expect(await stranger.as("DELETE", `/channel-connect-tokens/${created.id}`)).toMatchObject(notFound)
    expect(await stranger.as("POST", `/channel-connect-tokens/${created.id}/revoke`)).toMatchObject(notFound)
    expect((await stranger.as("GET", "/channel-connect-tokens")).body.items).toEqual([])
    expect((await owner.as("GET", `/channel-connect-tokens/${created.id}`)).body.status).toBe("valid")
    expect((await openPage(test, created.connect_url)).status).toBe(200)
  })
})

describe.each([
  ["DELETE /channel-connect-tokens/{id}", "DELETE", ""],
  ["POST /channel-connect-tokens/{id}/revoke", "POST", "/revoke"]
])("%s", (_, method, suffix) => {
  it("answers 200 with the token, status revoked, revoked now", async () => {
    const tenant = await newTenant()
    const created = await createLink(test, tenant.api_key, { allowed_channel_types: ["chatapp"] })
    test.clock.advance(60_000)

    const answer = await tenant.as(method, `/channel-connect-tokens/${created.id}${suffix}`)
    expect(answer.status).toBe(200)
    expect(answer.body).toEqual({ ...withoutUrl(created), status: "revoked", revoked_at: now() })
    expect((await tenant.as("GET", `/channel-connect-tokens/${created.id}`)).body).toEqual(answer.body)
  })

  it("makes the link answer 410 at once, while channels already connected through it stay active", async () => {
    const tenant = await newTenant()
    const created = await createLink(test, tenant.api_key, { allowed_channel_types: ["chatapp", "webmail"] })
    expect((await connectChannel(test, created.connect_url, "chatapp")).status).toBe(200)
    const openedBefore = await openForm(test, created.connect_url, "webmail")

    await tenant.as(method, `/channel-connect-tokens/${created.id}${suffix}`)

    expect((await openPage(test, created.connect_url)).status).toBe(410)
    expect((await submit(test, openedBefore, validInputs("webmail"))).status).toBe(410)
    const channels = (await tenant.as("GET", "/channels")).body.items
    expect(channels.map((c: Record<string, unknown>) => [c.platform, c.status, c.created_via_connect_token_id])).toEqual([
      ["chatapp", "active", created.id]
    ])
  })

  it("keeps the first revocation time when revoked again", async () => {
    const tenant = await newTenant()
    const created = await createLink(test, tenant.api_key, { allowed_channel_types: ["chatapp"] })
    const first = await tenant.as(method, `/channel-connect-tokens/${created.id}${suffix}`)
    test.clock.advance(60_000)

    const again = await tenant.as(method, `/channel-connect-tokens/${created.id}${suffix}`)
    expect(again.status).toBe(200)
    expect(again.body.revoked_at).toBe(first.body.revoked_at)
  })

  it("answers 404 for an unknown id", async () => {
    const tenant = await newTenant()
    expect((await tenant.as(method, `/channel-connect-tokens/${crypto.randomUUID()}${suffix}`)).status).toBe(404)
  })
})

describe("X-Tenant-ID", () => {
  it("lets a parent key issue a link in a sub-account, whose channel lands in the sub-account", async () => {
    const owner = await newTenant()
    const sub = await test.call("POST", "/tenants", { token: owner.user_token, body: { name: "Sub Brand" } })
    expect(sub.status).toBe(201)
    const inSub = { "x-tenant-id": sub.body.id }

    const created = await createLink(test, owner.api_key, { allowed_channel_types: ["chatapp"] }, inSub)
    expect(created).toMatchObject({ tenant_id: sub.body.id, partner_name: "Sub Brand" })
    expect((await owner.as("GET", "/channel-connect-tokens")).body.items).toEqual([])
    expect((await owner.as("GET", "/channel-connect-tokens", undefined, inSub)).body.items).toEqual([withoutUrl(created)])

    expect((await connectChannel(test, created.connect_url, "chatapp")).status).toBe(200)

    const inSubChannels = (await owner.as("GET", "/channels", undefined, inSub)).body.items
    expect(inSubChannels).toEqual([
      expect.objectContaining({ tenant_id: sub.body.id, platform: "chatapp", created_via_connect_token_id: created.id })
    ])
    expect((await owner.as("GET", "/channels")).body.items).toEqual([])
    expect((await events(sub.body.id)).map((e) => e.type)).toEqual(["channel.created"])
    expect(await events(owner.tenant_id)).toEqual([])
  })

  it("checks the SMS switch of the sub-account the link is issued in", async () => {
    const owner = await newTenant()
    const sub = await test.call("POST", "/tenants", { token: owner.user_token, body: { name: "Sub Brand" } })
    const inSub = { "x-tenant-id": sub.body.id }
    await test.operator((operator) => operator.setSmsEnabled(owner.tenant_id, true))

    expect((await owner.as("POST", "/channel-connect-tokens", { allowed_channel_types: ["sms"] }, inSub)).status).toBe(403)
    await test.operator((operator) => operator.setSmsEnabled(sub.body.id, true))
    expect((await owner.as("POST", "/channel-connect-tokens", { allowed_channel_types: ["sms"] }, inSub)).status).toBe(201)
  })
})
