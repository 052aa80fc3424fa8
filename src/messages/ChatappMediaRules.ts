/**
 * What the chat-app operator takes in a media message, checked before any call (pure): the media
 * types, each one's file types and size limit, whether it takes a caption, and how a send's
 * `message_type` is derived from its files when not given.
 */

/** The media messages a workspace can send in a chat-app conversation. */
export const CHATAPP_SEND_MEDIA_TYPES = ["image", "document", "audio", "video", "sticker"] as const
/** A media message type. */
export type ChatappSendMediaType = typeof CHATAPP_SEND_MEDIA_TYPES[number]

/** Files one `POST /messages` may send to a chat-app conversation (one operator message each). */
export const MAX_CHATAPP_FILES_PER_SEND = 10

/** Longest caption the operator takes on an image, video or document. */
export const MAX_CAPTION_LENGTH = 1024

const KB = 1024
const MB = 1024 * 1024

/** One media type's limits. */
export interface ChatappMediaRule {
  /** The file types taken (`null`: every type). */
  readonly types: ReadonlyArray<string> | null
  /** Their names, for a refusal. */
  readonly typeNames: string
  readonly maxBytes: number
  /** A sticker's limit when it is animated (WebP with the animation flag). */
  readonly maxAnimatedBytes?: number
  /** Whether the operator shows a caption with it. */
  readonly caption: boolean
}

/** The operator's per-type limits (WhatsApp Cloud API's media limits). */
export const CHATAPP_MEDIA_RULES: Readonly<Record<ChatappSendMediaType, ChatappMediaRule>> = {
  image: { types: ["image/jpeg", "image/png"], typeNames: "JPEG or PNG", maxBytes: 5 * MB, caption: true },
  video: { types: ["video/mp4", "video/3gpp"], typeNames: "MP4 or 3GPP", maxBytes: 16 * MB, caption: true },
  audio: {
    types: ["audio/aac", "audio/amr", "audio/mpeg", "audio/mp4", "audio/ogg"],
    typeNames: "AAC, AMR, MP3 (audio/mpeg), M4A (audio/mp4) or OGG",
    maxBytes: 16 * MB,
    caption: false
  },
  document: { types: null, typeNames: "any type", maxBytes: 100 * MB, caption: true },
  sticker: { types: ["image/webp"], typeNames: "WebP", maxBytes: 100 * KB, maxAnimatedBytes: 500 * KB, caption: false }
}

/** Whether `value` names a media message type. */
export const isChatappSendMediaType = (value: string): value is ChatappSendMediaType =>
  (CHATAPP_SEND_MEDIA_TYPES as ReadonlyArray<string>).includes(value)

/** Other names of the operator's types, as file type detection or senders give them. */
const ALIASES: Readonly<Record<string, string>> = {
  "image/jpg": "image/jpeg",
  "image/pjpeg": "image/jpeg",
  "application/ogg": "audio/ogg",
  "audio/opus": "audio/ogg",
  "audio/x-m4a": "audio/mp4",
  "audio/mp3": "audio/mpeg",
  "audio/x-aac": "audio/aac",
  "video/x-m4v": "video/mp4"
}

/** A content type without parameters, lower-cased, under the operator's name for it (`audio/x-m4a` → `audio/mp4`). */
export const essenceOf = (contentType: string): string => {
  const essence = contentType.split(";")[0]!.trim().toLowerCase()
  return ALIASES[essence] ?? essence
}

/**
 * The message type a file is sent as when the request names none: a JPEG or PNG an image, a WebP a
 * sticker, an MP4 or 3GPP a video, an operator audio type audio, anything else a document.
 */
export const mediaTypeFor = (contentType: string): ChatappSendMediaType => {
  const type = essenceOf(contentType)
  for (const kind of ["image", "sticker", "video", "audio"] as const) {
    if (CHATAPP_MEDIA_RULES[kind].types!.includes(type)) return kind
  }
  return "document"
}

const sizeName = (bytes: number) => (bytes >= MB ? `${bytes / MB} MB` : `${bytes / KB} KB`)

/** How the limit of `kind` reads in a refusal: `image: JPEG or PNG, at most 5 MB`. */
export const describeLimit = (kind: ChatappSendMediaType): string => {
  const rule = CHATAPP_MEDIA_RULES[kind]
  const size = rule.maxAnimatedBytes === undefined
    ? `at most ${sizeName(rule.maxBytes)}`
    : `at most ${sizeName(rule.maxBytes)} static or ${sizeName(rule.maxAnimatedBytes)} animated`
  return `${kind}: ${rule.typeNames}, ${size}`
}

/** A file as the limits see it. */
export interface MediaFileFacts {
  readonly contentType: string
  readonly fileSize: number
  /** For a WebP: whether it is animated (null when not known). */
  readonly animated: boolean | null
}

/** Why the operator would refuse `file` as a `kind` message, or null when it fits. */
export const mediaRefusal = (kind: ChatappSendMediaType, file: MediaFileFacts): { readonly reason: string; readonly type: string } | null => {
  const rule = CHATAPP_MEDIA_RULES[kind]
  const type = essenceOf(file.contentType)
  if (rule.types !== null && !rule.types.includes(type)) {
    return { type: "media_type_not_supported", reason: `A chat-app ${describeLimit(kind)}; this file is ${type}` }
  }
  const max = file.animated === true && rule.maxAnimatedBytes !== undefined ? rule.maxAnimatedBytes : rule.maxBytes
  if (file.fileSize > max) {
    return { type: "media_too_large", reason: `A chat-app ${describeLimit(kind)}; this file is ${file.fileSize} bytes` }
  }
  if (file.fileSize === 0) return { type: "media_empty", reason: "The file is empty" }
  return null
}

/**
 * Whether WebP `bytes` are animated: a `VP8X` extended header whose flags carry the animation bit.
 * Anything else (a simple WebP, or not a WebP) is static.
 */
export const isAnimatedWebp = (bytes: Uint8Array): boolean => {
  const ascii = (from: number, to: number) => String.fromCharCode(...bytes.subarray(from, to))
  return bytes.length >= 21 && ascii(0, 4) === "RIFF" && ascii(8, 12) === "WEBP" && ascii(12, 16) === "VP8X" &&
    (bytes[20]! & 0x02) !== 0
}

/**
 * The operator's message of a `kind` file already uploaded as `mediaId`: the caption where the type
 * shows one, the file's name on a document.
 */
export const mediaMessageOf = (
  kind: ChatappSendMediaType,
  mediaId: string,
  caption: string | null,
  filename: string
): { readonly type: string; readonly [key: string]: unknown } => {
  const captioned = caption !== null && CHATAPP_MEDIA_RULES[kind].caption ? { caption } : {}
  const named = kind === "document" ? { filename } : {}
  return { type: kind, [kind]: { id: mediaId, ...captioned, ...named } }
}
