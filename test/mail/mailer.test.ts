import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect } from "effect"
import { type ParsedMail, simpleParser } from "mailparser"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { composeMime, makeFileMailer, makeSmtpMailer } from "../../adapters/mail/index.ts"
import { smtpFailureReason } from "../../adapters/mail/SmtpMailer.ts"
import type { MailerError, MailSent, OutgoingMail } from "../../src/ports/Mailer.ts"
import { type SmtpSink, startSmtpSink } from "../support/SmtpSink.ts"

const everyByte = Uint8Array.from({ length: 256 }, (_, i) => i)
const csv = new TextEncoder().encode("a;b\n1;2\n")
const png = Uint8Array.from([137, 80, 78, 71, 13, 10, 26, 10, 0, 0, 0, 13, 73, 72, 68, 82])

const mail: OutgoingMail = {
  from: { address: "desk@support.example", name: "Grüße – 東京" },
  to: [{ address: "ada@customer.example", name: "Ådа Łovelace" }, { address: "bob@customer.example", name: null }],
  cc: [{ address: "carol@customer.example", name: "Çarol, \"the boss\"" }],
  subject: "Grüße – 東京: your order №42",
  messageId: "m-3@support.example",
  inReplyTo: "m-2@customer.example",
  references: ["m-1@support.example", "m-2@customer.example"],
  text: "Hallo Ada,\n\nGrüße aus 東京 – see the files.\n",
  html: "<p>Hallo Ada, Grüße aus 東京 <img src=\"cid:logo@support.example\"></p>",
  files: [
    { filename: "Rechnung März 2026 – 東京 (final version).pdf", contentType: "application/pdf", content: everyByte, contentId: null },
    { filename: "Übersicht.csv", contentType: "text/csv", content: csv, contentId: null },
    { filename: "logo.png", contentType: "image/png", content: png, contentId: "logo@support.example" }
  ],
  date: "2026-11-24T10:11:12.000Z"
}

const send = (mailer: { send: (mail: OutgoingMail) => Effect.Effect<MailSent, MailerError> }, m: OutgoingMail) =>
  Effect.runPromise(mailer.send(m))
const refusal = (mailer: { send: (mail: OutgoingMail) => Effect.Effect<MailSent, MailerError> }, m: OutgoingMail) =>
  Effect.runPromise(Effect.flip(mailer.send(m)))

/** What a reader of the email sees, as mailparser reads it. */
const reading = (parsed: ParsedMail) => ({
  subject: parsed.subject,
  from: parsed.from?.value,
  to: [parsed.to ?? []].flat().flatMap((to) => to.value),
  cc: [parsed.cc ?? []].flat().flatMap((cc) => cc.value),
  messageId: parsed.messageId,
  inReplyTo: parsed.inReplyTo,
  references: parsed.references,
  date: parsed.date?.toISOString(),
  text: parsed.text,
  html: parsed.html,
  files: parsed.attachments.map((file) => ({
    filename: file.filename,
    contentType: file.contentType,
    disposition: file.contentDisposition,
    cid: file.cid ?? null,
    related: file.related === true,
    content: [...file.content]
  }))
})

const freePort = () =>
  new Promise<number>((resolve) => {
    const server = createServer()
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    })
  })

let sink: SmtpSink
let smtp: ReturnType<typeof makeSmtpMailer>
const dirs: Array<string> = []

beforeAll(async () => {
  sink = await startSmtpSink({ rejectRecipients: (address) => address.startsWith("nobody@") })
  smtp = makeSmtpMailer(sink.url, { timeoutMs: 5_000 })
})
afterAll(async () => {
  await smtp.close()
  await sink.close()
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
})

describe("the MIME of an email", () => {
  it("is CRLF-terminated RFC 5322 with the ids in angle brackets and nothing read from paths or URLs", async () => {
    const raw = new TextDecoder().decode(await composeMime(mail))
    const head = raw.slice(0, raw.indexOf("\r\n\r\n"))
    expect(raw.replace(/\r\n/g, "")).not.toMatch(/[\r\n]/)
    expect(head).toMatch(/^Message-ID: <m-3@support\.example>$/m)
    expect(head).toMatch(/^In-Reply-To: <m-2@customer\.example>$/m)
    expect(head).toMatch(/^References: <m-1@support\.example> <m-2@customer\.example>$/m)
    expect(head).toMatch(/^Date: Tue, 24 Nov 2026 10:11:12 \+0000$/m)
    // Headers are ASCII: the non-ASCII text travels as encoded words.
    expect(head).toMatch(/^[\x20-\x7e\r\n\t]*$/)
  })
})

describe("the SMTP mailer, against a real SMTP server", () => {
  it("delivers subject, names, text, HTML, attachments and the inline image exactly", async () => {
    const sent = await send(smtp.mailer, mail)
    const [arrived] = await sink.waitFor(1)
    const got = reading(arrived!.parsed)

    expect(sent.destination).toBe(sink.url)
    expect(sent.response).toMatch(/^250 /)
    expect(sent.size).toBe(arrived!.raw.byteLength)
    expect(arrived!.envelope).toEqual({
      from: "desk@support.example",
      to: ["ada@customer.example", "bob@customer.example", "carol@customer.example"]
    })

    expect(got.subject).toBe("Grüße – 東京: your order №42")
    expect(got.from).toEqual([{ address: "desk@support.example", name: "Grüße – 東京" }])
    expect(got.to).toEqual([
      { address: "ada@customer.example", name: "Ådа Łovelace" },
      { address: "bob@customer.example", name: "" }
    ])
    expect(got.cc).toEqual([{ address: "carol@customer.example", name: "Çarol, \"the boss\"" }])
    expect(got.messageId).toBe("<m-3@support.example>")
    expect(got.inReplyTo).toBe("<m-2@customer.example>")
    expect(got.references).toEqual(["<m-1@support.example>", "<m-2@customer.example>"])
    expect(got.date).toBe("2026-11-24T10:11:12.000Z")
    expect(got.text).toBe(mail.text)
    expect(got.html).toBe(mail.html)

    const regular = got.files.filter((file) => !file.related)
    expect(regular).toEqual([
      {
        filename: "Rechnung März 2026 – 東京 (final version).pdf",
        contentType: "application/pdf",
        disposition: "attachment",
        cid: null,
        related: false,
        content: [...everyByte]
      },
      { filename: "Übersicht.csv", contentType: "text/csv", disposition: "attachment", cid: null, related: false, content: [...csv] }
    ])
    expect(got.files.filter((file) => file.related)).toEqual([
      { filename: "logo.png", contentType: "image/png", disposition: "inline", cid: "logo@support.example", related: true, content: [...png] }
    ])
    // The structure: alternative (text, related (html, image)) inside mixed, with the files.
    const raw = arrived!.raw.toString("latin1")
    expect(raw).toMatch(/^Content-Type: multipart\/mixed;/m)
    expect(raw).toMatch(/^Content-Type: multipart\/alternative;/m)
    expect(raw).toMatch(/^Content-Type: multipart\/related; type="text\/html";/m)
  })

  it("sends a text-only email as a single text/plain part", async () => {
    const before = sink.messages().length
    await send(smtp.mailer, { ...mail, html: null, files: [], cc: [], inReplyTo: null, references: [] })
    const arrived = (await sink.waitFor(before + 1))[before]!
    expect(arrived.parsed.text).toBe(mail.text)
    expect(arrived.parsed.html || null).toBeNull()
    expect(arrived.parsed.attachments).toEqual([])
    expect(arrived.parsed.inReplyTo).toBeUndefined()
    expect(arrived.parsed.headers.has("references")).toBe(false)
    expect(arrived.raw.toString("latin1")).toMatch(/^Content-Type: text\/plain; charset=utf-8$/m)
    expect(arrived.raw.toString("latin1")).not.toMatch(/multipart|text\/html/)
  })

  it("refuses a line break in a header value before connecting, so nothing reaches the server", async () => {
    const before = sink.messages().length
    const broken: Array<[string, OutgoingMail]> = [
      ["subject", { ...mail, subject: "Hello\r\nBcc: victim@elsewhere.example" }],
      ["subject (LF)", { ...mail, subject: "Hello\nBcc: victim@elsewhere.example" }],
      ["display name", { ...mail, to: [{ address: "ada@customer.example", name: "Ada\r\nBcc: victim@elsewhere.example" }] }],
      ["filename", { ...mail, files: [{ ...mail.files[0]!, filename: "a.pdf\r\nContent-Type: text/html" }] }],
      ["address", { ...mail, cc: [{ address: "carol@customer.example\r\nBcc: victim@elsewhere.example", name: null }] }],
      ["Message-ID", { ...mail, messageId: "m-3@support.example>\r\nBcc: <victim@elsewhere.example" }],
      ["In-Reply-To", { ...mail, inReplyTo: "m-2@customer.example\nX-Evil: 1" }],
      ["References", { ...mail, references: ["m-1@support.example", "m-2@customer.example\r\nX-Evil: 1"] }],
      ["Content-ID", { ...mail, files: [{ ...mail.files[2]!, contentId: "logo\r\nX-Evil: 1" }] }]
    ]
    for (const [what, m] of broken) {
      const error = await refusal(smtp.mailer, m)
      expect(error._tag, what).toBe("MailerError")
      expect(error.reason, what).toBe("Refused")
      expect(error.message, what).toMatch(/line break/)
      expect((await refusal(makeFileMailer(join(tmpdir(), "never-written")), m)).reason, what).toBe("Refused")
    }
    // A good email sent after them is the only one that arrived.
    await send(smtp.mailer, { ...mail, subject: "after the refusals" })
    const arrived = await sink.waitFor(before + 1)
    expect(arrived.slice(before).map((m) => m.parsed.subject)).toEqual(["after the refusals"])
  })

  it("refuses an address that is not one address, and an email without recipients", async () => {
    const twoInOne = await refusal(smtp.mailer, { ...mail, to: [{ address: "a@x.example, b@y.example", name: null }] })
    expect(twoInOne.reason).toBe("Refused")
    const none = await refusal(smtp.mailer, { ...mail, to: [], cc: [] })
    expect(none).toMatchObject({ reason: "Refused", message: expect.stringContaining("no To or Cc") })
  })

  it("answers Refused when the server rejects the only recipient, and sends to the accepted ones otherwise", async () => {
    const before = sink.messages().length
    const error = await refusal(smtp.mailer, { ...mail, to: [{ address: "nobody@customer.example", name: null }], cc: [] })
    expect(error.reason).toBe("Refused")
    expect(error.message).toContain("550")

    const partly = await send(smtp.mailer, { ...mail, to: [{ address: "nobody@customer.example", name: null }, mail.to[0]!], cc: [] })
    expect(partly.response).toMatch(/^250 /)
    const arrived = (await sink.waitFor(before + 1))[before]!
    expect(arrived.envelope.to).toEqual(["ada@customer.example"])
    expect(sink.messages()).toHaveLength(before + 1)
  })

  it("answers Unavailable when nothing listens at the address", async () => {
    const closed = makeSmtpMailer(`smtp://127.0.0.1:${await freePort()}`, { timeoutMs: 2_000 })
    const error = await refusal(closed.mailer, mail)
    expect(error.reason).toBe("Unavailable")
    expect(error.message).toContain("smtp://127.0.0.1:")
    await closed.close()
  })

  it("tells permanent from temporary failures by the reply code first", () => {
    const failure = (code: string | undefined, responseCode?: number) =>
      smtpFailureReason(Object.assign(new Error("x"), { code, responseCode }))
    expect(failure("EENVELOPE", 550)).toBe("Refused")
    expect(failure("EMESSAGE", 554)).toBe("Refused")
    expect(failure("EENVELOPE", 450)).toBe("Unavailable")
    expect(failure("EMESSAGE", 451)).toBe("Unavailable")
    expect(failure("EPROTOCOL", 421)).toBe("Unavailable")
    expect(failure("EENVELOPE", 503)).toBe("Unavailable")
    expect(failure("EENVELOPE")).toBe("Refused")
    expect(failure("EMESSAGE")).toBe("Refused")
    expect(failure("ECONNECTION")).toBe("Unavailable")
    expect(failure("ETIMEDOUT")).toBe("Unavailable")
    expect(failure("ESOCKET")).toBe("Unavailable")
    expect(failure("EAUTH", 535)).toBe("Unavailable")
    expect(smtpFailureReason(new Error("anything else"))).toBe("Unavailable")
  })

  it("reads only smtp:// and smtps:// URLs, and names the server without credentials", async () => {
    for (const url of ["http://mail.example:25", "mail.example:25", "smtp://", "smtp://mail.example:25/path", "smtp://mail.example:25?x=1"]) {
      expect(() => makeSmtpMailer(url), url).toThrow(/OMNI_SMTP_URL/)
    }
    expect(() => makeSmtpMailer("ftp://user:s3cret@mail.example")).toThrow(expect.objectContaining({ message: expect.not.stringContaining("s3cret") }))
    const withCredentials = makeSmtpMailer(`smtp://user%40x:p%3Ass@127.0.0.1:${await freePort()}`, { timeoutMs: 2_000 })
    const error = await refusal(withCredentials.mailer, mail)
    expect(error.message).not.toContain("p%3Ass")
    expect(error.message).not.toContain("p:ss")
    expect(error.message).toMatch(/smtp:\/\/127\.0\.0\.1:\d+/)
    await withCredentials.close()
  })
})

describe("the file mailer", () => {
  it("writes one .eml that reads back as the SMTP server received it, and no temporary file", async () => {
    const dir = mkdtempSync(join(tmpdir(), "omni-mail-"))
    dirs.push(dir)
    const outbox = join(dir, "outbox")
    const copy = { ...mail, subject: "Grüße – 東京: the same email twice" }
    const sent = await send(makeFileMailer(outbox), copy)
    const files = readdirSync(outbox)
    expect(files).toHaveLength(1)
    expect(files[0]).toMatch(/^2026-11-24T10-11-12-000Z-[0-9a-f]+\.eml$/)
    expect(sent).toEqual({ destination: join(outbox, files[0]!), response: null, size: readFileSync(join(outbox, files[0]!)).byteLength })

    const before = sink.messages().length
    await send(smtp.mailer, copy)
    const viaSmtp = (await sink.waitFor(before + 1))[before]!
    const fromFile = reading(await simpleParser(readFileSync(sent.destination), { keepCidLinks: true }))
    expect(fromFile.subject).toBe(copy.subject)
    expect(fromFile).toEqual(reading(viaSmtp.parsed))
  })

  it("answers Unavailable when it cannot write, leaving nothing behind", async () => {
    const dir = mkdtempSync(join(tmpdir(), "omni-mail-"))
    dirs.push(dir)
    writeFileSync(join(dir, "a-file"), "")
    const error = await refusal(makeFileMailer(join(dir, "a-file", "outbox")), mail)
    expect(error.reason).toBe("Unavailable")
    expect(readdirSync(dir)).toEqual(["a-file"])
  })
})
