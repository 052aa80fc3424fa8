import { Effect, Schema, SchemaTransformation } from "effect"
import { NotFound } from "./ApiError.ts"

/** A new random identifier (UUID v4), used for every resource the service creates. */
export const newIdNow = (): string => globalThis.crypto.randomUUID()

/** `newIdNow` as an effect. */
export const newId: Effect.Effect<string> = Effect.sync(newIdNow)

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

/** A UUID in a query or body, any case, decoded lower-cased (ids are stored lower-case). */
export const UuidString = Schema.String.check(
  Schema.isPattern(UUID_PATTERN, { message: "Must be a UUID" })
).pipe(
  Schema.decodeTo(
    Schema.String,
    SchemaTransformation.transform({ decode: (s: string) => s.toLowerCase(), encode: (s: string) => s })
  )
)

/**
 * An attachment id in a send request's list: a UUID, decoded lower-cased. Anything else (a raw URL,
 * typically) fails naming its element, with the way to send a file from a URL.
 */
export const AttachmentIdString = Schema.String.check(
  Schema.isPattern(UUID_PATTERN, {
    message: "Must be an attachment id (a UUID); to send a file from a URL, call POST /attachments/from-url first and pass the id it returns"
  })
).pipe(
  Schema.decodeTo(
    Schema.String,
    SchemaTransformation.transform({ decode: (s: string) => s.toLowerCase(), encode: (s: string) => s })
  )
)
