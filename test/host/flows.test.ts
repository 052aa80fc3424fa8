import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import type { IncomingHttpHeaders } from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Webhook } from "standardwebhooks"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type LocalServer, makeCertificate, startServer } from "../outbound/LocalServers.ts"
import { type ChatappHost, startChatappHost, type Tenant } from "../support/ChatappHost.ts"
import { type FakeGraphRequest, graphError } from "../support/FakeGraph.ts"
import { admin, http } from "../support/Host.ts"
import { type HostBackend, hostBackends } from "../support/HostBackends.ts"

// Chat-app flows seen from outside: the host as a child process on a manual test clock, a fake
// Graph server recording what the host sends, signed operator webhooks in (contacts' messages, flow
// answers, the platform's flow status and health changes), and what comes out: HTTP answers and
// the signed deliveries a real HTTPS webhook receiver on 127.0.0.1 gets.

const APP_SECRET = "flows-app-secret-for-tests"
const TOKEN = "EAAGflowstokenabcdefghijklmnopqrstuvwxyz"
const PHONE_NUMBER_ID = "106540352270001"
const WABA_ID = "102290129370001"
const OTHER_PHONE_NUMBER_ID = "106540352270002"
const OTHER_WABA_ID = "102290129370002"
/** A business account no channel belongs to. */
const STRANGER_WABA_ID = "102290129379999"

const UNKNOWN_ID = "0b6f1a52-3c1d-4e55-9a0f-8d6a2c1e9f00"
const MASK = "\u2022\u2022\u2022\u2022"
const DAY = 24 * 60 * 60

/** A 1×1 PNG. */
const PNG = Uint8Array.from(Buffer.from(
  "89504e470d0a1a0a0000000d4948445200000001000000010806000000" +
    "1f15c4890000000d4944415478da63f8cfc0f01f0005000201e221bc330000000049454e44ae426082",
  "hex"
))

/** The value of the sensitive input: it must never leave the service. */
const SECRET = "ZX-SENSITIVE-771-903"

let wamids = 0
const wamid = () => `wamid.HBgLFLOWS${String(++wamids).padStart(8, "0")}`
let metaIds = 0
/** A fresh platform flow id per definition, so status changes name exactly one of ours. */
const newMetaFlowId = () => `12000000000${String(++metaIds).padStart(5, "0")}`

const signatureHeaders = (headers: IncomingHttpHeaders): Record<string, string> => ({
  "webhook-id": String(headers["webhook-id"]),
  "webhook-timestamp": String(headers["webhook-timestamp"]),
  "webhook-signature": String(headers["webhook-signature"])
})

describe.each(hostBackends)("chat-app flows on the reference host ($name)", (backend) => {
  let h: ChatappHost
  let tenant: Tenant
  let other: Tenant
  let channelId: string
  let otherChannelId: string
  let botChannelId: string
  /** Keys of the first tenant holding only these scopes. */
  let reader: Tenant
  let updater: Tenant
  let contactsOnly: Tenant
  let messagesWriter: Tenant
  let receiver: LocalServer
  let caDir: string
  /** The signing secret of each tenant's endpoint. */
  const secrets = new Map<string, string>()
  const HOOK = "/hooks/flows"
  const OTHER_HOOK = "/hooks/flows-other"

  /** The first tenant's lists, custom field and tag that write-back targets. */
  let newsletterId: string
  let offersId: string
  let cityFieldId: string
  let vipTagId: string

  beforeAll(async () => {
    const certificate = makeCertificate()
    receiver = await startServer((_req, res) => {
      res.writeHead(204).end()
    }, certificate)
    caDir = mkdtempSync(join(tmpdir(), "flows-receiver-ca-"))
    const caFile = join(caDir, "receiver-ca.pem")
    writeFileSync(caFile, certificate.cert)
    // The host trusts the receiver's self-signed certificate.
    const trusting: HostBackend = {
      name: backend.name,
      setUp: async () => {
        const database = await backend.setUp()
        return { env: { ...database.env, NODE_EXTRA_CA_CERTS: caFile }, tearDown: database.tearDown }
      }
    }
    h = await startChatappHost(trusting, { accessToken: TOKEN, appSecret: APP_SECRET })
    ;({ tenant, other } = h)
    const [mine, theirs, bot, r, u, c, m] = await Promise.all([
      h.channel(PHONE_NUMBER_ID, WABA_ID),
      h.channel(OTHER_PHONE_NUMBER_ID, OTHER_WABA_ID, other),
      admin(h.env, "channel", "create", "--tenant", tenant.id, "--type", "botchat", "--bot-token", "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"),
      admin(h.env, "api-key", "create", "--tenant", tenant.id, "--scopes", "chatapp_flows:read"),
      admin(h.env, "api-key", "create", "--tenant", tenant.id, "--scopes", "chatapp_flows:update"),
      admin(h.env, "api-key", "create", "--tenant", tenant.id, "--scopes", "contacts:read,contacts:update,messages:read"),
      admin(h.env, "api-key", "create", "--tenant", tenant.id, "--scopes", "messages:create")
    ])
    channelId = mine.channel_id
    otherChannelId = theirs.channel_id
    botChannelId = bot.channel_id
    reader = { id: tenant.id, key: r.api_key }
    updater = { id: tenant.id, key: u.api_key }
    contactsOnly = { id: tenant.id, key: c.api_key }
    messagesWriter = { id: tenant.id, key: m.api_key }

    for (const [as, path] of [[tenant, HOOK], [other, OTHER_HOOK]] as const) {
      const created = await h.api("POST", "/webhook-endpoints", {
        name: `Flows receiver ${path}`,
        url: `${receiver.origin}${path}`,
        subscribed_events: [
          "chatapp_flow.completed",
          "chatapp_flow.status_changed",
          "chatapp_flow.health_changed",
          "contact.updated",
          "message.received"
        ]
      }, as)
      expect(created.status, JSON.stringify(created.body)).toBe(201)
      secrets.set(path, created.body.secret_key)
    }

    const [newsletter, offers, city, vip] = await Promise.all([
      h.api("POST", "/lists", { name: "Newsletter" }),
      h.api("POST", "/lists", { name: "Offers" }),
      h.api("POST", "/custom-fields", { key: "city", type: "text" }),
      h.api("POST", "/tags", { name: "VIP" })
    ])
    for (const created of [newsletter, offers, city, vip]) expect(created.status, JSON.stringify(created.body)).toBe(201)
    newsletterId = newsletter.body.id
    offersId = offers.body.id
    cityFieldId = city.body.id
    vipTagId = vip.body.id
  }, 120_000)
  afterAll(async () => {
    await h?.close()
    await receiver?.close()
    if (caDir !== undefined) rmSync(caDir, { recursive: true, force: true })
  })

  // ---------------------------------------------------------------------------------------------
  // Helpers

  const api = (method: string, path: string, body?: unknown, as: { key: string } = tenant) => h.api(method, path, body, as)
  const ok = async (method: string, path: string, body?: unknown, status = 200, as: { key: string } = tenant) => {
    const answer = await api(method, path, body, as)
    expect(answer.status, `${method} ${path}: ${JSON.stringify(answer.body)}`).toBe(status)
    return answer.body
  }
  const clockSeconds = async () => {
    const got = await http(h.host.url, "GET", "/_test/clock")
    return String(Math.floor(Date.parse(got.body.now) / 1000))
  }

  /** A `messages` payload of the operator carrying one message from `from` (digits) to our number. */
  const messagesPayload = (from: string, message: unknown, phoneNumberId = PHONE_NUMBER_ID, wabaId = WABA_ID) => ({
    object: "whatsapp_business_account",
    entry: [{
      id: wabaId,
      changes: [{
        field: "messages",
        value: {
          messaging_product: "whatsapp",
          metadata: { display_phone_number: "15551234567", phone_number_id: phoneNumberId },
          contacts: [{ profile: { name: "Kim" }, wa_id: from }],
          messages: [message]
        }
      }]
    }]
  })
  /** Posts a signed payload, expects 200, and runs the host's background work to the end. */
  const deliver = async (body: unknown) => {
    const posted = await h.post(body)
    expect(posted.status, posted.body).toBe(200)
    await h.drain()
  }
  /** The contact `from` types a text to our number, which opens the 24-hour window. */
  const says = async (from: string, text = "Hi") =>
    deliver(messagesPayload(from, { from, id: wamid(), timestamp: await clockSeconds(), type: "text", text: { body: text } }))
  /** The operator's `nfm_reply` message: the answers of a flow, with its token, as the platform sends them. */
  const flowReply = async (from: string, flowToken: string, answers: Record<string, unknown>, id = wamid()) =>
    messagesPayload(from, {
      from,
      id,
      timestamp: await clockSeconds(),
      type: "interactive",
      interactive: {
        type: "nfm_reply",
        nfm_reply: { name: "flow", body: "Sent", response_json: JSON.stringify({ flow_token: flowToken, ...answers }) }
      }
    })

  let phones = 0
  /** A new contact with a phone: digits as the operator writes them, and the contact's id. */
  const newContact = async (name = "Ana", as: Tenant = tenant) => {
    const digits = `3519100${String(++phones).padStart(5, "0")}`
    const created = await ok("POST", "/contacts", { name, phone: `+${digits}` }, 201, as)
    return { id: created.id as string, digits }
  }

  /** What the receiver got at `path` (verification requests left out), parsed, oldest first; signed with that endpoint's secret. */
  const received = (path = HOOK, type?: string): Array<any> =>
    receiver.requests.filter((r) => r.url === path).map((r) => {
      const parsed = JSON.parse(r.body)
      if (parsed.type !== "webhook.verification") new Webhook(secrets.get(path)!).verify(r.body, signatureHeaders(r.headers))
      return parsed
    }).filter((e) => e.type !== "webhook.verification" && (type === undefined || e.type === type))
  const rawReceived = (path = HOOK) => receiver.requests.filter((r) => r.url === path).map((r) => r.body)

  /** Flow messages the operator was asked to send to `digits`, oldest first. */
  const flowMessagesTo = (digits: string): Array<any> =>
    (h.graph.requests() as ReadonlyArray<FakeGraphRequest & { json: any }>)
      .filter((r) => r.method === "POST" && r.path === `/${PHONE_NUMBER_ID}/messages` && r.json?.to === digits && r.json?.type === "interactive")
      .map((r) => r.json)

  /** Sends flow `flowId` to the contact, expects 201, and returns the session and the token the operator received. */
  const send = async (flowId: string, contact: { id: string; digits: string }) => {
    const before = flowMessagesTo(contact.digits).length
    const session = await ok("POST", `/chatapp-flows/${flowId}/send`, { contact_id: contact.id, channel_id: channelId }, 201)
    const sent = flowMessagesTo(contact.digits)
    expect(sent).toHaveLength(before + 1)
    const token = sent.at(-1).interactive.action.parameters.flow_token as string
    return { session, token, message: sent.at(-1) }
  }

  const sessionsOf = async (flowId: string, query = "", as: { key: string } = tenant) =>
    ok("GET", `/chatapp-flows/${flowId}/sessions${query}`, undefined, 200, as)
  const sessionById = async (flowId: string, id: string) => {
    const all = await sessionsOf(flowId, "?page_size=100")
    const found = (all.items as Array<any>).find((s) => s.id === id)
    expect(found, `session ${id}`).toBeDefined()
    return found
  }
  const conversationMessages = async (conversationId: string) =>
    (await ok("GET", `/messages?conversation_id=${conversationId}&page_size=100`)).items as Array<any>

  /** The signup flow's screens: two, with one sensitive input. */
  const SIGNUP_SCREENS = [
    {
      id: "DETAILS",
      inputs: [
        { name: "full_name", type: "TextInput" },
        { name: "email", type: "TextInput" },
        { name: "language", type: "Dropdown" },
        { name: "national_id", type: "TextInput" }
      ],
      sensitive_fields: ["national_id"]
    },
    {
      id: "PREFERENCES",
      inputs: [
        { name: "city", type: "TextInput" },
        { name: "vip", type: "OptIn" },
        { name: "newsletter", type: "OptIn" },
        { name: "offers", type: "OptIn" },
        { name: "interests", type: "CheckboxGroup" },
        { name: "birthday", type: "DatePicker" }
      ]
    }
  ]
  const signupWriteback = () => [
    { input: "full_name", target: "contact_field", field: "name" },
    { input: "email", target: "contact_field", field: "email" },
    { input: "language", target: "contact_field", field: "language" },
    { input: "city", target: "custom_field", custom_field_id: cityFieldId },
    { input: "vip", target: "tag", tag_id: vipTagId },
    { input: "newsletter", target: "subscription", list_id: newsletterId },
    { input: "offers", target: "subscription", list_id: offersId }
  ]
  const createFlow = async (name: string, extra: Record<string, unknown> = {}, as: Tenant = tenant, channel = channelId) =>
    ok("POST", "/chatapp-flows", {
      name,
      channel_id: channel,
      meta_flow_id: newMetaFlowId(),
      screens: [{ id: "START", inputs: [{ name: "rating", type: "RadioButtonsGroup" }, { name: "comment", type: "TextArea" }] }],
      ...extra
    }, 201, as)

  // ---------------------------------------------------------------------------------------------

  describe("custom fields and tags", () => {
    it("creates custom fields (editable unless told), 409 for a key taken, 422 for a bad key, lists them; per tenant", async () => {
      const created = await ok("POST", "/custom-fields", { key: "loyalty_points", type: "number" }, 201)
      expect(created).toEqual({ id: expect.stringMatching(/^[0-9a-f-]{36}$/), key: "loyalty_points", type: "number", editable: true, created_at: expect.any(String) })
      const locked = await ok("POST", "/custom-fields", { key: "account_tier", type: "text", editable: false }, 201)
      expect(locked.editable).toBe(false)
      const again = await api("POST", "/custom-fields", { key: "loyalty_points", type: "text" })
      expect(again.status).toBe(409)
      for (const body of [{ key: "Bad Key", type: "text" }, { key: "1st", type: "text" }, { key: "ok_key", type: "money" }, { type: "text" }]) {
        expect((await api("POST", "/custom-fields", body)).status, JSON.stringify(body)).toBe(422)
      }
      const listed = await ok("GET", "/custom-fields")
      expect(listed.items).toEqual(expect.arrayContaining([created, locked, expect.objectContaining({ id: cityFieldId, key: "city" })]))
      expect(listed.items.filter((f: any) => f.key === "loyalty_points")).toHaveLength(1)
      // Another workspace neither sees them nor is kept from using the same key.
      expect((await ok("GET", "/custom-fields", undefined, 200, other)).items).toEqual([])
      expect((await api("POST", "/custom-fields", { key: "loyalty_points", type: "text" }, other)).status).toBe(201)
      // Contact data: the contacts scopes, not the flows ones.
      expect((await api("GET", "/custom-fields", undefined, reader)).status).toBe(403)
      expect((await api("POST", "/custom-fields", { key: "by_reader", type: "text" }, updater)).status).toBe(403)
      expect((await api("GET", "/custom-fields", undefined, contactsOnly)).status).toBe(200)
    })

    it("creates tags, 409 for a name taken, lists them; per tenant", async () => {
      const gold = await ok("POST", "/tags", { name: "Gold" }, 201)
      expect(gold).toEqual({ id: expect.stringMatching(/^[0-9a-f-]{36}$/), name: "Gold", created_at: expect.any(String) })
      expect((await api("POST", "/tags", { name: "Gold" })).status).toBe(409)
      expect((await api("POST", "/tags", { name: "" })).status).toBe(422)
      const listed = await ok("GET", "/tags")
      expect(listed.items).toEqual(expect.arrayContaining([gold, expect.objectContaining({ id: vipTagId, name: "VIP" })]))
      expect((await ok("GET", "/tags", undefined, 200, other)).items).toEqual([])
      expect((await api("POST", "/tags", { name: "Gold" }, other)).status).toBe(201)
      expect((await api("POST", "/tags", { name: "Silver" }, reader)).status).toBe(403)
    })
  })

  describe("definitions", () => {
    it("creates a flow with its first version: 201, status and health unknown, version 1 as given", async () => {
      const metaFlowId = newMetaFlowId()
      const created = await api("POST", "/chatapp-flows", {
        name: "  Signup  ",
        channel_id: channelId,
        meta_flow_id: metaFlowId,
        screens: SIGNUP_SCREENS,
        writeback: signupWriteback()
      })
      expect(created.status, JSON.stringify(created.body)).toBe(201)
      expect(created.body).toEqual({
        id: expect.stringMatching(/^[0-9a-f-]{36}$/),
        tenant_id: tenant.id,
        channel_id: channelId,
        name: "Signup",
        meta_flow_id: metaFlowId,
        status: null,
        health_status: null,
        latest_version: {
          id: expect.stringMatching(/^[0-9a-f-]{36}$/),
          number: 1,
          screens: [SIGNUP_SCREENS[0], { ...SIGNUP_SCREENS[1], sensitive_fields: [] }],
          writeback: signupWriteback(),
          created_at: expect.any(String)
        },
        created_at: expect.any(String),
        updated_at: null
      })
      expect(await ok("GET", `/chatapp-flows/${created.body.id}`)).toEqual(created.body)
    })

    it("refuses what cannot work with 422: names twice, foreign sensitive fields, unknown inputs, missing or unknown targets; other channels with 400", async () => {
      const base = { name: "Bad", channel_id: channelId, meta_flow_id: newMetaFlowId() }
      const screen = { id: "S", inputs: [{ name: "a", type: "TextInput" }, { name: "b", type: "OptIn" }] }
      const cases: Array<[string, Record<string, unknown>, ReadonlyArray<string | number>]> = [
        ["input named twice on one screen", { screens: [{ id: "S", inputs: [{ name: "a", type: "TextInput" }, { name: "a", type: "TextInput" }] }] }, ["body", "screens", 0, "inputs", 1, "name"]],
        ["input named twice across screens", { screens: [screen, { id: "T", inputs: [{ name: "b", type: "TextInput" }] }] }, ["body", "screens", 1, "inputs", 0, "name"]],
        ["sensitive field not an input", { screens: [{ ...screen, sensitive_fields: ["pin"] }] }, ["body", "screens", 0, "sensitive_fields", 0]],
        [
          "sensitive field of another screen",
          { screens: [screen, { id: "T", inputs: [{ name: "c", type: "TextInput" }], sensitive_fields: ["a"] }] },
          ["body", "screens", 1, "sensitive_fields", 0]
        ],
        ["mapping on an unknown input", { screens: [screen], writeback: [{ input: "zz", target: "contact_field", field: "name" }] }, ["body", "writeback", 0, "input"]],
        ["contact field mapping without field", { screens: [screen], writeback: [{ input: "a", target: "contact_field" }] }, ["body", "writeback", 0, "field"]],
        ["custom field mapping without id", { screens: [screen], writeback: [{ input: "a", target: "custom_field" }] }, ["body", "writeback", 0, "custom_field_id"]],
        ["tag mapping without id", { screens: [screen], writeback: [{ input: "b", target: "tag" }] }, ["body", "writeback", 0, "tag_id"]],
        ["subscription without list", { screens: [screen], writeback: [{ input: "b", target: "subscription" }] }, ["body", "writeback", 0, "list_id"]],
        ["unsubscription without list", { screens: [screen], writeback: [{ input: "b", target: "unsubscription" }] }, ["body", "writeback", 0, "list_id"]],
        [
          "unknown custom field",
          { screens: [screen], writeback: [{ input: "a", target: "custom_field", custom_field_id: UNKNOWN_ID }] },
          ["body", "writeback", 0, "custom_field_id"]
        ],
        ["unknown tag", { screens: [screen], writeback: [{ input: "b", target: "tag", tag_id: UNKNOWN_ID }] }, ["body", "writeback", 0, "tag_id"]],
        ["unknown list", { screens: [screen], writeback: [{ input: "b", target: "subscription", list_id: UNKNOWN_ID }] }, ["body", "writeback", 0, "list_id"]],
        ["unknown contact field", { screens: [screen], writeback: [{ input: "a", target: "contact_field", field: "nickname" }] }, ["body", "writeback", 0, "field"]],
        ["no screens", { screens: [] }, ["body", "screens"]],
        ["meta flow id not digits", { meta_flow_id: "flow-1", screens: [screen] }, ["body", "meta_flow_id"]]
      ]
      for (const [label, body, loc] of cases) {
        const refused = await api("POST", "/chatapp-flows", { ...base, ...body })
        expect(refused.status, `${label}: ${JSON.stringify(refused.body)}`).toBe(422)
        expect(refused.body.detail.map((d: any) => d.loc), label).toContainEqual(loc)
      }
      // A channel that is not a chat-app number is refused as on every route.
      expect(await api("POST", "/chatapp-flows", { ...base, channel_id: botChannelId, screens: [screen] })).toMatchObject({
        status: 400,
        body: { detail: { code: "channel_unavailable", channel_id: botChannelId } }
      })
      // Another tenant's list, tag or custom field is as unknown as a made-up one.
      const theirTag = await ok("POST", "/tags", { name: "Theirs" }, 201, other)
      const theirList = await ok("POST", "/lists", { name: "Their list" }, 201, other)
      for (const writeback of [[{ input: "b", target: "tag", tag_id: theirTag.id }], [{ input: "b", target: "subscription", list_id: theirList.id }]]) {
        expect((await api("POST", "/chatapp-flows", { ...base, screens: [screen], writeback })).status).toBe(422)
      }
      // Another tenant's channel, or none: 404.
      expect((await api("POST", "/chatapp-flows", { ...base, channel_id: otherChannelId, screens: [screen] })).status).toBe(404)
      expect((await api("POST", "/chatapp-flows", { ...base, channel_id: UNKNOWN_ID, screens: [screen] })).status).toBe(404)
      expect((await ok("GET", "/chatapp-flows")).items.map((f: any) => f.name)).not.toContain("Bad")
    })

    it("lists and gets flows, adds numbered versions; later sends use the latest, opening its first screen; a session keeps its version", async () => {
      const flow = await createFlow("Feedback")
      const listed = await ok("GET", "/chatapp-flows")
      expect(listed.items).toContainEqual(flow)
      const early = await newContact("Early")
      await says(early.digits)
      const v1Send = await send(flow.id, early)
      expect(v1Send.session).toMatchObject({ version_id: flow.latest_version.id, version_number: 1 })

      const v2 = await api("POST", `/chatapp-flows/${flow.id}/versions`, {
        screens: [{ id: "RATE", inputs: [{ name: "stars", type: "RadioButtonsGroup" }, { name: "who", type: "TextInput" }] }],
        writeback: [{ input: "who", target: "contact_field", field: "name" }]
      })
      expect(v2.status, JSON.stringify(v2.body)).toBe(201)
      expect(v2.body).toMatchObject({ id: flow.id, name: "Feedback", latest_version: { number: 2, screens: [{ id: "RATE" }] } })
      expect(v2.body.latest_version.id).not.toBe(flow.latest_version.id)
      expect((await ok("GET", `/chatapp-flows/${flow.id}`)).latest_version).toEqual(v2.body.latest_version)
      const v3 = await ok("POST", `/chatapp-flows/${flow.id}/versions`, { screens: [{ id: "LAST", inputs: [] }] }, 201)
      expect(v3.latest_version.number).toBe(3)
      // A bad version is refused like a bad definition and changes nothing.
      const refused = await api("POST", `/chatapp-flows/${flow.id}/versions`, { screens: [{ id: "S", inputs: [{ name: "x", type: "T" }], sensitive_fields: ["y"] }] })
      expect(refused.status).toBe(422)
      expect((await api("POST", `/chatapp-flows/${UNKNOWN_ID}/versions`, { screens: [{ id: "S", inputs: [] }] })).status).toBe(404)
      expect((await ok("GET", `/chatapp-flows/${flow.id}`)).latest_version.number).toBe(3)

      const contact = await newContact()
      await says(contact.digits)
      const { session, message } = await send(flow.id, contact)
      expect(session).toMatchObject({ version_id: v3.latest_version.id, version_number: 3 })
      expect(message.interactive.action.parameters).toMatchObject({ flow_id: flow.meta_flow_id, flow_action_payload: { screen: "LAST" } })

      // Answered after version 2 mapped `who` to the name: the session's version 1 maps nothing.
      await deliver(await flowReply(early.digits, v1Send.token, { rating: "3", who: "Renamed" }))
      const answered = (await sessionsOf(flow.id, `?contact_id=${early.id}`)).items[0]
      expect(answered).toMatchObject({ status: "completed", version_number: 1, answers: { rating: "3", who: "Renamed" }, writeback_result: { state: "done", contact_fields: {} } })
      expect((await ok("GET", `/contacts/${early.id}`)).name).toBe("Early")
    })

    it("keeps tenants apart: another tenant gets 404 on every route of a flow and never lists it", async () => {
      const ours = await createFlow("Ours only")
      const theirs = await createFlow("Theirs only", {}, other, otherChannelId)
      const screens = [{ id: "S", inputs: [] }]
      for (const [method, path, body] of [
        ["GET", `/chatapp-flows/${ours.id}`, undefined],
        ["POST", `/chatapp-flows/${ours.id}/versions`, { screens }],
        ["POST", `/chatapp-flows/${ours.id}/send`, { contact_id: UNKNOWN_ID, channel_id: channelId }],
        ["GET", `/chatapp-flows/${ours.id}/sessions`, undefined]
      ] as const) {
        expect((await api(method, path, body, other)).status, `${method} ${path}`).toBe(404)
      }
      expect((await ok("GET", "/chatapp-flows", undefined, 200, other)).items.map((f: any) => f.id)).toEqual([theirs.id])
      expect((await ok("GET", "/chatapp-flows")).items.map((f: any) => f.id)).not.toContain(theirs.id)
      expect((await api("GET", `/chatapp-flows/${theirs.id}`)).status).toBe(404)
      expect((await api("GET", `/chatapp-flows/${UNKNOWN_ID}`)).status).toBe(404)
      expect((await api("GET", "/chatapp-flows/not-an-id")).status).toBe(404)
      expect((await ok("GET", `/chatapp-flows/${ours.id}`)).latest_version.number).toBe(1)
    })

    it("needs chatapp_flows:update to change and chatapp_flows:read to read (403 otherwise)", async () => {
      const flow = await createFlow("Scoped")
      const body = { name: "By key", channel_id: channelId, meta_flow_id: newMetaFlowId(), screens: [{ id: "S", inputs: [] }] }
      const version = { screens: [{ id: "S2", inputs: [] }] }
      const sendBody = { contact_id: UNKNOWN_ID, channel_id: channelId }
      const reads = [`/chatapp-flows`, `/chatapp-flows/${flow.id}`, `/chatapp-flows/${flow.id}/sessions`]

      for (const path of reads) {
        expect((await api("GET", path, undefined, reader)).status, path).toBe(200)
        expect((await api("GET", path, undefined, updater)).status, path).toBe(403)
        expect((await api("GET", path, undefined, contactsOnly)).status, path).toBe(403)
      }
      const denied = await api("POST", "/chatapp-flows", body, reader)
      expect(denied.status).toBe(403)
      expect(JSON.stringify(denied.body)).toMatch(/chatapp_flows:update/)
      expect((await api("POST", `/chatapp-flows/${flow.id}/versions`, version, reader)).status).toBe(403)
      expect((await api("POST", `/chatapp-flows/${flow.id}/send`, sendBody, reader)).status).toBe(403)
      expect((await api("POST", "/chatapp-flows", body, contactsOnly)).status).toBe(403)
      expect((await api("POST", `/chatapp-flows/${flow.id}/send`, sendBody, contactsOnly)).status).toBe(403)

      const made = await api("POST", "/chatapp-flows", body, updater)
      expect(made.status, JSON.stringify(made.body)).toBe(201)
      expect((await api("POST", `/chatapp-flows/${flow.id}/versions`, version, updater)).status).toBe(201)
      // A send is a message: chatapp_flows:update or messages:create (the contact is unknown here: 404, not 403).
      expect((await api("POST", `/chatapp-flows/${flow.id}/send`, sendBody, updater)).status).toBe(404)
      expect((await api("POST", `/chatapp-flows/${flow.id}/send`, sendBody, messagesWriter)).status).toBe(404)
      expect((await api("POST", "/chatapp-flows", { ...body, meta_flow_id: newMetaFlowId() }, messagesWriter)).status).toBe(403)
      // No key at all: 401.
      expect((await http(h.host.url, "GET", "/api/v1/chatapp-flows")).status).toBe(401)
    })
  })

  // ---------------------------------------------------------------------------------------------

  /** The signup flow and the contacts the answers tests use. */
  let signup: any
  let ana: { id: string; digits: string }
  let anaSend: { session: any; token: string; message: any }

  describe("sends", () => {
    it("refuses a send outside the 24-hour window (422 customer_service_window_closed) and sends nothing", async () => {
      signup = await ok("POST", "/chatapp-flows", {
        name: "Signup",
        channel_id: channelId,
        meta_flow_id: newMetaFlowId(),
        screens: SIGNUP_SCREENS,
        writeback: signupWriteback()
      }, 201)
      const silent = await newContact("Never wrote")
      const closed = await api("POST", `/chatapp-flows/${signup.id}/send`, { contact_id: silent.id, channel_id: channelId })
      expect(closed.status, JSON.stringify(closed.body)).toBe(422)
      expect(closed.body.detail[0]).toMatchObject({ type: "customer_service_window_closed" })

      // A day after the contact's last message the window has closed again.
      const late = await newContact("Wrote yesterday")
      await says(late.digits)
      await h.advance(DAY + 1)
      const expired = await api("POST", `/chatapp-flows/${signup.id}/send`, { contact_id: late.id, channel_id: channelId })
      expect(expired.status).toBe(422)
      expect(expired.body.detail[0]).toMatchObject({ type: "customer_service_window_closed" })
      expect(flowMessagesTo(silent.digits)).toEqual([])
      expect(flowMessagesTo(late.digits)).toEqual([])
      expect((await sessionsOf(signup.id)).items).toEqual([])

      // Other refusals: the flow's own channel only; a contact of this workspace only.
      expect((await api("POST", `/chatapp-flows/${signup.id}/send`, { contact_id: late.id, channel_id: botChannelId })).status).toBe(422)
      const theirs = await newContact("Theirs", other)
      expect((await api("POST", `/chatapp-flows/${signup.id}/send`, { contact_id: theirs.id, channel_id: channelId })).status).toBe(404)
    })

    it("inside the window: 201 with the session (no token anywhere), and the operator got the interactive flow message", async () => {
      ana = await newContact("Ana")
      await says(ana.digits, "I want to sign up")
      const answer = await api("POST", `/chatapp-flows/${signup.id}/send`, { contact_id: ana.id, channel_id: channelId })
      expect(answer.status, JSON.stringify(answer.body)).toBe(201)
      const [message] = flowMessagesTo(ana.digits)
      expect(message).toMatchObject({
        messaging_product: "whatsapp",
        to: ana.digits,
        type: "interactive",
        interactive: {
          type: "flow",
          body: { text: "Signup" },
          action: {
            name: "flow",
            parameters: { flow_id: signup.meta_flow_id, flow_cta: "Open", flow_action: "navigate", flow_action_payload: { screen: "DETAILS" } }
          }
        }
      })
      const token = message.interactive.action.parameters.flow_token as string
      expect(token).toMatch(/^\S{40}$/)
      anaSend = { session: answer.body, token, message }

      const session = answer.body
      expect(session).toEqual({
        id: expect.stringMatching(/^[0-9a-f-]{36}$/),
        definition_id: signup.id,
        version_id: signup.latest_version.id,
        version_number: 1,
        contact_id: ana.id,
        contact_name: "Ana",
        conversation_id: expect.stringMatching(/^[0-9a-f-]{36}$/),
        channel_id: channelId,
        sender_type: "api",
        status: "sent",
        last_screen: null,
        answers: null,
        writeback_result: null,
        last_error: null,
        created_at: expect.any(String),
        opened_at: null,
        completed_at: null,
        expires_at: expect.any(String)
      })
      expect(Date.parse(session.expires_at) - Date.parse(session.created_at)).toBe(30 * DAY * 1000)
      // The token is nowhere the API shows: not in the send's answer, the sessions, the flow message as stored.
      expect(JSON.stringify(answer.body)).not.toContain(token)
      const listed = await sessionsOf(signup.id)
      expect(listed.items).toEqual([session])
      expect(JSON.stringify(listed)).not.toContain(token)
      const stored = await conversationMessages(session.conversation_id)
      const outbound = stored.filter((m) => m.direction === "outbound")
      expect(outbound).toHaveLength(1)
      expect(outbound[0]).toMatchObject({ message_type: "interactive" })
      expect(JSON.stringify(stored)).not.toContain(token)

      // Each send has its own token.
      const second = await send(signup.id, ana)
      expect(second.token).not.toBe(token)
      expect(second.session.id).not.toBe(session.id)
    })

    it("a send the platform refuses answers its error and leaves a failed session with the platform's words", async () => {
      const contact = await newContact("Refused")
      await says(contact.digits)
      h.graph.scriptRecipient(contact.digits, graphError(400, { code: 131026, message: "(#131026) Message undeliverable" }))
      const refused = await api("POST", `/chatapp-flows/${signup.id}/send`, { contact_id: contact.id, channel_id: channelId })
      expect([422, 502], JSON.stringify(refused.body)).toContain(refused.status)
      expect(flowMessagesTo(contact.digits)).toHaveLength(1)
      const failed = await sessionsOf(signup.id, `?contact_id=${contact.id}`)
      expect(failed.items).toHaveLength(1)
      expect(failed.items[0]).toMatchObject({ status: "failed", contact_id: contact.id, sender_type: "api" })
      expect(failed.items[0].last_error).toEqual(expect.stringMatching(/\S/))
      expect((await sessionsOf(signup.id, "?status=failed")).items.map((s: any) => s.id)).toEqual([failed.items[0].id])
    })
  })

  // ---------------------------------------------------------------------------------------------

  describe("answers", () => {
    const anaAnswers = () => ({
      full_name: "Ana Souza",
      email: "Ana.Souza@Example.com",
      language: "pt_BR",
      national_id: SECRET,
      city: "Lisboa",
      vip: true,
      newsletter: true,
      offers: true,
      interests: ["opt_1", "opt_3"],
      birthday: "1990-04-01"
    })
    let anaReply: unknown

    it("completes the session: answers stored masked, everything mapped written back (done), chatapp_flow.completed at the receiver", async () => {
      const updatesBefore = received(HOOK, "contact.updated").length
      anaReply = await flowReply(ana.digits, anaSend.token, anaAnswers())
      await deliver(anaReply)

      const maskedAnswers = { ...anaAnswers(), national_id: MASK }
      const writeback = {
        state: "done",
        contact_fields: { name: "Ana Souza", email: "ana.souza@example.com", language: "pt_BR" },
        custom_fields: [{ custom_field_id: cityFieldId, key: "city", status: "ok" }],
        tags: [{ tag_id: vipTagId, status: "ok" }],
        subscriptions: [{ list_id: newsletterId, status: "ok" }, { list_id: offersId, status: "ok" }],
        unsubscriptions: [],
        skipped: [],
        media: {}
      }
      const session = await sessionById(signup.id, anaSend.session.id)
      expect(session).toMatchObject({
        status: "completed",
        contact_id: ana.id,
        contact_name: "Ana Souza",
        answers: maskedAnswers,
        writeback_result: writeback,
        last_error: null
      })
      expect(session.completed_at).toEqual(expect.any(String))
      expect(session.opened_at).toEqual(expect.any(String))

      const completed = received(HOOK, "chatapp_flow.completed").filter((e) => e.event_id === anaSend.session.id)
      expect(completed).toHaveLength(1)
      const [event] = completed
      const flowMessage = (await conversationMessages(anaSend.session.conversation_id)).find((m) => m.direction === "outbound")
      expect(event).toEqual({
        id: expect.any(String),
        type: "chatapp_flow.completed",
        event_id: anaSend.session.id,
        created_at: expect.any(String),
        tenant_id: tenant.id,
        data: {
          session_id: anaSend.session.id,
          flow_definition_id: signup.id,
          flow_name: "Signup",
          version_id: signup.latest_version.id,
          meta_flow_id: signup.meta_flow_id,
          channel_id: channelId,
          contact_id: ana.id,
          conversation_id: anaSend.session.conversation_id,
          message_id: flowMessage.id,
          sender_type: "api",
          answers: maskedAnswers,
          writeback,
          completed_at: session.completed_at
        }
      })

      // Written to the contact the flow was sent to, as any change: contact.updated.
      const contact = await ok("GET", `/contacts/${ana.id}`)
      expect(contact).toMatchObject({
        name: "Ana Souza",
        email: "ana.souza@example.com",
        language: "pt_BR",
        custom_fields: { city: "Lisboa" },
        phone: `+${ana.digits}`
      })
      const updates = received(HOOK, "contact.updated").slice(updatesBefore).filter((e) => e.data.contact.id === ana.id)
      expect(updates).toHaveLength(1)
      expect(updates[0].data.contact).toMatchObject({ name: "Ana Souza", email: "ana.souza@example.com", language: "pt_BR", custom_fields: { city: "Lisboa" } })
      expect([...updates[0].data.changed_fields].sort()).toEqual(["custom_fields", "email", "language", "name"])
      const subscriptions = await ok("GET", `/contacts/${ana.id}/subscriptions`)
      expect(subscriptions.items).toEqual(expect.arrayContaining([
        expect.objectContaining({ list_id: newsletterId, status: "subscribed", optin_method: "flow" }),
        expect.objectContaining({ list_id: offersId, status: "subscribed", optin_method: "flow" })
      ]))

      // The sensitive value is nowhere in the flow's API or the flow and contact events.
      expect(JSON.stringify(await sessionsOf(signup.id, "?page_size=100"))).not.toContain(SECRET)
      expect(JSON.stringify(completed)).not.toContain(SECRET)
      expect(JSON.stringify(updates)).not.toContain(SECRET)
      expect(JSON.stringify(contact)).not.toContain(SECRET)
    })

    it("stores the answer as a message of the conversation", async () => {
      const stored = await conversationMessages(anaSend.session.conversation_id)
      const answerMessage = stored.find((m) => m.direction === "inbound" && m.message_type === "interactive")
      expect(answerMessage, JSON.stringify(stored)).toBeDefined()
      expect(answerMessage).toMatchObject({ text: "Sent", content: { interactive: { type: "nfm_reply" } } })
    })

    it("lets neither the sensitive value nor the flow token out: not in GET /messages, the event log or any delivery to the receiver", async () => {
      const places: Array<[string, string]> = [
        ["GET /messages", JSON.stringify(await conversationMessages(anaSend.session.conversation_id))],
        ["GET /events", JSON.stringify(await ok("GET", "/events?page_size=100"))],
        ["the receiver's deliveries", rawReceived(HOOK).join("\n")],
        ["GET /chatapp-flows/{id}/sessions", JSON.stringify(await sessionsOf(signup.id, "?page_size=100"))]
      ]
      const leaks = places.flatMap(([where, text]) => [
        ...(text.includes(SECRET) ? [`${where}: the sensitive value`] : []),
        ...(text.includes(anaSend.token) ? [`${where}: the flow token`] : [])
      ])
      expect(leaks).toEqual([])
    })

    it("a redelivered answer, and another answer to the same token, change nothing and emit nothing", async () => {
      const before = await sessionById(signup.id, anaSend.session.id)
      const events = () => received(HOOK, "chatapp_flow.completed").filter((e) => e.event_id === anaSend.session.id).length
      const updates = () => received(HOOK, "contact.updated").filter((e) => e.data.contact.id === ana.id).length
      const updatesBefore = updates()
      await h.advance(60)
      await deliver(anaReply)
      await deliver(await flowReply(ana.digits, anaSend.token, { ...anaAnswers(), full_name: "Someone Else", city: "Porto", vip: false }))
      expect(await sessionById(signup.id, anaSend.session.id)).toEqual(before)
      expect(events()).toBe(1)
      expect(updates()).toBe(updatesBefore)
      expect((await ok("GET", `/contacts/${ana.id}`)).name).toBe("Ana Souza")
    })

    it("two different answers to one token arriving together complete the session once", async () => {
      const contact = await newContact("Bia")
      await says(contact.digits)
      const { session, token } = await send(signup.id, contact)
      const [first, second] = await Promise.all([
        flowReply(contact.digits, token, { full_name: "Bia One", city: "Faro" }),
        flowReply(contact.digits, token, { full_name: "Bia Two", city: "Braga" })
      ])
      const posted = await Promise.all([h.post(first), h.post(second)])
      for (const p of posted) expect(p.status).toBe(200)
      await h.drain()
      const events = received(HOOK, "chatapp_flow.completed").filter((e) => e.event_id === session.id)
      expect(events).toHaveLength(1)
      const stored = await sessionById(signup.id, session.id)
      expect(stored.status).toBe("completed")
      expect(stored.answers).toEqual(events[0].data.answers)
      const name = (await ok("GET", `/contacts/${contact.id}`)).name
      expect(name).toBe(stored.answers.full_name)
      expect(received(HOOK, "contact.updated").filter((e) => e.data.contact.id === contact.id)).toHaveLength(1)
    })

    it("reports item by item: an unticked opt-in is consent_required, another contact's email owned_by_other_contact (partial)", async () => {
      const owner = await ok("POST", "/contacts", { name: "Owner", email: "taken@example.com" }, 201)
      const carla = await newContact("Carla")
      await says(carla.digits)
      const { session, token } = await send(signup.id, carla)
      await deliver(await flowReply(carla.digits, token, {
        full_name: "Carla Dias",
        email: "Taken@Example.com",
        national_id: "X-1",
        city: "Coimbra",
        vip: true,
        newsletter: true,
        offers: false
      }))
      const writeback = {
        state: "partial",
        contact_fields: { name: "Carla Dias" },
        custom_fields: [{ custom_field_id: cityFieldId, key: "city", status: "ok" }],
        tags: [{ tag_id: vipTagId, status: "ok" }],
        subscriptions: [{ list_id: newsletterId, status: "ok" }],
        unsubscriptions: [],
        skipped: [
          { input: "email", target: "contact_field", field: "email", reason: "owned_by_other_contact" },
          { input: "offers", target: "subscription", field: offersId, reason: "consent_required" }
        ],
        media: {}
      }
      const stored = await sessionById(signup.id, session.id)
      expect(stored).toMatchObject({ status: "completed", writeback_result: writeback })
      expect(stored.answers).toMatchObject({ national_id: MASK, offers: false })
      const [event] = received(HOOK, "chatapp_flow.completed").filter((e) => e.event_id === session.id)
      expect(event.data.writeback).toEqual(writeback)

      expect(await ok("GET", `/contacts/${carla.id}`)).toMatchObject({ name: "Carla Dias", email: null, custom_fields: { city: "Coimbra" } })
      expect(await ok("GET", `/contacts/${owner.id}`)).toEqual(owner)
      const subscriptions = (await ok("GET", `/contacts/${carla.id}/subscriptions`)).items
      expect(subscriptions).toEqual([expect.objectContaining({ list_id: newsletterId, status: "subscribed", optin_method: "flow" })])
    })

    it("copies uploaded photos into the service's storage, onto the flow's message, and reports them under media", async () => {
      const claim = await createFlow("Claim", {
        screens: [{ id: "UPLOAD", inputs: [{ name: "receipt", type: "PhotoPicker" }, { name: "order", type: "TextInput" }] }]
      })
      const contact = await newContact("Gil")
      await says(contact.digits)
      const { session, token } = await send(claim.id, contact)
      h.graph.media("7710000000001", { bytes: PNG, mimeType: "image/png" })
      const receipt = [{ file_name: "receipt.png", mime_type: "image/png", sha256: "mJi1vHMsuHvWg0NlNLMuBfTrcoakVxH7PD/jBh+Ex98=", id: "7710000000001" }]
      await deliver(await flowReply(contact.digits, token, { order: "A-1", receipt }))
      const stored = await sessionById(claim.id, session.id)
      expect(stored.status).toBe("completed")
      expect(stored.answers).toEqual({ order: "A-1", receipt })
      const media = { receipt: [{ file_name: "receipt.png", mime_type: "image/png", stored: true, file_size: PNG.length }] }
      expect(stored.writeback_result.media).toEqual(media)
      const [event] = received(HOOK, "chatapp_flow.completed").filter((e) => e.event_id === session.id)
      expect(event.data.writeback.media).toEqual(media)
      // The copy is an attachment of the flow's message: its bytes are the platform's.
      const flowMessage = (await conversationMessages(session.conversation_id)).find((m) => m.id === event.data.message_id)
      expect(flowMessage.attachments).toHaveLength(1)
      expect(flowMessage.attachments[0]).toMatchObject({ content_type: "image/png", file_size: PNG.length })
      const download = await fetch(flowMessage.attachments[0].url)
      expect(download.status).toBe(200)
      expect(new Uint8Array(await download.arrayBuffer())).toEqual(PNG)
    })

    it("a photo the platform cannot give until the payload's last try: reported not stored, and the write-back result says what happened", async () => {
      const claim = await createFlow("Claim with name", {
        screens: [{ id: "UPLOAD", inputs: [{ name: "receipt", type: "PhotoPicker" }, { name: "who", type: "TextInput" }] }],
        writeback: [{ input: "who", target: "contact_field", field: "name" }]
      })
      const contact = await newContact("Hugo")
      await says(contact.digits)
      const { session, token } = await send(claim.id, contact)
      const mediaId = "7720000000001"
      const unavailable = graphError(500, { code: 2, message: "Service temporarily unavailable", is_transient: true })
      h.graph.script("GET", `/${mediaId}`, ...Array.from({ length: 8 }, () => unavailable))
      const receipt = [{ file_name: "late.png", mime_type: "image/png", sha256: "x", id: mediaId }]
      await deliver(await flowReply(contact.digits, token, { who: "Hugo Written", receipt }))
      // The payload is tried again after 10 s, 1 min, 5 min, 15 min, 30 min, 1 h and 2 h: eight tries in all.
      expect((await sessionById(claim.id, session.id)).status).toBe("sent")
      for (const delay of [10, 60, 300, 900, 1800, 3600, 7200]) await h.advance(delay + 1)
      expect(h.graph.requests().filter((r) => r.method === "GET" && r.path === `/${mediaId}`)).toHaveLength(8)

      const stored = await sessionById(claim.id, session.id)
      expect(stored.status).toBe("completed")
      expect(stored.writeback_result.media).toEqual({ receipt: [{ file_name: "late.png", mime_type: "image/png", stored: false, file_size: 0 }] })
      expect(received(HOOK, "chatapp_flow.completed").filter((e) => e.event_id === session.id)).toHaveLength(1)
      // The session has a contact, so the write-back is never `skipped`: either it wrote the name
      // (`done`) or it was given up on this last try (`error`, DECISIONS.md).
      const name = (await ok("GET", `/contacts/${contact.id}`)).name
      expect({ name, state: stored.writeback_result.state }).toEqual(
        name === "Hugo Written" ? { name, state: "done" } : { name: "Hugo", state: "error" }
      )
    })

    it("adopts an answer with an unknown token: a session on the sender's contact, the event, no write-back", async () => {
      const dora = await newContact("Dora")
      await says(dora.digits)
      const updatesBefore = received(HOOK, "contact.updated").filter((e) => e.data.contact.id === dora.id).length
      const answers = { rating: "5", comment: "Great service", email: "dora@example.com", full_name: "Not Dora" }
      const reply = await flowReply(dora.digits, "token-from-a-flow-sent-elsewhere", answers)
      await deliver(reply)

      const adopted = received(HOOK, "chatapp_flow.completed").filter((e) => e.data.sender_type === "adopted" && e.data.contact_id === dora.id)
      expect(adopted).toHaveLength(1)
      const [event] = adopted
      expect(event.data).toMatchObject({
        sender_type: "adopted",
        contact_id: dora.id,
        channel_id: channelId,
        version_id: null,
        answers,
        writeback: { state: "skipped" }
      })
      expect(event.event_id).toBe(event.data.session_id)
      expect(event.data.conversation_id).toEqual(expect.stringMatching(/^[0-9a-f-]{36}$/))

      const sessions = await sessionsOf(event.data.flow_definition_id)
      const session = (sessions.items as Array<any>).find((s) => s.id === event.data.session_id)
      expect(session).toMatchObject({
        sender_type: "adopted",
        status: "completed",
        contact_id: dora.id,
        contact_name: "Dora",
        answers,
        writeback_result: { state: "skipped" }
      })
      // Nothing written back to anyone.
      expect(await ok("GET", `/contacts/${dora.id}`)).toMatchObject({ name: "Dora", email: null })
      expect(received(HOOK, "contact.updated").filter((e) => e.data.contact.id === dora.id)).toHaveLength(updatesBefore)
      // The answer is a message of Dora's conversation.
      const stored = await conversationMessages(session.conversation_id)
      expect(stored.filter((m) => m.message_type === "interactive" && m.direction === "inbound")).toHaveLength(1)
      // The same payload again: still one.
      await deliver(reply)
      expect(received(HOOK, "chatapp_flow.completed").filter((e) => e.data.sender_type === "adopted" && e.data.contact_id === dora.id))
        .toHaveLength(1)

      // A token is good only on the channel it was sent from: our session's token arriving on another
      // workspace's number is adopted there, and our session stays open.
      const elsewhere = await newContact("Elsewhere")
      await says(elsewhere.digits)
      const ours = await send(signup.id, elsewhere)
      await deliver(messagesPayload(elsewhere.digits, {
        from: elsewhere.digits,
        id: wamid(),
        timestamp: await clockSeconds(),
        type: "interactive",
        interactive: { type: "nfm_reply", nfm_reply: { name: "flow", body: "Sent", response_json: JSON.stringify({ flow_token: ours.token, full_name: "Crossed" }) } }
      }, OTHER_PHONE_NUMBER_ID, OTHER_WABA_ID))
      expect((await sessionById(signup.id, ours.session.id)).status).toBe("sent")
      expect(received(HOOK, "chatapp_flow.completed").filter((e) => e.event_id === ours.session.id)).toEqual([])
      const theirs = received(OTHER_HOOK, "chatapp_flow.completed")
      expect(theirs).toHaveLength(1)
      expect(theirs[0]).toMatchObject({ tenant_id: other.id, data: { sender_type: "adopted", channel_id: otherChannelId, answers: { full_name: "Crossed" } } })
      expect((await ok("GET", `/contacts/${elsewhere.id}`)).name).toBe("Elsewhere")
    })
  })

  // ---------------------------------------------------------------------------------------------

  describe("status and health", () => {
    let flow: any
    let theirFlow: any
    let entryTime = 1_764_200_000
    /** The platform's `flows` webhook: one change of business account `waba`. */
    const flowsPayload = (value: Record<string, unknown>, waba = WABA_ID) => ({
      object: "whatsapp_business_account",
      entry: [{ id: waba, time: ++entryTime, changes: [{ field: "flows", value }] }]
    })
    const statusEvents = (path = HOOK) => received(path, "chatapp_flow.status_changed").filter((e) => e.data.flow.id === (path === HOOK ? flow : theirFlow).id)
    const healthEvents = () => received(HOOK, "chatapp_flow.health_changed").filter((e) => e.data.flow.id === flow.id)

    beforeAll(async () => {
      flow = await createFlow("Status watched")
      // Another tenant's flow with the same platform flow id, on another business account.
      theirFlow = await ok("POST", "/chatapp-flows", {
        name: "Theirs watched",
        channel_id: otherChannelId,
        meta_flow_id: flow.meta_flow_id,
        screens: [{ id: "S", inputs: [] }]
      }, 201, other)
    })

    it("FLOW_STATUS_CHANGE: chatapp_flow.status_changed (no old_status on creation), the flow's status follows", async () => {
      const created = { event: "FLOW_STATUS_CHANGE", message: "Flow Status watched has been published.", flow_id: flow.meta_flow_id, new_status: "PUBLISHED" }
      await deliver(flowsPayload(created))
      const [first] = statusEvents()
      expect(statusEvents()).toHaveLength(1)
      expect(first).toEqual({
        id: expect.any(String),
        type: "chatapp_flow.status_changed",
        event_id: expect.any(String),
        created_at: expect.any(String),
        tenant_id: tenant.id,
        data: {
          channel_id: channelId,
          waba_id: WABA_ID,
          flow: { id: flow.id, name: "Status watched", meta_flow_id: flow.meta_flow_id },
          message: created.message,
          new_status: "PUBLISHED"
        }
      })
      expect(first.event_id).toMatch(new RegExp(`^${flow.id}:.+`))
      expect(await ok("GET", `/chatapp-flows/${flow.id}`)).toMatchObject({ status: "PUBLISHED", health_status: null })

      const throttled = {
        event: "FLOW_STATUS_CHANGE",
        message: "Flow Status watched changed status from PUBLISHED to THROTTLED.",
        flow_id: flow.meta_flow_id,
        old_status: "PUBLISHED",
        new_status: "THROTTLED"
      }
      const payload = flowsPayload(throttled)
      await deliver(payload)
      const second = statusEvents()[1]
      expect(second.data).toEqual({
        channel_id: channelId,
        waba_id: WABA_ID,
        flow: { id: flow.id, name: "Status watched", meta_flow_id: flow.meta_flow_id },
        message: throttled.message,
        old_status: "PUBLISHED",
        new_status: "THROTTLED"
      })
      expect(second.event_id).toMatch(new RegExp(`^${flow.id}:.+`))
      expect(second.event_id).not.toBe(first.event_id)
      const got = await ok("GET", `/chatapp-flows/${flow.id}`)
      expect(got.status).toBe("THROTTLED")
      expect(got.updated_at).toEqual(expect.any(String))

      // The same change delivered again: de-duplicated, one event.
      await deliver(payload)
      expect(statusEvents()).toHaveLength(2)
      // Nothing reached the other workspace, whose flow shares the platform id on another business account.
      expect(received(OTHER_HOOK, "chatapp_flow.status_changed")).toEqual([])
      expect((await ok("GET", `/chatapp-flows/${theirFlow.id}`, undefined, 200, other)).status).toBeNull()
    })

    it("a change named by another business account changes only that account's flow; an unknown account, nobody's", async () => {
      const change = (waba: string) => flowsPayload({
        event: "FLOW_STATUS_CHANGE",
        message: `Blocked on ${waba}`,
        flow_id: flow.meta_flow_id,
        old_status: "PUBLISHED",
        new_status: "BLOCKED"
      }, waba)
      const oursBefore = statusEvents().length
      await deliver(change(STRANGER_WABA_ID))
      await deliver(change(OTHER_WABA_ID))
      expect(statusEvents()).toHaveLength(oursBefore)
      expect((await ok("GET", `/chatapp-flows/${flow.id}`)).status).toBe("THROTTLED")
      const theirs = received(OTHER_HOOK, "chatapp_flow.status_changed")
      expect(theirs).toHaveLength(1)
      expect(theirs[0]).toMatchObject({
        tenant_id: other.id,
        data: { channel_id: otherChannelId, waba_id: OTHER_WABA_ID, flow: { id: theirFlow.id }, new_status: "BLOCKED" }
      })
      expect(theirs[0].event_id).toMatch(new RegExp(`^${theirFlow.id}:`))
      expect((await ok("GET", `/chatapp-flows/${theirFlow.id}`, undefined, 200, other)).status).toBe("BLOCKED")
    })

    it("alerts: chatapp_flow.health_changed, RED while any alert is ACTIVATED, GREEN once all are DEACTIVATED", async () => {
      const alert = (fields: Record<string, unknown>) => ({ message: "Alert", flow_id: flow.meta_flow_id, ...fields })
      const raised = alert({
        event: "ENDPOINT_ERROR_RATE",
        message: "Error rate above 10%",
        alert_state: "ACTIVATED",
        alert_severity: "CRITICAL",
        error_rate: 12.5,
        threshold: 10
      })
      const raisedPayload = flowsPayload(raised)
      await deliver(raisedPayload)
      const [first] = healthEvents()
      expect(healthEvents()).toHaveLength(1)
      expect(first).toEqual({
        id: expect.any(String),
        type: "chatapp_flow.health_changed",
        event_id: expect.stringMatching(new RegExp(`^${flow.id}:.+`)),
        created_at: expect.any(String),
        tenant_id: tenant.id,
        data: {
          channel_id: channelId,
          waba_id: WABA_ID,
          flow: { id: flow.id, name: "Status watched", meta_flow_id: flow.meta_flow_id },
          message: "Error rate above 10%",
          alert: { event: "ENDPOINT_ERROR_RATE", alert_state: "ACTIVATED", alert_severity: "CRITICAL", error_rate: 12.5, threshold: 10 },
          health_status: "RED"
        }
      })
      expect(await ok("GET", `/chatapp-flows/${flow.id}`)).toMatchObject({ status: "THROTTLED", health_status: "RED" })
      // Redelivered: de-duplicated.
      await deliver(raisedPayload)
      expect(healthEvents()).toHaveLength(1)

      // A second alert, without a severity; clearing the first leaves the flow RED.
      await deliver(flowsPayload(alert({ event: "ENDPOINT_LATENCY", alert_state: "ACTIVATED", p50_latency: 900, p90_latency: 2400 })))
      await deliver(flowsPayload(alert({ event: "ENDPOINT_ERROR_RATE", alert_state: "DEACTIVATED", alert_severity: "CRITICAL", error_rate: 4.1, threshold: 10 })))
      const [, latency, cleared] = healthEvents()
      expect(latency.data.alert).toEqual({ event: "ENDPOINT_LATENCY", alert_state: "ACTIVATED", p50_latency: 900, p90_latency: 2400 })
      expect(latency.data.health_status).toBe("RED")
      expect(cleared.data.alert).toEqual({ event: "ENDPOINT_ERROR_RATE", alert_state: "DEACTIVATED", alert_severity: "CRITICAL", error_rate: 4.1, threshold: 10 })
      expect(cleared.data.health_status).toBe("RED")
      expect((await ok("GET", `/chatapp-flows/${flow.id}`)).health_status).toBe("RED")

      await deliver(flowsPayload(alert({ event: "ENDPOINT_LATENCY", alert_state: "DEACTIVATED", p50_latency: 200, p90_latency: 500 })))
      const events = healthEvents()
      expect(events).toHaveLength(4)
      expect(events[3].data.health_status).toBe("GREEN")
      expect(new Set(events.map((e) => e.event_id)).size).toBe(4)
      expect(await ok("GET", `/chatapp-flows/${flow.id}`)).toMatchObject({ status: "THROTTLED", health_status: "GREEN" })
      expect(received(OTHER_HOOK, "chatapp_flow.health_changed")).toEqual([])
    })

    it("a status change that happens again later (new notification, same words) is a new change: reported, and the status follows", async () => {
      const change = (from: string, to: string) => ({
        event: "FLOW_STATUS_CHANGE",
        message: `Flow Status watched changed status from ${from} to ${to}.`,
        flow_id: flow.meta_flow_id,
        old_status: from,
        new_status: to
      })
      await deliver(flowsPayload(change("THROTTLED", "PUBLISHED")))
      expect((await ok("GET", `/chatapp-flows/${flow.id}`)).status).toBe("PUBLISHED")
      const before = statusEvents().length
      // Throttled a second time: the platform's notification (its entry time) is new, its value the same as the first throttling's.
      await deliver(flowsPayload(change("PUBLISHED", "THROTTLED")))
      expect(statusEvents()).toHaveLength(before + 1)
      expect((await ok("GET", `/chatapp-flows/${flow.id}`)).status).toBe("THROTTLED")
    })
  })

  // ---------------------------------------------------------------------------------------------

  describe("sessions listing (moves the clock past expiry)", () => {
    let survey: any
    let eva: { id: string; digits: string }
    let finn: { id: string; digits: string }
    /** Sessions in the order they were sent, with their tokens. */
    const sends: Array<{ session: any; token: string }> = []

    beforeAll(async () => {
      survey = await createFlow("Survey")
      eva = await newContact("Eva")
      finn = await newContact("Finn")
      await says(eva.digits)
      await says(finn.digits)
      for (let i = 0; i < 26; i++) {
        sends.push(await send(survey.id, eva))
        await h.advance(1)
      }
      sends.push(await send(survey.id, finn))
    })

    it("lists newest first, 25 a page unless told, at most 100 (101 is 422); filters by contact; foreign flows 404", async () => {
      const newestFirst = [...sends].reverse().map((s) => s.session.id)
      const first = await sessionsOf(survey.id)
      expect(first.items.map((s: any) => s.id)).toEqual(newestFirst.slice(0, 25))
      expect(first.pagination).toEqual({ page: 1, page_size: 25, total: 27, total_pages: 2 })
      expect(first.items[0]).toEqual(sends[26]!.session)
      const second = await sessionsOf(survey.id, "?page=2")
      expect(second.items.map((s: any) => s.id)).toEqual(newestFirst.slice(25))
      expect(second.pagination).toEqual({ page: 2, page_size: 25, total: 27, total_pages: 2 })
      const small = await sessionsOf(survey.id, "?page=3&page_size=4")
      expect(small.items.map((s: any) => s.id)).toEqual(newestFirst.slice(8, 12))
      expect(small.pagination).toEqual({ page: 3, page_size: 4, total: 27, total_pages: 7 })
      expect((await sessionsOf(survey.id, "?page_size=100")).items).toHaveLength(27)
      for (const query of ["?page_size=101", "?page_size=0", "?page=0", "?page_size=abc", "?status=bogus", "?contact_id=not-an-id"]) {
        expect((await api("GET", `/chatapp-flows/${survey.id}/sessions${query}`)).status, query).toBe(422)
      }

      const finns = await sessionsOf(survey.id, `?contact_id=${finn.id}`)
      expect(finns.items.map((s: any) => s.id)).toEqual([sends[26]!.session.id])
      expect(finns.pagination.total).toBe(1)
      expect((await sessionsOf(survey.id, `?contact_id=${UNKNOWN_ID}`)).items).toEqual([])

      expect((await api("GET", `/chatapp-flows/${survey.id}/sessions`, undefined, other)).status).toBe(404)
      expect((await api("GET", `/chatapp-flows/${UNKNOWN_ID}/sessions`)).status).toBe(404)
    })

    it("filters by status: completed once answered; sent counted over all pages", async () => {
      const answered = sends[0]!
      await deliver(await flowReply(eva.digits, answered.token, { rating: "4", comment: "ok" }))
      const completed = await sessionsOf(survey.id, "?status=completed")
      expect(completed.items.map((s: any) => s.id)).toEqual([answered.session.id])
      expect(completed.pagination.total).toBe(1)
      const sentFirst = await sessionsOf(survey.id, "?status=sent&page_size=10")
      expect(sentFirst.items).toHaveLength(10)
      expect(sentFirst.items.every((s: any) => s.status === "sent")).toBe(true)
      expect(sentFirst.pagination).toEqual({ page: 1, page_size: 10, total: 26, total_pages: 3 })
      const sentAll = await sessionsOf(survey.id, "?status=sent")
      expect(sentAll.items).toHaveLength(25)
      expect(sentAll.pagination.total).toBe(26)
    })

    it("past expires_at (30 days) an unanswered session reads expired; expired pages hold expired sessions", async () => {
      const last = sends.at(-1)!.session
      const clock = Date.parse((await http(h.host.url, "GET", "/_test/clock")).body.now)
      await h.advance((Date.parse(last.expires_at) - clock) / 1000 + 1)
      const expired = await sessionsOf(survey.id, "?status=expired&page_size=100")
      expect(expired.items).toHaveLength(26)
      expect(expired.items.every((s: any) => s.status === "expired")).toBe(true)
      expect(expired.pagination.total).toBe(26)
      expect((await sessionsOf(survey.id, "?status=sent")).items).toEqual([])
      expect((await sessionsOf(survey.id, "?status=completed")).items.map((s: any) => s.id)).toEqual([sends[0]!.session.id])

      // A new send: one sent, newest; the expired ones are still found page by page.
      await says(eva.digits)
      const fresh = await send(survey.id, eva)
      const sent = await sessionsOf(survey.id, "?status=sent")
      expect(sent.items.map((s: any) => s.id)).toEqual([fresh.session.id])
      expect(sent.pagination.total).toBe(1)
      const expiredPage = await sessionsOf(survey.id, "?status=expired&page_size=5")
      expect(expiredPage.items.map((s: any) => s.id)).toEqual([...sends].reverse().filter((s) => s !== sends[0]).slice(0, 5).map((s) => s.session.id))
      expect(expiredPage.pagination).toEqual({ page: 1, page_size: 5, total: 26, total_pages: 6 })
    })

    it("an answer after expiry still completes the session and emits once", async () => {
      const late = sends[5]!
      await deliver(await flowReply(eva.digits, late.token, { rating: "2", comment: "late" }))
      const session = await sessionById(survey.id, late.session.id)
      expect(session).toMatchObject({ status: "completed", answers: { rating: "2", comment: "late" } })
      expect(received(HOOK, "chatapp_flow.completed").filter((e) => e.event_id === late.session.id)).toHaveLength(1)
    })
  })
})
