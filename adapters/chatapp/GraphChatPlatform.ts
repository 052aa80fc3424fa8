import { randomBytes } from "node:crypto"
import { Effect, Option, Predicate, Schema, SchemaTransformation } from "effect"
import {
  ChatPlatform,
  type ChatappCredentials,
  type ChatappLibraryTemplate,
  type ChatappMedia,
  type ChatappMediaUpload,
  type ChatPlatformError,
  type LibraryQuery
} from "../../src/ports/ChatPlatform.ts"
import { currentTraceparent } from "../../src/kernel/TraceContext.ts"
import type { OutboundError, OutboundHttp, OutboundRequest, OutboundResponse } from "../../src/ports/OutboundHttp.ts"
import { graphErrorFrom, parseJson, readGraphError, requestFailed } from "./GraphErrors.ts"

/** How the Graph adapter reaches the operator. */
export interface GraphChatPlatformOptions {
  /** The Graph API's base URL, version included, e.g. `https://graph.example/v23.0`. */
  readonly baseUrl: string
  /** The guarded outbound client every request goes through, media downloads included. */
  readonly outbound: OutboundHttp["Service"]
  /** Whole-exchange limit of each request; 30 s by default. */
  readonly timeoutMs?: number
}

const DEFAULT_TIMEOUT_MS = 30_000
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/
/** Library entries asked for per page, and pages read at most in one browse (50,000 entries, far past the catalog). */
const LIBRARY_PAGE_SIZE = 500
const MAX_LIBRARY_PAGES = 100
/** A media URL that answers one of these has expired: the media object is asked for a fresh one. */
const EXPIRED_MEDIA_URL = new Set([401, 403, 404, 410])
const PHONE_NUMBER_FIELDS = "id,display_phone_number,verified_name,messaging_limit_tier,quality_rating,status,throughput"
/** Library inputs the operator takes as JSON-encoded strings inside the JSON body. */
const JSON_ENCODED_FIELDS = ["library_template_button_inputs", "library_template_body_inputs"]

/** An optional field the operator may also write as null; null decodes as absent. */
const Optional = <S extends Schema.Top>(schema: S) =>
  Schema.optional(Schema.NullOr(schema)).pipe(Schema.decodeTo(
    Schema.optionalKey(Schema.toType(schema)),
    SchemaTransformation.transformOptional<S["Type"], S["Type"] | null | undefined>({
      decode: (value) => value.pipe(Option.filter(Predicate.isNotNullish)),
      encode: (value) => value
    })
  ))
const OptionalText = Schema.OptionFromOptionalNullOr(Schema.String)
/** Extra fields the operator adds are kept, as the port hands its JSON on untouched. */
const Rest = [Schema.Record(Schema.String, Schema.Unknown)] as const
const JsonObject = Schema.Record(Schema.String, Schema.Unknown)

const Paging = Schema.OptionFromOptionalNullOr(Schema.Struct({
  cursors: Schema.OptionFromOptionalNullOr(Schema.Struct({ after: OptionalText })),
  next: OptionalText
}))

const SendAnswer = Schema.Struct({
  messages: Schema.NonEmptyArray(Schema.Struct({ id: Schema.String })),
  contacts: Schema.OptionFromOptionalNullOr(Schema.Array(Schema.Struct({ wa_id: OptionalText })))
})

const Template = Schema.StructWithRest(
  Schema.Struct({
    id: Schema.String,
    name: Schema.String,
    language: Schema.String,
    status: Schema.String,
    category: Schema.String,
    components: Schema.Array(JsonObject)
  }),
  Rest
)
const TemplatePage = Schema.Struct({ data: Schema.Array(Template), paging: Paging })

const TemplateCreated = Schema.Struct({ id: Schema.String, status: Schema.String, category: Schema.String })

const LibraryTemplate = Schema.StructWithRest(
  Schema.Struct({
    name: Schema.String,
    language: Schema.String,
    category: Schema.String,
    body: Schema.String,
    id: Optional(Schema.String),
    topic: Optional(Schema.String),
    usecase: Optional(Schema.String),
    industry: Optional(Schema.Array(Schema.String)),
    header: Optional(Schema.String),
    body_params: Optional(Schema.Array(Schema.String)),
    buttons: Optional(Schema.Array(JsonObject))
  }),
  Rest
)
const LibraryPage = Schema.Struct({ data: Schema.Array(LibraryTemplate), paging: Paging })

const PhoneNumber = Schema.Struct({
  id: Schema.String,
  display_phone_number: OptionalText,
  verified_name: OptionalText,
  messaging_limit_tier: OptionalText,
  quality_rating: OptionalText,
  status: OptionalText,
  throughput: Schema.OptionFromOptionalNullOr(Schema.Struct({ level: OptionalText }))
})

/** `GET /{media_id}`: where the file is for the next few minutes, and what the operator says it is. */
const MediaObject = Schema.Struct({
  url: Schema.String,
  mime_type: OptionalText,
  sha256: OptionalText,
  // Documented as a number, seen as a numeric string.
  file_size: Schema.OptionFromOptionalNullOr(Schema.Union([Schema.Finite, Schema.FiniteFromString]))
})
type MediaObject = typeof MediaObject.Type

/** `POST /{phone_number_id}/media`: the uploaded file's media id. */
const MediaUploaded = Schema.Struct({ id: Schema.String })

/** A quoted-string parameter of a multipart header: quotes, backslashes and line breaks escaped as browsers do. */
const quoted = (value: string) => `"${value.replace(/\\/g, "\\\\").replace(/"/g, "%22").replace(/\r/g, "%0D").replace(/\n/g, "%0A")}"`

/**
 * The operator's media upload as `multipart/form-data`: `messaging_product=whatsapp`, `type` (the
 * file's type) and `file` with its name and type. Returns the content type (with the boundary) and body.
 */
export const mediaUploadBody = (file: ChatappMediaUpload, boundary: string) => {
  const encoder = new TextEncoder()
  const mimeType = file.mimeType.replace(/[\r\n]/g, "")
  const field = (name: string, value: string) =>
    `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`
  const head = encoder.encode(
    field("messaging_product", "whatsapp") +
      field("type", mimeType) +
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename=${quoted(file.filename)}\r\n` +
      `Content-Type: ${mimeType}\r\n\r\n`
  )
  const tail = encoder.encode(`\r\n--${boundary}--\r\n`)
  const body = new Uint8Array(head.length + file.bytes.length + tail.length)
  body.set(head, 0)
  body.set(file.bytes, head.length)
  body.set(tail, head.length + file.bytes.length)
  return { contentType: `multipart/form-data; boundary=${boundary}`, body }
}

/** The cursor of the page after this one, or null on the last page. */
const nextCursor = (paging: typeof Paging.Type): string | null => {
  if (Option.isNone(paging) || Option.isNone(paging.value.next)) return null
  const after = paging.value.cursors.pipe(Option.flatMap((cursors) => cursors.after))
  if (Option.isSome(after)) return after.value
  try {
    return new URL(paging.value.next.value).searchParams.get("after")
  } catch {
    return null
  }
}

/** A request that got no answer: `transient`, with no code; an answer over the size cap is `other`. */
const unanswered = (error: OutboundError): ChatPlatformError =>
  error.reason === "TooLarge"
    ? requestFailed("other", `the operator's answer was too large: ${error.message}`)
    : error.sent === true
    ? requestFailed("transient", `no answer from the operator (${error.reason}): ${error.message}`, null, true)
    : requestFailed("transient", `the operator could not be reached (${error.reason}): ${error.message}`)

/**
 * The operator's Graph API (WhatsApp Cloud API-shaped) through the guarded outbound client, with each
 * channel's access token as Bearer. Every answer is decoded at the edge; every failure becomes a
 * `ChatPlatformError` (see `graphErrorFrom`). Throws when `baseUrl` is not an http(s) URL.
 */
export const makeGraphChatPlatform = (options: GraphChatPlatformOptions): ChatPlatform["Service"] => {
  const parsed = new URL(options.baseUrl)
  if (parsed.protocol !== "https:" && parsed.protocol !== "http:") {
    throw new Error(`the Graph base URL must be http(s), not ${parsed.protocol}`)
  }
  const base = options.baseUrl.replace(/\/+$/, "")
  const secure = parsed.protocol === "https:"
  const { outbound } = options
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS

  /** `base/segment/…?query`; each segment is an id and is escaped, and `.`/`..` never reach the URL. */
  const urlOf = Effect.fnUntraced(function*(
    segments: ReadonlyArray<string>,
    query: Readonly<Record<string, string | undefined>> = {}
  ) {
    // A lone surrogate cannot be percent-encoded (encodeURIComponent throws): no operator id holds one.
    const bad = segments.find((segment) => segment === "" || segment === "." || segment === ".." || LONE_SURROGATE.test(segment))
    if (bad !== undefined) return yield* requestFailed("other", `"${bad}" is not an id the operator could know`)
    const params = new URLSearchParams()
    for (const [name, value] of Object.entries(query)) if (value !== undefined) params.set(name, value)
    const search = params.size > 0 ? `?${params}` : ""
    return `${base}/${segments.map(encodeURIComponent).join("/")}${search}`
  })

  const headersFor = (credentials: ChatappCredentials, json: boolean): Record<string, string> => ({
    authorization: `Bearer ${credentials.accessToken}`,
    accept: "application/json",
    "user-agent": "omnichannel-core",
    ...(json ? { "content-type": "application/json" } : {})
  })

  /** Sends one request to the Graph API and decodes a 2xx answer with `decode`; anything else is an error. */
  const call = <A>(
    decode: (input: unknown) => Effect.Effect<A, Schema.SchemaError>,
    request: Omit<OutboundRequest, "timeoutMs">
  ): Effect.Effect<A, ChatPlatformError> =>
    Effect.gen(function*() {
      // The operator is the host's own, not a tenant's receiver: it gets the call's trace context.
      const traceparent = yield* currentTraceparent
      const headers = traceparent === undefined ? request.headers : { ...request.headers, traceparent }
      const response = yield* outbound.request({ ...request, headers, timeoutMs }).pipe(Effect.mapError(unanswered))
      if (response.status < 200 || response.status > 299) return yield* graphErrorFrom(response.status, response.body)
      const json = parseJson(response.body)
      if (Option.isNone(json)) {
        return yield* requestFailed("other", `the operator answered ${response.status} with a body that is not JSON`, response.status)
      }
      // Some Graph errors come back with a 2xx status.
      if (Option.isSome(readGraphError(response.body))) return yield* graphErrorFrom(response.status, response.body)
      return yield* decode(json.value).pipe(Effect.mapError((error) =>
        requestFailed("other", `the operator's answer was not the expected shape: ${error.message}`, response.status)
      ))
    }).pipe(Effect.withSpan("GraphChatPlatform.request", { kind: "client", attributes: { "http.request.method": request.method } }))

  const get = <A>(
    decode: (input: unknown) => Effect.Effect<A, Schema.SchemaError>,
    credentials: ChatappCredentials,
    segments: ReadonlyArray<string>,
    query?: Readonly<Record<string, string | undefined>>
  ) =>
    Effect.flatMap(urlOf(segments, query), (url) =>
      call(decode, { method: "GET", url, headers: headersFor(credentials, false) }))

  const post = <A>(
    decode: (input: unknown) => Effect.Effect<A, Schema.SchemaError>,
    credentials: ChatappCredentials,
    segments: ReadonlyArray<string>,
    body: unknown
  ) =>
    Effect.flatMap(urlOf(segments), (url) =>
      call(decode, { method: "POST", url, headers: headersFor(credentials, true), body: JSON.stringify(body) }))

  const decodeSent = Schema.decodeUnknownEffect(SendAnswer)
  const decodeTemplatePage = Schema.decodeUnknownEffect(TemplatePage)
  const decodeCreated = Schema.decodeUnknownEffect(TemplateCreated)
  const decodeLibraryPage = Schema.decodeUnknownEffect(LibraryPage)
  const decodePhoneNumber = Schema.decodeUnknownEffect(PhoneNumber)
  const decodeMediaObject = Schema.decodeUnknownEffect(MediaObject)
  const decodeMediaUploaded = Schema.decodeUnknownEffect(MediaUploaded)

  /** `GET /{media_id}`, refusing at once a file the operator says is over the cap. */
  const mediaObject = (credentials: ChatappCredentials, mediaId: string, maxBytes: number) =>
    get(decodeMediaObject, credentials, [mediaId]).pipe(Effect.flatMap((media) =>
      Option.isSome(media.file_size) && media.file_size.value > maxBytes
        ? Effect.fail(requestFailed("other", `media ${mediaId} is ${media.file_size.value} bytes, more than the ${maxBytes} allowed`))
        : Effect.succeed(media)
    ))

  /** The media URL's answer, whatever its status; the token goes along, so never in clear text from an https base. */
  const download = (credentials: ChatappCredentials, media: MediaObject, maxBytes: number) =>
    Effect.gen(function*() {
      if (secure && !media.url.startsWith("https://")) {
        return yield* requestFailed("other", "the operator gave a media URL that is not https; the token is not sent there")
      }
      return yield* outbound.request({
        method: "GET",
        url: media.url,
        headers: { authorization: `Bearer ${credentials.accessToken}`, accept: "*/*", "user-agent": "omnichannel-core" },
        timeoutMs,
        maxResponseBytes: maxBytes
      }).pipe(Effect.mapError((error) =>
        error.reason === "TooLarge"
          ? requestFailed("other", `the media is larger than the ${maxBytes} bytes allowed`)
          : unanswered(error)
      ))
    })

  return ChatPlatform.of({
    name: "graph",

    sendMessage: Effect.fn("GraphChatPlatform.sendMessage")(function*(credentials, to, message) {
      const body = { recipient_type: "individual", ...message, messaging_product: "whatsapp", to }
      const sent = yield* post(decodeSent, credentials, [credentials.phoneNumberId, "messages"], body)
      const recipient = sent.contacts.pipe(
        Option.flatMap((contacts) => Option.fromNullishOr(contacts[0])),
        Option.flatMap((contact) => contact.wa_id)
      )
      return { messageId: sent.messages[0].id, recipientWaId: Option.getOrNull(recipient) }
    }),

    listTemplates: Effect.fn("GraphChatPlatform.listTemplates")(function*(credentials, page) {
      const answer = yield* get(decodeTemplatePage, credentials, [credentials.businessAccountId, "message_templates"], {
        limit: String(page.limit),
        after: page.after
      })
      return { items: answer.data, after: nextCursor(answer.paging) }
    }),

    createTemplate: Effect.fn("GraphChatPlatform.createTemplate")(function*(credentials, body) {
      const encoded: Record<string, unknown> = { ...body }
      for (const field of JSON_ENCODED_FIELDS) {
        const value = encoded[field]
        if (value !== undefined && typeof value !== "string") encoded[field] = JSON.stringify(value)
      }
      return yield* post(decodeCreated, credentials, [credentials.businessAccountId, "message_templates"], encoded)
    }),

    browseLibrary: Effect.fn("GraphChatPlatform.browseLibrary")(function*(credentials, query: LibraryQuery) {
      const items: Array<ChatappLibraryTemplate> = []
      const seen = new Set<string>()
      let after: string | undefined
      for (let page = 0; page < MAX_LIBRARY_PAGES; page++) {
        const answer = yield* get(decodeLibraryPage, credentials, ["message_template_library"], {
          search: query.search,
          topic: query.topic,
          usecase: query.usecase,
          industry: query.industry,
          language: query.language,
          name: query.name,
          limit: String(LIBRARY_PAGE_SIZE),
          after
        })
        items.push(...answer.data)
        const cursor = nextCursor(answer.paging)
        // A cursor met before would loop for ever.
        if (cursor === null || seen.has(cursor)) break
        seen.add(cursor)
        after = cursor
      }
      return items
    }),

    phoneNumber: Effect.fn("GraphChatPlatform.phoneNumber")(function*(credentials) {
      const number = yield* get(decodePhoneNumber, credentials, [credentials.phoneNumberId], { fields: PHONE_NUMBER_FIELDS })
      return {
        id: number.id,
        displayPhoneNumber: Option.getOrNull(number.display_phone_number),
        verifiedName: Option.getOrNull(number.verified_name),
        messagingLimitTier: Option.getOrNull(number.messaging_limit_tier),
        qualityRating: Option.getOrNull(number.quality_rating),
        status: Option.getOrNull(number.status),
        throughputLevel: Option.getOrNull(number.throughput.pipe(Option.flatMap((throughput) => throughput.level)))
      }
    }),

    fetchMedia: Effect.fn("GraphChatPlatform.fetchMedia")(function*(credentials, mediaId, { maxBytes }) {
      let media = yield* mediaObject(credentials, mediaId, maxBytes)
      let response: OutboundResponse = yield* download(credentials, media, maxBytes)
      if (EXPIRED_MEDIA_URL.has(response.status)) {
        // The URL lives a few minutes: a fresh one is asked for once.
        media = yield* mediaObject(credentials, mediaId, maxBytes)
        response = yield* download(credentials, media, maxBytes)
      }
      if (response.status < 200 || response.status > 299) return yield* graphErrorFrom(response.status, response.body)
      const fetched: ChatappMedia = {
        bytes: response.body,
        mimeType: Option.getOrElse(media.mime_type, () => response.headers["content-type"] ?? "application/octet-stream"),
        sha256: Option.getOrNull(media.sha256)
      }
      return fetched
    }),

    uploadMedia: Effect.fn("GraphChatPlatform.uploadMedia")(function*(credentials, file) {
      const url = yield* urlOf([credentials.phoneNumberId, "media"])
      const { contentType, body } = mediaUploadBody(file, `omnichannel-${randomBytes(16).toString("hex")}`)
      const uploaded = yield* call(decodeMediaUploaded, {
        method: "POST",
        url,
        headers: { ...headersFor(credentials, false), "content-type": contentType },
        body
      })
      return { id: uploaded.id }
    })
  })
}
