import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ChatappHost, startChatappHost, type Tenant } from "../support/ChatappHost.ts"
import { FAKE_LIBRARY, type FakeGraph, type FakeGraphRequest, graphError } from "../support/FakeGraph.ts"
import { admin } from "../support/Host.ts"
import { hostBackends } from "../support/HostBackends.ts"
import type { ValidationIssue } from "../../src/kernel/ApiError.ts"
import type { LibraryTemplateEntry } from "../../src/templates/LibraryEntry.ts"
import type { Template } from "../../src/templates/Template.ts"

// Adopting library templates, seen from outside: the host as a child process on a manual test
// clock, and a fake Graph server recording what the operator was asked to create (library calls or
// ordinary templates) and playing its refusals. Sends and status webhooks: templates-send.test.ts.

const TOKEN = "EAAGadopttokenabcdefghijklmnopqrstuvwxyz"
const PHONE_NUMBER_ID = "106540352250001"
const WABA_ID = "102290129350001"
/** A business account of its own: no browse ever read its library, so no copy of it is kept. */
const FRESH_WABA_ID = "102290129350009"

const feedback = (language: string, body: string, id: string) => ({
  name: "delivery_feedback_1",
  language,
  category: "UTILITY",
  topic: "CUSTOMER_FEEDBACK",
  usecase: "FEEDBACK_SURVEY",
  industry: ["E_COMMERCE"],
  body,
  body_params: ["Maria"],
  buttons: [{ type: "QUICK_REPLY", text: "Yes" }, { type: "QUICK_REPLY", text: "No" }],
  id
})
/** A link and a number to call, both stand-ins the caller replaces. */
const SUPPORT = {
  name: "support_contact_1",
  language: "en_US",
  category: "UTILITY",
  topic: "CUSTOMER_SUPPORT",
  usecase: "SUPPORT_CONTACT",
  industry: ["E_COMMERCE"],
  header: "We're here to help",
  body: "Hi {{1}}, questions about order {{2}}? Reach us below.",
  footer: "Replies within a day",
  body_params: ["Maria", "#12345"],
  buttons: [
    { type: "URL", text: "Help centre", url: "https://www.example.com/help/{{1}}" },
    { type: "PHONE_NUMBER", text: "Call us", phone_number: "+15555550100" }
  ],
  id: "7100000000000030"
}
const LIBRARY = [
  ...FAKE_LIBRARY,
  feedback("en_US", "Hi {{1}}, did your order arrive in good shape?", "7100000000000010"),
  feedback("es_ES", "Hola, {{1}}: ¿llegó bien tu pedido?", "7100000000000011"),
  SUPPORT,
  {
    name: "login_code_1",
    language: "en_US",
    category: "AUTHENTICATION",
    topic: "SECURITY",
    usecase: "VERIFICATION_CODE",
    industry: ["FINANCIAL_SERVICES"],
    body: "{{1}} is your login code.",
    footer: "This code expires in 10 minutes.",
    body_params: ["123456"],
    buttons: [{ type: "OTP", text: "Copy code", otp_type: "COPY_CODE" }],
    id: "7100000000000040"
  }
]
const ORDER_INPUTS = [{ type: "URL", url: { base_url: "https://shop.acme.com/orders/{{1}}", url_suffix_example: "https://shop.acme.com/orders/A-1001" } }]

/** What the operator was asked to create: a library adoption or an ordinary template (the fields the tests read). */
interface CreateBody {
  readonly name: string
  readonly library_template_name?: string
  /** The button inputs, JSON-encoded as the operator takes them. */
  readonly library_template_button_inputs?: string
  readonly components?: ReadonlyArray<Readonly<Record<string, unknown>>>
}

/** The wording and buttons of a browsed entry: what a client shows and sends back as `snapshot`. */
const snapshotOf = (entry: LibraryTemplateEntry) => ({
  name: entry.name,
  language: entry.language,
  category: entry.category,
  header: entry.header,
  body: entry.body,
  footer: entry.footer,
  body_params: entry.body_params,
  buttons: entry.buttons
})

describe.each(hostBackends)("adopting library templates on the reference host ($name)", (backend) => {
  let chatapp: ChatappHost
  let env: Readonly<Record<string, string>>
  let graph: FakeGraph
  let tenant: Tenant
  let other: Tenant
  let channelId: string
  /** Another number of the same business account: the operator's templates are the account's. */
  let siblingId: string
  /** A number of `FRESH_WABA_ID`. */
  let freshId: string
  /** A number of the business account, disconnected: not usable to read the library or adopt. */
  let goneId: string

  beforeAll(async () => {
    chatapp = await startChatappHost(backend, { accessToken: TOKEN, graph: { library: LIBRARY } })
    ;({ env, graph, tenant, other } = chatapp)
    ;[{ channel_id: channelId }, { channel_id: siblingId }, freshId, goneId] = await Promise.all([
      chatapp.channel(PHONE_NUMBER_ID, WABA_ID),
      chatapp.channel("106540352250002", WABA_ID),
      connect("106540352250009", FRESH_WABA_ID),
      connect("106540352250003", WABA_ID)
    ])
    expect((await chatapp.api("POST", `/channels/${goneId}/disconnect`)).status).toBe(200)
  })
  afterAll(() => chatapp?.close())

  const api = (method: string, path: string, body?: unknown, as: { key: string } = tenant) => chatapp.api(method, path, body, as)
  /** Connects a chat-app number to the tenant through a connect link, as a customer would; answers the channel's id. */
  const connect = async (phoneNumberId: string, businessAccountId: string): Promise<string> => {
    const link = await api("POST", "/channel-connect-tokens", { allowed_channel_types: ["chatapp"] })
    expect(link.status, JSON.stringify(link.body)).toBe(201)
    const form = await fetch(`${link.body.connect_url}?type=chatapp`)
    const csrf = /name="csrf" value="([^"]+)"/.exec(await form.text())?.[1] ?? ""
    const connected = await fetch(link.body.connect_url, {
      method: "POST",
      redirect: "manual",
      headers: { "content-type": "application/x-www-form-urlencoded", cookie: (form.headers.get("set-cookie") ?? "").split(";")[0]! },
      body: new URLSearchParams({
        csrf,
        channel_type: "chatapp",
        phone_number_id: phoneNumberId,
        business_account_id: businessAccountId,
        access_token: TOKEN
      }).toString()
    })
    expect(connected.status).toBe(200)
    const channels = (await api("GET", "/channels?page_size=100")).body.items as Array<{ id: string; external_id: string }>
    return channels.find((channel) => channel.external_id === phoneNumberId)!.id
  }
  const adopt = (body: Record<string, unknown>, as: { key: string } = tenant) =>
    api("POST", "/chatapp-templates/library/adopt", { channel_id: channelId, ...body }, as)
  /** The template creations the operator received since `from` (an index into its requests). */
  const creations = (from = 0, account = WABA_ID): Array<FakeGraphRequest & { json: CreateBody }> =>
    graph.requests().slice(from).filter((r) => r.method === "POST" && r.path === `/${account}/message_templates`) as never
  const mark = () => graph.requests().length

  describe("adopt", () => {
    it("creates an unchanged entry through the operator's library call, approved at once; the same adopt again sends nothing", async () => {
      const from = mark()
      const adopted = await adopt({ library_template_name: "order_confirmation_1", name: "Order Confirmation-1", button_inputs: ORDER_INPUTS })
      expect(adopted.status, JSON.stringify(adopted.body)).toBe(201)
      expect(adopted.body).toEqual({
        success: true,
        id: expect.any(String),
        template_id: expect.any(String),
        name: "order_confirmation_1",
        language: "en_US",
        status: "approved",
        category: "UTILITY",
        already_existed: false,
        error: null,
        error_code: null,
        error_subcode: null,
        error_is_retryable: false,
        fbtrace_id: null
      })
      const [created, ...more] = creations(from)
      expect(more).toEqual([])
      expect(created!.headers.authorization).toBe(`Bearer ${TOKEN}`)
      expect(created!.json).toMatchObject({ name: "order_confirmation_1", language: "en_US", category: "UTILITY", library_template_name: "order_confirmation_1" })
      expect(created!.json.components).toBeUndefined()
      // The operator takes the button inputs as a JSON-encoded string.
      expect(typeof created!.json.library_template_button_inputs).toBe("string")
      expect(JSON.parse(String(created!.json.library_template_button_inputs))).toEqual(ORDER_INPUTS)

      // The entry looked up by name and language, then the creation: no re-sync of the account's templates to confirm.
      expect(graph.requests().slice(from).map((r) => `${r.method} ${r.path}`)).toEqual([
        "GET /message_template_library",
        `POST /${WABA_ID}/message_templates`
      ])
      expect(graph.requests()[from]!.query).toMatchObject({ name: "order_confirmation_1", language: "en_US" })

      const stored = await api("GET", `/chatapp-templates/${adopted.body.id}`)
      expect(stored.body).toMatchObject({ channel_id: channelId, status: "approved", template_id: adopted.body.template_id, library_template_name: "order_confirmation_1" })

      const repeat = mark()
      const again = await adopt({ library_template_name: "order_confirmation_1", name: "order confirmation 1", button_inputs: ORDER_INPUTS })
      expect(again.status).toBe(200)
      expect(again.body).toEqual({ ...adopted.body, already_existed: true })
      expect(graph.requests().slice(repeat)).toEqual([])
    })

    it("refuses bad button_inputs with 422 naming the element, and asks the operator nothing", async () => {
      const from = mark()
      const url = (base_url: string, url_suffix_example?: string) => ({
        type: "URL",
        url: url_suffix_example === undefined ? { base_url } : { base_url, url_suffix_example }
      })
      const phone = (phone_number: string) => ({ type: "PHONE_NUMBER", phone_number })
      const good = url("https://acme.com/help/{{1}}", "https://acme.com/help/returns")
      const cases: Array<[string, Array<unknown>, Array<string | number>]> = [
        ["support_contact_1", [good, phone("5555550100")], ["body", "button_inputs", 1, "phone_number"]],
        ["support_contact_1", [good, phone("+44 20 7946 0000")], ["body", "button_inputs", 1, "phone_number"]],
        ["support_contact_1", [url("https://acme.com/{{1}}/{{2}}", "https://acme.com/a/b"), phone("+442079460000")], ["body", "button_inputs", 0, "url", "base_url"]],
        ["support_contact_1", [url("https://acme.com/help/{{1}}"), phone("+442079460000")], ["body", "button_inputs", 0, "url", "url_suffix_example"]],
        ["support_contact_1", [url("https://acme.com/help/{{1}}", "https://other.com/returns"), phone("+442079460000")], ["body", "button_inputs", 0, "url", "url_suffix_example"]],
        ["support_contact_1", [phone("+442079460000"), good], ["body", "button_inputs", 0, "type"]],
        ["verification_code_1", [{ type: "OTP", otp_type: "SMS_CODE" }], ["body", "button_inputs", 0, "otp_type"]],
        // One element per link or number button, no more and no fewer; quick replies take none.
        ["support_contact_1", [good], ["body", "button_inputs"]],
        ["delivery_feedback_1", [good], ["body", "button_inputs", 0, "type"]]
      ]
      for (const [library_template_name, button_inputs, loc] of cases) {
        const refused = await adopt({ library_template_name, button_inputs })
        expect(refused.status, JSON.stringify(button_inputs)).toBe(422)
        expect(refused.body.detail.map((issue: ValidationIssue) => issue.loc), JSON.stringify(refused.body)).toContainEqual(loc)
      }
      // A blank language is refused, not read as every language.
      const blank = await adopt({ library_template_name: "delivery_feedback_1", language: "  " })
      expect(blank.status).toBe(422)
      expect(blank.body.detail.map((issue: ValidationIssue) => issue.loc)).toContainEqual(["body", "language"])
      // An entry with stand-in destinations needs inputs at all.
      const none = await adopt({ library_template_name: "support_contact_1" })
      expect(none.status).toBe(422)
      expect(none.body.detail[0].loc).toEqual(["body", "button_inputs"])
      expect(creations(from)).toEqual([])
      // Good inputs go through, in the entry's order.
      const ok = await adopt({ library_template_name: "support_contact_1", button_inputs: [good, phone("+442079460000")] })
      expect(ok.status, JSON.stringify(ok.body)).toBe(201)
      expect(JSON.parse(String(creations(from)[0]!.json.library_template_button_inputs))).toEqual([good, phone("+442079460000")])
    })

    it("submits changed wording as an ordinary template for review; a rename and new destinations stay a library adoption", async () => {
      const entry = (await api("GET", `/chatapp-templates/library?channel_id=${channelId}&name=order_confirmation_1&language=en_US`)).body.items[0]
      let from = mark()
      const changed = await adopt({
        library_template_name: "order_confirmation_1",
        name: "Order confirmed (ours)",
        button_inputs: ORDER_INPUTS,
        snapshot: { ...snapshotOf(entry), body: "Hello {{1}}, your order {{2}} is confirmed. Thank you!" }
      })
      expect(changed.status, JSON.stringify(changed.body)).toBe(201)
      expect(changed.body).toMatchObject({ success: true, name: "order_confirmed_ours", status: "pending", already_existed: false })
      const ordinary = creations(from)[0]!.json
      expect(ordinary.library_template_name).toBeUndefined()
      expect(ordinary.library_template_button_inputs).toBeUndefined()
      expect(ordinary).toMatchObject({ name: "order_confirmed_ours", language: "en_US", category: "UTILITY" })
      expect(ordinary.components).toEqual([
        { type: "HEADER", format: "TEXT", text: "Order confirmed" },
        { type: "BODY", text: "Hello {{1}}, your order {{2}} is confirmed. Thank you!", example: { body_text: [["Maria", "#12345"]] } },
        { type: "BUTTONS", buttons: [{ type: "URL", text: "View order", url: "https://shop.acme.com/orders/{{1}}", example: ["https://shop.acme.com/orders/A-1001"] }] }
      ])
      expect((await api("GET", `/chatapp-templates/${changed.body.id}`)).body).toMatchObject({ status: "pending", library_template_name: null })

      from = mark()
      const renamed = await adopt({
        library_template_name: "order_confirmation_1",
        name: "My Orders",
        button_inputs: [{ type: "URL", url: { base_url: "https://acme.com/o/{{1}}", url_suffix_example: "https://acme.com/o/9" } }],
        snapshot: { ...snapshotOf(entry), buttons: [{ type: "URL", text: "View order", url: "https://acme.com/o/{{1}}" }] }
      })
      expect(renamed.status).toBe(201)
      expect(renamed.body).toMatchObject({ name: "my_orders", status: "approved" })
      expect(creations(from)[0]!.json).toMatchObject({ name: "my_orders", library_template_name: "order_confirmation_1" })
      expect(creations(from)[0]!.json.components).toBeUndefined()
    })

    it("answers the operator's refusals with success false, its error fields and a status telling whether to retry", async () => {
      graph.script("POST", "/{waba}/message_templates", graphError(400, { code: 80007, message: "(#80007) Rate limit hit", fbtrace_id: "ATraceAdopt1" }))
      const limited = await adopt({ library_template_name: "delivery_feedback_1", language: "es_ES" })
      expect(limited.status).toBe(429)
      expect(limited.body).toMatchObject({
        success: false,
        id: null,
        name: "delivery_feedback_1",
        language: "es_ES",
        already_existed: false,
        error_code: 80007,
        error_is_retryable: true,
        fbtrace_id: "ATraceAdopt1"
      })
      expect(limited.body.error).toMatch(/Rate limit/)

      graph.script("POST", "/{waba}/message_templates", graphError(400, {
        code: 100,
        error_subcode: 2388299,
        message: "(#100) Invalid parameter",
        error_user_title: "Invalid template",
        error_user_msg: "The template's category does not match its content",
        fbtrace_id: "ATraceAdopt2"
      }))
      const invalid = await adopt({ library_template_name: "delivery_feedback_1", language: "es_ES" })
      expect(invalid.status).toBe(422)
      expect(invalid.body).toMatchObject({
        success: false,
        error_code: 100,
        error_subcode: 2388299,
        error_is_retryable: false,
        fbtrace_id: "ATraceAdopt2",
        error: "Invalid template: The template's category does not match its content"
      })
      // A transient failure (the operator's code 2, then a bare 503) is worth retrying; refused credentials are not.
      for (const answer of [graphError(500, { code: 2, message: "Service temporarily unavailable", is_transient: true, fbtrace_id: "ATraceAdopt3" }), { status: 503, body: "Service Unavailable" }]) {
        graph.script("POST", "/{waba}/message_templates", answer)
        const down = await adopt({ library_template_name: "delivery_feedback_1", language: "es_ES" })
        expect(down.status, JSON.stringify(down.body)).toBe(503)
        expect(down.body).toMatchObject({ success: false, id: null, already_existed: false, error_is_retryable: true })
        expect(down.body.error.length).toBeGreaterThan(0)
      }
      graph.script("POST", "/{waba}/message_templates", graphError(401, { code: 190, message: "Invalid OAuth access token", fbtrace_id: "ATraceAdopt4" }))
      const revoked = await adopt({ library_template_name: "delivery_feedback_1", language: "es_ES" })
      expect(revoked.status).toBe(502)
      expect(revoked.body).toMatchObject({ success: false, error_code: 190, error_is_retryable: false, fbtrace_id: "ATraceAdopt4" })

      // None of the failures kept the name: the next try creates it.
      const retried = await adopt({ library_template_name: "delivery_feedback_1", language: "es_ES" })
      expect(retried.status).toBe(201)
      expect(retried.body).toMatchObject({ success: true, status: "approved", language: "es_ES" })
      const rows = (await api("GET", `/chatapp-templates?channel_id=${channelId}&page_size=200`)).body.items as Array<Template>
      expect(rows.filter((row) => row.name === "delivery_feedback_1" && row.language === "es_ES")).toHaveLength(1)

      // A channel the tenant does not have.
      expect((await adopt({ library_template_name: "delivery_feedback_1" }, other)).status).toBe(404)
      const noChannel = await adopt({ channel_id: "6a1f0c2e-0000-4000-8000-000000000000", library_template_name: "delivery_feedback_1" })
      expect(noChannel.status).toBe(404)
      // Every failure of an adoption answers in the adopt response's shape.
      expect(noChannel.body).toMatchObject({ success: false, id: null, name: "delivery_feedback_1", error: expect.stringContaining("not found") })
      // A library name the operator does not have, with no snapshot to fall back on.
      const from = mark()
      const unknown = await adopt({ library_template_name: "no_such_template_1" })
      expect(unknown.status).toBe(404)
      expect(unknown.body).toMatchObject({ success: false, error_is_retryable: false })
      expect(creations(from)).toEqual([])
    })

    it("checks a snapshot against a kept copy of the entry when reading it back is rate-limited", async () => {
      // The client browsed earlier (another query), so a copy of the entry is kept; the snapshot is what it shows.
      const shown = await api("GET", `/chatapp-templates/library?channel_id=${channelId}&search=login`)
      const entry = (shown.body.items as Array<LibraryTemplateEntry>).find((item) => item.name === "login_code_1")
      expect(entry).toBeDefined()
      const from = mark()
      graph.script("GET", "/message_template_library", graphError(400, { code: 4, message: "(#4) Application request limit reached" }))
      const adopted = await adopt({ library_template_name: "login_code_1", snapshot: snapshotOf(entry!) })
      expect(adopted.status, JSON.stringify(adopted.body)).toBe(201)
      expect(adopted.body).toMatchObject({ success: true, status: "approved", category: "AUTHENTICATION" })
      const library = graph.requests().slice(from).filter((r) => r.path === "/message_template_library")
      expect(library).toHaveLength(1)
      expect(library[0]!.query).toMatchObject({ name: "login_code_1", language: "en_US" })
      expect(creations(from)[0]!.json).toMatchObject({ name: "login_code_1", category: "AUTHENTICATION", library_template_name: "login_code_1" })
      expect(creations(from)[0]!.json.components).toBeUndefined()
    })

    it("takes the snapshot as the entry when reading it back is rate-limited and no copy of the account holds it", async () => {
      // The client's snapshot, as a browse through another business account showed the entry.
      const entry = (await api("GET", `/chatapp-templates/library?channel_id=${channelId}&name=support_contact_1&language=en_US`)).body.items[0]
      expect(entry).toMatchObject({ name: "support_contact_1", requires_input: true })
      const inputs = [
        { type: "URL", url: { base_url: "https://acme.com/help/{{1}}", url_suffix_example: "https://acme.com/help/returns" } },
        { type: "PHONE_NUMBER", phone_number: "+442079460000" }
      ]
      const limited = graphError(400, { code: 80007, message: "(#80007) Rate limit hit", fbtrace_id: "ATraceLookup" })
      graph.script("GET", "/message_template_library", limited, limited)
      const from = mark()
      // Without a snapshot there is nothing to fall back on: the lookup's rate limit is the answer.
      const refused = await adopt({ channel_id: freshId, library_template_name: "support_contact_1", button_inputs: inputs })
      expect(refused.status, JSON.stringify(refused.body)).toBe(429)
      expect(refused.body).toMatchObject({ success: false, error_code: 80007, error_is_retryable: true, fbtrace_id: "ATraceLookup" })
      expect(creations(from)).toEqual([])

      const adopted = await adopt({ channel_id: freshId, library_template_name: "support_contact_1", button_inputs: inputs, snapshot: snapshotOf(entry) })
      expect(adopted.status, JSON.stringify(adopted.body)).toBe(201)
      expect(adopted.body).toMatchObject({ success: true, status: "approved", name: "support_contact_1", category: "UTILITY" })
      const lookups = graph.requests().slice(from).filter((r) => r.path === "/message_template_library")
      expect(lookups.map((r) => r.query)).toMatchObject([{ name: "support_contact_1", language: "en_US" }, { name: "support_contact_1", language: "en_US" }])
      // Created through the library call on the fresh account, with the caller's destinations.
      const created = creations(from, FRESH_WABA_ID)
      expect(created).toHaveLength(1)
      expect(created[0]!.json).toMatchObject({ name: "support_contact_1", library_template_name: "support_contact_1" })
      expect(created[0]!.json.components).toBeUndefined()
      expect(JSON.parse(String(created[0]!.json.library_template_button_inputs))).toEqual(inputs)
      // The stored wording is the snapshot's, with the destinations given.
      const stored = (await api("GET", `/chatapp-templates/${adopted.body.id}`)).body
      expect(stored).toMatchObject({ channel_id: freshId, status: "approved", library_template_name: "support_contact_1" })
      expect(stored.components).toEqual([
        { type: "HEADER", format: "TEXT", text: SUPPORT.header },
        { type: "BODY", text: SUPPORT.body, example: { body_text: [SUPPORT.body_params] } },
        { type: "FOOTER", text: SUPPORT.footer },
        {
          type: "BUTTONS",
          buttons: [
            { type: "URL", text: "Help centre", url: "https://acme.com/help/{{1}}", example: ["https://acme.com/help/returns"] },
            { type: "PHONE_NUMBER", text: "Call us", phone_number: "+442079460000" }
          ]
        }
      ])
    })

    it("submits an edited snapshot for review when the lookup is rate-limited but a kept copy shows the change", async () => {
      // The client browsed Spanish entries (kept), then edits the body and adopts while the operator rate-limits.
      const entry = (await api("GET", `/chatapp-templates/library?channel_id=${channelId}&language=es_ES`)).body.items
        .find((item: LibraryTemplateEntry) => item.name === "order_confirmation_1")
      expect(entry).toBeDefined()
      const from = mark()
      graph.script("GET", "/message_template_library", graphError(400, { code: 4 }))
      const edited = "¡Hola, {{1}}! Tu pedido {{2}} ya está confirmado."
      const adopted = await adopt({
        library_template_name: "order_confirmation_1",
        language: "es_ES",
        name: "pedido editado",
        button_inputs: ORDER_INPUTS,
        snapshot: { ...snapshotOf(entry), body: edited }
      })
      expect(adopted.status, JSON.stringify(adopted.body)).toBe(201)
      expect(adopted.body).toMatchObject({ success: true, name: "pedido_editado", language: "es_ES", status: "pending" })
      // Never the library's call for wording the library does not hold: an ordinary template with the edited body.
      const [asked, ...more] = creations(from)
      expect(more).toEqual([])
      expect(asked!.json.library_template_name).toBeUndefined()
      expect(asked!.json.components?.find((c) => c.type === "BODY")?.text).toBe(edited)
      const stored = (await api("GET", `/chatapp-templates/${adopted.body.id}`)).body
      expect(stored).toMatchObject({ status: "pending", library_template_name: null })
      expect(stored.components.find((c: Template["components"][number]) => c.type === "BODY").text).toBe(edited)
    })

    it("submits a name the library lacks as an ordinary template when a snapshot gives its wording", async () => {
      const from = mark()
      const snapshot = {
        header: "Opening hours",
        body: "Hi {{1}}, we open at {{2}} tomorrow.",
        footer: "Acme stores",
        body_params: ["Maria", "9 am"]
      }
      const adopted = await adopt({ library_template_name: "store_hours_notice", snapshot })
      expect(adopted.status, JSON.stringify(adopted.body)).toBe(201)
      expect(adopted.body).toMatchObject({ success: true, name: "store_hours_notice", language: "en_US", status: "pending", category: "UTILITY" })
      const [asked, ...more] = creations(from)
      expect(more).toEqual([])
      expect(asked!.json).toEqual({
        name: "store_hours_notice",
        language: "en_US",
        category: "UTILITY",
        components: [
          { type: "HEADER", format: "TEXT", text: "Opening hours" },
          { type: "BODY", text: "Hi {{1}}, we open at {{2}} tomorrow.", example: { body_text: [["Maria", "9 am"]] } },
          { type: "FOOTER", text: "Acme stores" }
        ]
      })
      expect((await api("GET", `/chatapp-templates/${adopted.body.id}`)).body).toMatchObject({ status: "pending", library_template_name: null })
    })

    it("refuses a disconnected chat-app channel with 400: the browse plainly, the adopt with success false", async () => {
      const from = mark()
      const browsed = await api("GET", `/chatapp-templates/library?channel_id=${goneId}`)
      expect(browsed.status).toBe(400)
      expect(browsed.body.detail).toMatchObject({ code: "channel_unavailable", message: expect.stringMatching(/not a usable chat-app channel/) })
      const adopted = await adopt({ channel_id: goneId, library_template_name: "delivery_feedback_1" })
      expect(adopted.status).toBe(400)
      expect(adopted.body).toMatchObject({ success: false, id: null, error_is_retryable: false, error: expect.stringMatching(/not a usable chat-app channel/) })
      expect(graph.requests().slice(from)).toEqual([])
    })

    it("takes as snapshot the entry exactly as the browse returned it", async () => {
      // The spec's snapshot is "the entry as the client displayed it": the browse's entry object.
      const entry = (await api("GET", `/chatapp-templates/library?channel_id=${channelId}&name=delivery_feedback_1&language=en_US`)).body.items[0]
      const adopted = await adopt({ library_template_name: "delivery_feedback_1", name: "feedback as shown", snapshot: entry })
      expect(adopted.status, JSON.stringify(adopted.body)).toBe(201)
      expect(adopted.body).toMatchObject({ success: true, name: "feedback_as_shown", status: "approved" })
    })

    // Two keys made by the operator CLI: two processes to start, slow on a loaded machine.
    it("lets a key with messages:create adopt, and refuses one with channels:read alone; browse and sending limit need channels:read", { timeout: 120_000 }, async () => {
      const [writer, reader] = await Promise.all([
        admin(env, "api-key", "create", "--tenant", tenant.id, "--scopes", "messages:create"),
        admin(env, "api-key", "create", "--tenant", tenant.id, "--scopes", "channels:read")
      ])
      const refused = await adopt({ library_template_name: "delivery_feedback_1", name: "feedback by reader" }, { key: reader.api_key })
      expect(refused.status).toBe(403)
      expect(refused.body.detail).toMatch(/channels:admin or messages:create/)
      const allowed = await adopt({ library_template_name: "delivery_feedback_1", name: "feedback by agent" }, { key: writer.api_key })
      expect(allowed.status, JSON.stringify(allowed.body)).toBe(201)
      expect(allowed.body).toMatchObject({ name: "feedback_by_agent", status: "approved" })
      // channels:read browses the library and reads the sending limit; messages:create alone does neither.
      expect((await api("GET", `/chatapp-templates/library?channel_id=${channelId}`, undefined, { key: reader.api_key })).status).toBe(200)
      expect((await api("GET", `/chatapp/channels/${channelId}/sending-limit`, undefined, { key: reader.api_key })).status).toBe(200)
      expect((await api("GET", `/chatapp-templates/library?channel_id=${channelId}`, undefined, { key: writer.api_key })).status).toBe(403)
      const limit = await api("GET", `/chatapp/channels/${channelId}/sending-limit`, undefined, { key: writer.api_key })
      expect(limit.status).toBe(403)
      expect(limit.body.detail).toMatch(/channels:read/)
    })

    it("creates one template when five identical adopts arrive at once", async () => {
      const from = mark()
      const answers = await Promise.all(Array.from({ length: 5 }, () => adopt({ library_template_name: "delivery_feedback_1", name: "Feedback at once" })))
      expect(answers.map((a) => a.status).sort()).toEqual([200, 200, 200, 200, 201])
      const created = answers.find((a) => a.status === 201)!.body
      for (const answer of answers.filter((a) => a.status === 200)) {
        expect(answer.body).toEqual({ ...created, already_existed: true })
      }
      expect(creations(from).filter((r) => r.json.name === "feedback_at_once")).toHaveLength(1)
      const rows = (await api("GET", `/chatapp-templates?channel_id=${channelId}&page_size=200`)).body.items as Array<Template>
      expect(rows.filter((row) => row.name === "feedback_at_once").map((row) => row.id)).toEqual([created.id])
    })

    it("records a template the operator already has under that name and language; 409 when it cannot be found", async () => {
      const mine = (await api("GET", `/chatapp-templates?channel_id=${channelId}&page_size=200`)).body.items.find((t: Template) => t.name === "feedback_at_once")
      expect(mine).toBeDefined()
      const exists = graphError(400, {
        code: 100,
        error_subcode: 2388024,
        message: "(#100) Invalid parameter",
        error_user_title: "Content in This Language Already Exists",
        error_user_msg: "There is already English (US) content for this template."
      })
      graph.script("POST", "/{waba}/message_templates", exists)
      const from = mark()
      const found = await adopt({ channel_id: siblingId, library_template_name: "delivery_feedback_1", name: "Feedback at once" })
      expect(found.status, JSON.stringify(found.body)).toBe(200)
      expect(found.body).toMatchObject({ success: true, already_existed: true, status: "approved", template_id: mine.template_id })
      expect(found.body.id).not.toBe(mine.id)
      expect(graph.requests().slice(from).some((r) => r.method === "GET" && r.path === `/${WABA_ID}/message_templates`)).toBe(true)

      graph.script("POST", "/{waba}/message_templates", exists)
      const lost = await adopt({ channel_id: siblingId, library_template_name: "delivery_feedback_1", name: "Feedback nobody has" })
      expect(lost.status).toBe(409)
      expect(lost.body).toMatchObject({ success: false, error_code: 100, error_subcode: 2388024, error_is_retryable: false })
    })
  })
})
