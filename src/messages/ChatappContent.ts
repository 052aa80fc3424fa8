import { CHATAPP_MEDIA_TYPES } from "../kernel/ChatappEvents.ts"

/**
 * How an operator message object becomes a stored message: its type, its text and what else it
 * carries. Pure: the inbound handler and the tests call it.
 */

type Json = Readonly<Record<string, unknown>>

const isRecord = (value: unknown): value is Json => typeof value === "object" && value !== null && !Array.isArray(value)
const str = (value: unknown): string | null => (typeof value === "string" && value !== "" ? value : null)

/** The types a chat-app message can have here; anything else is kept as `unsupported`. */
export const CHATAPP_MESSAGE_TYPES = [
  "text",
  "image",
  "document",
  "audio",
  "video",
  "sticker",
  "location",
  "contacts",
  "button",
  "interactive",
  "reaction"
] as const


/** A media object the message refers to: fetched from the operator and kept as an attachment. */
export interface MediaReference {
  readonly id: string
  readonly mimeType: string | null
  readonly filename: string | null
}

/** What a stored message is made of. */
export interface MessageContent {
  readonly messageType: string
  readonly text: string | null
  readonly content: Json
  readonly media: MediaReference | null
}

const pick = (source: Json, keys: ReadonlyArray<string>): Json =>
  Object.fromEntries(keys.filter((key) => source[key] !== undefined).map((key) => [key, source[key]]))

/** Reads an operator message object (the element of `value.messages[]`) into stored content. */
export const chatappContentOf = (message: Json): MessageContent => {
  const type = str(message.type) ?? "unknown"
  const context = isRecord(message.context) ? { context: pick(message.context, ["from", "id", "forwarded", "frequently_forwarded"]) } : {}
  const body = isRecord(message[type]) ? (message[type] as Json) : {}
  switch (type) {
    case "text":
      return { messageType: "text", text: str(body.body), content: { ...context }, media: null }
    case "image":
    case "document":
    case "audio":
    case "video":
    case "sticker": {
      // CHATAPP_MEDIA_TYPES, spelled out for the switch.
      const id = str(body.id)
      return {
        messageType: type,
        text: str(body.caption),
        content: { ...context, media: pick(body, ["id", "mime_type", "sha256", "filename", "voice", "animated"]) },
        media: id === null ? null : { id, mimeType: str(body.mime_type), filename: str(body.filename) }
      }
    }
    case "location":
      return {
        messageType: "location",
        text: str(body.name) ?? str(body.address),
        content: { ...context, location: pick(body, ["latitude", "longitude", "name", "address", "url"]) },
        media: null
      }
    case "contacts":
      return {
        messageType: "contacts",
        text: null,
        content: { ...context, contacts: Array.isArray(message.contacts) ? message.contacts : [] },
        media: null
      }
    case "button":
      return {
        messageType: "button",
        text: str(body.text),
        content: { ...context, button: pick(body, ["text", "payload"]) },
        media: null
      }
    case "interactive": {
      const kind = str(body.type)
      const reply = kind !== null && isRecord(body[kind]) ? (body[kind] as Json) : {}
      const text = kind === "nfm_reply" ? str(reply.body) : str(reply.title)
      // A flow's answer keeps its name and text only: its response holds the flow token and answers
      // that may be sensitive; the flow's session keeps them, masked.
      const kept = kind === "nfm_reply" ? pick(reply, ["name", "body"]) : reply
      return { messageType: "interactive", text, content: { ...context, interactive: { type: kind, ...kept } }, media: null }
    }
    case "reaction":
      return {
        messageType: "reaction",
        text: str(body.emoji),
        content: { ...context, reaction: pick(body, ["message_id", "emoji"]) },
        media: null
      }
    default:
      return {
        messageType: "unsupported",
        text: null,
        content: { ...context, original_type: type, errors: Array.isArray(message.errors) ? message.errors : [] },
        media: null
      }
  }
}
