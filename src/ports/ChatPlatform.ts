import { Context, type Effect, Schema } from "effect"
import { isRetryableKind, OperatorErrorKind } from "../kernel/OperatorErrorKind.ts"

/** What the service holds to act for a chat-app channel: the operator's ids and the channel's access token. */
export interface ChatappCredentials {
  readonly phoneNumberId: string
  readonly businessAccountId: string
  readonly accessToken: string
}

/**
 * The closed set of ways the operator can refuse a request (`OperatorErrorKind`): rate limits (the
 * number's, and one recipient's pair limit), brief failures, credentials, policy, a quality
 * restriction, a recipient who stopped marketing messages, templates, and `other`. A request that
 * never got an answer (refused address, timeout, connection) is `transient` with `code` null.
 */
export const ChatPlatformErrorKind = OperatorErrorKind
/** The closed set of ways the operator can refuse a request. */
export type ChatPlatformErrorKind = OperatorErrorKind

/** The operator refused or failed a request: all the areas ever see of its error codes. */
export class ChatPlatformError extends Schema.TaggedError<ChatPlatformError>()("ChatPlatformError", {
  kind: ChatPlatformErrorKind,
  /** The operator's `error.code`; null when no error object came back. */
  code: Schema.NullOr(Schema.Number),
  subcode: Schema.NullOr(Schema.Number),
  /** The operator's `error.message`, or what went wrong on the way. */
  message: Schema.String,
  /** `error_user_title` / `error_user_msg`: the operator's words meant for a person. */
  userTitle: Schema.NullOr(Schema.String),
  userMessage: Schema.NullOr(Schema.String),
  fbtraceId: Schema.NullOr(Schema.String),
  /** The HTTP status of the answer; null when there was none. */
  httpStatus: Schema.NullOr(Schema.Number),
  /**
   * True when the request had left for the operator and no answer came back (a timeout, a connection
   * dropped after the request was sent): the operator may have acted on it, so a send is in doubt,
   * not refused. Absent otherwise.
   */
  unanswered: Schema.optional(Schema.Boolean)
}) {
  /** Whether trying the same request later may succeed. */
  get retryable(): boolean {
    return isRetryableKind(this.kind)
  }
}

/**
 * A message to send, in the operator's own shape without `messaging_product` and `to` (the port adds
 * them): `{ type: "text", text: { body } }`, `{ type: "template", template: {...} }`,
 * `{ type: "interactive", interactive: {...} }`, `{ type: "image", image: { id | link, caption } }`, …
 */
export interface ChatappOutboundMessage {
  readonly type: string
  readonly [key: string]: unknown
}

/** What the operator answers to a send: its message id (`wamid.…`) and the recipient's chat-app id. */
export interface ChatappSent {
  readonly messageId: string
  readonly recipientWaId: string | null
}

/** A phone number as the operator describes it (`GET /{phone_number_id}`). */
export interface ChatappPhoneNumber {
  readonly id: string
  readonly displayPhoneNumber: string | null
  readonly verifiedName: string | null
  /** e.g. `TIER_250`, `TIER_1K`, `TIER_10K`, `TIER_100K`, `TIER_UNLIMITED`; null when not reported. */
  readonly messagingLimitTier: string | null
  /** `GREEN`, `YELLOW`, `RED` or `UNKNOWN`. */
  readonly qualityRating: string | null
  /** e.g. `CONNECTED`, `FLAGGED`, `RESTRICTED`. */
  readonly status: string | null
  /** The number's `throughput.level`, e.g. `STANDARD` or `HIGH`; null when not reported. */
  readonly throughputLevel: string | null
}

/** A template of a business account as the operator returns it (its JSON, untouched but typed loosely). */
export interface ChatappTemplate {
  readonly id: string
  readonly name: string
  readonly language: string
  readonly status: string
  readonly category: string
  readonly components: ReadonlyArray<Readonly<Record<string, unknown>>>
  readonly [key: string]: unknown
}

/** One page of a listing and the cursor of the next, if any. */
export interface ChatappPage<A> {
  readonly items: ReadonlyArray<A>
  readonly after: string | null
}

/** Filters of `GET /message_template_library`. */
export interface LibraryQuery {
  readonly search?: string
  readonly topic?: string
  readonly usecase?: string
  readonly industry?: string
  readonly language?: string
  readonly name?: string
}

/** One entry of the operator's template library, as it returns it. */
export interface ChatappLibraryTemplate {
  readonly name: string
  readonly language: string
  readonly category: string
  readonly topic?: string
  readonly usecase?: string
  readonly industry?: ReadonlyArray<string>
  readonly header?: string
  readonly body: string
  readonly body_params?: ReadonlyArray<string>
  readonly buttons?: ReadonlyArray<Readonly<Record<string, unknown>>>
  readonly id?: string
  readonly [key: string]: unknown
}

/** What `POST /{business_account_id}/message_templates` answers. */
export interface ChatappTemplateCreated {
  readonly id: string
  readonly status: string
  readonly category: string
}

/** A media object's bytes, fetched through its short-lived URL. */
export interface ChatappMedia {
  readonly bytes: Uint8Array
  /** What the operator says the type is (`mime_type`); check the bytes before trusting it. */
  readonly mimeType: string
  /** The operator's SHA-256 of the file, when given. */
  readonly sha256: string | null
}

/** A file to upload to the operator before a media message refers to it by id. */
export interface ChatappMediaUpload {
  readonly bytes: Uint8Array
  /** The file's checked type, sent as the upload's `type` and the file part's `Content-Type`. */
  readonly mimeType: string
  readonly filename: string
}

/**
 * What the service asks of the chat-app operator. The real adapter speaks its Graph API through the
 * guarded outbound client; the simulator plays it in process. Every failure is a `ChatPlatformError`.
 */
export class ChatPlatform extends Context.Service<ChatPlatform, {
  /** Names the implementation (`graph`, `simulator`), for logs and the health check. */
  readonly name: string
  /** `POST /{phone_number_id}/messages` to `to` (digits of the recipient's number, or its chat-app id). */
  readonly sendMessage: (
    credentials: ChatappCredentials,
    to: string,
    message: ChatappOutboundMessage
  ) => Effect.Effect<ChatappSent, ChatPlatformError>
  /** `GET /{business_account_id}/message_templates`, one page. */
  readonly listTemplates: (
    credentials: ChatappCredentials,
    page: { readonly limit: number; readonly after?: string }
  ) => Effect.Effect<ChatappPage<ChatappTemplate>, ChatPlatformError>
  /** `POST /{business_account_id}/message_templates` with the operator's body (library fields JSON-encoded as it expects). */
  readonly createTemplate: (
    credentials: ChatappCredentials,
    body: Readonly<Record<string, unknown>>
  ) => Effect.Effect<ChatappTemplateCreated, ChatPlatformError>
  /** `GET /message_template_library` with the filters, every page read. */
  readonly browseLibrary: (
    credentials: ChatappCredentials,
    query: LibraryQuery
  ) => Effect.Effect<ReadonlyArray<ChatappLibraryTemplate>, ChatPlatformError>
  /** `GET /{phone_number_id}`: limit tier, quality rating, status; also the credential check when connecting. */
  readonly phoneNumber: (credentials: ChatappCredentials) => Effect.Effect<ChatappPhoneNumber, ChatPlatformError>
  /**
   * `GET /{media_id}`, then its URL with the token at once (the URL is short-lived; an expired one is
   * asked for again once). `maxBytes` caps the download.
   */
  readonly fetchMedia: (
    credentials: ChatappCredentials,
    mediaId: string,
    options: { readonly maxBytes: number }
  ) => Effect.Effect<ChatappMedia, ChatPlatformError>
  /**
   * `POST /{phone_number_id}/media` (multipart: `messaging_product=whatsapp`, `file`, `type`): the
   * operator keeps the file and answers its media id, which a media message then names
   * (`{ type: "document", document: { id, caption, filename } }`).
   */
  readonly uploadMedia: (
    credentials: ChatappCredentials,
    file: ChatappMediaUpload
  ) => Effect.Effect<{ readonly id: string }, ChatPlatformError>
}>()("omnichannel-core/ports/ChatPlatform") {}
