import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises"
import { join } from "node:path"
import createClient from "openapi-fetch"
import openapiTS, { astToString } from "openapi-typescript"
import ts from "typescript"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
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
