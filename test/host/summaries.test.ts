import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import type { IncomingHttpHeaders } from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Webhook } from "standardwebhooks"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type LocalServer, makeCertificate, startServer } from "../outbound/LocalServers.ts"
import { type ChatappHost, startChatappHost, type Tenant } from "../support/ChatappHost.ts"
import { rawEmail } from "../support/EmailHost.ts"
import { FAKE_MODEL, type FakeOpenAi, startFakeOpenAi } from "../support/FakeOpenAi.ts"
import { admin, type HostProcess, http, startHost } from "../support/Host.ts"
import { type HostBackend, hostBackends } from "../support/HostBackends.ts"
import { eventually } from "../support/Poll.ts"
import { fixture, injectionPdf, invoicePdf, reportPdf } from "../support/SummaryFixtures.ts"

// AI file summaries seen from outside: the reference host as a child process on a manual test clock
// with its embedded summarizer (no network), inbound media through signed operator webhooks and a
// received email; and a second host process on the same database whose summarizer is a fake
// OpenAI-compatible server on loopback, for failures and slow generations. What comes out: HTTP
// answers, the credits the CLI shows, and the signed deliveries a real HTTPS receiver gets.

const APP_SECRET = "summaries-app-secret-for-tests"
const TOKEN = "EAAGsummariestokenabcdefghijklmnopqrstuvwxyz"
const PHONE_NUMBER_ID = "106540352280001"
const WABA_ID = "102290129380001"
const UNKNOWN_ID = "0b6f1a52-3c1d-4e55-9a0f-8d6a2c1e9f00"
const MB = 1024 * 1024

/** A 1×1 PNG. */
const PNG = Uint8Array.from(Buffer.from(
  "89504e470d0a1a0a0000000d4948445200000001000000010806000000" +
    "1f15c4890000000d4944415478da63f8cfc0f01f0005000201e221bc330000000049454e44ae426082",
  "hex"
))

let wamids = 0
const wamid = () => `wamid.HBgLSUMMARY${String(++wamids).padStart(8, "0")}`
let mediaIds = 0
const mediaId = () => `7700${String(++mediaIds).padStart(8, "0")}`

const signatureHeaders = (headers: IncomingHttpHeaders): Record<string, string> => ({
  "webhook-id": String(headers["webhook-id"]),
  "webhook-timestamp": String(headers["webhook-timestamp"]),
  "webhook-signature": String(headers["webhook-signature"])
})

/** The summary object's shape, as the spec's "Summary object" lists it. */
const SUMMARY_KEYS = [
  "created_at",
  "kind",
  "model",
  "pages_read",
  "pages_total",
  "sections",
  "source",
  "status",
  "text",
  "truncated",
  "updated_at"
]

/** What the tests read of a message and its files as the API returns them. */
interface WireMessage {
  readonly id: string
  readonly conversation_id: string
  readonly external_id: string | null
  readonly attachments: ReadonlyArray<{ readonly id: string; readonly content_type: string }>
}

/** What the tests read of an email's file. */
interface WireEmailFile {
  readonly id: string
  readonly attachment_id: string | null
  readonly is_inline: boolean
}

/** What the CLI prints of a mailbox. */
interface Mailbox {
  readonly email_integration_id: string
  readonly address: string
  readonly inbound_secret: string
}

describe.each(hostBackends)("AI file summaries on the reference host ($name)", { timeout: 120_000 }, (backend) => {
  let h: ChatappHost
  let tenant: Tenant
  let other: Tenant
  let fake: FakeOpenAi
  /** A second host on the same database, summarizing through the fake OpenAI-compatible server. */
  let remote: HostProcess
  let receiver: LocalServer
  let caDir: string
  let secret: string
  const HOOK = "/hooks/summaries"
  /** Keys of the first tenant holding only `messages:read`, or only `conversations:update`. */
  let reader: { key: string }
  let updater: { key: string }
  /** A third tenant, AI features on, for the request limits, with two more keys. */
  let limited: Tenant
  let limitedKeys: ReadonlyArray<{ key: string }>
  let integration: Mailbox

  beforeAll(async () => {
    const certificate = makeCertificate()
    receiver = await startServer((_req, res) => {
      res.writeHead(204).end()
    }, certificate)
    caDir = mkdtempSync(join(tmpdir(), "summaries-receiver-ca-"))
    const caFile = join(caDir, "receiver-ca.pem")
    writeFileSync(caFile, certificate.cert)
    const trusting: HostBackend = {
      name: backend.name,
      setUp: async () => {
        const database = await backend.setUp()
        return { env: { ...database.env, NODE_EXTRA_CA_CERTS: caFile }, tearDown: database.tearDown }
      }
    }
    fake = await startFakeOpenAi()
    h = await startChatappHost(trusting, { accessToken: TOKEN, appSecret: APP_SECRET })
    ;({ tenant, other } = h)
    const cli = (...args: ReadonlyArray<string>) => admin(h.env, ...args)
    const [, endpoint, started, r, u, boot, mailbox] = await Promise.all([
      h.channel(PHONE_NUMBER_ID, WABA_ID),
      h.api("POST", "/webhook-endpoints", {
        name: "Summaries receiver",
        url: `${receiver.origin}${HOOK}`,
        subscribed_events: ["attachment.summarized"]
      }),
      // API only: background work (inbound, deliveries) stays with the main host, which the tests drain.
      startHost({ ...h.env, OMNI_WORKERS: "0", OMNI_SUMMARIZER_URL: fake.url, OMNI_SUMMARIZER_MODEL: FAKE_MODEL }),
      cli("api-key", "create", "--tenant", tenant.id, "--scopes", "messages:read"),
      cli("api-key", "create", "--tenant", tenant.id, "--scopes", "conversations:update"),
      cli("bootstrap", "--email", "limits@example.com"),
      cli("email-integration", "create", "--tenant", tenant.id, "--address", "inbox@acme.example")
    ])
    expect(endpoint.status, JSON.stringify(endpoint.body)).toBe(201)
    secret = endpoint.body.secret_key
    remote = started
    reader = { key: r.api_key }
    updater = { key: u.api_key }
    limited = { id: boot.tenant_id, key: boot.api_key }
    integration = mailbox
    const [, , k2, k3] = await Promise.all([
      cli("tenant", "set-ai", "--tenant", other.id, "--enabled", "true"),
      cli("tenant", "set-ai", "--tenant", limited.id, "--enabled", "true"),
      cli("api-key", "create", "--tenant", limited.id, "--scopes", "conversations:update"),
      cli("api-key", "create", "--tenant", limited.id, "--scopes", "conversations:update")
    ])
    limitedKeys = [{ key: k2.api_key }, { key: k3.api_key }]
  }, 120_000)

  afterAll(async () => {
    if (remote?.child.exitCode === null) await remote.stop()
    await h?.close()
    await fake?.close()
    await receiver?.close()
    if (caDir !== undefined) rmSync(caDir, { recursive: true, force: true })
  })

  /** Calls the API and expects `status`; resolves with the body. */
  const ok = async (method: string, path: string, body: unknown, status: number, as: { readonly key: string } = tenant) => {
    const answer = await h.api(method, path, body, as)
    expect(answer.status, `${method} ${path}: ${JSON.stringify(answer.body)}`).toBe(status)
    return answer.body
  }

  /** POST …/summary on `on` (the main host unless given) with headers, for Retry-After. */
  const postSummary = async (attachmentId: string, as: { readonly key: string } = tenant, on: HostProcess = h.host) => {
    const response = await fetch(`${on.url}/api/v1/attachments/${attachmentId}/summary`, {
      method: "POST",
      headers: { authorization: `Bearer ${as.key}` }
    })
    const text = await response.text()
    return { status: response.status, body: text === "" ? undefined : JSON.parse(text), headers: response.headers }
  }

  const credits = async (as: Tenant = tenant) => admin(h.env, "credits", "show", "--tenant", as.id)

  /** The signed `attachment.summarized` deliveries the receiver got, oldest first. */
  const summarized = (): Array<any> =>
    receiver.requests.filter((r) => r.url === HOOK).map((r) => {
      const parsed = JSON.parse(r.body)
      if (parsed.type !== "webhook.verification") new Webhook(secret).verify(r.body, signatureHeaders(r.headers))
      return parsed
    }).filter((e) => e.type === "attachment.summarized")

  /**
   * A contact sends a file through the operator's webhook; resolves once the host stored it, with the
   * message as `GET /messages/{id}` returns it.
   */
  const receiveFile = async (file: { readonly bytes: Uint8Array; readonly mime: string; readonly type: "image" | "document"; readonly filename?: string }) => {
    const id = mediaId()
    const externalId = wamid()
    h.graph.media(id, { bytes: file.bytes, mimeType: file.mime })
    const media = file.type === "image"
      ? { image: { id, mime_type: file.mime, sha256: "x" } }
      : { document: { id, mime_type: file.mime, filename: file.filename ?? "file.pdf" } }
    const posted = await h.post({
      object: "whatsapp_business_account",
      entry: [{
        id: WABA_ID,
        changes: [{
          field: "messages",
          value: {
            messaging_product: "whatsapp",
            metadata: { display_phone_number: "15551234567", phone_number_id: PHONE_NUMBER_ID },
            contacts: [{ profile: { name: "Zoë" }, wa_id: "351910012345" }],
            messages: [{ from: "351910012345", id: externalId, timestamp: "1764150000", type: file.type, ...media }]
          }
        }]
      }]
    })
    expect(posted.status).toBe(200)
    await h.drain()
    const conversations = await ok("GET", "/conversations?page_size=100", undefined, 200)
    for (const conversation of conversations.items) {
      const messages = await ok("GET", `/messages?conversation_id=${conversation.id}&page_size=200`, undefined, 200)
      const found = messages.items.find((m: WireMessage) => m.external_id === externalId)
      if (found !== undefined) {
        expect(found.attachments, JSON.stringify(found)).toHaveLength(1)
        return found
      }
    }
    throw new Error(`message ${externalId} was not stored:\n${h.host.output().slice(-3000)}`)
  }

  /** The attachment as `GET /messages/{id}` returns it now. */
  const attachmentNow = async (message: WireMessage) => (await ok("GET", `/messages/${message.id}`, undefined, 200)).attachments[0]

  // Shared by the tests below, in order: the contact's PDF and image, summarized on demand.
  let pdfMessage: WireMessage
  let imageMessage: WireMessage

  it("offers nothing while AI features are off (403 feature_disabled), then inbound images and PDFs with their prices", async () => {
    pdfMessage = await receiveFile({ bytes: reportPdf(12), mime: "application/pdf", type: "document", filename: "report.pdf" })
    imageMessage = await receiveFile({ bytes: fixture("receipt.jpg"), mime: "image/jpeg", type: "image" })
    expect(pdfMessage.attachments[0]).toMatchObject({ ai_summary: null, ai_summary_available: false, ai_summary_credits: null })
    expect(imageMessage.attachments[0]).toMatchObject({ ai_summary: null, ai_summary_available: false, ai_summary_credits: null })

    const pdfId = pdfMessage.attachments[0]!.id
    const refused = await postSummary(pdfId)
    expect(refused.status).toBe(403)
    expect(refused.body).toEqual({
      detail: { code: "feature_disabled", feature: "ai_features", message: expect.any(String) }
    })
    expect((await h.api("GET", `/attachments/${pdfId}/summary`)).body.detail).toMatchObject({ code: "feature_disabled", feature: "ai_features" })

    expect(await admin(h.env, "tenant", "set-ai", "--tenant", tenant.id, "--enabled", "true"))
      .toEqual({ tenant_id: tenant.id, ai_features_enabled: true })
    expect(await attachmentNow(pdfMessage)).toMatchObject({ ai_summary: null, ai_summary_available: true, ai_summary_credits: 3 })
    expect(await attachmentNow(imageMessage)).toMatchObject({ ai_summary: null, ai_summary_available: true, ai_summary_credits: 2 })
    // The list carries the same fields.
    const listed = await ok("GET", `/messages?conversation_id=${pdfMessage.conversation_id}`, undefined, 200)
    expect(listed.items.find((m: WireMessage) => m.id === pdfMessage.id).attachments[0])
      .toMatchObject({ ai_summary_available: true, ai_summary_credits: 3 })
  })

  it("answers 404 summary_not_found before any summary, 404 attachment_not_found for unknown, malformed and other tenants' ids", async () => {
    const pdfId = pdfMessage.attachments[0]!.id
    expect(await h.api("GET", `/attachments/${pdfId}/summary`)).toEqual({
      status: 404,
      body: { detail: { code: "summary_not_found", message: expect.any(String) } }
    })
    for (const id of [UNKNOWN_ID, "not-a-uuid"]) {
      for (const method of ["GET", "POST"]) {
        expect(await h.api(method, `/attachments/${id}/summary`)).toEqual({
          status: 404,
          body: { detail: { code: "attachment_not_found", message: expect.any(String) } }
        })
      }
    }
    for (const method of ["GET", "POST"]) {
      const answer = await h.api(method, `/attachments/${pdfId}/summary`, undefined, other)
      expect(answer.status).toBe(404)
      expect(answer.body.detail.code).toBe("attachment_not_found")
    }
  })

  it("answers the plain-string 403 for a key without the scope: POST needs conversations:update, GET messages:read", async () => {
    const pdfId = pdfMessage.attachments[0]!.id
    expect(await h.api("POST", `/attachments/${pdfId}/summary`, undefined, reader)).toEqual({
      status: 403,
      body: { detail: "Missing required permission(s): conversations:update" }
    })
    expect(await h.api("GET", `/attachments/${pdfId}/summary`, undefined, updater)).toEqual({
      status: 403,
      body: { detail: "Missing required permission(s): messages:read" }
    })
    expect((await h.api("GET", `/attachments/${pdfId}/summary`, undefined, reader)).status).toBe(404)
  })

  it("refuses a summary the balance cannot pay (402), then charges 3 for a new PDF summary (201) and nothing again (200)", async () => {
    const pdfId = pdfMessage.attachments[0]!.id
    const poor = await postSummary(pdfId)
    expect(poor.status).toBe(402)
    expect(poor.body.detail).toMatchObject({ code: "insufficient_credits", required: 3, balance: 0 })
    expect(await attachmentNow(pdfMessage)).toMatchObject({ ai_summary: null, ai_summary_available: true })

    expect(await admin(h.env, "credits", "grant", "--tenant", tenant.id, "--amount", "20")).toEqual({ tenant_id: tenant.id, balance: 20 })

    const created = await postSummary(pdfId)
    expect(created.status, JSON.stringify(created.body)).toBe(201)
    expect(created.body.attachment_id).toBe(pdfId)
    expect(created.body.credits_charged).toBe(3)
    const summary = created.body.summary
    expect(Object.keys(summary).sort()).toEqual(SUMMARY_KEYS)
    expect(summary).toMatchObject({
      status: "ok",
      kind: "pdf",
      source: "on_demand",
      pages_read: 10,
      pages_total: 12,
      truncated: true
    })
    expect(summary.text.length).toBeGreaterThan(0)
    expect(summary.model).not.toBe("")
    expect(summary.sections.map((section: { key: string }) => section.key)).toEqual(["summary", "key_facts"])

    const again = await postSummary(pdfId)
    expect(again.status).toBe(200)
    expect(again.body).toEqual({ attachment_id: pdfId, summary, credits_charged: 0 })
    expect(await credits()).toEqual({ tenant_id: tenant.id, balance: 17, charged_total: 3 })
    expect(await h.api("GET", `/attachments/${pdfId}/summary`)).toEqual({ status: 200, body: summary })
    expect(await attachmentNow(pdfMessage)).toMatchObject({ ai_summary: summary, ai_summary_available: false, ai_summary_credits: null })
  })

  it("charges 2 for a new image summary made offline (description and OCR text), and announces both at the receiver", async () => {
    const imageId = imageMessage.attachments[0]!.id
    const created = await postSummary(imageId)
    expect(created.status, JSON.stringify(created.body)).toBe(201)
    expect(created.body.credits_charged).toBe(2)
    expect(created.body.summary.sections[0]?.key).toBe("description")
    expect(created.body.summary).toMatchObject({
      status: "ok",
      kind: "image",
      source: "on_demand",
      pages_read: null,
      pages_total: null,
      truncated: false
    })

    await h.drain()
    expect(await eventually(10_000, async () => summarized().length >= 2)).toBe(true)
    const events = summarized()
    const pdfSummary = (await ok("GET", `/attachments/${pdfMessage.attachments[0]!.id}/summary`, undefined, 200))
    expect(events.map((e) => e.data)).toEqual([
      {
        attachment_id: pdfMessage.attachments[0]!.id,
        message_id: pdfMessage.id,
        conversation_id: pdfMessage.conversation_id,
        summary: pdfSummary
      },
      {
        attachment_id: imageId,
        message_id: imageMessage.id,
        conversation_id: imageMessage.conversation_id,
        summary: created.body.summary
      }
    ])
    expect(events.every((e) => e.tenant_id === tenant.id)).toBe(true)
  })

  it("never offers files the workspace sent: an upload answers 422 attachment_not_summarizable, and nothing is charged", async () => {
    const form = new FormData()
    form.set("file", new Blob([PNG], { type: "image/png" }), "logo.png")
    const uploaded = await fetch(`${h.host.url}/api/v1/attachments/upload`, {
      method: "POST",
      headers: { authorization: `Bearer ${tenant.key}` },
      body: form
    })
    expect(uploaded.status).toBe(201)
    const { id } = await uploaded.json() as { id: string }
    expect(await h.api("POST", `/attachments/${id}/summary`)).toEqual({
      status: 422,
      body: { detail: { code: "attachment_not_summarizable", message: expect.any(String) } }
    })
  })

  it("refuses an image over 10 MB with 422 and never offers it", async () => {
    const big = new Uint8Array(10 * MB + 1)
    big.set(fixture("receipt.jpg"))
    const message = await receiveFile({ bytes: big, mime: "image/jpeg", type: "image" })
    expect(message.attachments[0]).toMatchObject({ content_type: "image/jpeg", ai_summary_available: false, ai_summary_credits: null })
    const refused = await h.api("POST", `/attachments/${message.attachments[0]!.id}/summary`)
    expect(refused.status).toBe(422)
    expect(refused.body.detail.code).toBe("attachment_not_summarizable")
    expect(refused.body.detail.message).toMatch(/10 MB/)
  })

  it("offers a received email's file through attachment_id (never its own id, never an inline image) and announces it with the conversation message", async () => {
    const raw = await rawEmail({
      from: { name: "Zoë Client", address: "zoe@client.example" },
      to: integration.address,
      subject: "Invoice attached",
      messageId: `invoice-${backend.name}@client.example`,
      text: "Please find the invoice attached.",
      html: "<p>Logo: <img src=\"cid:logo@client\"></p>",
      files: [
        { filename: "invoice.pdf", contentType: "application/pdf", content: invoicePdf() },
        { filename: "logo.png", contentType: "image/png", content: PNG, cid: "logo@client" }
      ]
    })
    const posted = await fetch(`${h.host.url}/webhooks/email/${integration.email_integration_id}`, {
      method: "POST",
      headers: { "content-type": "message/rfc822", authorization: `Bearer ${integration.inbound_secret}` },
      body: new Uint8Array(raw)
    })
    expect(posted.status).toBe(200)
    await h.drain()
    const conversations = await ok("GET", `/conversations?channel_id=${integration.email_integration_id}`, undefined, 200)
    const thread = await ok("GET", `/email-integrations/conversations/${conversations.items[0].id}/email-thread`, undefined, 200)
    const email = thread.items[0]
    const file = email.attachments.find((a: WireEmailFile) => !a.is_inline)
    const inline = email.attachments.find((a: WireEmailFile) => a.is_inline)
    expect(file).toMatchObject({ ai_summary: null, ai_summary_available: true, ai_summary_credits: 3 })
    expect(file.attachment_id).not.toBeNull()
    expect(file.id).not.toBe(file.attachment_id)
    expect(inline).toMatchObject({ attachment_id: null, ai_summary: null, ai_summary_available: false, ai_summary_credits: null })

    // The email attachment's own id is not an attachment of the summary routes.
    expect((await h.api("POST", `/attachments/${file.id}/summary`)).body.detail.code).toBe("attachment_not_found")
    const created = await postSummary(file.attachment_id)
    expect(created.status, JSON.stringify(created.body)).toBe(201)
    expect(created.body).toMatchObject({ attachment_id: file.attachment_id, credits_charged: 3, summary: { kind: "pdf", status: "ok" } })
    expect(await credits()).toEqual({ tenant_id: tenant.id, balance: 12, charged_total: 8 })

    const after = await ok("GET", `/email-integrations/email-messages/${email.id}`, undefined, 200)
    expect(after.attachments.find((a: WireEmailFile) => !a.is_inline)).toMatchObject({
      ai_summary: created.body.summary,
      ai_summary_available: false,
      ai_summary_credits: null
    })
    await h.drain()
    expect(await eventually(10_000, async () => summarized().some((e) => e.data.attachment_id === file.attachment_id))).toBe(true)
    expect(summarized().find((e) => e.data.attachment_id === file.attachment_id).data).toEqual({
      attachment_id: file.attachment_id,
      message_id: email.message_id,
      conversation_id: email.conversation_id,
      summary: created.body.summary
    })

    // A file on an email the workspace sent is never offered.
    const reply = await ok("POST", `/email-integrations/email-messages/${email.id}/reply`, {
      text_body: "Thanks, here is ours.",
      attachment_ids: [file.attachment_id]
    }, 201)
    const sent = await ok("GET", `/email-integrations/email-messages/${reply.id}`, undefined, 200)
    expect(sent.direction).toBe("outbound")
    expect(sent.attachments[0]).toMatchObject({ ai_summary_available: false, ai_summary_credits: null })
  })

  it("limits requests to 30 a minute per API key and 60 per workspace (429 with Retry-After), in windows the test clock moves", async () => {
    const [second, third] = limitedKeys as [{ key: string }, { key: string }]
    const form = new FormData()
    form.set("file", new Blob([PNG], { type: "image/png" }), "logo.png")
    const uploaded = await fetch(`${h.host.url}/api/v1/attachments/upload`, {
      method: "POST",
      headers: { authorization: `Bearer ${limited.key}` },
      body: form
    })
    const { id } = await uploaded.json() as { id: string }

    // Every request counts, answered or not (an upload is never summarizable: 422).
    for (let i = 0; i < 30; i++) expect((await postSummary(id, limited)).status).toBe(422)
    const overKey = await postSummary(id, limited)
    expect(overKey.status).toBe(429)
    expect(overKey.body.detail).toMatchObject({ error: "rate_limit_exceeded", scope: "caller", limit: 30 })
    const retryAfter = Number(overKey.headers.get("retry-after"))
    expect(retryAfter).toBeGreaterThanOrEqual(1)
    expect(retryAfter).toBeLessThanOrEqual(60)
    expect(overKey.body.detail.retry_after).toBe(retryAfter)

    for (let i = 0; i < 30; i++) expect((await postSummary(id, second)).status).toBe(422)
    const overWorkspace = await postSummary(id, third)
    expect(overWorkspace.status).toBe(429)
    expect(overWorkspace.body.detail).toMatchObject({ error: "rate_limit_exceeded", scope: "workspace", limit: 60 })
    expect(Number(overWorkspace.headers.get("retry-after"))).toBe(retryAfter)

    // Other workspaces are not held back.
    expect((await postSummary(pdfMessage.attachments[0]!.id)).status).toBe(200)

    await h.advance(retryAfter)
    expect((await postSummary(id, limited)).status).toBe(422)
    expect((await postSummary(id, third)).status).toBe(422)
  })

  it("answers 502 summary_failed when the summarizer fails, charges nothing, and generates anew on a later request", async () => {
    const message = await receiveFile({ bytes: invoicePdf(), mime: "application/pdf", type: "document", filename: "invoice.pdf" })
    const id = message.attachments[0]!.id
    const events = summarized().length

    fake.answerWith({ kind: "error", status: 500, message: "model overloaded" })
    const failed = await postSummary(id, tenant, remote)
    expect(failed.status).toBe(502)
    expect(failed.body).toEqual({ detail: { code: "summary_failed", message: expect.any(String) } })
    expect((await ok("GET", `/attachments/${id}/summary`, undefined, 200)).status).toBe("failed")
    expect(await attachmentNow(message)).toMatchObject({ ai_summary: { status: "failed" }, ai_summary_available: true, ai_summary_credits: 3 })

    fake.answerWith({ kind: "ok" })
    const created = await postSummary(id, tenant, remote)
    expect(created.status, JSON.stringify(created.body)).toBe(201)
    expect(created.body).toMatchObject({ credits_charged: 3, summary: { status: "ok", kind: "pdf", model: FAKE_MODEL } })
    // 20 granted; 3 + 2 + 3 charged before, nothing for the failure, 3 now.
    expect(await credits()).toEqual({ tenant_id: tenant.id, balance: 9, charged_total: 11 })
    await h.drain()
    expect(await eventually(10_000, async () => summarized().length === events + 1)).toBe(true)
  })

  it("generates once and charges once for concurrent requests: one 201, the others 202 pending", async () => {
    const message = await receiveFile({ bytes: invoicePdf(), mime: "application/pdf", type: "document", filename: "slow.pdf" })
    const id = message.attachments[0]!.id
    const calls = fake.requests().length

    fake.answerWith({ kind: "slow", delayMs: 1500 })
    const answers = await Promise.all(Array.from({ length: 5 }, () => postSummary(id, tenant, remote)))
    fake.answerWith({ kind: "ok" })

    const statuses = answers.map((a) => a.status).sort()
    expect(statuses).toEqual([201, 202, 202, 202, 202])
    for (const pending of answers.filter((a) => a.status === 202)) {
      expect(pending.body).toMatchObject({ attachment_id: id, credits_charged: 0, summary: { status: "pending" } })
    }
    expect(answers.find((a) => a.status === 201)!.body.credits_charged).toBe(3)
    expect(fake.requests().length).toBe(calls + 1)
    expect(await credits()).toEqual({ tenant_id: tenant.id, balance: 6, charged_total: 14 })
    expect((await ok("GET", `/attachments/${id}/summary`, undefined, 200)).status).toBe("ok")
  })

  it("answers 502 for a malformed model answer; sends an image as image input and keeps the model's sections; returns an injection as plain data", async () => {
    const pdf = await receiveFile({ bytes: invoicePdf(), mime: "application/pdf", type: "document", filename: "garbled.pdf" })
    fake.answerWith({ kind: "malformed", body: "{\"id\":\"x\",\"choices\":[]}" })
    const failed = await postSummary(pdf.attachments[0]!.id, tenant, remote)
    expect(failed.status).toBe(502)
    expect(failed.body).toEqual({ detail: { code: "summary_failed", message: expect.any(String) } })

    fake.answerWith({ kind: "ok" })
    const image = await receiveFile({ bytes: fixture("receipt.jpg"), mime: "image/jpeg", type: "image" })
    const calls = fake.requests().length
    const created = await postSummary(image.attachments[0]!.id, tenant, remote)
    expect(created.status, JSON.stringify(created.body)).toBe(201)
    expect(created.body).toMatchObject({ credits_charged: 2, summary: { status: "ok", kind: "image", model: FAKE_MODEL, source: "on_demand" } })
    expect(created.body.summary.sections.map((section: { key: string }) => section.key)).toEqual(["description", "text"])
    const sent = JSON.stringify(fake.requests()[calls]?.json)
    expect(sent).toContain("data:image/jpeg;base64,")

    // The embedded summarizer reads an injection as the document's text: it comes back as JSON string
    // data, with its markup neither run nor removed.
    const injected = await receiveFile({ bytes: injectionPdf(), mime: "application/pdf", type: "document", filename: "injection.pdf" })
    const summary = await postSummary(injected.attachments[0]!.id)
    expect(summary.status, JSON.stringify(summary.body)).toBe(201)
    expect(summary.body.summary.text).toContain("<script>alert(1)</script>")
    expect(summary.body.summary.text).toContain("Ignore previous instructions")
    expect(summary.body.summary.text).toContain("attacker@evil.example")
    // Stored as it was made: GET returns the same text, not an escaped or rewritten copy.
    expect((await ok("GET", `/attachments/${injected.attachments[0]!.id}/summary`, undefined, 200)).text).toBe(summary.body.summary.text)
    expect(await credits()).toEqual({ tenant_id: tenant.id, balance: 1, charged_total: 19 })
  })
})
