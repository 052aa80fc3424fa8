import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ChatappHost, startChatappHost, type Tenant } from "../support/ChatappHost.ts"
import { FAKE_LIBRARY, type FakeGraph, graphError } from "../support/FakeGraph.ts"
import { type HostProcess, http } from "../support/Host.ts"
import { hostBackends } from "../support/HostBackends.ts"
import { makeLibraryCatalog } from "../support/LibraryCatalog.ts"
import type { ValidationIssue } from "../../src/kernel/ApiError.ts"
import type { LibraryTemplateEntry } from "../../src/templates/LibraryEntry.ts"

// The template library and sending limits seen from outside: the host as a child process on a
// manual test clock, pointed at a fake Graph server that serves a catalog of some 150 entries in
// pages of 40, counts its library reads and plays rate limits, outages and refusals. Each test
// browses with a query of its own: the cache is per business account and query, so no copy leaks.

const APP_SECRET = "templates-app-secret"
const TOKEN = "EAAGtemplatestokenabcdefghijklmnopqrstuv"
const HOUR = 3600
const DAY = 24 * HOUR

/** An entry whose only buttons are quick replies: nothing for the caller to supply. */
const QUICK_REPLIES = {
  name: "delivery_feedback_1",
  language: "en_US",
  category: "UTILITY",
  topic: "CUSTOMER_FEEDBACK",
  usecase: "FEEDBACK_SURVEY",
  industry: ["E_COMMERCE"],
  body: "Hi {{1}}, did your order arrive in good shape?",
  body_params: ["Maria"],
  buttons: [{ type: "QUICK_REPLY", text: "Yes" }, { type: "QUICK_REPLY", text: "No" }],
  id: "7100000000000010"
}
const TAKEN = new Set(FAKE_LIBRARY.map((entry) => entry.name))
const LIBRARY = [...FAKE_LIBRARY, QUICK_REPLIES, ...makeLibraryCatalog(160, 7).filter((entry) => !TAKEN.has(entry.name as string))]

describe.each(hostBackends)("the template library and sending limits on the reference host ($name)", (backend) => {
  let chatapp: ChatappHost
  let host: HostProcess
  let graph: FakeGraph
  let tenant: Tenant
  let other: Tenant
  const channels: Record<"main" | "second" | "limits" | "others", { channel_id: string }> = {} as never
  const NUMBERS = { main: "106540352240001", second: "106540352240002", limits: "106540352240003", others: "106540352240004" }
  const WABAS = { main: "102290129340001", second: "102290129340002", limits: "102290129340003", others: "102290129340004" }

  beforeAll(async () => {
    chatapp = await startChatappHost(backend, {
      accessToken: TOKEN,
      graph: { library: LIBRARY, libraryPageSize: 40 },
      appSecret: APP_SECRET,
      verifyToken: "templates-verify-token"
    })
    ;({ host, graph, tenant, other } = chatapp)
    await Promise.all((["main", "second", "limits", "others"] as const).map(async (which) => {
      channels[which] = await chatapp.channel(NUMBERS[which], WABAS[which], which === "others" ? other : tenant)
    }))
  })
  afterAll(() => chatapp?.close())

  const api = (method: string, path: string, body?: unknown, as = tenant, on = host) => chatapp.api(method, path, body, as, on)
  const browse = (query: Record<string, string | number>, as = tenant, on = host) =>
    api("GET", `/chatapp-templates/library?${new URLSearchParams(Object.entries(query).map(([k, v]) => [k, String(v)]))}`, undefined, as, on)
  const main = (query: Record<string, string | number> = {}) => browse({ channel_id: channels.main.channel_id, ...query })
  /** The library requests the operator received since `from` (an index into its requests). */
  const libraryRequests = (from = 0) =>
    graph.requests().slice(from).filter((r) => r.method === "GET" && r.path === "/message_template_library")
  const advance = (seconds: number, on = host) => chatapp.advance(seconds, on)
  const drain = () => chatapp.drain()
  const webhook = async (body: unknown) => expect((await chatapp.post(body)).status).toBe(200)

  describe("browse", () => {
    it("returns entries in the spec's shape, counts matches before the limit and follows the operator's pages", async () => {
      const from = graph.requests().length
      const all = await main({ limit: 500 })
      expect(all.status).toBe(200)
      expect(all.body).toMatchObject({ total: LIBRARY.length, language: null, stale: false, warning: null })
      expect(all.body.items).toHaveLength(LIBRARY.length)
      // One read, in pages of 40 followed by their cursors.
      const pages = libraryRequests(from)
      expect(pages).toHaveLength(Math.ceil(LIBRARY.length / 40))
      expect(pages[0]!.query.after).toBeUndefined()
      expect(pages.slice(1).every((page) => typeof page.query.after === "string")).toBe(true)
      expect(pages[0]!.headers.authorization).toBe(`Bearer ${TOKEN}`)
      expect(all.body.items.find((item: LibraryTemplateEntry) => item.id === "7100000000000001")).toEqual({
        id: "7100000000000001",
        name: "order_confirmation_1",
        language: "en_US",
        category: "UTILITY",
        topic: "ORDER_MANAGEMENT",
        usecase: "ORDER_CONFIRMATION",
        industry: ["E_COMMERCE"],
        header: "Order confirmed",
        body: "Hi {{1}}, thank you for your order {{2}}.",
        footer: null,
        body_params: ["Maria", "#12345"],
        body_param_types: ["TEXT", "TEXT"],
        buttons: [{ type: "URL", text: "View order", url: "https://www.example.com/{{1}}", phone_number: null, otp_type: null }],
        already_added: false,
        requires_input: true
      })
      const otp = all.body.items.find((item: LibraryTemplateEntry) => item.id === "7100000000000003")
      expect(otp).toMatchObject({ header: null, footer: null, body_param_types: [], industry: ["FINANCIAL_SERVICES", "E_COMMERCE"] })
      expect(otp.buttons).toEqual([{ type: "OTP", text: "Copy code", url: null, phone_number: null, otp_type: "COPY_CODE" }])
      const quick = all.body.items.find((item: LibraryTemplateEntry) => item.id === QUICK_REPLIES.id)
      expect(quick.requires_input).toBe(false)
      expect(quick.buttons.map((b: LibraryTemplateEntry["buttons"][number]) => [b.type, b.url, b.phone_number])).toEqual([["QUICK_REPLY", null, null], ["QUICK_REPLY", null, null]])

      // The default limit is 100; `total` still counts every match.
      const firstHundred = await main()
      expect(firstHundred.body.items).toHaveLength(100)
      expect(firstHundred.body.total).toBe(LIBRARY.length)
      const five = await main({ limit: 5 })
      expect(five.body.items.map((i: LibraryTemplateEntry) => i.id)).toEqual(all.body.items.slice(0, 5).map((i: LibraryTemplateEntry) => i.id))
      expect(five.body.total).toBe(LIBRARY.length)
      expect((await main({ limit: 1 })).body.items).toHaveLength(1)
    })

    it("refuses a bad limit or a missing channel with 422, and another tenant's or an unknown channel with 404", async () => {
      for (const limit of ["0", "501", "abc", "-1", "2.5"]) {
        const refused = await main({ limit })
        expect(refused.status, `limit=${limit}`).toBe(422)
        expect(refused.body.detail.some((issue: ValidationIssue) => issue.loc.includes("limit")), JSON.stringify(refused.body)).toBe(true)
      }
      const missing = await api("GET", "/chatapp-templates/library?language=en_US")
      expect(missing.status).toBe(422)
      expect(missing.body.detail.some((issue: ValidationIssue) => issue.loc.includes("channel_id"))).toBe(true)
      expect((await browse({ channel_id: "6a1f0c2e-0000-4000-8000-000000000000" })).status).toBe(404)
      expect((await browse({ channel_id: channels.others.channel_id })).status).toBe(404)
      // The other tenant reads its own channel, not ours.
      expect((await browse({ channel_id: channels.others.channel_id, name: "order_confirmation_1" }, other)).status).toBe(200)
      expect((await browse({ channel_id: channels.main.channel_id }, other)).status).toBe(404)
    })

    it("passes every filter to the operator's library query", async () => {
      const from = graph.requests().length
      const query = {
        search: "order",
        topic: "ORDER_MANAGEMENT",
        usecase: "ORDER_CONFIRMATION",
        industry: "E_COMMERCE",
        language: "en_US",
        name: "order_confirmation_1"
      }
      const got = await main(query)
      expect(got.status).toBe(200)
      expect(got.body).toMatchObject({ total: 1, language: "en_US", stale: false })
      expect(got.body.items.map((i: LibraryTemplateEntry) => i.id)).toEqual(["7100000000000001"])
      const sent = libraryRequests(from)
      expect(sent).toHaveLength(1)
      expect(sent[0]!.query).toMatchObject(query)
    })

    it("derives facets from the matched set: each value offered, chosen as a filter, returns entries", async () => {
      const all = (await main({ search: "e", limit: 500 })).body
      const facets = all.facets as Record<"languages" | "topics" | "usecases" | "industries", Array<string>>
      const of = (items: Array<any>) => ({
        languages: [...new Set(items.map((i) => i.language))].sort(),
        topics: [...new Set(items.map((i) => i.topic))].sort(),
        usecases: [...new Set(items.map((i) => i.usecase))].sort(),
        industries: [...new Set(items.flatMap((i) => i.industry))].sort()
      })
      expect(all.items).toHaveLength(all.total)
      expect(facets).toEqual(of(all.items))
      expect(facets.languages.length).toBeGreaterThan(3)
      // Of the whole matched set, not of the page returned.
      expect((await main({ search: "e", limit: 1 })).body.facets).toEqual(facets)
      const filters = { languages: "language", topics: "topic", usecases: "usecase", industries: "industry" } as const
      for (const [facet, filter] of Object.entries(filters) as Array<[keyof typeof filters, string]>) {
        for (const value of facets[facet]) {
          const chosen = await main({ search: "e", [filter]: value, limit: 500 })
          expect(chosen.status).toBe(200)
          expect(chosen.body.total, `${filter}=${value}`).toBeGreaterThan(0)
          // The narrower set's facets are its own: the chosen value alone for that facet.
          expect(chosen.body.facets[facet]).toContain(value)
          expect(chosen.body.facets).toEqual(of(chosen.body.items))
        }
      }
      const spanish = await main({ search: "e", language: "es_ES", limit: 500 })
      expect(spanish.body.facets.languages).toEqual(["es_ES"])
      expect(spanish.body.language).toBe("es_ES")
    })

    it("marks an entry already_added once the tenant adopted that name and language on that channel only", async () => {
      const before = await main({ name: "delivery_feedback_1" })
      expect(before.body.items.map((i: LibraryTemplateEntry) => [i.language, i.already_added])).toEqual([["en_US", false]])
      const adopted = await api("POST", "/chatapp-templates/library/adopt", {
        channel_id: channels.main.channel_id,
        library_template_name: "delivery_feedback_1"
      })
      expect(adopted.status, JSON.stringify(adopted.body)).toBe(201)
      expect((await main({ name: "delivery_feedback_1" })).body.items[0].already_added).toBe(true)
      const all = (await main({ limit: 500 })).body.items as Array<any>
      expect(all.filter((i) => i.already_added).map((i) => i.id)).toEqual([QUICK_REPLIES.id])
      // Another channel of the tenant has not adopted it.
      const elsewhere = await browse({ channel_id: channels.second.channel_id, name: "delivery_feedback_1" })
      expect(elsewhere.body.items[0].already_added).toBe(false)
    })
  })

  describe("cache", () => {
    it("serves a second browse from the cache for 12 hours and reads the operator again at exactly 12 hours", async () => {
      const query = { topic: "PAYMENTS", limit: 500 }
      const before = graph.libraryCalls()
      const first = await main(query)
      expect(first.status).toBe(200)
      const read = graph.libraryCalls() - before
      expect(read).toBeGreaterThan(0)
      expect((await main(query)).body).toEqual(first.body)
      // Another limit, blank filters and spaces around a value make the same query: still cached.
      expect((await main({ ...query, limit: 3 })).body.items).toEqual(first.body.items.slice(0, 3))
      expect((await main({ ...query, topic: " PAYMENTS ", search: "" })).body.items).toEqual(first.body.items)
      expect(graph.libraryCalls() - before).toBe(read)
      await advance(12 * HOUR - 1)
      expect((await main(query)).body.stale).toBe(false)
      expect(graph.libraryCalls() - before).toBe(read)
      await advance(1)
      const again = await main(query)
      expect(again.body).toMatchObject({ stale: false, warning: null, total: first.body.total })
      expect(graph.libraryCalls() - before).toBe(2 * read)
    })

    it("makes one operator read for a burst of 20 identical browses on a cold cache", async () => {
      const from = graph.requests().length
      const query = { topic: "APPOINTMENT_REMINDERS", limit: 500 }
      const answers = await Promise.all(Array.from({ length: 20 }, () => main(query)))
      expect(answers.map((a) => a.status)).toEqual(Array(20).fill(200))
      expect(new Set(answers.map((a) => JSON.stringify(a.body))).size).toBe(1)
      expect(answers[0]!.body.total).toBeGreaterThan(0)
      const firstPages = libraryRequests(from).filter((r) => r.query.after === undefined)
      expect(firstPages).toHaveLength(1)
    })

    it("serves the last copy as stale with a warning while the operator rate-limits or is unreachable, up to 14 days", async () => {
      const query = { topic: "ACCOUNT_UPDATES", limit: 500 }
      const fresh = await main(query)
      expect(fresh.body.total).toBeGreaterThan(0)
      await advance(12 * HOUR)

      graph.script("GET", "/message_template_library", graphError(400, { code: 80007, message: "(#80007) Rate limit hit" }))
      let before = graph.libraryCalls()
      const limited = await main(query)
      expect(limited.status).toBe(200)
      expect(limited.body).toMatchObject({ stale: true, total: fresh.body.total })
      expect(limited.body.items).toEqual(fresh.body.items)
      expect(limited.body.warning).toMatch(/rate-limiting/)
      expect(graph.libraryCalls() - before).toBe(1)

      // Code 4 is a rate limit too; a minute later the operator is asked again.
      await advance(61)
      graph.script("GET", "/message_template_library", graphError(400, { code: 4, message: "(#4) Application request limit reached" }))
      before = graph.libraryCalls()
      expect((await main(query)).body).toMatchObject({ stale: true, items: fresh.body.items })
      expect(graph.libraryCalls() - before).toBe(1)

      // Transient failures: the operator's code 2, then a bare 503.
      for (const failure of [graphError(500, { code: 2, message: "Service temporarily unavailable", is_transient: true }), { status: 503, body: "Service Unavailable" }]) {
        await advance(61)
        graph.script("GET", "/message_template_library", failure)
        before = graph.libraryCalls()
        const down = await main(query)
        expect(down.status).toBe(200)
        expect(down.body).toMatchObject({ stale: true, items: fresh.body.items, total: fresh.body.total })
        expect(down.body.warning).toMatch(/cannot be reached/)
        expect(graph.libraryCalls() - before).toBe(1)
      }

      // A second before it is 14 days old the copy still stands in; at 14 days it is no longer served.
      await advance(14 * DAY - 12 * HOUR - 3 * 61 - 1)
      graph.script("GET", "/message_template_library", graphError(400, { code: 80007 }))
      expect((await main(query)).body).toMatchObject({ stale: true, items: fresh.body.items })
      await advance(1)
      graph.script("GET", "/message_template_library", graphError(400, { code: 80007, fbtrace_id: "ATrace14Days" }))
      const expiredLimited = await main(query)
      expect(expiredLimited.status).toBe(429)
      expect(expiredLimited.body.detail).toMatchObject({ code: "operator_rate_limited", operator: { code: 80007, fbtrace_id: "ATrace14Days" } })
      expect(expiredLimited.body.detail.message).toMatch(/no copy/i)
      graph.script("GET", "/message_template_library", { status: 503, body: "Service Unavailable" })
      const expiredDown = await main(query)
      expect(expiredDown.status).toBe(503)
      expect(expiredDown.body.detail).toMatchObject({ code: "operator_unavailable" })
      // The operator answering again: a fresh copy.
      expect((await main(query)).body).toMatchObject({ stale: false, items: fresh.body.items })
    })

    it("with nothing cached answers 429 when rate-limited, 503 when unreachable and 502 for a refusal", async () => {
      const cases = [
        [graphError(400, { code: 4 }), 429, "operator_rate_limited", { topic: "SECURITY", language: "fr_FR" }],
        [graphError(500, { code: 2, is_transient: true }), 503, "operator_unavailable", { topic: "SECURITY", language: "it_IT" }],
        [{ status: 503, body: "<html>down</html>" }, 503, "operator_unavailable", { topic: "SECURITY", language: "de_DE" }],
        [graphError(400, { code: 100, message: "(#100) Invalid parameter" }), 502, "operator_other", { topic: "SECURITY", language: "pt_BR" }],
        [graphError(401, { code: 190, message: "Invalid OAuth access token" }), 502, "operator_auth", { topic: "SECURITY", language: "es_ES" }]
      ] as const
      for (const [answer, status, code, query] of cases) {
        graph.script("GET", "/message_template_library", answer)
        const got = await main(query)
        expect(got.status, JSON.stringify(got.body)).toBe(status)
        expect(got.body.detail.code).toBe(code)
        expect(got.body.detail.message.length).toBeGreaterThan(20)
      }
      // Nothing was cached by the failures: the next browse reads the operator and succeeds.
      const before = graph.libraryCalls()
      expect((await main({ topic: "SECURITY", language: "pt_BR" })).status).toBe(200)
      expect(graph.libraryCalls() - before).toBe(1)
    })

    it.skipIf(backend.name !== "PostgreSQL")("shares the cache between two processes on one database (needs PG_URL: two processes on one PostgreSQL)", async () => {
      const hostB = await chatapp.another()
      // Host B's test clock starts at its own start; set it to host A's time.
      const aNow = Date.parse((await http(host.url, "GET", "/_test/clock")).body.now)
      const bNow = Date.parse((await http(hostB.url, "GET", "/_test/clock")).body.now)
      if (aNow > bNow) await advance((aNow - bNow) / 1000, hostB)
      const query = { channel_id: channels.main.channel_id, usecase: "DELIVERY_UPDATE", limit: 500 }
      const before = graph.libraryCalls()
      const onA = await browse(query)
      expect(onA.status).toBe(200)
      const read = graph.libraryCalls() - before
      expect(read).toBeGreaterThan(0)
      const onB = await browse(query, tenant, hostB)
      expect(onB.status).toBe(200)
      expect(onB.body).toEqual(onA.body)
      expect(graph.libraryCalls() - before).toBe(read)
    })
  })

  describe("sending limit", () => {
    const limitOf = (channelId: string) => api("GET", `/chatapp/channels/${channelId}/sending-limit`)

    it("reads the number from the operator, quality in upper case, stale with the last values when the operator fails", async () => {
      graph.number(NUMBERS.limits, { quality_rating: "green", messaging_limit_tier: "TIER_10K", throughput_level: "HIGH" })
      const got = await limitOf(channels.limits.channel_id)
      expect(got.status).toBe(200)
      expect(got.body).toEqual({
        channel_id: channels.limits.channel_id,
        channel_type: "chatapp",
        messaging_limit_tier: "TIER_10K",
        quality_rating: "GREEN",
        throughput_level: "HIGH",
        phone_status: "CONNECTED",
        throughput_per_second: 1_000,
        stale: false,
        supported: true
      })
      const read = graph.requests().filter((r) => r.method === "GET" && r.path === `/${NUMBERS.limits}`).at(-1)!
      expect(read.headers.authorization).toBe(`Bearer ${TOKEN}`)

      graph.script("GET", `/${NUMBERS.limits}`, graphError(500, { code: 2, message: "Service temporarily unavailable", is_transient: true }))
      expect((await limitOf(channels.limits.channel_id)).body).toEqual({ ...got.body, stale: true })
      graph.script("GET", `/${NUMBERS.limits}`, graphError(400, { code: 80007 }))
      expect((await limitOf(channels.limits.channel_id)).body).toEqual({ ...got.body, stale: true })
      // The operator answering again: fresh values.
      graph.number(NUMBERS.limits, { quality_rating: "yellow" })
      expect((await limitOf(channels.limits.channel_id)).body).toEqual({ ...got.body, quality_rating: "YELLOW", stale: false })
    })

    it("keeps a phone_number_quality_update webhook's tier and flag, served when the operator cannot be read", async () => {
      // The channel keeps the display number the operator reported when it was connected.
      const display = (await api("GET", `/channels/${channels.limits.channel_id}`)).body.config.display_phone_number as string
      expect(display).toMatch(/^\+1 555-/)
      await webhook({
        object: "whatsapp_business_account",
        entry: [{
          id: WABAS.limits,
          changes: [{
            field: "phone_number_quality_update",
            value: { display_phone_number: display.replace(/\D/g, ""), event: "FLAGGED", current_limit: "TIER_250" }
          }]
        }]
      })
      await drain()
      graph.script("GET", `/${NUMBERS.limits}`, { status: 503, body: "Service Unavailable" })
      const got = await limitOf(channels.limits.channel_id)
      expect(got.status).toBe(200)
      expect(got.body).toMatchObject({
        messaging_limit_tier: "TIER_250",
        quality_rating: "RED",
        phone_status: "FLAGGED",
        stale: true,
        supported: true
      })
    })

    it("answers supported: false for a channel that is not chat-app, and 404 for another tenant's channel", async () => {
      const link = await api("POST", "/channel-connect-tokens", { allowed_channel_types: ["botchat"] })
      expect(link.status).toBe(201)
      const form = await fetch(`${link.body.connect_url}?type=botchat`)
      const html = await form.text()
      const csrf = /name="csrf" value="([^"]+)"/.exec(html)?.[1] ?? ""
      const connected = await fetch(link.body.connect_url, {
        method: "POST",
        redirect: "manual",
        headers: { "content-type": "application/x-www-form-urlencoded", cookie: (form.headers.get("set-cookie") ?? "").split(";")[0]! },
        body: new URLSearchParams({ csrf, channel_type: "botchat", bot_token: "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw" }).toString()
      })
      expect(connected.status).toBe(200)
      const bot = ((await api("GET", "/channels?page_size=100")).body.items as Array<any>).find((c) => c.platform === "botchat")
      const got = await limitOf(bot.id)
      expect(got.status).toBe(200)
      expect(got.body).toMatchObject({ channel_id: bot.id, channel_type: "botchat", supported: false, stale: false })
      expect((await limitOf(channels.others.channel_id)).status).toBe(404)
      // The library cannot be browsed through it either.
      expect((await browse({ channel_id: bot.id })).status).toBe(400)
    })
  })
})
