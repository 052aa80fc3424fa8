import { createHmac } from "node:crypto"
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises"
import { join } from "node:path"
import createClient from "openapi-fetch"
import openapiTS, { astToString } from "openapi-typescript"
import ts from "typescript"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { chatappProvider, makeSimulatedChatPlatform } from "../../adapters/chatapp/index.ts"
import type { Bootstrapped } from "../../src/auth/Operator.ts"
import { testDatabases } from "../support/Databases.ts"
import { ROOT } from "../support/Root.ts"
import { bootstrap, startTestApp, type TestApp } from "../support/TestApp.ts"

// The OpenAPI document as a generated client reads it: types from `openapi-typescript`, a small
// `openapi-fetch` client compiled against them once, and the same client run against the handler.

let test: TestApp
let owner: Bootstrapped
let document: any
beforeAll(async () => {
  test = await startTestApp(await testDatabases.find((d) => d.name === "sqlite-memory")!.open())
  owner = await bootstrap(test)
  document = await (await test.app.handler(new Request("http://test.local/api/v1/openapi.json"))).json()
})
afterAll(() => test.close())

// Compiles with strict settings; every `@ts-expect-error` must meet the error it expects.
const CLIENT = `
import createClient from "openapi-fetch"
import type { components, paths } from "./api.ts"

const client = createClient<paths>({ baseUrl: "http://localhost" })

export const page = () => client.GET("/api/v1/contacts", { params: { query: { page: 2, page_size: 10 } } })
// @ts-expect-error a page size is a number, not its URL text
export const textPage = () => client.GET("/api/v1/contacts", { params: { query: { page_size: "10" } } })
// @ts-expect-error a parameter the route does not document
export const unknown = () => client.GET("/api/v1/contacts", { params: { query: { search: "ada" } } })
export const open = () => client.GET("/api/v1/conversations", { params: { query: { status: "open" } } })
// @ts-expect-error not a conversation status
export const archived = () => client.GET("/api/v1/conversations", { params: { query: { status: "archived" } } })
export const one = (id: string) => client.GET("/api/v1/contacts/{contact_id}", { params: { path: { contact_id: id } } })

type ErrorBody = components["schemas"]["Error"]
/** The machine-readable code of a failure, where its detail has one. */
export const codeOf = (body: ErrorBody): string | undefined =>
  typeof body.detail === "object" && !Array.isArray(body.detail) && "code" in body.detail ? body.detail.code : undefined

export const failure = async (id: string): Promise<string | undefined> => {
  const { error } = await one(id)
  return error === undefined ? undefined : codeOf(error)
}
`

describe("a client generated from GET /api/v1/openapi.json", () => {
  it("compiles against the generated types: numbers, enums and the error body typed as documented", async () => {
    // Inside the project, so the client's imports resolve to its node_modules (`.test-data` is ignored).
    await mkdir(join(ROOT, ".test-data"), { recursive: true })
    const dir = await mkdtemp(join(ROOT, ".test-data", "openapi-client-"))
    try {
      await writeFile(join(dir, "api.ts"), astToString(await openapiTS(document)))
      await writeFile(join(dir, "client.ts"), CLIENT)
      const program = ts.createProgram([join(dir, "client.ts")], {
        strict: true,
        noEmit: true,
        target: ts.ScriptTarget.ES2022,
        module: ts.ModuleKind.NodeNext,
        moduleResolution: ts.ModuleResolutionKind.NodeNext,
        allowImportingTsExtensions: true,
        skipLibCheck: true,
        types: [],
        lib: ["lib.es2022.d.ts", "lib.dom.d.ts"]
      })
      // The client file's diagnostics only: the generated file is checked as far as the client uses it.
      const client = program.getSourceFile(join(dir, "client.ts"))!
      const found = [...program.getOptionsDiagnostics(), ...program.getSyntacticDiagnostics(), ...program.getSemanticDiagnostics(client)]
      const diagnostics = found.map((d) =>
        `${d.file?.fileName.slice(dir.length + 1) ?? ""} ${ts.flattenDiagnosticMessageText(d.messageText, "\n")}`
      )
      expect(diagnostics).toEqual([])
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })

  it("sends numbers as the URL text the handler reads", async () => {
    const client = createClient<any>({
      baseUrl: "http://test.local",
      headers: { authorization: `Bearer ${owner.api_key}` },
      fetch: (request: Request) => test.app.handler(request)
    })
    const { data, response } = await client.GET("/api/v1/contacts", { params: { query: { page: 1, page_size: 10 } } })
    expect(response.status).toBe(200)
    expect(data.pagination).toMatchObject({ page: 1, page_size: 10 })
  })

  it("types page sizes as integers, enums as enums, ids as UUIDs, and names its server", () => {
    const list = document.paths["/api/v1/contacts"].get.parameters
    expect(list).toContainEqual(expect.objectContaining({ name: "page_size", in: "query", schema: expect.objectContaining({ type: "integer", minimum: 1 }) }))
    const conversations = document.paths["/api/v1/conversations"].get.parameters
    expect(conversations).toContainEqual(expect.objectContaining({ name: "status", schema: { type: "string", enum: ["open", "closed"] } }))
    expect(conversations).toContainEqual(expect.objectContaining({ name: "contact_id", schema: { type: "string", format: "uuid" } }))
    for (const operations of Object.values<any>(document.paths)) {
      for (const operation of Object.values<any>(operations)) {
        for (const parameter of operation.parameters.filter((p: any) => p.in === "path")) {
          expect(parameter.schema, `${operation.operationId} ${parameter.name}`).toEqual({ type: "string", format: "uuid" })
        }
      }
    }
    expect(document.servers).toEqual([{ url: "/", description: expect.stringContaining("/api/v1") }])
  })

  it("refers every operation's failures to the one Error schema", () => {
    let failures = 0
    for (const operations of Object.values<any>(document.paths)) {
      for (const operation of Object.values<any>(operations)) {
        for (const [status, response] of Object.entries<any>(operation.responses)) {
          if (Number(status) < 400) continue
          const schema = response.content["application/json"].schema
          const refs = schema.anyOf === undefined ? [schema.$ref] : schema.anyOf.map((s: any) => s.$ref)
          expect(refs, `${operation.operationId} ${status}`).toContain("#/components/schemas/Error")
          failures++
        }
      }
    }
    expect(failures).toBeGreaterThan(100)
    expect(document.components.schemas.ErrorDetail).toMatchObject({ required: ["code", "message"] })
  })
})

// Ids in answers: a generated client reads `format: uuid` as "this is an id the service made".

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

/**
 * Id-named answer fields that are not UUIDs the library made, each with why. `where` narrows an entry
 * to the operations (by operationId) and places (by the field's path in the answer) it covers.
 */
const NOT_UUIDS: ReadonlyArray<{ readonly name: string; readonly why: string; readonly operation?: RegExp; readonly path?: RegExp }> = [
  { name: "external_id", why: "the operator's: a channel's number id, a message's wamid" },
  { name: "meta_flow_id", why: "the platform's flow id, digits" },
  { name: "fbtrace_id", why: "the operator's trace id of a failed request" },
  { name: "content_id", why: "an email file's Content-ID (a received one is the sender's)" },
  { name: "pricing_model_id", why: "the caller's text, kept as given" },
  { name: "filtered_channel_ids", why: "the caller's text (up to 64 characters), matched as given" },
  { name: "filtered_email_integration_ids", why: "the caller's text (up to 64 characters), matched as given" },
  { name: "template_id", why: "on a template, the operator's template id", operation: /^(adoptLibraryTemplate|listTemplates|getTemplate)$/ },
  { name: "id", why: "a library entry's id is the operator's", operation: /^browseTemplateLibrary$/, path: /^items\[\]\.id$/ },
  { name: "id", why: "a flow screen's id is the caller's", path: /screens\[\]\.id$/ }
]

type Schema = { readonly [key: string]: any }

/** Every property of `schema` (through objects, arrays and unions) as [path, name, its schema]. */
const propertiesOf = (schema: Schema, path = ""): Array<readonly [string, string, Schema]> => {
  const found: Array<readonly [string, string, Schema]> = []
  for (const branch of [...(schema.anyOf ?? []), ...(schema.oneOf ?? []), ...(schema.allOf ?? [])]) found.push(...propertiesOf(branch, path))
  if (schema.items !== undefined) found.push(...propertiesOf(schema.items, `${path}[]`))
  for (const [name, property] of Object.entries<Schema>(schema.properties ?? {})) {
    const at = path === "" ? name : `${path}.${name}`
    found.push([at, name, property], ...propertiesOf(property, at))
  }
  return found
}

/** Whether `schema` says UUID: itself, its array's items, or a non-null branch of a nullable. */
const isUuidSchema = (schema: Schema): boolean => {
  if (schema.anyOf !== undefined) {
    const branches = schema.anyOf.filter((b: Schema) => b.type !== "null")
    return branches.length > 0 && branches.every(isUuidSchema)
  }
  if (schema.type === "array") return isUuidSchema(schema.items ?? {})
  return schema.type === "string" && schema.format === "uuid"
}

/** Each string of `value` that `schema` marks `format: uuid`, with where it is. */
const uuidValuesIn = (schema: Schema, value: unknown, path = ""): Array<readonly [string, string]> => {
  if (schema.anyOf !== undefined) {
    return schema.anyOf.flatMap((branch: Schema) => (fits(branch, value) ? uuidValuesIn(branch, value, path) : []))
  }
  if (typeof value === "string") return schema.format === "uuid" ? [[path, value]] : []
  if (Array.isArray(value)) return value.flatMap((item, i) => uuidValuesIn(schema.items ?? {}, item, `${path}[${i}]`))
  if (value !== null && typeof value === "object") {
    return Object.entries<Schema>(schema.properties ?? {}).flatMap(([name, property]) =>
      name in value ? uuidValuesIn(property, (value as Record<string, unknown>)[name], path === "" ? name : `${path}.${name}`) : []
    )
  }
  return []
}
const fits = (schema: Schema, value: unknown): boolean =>
  schema.type === undefined ||
  (value === null ? schema.type === "null" : Array.isArray(value) ? schema.type === "array" : typeof value === "object" ? schema.type === "object" : schema.type === typeof value || (schema.type === "integer" && typeof value === "number"))

/** The answer schemas of every operation: [operationId, status, schema]. */
const answerSchemas = (doc: any): Array<readonly [string, string, Schema]> =>
  Object.values<any>(doc.paths).flatMap((operations) =>
    Object.values<any>(operations).flatMap((operation) =>
      Object.entries<any>(operation.responses).flatMap(([status, response]) => {
        const schema = response.content?.["application/json"]?.schema
        return schema === undefined ? [] : [[operation.operationId as string, status, schema as Schema] as const]
      })
    )
  )

describe("ids in the document's answers", () => {
  it("mark every `id` and `*_id(s)` field `format: uuid`, but for the listed ids another system or the caller chose", () => {
    const unmarked = new Set<string>()
    let marked = 0
    for (const [operation, status, schema] of answerSchemas(document)) {
      for (const [path, name, property] of propertiesOf(schema)) {
        if (!/(^id|_ids?)$/.test(name)) continue
        if (isUuidSchema(property)) {
          marked++
          continue
        }
        const listed = NOT_UUIDS.some((entry) =>
          entry.name === name && (entry.operation?.test(operation) ?? true) && (entry.path?.test(path) ?? true))
        if (!listed) unmarked.add(`${operation} ${status} ${path}`)
      }
    }
    expect([...unmarked]).toEqual([])
    expect(marked).toBeGreaterThan(300)
  })

  it("leave no listed exception unused: each names a field some answer has, not marked uuid", () => {
    for (const entry of NOT_UUIDS) {
      const uses = answerSchemas(document).flatMap(([operation, , schema]) =>
        propertiesOf(schema).filter(([path, name]) =>
          name === entry.name && (entry.operation?.test(operation) ?? true) && (entry.path?.test(path) ?? true)))
      expect(uses.length, entry.name).toBeGreaterThan(0)
      for (const [path, , property] of uses) expect(isUuidSchema(property), `${entry.name} at ${path}`).toBe(false)
    }
  })
})

// SQLite and, with PG_URL, PostgreSQL: the ids an answer marks uuid are UUIDs as stored and read back.
const databases = testDatabases.filter((database) => database.name === "sqlite-memory" || database.name === "postgres")
const APP_SECRET = "app-secret-for-openapi-id-tests"

describe.each(databases)("answers whose document marks ids uuid ($name)", (database) => {
  let app: TestApp
  let doc: any
  beforeAll(async () => {
    const platform = makeSimulatedChatPlatform()
    app = await startTestApp(await database.open(), {
      chatPlatform: platform,
      providers: { chatapp: chatappProvider(platform) },
      chatappWebhook: { appSecret: APP_SECRET, verifyToken: "verify" }
    })
    doc = await (await app.app.handler(new Request("http://test.local/api/v1/openapi.json"))).json()
  })
  afterAll(() => app?.close())

  it("carry UUIDs there: contacts, conversations, messages, channels, campaigns and what they lead to", async () => {
    const { api_key: key, tenant_id: tenantId } = await bootstrap(app, "openapi-ids@example.com")
    const phoneNumberId = "106540352299001"
    const businessAccountId = "102290129349001"
    await app.operator((operator) =>
      operator.createChannel({
        tenantId,
        type: "chatapp",
        inputs: { phone_number_id: phoneNumberId, business_account_id: businessAccountId, access_token: "EAAGopenapiidstesttoken000001" }
      })
    )
    // A customer writes: a contact, a conversation and a message, made as the service makes them.
    const raw = JSON.stringify({
      object: "whatsapp_business_account",
      entry: [{
        id: businessAccountId,
        changes: [{
          field: "messages",
          value: {
            messaging_product: "whatsapp",
            metadata: { display_phone_number: "15551234567", phone_number_id: phoneNumberId },
            contacts: [{ profile: { name: "Ana" }, wa_id: "34600009001" }],
            messages: [{ from: "34600009001", id: "wamid.openapi-ids-1", timestamp: String(Math.floor(app.clock.nowMillis() / 1000)), type: "text", text: { body: "hola" } }]
          }
        }]
      }]
    })
    const delivered = await app.app.handler(new Request("http://test.local/webhooks/chatapp", {
      method: "POST",
      headers: { "content-type": "application/json", "x-hub-signature-256": `sha256=${createHmac("sha256", APP_SECRET).update(raw).digest("hex")}` },
      body: raw
    }))
    expect(delivered.status).toBe(200)
    await app.app.drainDueWork()

    /** Calls the API, checks the status, and checks the answer against the document's schema for it. */
    const checked = async (method: string, path: string, documented: string, status: number, body?: unknown) => {
      const answer = await app.call(method, path, { token: key, ...(body === undefined ? {} : { body }) })
      expect(answer.status, `${method} ${path}: ${JSON.stringify(answer.body)}`).toBe(status)
      const schema = doc.paths[`/api/v1${documented}`][method.toLowerCase()].responses[String(status)].content["application/json"].schema
      const ids = uuidValuesIn(schema, answer.body)
      for (const [at, value] of ids) expect(value, `${method} ${documented} ${at}`).toMatch(UUID)
      return { body: answer.body, ids: ids.map(([at]) => at.replace(/\[\d+\]/g, "[]")) }
    }

    const contacts = await checked("GET", "/contacts", "/contacts", 200)
    const contact = contacts.body.items[0]
    expect(contacts.ids).toEqual(expect.arrayContaining(["items[].id", "items[].tenant_id"]))
    expect((await checked("GET", `/contacts/${contact.id}`, "/contacts/{contact_id}", 200)).ids).toEqual(["id", "tenant_id"])
    const channels = await checked("GET", "/channels", "/channels", 200)
    expect(channels.ids).toEqual(expect.arrayContaining(["items[].id", "items[].tenant_id"]))
    const channelId = channels.body.items[0].id
    const conversations = await checked("GET", "/conversations", "/conversations", 200)
    expect(conversations.ids).toEqual(expect.arrayContaining(["items[].id", "items[].tenant_id", "items[].channel_id", "items[].contact_id"]))
    const conversationId = conversations.body.items[0].id
    const sent = await checked("POST", "/messages", "/messages", 201, { conversation_id: conversationId, message_type: "text", text: "hello" })
    expect(sent.ids).toEqual(expect.arrayContaining(["id", "tenant_id", "conversation_id", "channel_id", "contact_id"]))
    const messages = await checked("GET", `/messages?conversation_id=${conversationId}`, "/messages", 200)
    expect(messages.body.items).toHaveLength(2)
    expect(messages.ids.filter((at) => at === "items[].contact_id")).toHaveLength(2)
    await checked("GET", `/messages/${sent.body.id}`, "/messages/{message_id}", 200)

    const adopted = await checked("POST", "/chatapp-templates/library/adopt", "/chatapp-templates/library/adopt", 201, {
      channel_id: channelId,
      library_template_name: "verification_code_1",
      button_inputs: [{ type: "OTP", otp_type: "COPY_CODE" }]
    })
    expect(adopted.ids).toEqual(["id"])
    const campaign = await checked("POST", "/campaigns", "/campaigns", 201, {
      name: "Ids",
      channel_ids: [channelId],
      template_id: adopted.body.id,
      variable_values: ["482913"],
      audience: { contact_ids: [contact.id] }
    })
    expect(campaign.ids).toEqual(["id", "tenant_id", "channel_ids[]", "template_id", "audience.contact_ids[]"])
    expect((await checked("GET", "/campaigns", "/campaigns", 200)).ids).toContain("items[].template_id")
    expect((await checked("GET", `/campaigns/${campaign.body.id}/statistics`, "/campaigns/{campaign_id}/statistics", 200)).ids)
      .toEqual(expect.arrayContaining(["campaign_id", "throughput[].channel_id"]))
    expect((await checked("GET", `/campaigns/${campaign.body.id}/warmup-check`, "/campaigns/{campaign_id}/warmup-check", 200)).ids)
      .toEqual(["channels[].channel_id"])
    expect((await checked("GET", "/events", "/events", 200)).ids).toEqual(expect.arrayContaining(["items[].id", "items[].event_id", "items[].tenant_id"]))
  })
})
