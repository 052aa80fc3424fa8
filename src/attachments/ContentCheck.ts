import { Effect } from "effect"
import { fileTypeFromBuffer } from "file-type"

/** What the bytes of a file were checked to be. */
export interface CheckedType {
  /** The type to store and to serve the file with. */
  readonly contentType: string
  /** False when a type was declared and the bytes disagree (the checked type is kept all the same). */
  readonly matches: boolean
}

const OCTET_STREAM = "application/octet-stream"
const TOKEN = "[a-z0-9!#$&^_.+-]+"
const MEDIA_TYPE = new RegExp(`^${TOKEN}/${TOKEN}$`)
const CHARSET = new RegExp(`(?:^|;)\\s*charset\\s*=\\s*"?(${TOKEN})"?\\s*(?:;|$)`)

// Names senders use for the same type; compared after parameters are dropped.
const ALIASES: Readonly<Record<string, string>> = {
  "image/jpg": "image/jpeg",
  "image/pjpeg": "image/jpeg",
  "application/ogg": "audio/ogg",
  "audio/mp3": "audio/mpeg",
  "audio/x-wav": "audio/wav",
  "audio/wave": "audio/wav",
  "application/x-zip-compressed": "application/zip",
  // What file-type names some formats, for types senders declare by their family.
  "audio/x-m4a": "audio/mp4",
  "video/x-m4v": "video/mp4",
  "image/apng": "image/png"
}

/** The media type without parameters, lower-cased (`Audio/OGG; codecs=opus` → `audio/ogg`), or null when malformed. */
const essenceOf = (contentType: string): string | null => {
  const essence = contentType.split(";")[0]!.trim().toLowerCase()
  return MEDIA_TYPE.test(essence) ? essence : null
}

const canonical = (essence: string) => ALIASES[essence] ?? essence

/** A media type without parameters, lower-cased and under its usual name (`Image/JPG; q=1` → `image/jpeg`), or null when malformed. */
export const canonicalType = (contentType: string): string | null => {
  const essence = essenceOf(contentType)
  return essence === null ? null : canonical(essence)
}

// Types that file-type cannot recognise by magic bytes but are safe to keep as declared.
const isTextLike = (essence: string) =>
  essence.startsWith("text/") || essence === "application/json" || /^application\/[^/]+\+json$/.test(essence)

/**
 * The type of `bytes`, checked against their magic numbers. When the bytes are recognised, the
 * detected type wins and `matches` tells whether `declared` agrees (`image/jpg` is `image/jpeg`,
 * parameters are ignored). When they are not (plain text, CSV, JSON have no magic number), a
 * declared text-like type is kept with its charset, and anything else becomes
 * `application/octet-stream`, so a browser never runs bytes a sender merely called an image.
 */
export const detectContentType = (bytes: Uint8Array, declared: string | null): Effect.Effect<CheckedType> =>
  Effect.map(
    // A parser failure on hostile bytes means "not recognised", never a failed message.
    Effect.promise(() => fileTypeFromBuffer(bytes).catch(() => undefined)),
    (detected) => {
      // undefined: nothing declared; null: something declared that is no media type.
      const claimed = declared === null || declared.trim() === "" ? undefined : essenceOf(declared)
      if (detected !== undefined) {
        const detectedEssence = essenceOf(detected.mime)
        return {
          contentType: detected.mime,
          matches: claimed === undefined ||
            (claimed !== null && detectedEssence !== null && canonical(claimed) === canonical(detectedEssence))
        }
      }
      if (claimed !== undefined && claimed !== null && isTextLike(claimed)) {
        const charset = CHARSET.exec(declared!.toLowerCase())?.[1]
        return { contentType: charset === undefined ? claimed : `${claimed}; charset=${charset}`, matches: true }
      }
      return { contentType: OCTET_STREAM, matches: claimed === undefined || claimed === OCTET_STREAM }
    }
  )

// Format characters that reorder text (`invoice\u202Efdp.exe` shows as `invoiceexe.pdf`) and zero-width ones.
const INVISIBLE = /[\u200B-\u200F\u202A-\u202E\u2060-\u2069\uFEFF]/g
const MAX_FILENAME = 200
// An extension worth keeping when a name is cut: a dot and a few letters or digits at the end.
const EXTENSION = /\.[A-Za-z0-9]{1,16}$/

/**
 * A file name safe to store and to put in a download header: no path separators, no control or
 * invisible characters, no dots or spaces at either end, at most 200 characters (a long name is
 * cut before its extension, which is kept); `fallback` when nothing is left.
 */
export const safeFilename = (name: string, fallback: string): string => {
  const cleaned = name.normalize("NFC")
    .replace(/[/\\]/g, "")
    .replace(/\p{Cc}/gu, "")
    .replace(INVISIBLE, "")
    .replace(/^[.\s]+|[.\s]+$/g, "")
  if (cleaned === "") return fallback
  const chars = Array.from(cleaned)
  if (chars.length <= MAX_FILENAME) return cleaned
  const extension = EXTENSION.exec(cleaned)?.[0] ?? ""
  const stem = chars.slice(0, MAX_FILENAME - extension.length).join("").replace(/[.\s]+$/, "")
  return `${stem}${extension}`
}

const EXTENSIONS: Readonly<Record<string, string>> = {
  "image/jpeg": "jpg",
  "image/png": "png",
  "image/gif": "gif",
  "image/webp": "webp",
  "image/heic": "heic",
  "audio/ogg": "ogg",
  "audio/mpeg": "mp3",
  "audio/mp4": "m4a",
  "audio/aac": "aac",
  "audio/amr": "amr",
  "audio/wav": "wav",
  "video/mp4": "mp4",
  "video/3gpp": "3gp",
  "video/quicktime": "mov",
  "video/webm": "webm",
  "application/pdf": "pdf",
  "application/zip": "zip",
  "application/msword": "doc",
  "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
  "application/vnd.ms-excel": "xls",
  "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx",
  "application/vnd.ms-powerpoint": "ppt",
  "application/vnd.openxmlformats-officedocument.presentationml.presentation": "pptx",
  "application/json": "json",
  "text/plain": "txt",
  "text/csv": "csv",
  "text/vcard": "vcf",
  "text/calendar": "ics",
  "text/html": "html"
}

/** The usual extension for a type, without the dot, for names of files that came without one (`bin` when unknown). */
export const extensionFor = (contentType: string): string => {
  const essence = essenceOf(contentType)
  if (essence === null) return "bin"
  // An Opus voice note is an Ogg file whose usual extension says the codec.
  if (canonical(essence) === "audio/ogg" && /codecs\s*=\s*"?opus/i.test(contentType)) return "opus"
  return EXTENSIONS[canonical(essence)] ?? "bin"
}
