import { Option, Schema } from "effect"
import { operatorErrorKindOf } from "../../src/kernel/OperatorErrorKind.ts"
import { ChatPlatformError, type ChatPlatformErrorKind } from "../../src/ports/ChatPlatform.ts"

/** The port's kind for the operator's error `code` (`operatorErrorKindOf`: the one table of codes). */
export const classifyGraphError = operatorErrorKindOf

const text = Schema.OptionFromOptionalNullOr(Schema.String)
const number = Schema.OptionFromOptionalNullOr(Schema.Finite)

/** The operator's error object, every field optional and possibly null; extra fields ignored. */
const GraphErrorBody = Schema.Struct({
  error: Schema.Struct({
    message: text,
    code: number,
    error_subcode: number,
    error_user_title: text,
    error_user_msg: text,
    fbtrace_id: text,
    is_transient: Schema.OptionFromOptionalNullOr(Schema.Boolean),
    error_data: Schema.OptionFromOptionalNullOr(Schema.Struct({ details: text }))
  })
})
type GraphErrorBody = typeof GraphErrorBody.Type

const decodeErrorBody = Schema.decodeUnknownOption(GraphErrorBody)

/** The JSON in `body`, if it is JSON at all. */
export const parseJson = (body: Uint8Array): Option.Option<unknown> => {
  try {
    return Option.some(JSON.parse(new TextDecoder().decode(body)))
  } catch {
    return Option.none()
  }
}

/** The operator's error object in `body`, when it holds one. */
export const readGraphError = (body: Uint8Array): Option.Option<GraphErrorBody["error"]> =>
  parseJson(body).pipe(Option.flatMap(decodeErrorBody), Option.map(({ error }) => error))

/** The start of a body that was not the operator's error object, for a log line. */
const excerpt = (body: Uint8Array): string => {
  const shown = new TextDecoder().decode(body.subarray(0, 200)).replace(/\s+/g, " ").trim()
  return shown === "" ? "an empty body" : `"${shown}${body.length > 200 ? "…" : ""}"`
}

/**
 * The error an answer of `status` with `body` stands for: the operator's error object read field by
 * field, or, without one, `transient` for a 5xx, `rate_limited` for a 429 and `other` for the rest.
 * Never throws, whatever the body holds.
 */
export const graphErrorFrom = (status: number, body: Uint8Array): ChatPlatformError => {
  const found = readGraphError(body)
  if (Option.isSome(found)) {
    const error = found.value
    const code = Option.getOrNull(error.code)
    const subcode = Option.getOrNull(error.error_subcode)
    const details = error.error_data.pipe(Option.flatMap((data) => data.details))
    const message = Option.getOrElse(
      Option.orElse(error.message.pipe(Option.filter((m) => m !== "")), () => details),
      () => `the operator answered ${status} with an error object without a message`
    )
    return new ChatPlatformError({
      kind: classifyGraphError(code, subcode, Option.getOrElse(error.is_transient, () => false)),
      code,
      subcode,
      message,
      userTitle: Option.getOrNull(error.error_user_title),
      userMessage: Option.getOrNull(error.error_user_msg),
      fbtraceId: Option.getOrNull(error.fbtrace_id),
      httpStatus: status
    })
  }
  return new ChatPlatformError({
    kind: status >= 500 ? "transient" : status === 429 ? "rate_limited" : "other",
    code: null,
    subcode: null,
    message: `the operator answered ${status} without its error object: ${excerpt(body)}`,
    userTitle: null,
    userMessage: null,
    fbtraceId: null,
    httpStatus: status
  })
}

/**
 * A failure of the request itself, before any answer could be read; `unanswered` when the request
 * had left and no answer came (the operator may have acted on it).
 */
export const requestFailed = (
  kind: ChatPlatformErrorKind,
  message: string,
  httpStatus: number | null = null,
  unanswered = false
): ChatPlatformError =>
  new ChatPlatformError({
    kind,
    code: null,
    subcode: null,
    message,
    userTitle: null,
    userMessage: null,
    fbtraceId: null,
    httpStatus,
    ...(unanswered ? { unanswered: true } : {})
  })
