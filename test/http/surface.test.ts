import { Validator } from "@seriousme/openapi-schema-validator"
import { Effect, Schema } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { routes } from "../../src/app/Omnichannel.ts"
import type { Bootstrapped } from "../../src/auth/Operator.ts"
import { makeApiHandler } from "../../src/http/ApiHandler.ts"
import { bodyIsOptional, route } from "../../src/http/Route.ts"
import { StorageError } from "../../src/kernel/StorageError.ts"
import { testDatabases } from "../support/Databases.ts"
import { bootstrap, startTestApp, type TestApp } from "../support/TestApp.ts"

const MiB = 1024 * 1024

let test: TestApp
let owner: Bootstrapped
beforeAll(async () => {
  test = await startTestApp(await testDatabases.find((d) => d.name === "sqlite-memory")!.open())
  owner = await bootstrap(test)
})
afterAll(() => test.close())

/** Sends a raw request, so headers and body are exactly what the test says. */
const send = async (path: string, init: RequestInit = {}) => {
  const response = await test.app.handler(new Request(`http://test.local${path}`, init))
  const text = await response.text()
  return { status: response.status, headers: response.headers, body: JSON.parse(text) }
}

const postContact = (body: BodyInit, contentType = "application/json") =>
  send("/api/v1/contacts", {
    method: "POST",
    headers: { authorization: `Bearer ${owner.api_key}`, "content-type": contentType },
    body
  })

describe("routing", () => {
  it.each(["/api/v1/nope", "/api/v1/contacts/a/b", "/api/v1", "/api/v2/contacts", "/contacts", "/api/v1/%E0%A4%A"])(
    "answers 404 {detail: {code: 'not_found', message: 'Not Found'}} for %s",
    async (path) => {
      const answer = await send(path, { headers: { authorization: `Bearer ${owner.api_key}` } })
      expect(answer.status).toBe(404)
      expect(answer.body).toEqual({ detail: { code: "not_found", message: "Not Found" } })
    }
  )

  it.each([
    ["DELETE", "/contacts", ["GET", "POST"]],
    ["PUT", "/contacts/00000000-0000-4000-8000-000000000000", ["DELETE", "GET", "PATCH"]],
    ["DELETE", "/tenants", ["GET", "POST"]]
  ])("answers 405 with an Allow header to %s %s", async (method, path, allowed) => {
    const answer = await send(`/api/v1${path}`, { method, headers: { authorization: `Bearer ${owner.api_key}` } })
    expect(answer.status).toBe(405)
    expect(answer.body).toEqual({ detail: { code: "method_not_allowed", message: "Method Not Allowed" } })
    expect(answer.headers.get("allow")?.split(/,\s*/).sort()).toEqual(allowed)
  })

  it("ignores a trailing slash", async () => {
    expect((await test.call("GET", "/contacts/", { token: owner.api_key })).status).toBe(200)
  })
})

describe("failures inside an operation", () => {
  // A route of its own per failure: storage that may come back, storage that will not, and a defect.
  const failing = (path: string, fail: Effect.Effect<never, StorageError>) =>
    route({
      method: "GET",
      path,
      operationId: path.slice(1),
      summary: "Fails",
      tag: "Test",
      auth: { kind: "api_key", scopes: ["contacts:read"] },
      response: { status: 200, schema: Schema.Struct({}), description: "never" },
      handle: () => fail
    })
  const call = async (path: string) => {
    const handler = await test.app.run(makeApiHandler([
      failing("/unavailable", Effect.fail(new StorageError({ reason: "Unavailable", message: "database is down" }))),
      failing("/unknown", Effect.fail(new StorageError({ reason: "Unknown", message: "disk on fire" }))),
      failing("/defect", Effect.die(new Error("a bug")))
    ], { title: "test", version: "0" }))
    const response = await handler(new Request(`http://test.local/api/v1${path}`, { headers: { authorization: `Bearer ${owner.api_key}` } }))
    return { status: response.status, retryAfter: response.headers.get("retry-after"), body: await response.json() }
  }

  it("answers storage that may come back 503 storage_unavailable with Retry-After, and says nothing of the cause", async () => {
    expect(await call("/unavailable")).toEqual({
      status: 503,
      retryAfter: "1",
      body: { detail: { code: "storage_unavailable", message: "Storage is temporarily unavailable; retry shortly" } }
    })
  })

  it.each(["/unknown", "/defect"])("answers %s 500 internal_error, and says nothing of the cause", async (path) => {
    expect(await call(path)).toEqual({
      status: 500,
      retryAfter: null,
      body: { detail: { code: "internal_error", message: "Internal server error" } }
    })
  })
})

describe("request bodies", () => {
  it.each(["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/jsonp", "json"])(
    "answers 415 for Content-Type %s",
    async (contentType) => {
      const answer = await postContact(JSON.stringify({ name: "Ada" }), contentType)
      expect(answer.status).toBe(415)
      expect(answer.body).toEqual({ detail: { code: "unsupported_media_type", message: "Content-Type must be application/json" } })
    }
  )

  it("answers 415 when no Content-Type is sent", async () => {
    const answer = await send("/api/v1/contacts", {
      method: "POST",
      headers: { authorization: `Bearer ${owner.api_key}` },
      body: new Uint8Array(new TextEncoder().encode(JSON.stringify({ name: "Ada" })))
    })
    expect(answer.status).toBe(415)
  })

  // Routes whose body requires no field: a request may leave the body out entirely (`POST /campaigns/{id}/resume`).
  const optional = routes.filter((route) => route.body !== undefined && bodyIsOptional(route.body))
  const UNKNOWN = "00000000-0000-4000-8000-000000000000"

  it("knows which bodies are optional: those whose every field may be left out", () => {
    expect(optional.map((route) => `${route.method} ${route.path}`).sort()).toEqual([
      "PATCH /campaigns/{campaign_id}",
      "PATCH /contacts/{contact_id}",
      "PATCH /lists/{list_id}",
      "PATCH /webhook-endpoints/{webhook_id}",
      "POST /campaigns/{campaign_id}/resume",
      "POST /campaigns/{campaign_id}/send",
      "POST /contacts"
    ])
  })

  it.each(optional.map((route) => [`${route.method} ${route.path}`, route] as const))(
    "%s takes a request with no body and no Content-Type, read as {}",
    async (_, route) => {
      const answer = await send(`/api/v1${route.path.replace(/\{\w+\}/g, UNKNOWN)}`, {
        method: route.method,
        headers: { authorization: `Bearer ${owner.api_key}` }
      })
      // Past the body: the route's own answer for {} (an unknown id, or a contact with nothing to hold).
      if (route.path.includes("{")) expect(answer.status, JSON.stringify(answer.body)).toBe(404)
      else expect(answer.body).toEqual({ detail: [{ loc: ["body"], msg: "Give at least one of name, phone or email", type: "missing" }] })
    }
  )

  it("reads an optional body sent empty as JSON as {}, and still answers 415 for a body that is there but not JSON", async () => {
    const resume = (init: RequestInit) =>
      send(`/api/v1/campaigns/${UNKNOWN}/resume`, { method: "POST", ...init, headers: { authorization: `Bearer ${owner.api_key}`, ...init.headers } })
    expect((await resume({ headers: { "content-type": "application/json" }, body: "" })).status).toBe(404)
    expect((await resume({ headers: { "content-type": "application/json" }, body: " \n" })).status).toBe(404)
    expect(await resume({ headers: { "content-type": "text/plain" }, body: "{}" })).toMatchObject({
      status: 415,
      body: { detail: { code: "unsupported_media_type", message: "Content-Type must be application/json" } }
    })
    expect((await resume({ body: new TextEncoder().encode("{}") })).status).toBe(415)
    expect((await resume({ headers: { "content-type": "application/json" }, body: "{" })).body.detail[0]).toMatchObject({ type: "json_invalid" })
  })

  it("still answers 415 to a request without a body where the body is required", async () => {
    const answer = await send("/api/v1/lists", { method: "POST", headers: { authorization: `Bearer ${owner.api_key}` } })
    expect(answer.status).toBe(415)
  })

  it.each(["application/json; charset=utf-8", "Application/JSON", "application/merge-patch+json"])(
    "accepts JSON sent as %s",
    async (contentType) => {
      expect((await postContact(JSON.stringify({ name: "Ada" }), contentType)).status).toBe(201)
    }
  )

  it("answers 413 for a body over 1 MiB", async () => {
    const answer = await postContact(JSON.stringify({ name: "x".repeat(MiB) }))
    expect(answer.status).toBe(413)
    expect(answer.body).toEqual({ detail: { code: "payload_too_large", message: `Request body too large; the limit is ${MiB} bytes` } })
  })

  it("reads a body just under 1 MiB, then validates it", async () => {
    const answer = await postContact(JSON.stringify({ name: "x".repeat(MiB - 20) }))
    expect(answer.status).toBe(422)
    expect(answer.body.detail).toContainEqual(expect.objectContaining({ loc: ["body", "name"] }))
  })

  it.each([
    ["malformed JSON", "{\"name\": ", "json_invalid"],
    ["a trailing comma", "{\"name\": \"Ada\",}", "json_invalid"],
    ["an empty body", "", "missing"],
    ["only whitespace", "  \n", "missing"]
  ])("answers 422 at loc [body] for %s", async (_, body, type) => {
    const answer = await postContact(body)
    expect(answer.status).toBe(422)
    expect(answer.body).toEqual({ detail: [{ loc: ["body"], msg: expect.any(String), type }] })
  })

  it("answers 422 json_invalid for a body that is not UTF-8", async () => {
    const answer = await postContact(new Uint8Array([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x7d]))
    expect(answer.status).toBe(422)
    expect(answer.body.detail).toEqual([{ loc: ["body"], msg: "The body is not valid UTF-8", type: "json_invalid" }])
  })

  it.each([["an array", "[]"], ["null", "null"], ["a string", "\"Ada\""], ["a number", "42"]])(
    "answers 422 type_error for %s instead of an object",
    async (_, body) => {
      const answer = await postContact(body)
      expect(answer.status).toBe(422)
      expect(answer.body.detail).toEqual([{ loc: ["body"], msg: expect.any(String), type: "type_error" }])
    }
  )

  it("answers 422 extra_forbidden naming each unknown field", async () => {
    const answer = await postContact(JSON.stringify({ name: "Ada", nickname: "A", __proto__x: 1 }))
    expect(answer.status).toBe(422)
    expect(answer.body.detail).toEqual(expect.arrayContaining([
      { loc: ["body", "nickname"], msg: "Unknown field", type: "extra_forbidden" },
      { loc: ["body", "__proto__x"], msg: "Unknown field", type: "extra_forbidden" }
    ]))
  })

  it.each([
    ["U+0000 in a field", "{\"name\":\"Ada\\u0000\"}", ["body", "name"]],
    ["an unpaired surrogate in a custom field", "{\"name\":\"Ada\",\"custom_fields\":{\"note\":\"\\ud800\"}}", ["body", "custom_fields", "note"]],
    ["U+0000 in an unknown field's key", "{\"name\":\"Ada\",\"a\\u0000\":1}", ["body", "a\u0000"]]
  ])("answers 422 string_unicode for %s, text no database stores faithfully", async (_, body, loc) => {
    const answer = await postContact(body)
    expect(answer.status).toBe(422)
    expect(answer.body.detail).toEqual([{ loc, msg: expect.any(String), type: "string_unicode" }])
  })

  it("keeps a surrogate pair (an emoji) intact", async () => {
    const answer = await postContact(JSON.stringify({ name: "Ada \u{1F680}" }))
    expect(answer.status).toBe(201)
    expect(answer.body.name).toBe("Ada \u{1F680}")
  })

  it("answers 422, not a crash, for JSON nested far deeper than the call stack", async () => {
    const depth = 200_000
    const answer = await postContact(`{"name":"Ada","custom_fields":{"deep":${"[".repeat(depth)}${"]".repeat(depth)}}}`)
    expect(answer.status).toBe(422)
    expect(answer.body.detail).toContainEqual(expect.objectContaining({ loc: ["body", "custom_fields", "deep"] }))
  })
})

describe("query parameters", () => {
  const UNKNOWN_ID = "00000000-0000-4000-8000-000000000000"
  const issuesOf = (body: any): Array<{ loc: Array<string | number>; type: string }> =>
    Array.isArray(body?.detail) ? body.detail : Array.isArray(body?.detail?.errors) ? body.detail.errors : []

  it("refuses an unknown parameter with 422 extra_forbidden naming it, as an unknown body field is", async () => {
    const answer = await test.call("GET", "/contacts?search=ada&page_size=5&sort=name", { token: owner.api_key })
    expect(answer.status).toBe(422)
    expect(answer.body).toEqual({
      detail: expect.arrayContaining([
        { loc: ["query", "search"], msg: "Unknown field", type: "extra_forbidden" },
        { loc: ["query", "sort"], msg: "Unknown field", type: "extra_forbidden" }
      ])
    })
    expect(answer.body.detail).toHaveLength(2)
  })

  it("refuses any parameter on a route that declares none", async () => {
    const created = await test.call("POST", "/contacts", { token: owner.api_key, body: { name: "Query" } })
    const answer = await test.call("GET", `/contacts/${created.body.id}?expand=lists`, { token: owner.api_key })
    expect(answer).toMatchObject({ status: 422, body: { detail: [{ loc: ["query", "expand"], msg: "Unknown field", type: "extra_forbidden" }] } })
    expect((await test.call("GET", `/contacts/${created.body.id}`, { token: owner.api_key })).status).toBe(200)
  })

  it("refuses an unknown parameter in the webhook routes' coded form", async () => {
    const answer = await test.call("GET", `/webhook-endpoints/${UNKNOWN_ID}/deliveries?since=yesterday`, { token: owner.api_key })
    expect(answer.status).toBe(422)
    expect(answer.body.detail).toMatchObject({
      code: "VALIDATION_ERROR",
      errors: [{ loc: ["query", "since"], msg: "Unknown field", type: "extra_forbidden" }]
    })
  })

  it("still authenticates first: no credential is 401 whatever the query", async () => {
    expect((await test.call("GET", "/contacts?search=x")).status).toBe(401)
  })

  // Every GET route takes every query parameter its OpenAPI operation documents, each sent alone
  // (with the required ones) with a value its documented schema allows.
  const sample = (schema: any): string => {
    if (Array.isArray(schema.enum)) return String(schema.enum[0])
    if (schema.type === "integer" || schema.type === "number") return String(schema.minimum ?? 1)
    if (schema.type === "boolean") return "true"
    if (schema.format === "uuid") return UNKNOWN_ID
    return "x".repeat(Math.max(1, schema.minLength ?? 1))
  }
  it("accepts every documented parameter of every GET route", async () => {
    const document = (await send("/api/v1/openapi.json")).body
    let sent = 0
    for (const [path, operations] of Object.entries<any>(document.paths)) {
      const operation = operations.get
      if (operation === undefined) continue
      const query = operation.parameters.filter((p: any) => p.in === "query")
      const required = query.filter((p: any) => p.required)
      const target = path.replace(/\{\w+\}/g, UNKNOWN_ID)
      for (const parameter of query.length === 0 ? [undefined] : query) {
        const params = new URLSearchParams()
        for (const p of new Set([...required, ...(parameter === undefined ? [] : [parameter])])) params.set(p.name, sample(p.schema))
        const token = operation.security[0].userToken === undefined ? owner.api_key : owner.user_token
        const answer = await send(`${target}?${params}`, { headers: { authorization: `Bearer ${token}` } })
        const label = `GET ${target}?${params} -> ${answer.status} ${JSON.stringify(answer.body)}`
        expect(answer.status, label).not.toBe(401)
        expect(issuesOf(answer.body).filter((issue) => issue.loc[0] === "query"), label).toEqual([])
        sent++
      }
    }
    expect(sent).toBeGreaterThan(40)
  })
})

describe("every answer", () => {
  it.each([
    ["201", () => test.call("POST", "/contacts", { token: owner.api_key, body: { name: "Ada" } })],
    ["200", () => test.call("GET", "/contacts", { token: owner.api_key })],
    ["401", () => test.call("GET", "/contacts")],
    ["403", () => test.call("GET", "/contacts", { token: owner.api_key, headers: { "x-tenant-id": "other" } })],
    ["404", () => test.call("GET", "/nope", { token: owner.api_key })],
    ["405", () => test.call("DELETE", "/contacts", { token: owner.api_key })],
    ["415", () => test.call("POST", "/contacts", { token: owner.api_key, body: "x", headers: { "content-type": "text/plain" } })],
    ["422", () => test.call("POST", "/contacts", { token: owner.api_key, body: {} })]
  ])("is JSON and carries cache-control: no-store (%s)", async (status, call) => {
    const answer = await call()
    expect(String(answer.status)).toBe(status)
    expect(answer.headers.get("content-type")).toMatch(/^application\/json/)
    expect(answer.headers.get("cache-control")).toBe("no-store")
  })
})

describe("GET /api/v1/openapi.json", () => {
  type Operation = {
    operationId: string
    parameters: Array<{ name: string; in: string; required: boolean }>
    requestBody?: { content: { "application/json": { schema: { type: string; properties: Record<string, unknown>; additionalProperties: unknown } } } }
    responses: Record<string, unknown>
  }
  type Document = { openapi: string; paths: Record<string, Record<string, Operation>>; components: unknown }
  let document: Document

  beforeAll(async () => {
    const answer = await send("/api/v1/openapi.json")
    expect(answer.status).toBe(200)
    expect(answer.headers.get("content-type")).toMatch(/^application\/json/)
    document = answer.body
  })

  it("is served without a credential as OpenAPI 3.1.0", () => {
    expect(document.openapi).toBe("3.1.0")
  })

  it("passes an OpenAPI 3.1 validator", async () => {
    const validator = new Validator()
    const result = await validator.validate(structuredClone(document))
    expect(result.errors ?? []).toEqual([])
    expect({ valid: result.valid, version: validator.version }).toEqual({ valid: true, version: "3.1" })
  })

  it("would fail that validator with a response that has no description", async () => {
    const broken = structuredClone(document) as unknown as {
      paths: Record<string, Record<string, { responses: Record<string, { description?: string }> }>>
    }
    delete Object.values(Object.values(broken.paths)[0]!)[0]!.responses["401"]!.description

    const result = await new Validator().validate(broken)
    expect(result.valid).toBe(false)
    expect(JSON.stringify(result.errors)).toContain("must have required property 'description'")
  })

  it("describes exactly the routes the handler serves", () => {
    const documented = Object.entries(document.paths)
      .flatMap(([path, operations]) => Object.keys(operations).map((method) => `${method.toUpperCase()} ${path}`))
    const served = routes.map((route) => `${route.method} /api/v1${route.path}`)
    expect(documented.sort()).toEqual(served.sort())
  })

  it.each(routes.map((route) => [`${route.method} ${route.path}`, route] as const))("documents %s", (_, route) => {
    const operation = document.paths[`/api/v1${route.path}`]![route.method.toLowerCase()]!
    expect(operation.operationId).toBe(route.operationId)
    expect(Object.keys(operation.responses)).toContain(String(route.response.status))
    expect(Object.keys(operation.responses)).toContain("401")
    for (const [, name] of route.path.matchAll(/\{(\w+)\}/g)) {
      expect(operation.parameters).toContainEqual(expect.objectContaining({ name, in: "path", required: true }))
    }
    if (route.rawBody !== undefined) {
      // A body the handler reads itself (a multipart upload): documented with its own media type.
      expect(Object.keys(operation.requestBody!.content)).toEqual([route.rawBody.contentType])
      expect((operation.requestBody as { readonly required?: boolean }).required).toBe(true)
    } else if (route.body === undefined) {
      expect(operation.requestBody).toBeUndefined()
    } else {
      const schema = operation.requestBody!.content["application/json"].schema
      expect(schema.type).toBe("object")
      expect(Object.keys(schema.properties).length).toBeGreaterThan(0)
      // The handler rejects unknown fields, so the document must not invite them.
      expect(schema.additionalProperties).toBe(false)
      // A body whose every field is optional may be left out.
      expect((operation.requestBody as { readonly required?: boolean }).required).toBe(!bodyIsOptional(route.body))
    }
  })

  it("has no $ref that points nowhere", () => {
    const refs = JSON.stringify(document).match(/"\$ref":"[^"]*"/g) ?? []
    for (const ref of refs) {
      const pointer = JSON.parse(`{${ref}}`).$ref as string
      expect(pointer.startsWith("#/")).toBe(true)
      const target = pointer.slice(2).split("/").reduce<unknown>(
        (node, key) => (node as Record<string, unknown> | undefined)?.[key.replaceAll("~1", "/").replaceAll("~0", "~")],
        document
      )
      expect(target, pointer).toBeDefined()
    }
  })
})
