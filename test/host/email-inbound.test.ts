import { randomUUID } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type EmailHost, type Integration, rawEmail, startEmailHost } from "../support/EmailHost.ts"
import { hostBackends } from "../support/HostBackends.ts"

// Received mail seen from outside: raw RFC 5322 posted to the host's inbound route as a mail
// provider would, the background work drained, and everything read back through the API.

const PNG = Uint8Array.from(Buffer.from(
  "89504e470d0a1a0a0000000d4948445200000001000000010806000000" +
    "1f15c4890000000d4944415478da63f8cfc0f01f0005000201e221bc330000000049454e44ae426082",
  "hex"
))
// Every byte value, after a PDF header: survives transfer encoding only if decoded exactly.
const PDF = Uint8Array.from([...new TextEncoder().encode("%PDF-1.4\n"), ...Array.from({ length: 256 }, (_, i) => i)])
const CSV = new TextEncoder().encode("Artikel;Menge;Preis\nGrüße;2;3,50 €\n東京;1;9,99 €\n")
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

/** A Message-ID (without angle brackets) no other test uses. */
const mid = (label: string) => `${label}-${randomUUID()}@customer.example`

describe.each(hostBackends)("received email on the reference host ($name)", (backend) => {
  let h: EmailHost

  beforeAll(async () => {
    h = await startEmailHost(backend)
  })
  afterAll(async () => {
    await h?.close()
  })

  /** The tenant's contact with this address, if any. */
  const contactByEmail = async (address: string, as = h.tenant) => {
    const listed = await h.api("GET", "/contacts?page_size=100", undefined, as)
    expect(listed.status).toBe(200)
    return listed.body.items.find((contact: any) => contact.email === address)
  }
  /** The conversations of a mailbox. */
  const conversationsOf = async (integration: Integration, as = h.tenant) => {
    const listed = await h.api("GET", `/conversations?channel_id=${integration.email_integration_id}&page_size=100`, undefined, as)
    expect(listed.status).toBe(200)
    return listed.body.items as Array<any>
  }
  const thread = async (conversationId: string, as = h.tenant) => {
    const read = await h.api("GET", `/email-integrations/conversations/${conversationId}/email-thread`, undefined, as)
    expect(read.status, JSON.stringify(read.body)).toBe(200)
    return read.body
  }

  it("creates mailboxes through the API and the CLI; lists and reads them without their secrets; a duplicate address is 409", async () => {
    expect(h.integration).toEqual({
      email_integration_id: expect.stringMatching(UUID),
      tenant_id: h.tenant.id,
      address: "support@desk.example",
      inbound_url: expect.stringMatching(new RegExp(`/webhooks/email/${h.integration.email_integration_id}$`)),
      inbound_secret: expect.any(String)
    })
    const created = await h.api("POST", "/email-integrations", { address: "Billing@Desk.Example", display_name: "Buchhaltung Ü" })
    expect(created.status, JSON.stringify(created.body)).toBe(201)
    expect(created.body).toMatchObject({
      id: expect.stringMatching(UUID),
      tenant_id: h.tenant.id,
      address: "billing@desk.example",
      display_name: "Buchhaltung Ü",
      status: "active",
      inbound_url: `${h.host.url}/webhooks/email/${created.body.id}`,
      inbound_secret: expect.any(String)
    })
    const listed = await h.api("GET", "/email-integrations")
    expect(listed.status).toBe(200)
    expect(listed.body.items.map((i: any) => i.address).sort()).toEqual(["billing@desk.example", "support@desk.example"])
    for (const item of listed.body.items) expect(item).not.toHaveProperty("inbound_secret")
    const read = await h.api("GET", `/email-integrations/${created.body.id}`)
    expect(read.status).toBe(200)
    const { inbound_secret: _secret, ...withoutSecret } = created.body
    expect(read.body).toEqual(withoutSecret)

    expect((await h.api("POST", "/email-integrations", { address: "billing@desk.example" })).status).toBe(409)
    expect((await h.api("GET", `/email-integrations/${created.body.id}`, undefined, h.other)).status).toBe(404)
    expect((await h.api("GET", "/email-integrations", undefined, h.other)).body.items.map((i: any) => i.address))
      .toEqual(["help@other.example"])
    expect((await h.api("POST", "/email-integrations", { address: "not an address" })).status).toBe(422)

    // The new mailbox takes mail with its own secret.
    const posted = await h.postEmail(await rawEmail({ from: "x@customer.example", subject: "hi", messageId: mid("billing"), text: "x" }), {
      integration: { ...h.integration, email_integration_id: created.body.id, inbound_secret: created.body.inbound_secret }
    })
    expect(posted.status).toBe(200)
  })

  it("takes an email only with its mailbox's secret: wrong, missing or another mailbox's secret, unknown or malformed id are 401 and nothing is stored", async () => {
    const raw = (from: string) =>
      rawEmail({ from, to: "support@desk.example", subject: "Auth", messageId: mid("auth"), text: "hello" })

    const good = await h.postEmail(await raw("good-sender@customer.example"))
    expect(good).toEqual({ status: 200, body: { received: true, id: expect.stringMatching(UUID) } })

    const refused = { status: 401, body: { detail: { code: "invalid_credentials", message: "Invalid credentials" } } }
    expect(await h.postEmail(await raw("wrong@customer.example"), { secret: `${h.integration.inbound_secret}x` })).toEqual(refused)
    expect(await h.postEmail(await raw("missing@customer.example"), { secret: null })).toEqual(refused)
    expect(await h.postEmail(await raw("bearer-empty@customer.example"), { secret: "" })).toEqual(refused)
    expect(await h.postEmail(await raw("crossed@customer.example"), { secret: h.otherIntegration.inbound_secret })).toEqual(refused)
    expect(await h.postEmail(await raw("crossed2@customer.example"), {
      integration: h.otherIntegration.email_integration_id,
      secret: h.integration.inbound_secret
    })).toEqual(refused)
    expect(await h.postEmail(await raw("unknown@customer.example"), {
      integration: randomUUID(),
      secret: h.integration.inbound_secret
    })).toEqual(refused)
    expect(await h.postEmail(await raw("malformed@customer.example"), {
      integration: "not-a-uuid",
      secret: h.integration.inbound_secret
    })).toEqual(refused)

    await h.drain()
    expect(await contactByEmail("good-sender@customer.example")).toBeDefined()
    for (const sender of ["wrong", "missing", "bearer-empty", "crossed", "crossed2", "unknown", "malformed"]) {
      expect(await contactByEmail(`${sender}@customer.example`)).toBeUndefined()
      expect(await contactByEmail(`${sender}@customer.example`, h.other)).toBeUndefined()
    }
  })

  it("answers 415 to another content type and 400 to an empty email", async () => {
    const raw = await rawEmail({ from: "type@customer.example", subject: "T", messageId: mid("type"), text: "t" })
    for (const contentType of ["application/json", "multipart/form-data; boundary=x", "text/html"]) {
      expect((await h.postEmail(raw, { contentType })).status, contentType).toBe(415)
    }
    expect((await h.postEmail(raw, { contentType: null })).status).toBe(415)
    expect((await h.postEmail(raw, { contentType: "message/rfc822; charset=utf-8" })).status).toBe(200)
    expect(await h.postEmail(new Uint8Array(0))).toEqual({ status: 400, body: { detail: { code: "bad_request", message: "The email is empty" } } })
  })

  it("stores a received email: contact by From, a new email conversation with its subject, text and HTML, files byte-exact, inline image, message.received", async () => {
    const messageId = mid("full")
    const subject = "Grüße aus 東京 – Bestellung №42 «dringend»"
    const text = "Hallo Team,\r\n\r\nanbei die Rechnung für März – 東京.\r\nViele Grüße\r\nZoë"
    const html = "<p>Hallo Team,</p><p>anbei die Rechnung für März – 東京.</p><img src=\"cid:logo-123@customer.example\"><p>Zoë</p>"
    const email = await h.receive({
      from: { name: "Zoë Ångström-Łukasz", address: "Zoe@Customer.Example" },
      to: { name: "Support – Kundendienst", address: "support@desk.example" },
      subject,
      messageId,
      text,
      html,
      files: [
        { filename: "Rechnung März 2026 – 東京 (final).pdf", contentType: "application/pdf", content: PDF },
        { filename: "Übersicht Ärger.csv", contentType: "text/csv", content: CSV },
        { filename: "logo.png", contentType: "image/png", content: PNG, cid: "logo-123@customer.example" }
      ]
    })

    const contact = await contactByEmail("zoe@customer.example")
    expect(contact).toMatchObject({ email: "zoe@customer.example", name: "Zoë Ångström-Łukasz" })
    const conversation = (await conversationsOf(h.integration)).find((c) => c.id === email.conversation_id)
    expect(conversation).toMatchObject({
      kind: "email",
      channel_id: h.integration.email_integration_id,
      contact_id: contact.id,
      status: "open",
      subject
    })

    expect(email).toMatchObject({
      id: expect.stringMatching(UUID),
      email_integration_id: h.integration.email_integration_id,
      direction: "inbound",
      status: "received",
      subject,
      from: { address: "zoe@customer.example", name: "Zoë Ångström-Łukasz" },
      to: [{ address: "support@desk.example", name: "Support – Kundendienst" }],
      message_id_header: messageId,
      in_reply_to: null,
      references: [],
      error: null
    })
    // The MIME body's closing line break may stay with the part; the content is exact.
    expect(email.html_body.trimEnd()).toBe(html)
    expect(email.text_body.replace(/\r\n/g, "\n").trimEnd()).toBe(text.replace(/\r\n/g, "\n"))
    expect(email.attachments).toHaveLength(3)
    // In the order of their MIME parts: the related image sits before the files.
    const byName = (name: string) => email.attachments.find((file: any) => file.filename === name)
    const [pdf, csv, logo] = [byName("Rechnung März 2026 – 東京 (final).pdf"), byName("Übersicht Ärger.csv"), byName("logo.png")]
    expect(pdf).toMatchObject({
      id: expect.stringMatching(UUID),
      attachment_id: expect.stringMatching(UUID),
      filename: "Rechnung März 2026 – 東京 (final).pdf",
      content_type: "application/pdf",
      file_size: PDF.length,
      is_inline: false,
      ai_summary: null
    })
    expect(csv).toMatchObject({
      attachment_id: expect.stringMatching(UUID),
      filename: "Übersicht Ärger.csv",
      content_type: expect.stringMatching(/^text\/csv/),
      file_size: CSV.length,
      is_inline: false
    })
    expect(logo).toMatchObject({
      filename: "logo.png",
      content_type: "image/png",
      file_size: PNG.length,
      is_inline: true,
      attachment_id: null,
      ai_summary: null,
      ai_summary_available: false
    })

    // Bytes, through the signed links of the thread and through GET /attachments/{attachment_id}.
    for (const [file, bytes] of [[pdf, PDF], [csv, CSV], [logo, PNG]] as const) {
      const fetched = await h.download(file.url)
      expect(fetched.status, file.filename).toBe(200)
      expect(fetched.bytes, file.filename).toEqual(bytes)
    }
    for (const [file, bytes] of [[pdf, PDF], [csv, CSV]] as const) {
      const detail = await h.api("GET", `/attachments/${file.attachment_id}`)
      expect(detail.status).toBe(200)
      expect(detail.body).toMatchObject({ id: file.attachment_id, filename: file.filename, file_size: bytes.length, direction: "inbound" })
      expect((await h.download(detail.body.url)).bytes).toEqual(bytes)
    }

    // The same email through the single-email and email-thread reads.
    const single = await h.api("GET", `/email-integrations/email-messages/${email.id}`)
    expect(single.status).toBe(200)
    expect({ ...single.body, attachments: single.body.attachments.map(({ url: _, ...rest }: any) => rest) })
      .toEqual({ ...email, attachments: email.attachments.map(({ url: _, ...rest }: any) => rest) })
    const ofEmail = await h.api("GET", `/email-integrations/email-messages/${email.id}/thread`)
    expect(ofEmail.status).toBe(200)
    expect(ofEmail.body).toMatchObject({ conversation_id: email.conversation_id, subject, items: [{ id: email.id }] })

    // The conversation message standing for the email, and its event.
    const message = await h.api("GET", `/messages/${email.message_id}`)
    expect(message.status).toBe(200)
    expect(message.body).toMatchObject({
      id: email.message_id,
      conversation_id: email.conversation_id,
      contact_id: contact.id,
      channel_id: h.integration.email_integration_id,
      direction: "inbound",
      message_type: "email"
    })
    const events = await h.api("GET", "/events?type=message.received&page_size=100")
    expect(events.status).toBe(200)
    const received = events.body.items.filter((event: any) => event.data.message?.id === email.message_id)
    expect(received).toHaveLength(1)
    expect(received[0]).toMatchObject({
      type: "message.received",
      tenant_id: h.tenant.id,
      data: { conversation_id: email.conversation_id, contact_id: contact.id, channel_id: h.integration.email_integration_id }
    })
  })

  it("threads: In-Reply-To joins, References alone joins, an unrelated email starts a new conversation for the same contact", async () => {
    const first = await h.receive({
      from: { name: "Théo Müller", address: "theo@customer.example" },
      to: "support@desk.example",
      subject: "Lieferung verspätet",
      messageId: mid("t1"),
      text: "Wo bleibt meine Lieferung?"
    })
    const byInReplyTo = await h.receive({
      from: "theo@customer.example",
      to: "support@desk.example",
      subject: "Re: Lieferung verspätet",
      messageId: mid("t2"),
      inReplyTo: first.message_id_header,
      references: [first.message_id_header],
      text: "Noch eine Frage."
    })
    expect(byInReplyTo.conversation_id).toBe(first.conversation_id)
    expect(byInReplyTo.in_reply_to).toBe(first.message_id_header)
    expect(byInReplyTo.references).toEqual([first.message_id_header])

    // A client that writes References but no In-Reply-To, naming an unknown id first.
    const byReferences = await h.receive({
      from: "theo@customer.example",
      to: "support@desk.example",
      subject: "Antw: Lieferung",
      messageId: mid("t3"),
      references: [first.message_id_header, mid("never-seen")],
      text: "Und noch etwas."
    })
    expect(byReferences.conversation_id).toBe(first.conversation_id)
    expect(byReferences.in_reply_to).toBeNull()

    const unrelated = await h.receive({
      from: "theo@customer.example",
      to: "support@desk.example",
      subject: "Neue Bestellung",
      messageId: mid("t4"),
      text: "Ganz anderes Thema."
    })
    expect(unrelated.conversation_id).not.toBe(first.conversation_id)

    const contact = await contactByEmail("theo@customer.example")
    const conversations = (await conversationsOf(h.integration)).filter((c) => c.contact_id === contact.id)
    expect(conversations.map((c) => c.id).sort()).toEqual([first.conversation_id, unrelated.conversation_id].sort())
    expect(conversations.find((c) => c.id === unrelated.conversation_id)).toMatchObject({ subject: "Neue Bestellung", kind: "email" })
    const joined = await thread(first.conversation_id)
    expect(joined.subject).toBe("Lieferung verspätet")
    expect(joined.items.map((e: any) => e.id)).toEqual([first.id, byInReplyTo.id, byReferences.id])
  })

  it("never threads into a conversation of another mailbox or another tenant", async () => {
    const original = await h.receive({
      from: "nina@customer.example",
      to: "support@desk.example",
      subject: "Original",
      messageId: mid("iso"),
      text: "first"
    })
    const sales = await h.createIntegration("sales@desk.example")
    const toSales = await h.receive({
      from: "nina@customer.example",
      to: "sales@desk.example",
      subject: "Re: Original",
      messageId: mid("iso-sales"),
      inReplyTo: original.message_id_header,
      references: [original.message_id_header],
      text: "to sales"
    }, sales)
    expect(toSales.conversation_id).not.toBe(original.conversation_id)
    expect(toSales.email_integration_id).toBe(sales.email_integration_id)
    const salesConversations = await conversationsOf(sales)
    expect(salesConversations.find((c) => c.id === toSales.conversation_id)).toMatchObject({ channel_id: sales.email_integration_id, kind: "email" })

    const toOther = await h.receive({
      from: "nina@customer.example",
      to: "help@other.example",
      subject: "Re: Original",
      messageId: mid("iso-other"),
      inReplyTo: original.message_id_header,
      references: [original.message_id_header],
      text: "to the other tenant"
    }, h.otherIntegration)
    expect(toOther.conversation_id).not.toBe(original.conversation_id)
    expect((await h.api("GET", `/conversations/${toOther.conversation_id}`, undefined, h.other)).body)
      .toMatchObject({ tenant_id: h.other.id, channel_id: h.otherIntegration.email_integration_id })

    expect((await thread(original.conversation_id)).items.map((e: any) => e.id)).toEqual([original.id])
  })

  it("stores a redelivered email (same Message-ID) once", async () => {
    const messageId = mid("again")
    const raw = await rawEmail({
      from: "repeat@customer.example",
      to: "support@desk.example",
      subject: "Zweimal",
      messageId,
      text: "same email twice",
      files: [{ filename: "a.pdf", contentType: "application/pdf", content: PDF }]
    })
    const [one, two] = await Promise.all([h.postEmail(raw), h.postEmail(raw)])
    expect(one.status).toBe(200)
    expect(two.status).toBe(200)
    await h.drain()
    expect((await h.postEmail(raw)).status).toBe(200)
    await h.drain()

    const contact = await contactByEmail("repeat@customer.example")
    const conversations = (await conversationsOf(h.integration)).filter((c) => c.contact_id === contact.id)
    expect(conversations).toHaveLength(1)
    const items = (await thread(conversations[0].id)).items
    expect(items).toHaveLength(1)
    expect(items[0].attachments).toHaveLength(1)
    // The same Message-ID with other bytes (a provider's added header) is the same email too.
    const resent = Buffer.concat([Buffer.from("X-Redelivered: yes\r\n"), raw])
    expect((await h.postEmail(resent)).status).toBe(200)
    await h.drain()
    expect((await thread(conversations[0].id)).items).toHaveLength(1)
    // Another mailbox that got the same email keeps its own copy.
    expect((await h.postEmail(raw, { integration: h.otherIntegration })).status).toBe(200)
    await h.drain()
    expect(await h.emailByHeader(messageId, h.otherIntegration)).toMatchObject({ message_id_header: messageId })

    const messages = await h.api("GET", `/messages?conversation_id=${conversations[0].id}`)
    expect(messages.body.items).toHaveLength(1)
    const events = await h.api("GET", "/events?type=message.received&page_size=100")
    expect(events.body.items.filter((e: any) => e.data.conversation_id === conversations[0].id)).toHaveLength(1)
  })

  it("takes unreadable mail and mail without a sender without storing it or holding up the mail after it", async () => {
    const contacts = (await h.api("GET", "/contacts?page_size=100")).body.items.length
    expect((await h.postEmail("\u0000\u0001 this is not an email at all \u00ff")).status).toBe(200)
    const noSender = await rawEmail({ from: "placeholder@customer.example", subject: "no from", messageId: mid("nofrom"), text: "x" })
    const withoutFrom = Buffer.from(noSender.toString("latin1").replace(/^From:.*\r\n/im, ""), "latin1")
    expect(withoutFrom.toString("latin1")).not.toMatch(/^From:/im)
    expect((await h.postEmail(withoutFrom)).status).toBe(200)
    await h.drain()
    expect((await h.api("GET", "/contacts?page_size=100")).body.items).toHaveLength(contacts)
    const after = await h.receive({ from: "after@customer.example", subject: "danach", messageId: mid("after"), text: "still works" })
    expect(after.subject).toBe("danach")
  })

  it("keeps every read of an email to its tenant: the other tenant gets 404", async () => {
    const email = await h.receive({
      from: "private@customer.example",
      to: "support@desk.example",
      subject: "Vertraulich",
      messageId: mid("private"),
      text: "nur für euch",
      files: [{ filename: "geheim.pdf", contentType: "application/pdf", content: PDF }]
    })
    const file = email.attachments[0]
    const paths = [
      `/email-integrations/conversations/${email.conversation_id}/email-thread`,
      `/email-integrations/email-messages/${email.id}`,
      `/email-integrations/email-messages/${email.id}/thread`,
      `/email-integrations/${h.integration.email_integration_id}`,
      `/attachments/${file.attachment_id}`,
      `/messages/${email.message_id}`,
      `/conversations/${email.conversation_id}`
    ]
    for (const path of paths) {
      expect((await h.api("GET", path)).status, path).toBe(200)
      expect((await h.api("GET", path, undefined, h.other)).status, path).toBe(404)
    }
    const sends = [
      [`/email-integrations/email-messages/${email.id}/reply`, { text_body: "leak?" }],
      [`/email-integrations/conversations/${email.conversation_id}/compose-email`, { subject: "leak?", text_body: "leak?" }]
    ] as const
    const before = h.sink.messages().length
    for (const [path, body] of sends) {
      expect((await h.api("POST", path, body, h.other)).status, path).toBe(404)
    }
    expect((await h.api("POST", "/messages", { conversation_id: email.conversation_id, text: "leak?" }, h.other)).status).toBe(404)
    expect(h.sink.messages()).toHaveLength(before)
    expect((await thread(email.conversation_id)).items).toHaveLength(1)
    // An email-thread read of a conversation that is not an email thread, or unknown: 404 too.
    expect((await h.api("GET", `/email-integrations/conversations/${randomUUID()}/email-thread`)).status).toBe(404)
    expect((await h.api("GET", `/email-integrations/email-messages/${randomUUID()}`)).status).toBe(404)
    expect((await h.api("GET", "/email-integrations/email-messages/not-a-uuid")).status).toBe(404)
  })
})
