import { Effect } from "effect"
import type {
  ChatappErrorInfo,
  ChatappEvent,
  ChatappStatusEvent,
  ParsedPayload
} from "../kernel/ChatappEvents.ts"
import { operatorErrorKindOf } from "../kernel/OperatorErrorKind.ts"
import { sha256Hex } from "../kernel/Secret.ts"

// A JSON object (what `JSON.parse` makes of `{…}`): checked by hand, as it runs for every object of every payload.
const isRecord = (value: unknown): value is Readonly<Record<string, unknown>> =>
  typeof value === "object" && value !== null && !Array.isArray(value)
const str = (value: unknown): string | null => (typeof value === "string" && value !== "" ? value : null)
const num = (value: unknown): number | null =>
  typeof value === "number" && Number.isFinite(value) ? value : typeof value === "string" && /^-?\d{1,12}$/.test(value) ? Number(value) : null
const records = (value: unknown): ReadonlyArray<Readonly<Record<string, unknown>>> =>
  Array.isArray(value) ? value.filter(isRecord) : []

/** The operator's Unix-seconds timestamp as ISO text, or null when absent or out of any sane range. */
const isoOf = (value: unknown): string | null => {
  const seconds = num(value)
  if (seconds === null || seconds < 946_684_800 || seconds > 32_503_680_000) return null
  return new Date(seconds * 1000).toISOString()
}

const STATUSES = new Set(["sent", "delivered", "read", "failed"])

/** The first error object of `errors`, if any. */
export const errorInfoOf = (errors: unknown): ChatappErrorInfo | null => {
  const first = records(errors)[0]
  if (first === undefined) return null
  const data = isRecord(first.error_data) ? first.error_data : {}
  return {
    code: num(first.code),
    title: str(first.title),
    message: str(first.message) ?? str(first.title) ?? "The operator reported an error",
    details: str(data.details)
  }
}

const decoder = new TextDecoder("utf-8", { fatal: true })

/** Deepest nesting read: the operator's payloads are under ten levels; deeper is not a payload of theirs. */
export const MAX_PAYLOAD_DEPTH = 64

/**
 * Whether JSON text `text` nests no deeper than `max` arrays and objects, read from the text before it
 * is parsed: one pass over its characters, strings skipped (a walk of the parsed tree cost three times
 * the parse). Exact for JSON text; text that is not JSON fails its parse anyway.
 */
const nestsWithin = (text: string, max: number): boolean => {
  let depth = 0
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c === 0x22) {
      // A string: on to its closing quote, past escaped characters.
      for (i++; i < text.length; i++) {
        const d = text.charCodeAt(i)
        if (d === 0x5c) i++
        else if (d === 0x22) break
      }
    } else if (c === 0x7b || c === 0x5b) {
      if (++depth > max) return false
    } else if (c === 0x7d || c === 0x5d) depth--
  }
  return true
}

// PostgreSQL's text cannot hold U+0000, and no person types it: read as U+FFFD wherever it appears.
const withoutNul = (_key: string, value: unknown) => (typeof value === "string" ? value.replaceAll("\0", "\uFFFD") : value)

/**
 * A number token of 16 digits or more (past 2^53 it may not be held exactly): only then is the reviver
 * below needed. A JSON number follows the start, `:`, `[` or `,` (and blanks), so none is missed; digits
 * inside a string (a conversation id of 32 hex digits often holds 16 in a row) do not count unless a
 * string itself holds such a run after one of those marks, which only costs the slower parse.
 */
const LONG_INTEGER = /(?:^|[:[,])[ \t\r\n]*-?\d{16}/
/**
 * Reads whole numbers JSON cannot hold exactly (the operator writes some ids, e.g. a template's
 * `message_template_id`, as numbers) as their digits, where the runtime hands revivers the source
 * text (V8, SpiderMonkey, JavaScriptCore since 2023); elsewhere they stay numbers. Also replaces U+0000.
 */
const exactIntegers = (_key: string, value: unknown, context?: { readonly source?: string }) => {
  if (typeof value === "string") return value.replaceAll("\0", "\uFFFD")
  if (typeof value === "number" && !Number.isSafeInteger(value) && context?.source !== undefined && /^-?\d+$/.test(context.source)) {
    return context.source
  }
  return value
}

/** An operator id as the service keeps it: short printable text, else null (a hostile value is skipped, not stored). */
const idOf = (value: unknown, max = 256): string | null => {
  const text = str(value) ?? num(value)?.toString() ?? null
  return text !== null && text.length <= max && /^[\x21-\x7e]+$/.test(text) ? text : null
}

/**
 * Reads a `POST /webhooks/chatapp` body into events: every entry and every change, never only the
 * first. Whatever cannot be read (not JSON, another object, a message without an id) is skipped with
 * a note; nothing here fails.
 */
export const parseChatappPayload = (body: Uint8Array): Effect.Effect<ParsedPayload> =>
  Effect.gen(function*() {
    const notes: Array<string> = []
    let json: unknown
    let text: string
    try {
      text = decoder.decode(body)
    } catch {
      return { events: [], notes: ["body is not JSON text"] }
    }
    if (!nestsWithin(text, MAX_PAYLOAD_DEPTH)) {
      return { events: [], notes: [`body nests deeper than ${MAX_PAYLOAD_DEPTH} levels`] }
    }
    try {
      // Revivers cost: one runs only when a long number may be there, or an escaped `\u0000` (the
      // only way U+0000 gets in: JSON forbids it raw).
      json = LONG_INTEGER.test(text)
        ? JSON.parse(text, exactIntegers as (key: string, value: unknown) => unknown)
        : text.includes("\\u0000")
        ? JSON.parse(text, withoutNul)
        : JSON.parse(text)
    } catch {
      return { events: [], notes: ["body is not JSON text"] }
    }
    if (!isRecord(json)) return { events: [], notes: ["body is not a JSON object"] }
    if (json.object !== "whatsapp_business_account") {
      notes.push(`object ${JSON.stringify(json.object ?? null)} is not a chat-app business account payload`)
    }
    const events: Array<ChatappEvent> = []
    const entries = records(json.entry)
    if (entries.length === 0) notes.push("no entries")
    for (const [e, entry] of entries.entries()) {
      const entryId = idOf(entry.id, 64) ?? ""
      for (const [c, change] of records(entry.changes).entries()) {
        const field = idOf(change.field, 128)
        const value = change.value
        if (field === null) {
          notes.push(`entry ${e} change ${c}: no field, or not a field name`)
          continue
        }
        const metadata = isRecord(value) && isRecord(value.metadata) ? value.metadata : {}
        const phoneNumberId = idOf(metadata.phone_number_id, 64)
        if (field !== "messages" || !isRecord(value)) {
          // The entry's time is part of the key: the same change notified again later is a new change;
          // the same payload delivered twice is not.
          const key = `field:${yield* sha256Hex(JSON.stringify([entryId, entry.time ?? null, field, value ?? null]))}`
          events.push({ kind: "field", key, entryId, field, phoneNumberId, value: value ?? null })
          continue
        }
        if (phoneNumberId === null) {
          notes.push(`entry ${e} change ${c}: messages without a readable metadata.phone_number_id`)
          continue
        }
        const profiles = new Map<string, string>()
        for (const contact of records(value.contacts)) {
          const waId = str(contact.wa_id)
          const name = isRecord(contact.profile) ? str(contact.profile.name) : null
          if (waId !== null && name !== null) profiles.set(waId, name)
        }
        for (const [m, message] of records(value.messages).entries()) {
          const externalId = idOf(message.id)
          // The sender's chat-app id is the digits of their number (E.164 has at most 15).
          const from = str(message.from)?.replace(/^\+/, "") ?? null
          const type = idOf(message.type, 64)
          if (externalId === null || from === null || !/^\d{5,20}$/.test(from) || type === null) {
            notes.push(`entry ${e} change ${c} message ${m}: id, sender number or type missing or unreadable`)
            continue
          }
          events.push({
            kind: "message",
            key: `message:${externalId}`,
            entryId,
            phoneNumberId,
            from,
            profileName: profiles.get(from) ?? null,
            externalId,
            type,
            sentAt: isoOf(message.timestamp),
            message
          })
        }
        for (const [s, status] of records(value.statuses).entries()) {
          const externalId = idOf(status.id)
          const name = str(status.status)
          if (externalId === null || name === null || !STATUSES.has(name)) {
            notes.push(`entry ${e} change ${c} status ${s}: id missing or unreadable, or status ${JSON.stringify(status.status ?? null).slice(0, 40)} unknown`)
            continue
          }
          const error = name === "failed"
            ? errorInfoOf(status.errors) ?? { code: null, title: null, message: "The operator reported the message as failed", details: null }
            : null
          events.push({
            kind: "status",
            key: `status:${externalId}:${name}`,
            entryId,
            phoneNumberId,
            externalId,
            status: name as ChatappStatusEvent["status"],
            occurredAt: isoOf(status.timestamp),
            recipientId: str(status.recipient_id),
            error,
            errorKind: error === null ? null : operatorErrorKindOf(error.code, null, false),
            callbackData: str(status.biz_opaque_callback_data)
          })
        }
        const errors = errorInfoOf(value.errors)
        if (errors !== null) notes.push(`entry ${e} change ${c}: operator error ${errors.code ?? ""} ${errors.message}`)
      }
    }
    return { events, notes }
  })

