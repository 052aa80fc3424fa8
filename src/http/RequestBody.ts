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

const readLimited = (request: Request, limit: number): Effect.Effect<Uint8Array, PayloadTooLarge | BadRequest> =>
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

/**
 * Reads a JSON body of at most `limit` bytes. Answers 415 for another content type, 413 past the
 * limit, and 422 (`json_invalid`) for an empty body, bad UTF-8 or malformed JSON.
 */
export const readJsonBody = (
  request: Request,
  limit: number
): Effect.Effect<unknown, PayloadTooLarge | UnsupportedMediaType | BadRequest | InvalidRequest> =>
  Effect.gen(function*() {
    const contentType = request.headers.get("content-type") ?? ""
    if (!/^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i.test(contentType)) return yield* Effect.fail(new UnsupportedMediaType())
    const bytes = yield* readLimited(request, limit)
    let text: string
    try {
      text = new TextDecoder("utf-8", { fatal: true }).decode(bytes)
    } catch {
      return yield* InvalidRequest.single(["body"], "The body is not valid UTF-8", "json_invalid")
    }
    if (text.trim() === "") return yield* InvalidRequest.single(["body"], "A JSON body is required", "missing")
    try {
      return JSON.parse(text) as unknown
    } catch (e) {
      return yield* InvalidRequest.single(
        ["body"],
        `Malformed JSON: ${e instanceof Error ? e.message : "parse error"}`,
        "json_invalid"
      )
    }
  })
