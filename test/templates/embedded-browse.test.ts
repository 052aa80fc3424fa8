import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { chatappProvider, makeSimulatedChatPlatform } from "../../adapters/chatapp/index.ts"
import { TemplateService } from "../../src/templates/TemplateService.ts"
import { testDatabases } from "../support/Databases.ts"
import { bootstrap, startTestApp, type TestApp } from "../support/TestApp.ts"

// An application embedding the library calls the template service itself: its browse answers the
// same as the API's, which writes its answer from the entries' kept JSON text.

describe("browsing the library from an embedding application", () => {
  let test: TestApp
  let tenantId: string
  let key: string
  let channelId: string

  beforeAll(async () => {
    const platform = makeSimulatedChatPlatform()
    test = await startTestApp(await testDatabases.find((d) => d.name === "sqlite-memory")!.open(), {
      chatPlatform: platform,
      providers: { chatapp: chatappProvider(platform) }
    })
    const boot = await bootstrap(test)
    tenantId = boot.tenant_id
    key = boot.api_key
    const channel = await test.operator((operator) =>
      operator.createChannel({
        tenantId,
        type: "chatapp",
        inputs: { phone_number_id: "1065550100", business_account_id: "1029000001", access_token: "EAAGembeddedtesttoken0000" }
      })
    )
    channelId = channel.channel_id
  })
  afterAll(() => test.close())

  it("answers exactly what GET /chatapp-templates/library answers, already_added included", async () => {
    const adopted = await test.call("POST", "/chatapp-templates/library/adopt", {
      token: key,
      body: {
        channel_id: channelId,
        library_template_name: "verification_code_1",
        button_inputs: [{ type: "OTP", otp_type: "COPY_CODE" }]
      }
    })
    expect(adopted.status).toBe(201)
    for (const query of [{ language: "en_US", limit: 5 }, { topic: "SECURITY", limit: 100 }, { limit: 500 }]) {
      const params = new URLSearchParams({ channel_id: channelId, ...Object.fromEntries(Object.entries(query).map(([k, v]) => [k, String(v)])) })
      const api = await test.call("GET", `/chatapp-templates/library?${params}`, { token: key })
      expect(api.status).toBe(200)
      const embedded = await test.app.run(Effect.flatMap(TemplateService, (templates) =>
        templates.browse(tenantId, { channel_id: channelId, ...query })))
      expect(embedded).toEqual(api.body)
      expect(JSON.stringify(embedded)).toBe(JSON.stringify(api.body))
    }
    const security = await test.app.run(Effect.flatMap(TemplateService, (templates) =>
      templates.browse(tenantId, { channel_id: channelId, name: "verification_code_1", language: "en_US", limit: 10 })))
    expect(security.items.map((item) => item.already_added)).toEqual([true])
  })
})
