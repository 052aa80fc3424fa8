import { createHmac } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { chatappProvider, makeGraphChatPlatform } from "../../adapters/chatapp/index.ts"
import { type GuardedHttp, makeGuardedHttp } from "../../adapters/http/GuardedHttp.ts"
import { busboyMultipart } from "../../adapters/node/BusboyMultipart.ts"
import { testDatabases } from "../support/Databases.ts"
import { type FakeGraph, graphError, startFakeGraph } from "../support/FakeGraph.ts"
import { bootstrap, startTestApp, type TestApp } from "../support/TestApp.ts"

// Files sent to a chat-app conversation through `POST /messages`, in process, against the fake
// operator over HTTP: each file uploaded to the operator (`POST /{phone_number_id}/media`, multipart),
// then sent as its own message by media id, the caption on the first only; the operator's limits
// checked before any call; the outbound lifecycle's statuses; no AI summary of what the workspace sent.

const APP_SECRET = "app-secret-for-media-send-tests"
const TOKEN = "EAAGmediasendtesttoken00000000001"
const WABA_ID = "102290129340398"
const KB = 1024
const MB = 1024 * 1024

// SQLite and, with PG_URL, PostgreSQL.
const databases = testDatabases.filter((database) => database.name === "sqlite-memory" || database.name === "postgres")

const ascii = (text: string) => [...text].map((c) => c.charCodeAt(0))
/** `head` followed by zeros up to `size` bytes: type detection reads the head, the size is what limits see. */
const fileOf = (head: ReadonlyArray<number> | Uint8Array, size: number) => {
  const bytes = new Uint8Array(size)
  bytes.set(head)
  return bytes
}
const PNG = Uint8Array.from(Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==",
  "base64"
))
const JPEG = fileOf([0xff, 0xd8, 0xff, 0xe0, 0, 0x10, ...ascii("JFIF"), 0], 2 * KB)
const PDF = new TextEncoder().encode("%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n")
const MP4 = fileOf([0, 0, 0, 0x18, ...ascii("ftypisom"), 0, 0, 2, 0, ...ascii("isomiso2")], 4 * KB)
const M4A = fileOf([0, 0, 0, 0x18, ...ascii("ftypM4A "), 0, 0, 2, 0, ...ascii("isomiso2")], 4 * KB)
const OGG = fileOf([...ascii("OggS"), 0, 2, ...new Array(22).fill(0), 1, 0x1e, ...ascii("OpusHead")], 3 * KB)
const webp = (size: number, animated: boolean) =>
  fileOf(animated ? [...ascii("RIFF"), 0, 0, 0, 0, ...ascii("WEBPVP8X"), 10, 0, 0, 0, 0x12] : [...ascii("RIFF"), 0, 0, 0, 0, ...ascii("WEBPVP8 ")], size)

describe.each(databases)("chat-app file sends ($name)", (database) => {
  let test: TestApp
  let fake: FakeGraph
  let outbound: GuardedHttp
  beforeAll(async () => {
    fake = await startFakeGraph({ accessToken: TOKEN })
    outbound = makeGuardedHttp({ allow: ["127.0.0.1/32"] })
    const platform = makeGraphChatPlatform({ baseUrl: fake.url, outbound, timeoutMs: 10_000 })
    test = await startTestApp(await database.open(), {
      chatPlatform: platform,
      providers: { chatapp: chatappProvider(platform) },
      chatappWebhook: { appSecret: APP_SECRET, verifyToken: "verify" },
      multipart: busboyMultipart
    })
  })
  afterAll(async () => {
    await test?.close()
    await outbound?.close()
    await fake?.close()
  })

  let tenants = 0
  /** A new tenant with its own number, a contact who just wrote (the window open), and how to act as it. */
  const start = async () => {
    const n = ++tenants
    const phoneNumberId = `10654035225${String(n).padStart(4, "0")}`
    const from = `3460000${String(n).padStart(4, "0")}`
    const { api_key: key, tenant_id: tenantId } = await bootstrap(test, `media-owner-${n}@example.com`)
    await test.operator((operator) =>
      operator.createChannel({
        tenantId,
        type: "chatapp",
        inputs: { phone_number_id: phoneNumberId, business_account_id: WABA_ID, access_token: TOKEN }
      })
    )
    const api = (method: string, path: string, body?: unknown, as = key) =>
      test.call(method, path, { token: as, ...(body === undefined ? {} : { body }) })
    /** The operator's webhook, signed, then processed. */
    const inbound = async (value: Record<string, unknown>) => {
      const raw = JSON.stringify({
        object: "whatsapp_business_account",
        entry: [{
          id: WABA_ID,
          changes: [{
            field: "messages",
            value: { messaging_product: "whatsapp", metadata: { display_phone_number: "15551234567", phone_number_id: phoneNumberId }, ...value }
          }]
        }]
      })
      const answer = await test.app.handler(new Request("http://test.local/webhooks/chatapp", {
        method: "POST",
        headers: { "content-type": "application/json", "x-hub-signature-256": `sha256=${createHmac("sha256", APP_SECRET).update(raw).digest("hex")}` },
        body: raw
      }))
      expect(answer.status).toBe(200)
      await test.app.drainDueWork()
    }
    const seconds = () => String(Math.floor(test.clock.nowMillis() / 1000))
    await inbound({
      contacts: [{ profile: { name: "Ana" }, wa_id: from }],
      messages: [{ from, id: `wamid.in-${n}`, timestamp: seconds(), type: "text", text: { body: "hola" } }]
    })
    const contact = (await api("GET", "/contacts?page_size=100")).body.items.find((c: any) => c.phone === `+${from}`)
    const conversation = (await api("GET", `/conversations?contact_id=${contact.id}&status=open`)).body.items[0]
    /** `POST /attachments/upload` of `bytes`; resolves to the attachment id. */
    const upload = async (bytes: Uint8Array, filename: string, type: string, as = key) => {
      const form = new FormData()
      form.set("file", new Blob([bytes as Uint8Array<ArrayBuffer>], { type }), filename)
      const response = await test.app.handler(new Request("http://test.local/api/v1/attachments/upload", {
        method: "POST",
        headers: { authorization: `Bearer ${as}` },
        body: form
      }))
      const body = await response.json() as any
      expect(response.status, JSON.stringify(body)).toBe(201)
      return body.id as string
    }
    const send = (body: Record<string, unknown>) => api("POST", "/messages", { conversation_id: conversation.id, ...body })
    const messages = async () => (await api("GET", `/messages?conversation_id=${conversation.id}&page_size=200`)).body.items as Array<any>
    const events = async (type: string) => (await api("GET", `/events?type=${type}&page_size=100`)).body.items as Array<any>
    /** The operator calls for this number since `from` (an index into `fake.requests()`). */
    const calls = (since: number) => fake.requests().slice(since).filter((r) => r.path.startsWith(`/${phoneNumberId}/`))
    const uploadsOf = (since: number) => fake.uploads().slice(since).filter((u) => u.phoneNumberId === phoneNumberId)
    return { key, tenantId, phoneNumberId, from, api, inbound, seconds, conversation, upload, send, messages, events, calls, uploadsOf }
  }

  it("sends each file as its own operator message, uploaded first and named by media id, the caption on the first file only", async () => {
    const t = await start()
    const jpeg = await t.upload(JPEG, "front.jpg", "image/jpeg")
    const png = await t.upload(PNG, "back.png", "image/png")
    const requestsBefore = fake.requests().length
    const uploadsBefore = fake.uploads().length

    const sent = await t.send({ text: "Both sides of the card", attachments: [jpeg, png] })
    expect(sent.status, JSON.stringify(sent.body)).toBe(201)
    // The answer is the first message, with every message of the send.
    expect(sent.body).toMatchObject({ direction: "outbound", message_type: "image", text: "Both sides of the card", status: "sent" })
    expect(sent.body.messages.map((m: any) => [m.message_type, m.text, m.status, m.attachments.map((a: any) => a.id)])).toEqual([
      ["image", "Both sides of the card", "sent", [jpeg]],
      ["image", null, "sent", [png]]
    ])
    expect(sent.body.id).toBe(sent.body.messages[0].id)

    // On the wire: upload, send, upload, send, each upload multipart with the operator's fields.
    const calls = t.calls(requestsBefore)
    expect(calls.map((r) => r.path)).toEqual([
      `/${t.phoneNumberId}/media`,
      `/${t.phoneNumberId}/messages`,
      `/${t.phoneNumberId}/media`,
      `/${t.phoneNumberId}/messages`
    ])
    expect(calls[0]!.headers.authorization).toBe(`Bearer ${TOKEN}`)
    expect(calls[0]!.headers["content-type"]).toMatch(/^multipart\/form-data; boundary=/)
    const uploads = t.uploadsOf(uploadsBefore)
    expect(uploads.map((u) => [u.fields, u.filename, u.contentType])).toEqual([
      [{ messaging_product: "whatsapp", type: "image/jpeg" }, "front.jpg", "image/jpeg"],
      [{ messaging_product: "whatsapp", type: "image/png" }, "back.png", "image/png"]
    ])
    expect(uploads[0]!.bytes).toEqual(JPEG)
    expect(uploads[1]!.bytes).toEqual(PNG)
    expect(calls[1]!.json).toEqual({
      messaging_product: "whatsapp",
      recipient_type: "individual",
      to: t.from,
      type: "image",
      image: { id: uploads[0]!.id, caption: "Both sides of the card" },
      // The send names its message, for the operator to echo in its statuses.
      biz_opaque_callback_data: `omnichannel-message:${sent.body.messages[0].id}`
    })
    expect(calls[3]!.json).toMatchObject({ type: "image", image: { id: uploads[1]!.id } })
    expect((calls[3]!.json as any).image).not.toHaveProperty("caption")

    // Stored as sent: one message per operator message, each with its file, each announced.
    const stored = (await t.messages()).filter((m) => m.direction === "outbound")
    expect(stored.map((m) => [m.id, m.external_id])).toEqual(sent.body.messages.map((m: any) => [m.id, m.external_id]))
    expect(stored.every((m) => /^wamid\./.test(m.external_id))).toBe(true)
    expect((await t.events("message.sent")).map((e) => e.data.message.id).sort()).toEqual(stored.map((m) => m.id).sort())
    expect((await t.api("GET", `/attachments/${jpeg}`)).body).toMatchObject({ direction: "outbound", message_id: stored[0].id })
  })

  it("sends a document with its name and caption, a video, audio and stickers, each in the operator's shape", async () => {
    const t = await start()
    const cases: ReadonlyArray<readonly [bytes: Uint8Array, name: string, type: string, body: Record<string, unknown>, wire: Record<string, unknown>]> = [
      [PDF, "invoice-11.pdf", "application/pdf", { message_type: "document", text: "Your invoice" }, { type: "document", document: { caption: "Your invoice", filename: "invoice-11.pdf" } }],
      // A photo may go as a document (kept sharp, with its name).
      [PNG, "scan.png", "image/png", { message_type: "document" }, { type: "document", document: { filename: "scan.png" } }],
      [MP4, "clip.mp4", "video/mp4", { text: "Watch this" }, { type: "video", video: { caption: "Watch this" } }],
      [OGG, "voice.ogg", "audio/ogg", {}, { type: "audio", audio: {} }],
      [M4A, "song.m4a", "audio/mp4", { message_type: "audio" }, { type: "audio", audio: {} }],
      [webp(40 * KB, false), "smile.webp", "image/webp", {}, { type: "sticker", sticker: {} }],
      // Animated stickers have a limit of their own: 300 KB passes, where a static one would not.
      [webp(300 * KB, true), "dance.webp", "image/webp", { message_type: "sticker" }, { type: "sticker", sticker: {} }]
    ]
    for (const [bytes, name, type, body, wire] of cases) {
      const id = await t.upload(bytes, name, type)
      const before = fake.requests().length
      const uploadsBefore = fake.uploads().length
      const sent = await t.send({ ...body, attachments: [id] })
      expect(sent.status, `${name}: ${JSON.stringify(sent.body)}`).toBe(201)
      expect(sent.body).toMatchObject({ message_type: wire.type, status: "sent", attachments: [{ id }] })
      const [uploaded] = t.uploadsOf(uploadsBefore)
      expect(uploaded!.fields.type, name).toBe(type)
      const message = t.calls(before).find((r) => r.path.endsWith("/messages"))!.json as any
      const kind = wire.type as string
      expect(message[kind], name).toEqual({ id: uploaded!.id, ...(wire[kind] as object) })
      expect(message.type).toBe(kind)
    }
  })

  it("sends an upload already sent again as a file of its own, and refuses files with the window closed", async () => {
    const t = await start()
    const id = await t.upload(PNG, "again.png", "image/png")
    const first = await t.send({ attachments: [id] })
    const uploadsBefore = fake.uploads().length
    const second = await t.send({ attachments: [id] })
    expect(second.status).toBe(201)
    const copy = second.body.attachments[0]
    expect(copy.id).not.toBe(id)
    expect(copy).toMatchObject({ filename: "again.png", content_type: "image/png", file_size: PNG.length })
    expect(first.body.attachments[0].id).toBe(id)
    expect(t.uploadsOf(uploadsBefore).map((u) => u.bytes)).toEqual([PNG])

    // 24 hours after the contact's last message, files are refused as text is, before any call.
    test.clock.advance(24 * 3600 * 1000 + 1000)
    const before = fake.requests().length
    const stored = (await t.messages()).length
    const closed = await t.send({ text: "still there?", attachments: [id] })
    expect(closed.status).toBe(422)
    expect(closed.body.detail[0]).toMatchObject({ loc: ["body", "conversation_id"], type: "customer_service_window_closed" })
    expect(t.calls(before)).toEqual([])
    expect(await t.messages()).toHaveLength(stored)
  })

  it("checks the operator's limits before any call, answering 422 with the limit", async () => {
    const t = await start()
    const other = await bootstrap(test, "media-other@example.com")
    const big = await t.upload(fileOf(PNG, 5 * MB + 1), "huge.png", "image/png")
    const pdf = await t.upload(PDF, "terms.pdf", "application/pdf")
    const png = await t.upload(PNG, "ok.png", "image/png")
    const fatSticker = await t.upload(webp(200 * KB, false), "fat.webp", "image/webp")
    const ogg = await t.upload(OGG, "note.ogg", "audio/ogg")
    const theirs = await t.upload(PNG, "theirs.png", "image/png", other.api_key)
    const before = fake.requests().length
    const storedBefore = (await t.messages()).length

    const refusals: ReadonlyArray<readonly [body: Record<string, unknown>, status: number, match: unknown]> = [
      [{ attachments: [big] }, 422, {
        loc: ["body", "attachments", 0],
        type: "media_too_large",
        msg: expect.stringContaining("image: JPEG or PNG, at most 5 MB"),
        ctx: { message_type: "image", max_bytes: 5 * MB }
      }],
      [{ message_type: "image", attachments: [pdf] }, 422, {
        loc: ["body", "attachments", 0],
        type: "media_type_not_supported",
        msg: expect.stringContaining("this file is application/pdf")
      }],
      // The first file's type decides when message_type is left out; the second does not fit it.
      [{ attachments: [png, pdf] }, 422, { loc: ["body", "attachments", 1], type: "media_type_not_supported" }],
      [{ attachments: [fatSticker] }, 422, {
        type: "media_too_large",
        msg: expect.stringContaining("sticker: WebP, at most 100 KB static or 500 KB animated"),
        ctx: { max_bytes: 100 * KB }
      }],
      [{ message_type: "video", attachments: [ogg] }, 422, { type: "media_type_not_supported", msg: expect.stringContaining("MP4 or 3GPP") }],
      // Audio and stickers take no caption: the text is refused, not dropped.
      [{ text: "listen", attachments: [ogg] }, 422, { loc: ["body", "text"], type: "caption_not_supported" }],
      [{ text: "x".repeat(1025), attachments: [png] }, 422, { loc: ["body", "text"], type: "string_too_long" }],
      [{ message_type: "text", attachments: [png] }, 422, { loc: ["body", "message_type"] }],
      [{ message_type: "voice", attachments: [png] }, 422, { loc: ["body", "message_type"], type: "not_supported" }],
      [{ message_type: "document" }, 422, { loc: ["body", "attachments"], type: "missing" }],
      [{ attachments: ["https://example.com/a.png"] }, 422, { loc: ["body", "attachments", 0] }]
    ]
    for (const [body, status, match] of refusals) {
      const answer = await t.send(body)
      expect(answer.status, JSON.stringify(body).slice(0, 120)).toBe(status)
      expect(answer.body.detail[0], JSON.stringify(body).slice(0, 120)).toMatchObject(match as object)
    }
    // Another tenant's file, and one that does not exist, are not found.
    const missing = await t.send({ attachments: [theirs] })
    expect(missing.status).toBe(404)
    expect(JSON.stringify(missing.body)).toContain(`Attachment ${theirs} not found`)
    expect((await t.send({ attachments: ["00000000-0000-4000-8000-000000000000"] })).status).toBe(404)

    expect(t.calls(before)).toEqual([])
    expect(await t.messages()).toHaveLength(storedBefore)
  })

  it("stores a file's message failed with the operator's error when its upload or send is refused; the files after it are not sent", async () => {
    const t = await start()
    const a = await t.upload(PNG, "a.png", "image/png")
    const b = await t.upload(PNG, "b.png", "image/png")
    const c = await t.upload(PDF, "c.pdf", "application/pdf")
    fake.script("POST", `/${t.phoneNumberId}/media`, { unscripted: true }, graphError(400, {
      code: 131053,
      message: "(#131053) Media upload error",
      error_user_title: "Media upload error",
      error_user_msg: "Unsupported file type"
    }))
    const before = fake.requests().length
    const failed = await t.send({ text: "two pictures", attachments: [a, b] })
    expect(failed.status).toBe(502)
    expect(failed.body.detail).toMatchObject({
      code: "operator_other",
      operator: { code: 131053, title: "Media upload error", message: "Unsupported file type" },
      message_id: expect.any(String)
    })
    // The first file went out; the second's upload was refused, so it was never sent.
    expect(t.calls(before).map((r) => r.path.split("/")[2])).toEqual(["media", "messages", "media"])
    const stored = (await t.messages()).filter((m) => m.direction === "outbound")
    expect(stored.map((m) => [m.text, m.status, m.error?.code ?? null, m.attachments.map((f: any) => f.id)])).toEqual([
      ["two pictures", "sent", null, [a]],
      [null, "failed", 131053, [b]]
    ])
    expect(stored[1]).toMatchObject({ id: failed.body.detail.message_id, failed_at: expect.any(String), external_id: null })

    // A send the operator refuses after the upload: 429 for the pair limit, as text sends answer.
    fake.script("POST", `/${t.phoneNumberId}/messages`, graphError(400, { code: 131056, message: "(#131056) pair rate limit hit" }))
    const limited = await t.send({ message_type: "document", attachments: [c] })
    expect(limited.status).toBe(429)
    expect(limited.body.detail).toMatchObject({ code: "operator_rate_limited", operator: { kind: "pair_rate_limited", code: 131056 } })
    expect((await t.api("GET", `/messages/${limited.body.detail.message_id}`)).body).toMatchObject({
      message_type: "document",
      status: "failed",
      error: { code: 131056 },
      attachments: [{ id: c }]
    })

    // An upload whose answer is lost sent nothing: the message fails (503, try again), it is not in doubt.
    fake.script("POST", `/${t.phoneNumberId}/media`, { drop: true })
    const cut = await t.send({ message_type: "document", attachments: [c] })
    expect(cut.status).toBe(503)
    expect(cut.body.detail).toMatchObject({ code: "operator_unavailable" })
    expect((await t.api("GET", `/messages/${cut.body.detail.message_id}`)).body).toMatchObject({ status: "failed", external_id: null })
    // A send whose answer is lost after its upload is in doubt: 504, the message left pending.
    fake.script("POST", `/${t.phoneNumberId}/messages`, { drop: true })
    const lost = await t.send({ message_type: "document", attachments: [c] })
    expect(lost.status).toBe(504)
    expect(lost.body.detail).toMatchObject({ code: "operator_no_answer" })
    expect((await t.api("GET", `/messages/${lost.body.detail.message_id}`)).body).toMatchObject({ status: "pending", error: null })
  })

  it("moves a file's message by the operator's statuses, never backwards, as text", async () => {
    const t = await start()
    const sent = await t.send({ attachments: [await t.upload(PDF, "menu.pdf", "application/pdf")] })
    expect(sent.body).toMatchObject({ message_type: "document", status: "sent" })
    const status = (name: string, at: number) => ({ id: sent.body.external_id, status: name, timestamp: String(at), recipient_id: t.from })
    const now = Number(t.seconds())
    await t.inbound({ statuses: [status("read", now + 20)] })
    await t.inbound({ statuses: [status("delivered", now + 10)] })
    const after = await t.api("GET", `/messages/${sent.body.id}`)
    expect(after.body).toMatchObject({
      status: "read",
      delivered_at: new Date((now + 10) * 1000).toISOString(),
      read_at: new Date((now + 20) * 1000).toISOString(),
      attachments: [{ filename: "menu.pdf" }]
    })
  })

  it("never offers the files the workspace sent for AI summaries: unavailable, and a request is refused", async () => {
    const t = await start()
    await test.operator((operator) => operator.setAiFeaturesEnabled(t.tenantId, true))
    // A picture the contact sent is offered; the same picture sent by the workspace is not.
    fake.media(`77${t.phoneNumberId}`, { bytes: PNG, mimeType: "image/png" })
    await t.inbound({
      messages: [{ from: t.from, id: `wamid.pic-${t.phoneNumberId}`, timestamp: t.seconds(), type: "image", image: { id: `77${t.phoneNumberId}`, mime_type: "image/png" } }]
    })
    const received = (await t.messages()).find((m) => m.message_type === "image" && m.direction === "inbound")
    expect(received.attachments[0]).toMatchObject({ ai_summary_available: true, ai_summary_credits: 2 })

    const sent = await t.send({ text: "Here it is", attachments: [await t.upload(PNG, "mine.png", "image/png")] })
    expect(sent.status).toBe(201)
    const file = sent.body.attachments[0]
    expect(file).toMatchObject({ ai_summary: null, ai_summary_available: false, ai_summary_credits: null })
    expect((await t.api("GET", `/messages/${sent.body.id}`)).body.attachments[0].ai_summary_available).toBe(false)
    const refused = await t.api("POST", `/attachments/${file.id}/summary`)
    expect(refused.status).toBe(422)
    expect(refused.body.detail).toMatchObject({ code: "attachment_not_summarizable", message: expect.stringMatching(/sent to the workspace/) })
  })
})
