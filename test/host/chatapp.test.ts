import { createHmac } from "node:crypto"
import pg from "pg"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type FakeGraph, graphError, startFakeGraph, statusesPayload } from "../support/FakeGraph.ts"
import { admin, adminFailing, type HostProcess, http, startHost } from "../support/Host.ts"
import { hostBackends } from "../support/HostBackends.ts"
import { waitUntil } from "../support/Poll.ts"

// The chat-app operator for real, seen from outside: the host as a child process on a manual test
// clock, pointed at a fake Graph server on loopback; signed operator payloads in, and contacts,
// conversations, messages, files and events out, through nothing but HTTP.

const APP_SECRET = "app-secret-for-tests"
const VERIFY_TOKEN = "verify-token-for-tests"
const TOKEN = "EAAGtesttokenabcdefghijklmnopqrstuvwxyz"
const PNG = Uint8Array.from(Buffer.from(
  "89504e470d0a1a0a0000000d4948445200000001000000010806000000" +
    "1f15c4890000000d4944415478da63f8cfc0f01f0005000201e221bc330000000049454e44ae426082",
  "hex"
))
const PDF = new TextEncoder().encode("%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n")

const sign = (raw: string | Uint8Array) => `sha256=${createHmac("sha256", APP_SECRET).update(raw).digest("hex")}`

let wamids = 0
const wamid = () => `wamid.HBgL${String(++wamids).padStart(8, "0")}`

/** One `messages` change of a phone number: contacts with profile names and the given messages/statuses. */
const messagesChange = (
  phoneNumberId: string,
  value: { contacts?: ReadonlyArray<{ wa_id: string; name: string }>; messages?: ReadonlyArray<unknown>; statuses?: ReadonlyArray<unknown> }
) => ({
  field: "messages",
  value: {
    messaging_product: "whatsapp",
    metadata: { display_phone_number: "15551234567", phone_number_id: phoneNumberId },
    ...(value.contacts === undefined ? {} : { contacts: value.contacts.map((c) => ({ profile: { name: c.name }, wa_id: c.wa_id })) }),
    ...(value.messages === undefined ? {} : { messages: value.messages }),
    ...(value.statuses === undefined ? {} : { statuses: value.statuses })
  }
})
const payload = (...entries: ReadonlyArray<{ id: string; changes: ReadonlyArray<unknown> }>) => ({
  object: "whatsapp_business_account",
  entry: entries
})
const text = (from: string, body: string, id = wamid()) => ({ from, id, timestamp: "1764150000", type: "text", text: { body } })

describe.each(hostBackends)("the chat-app operator on the reference host ($name)", (backend) => {
  let env: Record<string, string>
  let tearDown: () => Promise<void>
  let host: HostProcess
  let graph: FakeGraph
  let tenant: { id: string; key: string }
  let other: { id: string; key: string }
  let channel: { channel_id: string; external_id: string }
  const PHONE_NUMBER_ID = "106540352242922"
  const WABA_ID = "102290129340398"

  beforeAll(async () => {
    graph = await startFakeGraph({ accessToken: TOKEN })
    ;({ env, tearDown } = await backend.setUp())
    env = {
      ...env,
      OMNI_TEST_CLOCK: "manual",
      OMNI_OUTBOUND_ALLOW: "127.0.0.1/32",
      OMNI_CHATAPP_GRAPH_URL: graph.url,
      OMNI_CHATAPP_APP_SECRET: APP_SECRET,
      OMNI_CHATAPP_VERIFY_TOKEN: VERIFY_TOKEN
    }
    host = await startHost(env)
    const boot = await admin(env, "bootstrap", "--email", "owner@example.com")
    tenant = { id: boot.tenant_id, key: boot.api_key }
    const second = await admin(env, "bootstrap", "--email", "other@example.com")
    other = { id: second.tenant_id, key: second.api_key }
    channel = await admin(
      env,
      "channel", "create", "--tenant", tenant.id, "--type", "chatapp",
      "--phone-number-id", PHONE_NUMBER_ID, "--business-account-id", WABA_ID, "--access-token", TOKEN
    )
  })
  afterAll(async () => {
    if (host?.child.exitCode === null) await host.stop()
    await graph?.close()
    await tearDown?.()
  })

  const api = (method: string, path: string, body?: unknown, as = tenant) => http(host.url, method, `/api/v1${path}`, { token: as.key, body })
  const post = async (body: unknown, options: { readonly raw?: string; readonly signature?: string | null } = {}) => {
    const raw = options.raw ?? JSON.stringify(body)
    const headers: Record<string, string> = { "content-type": "application/json" }
    const signature = options.signature === undefined ? sign(raw) : options.signature
    if (signature !== null) headers["x-hub-signature-256"] = signature
    const response = await fetch(`${host.url}/webhooks/chatapp`, { method: "POST", headers, body: raw })
    return { status: response.status, body: await response.text() }
  }
  const drain = async () => {
    const drained = await http(host.url, "POST", "/_test/drain")
    expect(drained.status, host.output().slice(-3000)).toBe(200)
  }
  const advance = async (seconds: number) => {
    const moved = await http(host.url, "POST", "/_test/clock/advance", { body: { seconds } })
    expect(moved.status).toBe(200)
  }
  /** Every event of the tenant of `type`, oldest first. */
  const events = async (type: string, as = tenant) => {
    const items: Array<any> = []
    for (let page = 1;; page++) {
      const got = await api("GET", `/events?type=${type}&page_size=100&page=${page}`, undefined, as)
      expect(got.status).toBe(200)
      items.push(...got.body.items)
      if (!got.body.has_more) break
    }
    return items
  }
  const conversationOf = async (contactId: string) => {
    const got = await api("GET", `/conversations?contact_id=${contactId}&status=open`)
    expect(got.status).toBe(200)
    return got.body.items[0]
  }
  const messagesOf = async (conversationId: string) => {
    const got = await api("GET", `/messages?conversation_id=${conversationId}&page_size=200`)
    expect(got.status).toBe(200)
    return got.body.items as Array<any>
  }
  const contactByPhone = async (phone: string) => {
    const got = await api("GET", "/contacts?page_size=100")
    return (got.body.items as Array<any>).find((c) => c.phone === phone)
  }

  it("connects the channel through the CLI after checking the number with the operator", () => {
    expect(channel).toMatchObject({ type: "chatapp", external_id: PHONE_NUMBER_ID, status: "active" })
    const check = graph.requests().find((r) => r.method === "GET" && r.path === `/${PHONE_NUMBER_ID}`)
    expect(check?.headers.authorization).toBe(`Bearer ${TOKEN}`)
  })

  it("answers the subscription handshake only with the verify token", async () => {
    const ok = await fetch(`${host.url}/webhooks/chatapp?hub.mode=subscribe&hub.verify_token=${VERIFY_TOKEN}&hub.challenge=1158201444`)
    expect(ok.status).toBe(200)
    expect(ok.headers.get("content-type")).toMatch(/^text\/plain/)
    expect(await ok.text()).toBe("1158201444")
    const wrong = await fetch(`${host.url}/webhooks/chatapp?hub.mode=subscribe&hub.verify_token=nope&hub.challenge=1`)
    expect(wrong.status).toBe(403)
  })

  it("refuses a bad or missing signature with 401 and stores nothing; the signature is over the raw bytes", async () => {
    const from = "447700900001"
    const body = payload({ id: WABA_ID, changes: [messagesChange(PHONE_NUMBER_ID, { contacts: [{ wa_id: from, name: "Mallory" }], messages: [text(from, "forged")] })] })
    expect((await post(body, { signature: null })).status).toBe(401)
    expect((await post(body, { signature: "sha256=" + "0".repeat(64) })).status).toBe(401)
    expect((await post(body, { signature: sign(JSON.stringify(body)).replace("sha256=", "sha1=") })).status).toBe(401)
    // Signed over a re-serialisation, not the bytes sent: refused.
    const spaced = JSON.stringify(body, null, 2)
    expect((await post(body, { raw: spaced, signature: sign(JSON.stringify(body)) })).status).toBe(401)
    await drain()
    expect(await contactByPhone(`+${from}`)).toBeUndefined()
    // The same spaced bytes signed as sent: accepted.
    expect(await post(body, { raw: spaced })).toEqual({ status: 200, body: JSON.stringify({ received: true }) })
    await drain()
    expect((await contactByPhone(`+${from}`))?.name).toBe("Mallory")
  })

  it("handles a payload batching three entries, every change and message in it, and a redelivery has the effect of one", async () => {
    const ana = "34600000001"
    const bo = "4915100000002"
    const cy = "12025550003"
    const contactsBefore = (await events("contact.created")).length
    const receivedBefore = (await events("message.received")).length
    const openedBefore = (await events("conversation.created")).length
    const batch = payload(
      {
        id: WABA_ID,
        changes: [
          messagesChange(PHONE_NUMBER_ID, { contacts: [{ wa_id: ana, name: "Ana" }], messages: [text(ana, "hola"), text(ana, "¿estáis?")] }),
          messagesChange(PHONE_NUMBER_ID, { contacts: [{ wa_id: bo, name: "Bo" }], messages: [text(bo, "moin")] })
        ]
      },
      { id: WABA_ID, changes: [messagesChange(PHONE_NUMBER_ID, { contacts: [{ wa_id: cy, name: "Cy" }], messages: [text(cy, "hi")] })] },
      { id: WABA_ID, changes: [messagesChange(PHONE_NUMBER_ID, { contacts: [{ wa_id: ana, name: "Ana" }], messages: [text(ana, "third entry")] })] }
    )
    expect((await post(batch)).status).toBe(200)
    await drain()
    const anaContact = await contactByPhone(`+${ana}`)
    expect(anaContact).toMatchObject({ name: "Ana", phone: `+${ana}` })
    expect((await contactByPhone(`+${bo}`))?.name).toBe("Bo")
    expect((await contactByPhone(`+${cy}`))?.name).toBe("Cy")
    const conversation = await conversationOf(anaContact.id)
    expect(conversation).toMatchObject({ channel_id: channel.channel_id, contact_id: anaContact.id, status: "open" })
    expect((await messagesOf(conversation.id)).map((m) => m.text)).toEqual(["hola", "¿estáis?", "third entry"])
    expect((await events("contact.created")).length - contactsBefore).toBe(3)
    expect((await events("conversation.created")).length - openedBefore).toBe(3)
    const received = (await events("message.received")).slice(receivedBefore)
    expect(received).toHaveLength(5)
    expect(received[0].data).toMatchObject({
      conversation_id: conversation.id,
      contact_id: anaContact.id,
      channel_id: channel.channel_id,
      message: { direction: "inbound", message_type: "text", text: "hola", status: "received" }
    })

    // The operator delivers the same payload again (at least once, for days): nothing changes.
    await advance(3 * 24 * 3600)
    expect((await post(batch)).status).toBe(200)
    expect((await post(JSON.stringify(batch), { raw: JSON.stringify(batch, null, 1) })).status).toBe(200)
    await drain()
    expect((await messagesOf(conversation.id))).toHaveLength(3)
    expect((await events("message.received")).length - receivedBefore).toBe(5)
    expect((await events("contact.created")).length - contactsBefore).toBe(3)
  })

  it("stores every message type, media fetched from the operator with its expiring URL and checked", async () => {
    const from = "393330000004"
    graph.media("1037543291543636", { bytes: PNG, mimeType: "image/png", expireFirstUrl: true })
    graph.media("2091100113401", { bytes: PDF, mimeType: "application/pdf" })
    graph.media("55501", { bytes: PNG, mimeType: "image/webp" })
    const messages = [
      text(from, "plain"),
      { from, id: wamid(), timestamp: "1764150001", type: "image", image: { id: "1037543291543636", mime_type: "image/png", sha256: "x", caption: "the receipt" } },
      { from, id: wamid(), timestamp: "1764150002", type: "document", document: { id: "2091100113401", mime_type: "application/pdf", filename: "../../invoice 11.pdf" } },
      { from, id: wamid(), timestamp: "1764150003", type: "sticker", sticker: { id: "55501", mime_type: "image/webp", animated: false } },
      { from, id: wamid(), timestamp: "1764150004", type: "location", location: { latitude: 45.46, longitude: 9.19, name: "Duomo", address: "Piazza del Duomo" } },
      { from, id: wamid(), timestamp: "1764150005", type: "contacts", contacts: [{ name: { formatted_name: "Luca Rossi" }, phones: [{ phone: "+39 333 000 0005" }] }] },
      { from, id: wamid(), timestamp: "1764150006", type: "button", button: { text: "Yes please", payload: "YES" } },
      { from, id: wamid(), timestamp: "1764150007", type: "interactive", interactive: { type: "button_reply", button_reply: { id: "b-1", title: "Confirm" } } },
      { from, id: wamid(), timestamp: "1764150008", type: "interactive", interactive: { type: "list_reply", list_reply: { id: "row-2", title: "Tuesday", description: "10:00" } } },
      { from, id: wamid(), timestamp: "1764150009", type: "interactive", interactive: { type: "nfm_reply", nfm_reply: { name: "flow", body: "Sent", response_json: "{\"flow_token\":\"abc\"}" } } },
      { from, id: wamid(), timestamp: "1764150010", type: "reaction", reaction: { message_id: "wamid.X", emoji: "👍" } },
      { from, id: wamid(), timestamp: "1764150011", type: "audio", audio: { id: "missing-media", mime_type: "audio/ogg", voice: true } },
      { from, id: wamid(), timestamp: "1764150012", type: "order", order: {}, errors: [{ code: 131051, title: "Message type unknown" }] }
    ]
    expect((await post(payload({ id: WABA_ID, changes: [messagesChange(PHONE_NUMBER_ID, { contacts: [{ wa_id: from, name: "Luca" }], messages })] }))).status).toBe(200)
    await drain()
    const contact = await contactByPhone(`+${from}`)
    const stored = await messagesOf((await conversationOf(contact.id)).id)
    expect(stored.map((m) => [m.message_type, m.text])).toEqual([
      ["text", "plain"],
      ["image", "the receipt"],
      ["document", null],
      ["sticker", null],
      ["location", "Duomo"],
      ["contacts", null],
      ["button", "Yes please"],
      ["interactive", "Confirm"],
      ["interactive", "Tuesday"],
      ["interactive", "Sent"],
      ["reaction", "👍"],
      ["audio", null],
      ["unsupported", null]
    ])
    expect(stored.map((m) => m.external_id)).toEqual(messages.map((m) => m.id))
    expect(stored[4].content.location).toEqual({ latitude: 45.46, longitude: 9.19, name: "Duomo", address: "Piazza del Duomo" })
    // A flow's answer is stored without its response (the token and answers live in the flow's session).
    expect(stored[9].content.interactive).toMatchObject({ type: "nfm_reply" })
    expect(stored[9].content.interactive).not.toHaveProperty("response_json")

    // The image: the first media URL had expired, a fresh one was asked for, the bytes were kept.
    const mediaGets = graph.requests().filter((r) => r.method === "GET" && r.path === "/1037543291543636")
    expect(mediaGets).toHaveLength(2)
    const [image] = stored[1].attachments
    expect(image).toMatchObject({ content_type: "image/png", file_size: PNG.length })
    const download = await fetch(image.url)
    expect(download.status).toBe(200)
    expect(download.headers.get("content-type")).toBe("image/png")
    expect(new Uint8Array(await download.arrayBuffer())).toEqual(PNG)
    // The document keeps a safe name; the sticker's bytes are a PNG whatever the operator said.
    expect(stored[2].attachments[0]).toMatchObject({ filename: "invoice 11.pdf", content_type: "application/pdf", file_size: PDF.length })
    expect(stored[3].attachments[0]).toMatchObject({ content_type: "image/png" })
    // A media object the operator does not know: the message is kept, noted, without a file.
    expect(stored[11].attachments).toEqual([])
    expect(stored[11].content.media_error).toMatch(/missing-media/)
    // Links are refused once tampered with, and once expired.
    expect((await fetch(image.url.replace(/sig=[^&]+/, "sig=AAAA"))).status).toBe(403)
    await advance(2 * 3600)
    expect((await fetch(image.url)).status).toBe(403)
    const fresh = await api("GET", `/messages/${stored[1].id}`)
    expect((await fetch(fresh.body.attachments[0].url)).status).toBe(200)
  })

  it("sends text in the 24-hour window, moves it by statuses never backwards, and refuses outside the window", async () => {
    const from = "5511900000005"
    await post(payload({ id: WABA_ID, changes: [messagesChange(PHONE_NUMBER_ID, { contacts: [{ wa_id: from, name: "Bia" }], messages: [text(from, "oi")] })] }))
    await drain()
    const contact = await contactByPhone(`+${from}`)
    const conversation = await conversationOf(contact.id)
    const sentBefore = (await events("message.sent")).length

    const sent = await api("POST", "/messages", { conversation_id: conversation.id, text: "Olá Bia!" })
    expect(sent.status).toBe(201)
    expect(sent.body).toMatchObject({ direction: "outbound", message_type: "text", text: "Olá Bia!", status: "sent", conversation_id: conversation.id })
    expect(sent.body.external_id).toMatch(/^wamid\./)
    const call = graph.requests().filter((r) => r.method === "POST" && r.path === `/${PHONE_NUMBER_ID}/messages`).at(-1)!
    expect(call.headers.authorization).toBe(`Bearer ${TOKEN}`)
    expect(call.json).toMatchObject({ messaging_product: "whatsapp", to: from, type: "text", text: { body: "Olá Bia!" } })
    const sentEvents = (await events("message.sent")).slice(sentBefore)
    expect(sentEvents).toHaveLength(1)
    expect(sentEvents[0].data.message).toMatchObject({ id: sent.body.id, status: "sent" })

    // `read` arrives before `delivered`, then `read` again, then a late `failed`: never backwards.
    const status = (name: string, ts: string, extra: object = {}) => ({ id: sent.body.external_id, status: name, timestamp: ts, recipient_id: from, ...extra })
    await post(payload({ id: WABA_ID, changes: [messagesChange(PHONE_NUMBER_ID, { statuses: [status("read", "1764150300")] })] }))
    await post(payload({ id: WABA_ID, changes: [messagesChange(PHONE_NUMBER_ID, { statuses: [status("delivered", "1764150200"), status("read", "1764150300")] })] }))
    await post(payload({ id: WABA_ID, changes: [messagesChange(PHONE_NUMBER_ID, { statuses: [status("failed", "1764150400", { errors: [{ code: 131026, title: "Message undeliverable" }] })] })] }))
    await drain()
    const after = await api("GET", `/messages/${sent.body.id}`)
    expect(after.body).toMatchObject({
      status: "read",
      delivered_at: new Date(1764150200_000).toISOString(),
      read_at: new Date(1764150300_000).toISOString(),
      failed_at: null,
      error: null
    })

    // 24 hours after the contact's last message the window is closed.
    await advance(24 * 3600 + 1)
    const closed = await api("POST", "/messages", { conversation_id: conversation.id, text: "still there?" })
    expect(closed.status).toBe(422)
    expect(closed.body.detail[0]).toMatchObject({ loc: ["body", "conversation_id"], type: "customer_service_window_closed" })
    expect(closed.body.detail[0].msg).toMatch(/24 hours.*template/s)
  })

  it("sends files in the window, each uploaded to the operator and sent by its media id, the caption on the first only", async () => {
    const from = "5511900000012"
    await post(payload({ id: WABA_ID, changes: [messagesChange(PHONE_NUMBER_ID, { contacts: [{ wa_id: from, name: "Duda" }], messages: [text(from, "manda o recibo")] })] }))
    await drain()
    const conversation = await conversationOf((await contactByPhone(`+${from}`)).id)
    const upload = async (bytes: Uint8Array, filename: string, type: string) => {
      const form = new FormData()
      form.set("file", new Blob([bytes as Uint8Array<ArrayBuffer>], { type }), filename)
      const response = await fetch(`${host.url}/api/v1/attachments/upload`, { method: "POST", body: form, headers: { authorization: `Bearer ${tenant.key}` } })
      expect(response.status).toBe(201)
      return ((await response.json()) as { id: string }).id
    }
    const image = await upload(PNG, "recibo.png", "image/png")
    const document = await upload(PDF, "recibo.pdf", "application/pdf")
    const uploadsBefore = graph.uploads().length
    const requestsBefore = graph.requests().length

    const sent = await api("POST", "/messages", { conversation_id: conversation.id, message_type: "document", text: "Seu recibo", attachments: [image, document] })
    expect(sent.status).toBe(201)
    expect(sent.body.messages.map((m: any) => [m.message_type, m.text, m.status, m.attachments[0].id])).toEqual([
      ["document", "Seu recibo", "sent", image],
      ["document", null, "sent", document]
    ])
    const uploads = graph.uploads().slice(uploadsBefore)
    expect(uploads.map((u) => [u.phoneNumberId, u.fields.messaging_product, u.fields.type, u.filename])).toEqual([
      [PHONE_NUMBER_ID, "whatsapp", "image/png", "recibo.png"],
      [PHONE_NUMBER_ID, "whatsapp", "application/pdf", "recibo.pdf"]
    ])
    expect(uploads[1]!.bytes).toEqual(PDF)
    const sends = graph.requests().slice(requestsBefore).filter((r) => r.path === `/${PHONE_NUMBER_ID}/messages`)
    // Each send names its message (`biz_opaque_callback_data`), for the operator to echo in its statuses.
    const [first, second] = sent.body.messages.map((m: any) => `omnichannel-message:${m.id}`)
    expect(sends.map((r) => r.json)).toEqual([
      { messaging_product: "whatsapp", recipient_type: "individual", to: from, type: "document", document: { id: uploads[0]!.id, caption: "Seu recibo", filename: "recibo.png" }, biz_opaque_callback_data: first },
      { messaging_product: "whatsapp", recipient_type: "individual", to: from, type: "document", document: { id: uploads[1]!.id, filename: "recibo.pdf" }, biz_opaque_callback_data: second }
    ])
    // A sticker over the operator's 100 KB (static) is refused before any call.
    const before = graph.requests().length
    const sticker = new Uint8Array(200 * 1024)
    sticker.set(new TextEncoder().encode("RIFF\0\0\0\0WEBPVP8 "))
    const refused = await api("POST", "/messages", { conversation_id: conversation.id, attachments: [await upload(sticker, "big.webp", "image/webp")] })
    expect(refused.status).toBe(422)
    expect(refused.body.detail[0]).toMatchObject({ loc: ["body", "attachments", 0], type: "media_too_large", ctx: { message_type: "sticker", max_bytes: 100 * 1024 } })
    expect(refused.body.detail[0].msg).toContain("at most 100 KB static or 500 KB animated")
    expect(graph.requests().length).toBe(before)
    expect((await messagesOf(conversation.id)).filter((m) => m.direction === "outbound")).toHaveLength(2)
  })

  it("answers the operator's refusals: 429 rate-limited, 502 otherwise; the message is kept as failed", async () => {
    const from = "8190000000006"
    await post(payload({ id: WABA_ID, changes: [messagesChange(PHONE_NUMBER_ID, { contacts: [{ wa_id: from, name: "Ken" }], messages: [text(from, "konnichiwa")] })] }))
    await drain()
    const conversation = await conversationOf((await contactByPhone(`+${from}`)).id)
    graph.script(
      "POST",
      "/{phone_number_id}/messages",
      graphError(400, { code: 131056, message: "(#131056) (Business Account, Consumer Account) pair rate limit hit", fbtrace_id: "AbC123" }),
      graphError(400, { code: 131048, message: "Spam rate limit hit", error_user_title: "Spam rate limit hit", error_user_msg: "Message failed to send because of spam limits" })
    )
    const limited = await api("POST", "/messages", { conversation_id: conversation.id, text: "one" })
    expect(limited.status).toBe(429)
    // The pair limit (one recipient, too fast) is a rate limit of its own kind.
    expect(limited.body.detail).toMatchObject({ code: "operator_rate_limited", operator: { kind: "pair_rate_limited", code: 131056, fbtrace_id: "AbC123" } })
    const policy = await api("POST", "/messages", { conversation_id: conversation.id, text: "two" })
    expect(policy.status).toBe(502)
    expect(policy.body.detail).toMatchObject({
      code: "operator_quality_restricted",
      operator: { kind: "quality_restricted", code: 131048, title: "Spam rate limit hit" }
    })
    const stored = await messagesOf(conversation.id)
    expect(stored.slice(-2).map((m) => [m.text, m.status, m.error?.code])).toEqual([["one", "failed", 131056], ["two", "failed", 131048]])
  })

  // The operator took the send but its answer never came back (the connection dropped after the request
  // left): the message may have been sent, so it is neither failed nor sent again, and the operator's
  // status, which names the send's message, settles it.
  it("a send whose answer is lost answers 504 and stays pending; the operator's status settles it, and one no status names fails after 15 minutes, never sent again", async () => {
    const from = "4917600000007"
    await post(payload({ id: WABA_ID, changes: [messagesChange(PHONE_NUMBER_ID, { contacts: [{ wa_id: from, name: "Lia" }], messages: [text(from, "hallo")] })] }))
    await drain()
    const conversation = await conversationOf((await contactByPhone(`+${from}`)).id)
    const sendsTo = () => graph.sends().filter((sent) => sent.phoneNumberId === PHONE_NUMBER_ID && sent.to === from)
    const sentEvents = async () => (await events("message.sent")).filter((e) => e.data.message.conversation_id === conversation.id)

    graph.scriptRecipient(from, { drop: true })
    const lost = await api("POST", "/messages", { conversation_id: conversation.id, text: "Bis morgen" })
    expect(lost.status).toBe(504)
    expect(lost.body.detail).toMatchObject({ code: "operator_no_answer", operator: { kind: "transient" } })
    expect(lost.body.detail.message).toMatch(/may have been sent.*Do not send it again/s)
    const id = lost.body.detail.message_id
    expect(await api("GET", `/messages/${id}`)).toMatchObject({ status: 200, body: { status: "pending", external_id: null, error: null } })
    // The send named its message; the operator took it.
    expect(sendsTo().map((sent) => sent.callbackData)).toEqual([`omnichannel-message:${id}`])

    // Its statuses arrive; the message waits while a send could still be under way (5 minutes), then is settled.
    expect((await post(statusesPayload(WABA_ID, sendsTo(), "sent", 1764150010))).status).toBe(200)
    expect((await post(statusesPayload(WABA_ID, sendsTo(), "delivered", 1764150020))).status).toBe(200)
    await drain()
    expect((await api("GET", `/messages/${id}`)).body).toMatchObject({ status: "pending", external_id: sendsTo()[0]!.wamid })
    await advance(301)
    await drain()
    expect((await api("GET", `/messages/${id}`)).body).toMatchObject({
      status: "delivered",
      external_id: sendsTo()[0]!.wamid,
      sent_at: new Date(1764150010_000).toISOString(),
      delivered_at: new Date(1764150020_000).toISOString(),
      error: null
    })
    expect((await sentEvents()).map((e) => e.data.message.id)).toEqual([id])

    // Another lost answer, and this time no status ever names the send (as if the operator never took it).
    graph.scriptRecipient(from, { drop: true })
    const hung = await api("POST", "/messages", { conversation_id: conversation.id, text: "Hallo?" })
    expect(hung.status).toBe(504)
    const never = hung.body.detail.message_id
    await advance(600)
    await drain()
    expect((await api("GET", `/messages/${never}`)).body.status).toBe("pending")
    await advance(301)
    await drain()
    const failed = (await api("GET", `/messages/${never}`)).body
    expect(failed).toMatchObject({ status: "failed", external_id: null })
    expect(failed.error.message).toMatch(/no answer.*no status.*15 minutes.*never sent twice/s)
    // Neither was sent a second time, and only the settled one made message.sent.
    expect(graph.requests().filter((r) => r.method === "POST" && r.path === `/${PHONE_NUMBER_ID}/messages` && (r.json as { to?: string } | undefined)?.to === from))
      .toHaveLength(2)
    expect((await sentEvents()).map((e) => e.data.message.id)).toEqual([id])
  })

  // A status and the settlement of its message, each in its own transaction on PostgreSQL: whichever
  // writes first, the other waits and then sees it, so the status is never left kept and unapplied.
  // The other side is played by the test's own transaction, held open until the host's waits for it.
  it.runIf(backend.name === "PostgreSQL")("a status and its message's settlement never pass each other: whichever comes second waits and applies the status", async () => {
    const from = "4917600000008"
    await post(payload({ id: WABA_ID, changes: [messagesChange(PHONE_NUMBER_ID, { contacts: [{ wa_id: from, name: "Ida" }], messages: [text(from, "hi")] })] }))
    await drain()
    const conversation = await conversationOf((await contactByPhone(`+${from}`)).id)
    const lostSend = async (body: string) => {
      graph.scriptRecipient(from, { drop: true })
      const lost = await api("POST", "/messages", { conversation_id: conversation.id, text: body })
      expect(lost.status).toBe(504)
      const id = lost.body.detail.message_id as string
      return { id, sent: graph.sends().filter((sent) => sent.callbackData === `omnichannel-message:${id}`) }
    }
    const client = new pg.Client({ connectionString: env.DATABASE_URL })
    await client.connect()
    // Runs `work` while the test's transaction holds what it wrote, committed once a host backend waits
    // for it (or `work` ended without waiting, which the checks after then show).
    const whileHeld = async (hold: () => Promise<void>, work: () => Promise<void>) => {
      await client.query("BEGIN")
      await hold()
      const pid = (await client.query("SELECT pg_backend_pid() AS pid")).rows[0].pid as number
      let ended = false
      const working = work().finally(() => {
        ended = true
      })
      await waitUntil("the host waits for the test's transaction", async () =>
        ended || (await client.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))", [pid])).rows[0].n > 0)
      await client.query("COMMIT")
      await working
    }
    // The test's transaction settles the message (`settlement` with `params`) while the host handles `statuses`.
    const statusWhileSettling = (settlement: string, params: ReadonlyArray<unknown>, statuses: unknown) =>
      whileHeld(
        async () => {
          await client.query(settlement, [...params])
        },
        async () => {
          expect((await post(statuses)).status).toBe(200)
          await drain()
        }
      )
    try {
      // 1. The settlement writes first (the message's answer came): the status, naming the message by
      // its send's reference, waits for it, then finds the message sent and moves it.
      const first = await lostSend("eins")
      await statusWhileSettling(
        "UPDATE messages SET status = 'sent', external_id = $2, sent_at = $3, updated_at = $3 WHERE id = $1",
        [first.id, first.sent[0]!.wamid, new Date(1764150030_000).toISOString()],
        statusesPayload(WABA_ID, first.sent, "delivered", 1764150040)
      )
      expect((await api("GET", `/messages/${first.id}`)).body).toMatchObject({ status: "delivered", delivered_at: new Date(1764150040_000).toISOString() })

      // 2. As 1, for a message a status named earlier: the status handler finds it pending, waits to
      // hold it, then finds it sent and moves it instead of keeping the status.
      const named = await lostSend("drei")
      expect((await post(statusesPayload(WABA_ID, named.sent, "sent", 1764150070))).status).toBe(200)
      await drain()
      await statusWhileSettling(
        "UPDATE messages SET status = 'sent', sent_at = $2, updated_at = $2 WHERE id = $1",
        [named.id, new Date(1764150070_000).toISOString()],
        statusesPayload(WABA_ID, named.sent, "read", 1764150080)
      )
      expect((await api("GET", `/messages/${named.id}`)).body).toMatchObject({ status: "read", read_at: new Date(1764150080_000).toISOString() })

      // 3. The status comes first: a status handler holds the pending message and keeps the status; the
      // settlement (here the sweep of unanswered sends) waits for it, then applies what it kept.
      const second = await lostSend("zwei")
      expect((await post(statusesPayload(WABA_ID, second.sent, "sent", 1764150050))).status).toBe(200)
      await drain()
      const row = (await client.query("SELECT tenant_id, channel_id, external_id, status FROM messages WHERE id = $1", [second.id])).rows[0]
      expect(row).toMatchObject({ external_id: second.sent[0]!.wamid, status: "pending" })
      await whileHeld(
        async () => {
          await client.query("SELECT id FROM messages WHERE id = $1 FOR UPDATE", [second.id])
          await client.query(
            `INSERT INTO message_statuses (tenant_id, channel_id, external_id, status, occurred_at, error, received_at)
             VALUES ($1, $2, $3, 'delivered', $4, NULL, $4)`,
            [row.tenant_id, row.channel_id, row.external_id, new Date(1764150060_000).toISOString()]
          )
        },
        async () => {
          await advance(301)
          await drain()
        }
      )
      expect((await api("GET", `/messages/${second.id}`)).body).toMatchObject({
        status: "delivered",
        sent_at: new Date(1764150050_000).toISOString(),
        delivered_at: new Date(1764150060_000).toISOString()
      })
    } finally {
      await client.end()
    }
  })

  it("keeps what it cannot route, answers 200, and never leaks across tenants", async () => {
    const from = "61400000007"
    const before = (await events("message.received")).length
    const unknown = payload(
      { id: "999", changes: [messagesChange("000111222", { contacts: [{ wa_id: from, name: "Nobody" }], messages: [text(from, "lost?")] })] },
      { id: WABA_ID, changes: [{ field: "phone_number_quality_update", value: { display_phone_number: "15551234567", event: "FLAGGED", current_limit: "TIER_1K" } }] },
      { id: WABA_ID, changes: [{ field: "some_future_field", value: [1, 2, 3] }] }
    )
    expect((await post(unknown)).status).toBe(200)
    expect((await post({ hello: "world" })).status).toBe(200)
    expect((await post(null, { raw: "definitely not json" })).status).toBe(200)
    await drain()
    expect((await events("message.received")).length).toBe(before)
    expect(await contactByPhone(`+${from}`)).toBeUndefined()

    const mine = await api("GET", "/conversations?page_size=100")
    const anyConversation = mine.body.items[0]
    expect((await api("GET", `/conversations/${anyConversation.id}`, undefined, other)).status).toBe(404)
    expect((await api("GET", `/messages?conversation_id=${anyConversation.id}`, undefined, other)).status).toBe(404)
    expect((await api("GET", "/conversations", undefined, other)).body.items).toEqual([])
    expect((await api("POST", `/conversations/${anyConversation.id}/close`, undefined, other)).status).toBe(404)
    expect((await api("POST", "/messages", { conversation_id: anyConversation.id, text: "x" }, other)).status).toBe(404)
  })

  it("refuses the channel's number to another tenant (non-zero exit, the reason on stderr), whose customers' messages keep landing where they did", async () => {
    const refused = await adminFailing(
      env,
      "channel", "create", "--tenant", other.id, "--type", "chatapp",
      "--phone-number-id", PHONE_NUMBER_ID, "--business-account-id", WABA_ID, "--access-token", TOKEN
    )
    expect(refused.code).not.toBe(0)
    expect(refused.stdout).toBe("")
    expect(refused.stderr).toContain(`${PHONE_NUMBER_ID} is already connected to an active chatapp channel`)
    expect((await api("GET", "/channels", undefined, other)).body.items).toEqual([])

    const from = "61400000011"
    await post(payload({ id: WABA_ID, changes: [messagesChange(PHONE_NUMBER_ID, { contacts: [{ wa_id: from, name: "Kim" }], messages: [text(from, "still yours?")] })] }))
    await drain()
    const conversation = await conversationOf((await contactByPhone(`+${from}`)).id)
    expect(conversation.channel_id).toBe(channel.channel_id)
    expect((await messagesOf(conversation.id)).map((m) => m.text)).toEqual(["still yours?"])
    expect((await api("GET", "/conversations", undefined, other)).body.items).toEqual([])
  })

  it("closes a conversation (conversation.closed); the contact's next message opens a new one", async () => {
    const from = "27820000008"
    await post(payload({ id: WABA_ID, changes: [messagesChange(PHONE_NUMBER_ID, { contacts: [{ wa_id: from, name: "Zola" }], messages: [text(from, "first")] })] }))
    await drain()
    const contact = await contactByPhone(`+${from}`)
    const first = await conversationOf(contact.id)
    const closed = await api("POST", `/conversations/${first.id}/close`)
    expect(closed.body).toMatchObject({ id: first.id, status: "closed" })
    expect((await api("POST", `/conversations/${first.id}/close`)).body.closed_at).toBe(closed.body.closed_at)
    const closedEvents = (await events("conversation.closed")).filter((e) => e.data.conversation.id === first.id)
    expect(closedEvents).toHaveLength(1)
    expect((await api("POST", "/messages", { conversation_id: first.id, text: "x" })).status).toBe(422)
    await advance(60)
    await post(payload({ id: WABA_ID, changes: [messagesChange(PHONE_NUMBER_ID, { contacts: [{ wa_id: from, name: "Zola" }], messages: [text(from, "again")] })] }))
    await drain()
    const second = await conversationOf(contact.id)
    expect(second.id).not.toBe(first.id)
    expect((await messagesOf(second.id)).map((m) => m.text)).toEqual(["again"])
    const listed = await api("GET", `/conversations?contact_id=${contact.id}`)
    expect(listed.body.items.map((c: any) => c.status)).toEqual(["open", "closed"])
    expect((await api("GET", `/conversations?contact_id=${contact.id}&status=closed`)).body.items.map((c: any) => c.id)).toEqual([first.id])
    expect((await api("GET", "/conversations?status=maybe")).status).toBe(422)
    expect((await api("GET", "/messages")).status).toBe(422)
  })
})
