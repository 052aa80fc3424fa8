import { EventEmitter } from "node:events"
import { Readable } from "node:stream"
import type { ReadableStream as NodeReadableStream } from "node:stream/web"
import { Busboy, type BusboyFileStream, type BusboyInstance } from "@fastify/busboy"
import { Effect, Option } from "effect"
import { MultipartError, type MultipartFile, MultipartReader } from "../../src/ports/MultipartReader.ts"

export interface BusboyMultipartOptions {
  /** Bytes of the wanted part held in memory ahead of its reader (busboy's `fileHwm`); 64 KiB by default. */
  readonly partHighWaterMark?: number
  /** Most bytes of one part's header block (busboy's `limits.headerSize`); 80 KiB by default. */
  readonly maxHeaderBytes?: number
}

const MULTIPART_FORM_DATA = /^\s*multipart\/form-data\s*(;|$)/i

const failure = (message: string) => new MultipartError({ message })

const describe = (error: unknown) => (error instanceof Error ? error.message : String(error))

/** busboy's own words for a broken body, said in ours. */
const bodyError = (error: unknown): MultipartError => {
  if (error instanceof MultipartError) return error
  const text = describe(error)
  if (/Boundary not found/i.test(text)) return failure("multipart/form-data without a boundary parameter")
  if (/Unexpected end|terminated early/i.test(text)) return failure(`multipart body cut short: ${text}`)
  return failure(`malformed multipart body: ${text}`)
}

/** Raw part headers as the parser (Dicer) reads them: lower-cased names, each with its values. */
type PartHeader = Record<string, ReadonlyArray<string> | undefined>

/**
 * The raw header block of the part being announced, which busboy does not pass on: busboy reports
 * `text/plain` (RFC 7578's default) for a part that declares no Content-Type, and drops a `filename*`
 * after a plain `filename`. Its parser (`_parser.parser`, a Dicer) is listened to first. Without it
 * (a busboy built otherwise) every type counts as declared and busboy's filename is taken.
 */
const watchPartHeaders = (busboy: BusboyInstance): (() => PartHeader | undefined) => {
  let current: PartHeader | undefined
  const dicer = (busboy as unknown as { _parser?: { parser?: unknown } })._parser?.parser
  if (dicer instanceof EventEmitter) {
    dicer.prependListener("part", (part: EventEmitter) => {
      current = undefined
      part.prependListener("header", (header: PartHeader) => {
        current = header
      })
    })
  }
  return () => current
}

/** `value` split at the semicolons outside quoted strings. */
const parameters = (value: string): Array<string> => {
  const out: Array<string> = []
  let current = ""
  let quoted = false
  let escaped = false
  for (const char of value) {
    if (escaped) escaped = false
    else if (quoted && char === "\\") escaped = true
    else if (char === '"') quoted = !quoted
    else if (char === ";" && !quoted) {
      out.push(current)
      current = ""
      continue
    }
    current += char
  }
  out.push(current)
  return out
}

const EXTENDED_FILENAME = /^\s*filename\*\s*=\s*"?([^']*)'[^']*'(.*?)"?\s*$/is

/**
 * The part's `filename*` (RFC 8187: `charset'language'%XX…`) decoded, or undefined when it has none
 * or it cannot be decoded. busboy's fast path reads `form-data; name="…"; filename="…"` and stops
 * there, so the `filename*` that clients put after a plain fallback (the order RFC 6266 advises)
 * would be lost without this.
 */
const extendedFilename = (header: PartHeader | undefined): string | undefined => {
  const disposition = header?.["content-disposition"]?.[0]
  if (disposition === undefined) return undefined
  for (const parameter of parameters(disposition)) {
    const match = EXTENDED_FILENAME.exec(parameter)
    if (match === null) continue
    // The header block was read as latin1: one character per byte.
    const encoded = match[2]!
    const bytes: Array<number> = []
    for (let at = 0; at < encoded.length; at++) {
      const hex = encoded[at] === "%" ? encoded.slice(at + 1, at + 3) : ""
      if (/^[0-9a-f]{2}$/i.test(hex)) {
        bytes.push(Number.parseInt(hex, 16))
        at += 2
      } else bytes.push(encoded.charCodeAt(at) & 0xff)
    }
    try {
      return new TextDecoder(match[1]!.trim() || "utf-8", { fatal: true }).decode(Uint8Array.from(bytes))
    } catch {
      return undefined
    }
  }
  return undefined
}

/** The `boundary` parameter of a Content-Type, unquoted; undefined when absent or empty. */
const boundaryOf = (contentType: string): string | undefined => {
  for (const parameter of parameters(contentType).slice(1)) {
    const match = /^\s*boundary\s*=\s*(.*?)\s*$/is.exec(parameter)
    if (match === null) continue
    const value = match[1]!.replace(/^"(.*)"$/s, "$1")
    return value === "" ? undefined : value
  }
  return undefined
}

const declaresContentType = (header: PartHeader | undefined): boolean => {
  if (header === undefined) return true
  const value = header["content-type"]?.[0]
  return value !== undefined && value.split(";")[0]!.trim() !== ""
}

/**
 * The wanted part's bytes as a pull-driven web stream over busboy's file stream: each read takes what
 * busboy has buffered (busboy and the request wait while nobody reads). Once more than `maxBytes` were
 * handed out it errors, after handing them out, so a reader counting bytes sees the excess itself.
 */
const partStream = (
  file: BusboyFileStream,
  field: string,
  maxBytes: number,
  stopReading: () => void
): { readonly stream: ReadableStream<Uint8Array>; readonly fail: (error: MultipartError) => void } => {
  let delivered = 0
  let broken: MultipartError | undefined
  let tooLarge = false
  let ended = false
  let wake: (() => void) | undefined
  const notify = () => {
    const resume = wake
    wake = undefined
    resume?.()
  }
  const fail = (error: MultipartError) => {
    broken ??= error
    notify()
  }
  const tooLargeError = () => failure(`part "${field}" is larger than ${maxBytes} bytes`)
  file.on("readable", notify)
  file.on("end", () => {
    ended = true
    notify()
  })
  // Errors reach this stream through `fail` (busboy's own 'error' says more); this keeps a part
  // error emitted on the file stream from being thrown as unhandled.
  file.on("error", (error) => fail(bodyError(error)))
  file.on("limit", () => {
    // busboy drops the rest of the part but would go on reading the request: stop it now.
    tooLarge = true
    stopReading()
    notify()
  })

  const stream = new ReadableStream<Uint8Array>(
    {
      pull: async (controller) => {
        for (;;) {
          const chunk = file.read() as Buffer | null
          if (chunk !== null && chunk.byteLength > 0) {
            delivered += chunk.byteLength
            controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength))
            if (delivered > maxBytes && !tooLarge) {
              tooLarge = true
              stopReading()
            }
            return
          }
          if (broken !== undefined) {
            controller.error(broken)
            file.destroy()
            return
          }
          if (tooLarge || delivered > maxBytes) {
            controller.error(tooLargeError())
            file.destroy()
            return
          }
          if (ended) {
            controller.close()
            stopReading()
            return
          }
          await new Promise<void>((resolve) => {
            wake = resolve
          })
        }
      },
      cancel: () => {
        stopReading()
        file.destroy()
      }
    },
    { highWaterMark: 0 }
  )
  return { stream, fail }
}

/**
 * `MultipartReader` on busboy (`@fastify/busboy`): the request body is parsed as it arrives, parts
 * before the wanted one are drained unread, and reading stops at the wanted part's end, at its cap,
 * or when its stream is cancelled (the source is cancelled then, so a refused upload is not read on).
 */
export const makeBusboyMultipart = (options: BusboyMultipartOptions = {}): MultipartReader["Service"] =>
  MultipartReader.of({
    file: (body, contentType, { field, maxBytes }) => {
      if (!(maxBytes >= 0)) return Effect.die(new RangeError(`maxBytes must be a number ≥ 0, got ${maxBytes}`))
      const refuse = (error: MultipartError) =>
        Effect.andThen(
          Effect.promise(() => body.cancel().catch(() => undefined)),
          Effect.fail(error)
        )
      if (!MULTIPART_FORM_DATA.test(contentType)) {
        return refuse(failure(`not a multipart/form-data body (Content-Type: ${JSON.stringify(contentType)})`))
      }
      if (boundaryOf(contentType) === undefined) return refuse(failure("multipart/form-data without a boundary parameter"))
      return Effect.callback<Option.Option<MultipartFile>, MultipartError>((resume) => {
        let busboy: BusboyInstance
        try {
          busboy = Busboy({
            headers: { "content-type": contentType },
            // Every part comes as a stream, so the wanted one is a file with or without a filename and
            // nothing else is ever gathered into a string; filenames are passed on as sent.
            isPartAFile: () => true,
            preservePath: true,
            ...(options.partHighWaterMark === undefined ? {} : { fileHwm: options.partHighWaterMark }),
            limits: {
              // busboy signals 'limit' only once *more* than fileSize arrived, and then keeps fileSize
              // bytes: so the part's stream carries at most maxBytes + 1 bytes before it errors.
              fileSize: maxBytes + 1,
              ...(options.maxHeaderBytes === undefined ? {} : { headerSize: options.maxHeaderBytes })
            }
          })
        } catch (error) {
          void body.cancel().catch(() => undefined)
          resume(Effect.fail(bodyError(error)))
          return
        }
        let source: Readable
        try {
          source = Readable.fromWeb(body as NodeReadableStream<Uint8Array>)
        } catch (error) {
          resume(Effect.fail(failure(`the request body cannot be read: ${describe(error)}`)))
          return
        }

        let settled = false
        let stopped = false
        let wanted: ReturnType<typeof partStream> | undefined
        const headerOfPart = watchPartHeaders(busboy)

        const stopReading = () => {
          if (stopped) return
          stopped = true
          source.unpipe(busboy)
          source.destroy()
          busboy.destroy()
        }
        const settle = (effect: Effect.Effect<Option.Option<MultipartFile>, MultipartError>) => {
          if (settled) return
          settled = true
          resume(effect)
        }
        const broken = (error: MultipartError) => {
          if (stopped) return
          if (wanted !== undefined) wanted.fail(error)
          else settle(Effect.fail(error))
          stopReading()
        }

        busboy.on("file", (name, file, filename, _encoding, mimeType) => {
          if (settled || name !== field) {
            // A part before the wanted one (drained unread), or one after it: reading stops there.
            file.on("error", () => undefined)
            file.resume()
            if (settled) stopReading()
            return
          }
          const header = headerOfPart()
          const sentName = extendedFilename(header) ?? filename
          wanted = partStream(file, field, maxBytes, stopReading)
          settle(
            Effect.succeed(
              Option.some<MultipartFile>({
                filename: sentName === undefined || sentName === "" ? null : sentName,
                contentType: declaresContentType(header) && mimeType ? mimeType : null,
                bytes: wanted.stream
              })
            )
          )
        })
        busboy.on("error", (error) => broken(bodyError(error)))
        busboy.on("finish", () => {
          if (!settled) settle(Effect.succeed(Option.none()))
        })
        source.on("error", (error) => broken(failure(`the request body failed: ${describe(error)}`)))
        source.pipe(busboy)

        return Effect.sync(() => {
          if (!settled) {
            settled = true
            stopReading()
          }
        })
      })
    }
  })

/** `MultipartReader` on busboy with its default buffers. */
export const busboyMultipart: MultipartReader["Service"] = makeBusboyMultipart()
