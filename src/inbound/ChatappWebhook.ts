import { Effect, Schema } from "effect"
import type {
  ChatappErrorInfo,
  ChatappEvent,
  ChatappStatusEvent,
  ParsedPayload
} from "../kernel/ChatappEvents.ts"
import { sha256Hex } from "../kernel/Secret.ts"

const Record = Schema.Record(Schema.String, Schema.Unknown)
const isRecord = Schema.is(Record)
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

/**
 * Reads a `POST /webhooks/chatapp` body into events: every entry and every change, never only the
 * first. Whatever cannot be read (not JSON, another object, a message without an id) is skipped with
 * a note; nothing here fails.
 */
export const parseChatappPayload = (body: Uint8Array): Effect.Effect<ParsedPayload> =>
  Effect.gen(function*() {
    const notes: Array<string> = []
    let json: unknown
    try {
      json = JSON.parse(decoder.decode(body))
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
      const entryId = str(entry.id) ?? num(entry.id)?.toString() ?? ""
      for (const [c, change] of records(entry.changes).entries()) {
        const field = str(change.field)
        const value = change.value
        if (field === null) {
          notes.push(`entry ${e} change ${c}: no field`)
          continue
        }
        const metadata = isRecord(value) && isRecord(value.metadata) ? value.metadata : {}
        const phoneNumberId = str(metadata.phone_number_id) ?? num(metadata.phone_number_id)?.toString() ?? null
        if (field !== "messages" || !isRecord(value)) {
          const key = `field:${yield* sha256Hex(JSON.stringify([entryId, field, value ?? null]))}`
          events.push({ kind: "field", key, entryId, field, phoneNumberId, value: value ?? null })
          continue
        }
        if (phoneNumberId === null) {
          notes.push(`entry ${e} change ${c}: messages without metadata.phone_number_id`)
          continue
        }
        const profiles = new Map<string, string>()
        for (const contact of records(value.contacts)) {
          const waId = str(contact.wa_id)
          const name = isRecord(contact.profile) ? str(contact.profile.name) : null
          if (waId !== null && name !== null) profiles.set(waId, name)
        }
        for (const [m, message] of records(value.messages).entries()) {
          const externalId = str(message.id)
          const from = str(message.from)
          const type = str(message.type)
          if (externalId === null || from === null || type === null) {
            notes.push(`entry ${e} change ${c} message ${m}: id, from or type missing`)
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
          const externalId = str(status.id)
          const name = str(status.status)
          if (externalId === null || name === null || !STATUSES.has(name)) {
            notes.push(`entry ${e} change ${c} status ${s}: id missing or status ${JSON.stringify(status.status ?? null)} unknown`)
            continue
          }
          events.push({
            kind: "status",
            key: `status:${externalId}:${name}`,
            entryId,
            phoneNumberId,
            externalId,
            status: name as ChatappStatusEvent["status"],
            occurredAt: isoOf(status.timestamp),
            recipientId: str(status.recipient_id),
            error: name === "failed" ? errorInfoOf(status.errors) ?? { code: null, title: null, message: "The operator reported the message as failed", details: null } : null
          })
        }
        const errors = errorInfoOf(value.errors)
        if (errors !== null) notes.push(`entry ${e} change ${c}: operator error ${errors.code ?? ""} ${errors.message}`)
      }
    }
    return { events, notes }
  })

