import { type ApiError, errorBody } from "../kernel/ApiError.ts"
import type { StorageError } from "../ports/StorageError.ts"

/** A status and JSON body to answer with, plus any headers. */
export interface ErrorResponse {
  readonly status: number
  readonly body: unknown
  readonly headers?: Readonly<Record<string, string>>
}

/** The one table from expected failures to HTTP answers. */
export const toErrorResponse = (error: ApiError | StorageError): ErrorResponse => {
  switch (error._tag) {
    case "Unauthenticated":
      return { status: 401, body: errorBody("unauthenticated", error.message), headers: { "www-authenticate": "Bearer" } }
    case "MissingScope":
      // The spec shows a missing scope as a plain string.
      return { status: 403, body: { detail: `Missing required permission(s): ${error.scopes.join(" or ")}` } }
    case "Forbidden":
      return { status: 403, body: errorBody("forbidden", error.message) }
    case "NotFound":
      return { status: 404, body: error.plain === true ? { detail: error.message } : errorBody("not_found", error.message) }
    case "Conflict":
      return { status: 409, body: errorBody(error.code ?? "conflict", error.message) }
    case "InvalidRequest":
      return { status: 422, body: { detail: error.issues } }
    case "FeatureDisabled":
      return { status: 403, body: errorBody("feature_disabled", error.message, { feature: error.feature }) }
    case "OperatorFailed":
      return {
        status: error.status,
        body: errorBody(error.code, error.message, {
          operator: error.operator,
          ...(error.message_id === undefined ? {} : { message_id: error.message_id })
        }),
        ...(error.status === 429 || error.status === 503 ? { headers: { "retry-after": error.status === 429 ? "60" : "5" } } : {})
      }
    case "FailedWithBody":
      return { status: error.status, body: error.body, ...(error.headers === undefined ? {} : { headers: error.headers }) }
    case "BadRequest":
      return { status: 400, body: error.plain === true ? { detail: error.message } : errorBody(error.code ?? "bad_request", error.message) }
    case "ChannelUnavailable":
      return { status: 400, body: errorBody("channel_unavailable", error.message, { channel_id: error.channel_id }) }
    case "StorageError":
      return error.isRetryable
        ? {
          status: 503,
          body: errorBody("storage_unavailable", "Storage is temporarily unavailable; retry shortly"),
          headers: { "retry-after": "1" }
        }
        : { status: 500, body: errorBody("internal_error", "Internal server error") }
  }
}

// The spec's webhook error codes; failures it does not name keep their codes.
const CODES: Partial<Record<(ApiError | StorageError)["_tag"], string>> = {
  Unauthenticated: "INVALID_TOKEN",
  MissingScope: "INSUFFICIENT_SCOPE",
  Forbidden: "FORBIDDEN",
  NotFound: "RESOURCE_NOT_FOUND",
  Conflict: "CONFLICT",
  InvalidRequest: "VALIDATION_ERROR"
}

/** The same failures with the spec's webhook codes: `{"detail": {"code", "message", "errors"?}}`. */
export const toCodedErrorResponse = (error: ApiError | StorageError): ErrorResponse => {
  const plain = toErrorResponse(error)
  const code = CODES[error._tag]
  if (code === undefined) return plain
  const detail = (plain.body as { readonly detail: unknown }).detail
  const message = error._tag === "InvalidRequest"
    ? error.issues.map((issue) => `${issue.loc.join(".")}: ${issue.msg}`).join("; ")
    : typeof detail === "string"
    ? detail
    : String((detail as { readonly message: unknown }).message)
  return {
    ...plain,
    body: errorBody(code, message, error._tag === "InvalidRequest" ? { errors: error.issues } : {})
  }
}
