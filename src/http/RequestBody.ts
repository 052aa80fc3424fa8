import { Effect } from "effect"
import { BadRequest, InvalidRequest } from "../kernel/ApiError.ts"

/** Default largest JSON body accepted, in bytes. */
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024

/** The body was larger than the limit (answered 413). */
export class PayloadTooLarge {
  readonly _tag = "PayloadTooLarge"
  constructor(readonly limit: number) {}
}

/** The body was not JSON (answered 415). */
export class UnsupportedMediaType {
  readonly _tag = "UnsupportedMediaType"
}

/**
 * Reads a body of at most `limit` bytes; past it (by Content-Length, or at the first byte read past
 * it) fails with PayloadTooLarge and cancels the rest of the body, so no more is read or held.
 */
export const readLimited = (request: Request, limit: number): Effect.Effect<Uint8Array, PayloadTooLarge | BadRequest> =>
  Effect.tryPromise({
    try: async () => {
      const declared = Number(request.headers.get("content-length") ?? "NaN")
      if (Number.isFinite(declared) && declared > limit) throw new PayloadTooLarge(limit)
      if (request.body === null) return new Uint8Array(0)
      const chunks: Array<Uint8Array> = []
      let size = 0
      const reader = request.body.getReader()
      for (;;) {
        const { done, value } = await reader.read()
        if (done) break
        size += value.byteLength
        if (size > limit) {
          await reader.cancel()
          throw new PayloadTooLarge(limit)
        }
        chunks.push(value)
      }
      const out = new Uint8Array(size)
      let offset = 0
      for (const chunk of chunks) {
        out.set(chunk, offset)
        offset += chunk.byteLength
      }
      return out
    },
    catch: (e) => e instanceof PayloadTooLarge ? e : new BadRequest({ message: "The request body could not be read" })
  })

/** A request body passed on as it arrives (never gathered), counted and cut off past a limit. */
export interface LimitedBody {
  /** The body's bytes; errors at the first byte past the limit, cancelling the rest of the body. */
  readonly stream: ReadableStream<Uint8Array>
  /** Why `stream` errored, once it has: past the limit, or the request's body broke off. */
  readonly failure: () => PayloadTooLarge | BadRequest | undefined
}

/**
 * The body of `request` as a stream of at most `limit` bytes, for a reader that writes it out as
 * it arrives; fails at once with PayloadTooLarge when Content-Length says more.
 */
export const limitedBody = (request: Request, limit: number): Effect.Effect<LimitedBody, PayloadTooLarge> =>
  Effect.suspend(() => {
    const declared = Number(request.headers.get("content-length") ?? "NaN")
    if (Number.isFinite(declared) && declared > limit) return Effect.fail(new PayloadTooLarge(limit))
    let failure: PayloadTooLarge | BadRequest | undefined
    let size = 0
    const reader = request.body?.getReader()
    const stream = new ReadableStream<Uint8Array>({
      pull: async (controller) => {
        if (reader === undefined) return controller.close()
        let next: ReadableStreamReadResult<Uint8Array>
        try {
          next = await reader.read()
        } catch (error) {
          failure = new BadRequest({ message: "The request body could not be read" })
          return controller.error(error)
        }
        if (next.done) return controller.close()
        size += next.value.byteLength
        if (size > limit) {
          failure = new PayloadTooLarge(limit)
          controller.error(failure)
          await reader.cancel().catch(() => undefined)
          return
        }
        controller.enqueue(next.value)
      },
      cancel: (reason) => reader?.cancel(reason)
    })
    return Effect.succeed({ stream, failure: () => failure })
  })

// PostgreSQL text cannot hold U+0000, and an unpaired surrogate would be stored as U+FFFD.
const UNSTORABLE_TEXT = /\u0000|\p{Cs}/u

interface Visit {
  readonly node: unknown
  readonly key: string | number | undefined
  readonly parent: Visit | undefined
}

const locOf = (visit: Visit): Array<string | number> => {
  const loc: Array<string | number> = []
  for (let at: Visit | undefined = visit; at?.key !== undefined; at = at.parent) loc.unshift(at.key)
  return loc
}

/**
 * Where in `value` a string (or object key) holds text no database stores faithfully, if anywhere.
 * Iterative, with paths built only on a hit, because a parsed body may nest deeper than the stack.
 */
const findUnstorableText = (value: unknown): Array<string | number> | undefined => {
  const pending: Array<Visit> = [{ node: value, key: undefined, parent: undefined }]
  for (let visit = pending.pop(); visit !== undefined; visit = pending.pop()) {
    const { node } = visit
    if (typeof node === "string") {
      if (UNSTORABLE_TEXT.test(node)) return locOf(visit)
    } else if (Array.isArray(node)) {
      node.forEach((item, i) => pending.push({ node: item, key: i, parent: visit }))
    } else if (typeof node === "object" && node !== null) {
      for (const [key, item] of Object.entries(node)) {
        if (UNSTORABLE_TEXT.test(key)) return [...locOf(visit), key]
        pending.push({ node: item, key, parent: visit })
      }
    }
  }
  return undefined
}

const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i

/**
 * Reads a JSON body of at most `limit` bytes. Answers 415 for another content type, 413 past the
 * limit, and 422 for an empty body, bad UTF-8 or malformed JSON (`json_invalid`), and for a string
 * holding U+0000 or an unpaired surrogate (`string_unicode`). With `optional` (a body schema that
 * requires no field), a request without a body (no bytes, or only white space sent as JSON) reads
 * as `{}` whatever its content type; a body that is there still has to be JSON.
 */
export const readJsonBody = (
  request: Request,
  limit: number,
  options: { readonly optional: boolean } = { optional: false }
): Effect.Effect<unknown, PayloadTooLarge | UnsupportedMediaType | BadRequest | InvalidRequest> =>
  Effect.gen(function*() {
    const isJson = JSON_TYPE.test(request.headers.get("content-type") ?? "")
    if (!isJson && !options.optional) return yield* Effect.fail(new UnsupportedMediaType())
    const bytes = yield* readLimited(request, limit)
    if (!isJson) return bytes.byteLength === 0 ? {} : yield* Effect.fail(new UnsupportedMediaType())
    let text: string
    try {
      text = new TextDecoder("utf-8", { fatal: true }).decode(bytes)
    } catch {
      return yield* InvalidRequest.single(["body"], "The body is not valid UTF-8", "json_invalid")
    }
    if (text.trim() === "") {
      return options.optional ? {} : yield* InvalidRequest.single(["body"], "A JSON body is required", "missing")
    }
    let parsed: unknown
    try {
      parsed = JSON.parse(text)
    } catch (e) {
      return yield* InvalidRequest.single(
        ["body"],
        `Malformed JSON: ${e instanceof Error ? e.message : "parse error"}`,
        "json_invalid"
      )
    }
    const unstorable = findUnstorableText(parsed)
    if (unstorable !== undefined) {
      return yield* InvalidRequest.single(
        ["body", ...unstorable],
        "Text may not contain the NUL character (U+0000) or an unpaired surrogate",
        "string_unicode"
      )
    }
    return parsed
  })
