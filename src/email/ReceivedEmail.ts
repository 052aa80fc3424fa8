import PostalMime, { type Address, type Attachment, type Email } from "postal-mime"
import { Effect, Schema } from "effect"
import type { EmailAddressValue, EmailHeader } from "../ports/EmailStore.ts"
import { NotSkeletal, type SetAsidePart, setAsideBodies, skeletonOf } from "./MimeSkeleton.ts"

/** What a received email says of one of its files, without the file's bytes. */
export interface ReceivedFileInfo {
  readonly filename: string | null
  readonly contentType: string
  /** An image the HTML body shows by its Content-ID: kept, shown inline, never offered as a file of its own. */
  readonly inline: boolean
  /** Without angle brackets. */
  readonly contentId: string | null
}

/** A file of a received email. */
export interface ReceivedFile extends ReceivedFileInfo {
  readonly content: Uint8Array
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

/** The email's stored bytes could not be read just now (a failing disk, a vanished file): worth another try. */
export class RawEmailUnavailable extends Schema.TaggedError<RawEmailUnavailable>()("RawEmailUnavailable", {
  message: Schema.String
}) {}

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

const fileInfoOf = (file: Attachment): ReceivedFileInfo => {
  const contentId = messageIdsOf(file.contentId)[0] ?? file.contentId?.trim() ?? null
  const image = file.mimeType.startsWith("image/")
  const inline = image && contentId !== null && file.disposition !== "attachment" &&
    (file.related === true || file.disposition === "inline")
  return { filename: file.filename, contentType: file.mimeType, inline, contentId: contentId === "" ? null : contentId }
}

// Everything postal-mime read but the files.
const fieldsOf = (email: Email): Omit<ReceivedEmail, "files"> => {
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
    headers: email.headers.map((header) => ({ name: header.originalKey, value: clean(header.value) ?? "" }))
  }
}

const unreadable = (cause: unknown) =>
  new UnreadableEmail(`not a readable email: ${cause instanceof Error ? cause.message : String(cause)}`)

/**
 * Reads a received email with postal-mime: headers, addresses, the text and HTML bodies and every
 * file, inline images told apart (a Content-ID the HTML refers to, or an inline disposition with
 * one, on an image).
 */
export const readReceivedEmail = (raw: Uint8Array): Effect.Effect<ReceivedEmail, UnreadableEmail> =>
  Effect.tryPromise({
    try: () => PostalMime.parse(raw, { attachmentEncoding: "arraybuffer" }),
    catch: unreadable
  }).pipe(Effect.map((email): ReceivedEmail => ({
    ...fieldsOf(email),
    files: email.attachments.map((file) => ({ ...fileInfoOf(file), content: bytesOf(file.content) }))
  })))

/**
 * A received email read from a stream: everything but its files' bytes, which `readFiles` hands
 * over one file at a time.
 */
export interface StreamedEmail {
  readonly email: Omit<ReceivedEmail, "files"> & { readonly files: ReadonlyArray<ReceivedFileInfo> }
  /**
   * Hands each file with its bytes to `take`, in the email's order, one after the other. A file's
   * bytes are read (again) from the stored email only when its turn comes, into a buffer the next
   * file reuses: they are good until `take`'s effect ends, and must be copied to be kept longer.
   */
  readonly readFiles: <A, E, R>(
    take: (file: ReceivedFile, position: number) => Effect.Effect<A, E, R>
  ) => Effect.Effect<ReadonlyArray<A>, E | RawEmailUnavailable, R>
  /** Why the email had to be read whole (once, as `readReceivedEmail` does), or null when it was streamed. */
  readonly readWhole: string | null
}

/** Where a file's bytes are: set aside in the stored email (the part's index), or already read. */
type FileSource = { readonly setAside: number } | { readonly content: Uint8Array }

const MARKER_NONCE_BYTES = 15

const base64Of = (bytes: Uint8Array): string => btoa(String.fromCharCode(...bytes))

const unavailable = (cause: unknown) =>
  new RawEmailUnavailable({ message: `the stored email could not be read: ${cause instanceof Error ? cause.message : String(cause)}` })

// Reads a stream whole, growing one buffer (for an email that cannot be streamed).
const wholeOf = async (source: ReadableStream<Uint8Array>): Promise<Uint8Array> => {
  const chunks: Array<Uint8Array> = []
  let size = 0
  for await (const chunk of source) {
    chunks.push(chunk)
    size += chunk.length
  }
  const whole = new Uint8Array(size)
  let at = 0
  for (const chunk of chunks.splice(0)) {
    whole.set(chunk, at)
    at += chunk.length
  }
  return whole
}

const filesOf = (
  infos: ReadonlyArray<ReceivedFileInfo>,
  sources: ReadonlyArray<FileSource>,
  parts: ReadonlyArray<SetAsidePart>,
  open: Effect.Effect<ReadableStream<Uint8Array>, RawEmailUnavailable>
): StreamedEmail["readFiles"] =>
<A, E, R>(take: (file: ReceivedFile, position: number) => Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    if (parts.length === 0) {
      return yield* Effect.forEach(infos, (info, position) => take({ ...info, content: (sources[position] as { content: Uint8Array }).content }, position))
    }
    return yield* Effect.acquireUseRelease(
      Effect.map(open, (stream) => setAsideBodies(stream, parts)),
      (bodies) =>
        Effect.forEach(infos, (info, position) =>
          Effect.gen(function*() {
            const source = sources[position]!
            if ("content" in source) return yield* take({ ...info, content: source.content }, position)
            const next = yield* Effect.tryPromise({ try: () => bodies.next(), catch: unavailable })
            if (next.done === true || next.value.index !== source.setAside) {
              return yield* new RawEmailUnavailable({ message: "the stored email read differently the second time" })
            }
            return yield* take({ ...info, content: next.value.bytes }, position)
          })),
      (bodies) => Effect.promise(() => bodies.return(undefined).then(() => undefined, () => undefined))
    )
  })

/**
 * Reads a received email from a stream of its bytes (`open` opens it anew, as often as needed)
 * without holding its files: their base64 bodies are set aside while the rest, the skeleton, is
 * read by postal-mime exactly as `readReceivedEmail` reads a whole email (MimeSkeleton.ts); each
 * file is then decoded on its own when `readFiles` comes to it. An email the walk cannot take
 * apart safely, or whose skeleton postal-mime reads differently, is read whole instead.
 */
export const readReceivedEmailFrom = Effect.fnUntraced(function*(
  open: Effect.Effect<ReadableStream<Uint8Array>, RawEmailUnavailable>
): Effect.fn.Return<StreamedEmail, UnreadableEmail | RawEmailUnavailable> {
  const nonce = globalThis.crypto.getRandomValues(new Uint8Array(MARKER_NONCE_BYTES))
  // The marker of set-aside body `index`: the nonce and the index, as one line of base64.
  const marker = (index: number) =>
    new TextEncoder().encode(`${base64Of(Uint8Array.from([...nonce, (index >> 16) & 0xff, (index >> 8) & 0xff, index & 0xff]))}\r\n`)
  const markedIndex = (content: Attachment["content"]): number | undefined => {
    if (!(content instanceof ArrayBuffer) || content.byteLength !== MARKER_NONCE_BYTES + 3) return undefined
    const bytes = new Uint8Array(content)
    for (let i = 0; i < MARKER_NONCE_BYTES; i++) if (bytes[i] !== nonce[i]) return undefined
    return (bytes[MARKER_NONCE_BYTES]! << 16) | (bytes[MARKER_NONCE_BYTES + 1]! << 8) | bytes[MARKER_NONCE_BYTES + 2]!
  }

  const whole = (why: string) =>
    Effect.gen(function*() {
      const raw = yield* Effect.flatMap(open, (stream) => Effect.tryPromise({ try: () => wholeOf(stream), catch: unavailable }))
      const email = yield* readReceivedEmail(raw)
      const { files, ...fields } = email
      return {
        email: { ...fields, files: files.map(({ content: _, ...info }) => info) },
        readFiles: filesOf(files, files.map((file) => ({ content: file.content })), [], open),
        readWhole: why
      } satisfies StreamedEmail
    })

  const skeleton = yield* Effect.flatMap(open, (stream) =>
    Effect.tryPromise({
      try: () => skeletonOf(stream, marker).then((read) => ({ read }), (error: unknown) => {
        if (error instanceof NotSkeletal) return { notSkeletal: error.message }
        throw error
      }),
      catch: unavailable
    }))
  if ("notSkeletal" in skeleton) return yield* whole(skeleton.notSkeletal)
  const { bytes, parts } = skeleton.read
  const parsed = yield* Effect.result(Effect.tryPromise({
    try: () => PostalMime.parse(bytes, { attachmentEncoding: "arraybuffer" }),
    catch: unreadable
  }))
  if (parsed._tag === "Failure") return yield* whole(`the skeleton was not read: ${parsed.failure.message}`)
  const email = parsed.success
  // Every set-aside body must come back as exactly one file's whole content, in order.
  const sources = email.attachments.map((file): FileSource => {
    const index = markedIndex(file.content)
    return index === undefined ? { content: bytesOf(file.content) } : { setAside: index }
  })
  const found = sources.flatMap((source) => ("setAside" in source ? [source.setAside] : []))
  if (found.length !== parts.length || found.some((index, i) => index !== i)) {
    return yield* whole("postal-mime read the skeleton's set-aside parts differently")
  }
  const infos = email.attachments.map(fileInfoOf)
  return {
    email: { ...fieldsOf(email), files: infos },
    readFiles: filesOf(infos, sources, parts, open),
    readWhole: null
  } satisfies StreamedEmail
})

/**
 * The message ids a received email may continue, most telling first: `In-Reply-To`, then
 * `References` from the newest back.
 */
export const threadCandidates = (email: Pick<ReceivedEmail, "inReplyTo" | "references">): ReadonlyArray<string> => {
  const ordered = [...(email.inReplyTo === null ? [] : [email.inReplyTo]), ...[...email.references].reverse()]
  return [...new Set(ordered)]
}
