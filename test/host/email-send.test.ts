import { randomUUID } from "node:crypto"
import type { ParsedMail } from "mailparser"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type EmailHost, startEmailHost } from "../support/EmailHost.ts"
import { admin } from "../support/Host.ts"
import { hostBackends } from "../support/HostBackends.ts"
import type { SunkMessage } from "../support/SmtpSink.ts"

// Sending email seen from outside: the host as a child process with OMNI_SMTP_URL at a real SMTP
// sink, sends through the API, and what the sink received read back with mailparser, byte for byte.

const PNG = Uint8Array.from(Buffer.from(
  "89504e470d0a1a0a0000000d4948445200000001000000010806000000" +
    "1f15c4890000000d4944415478da63f8cfc0f01f0005000201e221bc330000000049454e44ae426082",
  "hex"
))
const PDF_HEAD = new TextEncoder().encode("%PDF-1.4\n")
// Every byte value, after a PDF header.
const PDF = Uint8Array.from([...PDF_HEAD, ...Array.from({ length: 256 }, (_, i) => i), 0x0a])
const CSV = new TextEncoder().encode("Artikel;Menge;Preis\r\nGrüße;2;3,50 €\r\n東京;1;9,99 €\r\n")
const MB = 1024 * 1024
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

/** `size` bytes that read as a PDF: the header, then filler. */
const bigPdf = (size: number) => {
  const bytes = new Uint8Array(size).fill(0x41)
  bytes.set(PDF_HEAD)
  return bytes
}
const mid = (label: string) => `${label}-${randomUUID()}@customer.example`

/** The files of a received email as a reader sees them. */
const partsOf = (parsed: ParsedMail) =>
  parsed.attachments.map((file) => ({
    filename: file.filename,
    contentType: file.contentType,
    disposition: file.contentDisposition,
    related: file.related === true,
    cid: file.cid ?? null,
    size: file.size,
    content: new Uint8Array(file.content)
  }))
const addresses = (field: ParsedMail["to"]) => [field ?? []].flat().flatMap((to) => to.value)

describe.each(hostBackends)("sending email from the reference host ($name)", (backend) => {
  let h: EmailHost
  /** An email received from a customer; the tests answer it. */
  let received: any

  beforeAll(async () => {
    h = await startEmailHost(backend)
    received = await h.receive({
      from: { name: "Åsa Öberg-Łęcka", address: "asa@customer.example" },
      to: { name: "Support", address: "support@desk.example" },
      subject: "Frage zur Lieferung – 東京",
      messageId: mid("question"),
      inReplyTo: "earlier@shop.example",
      references: ["start@shop.example", "earlier@shop.example"],
      text: "Wann kommt meine Bestellung?"
    })
  })
  afterAll(async () => {
    await h?.close()
  })

  /** Runs `send` and resolves with what it answered and the one email the sink got for it. */
  const sendOne = async (send: () => Promise<{ status: number; body: any }>) => {
    const before = h.sink.messages().length
    const answer = await send()
    expect(answer.status, JSON.stringify(answer.body)).toBe(201)
    const all = await h.sink.waitFor(before + 1)
    expect(all, "exactly one email").toHaveLength(before + 1)
    return { answer: answer.body, sunk: all[before]! as SunkMessage }
  }
  /** Runs `send`, expects `status`, and that nothing reached the sink and no email was added to the conversation. */
  const refusedSend = async (conversationId: string, status: number, send: () => Promise<{ status: number; body: any }>) => {
    const sunk = h.sink.messages().length
    const emails = (await threadOf(conversationId)).items.length
    const answer = await send()
    expect(answer.status, JSON.stringify(answer.body)).toBe(status)
    expect(h.sink.messages(), "nothing was sent").toHaveLength(sunk)
    expect((await threadOf(conversationId)).items, "no email was stored").toHaveLength(emails)
    return answer.body
  }
  const threadOf = async (conversationId: string) => {
    const read = await h.api("GET", `/email-integrations/conversations/${conversationId}/email-thread`)
    expect(read.status).toBe(200)
    return read.body
  }
  const uploaded = async (bytes: Uint8Array, filename: string, type: string, path?: string, as = h.tenant) => {
    const answer = await h.upload(bytes, filename, type, path, as)
    expect(answer.status, JSON.stringify(answer.body)).toBe(201)
    return answer.body
  }
  const reply = (emailId: string, body: unknown, as = h.tenant) =>
    h.api("POST", `/email-integrations/email-messages/${emailId}/reply`, body, as)
  const compose = (conversationId: string, body: unknown, as = h.tenant) =>
    h.api("POST", `/email-integrations/conversations/${conversationId}/compose-email`, body, as)
  const post = (body: unknown, as = h.tenant) => h.api("POST", "/messages", body, as)

  it("replies to the sender with In-Reply-To, References and 'Re:' once; the sent email is stored in the thread as sent", async () => {
    const text = "Hej Åsa,\n\ndeine Bestellung ist unterwegs – 東京.\n\nViele Grüße"
    const { answer: sent, sunk } = await sendOne(() => reply(received.id, { text_body: text, html_body: "<p>Hej Åsa – 東京</p>" }))

    expect(sent).toMatchObject({
      id: expect.stringMatching(UUID),
      conversation_id: received.conversation_id,
      email_integration_id: h.integration.email_integration_id,
      direction: "outbound",
      status: "sent",
      subject: "Re: Frage zur Lieferung – 東京",
      from: { address: "support@desk.example", name: "Support – Kundendienst" },
      to: [{ address: "asa@customer.example", name: "Åsa Öberg-Łęcka" }],
      in_reply_to: received.message_id_header,
      references: ["start@shop.example", "earlier@shop.example", received.message_id_header],
      text_body: text,
      attachments: [],
      error: null,
      sent_at: expect.any(String)
    })

    expect(sunk.envelope).toEqual({ from: "support@desk.example", to: ["asa@customer.example"] })
    const mail = sunk.parsed
    expect(mail.subject).toBe("Re: Frage zur Lieferung – 東京")
    expect(mail.messageId).toBe(`<${sent.message_id_header}>`)
    expect(mail.inReplyTo).toBe(`<${received.message_id_header}>`)
    expect(mail.references).toEqual(["<start@shop.example>", "<earlier@shop.example>", `<${received.message_id_header}>`])
    expect(mail.from?.value).toEqual([{ address: "support@desk.example", name: "Support – Kundendienst" }])
    expect(addresses(mail.to)).toEqual([{ address: "asa@customer.example", name: "Åsa Öberg-Łęcka" }])
    expect(mail.text?.trimEnd()).toBe(text)
    expect(mail.html).toContain("<p>Hej Åsa – 東京</p>")
    expect(mail.attachments).toEqual([])
    const raw = sunk.raw.toString("latin1")
    expect(raw.match(/^In-Reply-To:/gim)).toHaveLength(1)
    expect(raw.match(/^Subject:/gim)).toHaveLength(1)

    // Answering the workspace's own reply keeps one 'Re:', goes to the same customer, extends References.
    const again = await sendOne(() => reply(sent.id, { text_body: "Nachtrag" }))
    expect(again.answer).toMatchObject({
      subject: "Re: Frage zur Lieferung – 東京",
      to: [{ address: "asa@customer.example" }],
      in_reply_to: sent.message_id_header,
      references: ["start@shop.example", "earlier@shop.example", received.message_id_header, sent.message_id_header]
    })
    expect(again.sunk.parsed.subject).toBe("Re: Frage zur Lieferung – 東京")
    expect(again.sunk.envelope.to).toEqual(["asa@customer.example"])
    expect(again.sunk.parsed.inReplyTo).toBe(`<${sent.message_id_header}>`)

    // The customer's answer to the sent email joins the conversation.
    const answer = await h.receive({
      from: "asa@customer.example",
      to: "support@desk.example",
      subject: "Re: Frage zur Lieferung – 東京",
      messageId: mid("answer"),
      inReplyTo: again.answer.message_id_header,
      references: [received.message_id_header, sent.message_id_header, again.answer.message_id_header],
      text: "Danke!"
    })
    expect(answer.conversation_id).toBe(received.conversation_id)

    const thread = await threadOf(received.conversation_id)
    expect(thread.items.map((e: any) => [e.id, e.direction, e.status])).toEqual([
      [received.id, "inbound", "received"],
      [sent.id, "outbound", "sent"],
      [again.answer.id, "outbound", "sent"],
      [answer.id, "inbound", "received"]
    ])
    const message = await h.api("GET", `/messages/${sent.message_id}`)
    expect(message.body).toMatchObject({ direction: "outbound", status: "sent", message_type: "email", conversation_id: received.conversation_id })
    const events = await h.api("GET", "/events?type=message.sent&page_size=100")
    expect(events.body.items.filter((e: any) => e.data.message?.id === sent.message_id)).toHaveLength(1)
  })

  it("replies to whoever the email names in Reply-To, and keeps a display name with commas and quotes exactly", async () => {
    const email = await h.receive({
      from: { name: "Müller, Hans \"HM\" – 東京", address: "hans@customer.example" },
      replyTo: { name: "Büro Müller, Einkauf", address: "einkauf@customer.example" },
      to: "support@desk.example",
      subject: "Angebot",
      messageId: mid("replyto"),
      text: "Bitte an den Einkauf antworten."
    })
    expect(email.from).toEqual({ address: "hans@customer.example", name: "Müller, Hans \"HM\" – 東京" })
    const { answer: sent, sunk } = await sendOne(() => reply(email.id, { text_body: "Gern." }))
    expect(sent.to).toEqual([{ address: "einkauf@customer.example", name: "Büro Müller, Einkauf" }])
    expect(sunk.envelope.to).toEqual(["einkauf@customer.example"])
    expect(addresses(sunk.parsed.to)).toEqual([{ address: "einkauf@customer.example", name: "Büro Müller, Einkauf" }])

    // A new email in the conversation goes to its contact, the sender, with the name exact.
    const composed = await sendOne(() => compose(email.conversation_id, { subject: "Nachfrage", text_body: "x" }))
    expect(addresses(composed.sunk.parsed.to)).toEqual([{ address: "hans@customer.example", name: "Müller, Hans \"HM\" – 東京" }])
  })

  it("composes a new email in the conversation: the subject as given (non-ASCII decoded exactly), no threading headers", async () => {
    const subject = "Ihre Bestellung №42 – Versandbestätigung 📦 東京 «Grüße»"
    const { answer: sent, sunk } = await sendOne(() =>
      compose(received.conversation_id, { subject, text_body: "Paket ist unterwegs.", html_body: "<b>Paket</b>" })
    )
    expect(sent).toMatchObject({
      direction: "outbound",
      status: "sent",
      subject,
      in_reply_to: null,
      references: [],
      to: [{ address: "asa@customer.example" }]
    })
    expect(sunk.envelope.to).toEqual(["asa@customer.example"])
    expect(sunk.parsed.subject).toBe(subject)
    expect(sunk.parsed.inReplyTo).toBeUndefined()
    expect(sunk.parsed.references).toBeUndefined()
    expect(sunk.parsed.text?.trimEnd()).toBe("Paket ist unterwegs.")
    expect(sunk.parsed.html).toContain("<b>Paket</b>")
    expect((await threadOf(received.conversation_id)).items.at(-1)).toMatchObject({ id: sent.id, status: "sent", subject })
  })

  it("POST /messages on an email conversation: one email carrying every file as a regular attachment, exact names, types, sizes and bytes", async () => {
    const pdf = await uploaded(PDF, "Rechnung März 2026 – 東京 (final).pdf", "application/pdf")
    const csv = await uploaded(CSV, "Übersicht Ärger.csv", "text/csv")
    const image = await uploaded(PNG, "Foto 東京.png", "image/png", "/email-integrations/inline-images/upload")
    expect(image).toEqual({ attachment_id: expect.stringMatching(UUID), content_id: expect.any(String), url: expect.any(String) })
    // HTML-looking text that even names the image's cid: still plain text, the image still a file.
    const text = `<p>Siehe <img src="cid:${image.content_id}"></p>\nund die Anhänge – 東京`
    const subject = "Unterlagen – 東京 №7"
    const last = (await threadOf(received.conversation_id)).items.at(-1)

    const { answer: message, sunk } = await sendOne(() =>
      post({ conversation_id: received.conversation_id, subject, text, attachments: [pdf.id, csv.id, image.attachment_id] })
    )
    expect(message).toMatchObject({
      conversation_id: received.conversation_id,
      direction: "outbound",
      message_type: "email",
      status: "sent",
      text
    })
    // The message lists the three files (in no promised order).
    expect(message.attachments.map((a: any) => a.id).sort()).toEqual([pdf.id, csv.id, image.attachment_id].sort())

    const mail = sunk.parsed
    expect(sunk.envelope.to).toEqual(["asa@customer.example"])
    expect(mail.subject).toBe(subject)
    expect(mail.inReplyTo).toBe(`<${last.message_id_header}>`)
    // Plain text only: no HTML part at all.
    expect(mail.html || null).toBeNull()
    expect(sunk.raw.toString("latin1")).not.toMatch(/text\/html/i)
    expect(mail.text?.trimEnd()).toBe(text)
    const essence = (type: string) => type.split(";")[0]!.trim()
    expect(partsOf(mail)).toEqual([
      {
        filename: "Rechnung März 2026 – 東京 (final).pdf",
        contentType: "application/pdf",
        disposition: "attachment",
        related: false,
        cid: null,
        size: PDF.length,
        content: PDF
      },
      {
        filename: "Übersicht Ärger.csv",
        contentType: essence(csv.content_type),
        disposition: "attachment",
        related: false,
        cid: null,
        size: CSV.length,
        content: CSV
      },
      {
        filename: "Foto 東京.png",
        contentType: "image/png",
        disposition: "attachment",
        related: false,
        cid: null,
        size: PNG.length,
        content: PNG
      }
    ])
    expect(sunk.raw.toString("latin1")).not.toMatch(/multipart\/related/i)

    const email = (await threadOf(received.conversation_id)).items.at(-1)
    expect(email).toMatchObject({ message_id: message.id, direction: "outbound", status: "sent", subject, html_body: null })
    expect(email.attachments.map((a: any) => [a.attachment_id, a.filename, a.is_inline, a.file_size])).toEqual([
      [pdf.id, "Rechnung März 2026 – 東京 (final).pdf", false, PDF.length],
      [csv.id, "Übersicht Ärger.csv", false, CSV.length],
      [image.attachment_id, "Foto 東京.png", false, PNG.length]
    ])
  })

  it("POST /messages needs a subject when the conversation has none: 422 naming subject, nothing sent", async () => {
    const untitled = await h.receive({
      from: "nosubject@customer.example",
      to: "support@desk.example",
      messageId: mid("untitled"),
      text: "no subject here"
    })
    expect(untitled.subject).toBeNull()
    expect((await h.api("GET", `/conversations/${untitled.conversation_id}`)).body.subject).toBeNull()
    const refused = await refusedSend(untitled.conversation_id, 422, () =>
      post({ conversation_id: untitled.conversation_id, text: "Hallo" })
    )
    expect(refused.detail).toEqual([{ loc: ["body", "subject"], msg: expect.any(String), type: expect.any(String) }])
    // With a subject it goes.
    const { sunk } = await sendOne(() => post({ conversation_id: untitled.conversation_id, subject: "Ihre Nachricht", text: "Hallo" }))
    expect(sunk.parsed.subject).toBe("Ihre Nachricht")
  })

  it("embeds an inline image whose cid: the HTML names as a related part, not a file, while another file stays a regular attachment", async () => {
    const image = await uploaded(PNG, "logo – 東京.png", "image/png", "/email-integrations/inline-images/upload")
    expect((await h.download(image.url)).bytes).toEqual(PNG)
    const pdf = await uploaded(PDF, "Angebot Ü.pdf", "application/pdf")
    // Only images are taken as inline images.
    expect((await h.upload(PDF, "kein Bild.pdf", "application/pdf", "/email-integrations/inline-images/upload")).status).toBe(400)
    const html = `<p>Unser Logo:</p><img src="cid:${image.content_id}" alt="logo"><p>Grüße</p>`
    const { answer: sent, sunk } = await sendOne(() =>
      reply(received.id, { text_body: "Logo und Angebot", html_body: html, attachment_ids: [image.attachment_id, pdf.id] })
    )
    const parts = partsOf(sunk.parsed)
    expect(parts).toHaveLength(2)
    expect(parts.find((p) => p.contentType === "image/png")).toEqual({
      filename: "logo – 東京.png",
      contentType: "image/png",
      disposition: "inline",
      related: true,
      cid: image.content_id,
      size: PNG.length,
      content: PNG
    })
    expect(parts.find((p) => p.contentType === "application/pdf")).toEqual({
      filename: "Angebot Ü.pdf",
      contentType: "application/pdf",
      disposition: "attachment",
      related: false,
      cid: null,
      size: PDF.length,
      content: PDF
    })
    expect(sunk.parsed.html).toContain(`src="cid:${image.content_id}"`)
    expect(sunk.raw.toString("latin1")).toMatch(/multipart\/related/i)

    expect(sent.attachments).toHaveLength(2)
    const inline = sent.attachments.find((a: any) => a.is_inline)
    const file = sent.attachments.find((a: any) => !a.is_inline)
    expect(inline).toMatchObject({ is_inline: true, attachment_id: null, content_id: image.content_id, filename: "logo – 東京.png" })
    expect(file).toMatchObject({ is_inline: false, attachment_id: pdf.id, filename: "Angebot Ü.pdf", ai_summary_available: false })
    expect((await h.download(inline.url)).bytes).toEqual(PNG)

    // An inline upload the HTML does not name goes as an ordinary file (compose-email too).
    const unnamed = await uploaded(PNG, "nicht eingebettet.png", "image/png", "/email-integrations/inline-images/upload")
    const composed = await sendOne(() =>
      compose(received.conversation_id, {
        subject: "Ohne Einbettung",
        text_body: "x",
        html_body: "<p>kein Bild</p>",
        attachment_ids: [unnamed.attachment_id]
      })
    )
    expect(partsOf(composed.sunk.parsed)).toEqual([
      expect.objectContaining({ filename: "nicht eingebettet.png", disposition: "attachment", related: false, content: PNG })
    ])
    expect(composed.answer.attachments).toEqual([
      expect.objectContaining({ is_inline: false, attachment_id: unnamed.attachment_id })
    ])
  })

  it("refuses a URL among the attachments with 422 naming the element, nothing sent", async () => {
    const pdf = await uploaded(PDF, "ok.pdf", "application/pdf")
    const url = "https://files.example/invoice.pdf"
    const onMessages = await refusedSend(received.conversation_id, 422, () =>
      post({ conversation_id: received.conversation_id, subject: "x", text: "x", attachments: [pdf.id, url] })
    )
    expect(onMessages.detail).toEqual([{ loc: ["body", "attachments", 1], msg: expect.any(String), type: expect.any(String) }])
    const onReply = await refusedSend(received.conversation_id, 422, () => reply(received.id, { text_body: "x", attachment_ids: [url] }))
    expect(onReply.detail).toEqual([{ loc: ["body", "attachment_ids", 0], msg: expect.any(String), type: expect.any(String) }])
    const onCompose = await refusedSend(received.conversation_id, 422, () =>
      compose(received.conversation_id, { subject: "x", text_body: "x", attachment_ids: [pdf.id, pdf.id, url] })
    )
    expect(onCompose.detail).toEqual([{ loc: ["body", "attachment_ids", 2], msg: expect.any(String), type: expect.any(String) }])
  })

  it("answers 404 'Attachment {id} not found' for an unknown id and for another tenant's upload, nothing sent", async () => {
    const mine = await uploaded(PDF, "mine.pdf", "application/pdf")
    const theirs = await uploaded(PDF, "theirs.pdf", "application/pdf", undefined, h.other)
    for (const id of [randomUUID(), theirs.id]) {
      const notFound = { detail: `Attachment ${id} not found` }
      expect(await refusedSend(received.conversation_id, 404, () =>
        post({ conversation_id: received.conversation_id, subject: "x", text: "x", attachments: [mine.id, id] })
      )).toEqual(notFound)
      expect(await refusedSend(received.conversation_id, 404, () =>
        reply(received.id, { text_body: "x", attachment_ids: [mine.id, id] })
      )).toEqual(notFound)
      expect(await refusedSend(received.conversation_id, 404, () =>
        compose(received.conversation_id, { subject: "x", text_body: "x", attachment_ids: [id] })
      )).toEqual(notFound)
    }
  })

  it("refuses files over 20 MB in all with 413: nothing reaches the SMTP server, no email is stored", async () => {
    const size = Math.round(10.5 * MB)
    const [one, two] = await Promise.all([
      uploaded(bigPdf(size), "teil-1.pdf", "application/pdf"),
      uploaded(bigPdf(size), "teil-2.pdf", "application/pdf")
    ])
    expect([one.file_size, two.file_size]).toEqual([size, size])
    const ids = [one.id, two.id]
    for (const send of [
      () => reply(received.id, { text_body: "zu groß", attachment_ids: ids }),
      () => compose(received.conversation_id, { subject: "zu groß", text_body: "x", attachment_ids: ids }),
      () => post({ conversation_id: received.conversation_id, subject: "zu groß", text: "x", attachments: ids })
    ]) {
      const refused = await refusedSend(received.conversation_id, 413, send)
      expect(refused.detail).toEqual({ code: "email_too_large", message: expect.stringContaining("Nothing was sent") })
    }
    // Inline images count toward the same total.
    const image = await uploaded(PNG, "i.png", "image/png", "/email-integrations/inline-images/upload")
    const three = await uploaded(bigPdf(20 * MB - PNG.length + 1), "knapp.pdf", "application/pdf")
    await refusedSend(received.conversation_id, 413, () =>
      reply(received.id, { text_body: "x", html_body: `<img src="cid:${image.content_id}">`, attachment_ids: [three.id, image.attachment_id] })
    )
    // Exactly 20 MB in all goes, whole.
    const exact = await uploaded(bigPdf(20 * MB - PNG.length), "genau.pdf", "application/pdf")
    const before = h.sink.messages().length
    const sent = await reply(received.id, {
      text_body: "x",
      html_body: `<img src="cid:${image.content_id}">`,
      attachment_ids: [exact.id, image.attachment_id]
    })
    expect(sent.status, JSON.stringify(sent.body)).toBe(201)
    const sunk = (await h.sink.waitFor(before + 1, 20_000))[before]!
    expect(partsOf(sunk.parsed).map((p) => [p.filename, p.size, p.related]).sort()).toEqual([
      ["genau.pdf", 20 * MB - PNG.length, false],
      ["i.png", PNG.length, true]
    ])
  })

  it("refuses a line break in the subject with 422, nothing sent", async () => {
    for (const subject of ["Hallo\r\nBcc: victim@evil.example", "Hallo\nBcc: victim@evil.example", "Hallo\rX-Evil: 1"]) {
      const composed = await refusedSend(received.conversation_id, 422, () =>
        compose(received.conversation_id, { subject, text_body: "x" })
      )
      expect(composed.detail).toEqual([expect.objectContaining({ loc: ["body", "subject"] })])
      const posted = await refusedSend(received.conversation_id, 422, () =>
        post({ conversation_id: received.conversation_id, subject, text: "x" })
      )
      expect(posted.detail).toEqual([expect.objectContaining({ loc: ["body", "subject"] })])
    }
  })

  /** Receives an email whose subject is an encoded word hiding a line break and a Bcc header. */
  const receiveSneaky = async (from: string) => {
    const messageId = mid("crlf")
    const evil = Buffer.from("Hallo\r\nBcc: victim@evil.example", "utf8").toString("base64")
    const raw = [
      `From: ${from}`,
      "To: support@desk.example",
      `Subject: =?UTF-8?B?${evil}?=`,
      `Message-ID: <${messageId}>`,
      "MIME-Version: 1.0",
      "Content-Type: text/plain; charset=utf-8",
      "",
      "hi",
      ""
    ].join("\r\n")
    expect((await h.postEmail(raw)).status).toBe(200)
    await h.drain()
    const email = await h.emailByHeader(messageId)
    expect(email).toBeDefined()
    return email
  }

  it("never carries a line break of a received subject into the headers of a reply or a message", async () => {
    const email = await receiveSneaky("sneaky@customer.example")
    const before = h.sink.messages().length
    const answers = [
      await reply(email.id, { text_body: "x" }),
      await post({ conversation_id: email.conversation_id, text: "x" })
    ]
    for (const answer of answers) expect([201, 422], JSON.stringify(answer.body)).toContain(answer.status)
    for (const sunk of h.sink.messages().slice(before)) {
      expect(sunk.envelope.to).toEqual(["sneaky@customer.example"])
      expect(sunk.parsed.bcc).toBeUndefined()
      expect(sunk.raw.toString("latin1")).not.toMatch(/^Bcc:/im)
    }
  })

  it("replies to a received email whose subject holds a line break, the subject on one line", async () => {
    const email = await receiveSneaky("sneaky2@customer.example")
    const { answer: sent, sunk } = await sendOne(() => reply(email.id, { text_body: "Antwort" }))
    expect(sent.subject).toMatch(/^Re: Hallo\s+Bcc: victim@evil\.example$/)
    expect(sent.subject).not.toMatch(/[\r\n]/)
    expect(sunk.envelope.to).toEqual(["sneaky2@customer.example"])
    expect(sunk.parsed.subject).toBe(sent.subject)
    expect(sunk.parsed.bcc).toBeUndefined()
  })

  it("answers 502 when the mail server refuses the recipient; the email shows failed with the error in the thread", async () => {
    const bounced = await h.receive({
      from: "bounce@rejected.example",
      to: "support@desk.example",
      subject: "Unzustellbar",
      messageId: mid("bounce"),
      text: "reply to me if you can"
    })
    const sunk = h.sink.messages().length
    const answer = await reply(bounced.id, { text_body: "Antwort" })
    expect(answer.status, JSON.stringify(answer.body)).toBe(502)
    expect(answer.body).toMatchObject({
      detail: {
        code: "email_not_sent",
        message: expect.stringContaining("could not be sent"),
        message_id: expect.stringMatching(UUID),
        email_message_id: expect.stringMatching(UUID)
      }
    })
    expect(h.sink.messages()).toHaveLength(sunk)

    const thread = await threadOf(bounced.conversation_id)
    expect(thread.items).toHaveLength(2)
    expect(thread.items[1]).toMatchObject({
      id: answer.body.detail.email_message_id,
      message_id: answer.body.detail.message_id,
      direction: "outbound",
      status: "failed",
      error: expect.stringMatching(/550|rejected/),
      sent_at: null,
      subject: "Re: Unzustellbar"
    })
    const message = await h.api("GET", `/messages/${answer.body.detail.message_id}`)
    expect(message.body).toMatchObject({ status: "failed", error: { message: expect.any(String) } })

    // POST /messages to the same contact fails the same way.
    const posted = await post({ conversation_id: bounced.conversation_id, text: "nochmal" })
    expect(posted.status).toBe(502)
    expect(h.sink.messages()).toHaveLength(sunk)
  })

  it("sends nothing into a closed conversation; a customer's answer to it starts a new conversation", async () => {
    const email = await h.receive({
      from: "closed@customer.example",
      to: "support@desk.example",
      subject: "Erledigt",
      messageId: mid("closed"),
      text: "done"
    })
    const closed = await h.api("POST", `/conversations/${email.conversation_id}/close`)
    expect(closed.status, JSON.stringify(closed.body)).toBe(200)
    await refusedSend(email.conversation_id, 422, () => reply(email.id, { text_body: "x" }))
    await refusedSend(email.conversation_id, 422, () => compose(email.conversation_id, { subject: "x", text_body: "x" }))
    await refusedSend(email.conversation_id, 422, () => post({ conversation_id: email.conversation_id, text: "x" }))
    const answer = await h.receive({
      from: "closed@customer.example",
      to: "support@desk.example",
      subject: "Re: Erledigt",
      messageId: mid("closed-answer"),
      inReplyTo: email.message_id_header,
      references: [email.message_id_header],
      text: "doch nicht"
    })
    expect(answer.conversation_id).not.toBe(email.conversation_id)
    expect((await h.api("GET", `/conversations/${answer.conversation_id}`)).body).toMatchObject({ status: "open", kind: "email" })
  })

  it("needs messages:create to send and messages:read to read", async () => {
    const [reader, writer] = await Promise.all([
      admin(h.env, "api-key", "create", "--tenant", h.tenant.id, "--scopes", "messages:read"),
      admin(h.env, "api-key", "create", "--tenant", h.tenant.id, "--scopes", "messages:create")
    ])
    const asReader = { id: h.tenant.id, key: reader.api_key }
    const asWriter = { id: h.tenant.id, key: writer.api_key }
    const sunk = h.sink.messages().length
    const forbidden = { status: 403, body: { detail: "Missing required permission(s): messages:create" } }
    expect(await reply(received.id, { text_body: "x" }, asReader)).toEqual(forbidden)
    expect(await compose(received.conversation_id, { subject: "x", text_body: "x" }, asReader)).toEqual(forbidden)
    expect(await post({ conversation_id: received.conversation_id, text: "x" }, asReader)).toEqual(forbidden)
    expect((await h.upload(PNG, "a.png", "image/png", "/email-integrations/inline-images/upload", asReader)).status).toBe(403)
    expect(h.sink.messages()).toHaveLength(sunk)
    expect((await h.api("GET", `/email-integrations/email-messages/${received.id}`, undefined, asReader)).status).toBe(200)
    expect((await h.api("GET", `/email-integrations/email-messages/${received.id}`, undefined, asWriter)).status).toBe(403)
    expect((await h.api("GET", `/email-integrations/conversations/${received.conversation_id}/email-thread`, undefined, asWriter)).status)
      .toBe(403)
  })
})
