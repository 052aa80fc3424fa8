import { describe, expect, it } from "vitest"
import { createPostgresDatabase, PG_URL } from "../support/Databases.ts"
import { admin, http, startHost } from "../support/Host.ts"

describe.skipIf(PG_URL === undefined)("the library embedded in an app with its own pool (needs PG_URL)", () => {
  it("serves the API under the app's prefix next to the app's own routes", async () => {
    const database = await createPostgresDatabase(PG_URL!)
    const app = await startHost({ DATABASE_URL: database.url, PORT: "0" }, "examples/embed/server.ts")
    try {
      expect((await http(app.url, "GET", "/health")).body).toEqual({ ok: true })
      const boot = await admin({ DATABASE_URL: database.url }, "bootstrap")
      const created = await http(app.url, "POST", "/messaging/api/v1/contacts", {
        token: boot.api_key,
        body: { name: "Embedded", email: "Embedded@Example.com" }
      })
      expect(created.status).toBe(201)
      expect(created.body).toMatchObject({ name: "Embedded", email: "embedded@example.com", tenant_id: boot.tenant_id })
      // The app's pool keeps pg's default parsers (BIGINT as string); counts still come back as numbers.
      const listed = await http(app.url, "GET", "/messaging/api/v1/contacts", { token: boot.api_key })
      expect(listed.body.pagination).toEqual({ page: 1, page_size: 25, total: 1, total_pages: 1 })
      // Outside the prefix the app answers for itself.
      expect((await fetch(`${app.url}/api/v1/contacts`)).status).toBe(404)
      const link = await http(app.url, "POST", "/messaging/api/v1/channel-connect-tokens", {
        token: boot.api_key,
        body: { allowed_channel_types: ["botchat"] }
      })
      expect(link.body.connect_url).toMatch(new RegExp(`^${app.url}/messaging/connect/occ_`))
      const page = await fetch(link.body.connect_url)
      expect(page.status).toBe(200)
      expect(await page.text()).toContain("Bot token")
      const doc = await http(app.url, "GET", "/messaging/api/v1/openapi.json")
      expect(Object.keys(doc.body.paths)).toContain("/messaging/api/v1/contacts")
    } finally {
      expect(await app.stop()).toBe(0)
      await database.drop()
    }
  })
})
