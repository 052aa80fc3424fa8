import { Effect, Option } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { Scope } from "../../src/kernel/Scope.ts"
import { type WebhookEndpointRecord, WebhookEndpointStore } from "../../src/ports/WebhookEndpointStore.ts"
import { SUBSCRIBABLE_EVENT_TYPES } from "../../src/webhooks/EventTypes.ts"
import { serviceDatabases } from "../support/Databases.ts"
import { bootstrap, startTestApp, type TestApp } from "../support/TestApp.ts"

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/
// `whsec_` and 24 random bytes in base64: 32 characters, no padding.
const SIGNING_SECRET = /^whsec_[A-Za-z0-9+/]{32}$/
const WEBHOOK_SCOPES = ["webhooks:read", "webhooks:create", "webhooks:update", "webhooks:delete"] as const

// The smallest valid creation body, with `fields` added.
const endpointBody = (fields: Record<string, unknown> = {}) => ({
  name: "Order updates",
  url: "https://hooks.example.com/omni",
  subscribed_events: ["contact.created"],
  ...fields
})

const coded = (code: string, message: unknown = expect.any(String)) => ({ detail: { code, message } })

describe.each(serviceDatabases)("webhook endpoints on $name", (database) => {
  let test: TestApp
  beforeAll(async () => {
    test = await startTestApp(await database.open())
  })
  afterAll(() => test.close())

  const now = () => new Date(test.clock.nowMillis()).toISOString()

  /** A fresh tenant and its parent key, so every test starts without endpoints. */
  const newTenant = async () => {
    const owner = await bootstrap(test)
    const as = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
      test.call(method, path, { token: owner.api_key, body, headers })
    return { ...owner, as }
  }
  type Tenant = Awaited<ReturnType<typeof newTenant>>

  const issueKey = (tenantId: string, scopes: ReadonlyArray<Scope>) =>
    test.operator((operator) => operator.createApiKey({ tenantId, scopes }))

  /** Creates an endpoint and returns the creation response and the endpoint as GET shows it. */
  const create = async (tenant: Tenant, fields: Record<string, unknown> = {}) => {
    const created = await tenant.as("POST", "/webhook-endpoints", endpointBody(fields))
    expect(created.status).toBe(201)
    const fetched = await tenant.as("GET", `/webhook-endpoints/${created.body.webhook_id}`)
    expect(fetched.status).toBe(200)
    return { id: created.body.webhook_id as string, secret: created.body.secret_key as string, endpoint: fetched.body }
  }

  const stored = (tenantId: string, id: string): Promise<WebhookEndpointRecord | undefined> =>
    test.app.run(Effect.flatMap(WebhookEndpointStore, (store) => store.get(tenantId, id)))
      .then(Option.getOrUndefined)

  /** Puts the endpoint in a state the API cannot reach yet (the circuit breaker comes with deliveries). */
  const setHealth = async (tenantId: string, id: string, health: Partial<WebhookEndpointRecord>) => {
    const record = (await stored(tenantId, id))!
    await test.app.run(Effect.flatMap(WebhookEndpointStore, (store) => store.update(tenantId, { ...record, ...health })))
  }

  describe("POST /webhook-endpoints", () => {
    it("answers 201 with exactly webhook_id, a whsec_ signing secret and a reminder to store it", async () => {
      const tenant = await newTenant()
      const answer = await tenant.as("POST", "/webhook-endpoints", endpointBody())

      expect(answer.status).toBe(201)
      expect(answer.body).toEqual({
        webhook_id: expect.stringMatching(UUID),
        secret_key: expect.stringMatching(SIGNING_SECRET),
        message: expect.any(String)
      })
    })

    it("gives every endpoint its own secret", async () => {
      const tenant = await newTenant()
      const first = await create(tenant)
      const second = await create(tenant)
      expect(second.secret).not.toBe(first.secret)
    })

    it("stores the endpoint with the spec's defaults, active and not yet verified", async () => {
      const tenant = await newTenant()
      const { id } = await create(tenant)

      const answer = await tenant.as("GET", `/webhook-endpoints/${id}`)
      expect(answer.status).toBe(200)
      expect(answer.body).toEqual({
        id,
        tenant_id: tenant.tenant_id,
        name: "Order updates",
        url: "https://hooks.example.com/omni",
        has_authorization_header: false,
        subscribed_events: ["contact.created"],
        source_filter_mode: "all",
        filtered_channel_ids: null,
        filtered_email_integration_ids: null,
        is_active: true,
        is_verified: false,
        status: "active",
        retry_strategy: "exponential",
        max_retries: 8,
        timeout_seconds: 30,
        propagate_trace_context: false,
        last_success_at: null,
        last_failure_at: null,
        last_error: null,
        consecutive_failures: 0,
        suspended_at: null,
        next_reactivation_at: null,
        reactivation_attempts: 0,
        created_at: now(),
        updated_at: null
      })
    })

    it("keeps every field it was given, trimming the name", async () => {
      const tenant = await newTenant()
      const channelId = crypto.randomUUID()
      const { endpoint } = await create(tenant, {
        name: "  Zoë's CRM — 山田 🚀  ",
        url: "https://crm.exämple.com:8443/hooks/omni?source=omni#frag",
        subscribed_events: ["message.received", "conversation.closed", "chatapp_flow.completed"],
        authorization_header: "Bearer receiver-token-0001",
        retry_strategy: "linear",
        max_retries: 3,
        timeout_seconds: 12,
        source_filter_mode: "selected",
        filtered_channel_ids: [channelId],
        filtered_email_integration_ids: ["imap-1", "imap-2"]
      })

      expect(endpoint).toMatchObject({
        name: "Zoë's CRM — 山田 🚀",
        url: "https://crm.exämple.com:8443/hooks/omni?source=omni#frag",
        subscribed_events: ["message.received", "conversation.closed", "chatapp_flow.completed"],
        has_authorization_header: true,
        retry_strategy: "linear",
        max_retries: 3,
        timeout_seconds: 12,
        source_filter_mode: "selected",
        filtered_channel_ids: [channelId],
        filtered_email_integration_ids: ["imap-1", "imap-2"]
      })
    })

    it("accepts retry_strategy none", async () => {
      const tenant = await newTenant()
      expect((await create(tenant, { retry_strategy: "none" })).endpoint.retry_strategy).toBe("none")
    })

    it("accepts every event type the spec names, in one list", async () => {
      const tenant = await newTenant()
      const { endpoint } = await create(tenant, { subscribed_events: [...SUBSCRIBABLE_EVENT_TYPES] })
      expect(endpoint.subscribed_events).toEqual([...SUBSCRIBABLE_EVENT_TYPES])
    })

    it("uses the filter lists only in selected mode: dropped in all mode, empty when selected without them", async () => {
      const tenant = await newTenant()
      const all = await create(tenant, { filtered_channel_ids: ["c1"], filtered_email_integration_ids: ["e1"] })
      expect(all.endpoint).toMatchObject({ source_filter_mode: "all", filtered_channel_ids: null, filtered_email_integration_ids: null })

      const selected = await create(tenant, { source_filter_mode: "selected" })
      expect(selected.endpoint).toMatchObject({ source_filter_mode: "selected", filtered_channel_ids: [], filtered_email_integration_ids: [] })
    })

    it("treats an empty authorization_header as none", async () => {
      const tenant = await newTenant()
      expect((await create(tenant, { authorization_header: "" })).endpoint.has_authorization_header).toBe(false)
    })

    it.each([
      ["max_retries", 0],
      ["max_retries", 15],
      ["timeout_seconds", 5],
      ["timeout_seconds", 60]
    ])("accepts the boundary %s %i", async (field, value) => {
      const tenant = await newTenant()
      expect((await create(tenant, { [field]: value })).endpoint[field]).toBe(value)
    })

    it("accepts a 255-character name and a 4,096-character authorization_header", async () => {
      const tenant = await newTenant()
      const { endpoint } = await create(tenant, { name: "n".repeat(255), authorization_header: "a".repeat(4096) })
      expect(endpoint).toMatchObject({ name: "n".repeat(255), has_authorization_header: true })
    })

    it("accepts an authorization_header with Latin-1 letters, which a header can carry, and stores it as given", async () => {
      const tenant = await newTenant()
      const { id, endpoint } = await create(tenant, { authorization_header: "Basic café ñ" })
      expect(endpoint.has_authorization_header).toBe(true)
      expect((await stored(tenant.tenant_id, id))!.authorization_header).toBe("Basic café ñ")
    })

    it("answers 422 VALIDATION_ERROR for an http:// URL, naming url in message and errors", async () => {
      const tenant = await newTenant()
      const answer = await tenant.as("POST", "/webhook-endpoints", endpointBody({ url: "http://hooks.example.com/omni" }))

      expect(answer.status).toBe(422)
      expect(answer.body).toEqual({
        detail: {
          code: "VALIDATION_ERROR",
          message: "body.url: Must be an absolute https:// URL without credentials",
          errors: [{ loc: ["body", "url"], msg: "Must be an absolute https:// URL without credentials", type: "value_error" }]
        }
      })
    })

    it.each([
      ["name missing", { name: undefined }, ["body", "name"]],
      ["name empty", { name: "" }, ["body", "name"]],
      ["name blank", { name: "   " }, ["body", "name"]],
      ["name of 256 characters", { name: "n".repeat(256) }, ["body", "name"]],
      ["name not a string", { name: 42 }, ["body", "name"]],
      ["name holding U+0000", { name: "Hook\u0000" }, ["body", "name"]],
      ["name null", { name: null }, ["body", "name"]],
      ["url missing", { url: undefined }, ["body", "url"]],
      ["url http://", { url: "http://hooks.example.com/omni" }, ["body", "url"]],
      ["url relative", { url: "/hooks/omni" }, ["body", "url"]],
      ["url without a host", { url: "https://" }, ["body", "url"]],
      ["url ftp:", { url: "ftp://hooks.example.com/" }, ["body", "url"]],
      ["url javascript:", { url: "javascript:alert(1)" }, ["body", "url"]],
      ["url with credentials", { url: "https://user:pw@hooks.example.com/" }, ["body", "url"]],
      ["url with a user name only", { url: "https://user@hooks.example.com/" }, ["body", "url"]],
      ["url with a tab, which the URL parser would drop", { url: "https://hooks.exa\tmple.com/" }, ["body", "url"]],
      ["url with a line break", { url: "https://hooks.example.com/a\nb" }, ["body", "url"]],
      ["url with a trailing space", { url: "https://hooks.example.com/ " }, ["body", "url"]],
      ["url with a space inside", { url: "https://hooks.example.com/a b" }, ["body", "url"]],
      ["url over 2,048 characters", { url: `https://hooks.example.com/${"p".repeat(2048)}` }, ["body", "url"]],
      ["url not a string", { url: ["https://hooks.example.com/"] }, ["body", "url"]],
      ["subscribed_events missing", { subscribed_events: undefined }, ["body", "subscribed_events"]],
      ["subscribed_events empty", { subscribed_events: [] }, ["body", "subscribed_events"]],
      ["subscribed_events repeating a type", { subscribed_events: ["contact.created", "contact.created"] }, ["body", "subscribed_events"]],
      ["subscribed_events naming an unknown type", { subscribed_events: ["contact.created", "contact.exploded"] }, ["body", "subscribed_events", 1]],
      ["subscribed_events naming a type in another case", { subscribed_events: ["CONTACT.CREATED"] }, ["body", "subscribed_events", 0]],
      ["subscribed_events not a list", { subscribed_events: "contact.created" }, ["body", "subscribed_events"]],
      ["authorization_header with a line break", { authorization_header: "Bearer a\r\nX-Injected: 1" }, ["body", "authorization_header"]],
      ["authorization_header with U+0000", { authorization_header: "Bearer a\u0000" }, ["body", "authorization_header"]],
      ["authorization_header with a tab", { authorization_header: "Bearer\ta" }, ["body", "authorization_header"]],
      ["authorization_header with a character beyond U+00FF", { authorization_header: "Bearer ключ" }, ["body", "authorization_header"]],
      ["authorization_header with an emoji", { authorization_header: "Bearer 🔑" }, ["body", "authorization_header"]],
      ["authorization_header with DEL", { authorization_header: "Bearer a\u007f" }, ["body", "authorization_header"]],
      ["authorization_header of 4,097 characters", { authorization_header: "a".repeat(4097) }, ["body", "authorization_header"]],
      ["authorization_header not a string", { authorization_header: { scheme: "Bearer" } }, ["body", "authorization_header"]],
      ["retry_strategy unknown", { retry_strategy: "fibonacci" }, ["body", "retry_strategy"]],
      ["max_retries 16", { max_retries: 16 }, ["body", "max_retries"]],
      ["max_retries negative", { max_retries: -1 }, ["body", "max_retries"]],
      ["max_retries not whole", { max_retries: 2.5 }, ["body", "max_retries"]],
      ["max_retries as text", { max_retries: "8" }, ["body", "max_retries"]],
      ["timeout_seconds 4", { timeout_seconds: 4 }, ["body", "timeout_seconds"]],
      ["timeout_seconds 61", { timeout_seconds: 61 }, ["body", "timeout_seconds"]],
      ["timeout_seconds null", { timeout_seconds: null }, ["body", "timeout_seconds"]],
      ["propagate_trace_context as text", { propagate_trace_context: "yes" }, ["body", "propagate_trace_context"]],
      ["source_filter_mode unknown", { source_filter_mode: "some" }, ["body", "source_filter_mode"]],
      ["filtered_channel_ids repeating an id", { source_filter_mode: "selected", filtered_channel_ids: ["c1", "c1"] }, ["body", "filtered_channel_ids"]],
      ["filtered_channel_ids holding an empty id", { source_filter_mode: "selected", filtered_channel_ids: [""] }, ["body", "filtered_channel_ids", 0]],
      ["filtered_email_integration_ids not a list", { filtered_email_integration_ids: "e1" }, ["body", "filtered_email_integration_ids"]],
      ["is_active, which only PATCH takes", { is_active: false }, ["body", "is_active"]],
      ["secret_key, which the service chooses", { secret_key: "whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA" }, ["body", "secret_key"]],
      ["tenant_id, which comes from the key", { tenant_id: crypto.randomUUID() }, ["body", "tenant_id"]]
    ])("answers 422 VALIDATION_ERROR naming the field: %s", async (_, fields, loc) => {
      const tenant = await newTenant()
      const body = Object.fromEntries(Object.entries(endpointBody(fields)).filter(([, value]) => value !== undefined))
      const answer = await tenant.as("POST", "/webhook-endpoints", body)

      expect(answer.status).toBe(422)
      expect(answer.body).toEqual({
        detail: { code: "VALIDATION_ERROR", message: expect.any(String), errors: expect.any(Array) }
      })
      expect(answer.body.detail.errors).toContainEqual({ loc, msg: expect.any(String), type: expect.any(String) })
      expect((await tenant.as("GET", "/webhook-endpoints")).body).toEqual([])
    })

    it("answers 422 VALIDATION_ERROR for a body that is not an object", async () => {
      const tenant = await newTenant()
      const answer = await tenant.as("POST", "/webhook-endpoints", [endpointBody()])
      expect(answer.status).toBe(422)
      expect(answer.body.detail.code).toBe("VALIDATION_ERROR")
    })
  })

  describe("GET /webhook-endpoints", () => {
    it("answers a bare empty array for a tenant without endpoints", async () => {
      const tenant = await newTenant()
      const answer = await tenant.as("GET", "/webhook-endpoints")
      expect(answer.status).toBe(200)
      expect(answer.body).toEqual([])
    })

    it("lists the tenant's endpoints oldest first, each as GET shows it, in a bare array", async () => {
      const tenant = await newTenant()
      const first = await create(tenant, { name: "first" })
      test.clock.advance(1_000)
      const second = await create(tenant, { name: "second" })
      test.clock.advance(1_000)
      const third = await create(tenant, { name: "third" })

      const answer = await tenant.as("GET", "/webhook-endpoints")
      expect(answer.status).toBe(200)
      expect(answer.body).toEqual([first.endpoint, second.endpoint, third.endpoint])
    })

    it("lists only the tenant's own endpoints", async () => {
      const a = await newTenant()
      const b = await newTenant()
      const ofA = await create(a)
      await create(b)
      await create(b)

      expect((await a.as("GET", "/webhook-endpoints")).body).toEqual([ofA.endpoint])
      expect((await b.as("GET", "/webhook-endpoints")).body).toHaveLength(2)
    })
  })

  describe("secrets", () => {
    it("never shows the signing secret or the authorization header value after creation", async () => {
      const tenant = await newTenant()
      const header = "Bearer receiver-token-that-must-stay-hidden"
      const { id, secret } = await create(tenant, { authorization_header: header })

      const answers = [
        await tenant.as("GET", `/webhook-endpoints/${id}`),
        await tenant.as("GET", "/webhook-endpoints"),
        await tenant.as("PATCH", `/webhook-endpoints/${id}`, { name: "Renamed" }),
        await tenant.as("PATCH", `/webhook-endpoints/${id}`, { authorization_header: `${header}-rotated` })
      ]
      for (const answer of answers) {
        expect(answer.status).toBe(200)
        const text = JSON.stringify(answer.body)
        expect(text).not.toContain(secret)
        expect(text).not.toContain(secret.slice("whsec_".length))
        expect(text).not.toContain("receiver-token-that-must-stay-hidden")
        expect(text).not.toMatch(/whsec_/)
      }
      expect(answers[0]!.body.has_authorization_header).toBe(true)
      expect(answers[3]!.body.has_authorization_header).toBe(true)
    })
  })

  describe("GET /webhook-endpoints/{webhook_id}", () => {
    it("answers 404 RESOURCE_NOT_FOUND for an id that names no endpoint", async () => {
      const tenant = await newTenant()
      const id = crypto.randomUUID()
      const answer = await tenant.as("GET", `/webhook-endpoints/${id}`)
      expect(answer.status).toBe(404)
      expect(answer.body).toEqual(coded("RESOURCE_NOT_FOUND", `Webhook endpoint ${id} not found`))
    })

    it.each(["not-a-uuid", "1", "%00", "..%2F..%2Ftenants"])("answers 404 RESOURCE_NOT_FOUND for a malformed id %j", async (id) => {
      const tenant = await newTenant()
      const answer = await tenant.as("GET", `/webhook-endpoints/${id}`)
      expect(answer.status).toBe(404)
      expect(answer.body).toEqual(coded("RESOURCE_NOT_FOUND"))
    })

    it("finds an endpoint by its id written in upper case", async () => {
      const tenant = await newTenant()
      const { id, endpoint } = await create(tenant)
      expect((await tenant.as("GET", `/webhook-endpoints/${id.toUpperCase()}`)).body).toEqual(endpoint)
    })
  })

  describe("PATCH /webhook-endpoints/{webhook_id}", () => {
    const original = {
      name: "Original",
      url: "https://hooks.example.com/original",
      subscribed_events: ["contact.created", "contact.updated"],
      authorization_header: "Bearer original",
      retry_strategy: "linear",
      max_retries: 4,
      timeout_seconds: 20
    }

    it("changes only the fields sent, stamps updated_at and stores what it answered", async () => {
      const tenant = await newTenant()
      const { id, endpoint: before } = await create(tenant, original)
      test.clock.advance(60_000)

      const answer = await tenant.as("PATCH", `/webhook-endpoints/${id}`, { name: "Renamed", timeout_seconds: 45 })
      expect(answer.status).toBe(200)
      expect(answer.body).toEqual({ ...before, name: "Renamed", timeout_seconds: 45, updated_at: now() })
      expect((await tenant.as("GET", `/webhook-endpoints/${id}`)).body).toEqual(answer.body)
    })

    it.each([
      ["name", "New name"],
      ["url", "https://other.example.org/in"],
      ["retry_strategy", "none"],
      ["max_retries", 15],
      ["max_retries", 0],
      ["timeout_seconds", 60],
      ["timeout_seconds", 5],
      ["propagate_trace_context", true]
    ])("changes %s alone to %j", async (field, value) => {
      const tenant = await newTenant()
      const { id, endpoint: before } = await create(tenant, original)
      test.clock.advance(1_000)

      const answer = await tenant.as("PATCH", `/webhook-endpoints/${id}`, { [field]: value })
      expect(answer.status).toBe(200)
      expect(answer.body).toEqual({ ...before, [field]: value, updated_at: now() })
    })

    it("replaces the whole subscribed_events list", async () => {
      const tenant = await newTenant()
      const { id, endpoint: before } = await create(tenant, original)

      const answer = await tenant.as("PATCH", `/webhook-endpoints/${id}`, { subscribed_events: ["message.sent"] })
      expect(answer.body).toEqual({ ...before, subscribed_events: ["message.sent"], updated_at: now() })
    })

    it("removes the authorization header when sent an empty string, and keeps it when not sent", async () => {
      const tenant = await newTenant()
      const { id } = await create(tenant, original)

      expect((await tenant.as("PATCH", `/webhook-endpoints/${id}`, { name: "Kept" })).body.has_authorization_header).toBe(true)
      expect((await stored(tenant.tenant_id, id))!.authorization_header).toBe("Bearer original")

      const removed = await tenant.as("PATCH", `/webhook-endpoints/${id}`, { authorization_header: "" })
      expect(removed.status).toBe(200)
      expect(removed.body.has_authorization_header).toBe(false)
      expect((await stored(tenant.tenant_id, id))!.authorization_header).toBeNull()
    })

    it("sets an authorization header on an endpoint that had none", async () => {
      const tenant = await newTenant()
      const { id } = await create(tenant)

      const answer = await tenant.as("PATCH", `/webhook-endpoints/${id}`, { authorization_header: "Basic dXNlcjpwdw==" })
      expect(answer.body.has_authorization_header).toBe(true)
      expect((await stored(tenant.tenant_id, id))!.authorization_header).toBe("Basic dXNlcjpwdw==")
    })

    it("makes the endpoint inactive with is_active false and active again with true", async () => {
      const tenant = await newTenant()
      const { id, endpoint: before } = await create(tenant)
      test.clock.advance(1_000)

      const off = await tenant.as("PATCH", `/webhook-endpoints/${id}`, { is_active: false })
      expect(off.status).toBe(200)
      expect(off.body).toEqual({ ...before, is_active: false, status: "inactive", updated_at: now() })
      test.clock.advance(1_000)

      const on = await tenant.as("PATCH", `/webhook-endpoints/${id}`, { is_active: true })
      expect(on.status).toBe(200)
      expect(on.body).toEqual({ ...before, is_active: true, status: "active", updated_at: now() })
    })

    it("keeps an inactive endpoint inactive when sent is_active false again", async () => {
      const tenant = await newTenant()
      const { id } = await create(tenant)
      await tenant.as("PATCH", `/webhook-endpoints/${id}`, { is_active: false })
      const again = await tenant.as("PATCH", `/webhook-endpoints/${id}`, { is_active: false })
      expect(again.body).toMatchObject({ is_active: false, status: "inactive" })
    })

    it("moves a permanently deactivated endpoint to active with is_active true, its breaker reset", async () => {
      const tenant = await newTenant()
      const { id } = await create(tenant)
      await setHealth(tenant.tenant_id, id, {
        is_active: false,
        consecutive_failures: 20,
        reactivation_attempts: 9,
        permanently_deactivated_at: "2026-11-22T11:00:00.000Z",
        last_failure_at: "2026-11-22T11:00:00.000Z",
        last_error: "connection refused"
      })
      expect((await tenant.as("GET", `/webhook-endpoints/${id}`)).body.status).toBe("permanently_deactivated")

      const answer = await tenant.as("PATCH", `/webhook-endpoints/${id}`, { is_active: true })
      expect(answer.body).toMatchObject({
        is_active: true,
        status: "active",
        consecutive_failures: 0,
        reactivation_attempts: 0,
        suspended_at: null,
        next_reactivation_at: null,
        // What happened last stays visible.
        last_failure_at: "2026-11-22T11:00:00.000Z",
        last_error: "connection refused"
      })
    })

    it("leaves a suspended endpoint suspended when sent is_active true: verification is the way out", async () => {
      const tenant = await newTenant()
      const { id } = await create(tenant)
      const suspension = {
        is_active: false,
        consecutive_failures: 20,
        suspended_at: "2026-11-22T11:59:00.000Z",
        next_reactivation_at: "2026-11-22T12:00:00.000Z"
      }
      await setHealth(tenant.tenant_id, id, suspension)

      const answer = await tenant.as("PATCH", `/webhook-endpoints/${id}`, { is_active: true, name: "Still down" })
      expect(answer.status).toBe(200)
      expect(answer.body).toMatchObject({ ...suspension, status: "suspended", name: "Still down" })
    })

    it("turns a suspended endpoint inactive with is_active false, ending the suspension", async () => {
      const tenant = await newTenant()
      const { id } = await create(tenant)
      await setHealth(tenant.tenant_id, id, {
        is_active: false,
        consecutive_failures: 20,
        suspended_at: "2026-11-22T11:59:00.000Z",
        next_reactivation_at: "2026-11-22T12:00:00.000Z"
      })

      const answer = await tenant.as("PATCH", `/webhook-endpoints/${id}`, { is_active: false })
      expect(answer.body).toMatchObject({ is_active: false, status: "inactive", suspended_at: null, next_reactivation_at: null })
    })

    it("keeps the filter lists of a selected endpoint when other fields change, and drops them when it goes back to all", async () => {
      const tenant = await newTenant()
      const { id } = await create(tenant, { source_filter_mode: "selected", filtered_channel_ids: ["c1"] })

      const renamed = await tenant.as("PATCH", `/webhook-endpoints/${id}`, { name: "Renamed" })
      expect(renamed.body).toMatchObject({ source_filter_mode: "selected", filtered_channel_ids: ["c1"], filtered_email_integration_ids: [] })

      const refiltered = await tenant.as("PATCH", `/webhook-endpoints/${id}`, { filtered_email_integration_ids: ["e1"] })
      expect(refiltered.body).toMatchObject({ filtered_channel_ids: ["c1"], filtered_email_integration_ids: ["e1"] })

      const all = await tenant.as("PATCH", `/webhook-endpoints/${id}`, { source_filter_mode: "all" })
      expect(all.body).toMatchObject({ source_filter_mode: "all", filtered_channel_ids: null, filtered_email_integration_ids: null })
    })

    it.each([
      ["name empty", { name: "" }, ["body", "name"]],
      ["name blank", { name: " \t " }, ["body", "name"]],
      ["name null", { name: null }, ["body", "name"]],
      ["url http://", { url: "http://hooks.example.com/" }, ["body", "url"]],
      ["url with a line break", { url: "https://hooks.example.com/\r\n" }, ["body", "url"]],
      ["subscribed_events empty", { subscribed_events: [] }, ["body", "subscribed_events"]],
      ["subscribed_events naming an unknown type", { subscribed_events: ["contact.exploded"] }, ["body", "subscribed_events", 0]],
      ["is_active as text", { is_active: "false" }, ["body", "is_active"]],
      ["is_active null", { is_active: null }, ["body", "is_active"]],
      ["authorization_header with a line break", { authorization_header: "a\nb" }, ["body", "authorization_header"]],
      ["authorization_header beyond U+00FF", { authorization_header: "Bearer ключ" }, ["body", "authorization_header"]],
      ["authorization_header null", { authorization_header: null }, ["body", "authorization_header"]],
      ["max_retries 16", { max_retries: 16 }, ["body", "max_retries"]],
      ["timeout_seconds 4", { timeout_seconds: 4 }, ["body", "timeout_seconds"]],
      ["timeout_seconds 61", { timeout_seconds: 61 }, ["body", "timeout_seconds"]],
      ["an unknown field", { colour: "blue" }, ["body", "colour"]],
      ["secret_key, which only regenerate-secret changes", { secret_key: "whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA" }, ["body", "secret_key"]],
      ["is_verified, which only verification sets", { is_verified: true }, ["body", "is_verified"]],
      ["status, which is derived", { status: "active" }, ["body", "status"]],
      ["consecutive_failures, which the breaker counts", { consecutive_failures: 0 }, ["body", "consecutive_failures"]],
      ["id, which cannot change", { id: crypto.randomUUID() }, ["body", "id"]],
      ["tenant_id, which cannot change", { tenant_id: crypto.randomUUID() }, ["body", "tenant_id"]]
    ])("answers 422 VALIDATION_ERROR naming the field and changes nothing: %s", async (_, body, loc) => {
      const tenant = await newTenant()
      const { id, endpoint } = await create(tenant, original)
      test.clock.advance(1_000)

      const answer = await tenant.as("PATCH", `/webhook-endpoints/${id}`, { name: "Would change", ...body })
      expect(answer.status).toBe(422)
      expect(answer.body.detail.code).toBe("VALIDATION_ERROR")
      expect(answer.body.detail.errors).toContainEqual({ loc, msg: expect.any(String), type: expect.any(String) })
      expect((await tenant.as("GET", `/webhook-endpoints/${id}`)).body).toEqual(endpoint)
    })

    it("answers 404 RESOURCE_NOT_FOUND for an endpoint that does not exist", async () => {
      const tenant = await newTenant()
      const id = crypto.randomUUID()
      const answer = await tenant.as("PATCH", `/webhook-endpoints/${id}`, { name: "Ghost" })
      expect(answer.status).toBe(404)
      expect(answer.body).toEqual(coded("RESOURCE_NOT_FOUND", `Webhook endpoint ${id} not found`))
    })
  })

  describe("POST /webhook-endpoints/{webhook_id}/regenerate-secret", () => {
    it("answers a new secret, different from the old one, and leaves the settings as they were", async () => {
      const tenant = await newTenant()
      const { id, secret: old, endpoint: before } = await create(tenant, { authorization_header: "Bearer kept" })
      test.clock.advance(5_000)

      const answer = await tenant.as("POST", `/webhook-endpoints/${id}/regenerate-secret`)
      expect(answer.status).toBe(200)
      expect(answer.body).toEqual({ webhook_id: id, secret_key: expect.stringMatching(SIGNING_SECRET), message: expect.any(String) })
      expect(answer.body.secret_key).not.toBe(old)
      expect((await tenant.as("GET", `/webhook-endpoints/${id}`)).body).toEqual({ ...before, updated_at: now() })
      expect(await stored(tenant.tenant_id, id)).toMatchObject({ secret: answer.body.secret_key, authorization_header: "Bearer kept" })
    })

    it("shows neither the old nor the new secret anywhere afterwards", async () => {
      const tenant = await newTenant()
      const { id, secret: old } = await create(tenant)
      const fresh = (await tenant.as("POST", `/webhook-endpoints/${id}/regenerate-secret`)).body.secret_key as string

      for (const answer of [
        await tenant.as("GET", `/webhook-endpoints/${id}`),
        await tenant.as("GET", "/webhook-endpoints"),
        await tenant.as("PATCH", `/webhook-endpoints/${id}`, { name: "After rotation" })
      ]) {
        const text = JSON.stringify(answer.body)
        expect(text).not.toContain(old)
        expect(text).not.toContain(fresh)
      }
    })

    it("gives a different secret each time", async () => {
      const tenant = await newTenant()
      const { id, secret } = await create(tenant)
      const seen = new Set([secret])
      for (let i = 0; i < 3; i++) {
        seen.add((await tenant.as("POST", `/webhook-endpoints/${id}/regenerate-secret`)).body.secret_key)
      }
      expect(seen.size).toBe(4)
    })

    it("answers 404 RESOURCE_NOT_FOUND for an endpoint that does not exist", async () => {
      const tenant = await newTenant()
      const id = crypto.randomUUID()
      const answer = await tenant.as("POST", `/webhook-endpoints/${id}/regenerate-secret`)
      expect(answer.status).toBe(404)
      expect(answer.body).toEqual(coded("RESOURCE_NOT_FOUND", `Webhook endpoint ${id} not found`))
    })
  })

  describe("DELETE /webhook-endpoints/{webhook_id}", () => {
    it("deletes the endpoint: GET then answers 404 RESOURCE_NOT_FOUND and the list is empty", async () => {
      const tenant = await newTenant()
      const { id } = await create(tenant)

      const answer = await tenant.as("DELETE", `/webhook-endpoints/${id}`)
      expect(answer.status).toBe(200)
      expect(answer.body).toEqual({ success: true, message: expect.any(String) })

      const fetched = await tenant.as("GET", `/webhook-endpoints/${id}`)
      expect(fetched.status).toBe(404)
      expect(fetched.body).toEqual(coded("RESOURCE_NOT_FOUND", `Webhook endpoint ${id} not found`))
      expect((await tenant.as("GET", "/webhook-endpoints")).body).toEqual([])
      expect(await stored(tenant.tenant_id, id)).toBeUndefined()
    })

    it("answers 404 RESOURCE_NOT_FOUND when deleting it again, and for its PATCH and regenerate-secret", async () => {
      const tenant = await newTenant()
      const { id } = await create(tenant)
      await tenant.as("DELETE", `/webhook-endpoints/${id}`)

      for (const [method, path, body] of [
        ["DELETE", `/webhook-endpoints/${id}`, undefined],
        ["PATCH", `/webhook-endpoints/${id}`, { name: "Back" }],
        ["POST", `/webhook-endpoints/${id}/regenerate-secret`, undefined]
      ] as const) {
        const answer = await tenant.as(method, path, body)
        expect({ method, path, status: answer.status, body: answer.body })
          .toEqual({ method, path, status: 404, body: coded("RESOURCE_NOT_FOUND") })
      }
    })

    it("deletes only the endpoint named", async () => {
      const tenant = await newTenant()
      const gone = await create(tenant, { name: "gone" })
      const kept = await create(tenant, { name: "kept" })

      await tenant.as("DELETE", `/webhook-endpoints/${gone.id}`)
      expect((await tenant.as("GET", "/webhook-endpoints")).body).toEqual([kept.endpoint])
    })
  })

  describe("tenant isolation", () => {
    it("answers another tenant's key 404 RESOURCE_NOT_FOUND on get, patch, delete and regenerate-secret, changing nothing", async () => {
      const owner = await newTenant()
      const stranger = await newTenant()
      const { id, endpoint } = await create(owner, { authorization_header: "Bearer owner-only" })
      const secretBefore = (await stored(owner.tenant_id, id))!.secret
      test.clock.advance(1_000)

      for (const [method, path, body] of [
        ["GET", `/webhook-endpoints/${id}`, undefined],
        ["PATCH", `/webhook-endpoints/${id}`, { name: "Hijacked", url: "https://attacker.example/", is_active: false, authorization_header: "" }],
        ["POST", `/webhook-endpoints/${id}/regenerate-secret`, undefined],
        ["DELETE", `/webhook-endpoints/${id}`, undefined]
      ] as const) {
        const answer = await stranger.as(method, path, body)
        expect({ method, path, status: answer.status, body: answer.body })
          .toEqual({ method, path, status: 404, body: coded("RESOURCE_NOT_FOUND", `Webhook endpoint ${id} not found`) })
      }

      expect((await stranger.as("GET", "/webhook-endpoints")).body).toEqual([])
      expect((await owner.as("GET", `/webhook-endpoints/${id}`)).body).toEqual(endpoint)
      expect(await stored(owner.tenant_id, id)).toMatchObject({ secret: secretBefore, authorization_header: "Bearer owner-only" })
    })
  })

  describe("scopes", () => {
    /** Every route, the scope it needs, and a body it would accept. */
    const routesOf = (id: string) => [
      ["POST", "/webhook-endpoints", endpointBody(), "webhooks:create"],
      ["GET", "/webhook-endpoints", undefined, "webhooks:read"],
      ["GET", `/webhook-endpoints/${id}`, undefined, "webhooks:read"],
      ["PATCH", `/webhook-endpoints/${id}`, { name: "Changed" }, "webhooks:update"],
      ["POST", `/webhook-endpoints/${id}/regenerate-secret`, undefined, "webhooks:update"],
      ["DELETE", `/webhook-endpoints/${id}`, undefined, "webhooks:delete"]
    ] as const

    it("answers 403 INSUFFICIENT_SCOPE naming the missing scope to a key holding every other webhooks scope", async () => {
      const tenant = await newTenant()
      const { id, endpoint } = await create(tenant)

      for (const [method, path, body, scope] of routesOf(id)) {
        const key = await issueKey(tenant.tenant_id, [...WEBHOOK_SCOPES.filter((s) => s !== scope), "contacts:read"])
        const answer = await test.call(method, path, { token: key.api_key, body })
        expect({ method, path, status: answer.status, body: answer.body }).toEqual({
          method,
          path,
          status: 403,
          body: { detail: { code: "INSUFFICIENT_SCOPE", message: `Missing required permission(s): ${scope}` } }
        })
      }
      expect((await tenant.as("GET", "/webhook-endpoints")).body).toEqual([endpoint])
    })

    it("lets a key holding only a route's scope use that route", async () => {
      const tenant = await newTenant()
      const { id } = await create(tenant)

      for (const [method, path, body, scope] of routesOf(id)) {
        const key = await issueKey(tenant.tenant_id, [scope])
        const answer = await test.call(method, path, { token: key.api_key, body })
        expect({ method, path, status: answer.status }).toEqual({ method, path, status: method === "POST" && body !== undefined ? 201 : 200 })
      }
    })

    it("answers 401 INVALID_TOKEN on every route to an invalid, a malformed or a missing key", async () => {
      const tenant = await newTenant()
      const { id, endpoint } = await create(tenant)
      const invalid = [`ock_${"A".repeat(12)}_${"B".repeat(40)}`, "not-a-key", tenant.user_token, undefined]

      for (const [method, path, body] of routesOf(id)) {
        for (const token of invalid) {
          const answer = await test.call(method, path, { ...(token === undefined ? {} : { token }), body })
          expect({ method, path, token, status: answer.status, body: answer.body })
            .toEqual({ method, path, token, status: 401, body: coded("INVALID_TOKEN") })
          expect(answer.headers.get("www-authenticate")).toBe("Bearer")
        }
      }
      expect((await tenant.as("GET", "/webhook-endpoints")).body).toEqual([endpoint])
    })
  })

  describe("X-Tenant-ID", () => {
    it("lets a parent key create an endpoint in a sub-account, invisible from the parent tenant", async () => {
      const owner = await newTenant()
      const sub = await test.call("POST", "/tenants", { token: owner.user_token, body: { name: "Sub Brand" } })
      expect(sub.status).toBe(201)
      const inSub = { "x-tenant-id": sub.body.id }

      const created = await owner.as("POST", "/webhook-endpoints", endpointBody(), inSub)
      expect(created.status).toBe(201)
      const id = created.body.webhook_id

      const fetched = await owner.as("GET", `/webhook-endpoints/${id}`, undefined, inSub)
      expect(fetched.status).toBe(200)
      expect(fetched.body.tenant_id).toBe(sub.body.id)
      expect((await owner.as("GET", "/webhook-endpoints", undefined, inSub)).body).toEqual([fetched.body])

      expect((await owner.as("GET", "/webhook-endpoints")).body).toEqual([])
      const fromHome = await owner.as("GET", `/webhook-endpoints/${id}`)
      expect(fromHome.status).toBe(404)
      expect(fromHome.body).toEqual(coded("RESOURCE_NOT_FOUND"))
      expect((await owner.as("DELETE", `/webhook-endpoints/${id}`)).status).toBe(404)
      expect((await owner.as("GET", `/webhook-endpoints/${id}`, undefined, inSub)).status).toBe(200)
    })

    it("answers 403 FORBIDDEN for a tenant the key may not act in, and creates nothing there", async () => {
      const owner = await newTenant()
      const stranger = await newTenant()

      const answer = await owner.as("POST", "/webhook-endpoints", endpointBody(), { "x-tenant-id": stranger.tenant_id })
      expect(answer.status).toBe(403)
      expect(answer.body).toEqual(coded("FORBIDDEN"))
      expect((await stranger.as("GET", "/webhook-endpoints")).body).toEqual([])
    })
  })
})
