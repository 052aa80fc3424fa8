import { Clock, Effect, Schema, SchemaTransformation } from "effect"
import { NotFound } from "./ApiError.ts"

/** A new random identifier (UUID v4), used for every resource the service creates. */
export const newIdNow = (): string => globalThis.crypto.randomUUID()

/** `newIdNow` as an effect. */
export const newId: Effect.Effect<string> = Effect.sync(newIdNow)

/**
 * A new identifier whose order follows time: a UUID of version 7, its first 48 bits the clock's
 * milliseconds, the rest random (a version 4 UUID's random bits). Rows stored together then land on
 * the same pages of their key's index instead of a random page each (on SQLite that halved the cost
 * of storing an inbound payload).
 */
export const newTimeOrderedId: Effect.Effect<string> = Effect.map(Clock.currentTimeMillis, (millis) => timeOrderedIdAt(millis))

/** `newTimeOrderedId` for a time the caller read from its clock. */
export const timeOrderedIdAt = (millis: number): string => {
  const time = millis.toString(16).padStart(12, "0")
  return `${time.slice(0, 8)}-${time.slice(8)}-7${newIdNow().slice(15)}`
}

const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** True when `value` has the shape of a UUID (any version); ids from paths are checked before lookups. */
export const isUuid = (value: string): boolean => UUID_PATTERN.test(value)

/**
 * The UUID in path parameter `name`, lower-cased; a malformed one cannot name anything, so it
 * fails as an unknown id would: `NotFound` with `${what} ${id} not found`.
 */
export const pathId = (
  params: Readonly<Record<string, string>>,
  name: string,
  what: string
): Effect.Effect<string, NotFound> => {
  const id = params[name] ?? ""
  return isUuid(id) ? Effect.succeed(id.toLowerCase()) : Effect.fail(new NotFound({ message: `${what} ${id} not found` }))
}

// `format: uuid` on both sides, so the OpenAPI document says so whichever side it shows.
const UuidText = Schema.String.annotate({ format: "uuid" })

/**
 * An id in an answer that this library made (`newId` / `newTimeOrderedId`): documented as
 * `format: uuid` for generated clients, but not checked, so a stored value of any shape still encodes.
 * Not for ids another system or the caller chose (a provider's `external_id`, a Meta flow id, a pricing model id).
 */
export const UuidId = UuidText

/** A UUID in a query or body, any case, decoded lower-cased (ids are stored lower-case). */
export const UuidString = UuidText.check(
  Schema.isPattern(UUID_PATTERN, { message: "Must be a UUID" })
).pipe(
  Schema.decodeTo(
    UuidText,
    SchemaTransformation.transform({ decode: (s: string) => s.toLowerCase(), encode: (s: string) => s })
  )
)

/**
 * An attachment id in a send request's list: a UUID, decoded lower-cased. Anything else (a raw URL,
 * typically) fails naming its element, with the way to send a file from a URL.
 */
export const AttachmentIdString = UuidText.check(
  Schema.isPattern(UUID_PATTERN, {
    message: "Must be an attachment id (a UUID); to send a file from a URL, call POST /attachments/from-url first and pass the id it returns"
  })
).pipe(
  Schema.decodeTo(
    UuidText,
    SchemaTransformation.transform({ decode: (s: string) => s.toLowerCase(), encode: (s: string) => s })
  )
)
