import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { simulatedProviders } from "../../adapters/providers/SimulatedProviders.ts"
import type { ChannelType } from "../../src/kernel/ChannelType.ts"
import { type ChannelProvider, ProviderRejected } from "../../src/ports/ChannelProviders.ts"
import { OutboxStore } from "../../src/ports/OutboxStore.ts"
import {
  connectChannel,
  type ConnectForm,
  createLink,
  openForm,
  openPage,
  type PageAnswer,
  PUBLIC_URL,
  submit,
  validInputs
} from "../support/ConnectCustomer.ts"
import { PG_URL, testDatabases } from "../support/Databases.ts"
import { type TestApp, startTestApp } from "../support/TestApp.ts"

const MINUTE_MS = 60_000
const HOUR_MS = 60 * MINUTE_MS

const startApp = async (databaseName: string, providers: Readonly<Record<string, ChannelProvider>> = simulatedProviders) =>
  startTestApp(await testDatabases.find((d) => d.name === databaseName)!.open(), { providers, publicUrl: PUBLIC_URL })

/** A fresh tenant (SMS enabled, so links may offer every type) and helpers acting as it. */
const newTenant = async (test: TestApp) => {
  const owner = await test.operator((operator) => operator.bootstrap({ tenantName: "Acme Support" }))
  await test.operator((operator) => operator.setSmsEnabled(owner.tenant_id, true))
  const link = (body: Record<string, unknown>) => createLink(test, owner.api_key, body)
  const get = async (path: string) => (await test.call("GET", path, { token: owner.api_key })).body
  const channels = async (): Promise<Array<Record<string, any>>> => (await get("/channels")).items
  const token = async (id: string): Promise<Record<string, any>> => get(`/channel-connect-tokens/${id}`)
  const events = () =>
    test.app.run(Effect.flatMap(OutboxStore, (s) => s.listByTenant(owner.tenant_id, { limit: 100 })))
  return { ...owner, link, channels, token, events }
}

// Text as a browser reads it from element content or a quoted attribute: character references decoded.
const decodeHtml = (text: string) =>
  text.replace(/&(?:#(\d+)|#x([\da-f]+)|(amp|lt|gt|quot|apos));/gi, (_, decimal, hex, name: string | undefined) =>
    name === undefined
      ? String.fromCodePoint(decimal === undefined ? parseInt(hex, 16) : Number(decimal))
      : { amp: "&", lt: "<", gt: ">", quot: "\"", apos: "'" }[name.toLowerCase()]!)

/** Markup-breaking text: a script, both quotes, backticks, and text that reads as a character reference. */
const HOSTILE = "<script>alert(\"x\")</script> & 'Co' `${1}` &amp;"

// `text` shows as written: none of its markup reached the page as markup, and nothing was escaped
// twice (a double escape would show `&lt;`). Backticks stay as they are: every attribute is quoted.
const expectShownEscaped = (page: PageAnswer, text: string) => {
  expect(page.html).not.toMatch(/<script|"x"|'Co'/)
  expect(decodeHtml(page.html)).toContain(text)
}

// The hrefs of the choice page's links, as `type` values.
const offeredTypes = (page: PageAnswer) =>
  [...page.html.matchAll(/<a class="choice" href="[^"]*\?type=([^"]*)">/g)].map(([, type]) => decodeURIComponent(type!))

describe("the connect page", () => {
  let test: TestApp
  beforeAll(async () => {
    test = await startApp("sqlite-memory")
  })
  afterAll(() => test.close())

  describe("choosing a channel type", () => {
    it("lists only the link's allowed types, under partner_name", async () => {
      const tenant = await newTenant(test)
      const created = await tenant.link({ allowed_channel_types: ["webmail", "chatapp", "smtp_imap"], partner_name: "Partner Co" })

      const page = await openPage(test, created.connect_url)
      expect(page.status).toBe(200)
      expect(page.headers.get("content-type")).toBe("text/html; charset=utf-8")
      expect(offeredTypes(page)).toEqual(["webmail", "chatapp", "smtp_imap"])
      expect(page.html).toContain("<h1>Connect a channel for Partner Co</h1>")
      expect(page.html).toContain("Email (IMAP and SMTP)")
    })

    it("goes straight to the form when the link offers one type", async () => {
      const tenant = await newTenant(test)
      const created = await tenant.link({ allowed_channel_types: ["webmail"] })

      const page = await openPage(test, created.connect_url)
      expect(page.status).toBe(200)
      expect(page.html).toContain('<input type="hidden" name="channel_type" value="webmail">')
    })

    it("answers 404 for a type the link does not offer, showing the allowed ones", async () => {
      const tenant = await newTenant(test)
      const created = await tenant.link({ allowed_channel_types: ["chatapp", "webmail"] })

      const page = await openPage(test, `${created.connect_url}?type=botchat`)
      expect(page.status).toBe(404)
      expect(offeredTypes(page)).toEqual(["chatapp", "webmail"])
    })

    it("escapes partner_name everywhere it appears", async () => {
      const tenant = await newTenant(test)
      const created = await tenant.link({ allowed_channel_types: ["chatapp", "webmail"], partner_name: HOSTILE })

      const pages = [
        await openPage(test, created.connect_url),
        await openPage(test, `${created.connect_url}?type=chatapp`),
        await connectChannel(test, created.connect_url, "chatapp")
      ]
      for (const page of pages) {
        expect(page.status).toBe(200)
        expectShownEscaped(page, HOSTILE)
      }
    })
  })

  describe("the form of each channel type", () => {
    // What each simulated provider asks for: [name, input type, required].
    const FIELDS: ReadonlyArray<[ChannelType, ReadonlyArray<[string, "text" | "password", boolean]>]> = [
      ["botchat", [["bot_token", "password", true]]],
      ["chatapp", [["phone_number_id", "text", true], ["business_account_id", "text", true], ["access_token", "password", true]]],
      ["photosocial", [["account_id", "text", true], ["access_token", "password", true]]],
      ["socialmsg", [["page_id", "text", true], ["page_access_token", "password", true]]],
      ["webmail", [["email_address", "text", true], ["app_password", "password", true]]],
      ["smtp_imap", [
        ["email_address", "text", true],
        ["imap_host", "text", true],
        ["imap_port", "text", true],
        ["smtp_host", "text", true],
        ["smtp_port", "text", true],
        ["username", "text", true],
        ["password", "password", true]
      ]],
      ["relay_a_byok", [["account_sid", "text", true], ["auth_token", "password", true], ["phone_number", "text", true]]],
      ["relay_b_byok", [["api_key", "text", true], ["api_secret", "password", true], ["phone_number", "text", true]]],
      ["relay_a_managed", [["business_name", "text", true], ["phone_number", "text", true]]],
      ["sms", [["phone_number", "text", true], ["sender_id", "text", false]]]
    ]

    it.each(FIELDS)("asks for what a %s provider needs, secrets as passwords, and connects one", async (type, fields) => {
      const tenant = await newTenant(test)
      const created = await tenant.link({ allowed_channel_types: [type] })

      const form = await openForm(test, created.connect_url, type)
      expect(form.inputs.map((i) => [i.name, i.type, i.required])).toEqual(fields)
      expect(form.action).toBe(created.connect_url)

      const inputs = validInputs(type)
      expect((await submit(test, form, inputs)).status).toBe(200)
      const [channel] = await tenant.channels()
      expect(channel).toMatchObject({ platform: type, status: "active", created_via_connect_token_id: created.id })
      const secrets = fields.filter(([, kind]) => kind === "password").map(([name]) => inputs[name]!)
      for (const secret of secrets) expect(JSON.stringify(channel)).not.toContain(secret)
    })
  })

  describe("forgery protection", () => {
    it("sets its CSRF cookie HttpOnly, SameSite=Strict, only for the connect path", async () => {
      const tenant = await newTenant(test)
      const created = await tenant.link({ allowed_channel_types: ["chatapp"] })

      const page = await openPage(test, created.connect_url)
      expect(page.headers.get("set-cookie")).toMatch(/^omni_connect_csrf=[0-9A-Za-z]{32}; Path=\/connect; HttpOnly; SameSite=Strict$/)
    })

    it.each([
      ["without the CSRF cookie", { cookie: null }],
      ["without the CSRF field", { csrf: null }],
      ["with a CSRF field that does not match the cookie", { csrf: "x".repeat(32) }],
      ["with a cookie that does not match the field", { cookie: "y".repeat(32) }],
      ["from another site's page (cross-site Origin)", { origin: "https://evil.example" }],
      ["from a look-alike origin", { origin: "http://connect.test.evil.example" }]
    ])("refuses a form sent %s with 403 and connects nothing", async (_, tamper) => {
      const tenant = await newTenant(test)
      const created = await tenant.link({ allowed_channel_types: ["chatapp"] })
      const form = await openForm(test, created.connect_url, "chatapp")

      const answer = await submit(test, form, validInputs("chatapp"), tamper)
      expect(answer.status).toBe(403)
      expect(answer.html).toContain("Refused")
      expect((await tenant.token(created.id)).uses_count).toBe(0)
      expect(await tenant.channels()).toEqual([])
      expect(await tenant.events()).toEqual([])
    })

    it("accepts a matching CSRF pair from a browser that sends no Origin", async () => {
      const tenant = await newTenant(test)
      const created = await tenant.link({ allowed_channel_types: ["chatapp"] })
      const form = await openForm(test, created.connect_url, "chatapp")

      expect((await submit(test, form, validInputs("chatapp"), { origin: null })).status).toBe(200)
    })
  })

  describe("the size of a form", () => {
    const LIMIT = 64 * 1024
    const CHUNK = 16 * 1024

    // Posts `body` as the form's own page would, with its CSRF cookie and Origin.
    const post = (form: ConnectForm, body: BodyInit) =>
      test.app.handler(
        new Request(form.action, {
          method: "POST",
          body,
          duplex: "half",
          headers: {
            "content-type": "application/x-www-form-urlencoded",
            cookie: `omni_connect_csrf=${form.cookie}`,
            origin: new URL(form.action).origin
          }
        } as RequestInit)
      )

    // A valid chat-app form padded to exactly `bytes` bytes of UTF-8 with 20,000 three-byte "€",
    // so it holds far fewer UTF-16 units than bytes.
    const paddedForm = (form: ConnectForm, bytes: number) => {
      const fields = new URLSearchParams({ csrf: form.csrf, channel_type: "chatapp", ...validInputs("chatapp") })
      const head = `${fields}&padding=${"€".repeat(20_000)}`
      const text = head + "a".repeat(bytes - new TextEncoder().encode(head).byteLength)
      expect(new TextEncoder().encode(text).byteLength).toBe(bytes)
      expect(text.length).toBeLessThan(LIMIT)
      return text
    }

    it("takes a form of exactly 64 KiB of UTF-8", async () => {
      const tenant = await newTenant(test)
      const created = await tenant.link({ allowed_channel_types: ["chatapp"] })
      const form = await openForm(test, created.connect_url, "chatapp")

      expect((await post(form, paddedForm(form, LIMIT))).status).toBe(200)
      expect(await tenant.channels()).toHaveLength(1)
    })

    it("answers 413 to a form one byte over 64 KiB, counting bytes and not characters, and connects nothing", async () => {
      const tenant = await newTenant(test)
      const created = await tenant.link({ allowed_channel_types: ["chatapp"] })
      const form = await openForm(test, created.connect_url, "chatapp")

      const answer = await post(form, paddedForm(form, LIMIT + 1))
      expect(answer.status).toBe(413)
      expect(await answer.text()).toContain("The form is too large.")
      expect(await tenant.channels()).toEqual([])
    })

    it("answers 413 to a 100 MB form having read little past its first 64 KiB, and cancels the rest", async () => {
      const tenant = await newTenant(test)
      const created = await tenant.link({ allowed_channel_types: ["chatapp"] })
      const form = await openForm(test, created.connect_url, "chatapp")
      const total = 100 * 1024 * 1024
      let pulled = 0
      let cancelled = false
      // Made only as it is read, so `pulled` is what the page took of it.
      const body = new ReadableStream<Uint8Array>({
        pull: (controller) => {
          if (pulled >= total) return controller.close()
          pulled += CHUNK
          controller.enqueue(new Uint8Array(CHUNK).fill(0x61))
        },
        cancel: () => {
          cancelled = true
        }
      }, { highWaterMark: 0 })

      const answer = await post(form, body)
      expect(answer.status).toBe(413)
      expect(pulled).toBeGreaterThan(LIMIT)
      expect(pulled).toBeLessThanOrEqual(LIMIT + 2 * CHUNK)
      expect(cancelled).toBe(true)
    })
  })

  describe("when the provider refuses", () => {
    it("answers 422 with the form again and the provider's complaint, counting no use", async () => {
      const tenant = await newTenant(test)
      const created = await tenant.link({ allowed_channel_types: ["chatapp"] })
      const form = await openForm(test, created.connect_url, "chatapp")
      const refusedToken = "EAAGsecretREJECTthisTokenPlease000001"
      const inputs = validInputs("chatapp")

      const answer = await submit(test, form, { ...inputs, access_token: refusedToken })
      expect(answer.status).toBe(422)
      expect(answer.html).toContain("The provider refused these credentials.")
      expect(answer.html).toContain("Refused by the provider: check it and try again")
      expect(answer.html).toContain(`value="${inputs.phone_number_id}"`)
      expect(answer.html).not.toContain(refusedToken)
      expect(answer.html).toContain(`<input type="hidden" name="csrf" value="${form.csrf}">`)
      expect((await tenant.token(created.id)).uses_count).toBe(0)
      expect(await tenant.channels()).toEqual([])
      expect(await tenant.events()).toEqual([])

      expect((await submit(test, form, inputs)).status).toBe(200)
      expect((await tenant.token(created.id)).uses_count).toBe(1)
    })

    it("answers 422 naming each field in the wrong format", async () => {
      const tenant = await newTenant(test)
      const created = await tenant.link({ allowed_channel_types: ["chatapp"] })
      const form = await openForm(test, created.connect_url, "chatapp")

      const answer = await submit(test, form, { phone_number_id: "+1 415", business_account_id: "", access_token: "short" })
      expect(answer.status).toBe(422)
      expect(answer.html).toContain("Digits only, as the provider shows it")
      expect(answer.html).toContain("Required")
      expect(answer.html).toContain("At least 20 characters, no spaces")
      expect((await tenant.token(created.id)).uses_count).toBe(0)
    })

    it("answers 422 with the choice page for a channel type the link does not offer", async () => {
      const tenant = await newTenant(test)
      const created = await tenant.link({ allowed_channel_types: ["chatapp", "webmail"] })
      const form = await openForm(test, created.connect_url, "chatapp")

      const answer = await submit(test, { ...form, channelType: "botchat" }, validInputs("botchat"))
      expect(answer.status).toBe(422)
      expect(offeredTypes(answer)).toEqual(["chatapp", "webmail"])
      expect(await tenant.channels()).toEqual([])
    })
  })

  describe("a number another channel holds", () => {
    const TAKEN = "already connected to an active channel, so it was not connected again"

    it.each([
      ["another tenant's", "other"],
      ["the tenant's own", "same"]
    ] as const)("answers 409 with the form again and a clear message when %s active channel holds the number, creating nothing and counting no use", async (_, whose) => {
      const holder = await newTenant(test)
      const inputs = validInputs("chatapp")
      expect((await connectChannel(test, (await holder.link({ allowed_channel_types: ["chatapp"] })).connect_url, "chatapp", inputs)).status)
        .toBe(200)
      const [held] = await holder.channels()
      const tenant = whose === "same" ? holder : await newTenant(test)
      const created = await tenant.link({ allowed_channel_types: ["chatapp"] })
      const form = await openForm(test, created.connect_url, "chatapp")

      const answer = await submit(test, form, inputs)
      expect(answer.status).toBe(409)
      expect(decodeHtml(answer.html)).toContain(`This Chat app (business platform) account is ${TAKEN}.`)
      expect(answer.html).toContain(`value="${inputs.phone_number_id}"`)
      expect(answer.html).not.toContain(inputs.access_token!)
      expect(answer.html).toContain(`<input type="hidden" name="csrf" value="${form.csrf}">`)
      expect((await tenant.token(created.id)).uses_count).toBe(0)
      expect(await holder.channels()).toEqual([held])
      if (whose === "other") {
        expect(await tenant.channels()).toEqual([])
        expect(await tenant.events()).toEqual([])
      }
    })

    it("connects the number, in any tenant, once the channel holding it is disconnected", async () => {
      const holder = await newTenant(test)
      const inputs = validInputs("chatapp")
      await connectChannel(test, (await holder.link({ allowed_channel_types: ["chatapp"] })).connect_url, "chatapp", inputs)
      const [held] = await holder.channels()
      const tenant = await newTenant(test)
      const created = await tenant.link({ allowed_channel_types: ["chatapp"] })
      expect((await connectChannel(test, created.connect_url, "chatapp", inputs)).status).toBe(409)

      expect((await test.call("POST", `/channels/${held!.id}/disconnect`, { token: holder.api_key })).status).toBe(200)
      expect((await connectChannel(test, created.connect_url, "chatapp", inputs)).status).toBe(200)

      expect(await tenant.channels()).toMatchObject([{ external_id: inputs.phone_number_id, status: "active" }])
      expect(await holder.channels()).toMatchObject([{ id: held!.id, status: "disconnected" }])
      expect((await tenant.token(created.id)).uses_count).toBe(1)
    })
  })

  describe("a successful connection", () => {
    it("redirects with 303 to partner_redirect_url", async () => {
      const tenant = await newTenant(test)
      const created = await tenant.link({
        allowed_channel_types: ["chatapp"],
        partner_redirect_url: "https://partner.example/done?step=2"
      })

      const answer = await connectChannel(test, created.connect_url, "chatapp")
      expect(answer.status).toBe(303)
      expect(answer.headers.get("location")).toBe("https://partner.example/done?step=2")
    })

    it("shows a success page naming the channel and the partner when there is no partner_redirect_url", async () => {
      const tenant = await newTenant(test)
      const created = await tenant.link({ allowed_channel_types: ["webmail"], partner_name: "Partner Co" })
      const inputs = validInputs("webmail")

      const answer = await connectChannel(test, created.connect_url, "webmail", inputs)
      expect(answer.status).toBe(200)
      expect(answer.html).toContain(`${inputs.email_address!.toLowerCase()} is now connected to Partner Co`)
    })

    it("creates the channel in the link's tenant and announces it with channel.created", async () => {
      const tenant = await newTenant(test)
      const created = await tenant.link({ allowed_channel_types: ["chatapp"] })
      const inputs = validInputs("chatapp")
      const number = inputs.phone_number_id!

      await connectChannel(test, created.connect_url, "chatapp", inputs)

      const [channel, ...others] = await tenant.channels()
      expect(others).toEqual([])
      expect(channel).toEqual({
        id: expect.any(String),
        tenant_id: tenant.tenant_id,
        platform: "chatapp",
        name: `Chat app number ${number}`,
        status: "active",
        external_id: number,
        config: { phone_number_id: number, business_account_id: "2065550100" },
        created_via_connect_token_id: created.id,
        created_at: new Date(test.clock.nowMillis()).toISOString(),
        updated_at: null,
        disconnected_at: null
      })
      const events = await tenant.events()
      expect(events).toEqual([{
        id: expect.any(String),
        type: "channel.created",
        event_id: events[0]!.id,
        created_at: channel!.created_at,
        tenant_id: tenant.tenant_id,
        data: {
          channel: {
            id: channel!.id,
            platform: "chatapp",
            status: "active",
            created_via_connect_token_id: created.id,
            name: `Chat app number ${number}`
          }
        }
      }])
    })

    it("counts each use, and the first one opens the use window", async () => {
      const tenant = await newTenant(test)
      const created = await tenant.link({ allowed_channel_types: ["chatapp", "webmail"] })
      const firstUseAt = test.clock.nowMillis()

      await connectChannel(test, created.connect_url, "chatapp")
      test.clock.advance(MINUTE_MS)
      await connectChannel(test, created.connect_url, "webmail")

      expect(await tenant.token(created.id)).toMatchObject({
        status: "valid",
        uses_count: 2,
        use_window_ends_at: new Date(firstUseAt + 30 * MINUTE_MS).toISOString()
      })
      expect((await tenant.channels()).map((c) => c.platform)).toEqual(["webmail", "chatapp"])
    })
  })

  describe("a link that cannot be used", () => {
    it.each([
      ["an unknown token", () => `occ_${"A".repeat(12)}_${"B".repeat(40)}`],
      ["a malformed token", () => "occ_short"],
      ["no token at all", () => ""],
      ["a path below a token", () => `occ_${"A".repeat(12)}_${"B".repeat(40)}/extra`]
    ])("answers 404 for %s", async (_, token) => {
      const page = await openPage(test, `${PUBLIC_URL}/connect/${token()}`)
      expect(page.status).toBe(404)
      expect(page.html).toContain("This link is not valid")
    })

    it("answers 404 for a real link whose secret part was altered", async () => {
      const tenant = await newTenant(test)
      const created = await tenant.link({ allowed_channel_types: ["chatapp"] })
      const tampered = `${created.connect_url.slice(0, -1)}${created.connect_url.endsWith("A") ? "B" : "A"}`

      expect((await openPage(test, tampered)).status).toBe(404)
      expect((await openPage(test, created.connect_url)).status).toBe(200)
    })

    it("answers 410 once max_uses connections were made, and connects nothing more", async () => {
      const tenant = await newTenant(test)
      const created = await tenant.link({ allowed_channel_types: ["chatapp", "webmail"], max_uses: 1 })
      const openedBefore = await openForm(test, created.connect_url, "webmail")

      expect((await connectChannel(test, created.connect_url, "chatapp")).status).toBe(200)

      const page = await openPage(test, created.connect_url)
      expect(page.status).toBe(410)
      expect(page.html).toContain("used as many times as it allows")
      expect((await submit(test, openedBefore, validInputs("webmail"))).status).toBe(410)
      expect(await tenant.token(created.id)).toMatchObject({ status: "exhausted", uses_count: 1 })
      expect(await tenant.channels()).toHaveLength(1)
      expect(await tenant.events()).toHaveLength(1)
    })

    it("answers 410 once expires_in_hours have passed, and connects nothing", async () => {
      const tenant = await newTenant(test)
      const created = await tenant.link({ allowed_channel_types: ["chatapp"], expires_in_hours: 2 })
      const openedBefore = await openForm(test, created.connect_url, "chatapp")

      test.clock.advance(2 * HOUR_MS - 1)
      expect((await openPage(test, created.connect_url)).status).toBe(200)
      test.clock.advance(1)
      const page = await openPage(test, created.connect_url)
      expect(page.status).toBe(410)
      expect(page.html).toContain("This link has expired")
      expect((await submit(test, openedBefore, validInputs("chatapp"))).status).toBe(410)
      expect(await tenant.channels()).toEqual([])
    })

    it("answers 410 to a use after use_window_minutes from the first use, and not before", async () => {
      const tenant = await newTenant(test)
      const created = await tenant.link({ allowed_channel_types: ["chatapp", "webmail", "botchat"], use_window_minutes: 5 })

      expect((await connectChannel(test, created.connect_url, "chatapp")).status).toBe(200)
      test.clock.advance(5 * MINUTE_MS - 1)
      expect((await connectChannel(test, created.connect_url, "webmail")).status).toBe(200)
      const openedInTime = await openForm(test, created.connect_url, "botchat")
      test.clock.advance(1)

      expect((await submit(test, openedInTime, validInputs("botchat"))).status).toBe(410)
      expect((await openPage(test, created.connect_url)).status).toBe(410)
      expect(await tenant.token(created.id)).toMatchObject({ status: "expired", uses_count: 2 })
      expect(await tenant.channels()).toHaveLength(2)
    })
  })

  it("sends no referrer, forbids framing and loads nothing foreign, on every page it answers", async () => {
    const tenant = await newTenant(test)
    const created = await tenant.link({ allowed_channel_types: ["chatapp", "webmail"], max_uses: 2 })
    const redirecting = await tenant.link({ allowed_channel_types: ["chatapp"], partner_redirect_url: "https://partner.example/" })
    const form = await openForm(test, created.connect_url, "chatapp")

    const pages: Record<string, PageAnswer> = {
      choice: await openPage(test, created.connect_url),
      form: await openPage(test, `${created.connect_url}?type=chatapp`),
      "not offered": await openPage(test, `${created.connect_url}?type=sms`),
      refused: await submit(test, form, validInputs("chatapp"), { csrf: null }),
      rejected: await submit(test, form, { ...validInputs("chatapp"), access_token: "REJECT-me-please-000000001" }),
      success: await submit(test, form, validInputs("chatapp")),
      redirect: await connectChannel(test, redirecting.connect_url, "chatapp"),
      unknown: await openPage(test, `${PUBLIC_URL}/connect/occ_nothing`),
      "method not allowed": await test.app.handler(new Request(created.connect_url, { method: "PUT" })).then(async (r) => ({
        status: r.status,
        html: await r.text(),
        headers: r.headers
      }))
    }
    await connectChannel(test, created.connect_url, "webmail")
    pages.gone = await openPage(test, created.connect_url)

    expect(Object.fromEntries(Object.entries(pages).map(([name, page]) => [name, page.status]))).toEqual({
      choice: 200,
      form: 200,
      "not offered": 404,
      refused: 403,
      rejected: 422,
      success: 200,
      redirect: 303,
      unknown: 404,
      "method not allowed": 405,
      gone: 410
    })
    for (const [name, page] of Object.entries(pages)) {
      expect({ name, headers: Object.fromEntries(page.headers) }).toMatchObject({
        name,
        headers: {
          "referrer-policy": "no-referrer",
          "x-frame-options": "DENY",
          "x-content-type-options": "nosniff",
          "cache-control": "no-store",
          "content-security-policy": expect.stringContaining("default-src 'none'")
        }
      })
    }
  })
})

/** A provider whose every word is HOSTILE (field label and hint, refusals, the connected channel's name). */
const hostileProvider: ChannelProvider = {
  fields: [{ name: "handle", label: HOSTILE, hint: HOSTILE, secret: false, required: true }],
  connect: (input) =>
    input.handle === HOSTILE
      ? Effect.fail(new ProviderRejected({ message: HOSTILE, fields: { handle: HOSTILE } }))
      : Effect.succeed({ external_id: "hostile-1", name: HOSTILE, config: {}, secrets: {} })
}

describe("the connect page with a provider's and a customer's markup", () => {
  let test: TestApp
  beforeAll(async () => {
    test = await startApp("sqlite-memory", { ...simulatedProviders, chatapp: hostileProvider })
  })
  afterAll(() => test.close())

  it("escapes partner_name, field labels, hints, refusals, the customer's input and the channel name on every page", async () => {
    const tenant = await newTenant(test)
    const created = await tenant.link({ allowed_channel_types: ["chatapp", "webmail"], partner_name: HOSTILE })
    const form = await openForm(test, created.connect_url, "chatapp")

    const pages: Record<string, PageAnswer> = {
      choice: await openPage(test, created.connect_url),
      form: await openPage(test, `${created.connect_url}?type=chatapp`),
      "not offered": await openPage(test, `${created.connect_url}?type=sms`),
      rejected: await submit(test, form, { handle: HOSTILE }),
      success: await submit(test, form, { handle: "ada" })
    }
    expect(Object.fromEntries(Object.entries(pages).map(([name, page]) => [name, page.status]))).toEqual({
      choice: 200,
      form: 200,
      "not offered": 404,
      rejected: 422,
      success: 200
    })
    for (const page of Object.values(pages)) expectShownEscaped(page, HOSTILE)
    // Label, hint, refusal message, field error, the value typed, and the heading each show it.
    expect(decodeHtml(pages.rejected!.html).split(HOSTILE)).toHaveLength(7)
    expect(decodeHtml(/<input id="f-handle" [^>]*value="([^"]*)">/.exec(pages.rejected!.html)?.[1] ?? "")).toBe(HOSTILE)
  })
})

describe.skipIf(PG_URL === undefined)("concurrent completions on PostgreSQL (needs PG_URL)", () => {
  let test: TestApp
  beforeAll(async () => {
    test = await startApp("postgres")
  })
  afterAll(() => test.close())

  // `n` customers submitting the same form at once, each with a number of their own; the statuses they get, sorted.
  const race = async (connectUrl: string, n: number) => {
    const form = await openForm(test, connectUrl, "chatapp")
    const answers = await Promise.all(Array.from({ length: n }, () => submit(test, form, validInputs("chatapp"))))
    return answers.map((a) => a.status).sort()
  }

  it("connects one of two tenants submitting the same number at once; the other is answered 409 and gets nothing", async () => {
    const tenants = [await newTenant(test), await newTenant(test)]
    const forms = await Promise.all(tenants.map(async (tenant) =>
      openForm(test, (await tenant.link({ allowed_channel_types: ["chatapp"] })).connect_url, "chatapp")))
    const inputs = validInputs("chatapp")

    const answers = await Promise.all(forms.map((form) => submit(test, form, inputs)))

    expect(answers.map((a) => a.status).sort()).toEqual([200, 409])
    const loser = answers.findIndex((a) => a.status === 409)
    expect(answers[loser]!.html).toContain("already connected to an active channel")
    expect(await tenants[loser]!.channels()).toEqual([])
    expect(await tenants[loser]!.events()).toEqual([])
    expect(await tenants[1 - loser]!.channels()).toMatchObject([{ external_id: inputs.phone_number_id, status: "active" }])
    expect((await tenants[1 - loser]!.events()).map((e) => e.type)).toEqual(["channel.created"])
  })

  it.each([
    [1, 8],
    [3, 10],
    [10, 10]
  ])("connects exactly max_uses %d of %d concurrent completions, each with one channel.created", async (maxUses, n) => {
    const tenant = await newTenant(test)
    const created = await tenant.link({ allowed_channel_types: ["chatapp"], max_uses: maxUses })

    const statuses = await race(created.connect_url, n)

    expect(statuses).toEqual([...Array(maxUses).fill(200), ...Array(n - maxUses).fill(410)])
    expect(await tenant.token(created.id)).toMatchObject({ uses_count: maxUses, status: "exhausted" })
    const channels = await tenant.channels()
    expect(channels).toHaveLength(maxUses)
    const events = await tenant.events()
    expect(events.map((e) => e.type)).toEqual(Array(maxUses).fill("channel.created"))
    expect(events.map((e) => (e.data.channel as { id: string }).id).sort()).toEqual(channels.map((c) => c.id).sort())
  })
})
