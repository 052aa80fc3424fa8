import { Schema } from "effect"

/**
 * One problem with a request, FastAPI-style: where (`loc`), what (`msg`), its kind (`type`), and for
 * some kinds the figures a client needs to fix it (`ctx`, as FastAPI's own errors carry them).
 */
export const ValidationIssue = Schema.Struct({
  loc: Schema.Array(Schema.Union([Schema.String, Schema.Number])),
  msg: Schema.String,
  type: Schema.String,
  ctx: Schema.optionalKey(Schema.Record(Schema.String, Schema.Union([Schema.String, Schema.Number])))
})
/** One problem with a request. */
export type ValidationIssue = typeof ValidationIssue.Type
export declare namespace ValidationIssue {}

/**
 * The one error body: a machine-readable `code`, a `message` for people, and any fields the code
 * adds, under `detail` (`{"detail": {"code", "message", …}}`), as the spec writes its coded errors.
 * The spec's own literal bodies (a 422's list of issues, a missing scope's plain string, the
 * attachment catalogue's texts, summary rate limits, an unsupported URL type) keep their forms.
 */
export const errorBody = (
  code: string,
  message: string,
  extra: Readonly<Record<string, unknown>> = {}
): { readonly detail: { readonly code: string; readonly message: string } & Readonly<Record<string, unknown>> } => ({
  detail: { code, message, ...extra }
})

/** The credential is missing, malformed, unknown, revoked or expired (401). */
export class Unauthenticated extends Schema.TaggedError<Unauthenticated>()("Unauthenticated", {
  message: Schema.String
}) {}

/** The credential lacks every one of the scopes an operation accepts (403). */
export class MissingScope extends Schema.TaggedError<MissingScope>()("MissingScope", {
  scopes: Schema.Array(Schema.String)
}) {}

/** The caller may not do this, for a reason stated in `message` (403). */
export class Forbidden extends Schema.TaggedError<Forbidden>()("Forbidden", {
  message: Schema.String
}) {}

/**
 * The resource does not exist in the caller's tenant, or the caller may not know it exists (404):
 * code `not_found`. `plain` where the spec gives the text as the body itself (`{"detail": "<message>"}`:
 * the attachment catalogue's `Attachment {id} not found`).
 */
export class NotFound extends Schema.TaggedError<NotFound>()("NotFound", {
  message: Schema.String,
  plain: Schema.optionalKey(Schema.Boolean)
}) {}

/** The request collides with existing state, such as a taken slug (409): code `conflict` unless `code` names it. */
export class Conflict extends Schema.TaggedError<Conflict>()("Conflict", {
  message: Schema.String,
  code: Schema.optionalKey(Schema.String)
}) {}

/** The request body, query or headers failed validation (422, a list of issues). */
export class InvalidRequest extends Schema.TaggedError<InvalidRequest>()("InvalidRequest", {
  issues: Schema.Array(ValidationIssue)
}) {
  /** One issue at `loc`. */
  static single(
    loc: ReadonlyArray<string | number>,
    msg: string,
    type = "value_error",
    ctx?: Readonly<Record<string, string | number>>
  ): InvalidRequest {
    return new InvalidRequest({ issues: [{ loc: [...loc], msg, type, ...(ctx === undefined ? {} : { ctx }) }] })
  }
}

/**
 * A request the service cannot process as sent (400): code `bad_request` unless `code` names it.
 * `plain` where the spec gives the text as the body itself (`{"detail": "<message>"}`: the attachment
 * catalogue's texts, such as `URL not allowed`).
 */
export class BadRequest extends Schema.TaggedError<BadRequest>()("BadRequest", {
  message: Schema.String,
  code: Schema.optionalKey(Schema.String),
  plain: Schema.optionalKey(Schema.Boolean)
}) {}

/**
 * The channel a request names (or its conversation's channel) cannot carry it: not a chat-app
 * channel, disconnected, or without a business account and an access token. The same on every
 * route: 400 `{"detail": {"code": "channel_unavailable", "message", "channel_id"}}`.
 */
export class ChannelUnavailable extends Schema.TaggedError<ChannelUnavailable>()("ChannelUnavailable", {
  channel_id: Schema.String,
  message: Schema.String
}) {
  /** The refusal of channel `channelId`, in the one wording every route uses. */
  static of(channelId: string): ChannelUnavailable {
    return new ChannelUnavailable({
      channel_id: channelId,
      message: `Channel ${channelId} is not a usable chat-app channel: it must be a connected chat-app channel with a business account and an access token`
    })
  }
}

/** A feature the request needs is not enabled for the tenant (403, with `code: feature_disabled`). */
export class FeatureDisabled extends Schema.TaggedError<FeatureDisabled>()("FeatureDisabled", {
  feature: Schema.String,
  message: Schema.String
}) {}

/**
 * The chat-app operator refused or failed what the request needed: 429 when it is rate-limiting, 503
 * when the failure is transient (retry later), 502 otherwise. `operator` carries what it said.
 */
export class OperatorFailed extends Schema.TaggedError<OperatorFailed>()("OperatorFailed", {
  status: Schema.Literals([422, 429, 502, 503, 504]),
  code: Schema.String,
  message: Schema.String,
  operator: Schema.Struct({
    kind: Schema.String,
    code: Schema.NullOr(Schema.Number),
    subcode: Schema.NullOr(Schema.Number),
    title: Schema.NullOr(Schema.String),
    message: Schema.String,
    fbtrace_id: Schema.NullOr(Schema.String)
  }),
  /** The message stored as `failed` when a send failed, or left `pending` when its answer never came. */
  message_id: Schema.optionalKey(Schema.String)
}) {}

/**
 * An operation failed and answers with a body of its own documented shape rather than `{detail}`
 * (an adoption's `success: false` response): `status` and `body` are sent as they are.
 */
export class FailedWithBody extends Schema.TaggedError<FailedWithBody>()("FailedWithBody", {
  status: Schema.Number,
  body: Schema.Unknown,
  headers: Schema.optionalKey(Schema.Record(Schema.String, Schema.String))
}) {}

/** Every expected failure an API operation can answer with. */
export type ApiError =
  | Unauthenticated
  | MissingScope
  | Forbidden
  | NotFound
  | Conflict
  | InvalidRequest
  | BadRequest
  | ChannelUnavailable
  | FeatureDisabled
  | OperatorFailed
  | FailedWithBody
