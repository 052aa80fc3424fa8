import MailComposer from "nodemailer/lib/mail-composer/index.js"
import { Effect } from "effect"
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import {
  RawEmailUnavailable,
  readReceivedEmail,
  readReceivedEmailFrom,
  type ReceivedEmail
} from "../../../src/email/ReceivedEmail.ts"

// A streamed reading must give exactly what reading the whole email gives: the same fields, the
// same files in the same order with the same bytes. Emails are streamed in small, odd-sized chunks
// so lines and base64 groups are cut anywhere.

const compose = (options: ConstructorParameters<typeof MailComposer>[0]): Promise<Uint8Array> =>
  new Promise((resolve, reject) =>
    new MailComposer(options).compile().build((error, message) => (error ? reject(error) : resolve(new Uint8Array(message)))))

const streamOf = (bytes: Uint8Array, chunk: number) =>
  new ReadableStream<Uint8Array>({
    start: (controller) => {
      for (let i = 0; i < bytes.length; i += chunk) controller.enqueue(bytes.slice(i, i + chunk))
      controller.close()
    }
  })

/** The streamed reading, its files read back, and how many times the stored bytes were opened. */
const readStreamed = async (raw: Uint8Array, chunk = 37) => {
  let opened = 0
  const open = Effect.sync(() => {
    opened += 1
    return streamOf(raw, chunk)
  })
  const streamed = await Effect.runPromise(readReceivedEmailFrom(open))
  // The bytes are good only while `take` runs: kept here, they are copied.
  const files = await Effect.runPromise(streamed.readFiles((file) => Effect.succeed({ ...file, content: file.content.slice() })))
  const email: ReceivedEmail = { ...streamed.email, files }
  return { email, readWhole: streamed.readWhole, opened }
}

const readWhole = (raw: Uint8Array) => Effect.runPromise(readReceivedEmail(raw))

const bytes = (text: string) => new TextEncoder().encode(text)
const PNG = Uint8Array.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52])

describe("reading a received email from a stream", () => {
  it("reads what a whole reading reads, files set aside and decoded one at a time", async () => {
    const raw = await compose({
      from: { name: "Jöhn Dœ", address: "John@Example.ORG" },
      to: "support@acme.example",
      subject: "Grüße – 東京",
      messageId: "<m-2@example.org>",
      inReplyTo: "<m-1@example.org>",
      text: "Hello\nthere",
      html: "<p>Hello <img src=\"cid:logo@x\"></p>",
      attachments: [
        { filename: "Übersicht.pdf", content: Buffer.from(Array.from({ length: 5000 }, (_, i) => (i * 7) % 256)), contentType: "application/pdf" },
        { filename: "logo.png", content: Buffer.from(PNG), contentType: "image/png", cid: "logo@x" },
        { filename: "empty.bin", content: Buffer.alloc(0), contentType: "application/octet-stream" },
        { filename: "notes.txt", content: Buffer.from("plain text file"), contentType: "text/plain" },
        { filename: "invite.ics", content: Buffer.from("BEGIN:VCALENDAR\r\nEND:VCALENDAR\r\n"), contentType: "text/calendar" }
      ]
    })
    const streamed = await readStreamed(raw)
    expect(streamed.readWhole).toBeNull()
    expect(streamed.email).toEqual(await readWhole(raw))
    expect(streamed.email.files.map((file) => file.filename)).toEqual(["logo.png", "Übersicht.pdf", "empty.bin", "notes.txt", "invite.ics"])
    // Once for the skeleton, once for the set-aside files.
    expect(streamed.opened).toBe(2)
  })

  it("decodes base64 as a whole reading does: padding inside a body, short last groups, blanks, LF-only lines", async () => {
    const body = [
      "QUJD", "REVG=", "R0g=", "SQ", "==", "SktM TU5P\t", "", "UA", "Q"
    ].join("\n")
    const raw = bytes(
      "From: a@example.org\nSubject: odd base64\nContent-Type: multipart/mixed; boundary=\"b\"\n\n" +
        "--b\nContent-Type: text/plain\n\nhello\n" +
        `--b\nContent-Type: application/octet-stream; name="odd.bin"\nContent-Transfer-Encoding: BASE64 (as sent)\n\n${body}\n` +
        "--b--\n"
    )
    const streamed = await readStreamed(raw, 5)
    expect(streamed.readWhole).toBeNull()
    expect(streamed.email).toEqual(await readWhole(raw))
  })

  it("keeps attached messages, quoted-printable files and parts without a type as a whole reading does", async () => {
    const inner = await compose({
      from: "inner@example.org",
      subject: "forwarded",
      text: "inner text",
      attachments: [{ filename: "inner.pdf", content: Buffer.from("%PDF-1.4 inner"), contentType: "application/pdf" }]
    })
    const raw = await compose({
      from: "outer@example.org",
      subject: "outer",
      text: "see attached",
      attachments: [
        { filename: "forwarded.eml", content: Buffer.from(inner), contentType: "message/rfc822", contentDisposition: "inline" },
        { filename: "qp.pdf", content: "%PDF-1.4 é\n", contentType: "application/pdf", encoding: "utf-8", contentTransferEncoding: "quoted-printable" }
      ]
    })
    const streamed = await readStreamed(raw)
    expect(streamed.email).toEqual(await readWhole(raw))
  })

  it("reads an email it cannot take apart safely whole, with the same result", async () => {
    // A line inside a base64 body that is no base64 (postal-mime drops its other characters).
    const raw = bytes(
      "From: a@example.org\r\nSubject: junk\r\nContent-Type: multipart/mixed; boundary=\"b\"\r\n\r\n" +
        "--b\r\nContent-Type: application/pdf\r\nContent-Transfer-Encoding: base64\r\n\r\nJVBERi0x\r\n*** not base64 ***\r\nLjQ=\r\n" +
        "--b--\r\n"
    )
    const streamed = await readStreamed(raw)
    expect(streamed.readWhole).toMatch(/not base64/)
    expect(streamed.email).toEqual(await readWhole(raw))
  })

  it("reads what a whole reading reads for generated emails, cut into chunks of any size", async () => {
    const file = fc.record({
      content: fc.uint8Array({ maxLength: 300 }),
      contentType: fc.constantFrom("application/pdf", "image/png", "application/octet-stream", "text/plain", "message/rfc822"),
      inline: fc.boolean(),
      encoding: fc.constantFrom(undefined, "base64", "quoted-printable")
    })
    await fc.assert(
      fc.asyncProperty(
        fc.array(file, { maxLength: 5 }),
        fc.string({ maxLength: 40 }),
        fc.boolean(),
        fc.integer({ min: 1, max: 200 }),
        async (files, text, lf, chunk) => {
          const composed = await compose({
            from: "gen@example.org",
            subject: "generated",
            text,
            html: `<p>${text}</p>${files.map((_, i) => `<img src="cid:f${i}@x">`).join("")}`,
            attachments: files.map((f, i) => ({
              filename: `f${i}`,
              content: Buffer.from(f.content),
              contentType: f.contentType,
              ...(f.encoding === undefined ? {} : { contentTransferEncoding: f.encoding }),
              ...(f.inline ? { cid: `f${i}@x` } : {})
            })),
            newline: lf ? "unix" : "windows"
          })
          const streamed = await readStreamed(composed, chunk)
          expect(streamed.email).toEqual(await readWhole(composed))
        }
      ),
      { numRuns: 150 }
    )
  })

  it("fails with RawEmailUnavailable, not as an unreadable email, when the stored bytes cannot be read", async () => {
    const open = Effect.succeed(new ReadableStream<Uint8Array>({ pull: (controller) => controller.error(new Error("disk gone")) }))
    const failure = await Effect.runPromise(Effect.flip(readReceivedEmailFrom(open)))
    expect(failure).toBeInstanceOf(RawEmailUnavailable)
  })
})
