import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ChatappHost, startChatappHost, type Tenant } from "../support/ChatappHost.ts"
import { type FakeGraph, type FakeGraphRequest, graphError } from "../support/FakeGraph.ts"
import { type HostProcess, http } from "../support/Host.ts"
import { hostBackends } from "../support/HostBackends.ts"
import { waitUntil } from "../support/Poll.ts"
import type { Message } from "../../src/messages/MessageService.ts"

// Sending adopted templates and the operator's template status webhooks, seen from outside: the host
// as a child process on a manual test clock, a fake Graph server (its default library) recording the
// template sends, and signed `message_template_status_update` payloads moving templates.

const APP_SECRET = "templates-send-app-secret"
const TOKEN = "EAAGsendtokenabcdefghijklmnopqrstuvwxyz0"
const PHONE_NUMBER_ID = "106540352270001"
const WABA_ID = "102290129370001"
const ORDER_INPUTS = [{ type: "URL", url: { base_url: "https://shop.acme.com/orders/{{1}}", url_suffix_example: "https://shop.acme.com/orders/A-1001" } }]
const EDITED = "Hello {{1}}, your order {{2}} is confirmed. Thank you!"

describe.each(hostBackends)("sending templates and their status webhooks on the reference host ($name)", (backend) => {
  let chatapp: ChatappHost
  let host: HostProcess
  let graph: FakeGraph
  let tenant: Tenant
  let other: Tenant
  let channelId: string
  /** Another number of the same business account. */
  let siblingId: string

  beforeAll(async () => {
    chatapp = await startChatappHost(backend, { accessToken: TOKEN, appSecret: APP_SECRET, verifyToken: "templates-send-verify-token" })
    ;({ host, graph, tenant, other } = chatapp)
    ;[{ channel_id: channelId }, { channel_id: siblingId }] =
      await Promise.all([chatapp.channel(PHONE_NUMBER_ID, WABA_ID), chatapp.channel("106540352270002", WABA_ID)])
  })
  afterAll(() => chatapp?.close())

  const api = (method: string, path: string, body?: unknown, as: { key: string } = tenant) => chatapp.api(method, path, body, as)
  const adopt = (body: Record<string, unknown>) => api("POST", "/chatapp-templates/library/adopt", { channel_id: channelId, ...body })
  /** The template sends the operator received since `from` (an index into its requests). */
  const sends = (from = 0): Array<FakeGraphRequest & { json: Readonly<Record<string, unknown>> }> =>
    graph.requests().slice(from).filter((r) => r.method === "POST" && r.path === `/${PHONE_NUMBER_ID}/messages`) as never
  const mark = () => graph.requests().length
  const drain = () => chatapp.drain()
  const webhook = async (raw: string) => expect((await chatapp.post(undefined, { raw })).status).toBe(200)
  let phones = 0
  const newContact = async () => {
    const created = await api("POST", "/contacts", { name: "Maria", phone: `+4477008${String(++phones).padStart(5, "0")}` })
    expect(created.status, JSON.stringify(created.body)).toBe(201)
    return created.body as { id: string; phone: string }
  }
  /** `body` adopted (once; later calls find it). */
  const adopted = async (body: Record<string, unknown>) => {
    const answer = await adopt(body)
    expect([200, 201], JSON.stringify(answer.body)).toContain(answer.status)
    return answer.body
  }
  /** The order confirmation, adopted unchanged: approved at once. */
  const orderTemplate = () => adopted({ library_template_name: "order_confirmation_1", button_inputs: ORDER_INPUTS })
  /** The order confirmation with its body edited: an ordinary template, pending review. */
  const pendingTemplate = async () => {
    const entry = (await api("GET", `/chatapp-templates/library?channel_id=${channelId}&name=order_confirmation_1&language=en_US`)).body.items[0]
    const snapshot = { header: entry.header, body: EDITED, footer: entry.footer, body_params: entry.body_params, buttons: entry.buttons }
    return adopted({ library_template_name: "order_confirmation_1", name: "Order confirmed (ours)", button_inputs: ORDER_INPUTS, snapshot })
  }

  describe("send", () => {
    it("sends an approved template with its parameters in the operator's shape, into the contact's conversation", async () => {
      const template = await orderTemplate()
      const contact = await newContact()
      const from = mark()
      const sent = await api("POST", `/chatapp-templates/${template.id}/send`, {
        contact_id: contact.id,
        channel_id: channelId,
        language: "en_US",
        variable_values: ["Maria", "#A-1001", "A-1001"]
      })
      expect(sent.status, JSON.stringify(sent.body)).toBe(201)
      expect(sent.body).toMatchObject({
        direction: "outbound",
        message_type: "template",
        status: "sent",
        channel_id: channelId,
        contact_id: contact.id,
        text: "Hi Maria, thank you for your order #A-1001."
      })
      const [call, ...more] = sends(from)
      expect(more).toEqual([])
      expect(call!.json).toMatchObject({
        messaging_product: "whatsapp",
        to: contact.phone.replace("+", ""),
        type: "template",
        template: {
          name: "order_confirmation_1",
          language: { code: "en_US" },
          components: [
            { type: "body", parameters: [{ type: "text", text: "Maria" }, { type: "text", text: "#A-1001" }] },
            { type: "button", sub_type: "url", index: "0", parameters: [{ type: "text", text: "A-1001" }] }
          ]
        }
      })
      expect(sent.body.external_id).toMatch(/^wamid\.FAKE\d+$/)
      // A second send joins the same conversation.
      const next = await api("POST", `/chatapp-templates/${template.id}/send`, { contact_id: contact.id, channel_id: channelId, variable_values: ["Maria", "#2", "A-2"] })
      expect(next.body.conversation_id).toBe(sent.body.conversation_id)
      const listed = await api("GET", `/messages?conversation_id=${sent.body.conversation_id}`)
      expect(listed.body.items.map((m: Message) => m.id)).toEqual([sent.body.id, next.body.id])
      const events = await api("GET", "/events?type=message.sent&page_size=100")
      const event = (events.body.items as Array<any>).find((e) => e.data.message.id === sent.body.id)
      expect(event?.data).toMatchObject({ conversation_id: sent.body.conversation_id, contact_id: contact.id, channel_id: channelId })
    })

    it("sends an authentication template with the code in the body and again on its copy-code button", async () => {
      const template = await adopted({ library_template_name: "verification_code_1" })
      expect(template).toMatchObject({ status: "approved", category: "AUTHENTICATION" })
      const contact = await newContact()
      const sentFrom = mark()
      const sent = await api("POST", `/chatapp-templates/${template.id}/send`, { contact_id: contact.id, channel_id: channelId, variable_values: ["482913"] })
      expect(sent.status, JSON.stringify(sent.body)).toBe(201)
      expect(sends(sentFrom)[0]!.json.template).toEqual({
        name: "verification_code_1",
        language: { code: "en_US" },
        components: [
          { type: "body", parameters: [{ type: "text", text: "482913" }] },
          { type: "button", sub_type: "url", index: "0", parameters: [{ type: "text", text: "482913" }] }
        ]
      })
    })

    it("refuses a wrong number of values, a template awaiting review and another tenant's template", async () => {
      const template = await orderTemplate()
      const contact = await newContact()
      const from = mark()
      const body = { contact_id: contact.id, channel_id: channelId, language: "en_US" }
      const short = await api("POST", `/chatapp-templates/${template.id}/send`, { ...body, variable_values: ["Maria", "#1"] })
      expect(short.status).toBe(422)
      expect(short.body.detail[0].loc).toEqual(["body", "variable_values"])
      expect(short.body.detail[0].msg).toMatch(/3/)
      const pending = await pendingTemplate()
      expect(pending.status).toBe("pending")
      const notApproved = await api("POST", `/chatapp-templates/${pending.id}/send`, { ...body, variable_values: ["Maria", "#1", "x"] })
      expect(notApproved.status).toBe(422)
      expect(notApproved.body.detail[0].type).toBe("template_not_approved")
      const elsewhere = await api("POST", `/chatapp-templates/${template.id}/send`, { ...body, channel_id: siblingId, variable_values: ["Maria", "#1", "x"] })
      expect(elsewhere.status).toBe(422)
      expect(elsewhere.body.detail[0].loc).toEqual(["body", "channel_id"])
      const emailOnly = await api("POST", "/contacts", { name: "No Phone", email: "nophone@example.com" })
      const unreachable = await api("POST", `/chatapp-templates/${template.id}/send`, { ...body, contact_id: emailOnly.body.id, variable_values: ["Maria", "#1", "x"] })
      expect(unreachable.status).toBe(422)
      expect(unreachable.body.detail[0].loc).toEqual(["body", "contact_id"])
      const foreign = await api("POST", `/chatapp-templates/${template.id}/send`, { ...body, variable_values: ["Maria", "#1", "x"] }, other)
      expect(foreign.status).toBe(404)
      expect((await api("GET", `/chatapp-templates/${template.id}`, undefined, other)).status).toBe(404)
      expect(sends(from)).toEqual([])
    })

    it("records a send to a recipient who opted out (operator code 131050) as failed with that reason", async () => {
      const template = await orderTemplate()
      const contact = await newContact()
      graph.script("POST", "/{phone_number_id}/messages", graphError(400, {
        code: 131050,
        message: "(#131050) Unable to deliver the message. This recipient has chosen to stop receiving marketing messages on WhatsApp from your business"
      }))
      const refused = await api("POST", `/chatapp-templates/${template.id}/send`, {
        contact_id: contact.id,
        channel_id: channelId,
        variable_values: ["Maria", "#2", "B-2"]
      })
      expect(refused.status).toBe(422)
      expect(refused.body.detail).toMatchObject({ code: "recipient_opted_out", operator: { code: 131050 }, message_id: expect.any(String) })
      const stored = await api("GET", `/messages/${refused.body.detail.message_id}`)
      expect(stored.body).toMatchObject({ status: "failed", message_type: "template", error: { code: 131050 } })
      expect(stored.body.failed_at).not.toBeNull()
      const events = (await api("GET", "/events?type=message.sent&page_size=100")).body.items as Array<any>
      expect(events.some((e) => e.data.message.id === stored.body.id)).toBe(false)
    })
  })

  // Issue 28, "no lost updates": what a template send writes while it waits on the operator, and
  // the conversation it opens, seen from outside.
  describe("no lost updates", () => {
    const advance = async (seconds: number) => {
      const moved = await http(host.url, "POST", "/_test/clock/advance", { body: { seconds } })
      expect(moved.status).toBe(200)
    }
    const clockSeconds = async () => Math.floor(Date.parse((await http(host.url, "GET", "/_test/clock")).body.now) / 1000)
    let inbound = 0
    /** The contact `from` (digits) writes `body` to the number: a signed webhook, processed. */
    const received = async (from: string, body: string) => {
      const timestamp = String(await clockSeconds())
      await webhook(JSON.stringify({
        object: "whatsapp_business_account",
        entry: [{
          id: WABA_ID,
          changes: [{
            field: "messages",
            value: {
              messaging_product: "whatsapp",
              metadata: { display_phone_number: "15551234567", phone_number_id: PHONE_NUMBER_ID },
              contacts: [{ profile: { name: "Maria" }, wa_id: from }],
              messages: [{ from, id: `wamid.INBOUND${String(++inbound).padStart(6, "0")}`, timestamp, type: "text", text: { body } }]
            }
          }]
        }]
      }))
      await drain()
    }
    /** Every event of `type`, oldest first. */
    const events = async (type: string) => {
      const items: Array<any> = []
      for (let page = 1;; page++) {
        const got = await api("GET", `/events?type=${type}&page_size=100&page=${page}`)
        expect(got.status).toBe(200)
        items.push(...got.body.items)
        if (!got.body.has_more) return items
      }
    }
    const conversationsOf = async (contactId: string) => (await api("GET", `/conversations?contact_id=${contactId}`)).body.items as Array<any>

    it("a message received while a template send waits on the operator keeps the window it opened; a free-form reply then goes out", async () => {
      const template = await orderTemplate()
      const contact = await newContact()
      const from = contact.phone.replace("+", "")
      // The contact wrote more than a day ago: the window is closed, only a template reaches them.
      await received(from, "Is my order on its way?")
      const [conversation, ...others] = await conversationsOf(contact.id)
      expect(others).toEqual([])
      await advance(25 * 3600)
      const closed = await api("POST", "/messages", { conversation_id: conversation.id, text: "Yes, it is." })
      expect(closed.status).toBe(422)
      expect(closed.body.detail[0].type).toBe("customer_service_window_closed")

      // The operator holds its answer to the template send until the test lets it go.
      let release!: () => void
      const held = new Promise<void>((resolve) => {
        release = resolve
      })
      graph.scriptRecipient(from, {
        json: { messaging_product: "whatsapp", contacts: [{ input: from, wa_id: from }], messages: [{ id: "wamid.HELDTEMPLATE000001" }] },
        after: held
      })
      const before = mark()
      const sending = api("POST", `/chatapp-templates/${template.id}/send`, {
        contact_id: contact.id,
        channel_id: channelId,
        variable_values: ["Maria", "#A-7", "A-7"]
      })
      try {
        await waitUntil("the operator received the template send", () => sends(before).length === 1)
        // While the send is in flight the contact writes again: the window opens.
        await advance(60)
        await received(from, "Any news?")
      } finally {
        release()
      }
      const messages = (await api("GET", `/messages?conversation_id=${conversation.id}&page_size=100`)).body.items as Array<Message>
      const latest = messages.filter((m) => m.direction === "inbound").at(-1)!
      expect(latest.text).toBe("Any news?")
      const sent = await sending
      expect(sent.status, JSON.stringify(sent.body)).toBe(201)
      expect(sent.body).toMatchObject({ status: "sent", conversation_id: conversation.id, external_id: "wamid.HELDTEMPLATE000001" })

      // The send wrote only its own times: the window the received message opened stands.
      const after = await api("GET", `/conversations/${conversation.id}`)
      expect(after.body).toMatchObject({ status: "open", last_inbound_at: latest.created_at })
      expect(Date.parse(after.body.last_message_at)).toBeGreaterThanOrEqual(Date.parse(latest.created_at))
      await advance(60)
      const reply = await api("POST", "/messages", { conversation_id: conversation.id, text: "It ships today." })
      expect(reply.status, JSON.stringify(reply.body)).toBe(201)
      expect(reply.body).toMatchObject({ direction: "outbound", message_type: "text", status: "sent" })
    })

    it("a template send to a contact with no conversation opens one, announced by conversation.created naming the stored conversation", async () => {
      const template = await orderTemplate()
      const contact = await newContact()
      expect(await conversationsOf(contact.id)).toEqual([])
      const sent = await api("POST", `/chatapp-templates/${template.id}/send`, {
        contact_id: contact.id,
        channel_id: channelId,
        variable_values: ["Maria", "#A-8", "A-8"]
      })
      expect(sent.status, JSON.stringify(sent.body)).toBe(201)
      const announced = (await events("conversation.created")).filter((e) => e.data.conversation.contact_id === contact.id)
      expect(announced).toHaveLength(1)
      const event = announced[0].data.conversation
      expect(event).toMatchObject({ id: sent.body.conversation_id, contact_id: contact.id, channel_id: channelId, status: "open" })
      const stored = await api("GET", `/conversations/${event.id}`)
      expect(stored.status).toBe(200)
      expect(stored.body).toMatchObject({ id: event.id, contact_id: contact.id, channel_id: channelId, status: "open", created_at: event.created_at })
      expect((await conversationsOf(contact.id)).map((c) => c.id)).toEqual([event.id])
    })
  })

  describe("template status webhooks", () => {
    it("approves a template under review by webhook (ids as strings or numbers), after which it can be sent", async () => {
      const pending = await pendingTemplate()
      expect(pending).toMatchObject({ name: "order_confirmed_ours", status: "pending" })
      const update = (id: string, event: string, name: string) => ({
        object: "whatsapp_business_account",
        entry: [{
          id: WABA_ID,
          time: 1764150000,
          changes: [{ field: "message_template_status_update", value: { event, message_template_id: id, message_template_name: name, message_template_language: "en_US", reason: "NONE" } }]
        }]
      })
      await webhook(JSON.stringify(update(pending.template_id, "APPROVED", pending.name)))
      await drain()
      expect((await api("GET", `/chatapp-templates/${pending.id}`)).body).toMatchObject({ status: "approved", status_reason: null })
      const contact = await newContact()
      const sent = await api("POST", `/chatapp-templates/${pending.id}/send`, { contact_id: contact.id, channel_id: channelId, variable_values: ["Maria", "#9", "A-9"] })
      expect(sent.status, JSON.stringify(sent.body)).toBe(201)
      expect(sent.body.text).toBe("Hello Maria, your order #9 is confirmed. Thank you!")

      // The operator writes message_template_id as a JSON number.
      graph.script("POST", "/{waba}/message_templates", { json: { id: "594425479261596", status: "APPROVED", category: "UTILITY" } })
      const numeric = await adopt({ library_template_name: "verification_code_1", name: "Numeric code" })
      expect(numeric.body.template_id).toBe("594425479261596")
      await webhook(JSON.stringify(update("594425479261596", "PAUSED", "numeric_code")).replace('"594425479261596"', "594425479261596"))
      await drain()
      expect((await api("GET", `/chatapp-templates/${numeric.body.id}`)).body.status).toBe("paused")
    })

    it("moves the template by message_template_status_update; a redelivery changes nothing", async () => {
      const template = await orderTemplate()
      const raw = JSON.stringify({
        object: "whatsapp_business_account",
        entry: [{
          id: WABA_ID,
          time: 1764150000,
          changes: [{
            field: "message_template_status_update",
            value: {
              event: "REJECTED",
              message_template_id: template.template_id,
              message_template_name: "order_confirmation_1",
              message_template_language: "en_US",
              reason: "INCORRECT_CATEGORY"
            }
          }]
        }]
      })
      await webhook(raw)
      await drain()
      const rejected = await api("GET", `/chatapp-templates/${template.id}`)
      expect(rejected.body).toMatchObject({ status: "rejected", status_reason: "INCORRECT_CATEGORY" })
      await http(host.url, "POST", "/_test/clock/advance", { body: { seconds: 3600 } })
      await webhook(raw)
      await drain()
      expect((await api("GET", `/chatapp-templates/${template.id}`)).body).toEqual(rejected.body)
      // A rejected template is not sent.
      const contact = await newContact()
      const send = await api("POST", `/chatapp-templates/${template.id}/send`, { contact_id: contact.id, channel_id: channelId, variable_values: ["a", "b", "c"] })
      expect(send.status).toBe(422)
      // Adopting it again finds the stored row, as it stands.
      expect((await orderTemplate())).toMatchObject({ id: template.id, status: "rejected", already_existed: true })
    })
  })
})
