import MailComposer from "nodemailer/lib/mail-composer/index.js"
import { Effect } from "effect"
import { describe, expect, it } from "vitest"
import { messageIdsOf, readReceivedEmail, threadCandidates } from "../../../src/email/ReceivedEmail.ts"

const compose = (options: ConstructorParameters<typeof MailComposer>[0]): Promise<Uint8Array> =>
  new Promise((resolve, reject) =>
    new MailComposer(options).compile().build((error, message) => (error ? reject(error) : resolve(new Uint8Array(message)))))

const read = (raw: Uint8Array) => Effect.runPromise(readReceivedEmail(raw))

const PNG = Uint8Array.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52])

describe("reading a received email", () => {
  it("keeps addresses, subject, ids, dates, both bodies and every header", async () => {
    const raw = await compose({
      from: { name: "Jöhn Dœ", address: "John@Example.ORG" },
      to: [{ name: "Support", address: "support@acme.example" }],
      cc: "a@example.org, B <b@example.org>",
      replyTo: "replies@example.org",
      subject: "Grüße – 東京 👋",
      messageId: "<m-2@example.org>",
      inReplyTo: "<m-1@example.org>",
      references: ["<m-0@example.org>", "<m-1@example.org>"],
      date: new Date("2026-11-25T10:00:00Z"),
      text: "Hello\nthere",
      html: "<p>Hello <b>there</b></p>"
    })
    const email = await read(raw)
    expect(email.from).toEqual({ address: "john@example.org", name: "Jöhn Dœ" })
    expect(email.to).toEqual([{ address: "support@acme.example", name: "Support" }])
    expect(email.cc).toEqual([{ address: "a@example.org", name: null }, { address: "b@example.org", name: "B" }])
    expect(email.replyTo).toEqual([{ address: "replies@example.org", name: null }])
    expect(email.subject).toBe("Grüße – 東京 👋")
    expect(email.messageId).toBe("m-2@example.org")
    expect(email.inReplyTo).toBe("m-1@example.org")
    expect(email.references).toEqual(["m-0@example.org", "m-1@example.org"])
    expect(email.date).toBe("2026-11-25T10:00:00.000Z")
    expect(email.text?.trim()).toBe("Hello\nthere")
    expect(email.html).toContain("<b>there</b>")
    expect(email.headers.find((h) => h.name.toLowerCase() === "message-id")?.value).toBe("<m-2@example.org>")
    expect(email.files).toEqual([])
  })

  it("tells files from inline images the HTML shows by Content-ID", async () => {
    const raw = await compose({
      from: "x@example.org",
      to: "support@acme.example",
      subject: "files",
      text: "see",
      html: "<p><img src=\"cid:logo@x\"></p>",
      attachments: [
        { filename: "Übersicht.pdf", content: Buffer.from("%PDF-1.4\n%%EOF\n"), contentType: "application/pdf" },
        { filename: "logo.png", content: Buffer.from(PNG), contentType: "image/png", cid: "logo@x" },
        { filename: "photo.png", content: Buffer.from(PNG), contentType: "image/png" }
      ]
    })
    const email = await read(raw)
    // In the order of the MIME tree: the related image sits beside the HTML, before the mixed files.
    const byName = [...email.files].sort((a, b) => (a.filename ?? "").localeCompare(b.filename ?? ""))
    expect(byName.map((f) => [f.filename, f.contentType, f.inline, f.contentId])).toEqual([
      ["logo.png", "image/png", true, "logo@x"],
      ["photo.png", "image/png", false, null],
      ["Übersicht.pdf", "application/pdf", false, null]
    ])
    expect(Array.from(byName[0]!.content)).toEqual(Array.from(PNG))
    expect(new TextDecoder().decode(byName[2]!.content)).toBe("%PDF-1.4\n%%EOF\n")
  })

  it("reads a message with no Message-ID, no Date and no From as such", async () => {
    const raw = new TextEncoder().encode("To: a@example.org\r\nSubject: bare\r\n\r\nbody\r\n")
    const email = await read(raw)
    expect(email.messageId).toBeNull()
    expect(email.from).toBeNull()
    expect(email.date).toBeNull()
    expect(email.text?.trim()).toBe("body")
  })

  it("replaces NUL characters, which PostgreSQL text cannot hold", async () => {
    const raw = new TextEncoder().encode("From: a@example.org\r\nSubject: a\0b\r\n\r\nx\0y\r\n")
    const email = await read(raw)
    expect(email.subject).toBe("a b")
    expect(email.text).toContain("x\uFFFDy")
  })

  it("puts a subject and names whose encoded words hide line breaks on one line", async () => {
    const hidden = Buffer.from("Hallo\r\nBcc: victim@example.org", "utf8").toString("base64")
    const name = Buffer.from("Eve\nX-Evil: 1", "utf8").toString("base64")
    const raw = new TextEncoder().encode(
      `From: =?UTF-8?B?${name}?= <eve@example.org>\r\nSubject: =?UTF-8?B?${hidden}?=\r\n\r\nbody\r\n`
    )
    const email = await read(raw)
    expect(email.subject).toBe("Hallo Bcc: victim@example.org")
    expect(email.from).toEqual({ address: "eve@example.org", name: "Eve X-Evil: 1" })
  })
})

describe("message ids and threading candidates", () => {
  it("reads bracketed ids in order, and bare ones", () => {
    expect(messageIdsOf("<a@x> <b@y>\r\n <c@z>")).toEqual(["a@x", "b@y", "c@z"])
    expect(messageIdsOf("a@x")).toEqual(["a@x"])
    expect(messageIdsOf("not an id")).toEqual([])
    expect(messageIdsOf(undefined)).toEqual([])
  })

  it("tries In-Reply-To first, then References from the newest back, each once", () => {
    expect(threadCandidates({ inReplyTo: "c@x", references: ["a@x", "b@x", "c@x"] })).toEqual(["c@x", "b@x", "a@x"])
    expect(threadCandidates({ inReplyTo: null, references: ["a@x", "b@x"] })).toEqual(["b@x", "a@x"])
    expect(threadCandidates({ inReplyTo: null, references: [] })).toEqual([])
  })
})
