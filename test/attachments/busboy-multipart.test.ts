import { setFlagsFromString } from "node:v8"
import { runInNewContext } from "node:vm"
import { Effect, Exit, Option } from "effect"
import { describe, expect, it } from "vitest"
import { busboyMultipart, makeBusboyMultipart } from "../../adapters/node/BusboyMultipart.ts"
import { busboyMultipart as fromEntry } from "../../adapters/node/index.ts"
import { MultipartError, type MultipartFile } from "../../src/ports/MultipartReader.ts"

const encoder = new TextEncoder()
const bytesOf = (text: string) => encoder.encode(text)
const CRLF = "\r\n"

const concat = (parts: ReadonlyArray<Uint8Array>) => {
  const out = new Uint8Array(parts.reduce((sum, part) => sum + part.byteLength, 0))
  let at = 0
  for (const part of parts) {
    out.set(part, at)
    at += part.byteLength
  }
  return out
}

const BOUNDARY = "----omnichannel-test-boundary-7MA4YWxkTrZu0gW"
const FORM = `multipart/form-data; boundary=${BOUNDARY}`

interface Part {
  readonly headers: ReadonlyArray<string>
  readonly body: Uint8Array | string
}

/** A multipart body built by hand, byte for byte; `close: false` leaves off the closing delimiter. */
const multipart = (parts: ReadonlyArray<Part>, { boundary = BOUNDARY, close = true } = {}) =>
  concat([
    ...parts.flatMap((part) => [
      bytesOf(`--${boundary}${CRLF}${part.headers.join(CRLF)}${CRLF}${CRLF}`),
      typeof part.body === "string" ? bytesOf(part.body) : part.body,
      bytesOf(CRLF)
    ]),
    bytesOf(close ? `--${boundary}--${CRLF}` : "")
  ])

const filePart = (field: string, body: Uint8Array | string, disposition = `; filename="f.bin"`, type: string | null = "application/octet-stream"): Part => ({
  headers: [`Content-Disposition: form-data; name="${field}"${disposition}`, ...(type === null ? [] : [`Content-Type: ${type}`])],
  body
})
const textPart = (field: string, value: string): Part => ({ headers: [`Content-Disposition: form-data; name="${field}"`], body: value })

/** `bytes` as a web stream in chunks of `size` (small ones cross the boundary at every offset). */
const streamOf = (bytes: Uint8Array, size = 7) =>
  new ReadableStream<Uint8Array>({
    start(controller) {
      for (let at = 0; at < bytes.byteLength; at += size) controller.enqueue(bytes.slice(at, at + size))
      controller.close()
    }
  })

/**
 * A real body and Content-Type from the web FormData. Its bytes are taken whole first: cancelling
 * a `Response(FormData)` body halfway makes Node's bundled undici reject "ReadableStream is already
 * closed" unhandled, and the reader cancels its body once it has the wanted part.
 */
const formBody = async (form: FormData) => {
  const response = new Response(form)
  return { body: new Uint8Array(await response.arrayBuffer()), type: response.headers.get("content-type")! }
}

const readAll = async (stream: ReadableStream<Uint8Array>) => new Uint8Array(await new Response(stream).arrayBuffer())

/** Reads `stream` to its end or error: the bytes that came, and the error if any. */
const drain = async (stream: ReadableStream<Uint8Array>) => {
  const reader = stream.getReader()
  let count = 0
  const chunks: Array<Uint8Array> = []
  try {
    for (;;) {
      const next = await reader.read()
      if (next.done) return { bytes: concat(chunks), count, error: undefined }
      count += next.value.byteLength
      if (chunks.length < 64) chunks.push(next.value)
    }
  } catch (error) {
    return { bytes: concat(chunks), count, error }
  }
}

const read = (body: ReadableStream<Uint8Array> | Uint8Array, contentType: string, field = "file", maxBytes = 10_000_000) =>
  Effect.runPromise(busboyMultipart.file(body instanceof Uint8Array ? streamOf(body) : body, contentType, { field, maxBytes }))

const readSome = async (body: ReadableStream<Uint8Array> | Uint8Array, contentType: string, field = "file", maxBytes = 10_000_000): Promise<MultipartFile> => {
  const found = await read(body, contentType, field, maxBytes)
  if (Option.isNone(found)) throw new Error(`no part "${field}"`)
  return found.value
}

const failureOf = async (body: ReadableStream<Uint8Array> | Uint8Array, contentType: string, field = "file") => {
  const exit = await Effect.runPromiseExit(
    busboyMultipart.file(body instanceof Uint8Array ? streamOf(body) : body, contentType, { field, maxBytes: 1_000_000 })
  )
  if (Exit.isSuccess(exit)) throw new Error("expected a failure")
  const error = exit.cause.reasons.find((reason) => reason._tag === "Fail")
  if (error === undefined || error._tag !== "Fail") throw new Error(`expected a Fail, got ${String(exit.cause)}`)
  return error.error
}

/** Every byte value, and the sequences a boundary search could trip on. */
const binary = concat([
  Uint8Array.from({ length: 256 }, (_, i) => i),
  bytesOf(`\r\n--${BOUNDARY.slice(0, 20)}\r\n--\r\n\r\n-`),
  Uint8Array.from({ length: 5000 }, (_, i) => (i * 31 + 7) % 256)
])

/**
 * A source that makes `total` bytes lazily, 64 KiB per pull, and counts the pulls: `head` first
 * (part headers), then filler, then `tail` (the closing delimiter).
 */
const lazySource = (head: Uint8Array, total: number, tail: Uint8Array = new Uint8Array(0)) => {
  const CHUNK = 64 * 1024
  const state = { pulls: 0, sent: 0, cancelled: false }
  const stream = new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        state.pulls++
        if (state.sent === 0) {
          controller.enqueue(head.slice())
          state.sent += 1
          return
        }
        const left = total - (state.sent - 1)
        if (left <= 0) {
          if (tail.byteLength > 0) controller.enqueue(tail.slice())
          controller.close()
          state.sent += tail.byteLength
          return
        }
        const size = Math.min(CHUNK, left)
        const chunk = new Uint8Array(size).fill(0x61 + (state.pulls % 26))
        controller.enqueue(chunk)
        state.sent += size
      },
      cancel() {
        state.cancelled = true
      }
    },
    { highWaterMark: 0 }
  )
  return { stream, state }
}

const fileHead = (field = "file") =>
  bytesOf(`--${BOUNDARY}${CRLF}Content-Disposition: form-data; name="${field}"; filename="big.bin"${CRLF}Content-Type: application/octet-stream${CRLF}${CRLF}`)
const closing = bytesOf(`${CRLF}--${BOUNDARY}--${CRLF}`)

const waitFor = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

describe("busboyMultipart (MultipartReader on Node)", () => {
  it("is what omnichannel-core/node exports", () => {
    expect(fromEntry).toBe(busboyMultipart)
  })

  it("reads one file part whole and byte-exact, with a raw UTF-8 filename", async () => {
    const body = multipart([filePart("file", binary, `; filename="résumé 日本.pdf"`, "application/pdf")])
    const file = await readSome(body, FORM)
    expect(file.filename).toBe("résumé 日本.pdf")
    expect(file.contentType).toBe("application/pdf")
    expect(await readAll(file.bytes)).toEqual(binary)
  })

  it("decodes a filename*=UTF-8''… (RFC 5987) filename, also beside a plain fallback", async () => {
    const encoded = "r%C3%A9sum%C3%A9%20%E6%97%A5%E6%9C%AC.pdf"
    const alone = await readSome(multipart([filePart("file", binary, `; filename*=UTF-8''${encoded}`)]), FORM)
    expect(alone.filename).toBe("résumé 日本.pdf")
    expect(await readAll(alone.bytes)).toEqual(binary)
    // busboy alone would give "resume.pdf" here: its fast path stops after a plain filename.
    const both = await readSome(multipart([filePart("file", "x", `; filename="resume.pdf"; filename*=UTF-8''${encoded}`)]), FORM)
    expect(both.filename).toBe("résumé 日本.pdf")
    await readAll(both.bytes)
    const first = await readSome(multipart([filePart("file", "x", `; filename*=utf-8'en'${encoded}; filename="resume.pdf"`)]), FORM)
    expect(first.filename).toBe("résumé 日本.pdf")
    await readAll(first.bytes)
    const latin1 = await readSome(multipart([filePart("file", "x", `; filename*=ISO-8859-1''r%E9sum%E9.pdf`)]), FORM)
    expect(latin1.filename).toBe("résumé.pdf")
    await readAll(latin1.bytes)
    // A semicolon inside the quoted filename starts no parameter.
    const quoted = await readSome(multipart([filePart("file", "x", `; filename="a; filename*=UTF-8''evil.exe"`)]), FORM)
    expect(quoted.filename).toBe("a; filename*=UTF-8''evil.exe")
    await readAll(quoted.bytes)
  })

  it("passes the filename on as sent, path and all (making it safe is the caller's part)", async () => {
    const file = await readSome(multipart([filePart("file", "x", `; filename="../../etc/passwd"`)]), FORM)
    expect(file.filename).toBe("../../etc/passwd")
    await readAll(file.bytes)
  })

  it("reads a body made by the web FormData, skipping a text field before the file", async () => {
    const form = new FormData()
    form.append("note", "a text field that comes first")
    form.append("file", new Blob([binary], { type: "image/png" }), "fötö \"quoted\".png")
    const { body, type } = await formBody(form)
    const file = await readSome(body, type)
    // FormData writes a quote in a filename as %22 (the HTML form encoding); it is passed on as sent.
    expect(file.filename).toBe("fötö %22quoted%22.png")
    expect(file.contentType).toBe("image/png")
    expect(await readAll(file.bytes)).toEqual(binary)
  })

  it("skips a text field before the file in a hand-built body", async () => {
    const body = multipart([textPart("file_note", "hello"), textPart("other", "x".repeat(100_000)), filePart("file", binary)])
    expect(await readAll((await readSome(body, FORM)).bytes)).toEqual(binary)
  })

  it("finds the wanted field after another file part, and takes the first of two with its name", async () => {
    const form = new FormData()
    form.append("avatar", new Blob([new Uint8Array(300_000).fill(1)]), "avatar.png")
    form.append("file", new Blob([binary], { type: "text/csv" }), "data.csv")
    form.append("file", new Blob([bytesOf("second")]), "second.csv")
    const { body, type } = await formBody(form)
    const file = await readSome(body, type)
    expect(file.filename).toBe("data.csv")
    expect(file.contentType).toBe("text/csv")
    expect(await readAll(file.bytes)).toEqual(binary)
  })

  it("drains a part before the wanted one that is itself larger than maxBytes", async () => {
    const body = multipart([filePart("avatar", new Uint8Array(300_000).fill(9)), filePart("file", binary)])
    const file = await readSome(streamOf(body, 8192), FORM, "file", binary.byteLength)
    expect(await readAll(file.bytes)).toEqual(binary)
  })

  it("gives filename null for a part without one or with an empty one, and contentType null when none is declared", async () => {
    const bare = await readSome(multipart([filePart("file", binary, "", null)]), FORM)
    expect(bare.filename).toBeNull()
    expect(bare.contentType).toBeNull()
    expect(await readAll(bare.bytes)).toEqual(binary)

    const empty = await readSome(multipart([filePart("file", "abc", `; filename=""`, "text/plain")]), FORM)
    expect(empty.filename).toBeNull()
    expect(empty.contentType).toBe("text/plain")
    expect(await readAll(empty.bytes)).toEqual(bytesOf("abc"))

    // A Content-Type with parameters is reported as its media type, lower-cased.
    const typed = await readSome(multipart([filePart("file", "abc", `; filename="a.txt"`, "Text/Plain; charset=utf-8")]), FORM)
    expect(typed.contentType).toBe("text/plain")
    await readAll(typed.bytes)
  })

  it("reads an empty file part as an empty stream", async () => {
    const file = await readSome(multipart([filePart("file", "")]), FORM)
    expect(await readAll(file.bytes)).toEqual(new Uint8Array(0))
  })

  it("is none when the body ends without the field", async () => {
    const body = multipart([textPart("note", "hi"), filePart("attachment", binary), filePart("files", "x")])
    expect(await read(body, FORM)).toEqual(Option.none())
    expect(await read(multipart([]), FORM)).toEqual(Option.none())
    const form = new FormData()
    form.append("note", "only text")
    const { body: onlyText, type } = await formBody(form)
    expect(await read(onlyText, type)).toEqual(Option.none())
  })

  it("fails with MultipartError for a body that is not multipart/form-data", async () => {
    for (const type of ["application/json", "application/x-www-form-urlencoded", "multipart/mixed; boundary=x", "text/plain", ""]) {
      const error = await failureOf(bytesOf("a=b"), type)
      expect(error).toBeInstanceOf(MultipartError)
      expect(error.message).toContain("not a multipart/form-data body")
    }
  })

  it("fails with MultipartError for multipart/form-data without a boundary", async () => {
    const error = await failureOf(multipart([filePart("file", "x")]), "multipart/form-data")
    expect(error).toBeInstanceOf(MultipartError)
    expect(error.message).toContain("boundary")
    for (const type of ["multipart/form-data; charset=utf-8", "multipart/form-data; boundary=", `multipart/form-data; boundary=""`]) {
      expect((await failureOf(multipart([filePart("file", "x")]), type)).message).toContain("without a boundary")
    }
    // A quoted boundary is a boundary.
    const file = await readSome(multipart([filePart("file", binary)]), `multipart/form-data; boundary="${BOUNDARY}"`)
    expect(await readAll(file.bytes)).toEqual(binary)
  })

  it("cancels a refused body", async () => {
    let cancelled = 0
    const body = () =>
      new ReadableStream<Uint8Array>({
        cancel() {
          cancelled++
        }
      })
    await failureOf(body(), "application/json")
    await failureOf(body(), "multipart/form-data")
    expect(cancelled).toBe(2)
  })

  it("fails with MultipartError for a body cut off before the file's data, or a body that is no multipart at all", async () => {
    const whole = multipart([textPart("note", "hello"), filePart("file", binary)])
    const headerAt = new TextDecoder("latin1").decode(whole).indexOf(`name="file"`)
    for (const cut of [0, 10, 60, headerAt + 5]) {
      const error = await failureOf(whole.slice(0, cut), FORM)
      expect(error).toBeInstanceOf(MultipartError)
      expect(error.message).toMatch(/cut short/)
    }
    // A body with some other boundary: no delimiter is ever found.
    expect(await failureOf(multipart([filePart("file", "x")], { boundary: "another" }), FORM)).toBeInstanceOf(MultipartError)
  })

  it("fails with MultipartError when the body is cut inside a part before the wanted one", async () => {
    const whole = multipart([filePart("other", binary), filePart("file", "x")])
    const error = await failureOf(whole.slice(0, 1000), FORM)
    expect(error).toBeInstanceOf(MultipartError)
  })

  it("errors the part's stream (after the bytes that came) when the body is cut inside the wanted file", async () => {
    const whole = multipart([filePart("file", binary)])
    // The Effect succeeds once the part's headers are in; the cut shows as the stream's error.
    const file = await readSome(whole.slice(0, whole.byteLength - 2000), FORM)
    const { bytes, error } = await drain(file.bytes)
    expect(error).toBeInstanceOf(MultipartError)
    expect((error as MultipartError).message).toMatch(/cut short/)
    expect(bytes.byteLength).toBeLessThan(binary.byteLength)
    expect(bytes).toEqual(binary.slice(0, bytes.byteLength))
  })

  it("errors the part's stream when the request body itself fails", async () => {
    const head = multipart([filePart("file", binary)]).slice(0, 3000)
    let sent = false
    // Pulled only when read (an error while `head` still sat in the queue would discard it).
    const failing = new ReadableStream<Uint8Array>(
      {
        pull(controller) {
          if (sent) controller.error(new Error("connection reset"))
          else controller.enqueue(head)
          sent = true
        }
      },
      { highWaterMark: 0 }
    )
    const file = await readSome(failing, FORM)
    const { error } = await drain(file.bytes)
    expect(error).toBeInstanceOf(MultipartError)
    expect((error as MultipartError).message).toContain("connection reset")
  })

  it("reads a file of exactly maxBytes whole; one byte more makes the stream error after maxBytes + 1 bytes", async () => {
    const maxBytes = 100_000
    const exact = new Uint8Array(maxBytes).map((_, i) => i % 251)
    const ok = await readSome(streamOf(multipart([filePart("file", exact)]), 4096), FORM, "file", maxBytes)
    expect(await readAll(ok.bytes)).toEqual(exact)

    for (const size of [maxBytes + 1, maxBytes + 2, maxBytes + 70_000, 3 * maxBytes]) {
      const over = new Uint8Array(size).map((_, i) => i % 251)
      const file = await readSome(streamOf(multipart([filePart("file", over)]), 4096), FORM, "file", maxBytes)
      const { bytes, count, error } = await drain(file.bytes)
      expect(error).toBeInstanceOf(MultipartError)
      expect((error as MultipartError).message).toContain(`larger than ${maxBytes} bytes`)
      // A reader counting bytes sees the excess itself before the error.
      expect(count).toBe(maxBytes + 1)
      expect(bytes).toEqual(over.slice(0, bytes.byteLength))
    }

    const zero = await readSome(multipart([filePart("file", "x")]), FORM, "file", 0)
    expect((await drain(zero.bytes)).error).toBeInstanceOf(MultipartError)
  })

  it("stops reading the request once the wanted part passed maxBytes", async () => {
    const { stream, state } = lazySource(fileHead(), 100 * 1024 * 1024, closing)
    const file = await readSome(stream, FORM, "file", 1024 * 1024)
    const { count, error } = await drain(file.bytes)
    expect(error).toBeInstanceOf(MultipartError)
    expect(count).toBe(1024 * 1024 + 1)
    await waitFor(50)
    expect(state.cancelled).toBe(true)
    expect(state.sent).toBeLessThan(4 * 1024 * 1024)
  })

  it("cancelling the part's stream early stops pulling the request body", async () => {
    const { stream, state } = lazySource(fileHead(), 100 * 1024 * 1024, closing)
    const file = await readSome(stream, FORM)
    const reader = file.bytes.getReader()
    const first = await reader.read()
    expect(first.done).toBe(false)
    // Nobody reads: the source waits too (only what the buffers hold is pulled).
    await waitFor(50)
    const pullsWhileIdle = state.pulls
    expect(pullsWhileIdle).toBeLessThan(16)
    await reader.cancel("refused")
    await waitFor(50)
    expect(state.cancelled).toBe(true)
    expect(state.pulls).toBe(pullsWhileIdle)
    expect(state.sent).toBeLessThan(2 * 1024 * 1024)
  })

  it("does not read parts after the wanted one", async () => {
    const head = multipart([filePart("file", binary)], { close: false })
    const next = bytesOf(`--${BOUNDARY}${CRLF}Content-Disposition: form-data; name="later"; filename="later.bin"${CRLF}${CRLF}`)
    const { stream, state } = lazySource(concat([head, next]), 100 * 1024 * 1024, closing)
    const file = await readSome(stream, FORM)
    expect(await readAll(file.bytes)).toEqual(binary)
    await waitFor(50)
    expect(state.cancelled).toBe(true)
    expect(state.sent).toBeLessThan(2 * 1024 * 1024)
  })

  it("cancels the request body when interrupted before the part arrives", async () => {
    let cancelled = false
    const stalled = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(bytesOf(`--${BOUNDARY}${CRLF}Content-Disposition: form-data; name="note"${CRLF}${CRLF}hello`))
      },
      cancel() {
        cancelled = true
      }
    })
    const result = await Effect.runPromise(
      Effect.timeoutOption(busboyMultipart.file(stalled, FORM, { field: "file", maxBytes: 10 }), "30 millis")
    )
    expect(result).toEqual(Option.none())
    await waitFor(20)
    expect(cancelled).toBe(true)
  })

  it("reads a 60 MB upload through without holding it in memory", async () => {
    setFlagsFromString("--expose-gc")
    const gc = runInNewContext("gc") as () => void
    const measure = () => {
      gc()
      const usage = process.memoryUsage()
      return usage.heapUsed + usage.arrayBuffers
    }
    const total = 60 * 1024 * 1024
    const { stream } = lazySource(fileHead(), total, closing)
    const before = measure()
    let peak = 0
    const file = await readSome(stream, FORM, "file", total)
    const reader = file.bytes.getReader()
    let count = 0
    let chunks = 0
    for (;;) {
      const next = await reader.read()
      if (next.done) break
      count += next.value.byteLength
      if (++chunks % 64 === 0) peak = Math.max(peak, measure() - before)
    }
    expect(count).toBe(total)
    expect(peak).toBeLessThan(20 * 1024 * 1024)
  })

  it("takes its buffer size from makeBusboyMultipart's options", async () => {
    const reader = makeBusboyMultipart({ partHighWaterMark: 1024 })
    const found = await Effect.runPromise(reader.file(streamOf(multipart([filePart("file", binary)]), 500), FORM, { field: "file", maxBytes: 1e6 }))
    expect(await readAll(Option.getOrThrow(found).bytes)).toEqual(binary)
  })
})
