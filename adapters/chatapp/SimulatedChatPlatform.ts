import { createHash, randomBytes } from "node:crypto"
import { Effect } from "effect"
import {
  ChatPlatform,
  type ChatappCredentials,
  type ChatappTemplate,
  ChatPlatformError
} from "../../src/ports/ChatPlatform.ts"
import { classifyGraphError } from "./GraphErrors.ts"
import { LIBRARY, type LibraryEntry, matches } from "./SimulatedLibrary.ts"
import { SIMULATED_MEDIA } from "./SimulatedMedia.ts"

// ---------------------------------------------------------------------------------------------
// The operator's refusals, in its own words.
// ---------------------------------------------------------------------------------------------

// The kind comes from the code through the Graph adapter's own table, so the two never disagree.
const refusal = (
  code: number,
  message: string,
  extra: { readonly subcode?: number; readonly userTitle?: string; readonly userMessage?: string; readonly httpStatus?: number } = {}
) =>
  new ChatPlatformError({
    kind: classifyGraphError(code, extra.subcode ?? null, false),
    code,
    subcode: extra.subcode ?? null,
    message,
    userTitle: extra.userTitle ?? null,
    userMessage: extra.userMessage ?? null,
    fbtraceId: `Sim${randomBytes(8).toString("base64url")}`,
    httpStatus: extra.httpStatus ?? 400
  })

const invalidParameter = (userMessage: string, subcode?: number, userTitle?: string) =>
  refusal(100, "(#100) Invalid parameter", {
    userMessage,
    ...(subcode === undefined ? {} : { subcode }),
    ...(userTitle === undefined ? {} : { userTitle })
  })

/** The types the operator takes in a media upload (its documented lists; a document may be any of the common office types or plain text). */
const UPLOAD_TYPES = new Set([
  "image/jpeg", "image/png", "image/webp",
  "video/mp4", "video/3gpp",
  "audio/aac", "audio/amr", "audio/mpeg", "audio/mp4", "audio/ogg"
])
const MEDIA_MESSAGE_TYPES = new Set(["image", "document", "audio", "video", "sticker"])
/** Media ids remembered at most; the oldest are forgotten first (a send naming one is then refused, as an expired id is). */
const MAX_REMEMBERED_UPLOADS = 10_000

const DIGITS = /^\d{5,20}$/
const TOKEN = /^\S{20,}$/

/**
 * The operator's checks of the credentials, as far as they can be made without it: ids in digits, a
 * token of at least 20 characters, and, standing in for a token the operator has revoked (as the
 * simulated providers do), none containing `REJECT`. Each failure is the operator's code 190.
 */
const checkCredentials = (credentials: ChatappCredentials): Effect.Effect<void, ChatPlatformError> => {
  const invalid = (message: string, subcode?: number) =>
    Effect.fail(refusal(190, message, { httpStatus: 401, ...(subcode === undefined ? {} : { subcode }) }))
  if (!DIGITS.test(credentials.phoneNumberId)) return invalid("Invalid OAuth access token - the phone number ID must be digits")
  if (!DIGITS.test(credentials.businessAccountId)) return invalid("Invalid OAuth access token - the business account ID must be digits")
  if (!TOKEN.test(credentials.accessToken)) return invalid("Invalid OAuth access token - Cannot parse access token")
  if (credentials.accessToken.includes("REJECT")) {
    return invalid("Error validating access token: The session has been invalidated because the user changed their password or Facebook has changed the session for security reasons.", 460)
  }
  return Effect.void
}

/** What the operator stores of a template created from a library entry, its button inputs applied. */
const componentsOf = (entry: LibraryEntry, buttonInputs: ReadonlyArray<Readonly<Record<string, unknown>>>) => {
  const used = new Set<number>()
  const buttons = (entry.buttons ?? []).map((button) => {
    const at = buttonInputs.findIndex((input, i) => !used.has(i) && input.type === button.type)
    if (at === -1) return button
    used.add(at)
    const input = buttonInputs[at]!
    const url = input.url as { readonly base_url?: unknown } | undefined
    return {
      ...button,
      ...(typeof url?.base_url === "string" ? { url: url.base_url } : {}),
      ...(typeof input.phone_number === "string" ? { phone_number: input.phone_number } : {})
    }
  })
  return [
    ...(entry.header === undefined ? [] : [{ type: "HEADER", format: "TEXT", text: entry.header }]),
    { type: "BODY", text: entry.body, example: { body_text: [entry.body_params ?? []] } },
    ...(entry.footer === undefined ? [] : [{ type: "FOOTER", text: entry.footer }]),
    ...(buttons.length === 0 ? [] : [{ type: "BUTTONS", buttons }])
  ]
}

/**
 * Whether `components`, when given, keep the library entry's wording: its header, body and footer,
 * each there exactly as shipped (one left out or added is a change). A renamed template and
 * re-pointed buttons still count as unchanged (the spec's rule).
 */
const wordingUnchanged = (components: unknown, entry: LibraryEntry): boolean => {
  if (components === undefined) return true
  if (!Array.isArray(components)) return false
  const textOf = (type: string): unknown => components.find((component) => component?.type === type)?.text
  return textOf("HEADER") === entry.header && textOf("BODY") === entry.body && textOf("FOOTER") === entry.footer
}

/** `library_template_button_inputs` as the operator takes it: a JSON-encoded array (an array is taken too). */
const buttonInputsOf = (value: unknown): ReadonlyArray<Readonly<Record<string, unknown>>> | undefined => {
  let parsed = value
  if (typeof value === "string") {
    try {
      parsed = JSON.parse(value)
    } catch {
      return undefined
    }
  }
  return Array.isArray(parsed) && parsed.every((item) => typeof item === "object" && item !== null) ? parsed : undefined
}

/** A template as stored, before its id. */
interface TemplateFields {
  readonly name: string
  readonly language: string
  readonly status: string
  readonly category: string
  readonly components: ChatappTemplate["components"]
  readonly library_template_name?: string
}

const TEMPLATE_NAME = /^[a-z0-9_]{1,512}$/
const CATEGORIES = new Set(["UTILITY", "MARKETING", "AUTHENTICATION"])
const cursorOf = (offset: number) => Buffer.from(`offset:${offset}`).toString("base64url")
const offsetOf = (cursor: string): number | undefined => {
  const match = /^offset:(\d+)$/.exec(Buffer.from(cursor, "base64url").toString("utf8"))
  return match === null ? undefined : Number(match[1])
}

/**
 * The operator played in process, for `npm start` and tests without an account: the library above
 * (filtered as the operator filters), templates kept per business account (an unchanged library
 * template is `APPROVED` at once, anything else stays `PENDING`), a `TIER_1K`/`GREEN`/`CONNECTED`
 * number, sends that always succeed, and media for ids starting `sim-image` (a PNG) or
 * `sim-document` (a PDF), media uploads (`POST /{phone_number_id}/media`) answered with a media id
 * that the number's media messages may then name (an id it never gave out is refused, code 100).
 * `now` stamps the template ids.
 */
export const makeSimulatedChatPlatform = (options: { readonly now?: () => number } = {}): ChatPlatform["Service"] => {
  const now = options.now ?? Date.now
  const templates = new Map<string, Array<ChatappTemplate>>()
  /** Media ids given out, by phone number id. */
  const uploads = new Map<string, string>()
  let created = 0
  let uploaded = 0

  return ChatPlatform.of({
    name: "simulator",

    sendMessage: Effect.fnUntraced(function*(credentials, to, message) {
      yield* checkCredentials(credentials)
      const waId = to.replace(/\D/g, "")
      if (waId.length < 5) return yield* invalidParameter(`The recipient "${to}" is not a phone number.`)
      if (MEDIA_MESSAGE_TYPES.has(message.type)) {
        const media = message[message.type] as { readonly id?: unknown; readonly link?: unknown } | undefined
        const id = media?.id
        if (typeof media?.link !== "string" && (typeof id !== "string" || uploads.get(id) !== credentials.phoneNumberId)) {
          return yield* invalidParameter(`The ${message.type} names no media this number uploaded (id ${String(id)}).`)
        }
      }
      return { messageId: `wamid.${randomBytes(24).toString("base64url")}`, recipientWaId: waId }
    }),

    listTemplates: Effect.fnUntraced(function*(credentials, page) {
      yield* checkCredentials(credentials)
      const all = templates.get(credentials.businessAccountId) ?? []
      const start = page.after === undefined ? 0 : offsetOf(page.after)
      if (start === undefined) return yield* invalidParameter("The paging cursor is not valid.")
      const end = start + Math.max(1, Math.floor(page.limit))
      return { items: all.slice(start, end), after: end < all.length ? cursorOf(end) : null }
    }),

    createTemplate: Effect.fnUntraced(function*(credentials, body) {
      yield* checkCredentials(credentials)
      const { name, language, category, components } = body
      if (typeof name !== "string" || !TEMPLATE_NAME.test(name)) {
        return yield* invalidParameter("Template names may contain only lowercase letters, numbers and underscores.")
      }
      if (typeof language !== "string") return yield* invalidParameter("A template needs a language.")
      const account = templates.get(credentials.businessAccountId) ?? []
      if (account.some((template) => template.name === name && template.language === language)) {
        return yield* invalidParameter(
          `There is already ${language} content for this template. You can create a new template and try again.`,
          2388024,
          "Content in This Language Already Exists"
        )
      }

      let template: TemplateFields
      if (body.library_template_name !== undefined) {
        const entry = LIBRARY.find((candidate) => candidate.name === body.library_template_name && candidate.language === language)
        if (entry === undefined) {
          return yield* invalidParameter(`The template library has no "${String(body.library_template_name)}" in ${language}.`)
        }
        const buttonInputs = body.library_template_button_inputs === undefined ? [] : buttonInputsOf(body.library_template_button_inputs)
        if (buttonInputs === undefined) return yield* invalidParameter("library_template_button_inputs is not a JSON array.")
        const unchanged = wordingUnchanged(components, entry)
        template = {
          name,
          language,
          status: unchanged ? "APPROVED" : "PENDING",
          category: unchanged || typeof category !== "string" ? entry.category : category,
          components: unchanged ? componentsOf(entry, buttonInputs) : components as ChatappTemplate["components"],
          library_template_name: entry.name
        }
      } else {
        if (typeof category !== "string" || !CATEGORIES.has(category)) {
          return yield* invalidParameter("The category must be UTILITY, MARKETING or AUTHENTICATION.")
        }
        if (!Array.isArray(components) || !components.some((c) => c?.type === "BODY")) {
          return yield* invalidParameter("A template needs a BODY component.")
        }
        template = { name, language, status: "PENDING", category, components }
      }
      created += 1
      const stored: ChatappTemplate = { id: `${now()}${String(created).padStart(3, "0")}`, ...template }
      templates.set(credentials.businessAccountId, [...account, stored])
      return { id: stored.id, status: stored.status, category: stored.category }
    }),

    browseLibrary: Effect.fnUntraced(function*(credentials, query) {
      yield* checkCredentials(credentials)
      return LIBRARY.filter((entry) => matches(entry, query))
    }),

    phoneNumber: Effect.fnUntraced(function*(credentials) {
      yield* checkCredentials(credentials)
      const last = credentials.phoneNumberId.slice(-7).padStart(7, "0")
      return {
        id: credentials.phoneNumberId,
        displayPhoneNumber: `+1 555-${last.slice(0, 3)}-${last.slice(3)}`,
        verifiedName: "Simulated Business",
        messagingLimitTier: "TIER_1K",
        qualityRating: "GREEN",
        status: "CONNECTED",
        throughputLevel: "STANDARD"
      }
    }),

    uploadMedia: Effect.fnUntraced(function*(credentials, file) {
      yield* checkCredentials(credentials)
      const type = file.mimeType.split(";")[0]!.trim().toLowerCase()
      const document = type.startsWith("application/") || type.startsWith("text/")
      if (!UPLOAD_TYPES.has(type) && !document) {
        return yield* invalidParameter(`Param file must be a file with one of the following types: ${[...UPLOAD_TYPES].join(", ")}, or a document. Received file of type '${type}'.`)
      }
      if (file.bytes.length === 0) return yield* invalidParameter("The uploaded file is empty.")
      uploaded += 1
      const id = `${now()}${String(uploaded).padStart(4, "0")}`
      uploads.set(id, credentials.phoneNumberId)
      if (uploads.size > MAX_REMEMBERED_UPLOADS) uploads.delete(uploads.keys().next().value!)
      return { id }
    }),

    fetchMedia: Effect.fnUntraced(function*(credentials, mediaId, { maxBytes }) {
      yield* checkCredentials(credentials)
      const media = SIMULATED_MEDIA.find(({ prefix }) => mediaId.startsWith(prefix))
      if (media === undefined) {
        return yield* refusal(
          100,
          `Unsupported get request. Object with ID '${mediaId}' does not exist, cannot be loaded due to missing permissions, or does not support this operation.`,
          { subcode: 33 }
        )
      }
      if (media.bytes.length > maxBytes) {
        return yield* new ChatPlatformError({
          kind: "other",
          code: null,
          subcode: null,
          message: `media ${mediaId} is ${media.bytes.length} bytes, more than the ${maxBytes} allowed`,
          userTitle: null,
          userMessage: null,
          fbtraceId: null,
          httpStatus: null
        })
      }
      return {
        bytes: media.bytes.slice(),
        mimeType: media.mimeType,
        sha256: createHash("sha256").update(media.bytes).digest("hex")
      }
    })
  })
}
