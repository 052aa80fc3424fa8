import { createHmac } from "node:crypto"
import { Logger, LogLevel } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { chatappProvider, makeSimulatedChatPlatform } from "../../../adapters/chatapp/index.ts"
import { testDatabases } from "../../support/Databases.ts"
import { bootstrap, startTestApp, type TestApp } from "../../support/TestApp.ts"

// The inbound processor works a claim of stored operator payloads at a time: runs of plain messages
// and statuses are stored together in one transaction, anything else (a keyword, a file, a flow's
// answer, a field change) alone between them. Seen from outside, a claim must mean what the same
// payloads processed one by one mean: order kept, duplicates once, a failing item holding no other
// back, one contact and one conversation per person however many arrive at once.

const APP_SECRET = "app-secret-for-batch-tests"
const WABA_ID = "102290129340398"

// SQLite and, with PG_URL, PostgreSQL.
const databases = testDatabases.filter((database) => database.name === "sqlite-memory" || database.name === "postgres")

type Json = Record<string, unknown>

/** A text message as the operator sends it. */
const text = (from: string, body: string, id: string, seconds: number): Json => ({
  from,
  id,
  timestamp: String(seconds),
  type: "text",
  text: { body }
})

/** A status of an outbound message as the operator reports it. */
const status = (id: string, name: string, seconds: number, recipient: string): Json => ({
  id,
  status: name,
  timestamp: String(seconds),
  recipient_id: recipient
})

/** One operator payload for the number `phoneNumberId`: senders' profile names, messages and statuses. */
const payloadTo = (phoneNumberId: string, content: {
  readonly names?: Readonly<Record<string, string>>
  readonly messages?: ReadonlyArray<Json>
  readonly statuses?: ReadonlyArray<Json>
}) => ({
  object: "whatsapp_business_account",
  entry: [{
    id: WABA_ID,
    changes: [{
      field: "messages",
      value: {
        messaging_product: "whatsapp",
        metadata: { display_phone_number: "15551234567", phone_number_id: phoneNumberId },
        ...(content.names === undefined ? {} : {
          contacts: Object.entries(content.names).map(([waId, name]) => ({ profile: { name }, wa_id: waId }))
        }),
        ...(content.messages === undefined ? {} : { messages: content.messages }),
        ...(content.statuses === undefined ? {} : { statuses: content.statuses })
      }
    }]
  }]
})

describe.each(databases)("the inbound processor's claims ($name)", (database) => {
  // One library per database (a PostgreSQL database takes seconds to make); each case has a tenant
  // and a number of its own, so it sees only its own contacts, events and payloads.
  let test: TestApp
  // What the library logged at warning level or worse, as the host's operator reads it: a claim
  // holding nothing wrong warns of nothing (a batch that fell back to items one by one would).
  const warnings: Array<string> = []
  beforeAll(async () => {
    const platform = makeSimulatedChatPlatform()
    const collect = Logger.make(({ logLevel, message }) => {
      if (LogLevel.isGreaterThanOrEqualTo(logLevel, "Warn")) {
        warnings.push((Array.isArray(message) ? message : [message]).map((part) => typeof part === "string" ? part : JSON.stringify(part)).join(" "))
      }
    })
    test = await startTestApp(await database.open(), {
      chatPlatform: platform,
      providers: { chatapp: chatappProvider(platform) },
      chatappWebhook: { appSecret: APP_SECRET, verifyToken: "verify" },
      telemetry: Logger.layer([collect])
    })
  })
  afterAll(() => test?.close())

  let tenants = 0
  /** A new tenant with a chat-app number of its own connected, and how to act and look as it. */
  const start = async () => {
    const app = test
    const n = ++tenants
    const phoneNumberId = `10654035224${String(n).padStart(4, "0")}`
    const { api_key: key, tenant_id: tenantId } = await bootstrap(app, `owner-${n}@example.com`)
    const channel = await app.operator((operator) =>
      operator.createChannel({
        tenantId,
        type: "chatapp",
        inputs: { phone_number_id: phoneNumberId, business_account_id: WABA_ID, access_token: "EAAGbatchtesttoken0000000001" }
      })
    )
    const payload = (content: Parameters<typeof payloadTo>[1]) => payloadTo(phoneNumberId, content)
    warnings.length = 0

    const api = async (method: string, path: string, body?: unknown) => {
      const answer = await app.call(method, path, { token: key, ...(body === undefined ? {} : { body }) })
      expect(answer.status, `${method} ${path}: ${JSON.stringify(answer.body)}`).toBeLessThan(300)
      return answer.body
    }
    /** POSTs `body` to the operator webhook, signed; the payload is stored, not yet processed. */
    const post = async (body: unknown) => {
      const raw = JSON.stringify(body)
      const answer = await app.app.handler(new Request("http://test.local/webhooks/chatapp", {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "x-hub-signature-256": `sha256=${createHmac("sha256", APP_SECRET).update(raw).digest("hex")}`
        },
        body: raw
      }))
      expect(answer.status, await answer.clone().text()).toBe(200)
    }
    /** The test clock's now in the operator's unit (seconds). */
    const seconds = () => Math.floor(app.clock.nowMillis() / 1000)
    /** Every event of `type`, oldest first. */
    const events = async (type: string) => {
      const items: Array<any> = []
      for (let page = 1;; page++) {
        const got = await api("GET", `/events?type=${type}&page_size=100&page=${page}`)
        items.push(...got.items)
        if (!got.has_more) return items
      }
    }
    const allContacts = async () => {
      const items: Array<any> = []
      for (let page = 1;; page++) {
        const got = await api("GET", `/contacts?page_size=100&page=${page}`)
        items.push(...got.items)
        if (page >= got.pagination.total_pages) return items
      }
    }
    const contactByPhone = async (phone: string) => (await allContacts()).find((contact) => contact.phone === phone)
    /** The contact's conversations (all of them, open or not). */
    const conversationsOf = async (contactId: string): Promise<Array<any>> =>
      (await api("GET", `/conversations?contact_id=${contactId}&page_size=100`)).items
    const messagesOf = async (conversationId: string): Promise<Array<any>> =>
      (await api("GET", `/messages?conversation_id=${conversationId}&page_size=200`)).items
    /** The stored operator payloads to this number, each with the text of its body. */
    const payloadRows = async () =>
      (await app.database.db.selectFrom("inbound_payloads")
        .select(["status", "attempts", "note", "next_attempt_at", "body"])
        .where("source", "=", "chatapp")
        .execute())
        .map(({ body, ...row }) => ({ ...row, text: Buffer.from(body).toString("utf8") }))
        .filter((row) => row.text.includes(`"phone_number_id":"${phoneNumberId}"`))
    /** A contact's single open conversation on the channel, with its messages. */
    const talkOf = async (phone: string) => {
      const contact = await contactByPhone(phone)
      expect(contact, `a contact with phone ${phone}`).toBeDefined()
      const open = (await conversationsOf(contact.id)).filter((c) => c.status === "open" && c.channel_id === channel.channel_id)
      expect(open, `open conversations of ${phone}`).toHaveLength(1)
      return { contact, conversation: open[0], messages: await messagesOf(open[0].id) }
    }

    return { app, api, post, payload, seconds, events, allContacts, contactByPhone, conversationsOf, messagesOf, payloadRows, talkOf, channel }
  }

  it("keeps the order and meaning of one contact's messages in one claim: a keyword between plain messages acts in its place", async () => {
    const { api, app, events, payload, payloadRows, post, seconds, talkOf } = await start()
    const maria = "34600000001"
    const bo = "4915100000002"
    const newsletter = await api("POST", "/lists", { name: "Newsletter", slug: "newsletter", is_default: true })
    const contact = await api("POST", "/contacts", { name: "Maria", phone: `+${maria}` })
    await api("POST", `/lists/${newsletter.id}/subscriptions`, { contact_id: contact.id })

    // Three payloads taken in one claim: plain, keyword, plain; someone else's plain messages around it.
    const at = seconds()
    await post(payload({
      names: { [maria]: "Maria", [bo]: "Bo" },
      messages: [text(maria, "hello", "wamid.order-1", at), text(bo, "moin", "wamid.order-bo-1", at)]
    }))
    await post(payload({ names: { [maria]: "Maria" }, messages: [text(maria, "STOP", "wamid.order-2", at + 1)] }))
    await post(payload({
      names: { [maria]: "Maria", [bo]: "Bo" },
      messages: [text(maria, "after", "wamid.order-3", at + 2), text(bo, "still here", "wamid.order-bo-2", at + 2)]
    }))
    await app.app.drainDueWork()

    const { conversation, messages } = await talkOf(`+${maria}`)
    // The keyword is stored in its place, and its confirmation goes out before what the contact said next.
    expect(messages.map((m) => [m.direction, m.text])).toEqual([
      ["inbound", "hello"],
      ["inbound", "STOP"],
      ["outbound", "You have been unsubscribed from Newsletter and will get no more messages from it. Reply START to subscribe again."],
      ["inbound", "after"]
    ])
    expect(messages[2]).toMatchObject({ status: "sent", external_id: expect.stringMatching(/^wamid\./) })
    expect((await talkOf(`+${bo}`)).messages.map((m) => m.text)).toEqual(["moin", "still here"])

    // Its effect: the contact left the list, by keyword.
    const subscriptions = await api("GET", `/contacts/${contact.id}/subscriptions`)
    expect(subscriptions.items).toEqual([
      expect.objectContaining({ list_id: newsletter.id, status: "unsubscribed", unsubscribed_at: expect.any(String) })
    ])
    expect((await events("contact.unsubscribed")).map((e) => e.data)).toEqual([
      expect.objectContaining({ contact_id: contact.id, list_id: newsletter.id, method: "keyword" })
    ])

    // One message.received per message, in the order they were said; one message.sent, the reply.
    const received = (await events("message.received")).filter((e) => e.data.conversation_id === conversation.id)
    expect(received.map((e) => e.data.message.text)).toEqual(["hello", "STOP", "after"])
    expect((await events("message.sent")).map((e) => e.data.message.id)).toEqual([messages[2].id])

    expect((await payloadRows()).map((row) => [row.status, row.attempts, row.note])).toEqual([
      ["processed", 1, null],
      ["processed", 1, null],
      ["processed", 1, null]
    ])
    expect(warnings).toEqual([])
  })

  it("stores a message once however often a claim repeats it, and moves an outbound message only forward by statuses out of order", async () => {
    const { api, app, events, payload, payloadRows, post, seconds, talkOf } = await start()
    const ana = "34600000011"
    await post(payload({ names: { [ana]: "Ana" }, messages: [text(ana, "hi", "wamid.dup-opening", seconds())] }))
    await app.app.drainDueWork()
    const { conversation } = await talkOf(`+${ana}`)
    const sent = await api("POST", "/messages", { conversation_id: conversation.id, text: "Your order shipped" })
    expect(sent).toMatchObject({ status: "sent", external_id: expect.stringMatching(/^wamid\./), sent_at: expect.any(String) })
    const wamid = sent.external_id as string

    app.clock.advance(5_000)
    const at = seconds()
    const iso = (s: number) => new Date(s * 1000).toISOString()
    // One claim: a message in two payloads, another twice in one payload, and the sent message's
    // statuses in the order read, sent, delivered, read again.
    await post(payload({
      names: { [ana]: "Ana" },
      messages: [text(ana, "same message", "wamid.dup-twice-across", at)],
      statuses: [status(wamid, "read", at + 3, ana)]
    }))
    await post(payload({
      names: { [ana]: "Ana" },
      messages: [
        text(ana, "same message", "wamid.dup-twice-across", at),
        text(ana, "said twice", "wamid.dup-twice-inside", at + 1),
        text(ana, "said twice", "wamid.dup-twice-inside", at + 1)
      ],
      statuses: [status(wamid, "sent", at + 1, ana)]
    }))
    await post(payload({ statuses: [status(wamid, "delivered", at + 2, ana), status(wamid, "read", at + 3, ana)] }))
    await app.app.drainDueWork()

    const { messages } = await talkOf(`+${ana}`)
    expect(messages.map((m) => [m.direction, m.text])).toEqual([
      ["inbound", "hi"],
      ["outbound", "Your order shipped"],
      ["inbound", "same message"],
      ["inbound", "said twice"]
    ])
    const received = await events("message.received")
    expect(received.map((e) => e.data.message.external_id)).toEqual([
      "wamid.dup-opening",
      "wamid.dup-twice-across",
      "wamid.dup-twice-inside"
    ])
    // Read, with every time filled in, and the send's own time kept: a late "sent" moves nothing back.
    const outbound = await api("GET", `/messages/${sent.id}`)
    expect(outbound).toMatchObject({
      status: "read",
      sent_at: sent.sent_at,
      delivered_at: iso(at + 2),
      read_at: iso(at + 3),
      failed_at: null,
      error: null
    })

    // The operator delivers the "sent" again later: still read, nothing stored again.
    app.clock.advance(60_000)
    await post(payload({ statuses: [status(wamid, "sent", at + 1, ana)], messages: [text(ana, "said twice", "wamid.dup-twice-inside", at + 1)] }))
    await app.app.drainDueWork()
    expect(await api("GET", `/messages/${sent.id}`)).toEqual(outbound)
    expect((await talkOf(`+${ana}`)).messages).toHaveLength(4)
    expect(await events("message.received")).toHaveLength(3)
    expect((await payloadRows()).map((row) => row.status)).toEqual(Array(5).fill("processed"))
    // Repeats are skipped, not failed on: nothing for the operator to look into.
    expect(warnings).toEqual([])
  })

  it("stores every other item of a claim when one message's insert fails, and retries only the payload carrying it", async () => {
    const { api, app, allContacts, events, payload, payloadRows, post, seconds, talkOf } = await start()
    const ana = "34600000021"
    const bo = "34600000022"
    const cy = "34600000023"
    const di = "34600000024"
    await post(payload({ names: { [ana]: "Ana" }, messages: [text(ana, "hi", "wamid.iso-opening", seconds())] }))
    await app.app.drainDueWork()
    const { conversation } = await talkOf(`+${ana}`)
    // An outbound message holds the operator id the next inbound message claims: on one channel an
    // operator id names one message, so storing that inbound message fails on the unique index.
    const sent = await api("POST", "/messages", { conversation_id: conversation.id, text: "Hello Ana" })
    const clash = sent.external_id as string
    const receivedBefore = (await events("message.received")).length

    const at = seconds()
    await post(payload({ names: { [bo]: "Bo" }, messages: [text(bo, "one", "wamid.iso-b1", at)] }))
    await post(payload({
      names: { [cy]: "Cy" },
      messages: [text(cy, "clash", clash, at), text(cy, "two", "wamid.iso-c2", at)]
    }))
    await post(payload({
      names: { [bo]: "Bo", [di]: "Di" },
      messages: [text(bo, "three", "wamid.iso-b3", at), text(di, "four", "wamid.iso-d1", at)]
    }))
    await app.app.drainDueWork()

    const stored = async () => ({
      bo: (await talkOf(`+${bo}`)).messages.map((m) => m.text),
      cy: (await talkOf(`+${cy}`)).messages.map((m) => m.text),
      di: (await talkOf(`+${di}`)).messages.map((m) => m.text)
    })
    expect(await stored()).toEqual({ bo: ["one", "three"], cy: ["two"], di: ["four"] })
    const received = (await events("message.received")).slice(receivedBefore)
    expect(received.map((e) => e.data.message.text)).toEqual(["one", "two", "three", "four"])
    // The outbound message keeping that id is untouched.
    expect(await api("GET", `/messages/${sent.id}`)).toEqual(sent)
    expect((await allContacts()).map((c) => c.phone).sort()).toEqual([ana, bo, cy, di].map((p) => `+${p}`))

    const nowMs = app.clock.nowMillis()
    /** The claim's payloads by what they carry. */
    const rows = async () => {
      const carrying = (text: string) =>
        text.includes(clash) ? "clash and two" : text.includes("wamid.iso-b1") ? "one" : text.includes("wamid.iso-b3") ? "three and four" : "opening"
      const all = (await payloadRows()).map((row) => [carrying(row.text), { status: row.status, attempts: row.attempts, note: row.note, next: row.next_attempt_at }] as const)
      return Object.fromEntries(all.filter(([carries]) => carries !== "opening"))
    }
    expect(await rows()).toEqual({
      "one": { status: "processed", attempts: 1, note: null, next: expect.anything() },
      "clash and two": {
        status: "pending",
        attempts: 1,
        note: expect.stringContaining(`message message:${clash}:`),
        next: new Date(nowMs + 10_000).toISOString()
      },
      "three and four": { status: "processed", attempts: 1, note: null, next: expect.anything() }
    })
    // The operator is told of the one item that was not handled, and of no other.
    expect(warnings.filter((warning) => warning.includes("not handled"))).toEqual([expect.stringContaining(clash)])

    // Taken again once due: what was stored is skipped, the clashing message fails again.
    app.clock.advance(10_000)
    await app.app.drainDueWork()
    expect(await stored()).toEqual({ bo: ["one", "three"], cy: ["two"], di: ["four"] })
    expect((await events("message.received")).slice(receivedBefore)).toHaveLength(4)
    expect((await rows())["clash and two"]).toMatchObject({ status: "pending", attempts: 2, note: expect.stringContaining(clash) })
  })

  it("makes one contact per number and one open conversation per contact for many senders in one claim", async () => {
    const { api, app, allContacts, channel, conversationsOf, events, messagesOf, payload, payloadRows, post, seconds, talkOf } = await start()
    const known = "4915100000100"
    const talking = "4915100000101"
    const knownContact = await api("POST", "/contacts", { name: "Known", phone: `+${known}` })
    await post(payload({ names: { [talking]: "Talking" }, messages: [text(talking, "earlier", "wamid.many-earlier", seconds())] }))
    await app.app.drainDueWork()
    const before = await talkOf(`+${talking}`)
    const createdBefore = {
      contacts: (await events("contact.created")).length,
      conversations: (await events("conversation.created")).length,
      received: (await events("message.received")).length
    }

    const fresh = Array.from({ length: 30 }, (_, i) => `3460010${String(i).padStart(4, "0")}`)
    const senders = [...fresh, known, talking]
    const ROUNDS = 3
    const said = (phone: string, round: number) => `${phone} says ${round}`
    const messages = Array.from({ length: ROUNDS }, (_, round) =>
      senders.map((phone) => text(phone, said(phone, round), `wamid.many-${phone}-${round}`, seconds() + round))).flat()
    // Two messages of two senders a payload: 48 payloads, one claim (the default claim is 50).
    const payloads = Array.from({ length: messages.length / 2 }, (_, i) => messages.slice(2 * i, 2 * i + 2))
    for (const pair of payloads) {
      await post(payload({
        names: Object.fromEntries(pair.map((m) => [m.from as string, m.from === known ? "Known on the app" : `Sender ${m.from}`])),
        messages: pair
      }))
    }
    await app.app.drainDueWork()

    const contacts = await allContacts()
    expect(contacts.map((c) => c.phone).sort()).toEqual(senders.map((p) => `+${p}`).sort())
    const byPhone = new Map(contacts.map((c) => [c.phone, c]))
    expect(byPhone.get(`+${known}`)).toMatchObject({ id: knownContact.id, name: "Known" })
    expect(byPhone.get(`+${talking}`).id).toBe(before.contact.id)
    for (const phone of fresh) expect(byPhone.get(`+${phone}`)).toMatchObject({ name: `Sender ${phone}` })

    const conversationOf = new Map<string, string>()
    for (const phone of senders) {
      const contact = byPhone.get(`+${phone}`)
      const all = await conversationsOf(contact.id)
      expect(all.map((c) => [c.channel_id, c.status]), phone).toEqual([[channel.channel_id, "open"]])
      conversationOf.set(all[0].id, phone)
      const expected = [...(phone === talking ? ["earlier"] : []), ...Array.from({ length: ROUNDS }, (_, round) => said(phone, round))]
      expect((await messagesOf(all[0].id)).map((m) => m.text), phone).toEqual(expected)
    }
    expect(conversationOf.get(before.conversation.id)).toBe(talking)

    const newContacts = (await events("contact.created")).slice(createdBefore.contacts)
    expect(newContacts.map((e) => e.data.contact.phone).sort()).toEqual(fresh.map((p) => `+${p}`).sort())
    const newConversations = (await events("conversation.created")).slice(createdBefore.conversations)
    expect(newConversations.map((e) => conversationOf.get(e.data.conversation.id)).sort()).toEqual([...fresh, known].sort())
    const received = (await events("message.received")).slice(createdBefore.received)
    expect(received).toHaveLength(messages.length)
    for (const event of received) {
      expect(conversationOf.get(event.data.conversation_id)).toBe(event.data.message.text.split(" ")[0])
    }
    expect(new Set(received.map((e) => e.data.message.external_id)).size).toBe(messages.length)
    expect((await payloadRows()).filter((row) => row.status !== "processed")).toEqual([])
    expect(warnings).toEqual([])
  })
})
