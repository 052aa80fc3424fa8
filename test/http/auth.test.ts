import { Effect, Schema } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { makeApiHandler } from "../../src/http/ApiHandler.ts"
import { route } from "../../src/http/Route.ts"
import type { Scope } from "../../src/kernel/Scope.ts"
import { testDatabases } from "../support/Databases.ts"
import { bootstrap, startTestApp, type TestApp } from "../support/TestApp.ts"
import { outboxEvents } from "./OutboxEvents.ts"

const INVALID_KEY = { detail: { code: "unauthenticated", message: "Invalid or missing API key" } }
const TENANT_REFUSED = { detail: { code: "forbidden", message: "Not allowed to act in the requested tenant" } }

let test: TestApp
beforeAll(async () => {
  test = await startTestApp(await testDatabases.find((d) => d.name === "sqlite-memory")!.open())
})
afterAll(() => test.close())

const issueKey = (tenantId: string, scopes: ReadonlyArray<Scope>, options: { parent?: boolean; expiresInSeconds?: number } = {}) =>
  test.operator((operator) => operator.createApiKey({ tenantId, scopes, ...options }))

const createTenant = async (userToken: string, body: Record<string, unknown>): Promise<{ id: string }> => {
  const created = await test.call("POST", "/tenants", { token: userToken, body })
  expect(created.status).toBe(201)
  return created.body
}

const listContacts = (token: string, tenantId?: string) =>
  test.call("GET", "/contacts", { token, headers: tenantId === undefined ? {} : { "x-tenant-id": tenantId } })

describe("API keys", () => {
  it("answers 401 with a Bearer challenge when no key is sent", async () => {
    const answer = await test.call("GET", "/contacts")
    expect(answer.status).toBe(401)
    expect(answer.body).toEqual(INVALID_KEY)
    expect(answer.headers.get("www-authenticate")).toBe("Bearer")
  })

  it.each([
    ["not a bearer scheme", { authorization: "Basic dXNlcjpwYXNz" }],
    ["an empty bearer", { authorization: "Bearer " }],
    ["a bearer that is not a key", { authorization: "Bearer hello" }],
    ["a key cut short", { authorization: `Bearer ock_${"a".repeat(12)}_${"b".repeat(39)}` }],
    ["a key with another prefix", { authorization: `Bearer xyz_${"a".repeat(12)}_${"b".repeat(40)}` }]
  ])("answers 401 for a malformed credential: %s", async (_, headers) => {
    const answer = await test.call("GET", "/contacts", { headers })
    expect(answer.status).toBe(401)
    expect(answer.body).toEqual(INVALID_KEY)
  })

  it("answers 401 for a well-formed key that was never issued", async () => {
    const answer = await listContacts(`ock_${"A".repeat(12)}_${"B".repeat(40)}`)
    expect(answer.status).toBe(401)
    expect(answer.body).toEqual(INVALID_KEY)
  })

  it("answers 401 for an issued key presented with a wrong secret", async () => {
    const { api_key } = await bootstrap(test)
    const tampered = `${api_key.slice(0, -1)}${api_key.endsWith("A") ? "B" : "A"}`
    expect((await listContacts(tampered)).status).toBe(401)
    expect((await listContacts(api_key)).status).toBe(200)
  })

  it("accepts the Bearer scheme name in any case", async () => {
    const { api_key } = await bootstrap(test)
    const answer = await test.call("GET", "/contacts", { headers: { authorization: `bearer ${api_key}` } })
    expect(answer.status).toBe(200)
  })

  it("answers 401 for a revoked key", async () => {
    const owner = await bootstrap(test)
    const key = await issueKey(owner.tenant_id, ["contacts:read"])
    expect((await listContacts(key.api_key)).status).toBe(200)
    await test.operator((operator) => operator.revokeApiKey(key.id))
    const answer = await listContacts(key.api_key)
    expect(answer.status).toBe(401)
    expect(answer.body).toEqual(INVALID_KEY)
  })

  it("answers 401 once a key's lifetime has passed, and not before", async () => {
    const owner = await bootstrap(test)
    const key = await issueKey(owner.tenant_id, ["contacts:read"], { expiresInSeconds: 60 })
    test.clock.advance(59_000)
    expect((await listContacts(key.api_key)).status).toBe(200)
    test.clock.advance(2_000)
    const answer = await listContacts(key.api_key)
    expect(answer.status).toBe(401)
    expect(answer.body).toEqual(INVALID_KEY)
  })

  it("answers 401 for a user token on an API-key route", async () => {
    const { user_token } = await bootstrap(test)
    const answer = await listContacts(user_token)
    expect(answer.status).toBe(401)
    expect(answer.body).toEqual(INVALID_KEY)
  })

  it("answers 401 for an API key on POST /tenants, which takes a user token", async () => {
    const { api_key } = await bootstrap(test)
    const answer = await test.call("POST", "/tenants", { token: api_key, body: { name: "Sub" } })
    expect(answer.status).toBe(401)
    expect(answer.body).toEqual({ detail: { code: "unauthenticated", message: "Invalid or missing user token" } })
    expect(answer.headers.get("www-authenticate")).toBe("Bearer")
  })

  it("checks the key before the body: an unauthenticated malformed body is 401, not 422", async () => {
    const answer = await test.call("POST", "/contacts", { body: "{not json" })
    expect(answer.status).toBe(401)
  })
})

describe("scopes", () => {
  it("answers 403 naming the missing scope, and stores nothing", async () => {
    const owner = await bootstrap(test)
    const reader = await issueKey(owner.tenant_id, ["contacts:read"])
    const answer = await test.call("POST", "/contacts", { token: reader.api_key, body: { name: "Ada" } })
    expect(answer.status).toBe(403)
    expect(answer.body).toEqual({ detail: "Missing required permission(s): contacts:create" })
    expect((await listContacts(reader.api_key)).body.pagination.total).toBe(0)
    expect(await outboxEvents(test, owner.tenant_id)).toEqual([])
  })

  it("lets a key use exactly the operations its scopes name", async () => {
    const owner = await bootstrap(test)
    const writer = await issueKey(owner.tenant_id, ["contacts:create"])
    expect((await test.call("POST", "/contacts", { token: writer.api_key, body: { name: "Ada" } })).status).toBe(201)
    expect((await listContacts(writer.api_key)).body).toEqual({ detail: "Missing required permission(s): contacts:read" })
  })

  describe("an operation that accepts any one of several scopes (as library adopt does)", () => {
    const adopt = route({
      method: "POST",
      path: "/adopt",
      operationId: "adopt",
      summary: "Accepts channels:admin or messages:create",
      tag: "Test",
      auth: { kind: "api_key", scopes: ["channels:admin", "messages:create"] },
      response: { status: 200, schema: Schema.Struct({ tenant_id: Schema.String }), description: "ok" },
      handle: ({ principal }) => Effect.succeed({ tenant_id: principal.tenantId })
    })
    const callAdopt = async (key: string) => {
      const handler = await test.app.run(makeApiHandler([adopt], { title: "test", version: "0" }))
      const response = await handler(
        new Request("http://test.local/api/v1/adopt", { method: "POST", headers: { authorization: `Bearer ${key}` } })
      )
      return { status: response.status, body: await response.json() }
    }

    it.each([["channels:admin"], ["messages:create"]] as const)("admits a key holding only %s", async (scope) => {
      const owner = await bootstrap(test)
      const key = await issueKey(owner.tenant_id, [scope])
      expect(await callAdopt(key.api_key)).toEqual({ status: 200, body: { tenant_id: owner.tenant_id } })
    })

    it("answers 403 naming every accepted scope to a key holding none of them", async () => {
      const owner = await bootstrap(test)
      const key = await issueKey(owner.tenant_id, ["channels:read"])
      expect(await callAdopt(key.api_key)).toEqual({
        status: 403,
        body: { detail: "Missing required permission(s): channels:admin or messages:create" }
      })
    })
  })
})

describe("X-Tenant-ID", () => {
  it("lets a parent key act in a sub-account created through POST /tenants", async () => {
    const owner = await bootstrap(test)
    const sub = await createTenant(owner.user_token, { name: "Sub-account" })
    const inSub = { "x-tenant-id": sub.id }

    const created = await test.call("POST", "/contacts", { token: owner.api_key, headers: inSub, body: { name: "Grace" } })
    expect(created.status).toBe(201)
    expect(created.body.tenant_id).toBe(sub.id)

    const inSubList = await listContacts(owner.api_key, sub.id)
    expect(inSubList.body.items.map((c: { id: string }) => c.id)).toEqual([created.body.id])
    expect((await test.call("GET", `/contacts/${created.body.id}`, { token: owner.api_key, headers: inSub })).status)
      .toBe(200)
    expect((await outboxEvents(test, sub.id)).map((e) => e.type)).toEqual(["contact.created"])
  })

  it("keeps what a parent key created in a sub-account out of its own tenant", async () => {
    const owner = await bootstrap(test)
    const sub = await createTenant(owner.user_token, { name: "Sub-account" })
    const created = await test.call("POST", "/contacts", {
      token: owner.api_key,
      headers: { "x-tenant-id": sub.id },
      body: { name: "Grace" }
    })

    const fromHome = await test.call("GET", `/contacts/${created.body.id}`, { token: owner.api_key })
    expect(fromHome.status).toBe(404)
    expect((await listContacts(owner.api_key)).body.items).toEqual([])
    expect(await outboxEvents(test, owner.tenant_id)).toEqual([])
  })

  it("treats a blank X-Tenant-ID as none", async () => {
    const owner = await bootstrap(test)
    const created = await test.call("POST", "/contacts", { token: owner.api_key, headers: { "x-tenant-id": " " }, body: { name: "Ada" } })
    expect(created.body.tenant_id).toBe(owner.tenant_id)
  })

  it("refuses with one identical 403 a tenant of another billing account, an unknown id and a garbage value", async () => {
    const owner = await bootstrap(test)
    const stranger = await bootstrap(test)
    const { billing_account_id } = await test.operator((operator) => operator.createBillingAccount(owner.user_id))
    const ownersOtherAccount = await createTenant(owner.user_token, { name: "Elsewhere", billing_account_id })

    const refused = [
      stranger.tenant_id,
      ownersOtherAccount.id,
      crypto.randomUUID(),
      "garbage",
      "' OR 1=1 --",
      "../../tenants"
    ]
    for (const tenantId of refused) {
      const answer = await listContacts(owner.api_key, tenantId)
      expect({ tenantId, status: answer.status, body: answer.body }).toEqual({ tenantId, status: 403, body: TENANT_REFUSED })
      const write = await test.call("POST", "/contacts", { token: owner.api_key, headers: { "x-tenant-id": tenantId }, body: { name: "X" } })
      expect({ tenantId, status: write.status, body: write.body }).toEqual({ tenantId, status: 403, body: TENANT_REFUSED })
    }
    expect((await listContacts(stranger.api_key)).body.items).toEqual([])
  })

  it("refuses a key that is not a parent naming another tenant of its own billing account", async () => {
    const owner = await bootstrap(test)
    const sub = await createTenant(owner.user_token, { name: "Sub-account" })
    const plain = await issueKey(owner.tenant_id, ["contacts:read", "contacts:create"])

    const answer = await listContacts(plain.api_key, sub.id)
    expect(answer.status).toBe(403)
    expect(answer.body).toEqual(TENANT_REFUSED)
  })

  it("lets a key that is not a parent name its own tenant", async () => {
    const owner = await bootstrap(test)
    const plain = await issueKey(owner.tenant_id, ["contacts:read", "contacts:create"])
    const created = await test.call("POST", "/contacts", {
      token: plain.api_key,
      headers: { "x-tenant-id": owner.tenant_id },
      body: { name: "Ada" }
    })
    expect(created.status).toBe(201)
    expect(created.body.tenant_id).toBe(owner.tenant_id)
    expect((await listContacts(plain.api_key, owner.tenant_id)).body.pagination.total).toBe(1)
  })

  it("checks the key before the tenant: an invalid key naming a real tenant is 401", async () => {
    const owner = await bootstrap(test)
    const answer = await listContacts(`ock_${"A".repeat(12)}_${"B".repeat(40)}`, owner.tenant_id)
    expect(answer.status).toBe(401)
  })
})
