/**
 * A received email read without holding its files: the MIME structure is walked line by line as
 * the bytes stream past, and the body of every leaf part that carries a file in base64 (a type
 * other than text, message or multipart) is set aside. The first pass keeps everything else, the
 * skeleton, with one marker line in place of each set-aside body, and counts the bytes each body
 * decodes to; postal-mime then reads the small skeleton as it would read the whole email. A second
 * pass over the same bytes decodes the set-aside bodies, one file at a time, into buffers of their
 * exact size.
 *
 * The walk follows postal-mime's rules for lines, headers and boundaries, but it need not agree
 * with it everywhere: a set-aside body may hold only base64 text (a boundary line or anything else
 * there stops the walk), and the caller checks that postal-mime read each marker back as exactly
 * one file's content. Anything else means the email is read whole, as before.
 */

/** The walk met something it does not set aside safely; the email is read whole instead. */
export class NotSkeletal extends Error {}

/** A set-aside body, in the order of the email: how many bytes it decodes to. */
export interface SetAsidePart {
  readonly index: number
  readonly size: number
}

/** The first pass: the email with a marker line for each set-aside body, and those bodies' sizes. */
export interface Skeleton {
  readonly bytes: Uint8Array
  readonly parts: ReadonlyArray<SetAsidePart>
}

const LF = 0x0a
const CR = 0x0d
const DASH = 0x2d
const EQUALS = 0x3d

// The value of each base64 character; -1 for every other byte.
const BASE64 = new Int8Array(256).fill(-1)
"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".split("").forEach((c, i) => {
  BASE64[c.charCodeAt(0)] = i
})

/** postal-mime's limit on the header bytes of a whole email; the walk stops past it too. */
const MAX_HEADER_BYTES = 2 * 1024 * 1024
/** A line longer than this (no mailer writes one) stops the walk rather than being held whole. */
export const MAX_LINE_BYTES = 1024 * 1024
/** postal-mime refuses parts nested deeper than 256; the walk stops well past that. */
const MAX_DEPTH = 1024

/**
 * Base64 as postal-mime decodes a part: blanks are dropped, `=` ends a unit (some mailers pad every
 * line), a unit's last group of two or three characters gives one or two bytes and a lone
 * character none. Counts the bytes, or writes them into `target`.
 */
class Base64Body {
  private a = 0
  private b = 0
  private c = 0
  private inGroup = 0
  size = 0

  constructor(private readonly target: Uint8Array | undefined) {}

  private put(byte: number) {
    if (this.target !== undefined) {
      if (this.size >= this.target.length) throw new NotSkeletal("a set-aside body decoded to more bytes than its first reading")
      this.target[this.size] = byte
    }
    this.size += 1
  }

  private endUnit() {
    if (this.inGroup >= 2) this.put((this.a << 2) | (this.b >> 4))
    if (this.inGroup === 3) this.put(((this.b & 15) << 4) | (this.c >> 2))
    this.inGroup = 0
  }

  /** Bytes `start` to `end` of `bytes`, already known to be base64 text. */
  line(bytes: Uint8Array, start: number, end: number) {
    for (let i = start; i < end; i++) {
      const byte = bytes[i]!
      const value = BASE64[byte]!
      if (value < 0) {
        if (byte === EQUALS) this.endUnit()
        continue
      }
      if (this.inGroup === 0) this.a = value
      else if (this.inGroup === 1) this.b = value
      else if (this.inGroup === 2) this.c = value
      else {
        this.put((this.a << 2) | (this.b >> 4))
        this.put(((this.b & 15) << 4) | (this.c >> 2))
        this.put(((this.c & 3) << 6) | value)
        this.inGroup = 0
        continue
      }
      this.inGroup += 1
    }
  }

  end() {
    this.endUnit()
  }
}

// Whether bytes `start` to `end` are what a set-aside body's lines may hold: base64, padding and
// the blanks mailers put on lines.
const isBase64Text = (bytes: Uint8Array, start: number, end: number): boolean => {
  for (let i = start; i < end; i++) {
    const byte = bytes[i]!
    if (BASE64[byte]! < 0 && byte !== EQUALS && byte !== 0x20 && byte !== 0x09 && byte !== CR) return false
  }
  return true
}

/** A part not yet finished: the walk holds only the chain from the email down to the current part. */
interface Part {
  readonly parent: Part | undefined
  readonly depth: number
  state: "header" | "body"
  headerLines: Array<string>
  /** The child of a multipart that is still open (a new child finishes the one before). */
  openChild: Part | undefined
  /** The set-aside body of this part, once its headers said so. */
  setAside: { readonly index: number; readonly body: Base64Body } | undefined
}

interface Boundary {
  readonly value: Uint8Array
  readonly part: Part
}

// As postal-mime decodes header lines.
const headerText = new TextDecoder("utf-8", { ignoreBOM: true })
const encoder = new TextEncoder()

// A structured header's value without (comments), as far as the walk needs it.
const withoutComments = (value: string) => value.replace(/\([^()]*\)/g, " ")

// The first value of header `name` among unfolded lines.
const headerValue = (lines: ReadonlyArray<string>, name: string): string | undefined => {
  for (const line of lines) {
    const colon = line.indexOf(":")
    if (colon > 0 && line.slice(0, colon).trim().toLowerCase() === name) return line.slice(colon + 1).trim()
  }
  return undefined
}

const parameterOf = (value: string, name: string): string | undefined => {
  for (const match of value.matchAll(/;\s*([^\s=;]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s;]*))/g)) {
    if (match[1]!.toLowerCase() === name) return match[2] !== undefined ? match[2].replace(/\\(.)/g, "$1") : match[3]!
  }
  return undefined
}

/**
 * The walk over an email's bytes, line by line as postal-mime reads them. `keep` receives every
 * line that stays in the skeleton, as it was; a set-aside body's lines go to its `Base64Body`,
 * which counts or decodes them; `ended` hears of each set-aside body once it is whole.
 */
class MimeWalk {
  private readonly root: Part
  private current: Part
  private readonly boundaries: Array<Boundary> = []
  private headerBytes = 0
  private nextIndex = 0
  private carry: Uint8Array | undefined
  private partEnded = false

  constructor(
    private readonly keep: (line: Uint8Array) => void,
    private readonly bodyFor: (index: number) => Base64Body,
    private readonly ended: (index: number, body: Base64Body) => void
  ) {
    this.root = this.current = this.part(undefined)
  }

  private part(parent: Part | undefined): Part {
    const depth = parent === undefined ? 0 : parent.depth + 1
    // postal-mime refuses deeper nesting; the skeleton keeps the lines, so it refuses it too.
    if (depth > MAX_DEPTH) throw new NotSkeletal("parts nested too deeply")
    const part: Part = { parent, depth, state: "header", headerLines: [], openChild: undefined, setAside: undefined }
    if (parent !== undefined) parent.openChild = part
    return part
  }

  /** Reads a part's headers once they ended: a multipart's boundary, or whether its body is set aside. */
  private headersEnded(part: Part, bodyFollows: boolean) {
    const unfolded: Array<string> = []
    for (const line of part.headerLines) {
      if (unfolded.length > 0 && /^[ \t]/.test(line)) unfolded[unfolded.length - 1] += line
      else unfolded.push(line)
    }
    part.headerLines = []
    const contentType = headerValue(unfolded, "content-type")
    if (contentType === undefined) return
    const clean = withoutComments(contentType)
    const mediaType = clean.split(";")[0]!.trim().toLowerCase()
    if (mediaType.startsWith("multipart/")) {
      const boundary = parameterOf(clean, "boundary")
      if (boundary !== undefined && boundary !== "") this.boundaries.push({ value: encoder.encode(boundary), part })
      return
    }
    const encoding = withoutComments(headerValue(unfolded, "content-transfer-encoding") ?? "").toLowerCase().match(/[\w-]+/)?.[0]
    const holdsFile = !/^(text|message)\//.test(mediaType) && mediaType !== "application/ics" && mediaType.includes("/")
    if (bodyFollows && holdsFile && encoding === "base64") {
      const index = this.nextIndex++
      part.setAside = { index, body: this.bodyFor(index) }
    }
  }

  private finish(part: Part) {
    if (part.state === "header") this.headersEnded(part, false)
    const own = this.boundaries.findLastIndex((boundary) => boundary.part === part)
    if (own >= 0) this.boundaries.splice(own, 1)
    this.finishChild(part)
    if (part.setAside !== undefined) {
      part.setAside.body.end()
      this.ended(part.setAside.index, part.setAside.body)
      part.setAside = undefined
      this.partEnded = true
    }
  }

  private finishChild(part: Part) {
    const child = part.openChild
    part.openChild = undefined
    if (child !== undefined) this.finish(child)
  }

  // The boundary bytes `start` to `end` are, if any: `--boundary`, `--` more for the last, then blanks only.
  private boundaryOf(bytes: Uint8Array, start: number, end: number): { readonly boundary: Boundary; readonly last: boolean } | undefined {
    const length = end - start
    if (this.boundaries.length === 0 || length <= 2 || bytes[start] !== DASH || bytes[start + 1] !== DASH) return undefined
    for (let i = this.boundaries.length - 1; i >= 0; i--) {
      const boundary = this.boundaries[i]!
      const value = boundary.value
      if (length < value.length + 2) continue
      let matches = true
      for (let j = 0; j < value.length && matches; j++) matches = bytes[start + 2 + j] === value[j]
      if (!matches) continue
      let after = start + value.length + 2
      const last = length >= value.length + 4 && bytes[after] === DASH && bytes[after + 1] === DASH
      if (last) after += 2
      let blank = true
      for (let j = after; j < end && blank; j++) blank = bytes[j] === 0x20 || bytes[j] === 0x09
      if (blank) return { boundary, last }
    }
    return undefined
  }

  /** Bytes `start` to `end` of `bytes`: one line, its line break included (the last line may have none). */
  private line(bytes: Uint8Array, start: number, end: number) {
    // As postal-mime reads lines: the line breaks at the end are not part of the content.
    let contentEnd = end
    while (contentEnd > start && (bytes[contentEnd - 1] === LF || bytes[contentEnd - 1] === CR)) contentEnd--
    const found = this.boundaryOf(bytes, start, contentEnd)
    if (found !== undefined) {
      const { boundary, last } = found
      if (last) {
        this.finish(boundary.part)
        this.current = boundary.part.parent ?? this.root
      } else {
        this.finishChild(boundary.part)
        this.current = this.part(boundary.part)
      }
      this.keep(bytes.subarray(start, end))
      return
    }
    const part = this.current
    if (part.state === "header") {
      if (contentEnd === start) {
        part.state = "body"
        this.headersEnded(part, true)
      } else {
        this.headerBytes += contentEnd - start
        if (this.headerBytes > MAX_HEADER_BYTES) throw new NotSkeletal("headers past postal-mime's limit")
        part.headerLines.push(headerText.decode(bytes.subarray(start, contentEnd)))
      }
      this.keep(bytes.subarray(start, end))
      return
    }
    if (part.setAside === undefined) {
      this.keep(bytes.subarray(start, end))
      return
    }
    if (!isBase64Text(bytes, start, contentEnd)) throw new NotSkeletal("a line that is not base64 in a file's base64 body")
    part.setAside.body.line(bytes, start, contentEnd)
  }

  /**
   * Walks `chunk` of the email from `from`, a line at a time (a line cut by the chunk's end waits
   * for the next chunk). Stops just after a line that ended a set-aside body, so the caller can
   * take that body before the walk goes on; returns where it stopped (`chunk.length` at the end).
   */
  feed(chunk: Uint8Array, from = 0): number {
    let start = from
    while (start < chunk.length) {
      const lf = chunk.indexOf(LF, start)
      if (lf < 0) {
        const size = (this.carry?.length ?? 0) + chunk.length - start
        if (size > MAX_LINE_BYTES) throw new NotSkeletal("a line longer than any mailer writes")
        const grown = new Uint8Array(size)
        if (this.carry !== undefined) grown.set(this.carry)
        grown.set(chunk.subarray(start), size - (chunk.length - start))
        this.carry = grown
        return chunk.length
      }
      if (this.carry === undefined) this.line(chunk, start, lf + 1)
      else {
        const whole = new Uint8Array(this.carry.length + lf + 1 - start)
        whole.set(this.carry)
        whole.set(chunk.subarray(start, lf + 1), this.carry.length)
        this.carry = undefined
        this.line(whole, 0, whole.length)
      }
      start = lf + 1
      if (this.partEnded) {
        this.partEnded = false
        return start
      }
    }
    return chunk.length
  }

  /** The end of the email: its last line, then every part still open ends. */
  end() {
    if (this.carry !== undefined) {
      const last = this.carry
      this.carry = undefined
      this.line(last, 0, last.length)
    }
    this.finish(this.root)
    this.partEnded = false
  }
}

/** The chunks of `source`, its reader released (and the rest cancelled) however the reading ends. */
async function* chunksOf(source: ReadableStream<Uint8Array>): AsyncGenerator<Uint8Array> {
  const reader = source.getReader()
  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (done) return
      yield value
    }
  } finally {
    await reader.cancel().catch(() => undefined)
  }
}

/** Bytes appended in place, the buffer growing by doubling. */
class Bytes {
  private buffer = new Uint8Array(64 * 1024)
  length = 0

  append(bytes: Uint8Array) {
    if (this.length + bytes.length > this.buffer.length) {
      const grown = new Uint8Array(Math.max(this.buffer.length * 2, this.length + bytes.length))
      grown.set(this.buffer.subarray(0, this.length))
      this.buffer = grown
    }
    this.buffer.set(bytes, this.length)
    this.length += bytes.length
  }

  result(): Uint8Array {
    return this.buffer.slice(0, this.length)
  }
}

/**
 * The first pass: the skeleton of the email streaming from `source`, with `marker(index)` (one
 * line of base64, its line break included) in place of each set-aside body. Throws `NotSkeletal`
 * when the email is not walked safely.
 */
export const skeletonOf = async (
  source: ReadableStream<Uint8Array>,
  marker: (index: number) => Uint8Array
): Promise<Skeleton> => {
  const kept = new Bytes()
  const parts: Array<SetAsidePart> = []
  const walk = new MimeWalk(
    (line) => kept.append(line),
    () => new Base64Body(undefined),
    (index, body) => {
      kept.append(marker(index))
      parts.push({ index, size: body.size })
    }
  )
  for await (const chunk of chunksOf(source)) {
    for (let at = 0; at < chunk.length;) at = walk.feed(chunk, at)
  }
  walk.end()
  return { bytes: kept.result(), parts }
}

/**
 * The second pass over the same bytes: each set-aside body decoded as soon as it is whole, one at
 * a time: the walk waits while the caller takes it. Every body is decoded into the same buffer,
 * as large as the largest (`parts` are the first pass's), so a body's bytes are only good until
 * the caller asks for the next one.
 */
export async function* setAsideBodies(
  source: ReadableStream<Uint8Array>,
  parts: ReadonlyArray<SetAsidePart>
): AsyncGenerator<{ readonly index: number; readonly bytes: Uint8Array }> {
  const buffer = new Uint8Array(Math.max(0, ...parts.map((part) => part.size)))
  let whole: { index: number; bytes: Uint8Array } | undefined
  const walk = new MimeWalk(
    () => undefined,
    (index) => {
      const size = parts[index]?.size
      if (size === undefined) throw new NotSkeletal("the second reading found a part the first did not")
      return new Base64Body(buffer.subarray(0, size))
    },
    (index, body) => {
      if (body.size !== parts[index]!.size) throw new NotSkeletal("a set-aside body decoded to fewer bytes than its first reading")
      whole = { index, bytes: buffer.subarray(0, body.size) }
    }
  )
  const taken = function*() {
    if (whole === undefined) return
    const next = whole
    whole = undefined
    yield next
  }
  for await (const chunk of chunksOf(source)) {
    for (let at = 0; at < chunk.length;) {
      at = walk.feed(chunk, at)
      yield* taken()
    }
  }
  walk.end()
  yield* taken()
}
