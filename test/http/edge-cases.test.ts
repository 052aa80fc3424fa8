import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { testDatabases } from "../support/Databases.ts"
import { bootstrap, startTestApp, type TestApp } from "../support/TestApp.ts"

let test: TestApp
beforeAll(async () => {
  test = await startTestApp(await testDatabases.find((d) => d.name === "sqlite-memory")!.open())
})
afterAll(() => test.close())

describe("query numbers", () => {
  it.each(["0x10", " 1", "1e1", "1.0", "-1", ""])("refuses page_size %j: only plain digits are numbers", async (value) => {
    const boot = await bootstrap(test)
    const answer = await test.call("GET", `/contacts?page_size=${encodeURIComponent(value)}`, { token: boot.api_key })
    expect(answer.status).toBe(422)
    expect(answer.body.detail[0].loc).toEqual(["query", "page_size"])
  })

  it("reads page_size=10 as ten", async () => {
    const boot = await bootstrap(test)
    const answer = await test.call("GET", "/contacts?page_size=10", { token: boot.api_key })
    expect(answer.body.pagination.page_size).toBe(10)
  })
})

describe("X-Tenant-ID", () => {
  it("names the same tenant in upper case", async () => {
    const boot = await bootstrap(test)
    const answer = await test.call("POST", "/contacts", {
      token: boot.api_key,
      headers: { "x-tenant-id": boot.tenant_id.toUpperCase() },
      body: { name: "Upper" }
    })
    expect(answer.status).toBe(201)
    expect(answer.body.tenant_id).toBe(boot.tenant_id)
  })
})

describe("custom field keys", () => {
  it("names the offending key, not an unknown field", async () => {
    const boot = await bootstrap(test)
    const answer = await test.call("POST", "/contacts", {
      token: boot.api_key,
      body: { name: "Ada", custom_fields: { "Bad Key": 1, good_key: 2 } }
    })
    expect(answer.status).toBe(422)
    expect(answer.body.detail).toEqual([{
      loc: ["body", "custom_fields", "Bad Key"],
      msg: "Custom field keys are lower-case snake_case, start with a letter and have at most 64 characters",
      type: "value_error"
    }])
  })
})

describe("operator input", () => {
  it("refuses an email holding a control character", async () => {
    await expect(test.operator((operator) => operator.createUser("a\u0000b@example.com"))).rejects.toMatchObject({
      _tag: "InvalidRequest"
    })
  })
})
