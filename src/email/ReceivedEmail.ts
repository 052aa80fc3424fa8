import PostalMime, { type Address } from "postal-mime"
import { Effect } from "effect"
import type { EmailAddressValue, EmailHeader } from "../ports/EmailStore.ts"

/** A file of a received email. */
export interface ReceivedFile {
  readonly filename: string | null
  readonly contentType: string
  readonly content: Uint8Array
  /** An image the HTML body shows by its Content-ID: kept, shown inline, never offered as a file of its own. */
  readonly inline: boolean
  /** Without angle brackets. */
  readonly contentId: string | null
}

/** A received email read from its RFC 5322 bytes. */
export interface ReceivedEmail {
  /** Without angle brackets; null when the email had none. */
  readonly messageId: string | null
  readonly inReplyTo: string | null
  /** Oldest first. */
  readonly references: ReadonlyArray<string>
  readonly subject: string | null
  readonly from: EmailAddressValue | null
  readonly to: ReadonlyArray<EmailAddressValue>
  readonly cc: ReadonlyArray<EmailAddressValue>
  readonly replyTo: ReadonlyArray<EmailAddressValue>
  /** The `Date` header as an ISO instant, when it reads as one. */
  readonly date: string | null
  readonly text: string | null
  readonly html: string | null
  readonly headers: ReadonlyArray<EmailHeader>
  readonly files: ReadonlyArray<ReceivedFile>
}

/** The email's bytes could not be read as a message at all. */
export class UnreadableEmail extends Error {}

/** The message ids of a header (`<a@x> <b@y>`), without angle brackets, in order; a bare id too. */
export const messageIdsOf = (value: string | undefined | null): ReadonlyArray<string> => {
  if (value === undefined || value === null) return []
  const bracketed = [...value.matchAll(/<([^<>\s]+)>/g)].map((m) => m[1]!)
  if (bracketed.length > 0) return bracketed
  return value.split(/[\s,]+/).filter((id) => /^[^\s<>]+@[^\s<>]+$/.test(id))
}

const mailboxes = (addresses: ReadonlyArray<Address> | Address | undefined): ReadonlyArray<EmailAddressValue> => {
  const list = addresses === undefined ? [] : Array.isArray(addresses) ? addresses : [addresses as Address]
  return list.flatMap((entry): ReadonlyArray<EmailAddressValue> =>
    entry.group !== undefined
      ? mailboxes(entry.group)
      : entry.address === undefined || entry.address === ""
      ? []
      : [{
        address: entry.address.trim().toLowerCase(),
        name: entry.name.replace(/[\r\n\0]+/g, " ").trim() === "" ? null : entry.name.replace(/[\r\n\0]+/g, " ").trim()
      }]
  )
}

const isoDate = (value: string | undefined): string | null => {
  if (value === undefined) return null
  const ms = Date.parse(value)
  return Number.isNaN(ms) ? null : new Date(ms).toISOString()
}

// PostgreSQL's text holds no U+0000; received text may.
const clean = (value: string | undefined): string | null =>
  value === undefined ? null : value.replaceAll("\0", "\uFFFD")

// A header value on one line: a line break decoded from an encoded word never reaches a header again.
const oneLine = (value: string | undefined): string | null =>
  value === undefined ? null : value.replace(/[\r\n\0]+/g, " ").trim()

const bytesOf = (content: ArrayBuffer | Uint8Array | string): Uint8Array =>
  typeof content === "string"
    ? new TextEncoder().encode(content)
    : content instanceof Uint8Array
    ? content
    : new Uint8Array(content)

/**
 * Reads a received email with postal-mime: headers, addresses, the text and HTML bodies and every
 * file, inline images told apart (a Content-ID the HTML refers to, or an inline disposition with
 * one, on an image).
 */
export const readReceivedEmail = (raw: Uint8Array): Effect.Effect<ReceivedEmail, UnreadableEmail> =>
  Effect.tryPromise({
    try: () => PostalMime.parse(raw, { attachmentEncoding: "arraybuffer" }),
    catch: (cause) => new UnreadableEmail(`not a readable email: ${cause instanceof Error ? cause.message : String(cause)}`)
  }).pipe(Effect.map((email): ReceivedEmail => {
    const from = mailboxes(email.from)
    return {
      messageId: messageIdsOf(email.messageId)[0] ?? null,
      inReplyTo: messageIdsOf(email.inReplyTo)[0] ?? null,
      references: messageIdsOf(email.references),
      subject: oneLine(email.subject),
      from: from[0] ?? null,
      to: mailboxes(email.to),
      cc: mailboxes(email.cc),
      replyTo: mailboxes(email.replyTo),
      date: isoDate(email.date),
      text: clean(email.text),
      html: clean(email.html),
      headers: email.headers.map((header) => ({ name: header.originalKey, value: clean(header.value) ?? "" })),
      files: email.attachments.map((file) => {
        const contentId = messageIdsOf(file.contentId)[0] ?? file.contentId?.trim() ?? null
        const image = file.mimeType.startsWith("image/")
        const inline = image && contentId !== null && file.disposition !== "attachment" &&
          (file.related === true || file.disposition === "inline")
        return {
          filename: file.filename,
          contentType: file.mimeType,
          content: bytesOf(file.content),
          inline,
          contentId: contentId === "" ? null : contentId
        }
      })
    }
  }))

/**
 * The message ids a received email may continue, most telling first: `In-Reply-To`, then
 * `References` from the newest back.
 */
export const threadCandidates = (email: Pick<ReceivedEmail, "inReplyTo" | "references">): ReadonlyArray<string> => {
  const ordered = [...(email.inReplyTo === null ? [] : [email.inReplyTo]), ...[...email.references].reverse()]
  return [...new Set(ordered)]
}
