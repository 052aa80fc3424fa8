import { Effect } from "effect"

/** A new random identifier (UUID v4), used for every resource the service creates. */
export const newId: Effect.Effect<string> = Effect.sync(() => globalThis.crypto.randomUUID())

const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** True when `value` has the shape of a UUID (any version); ids from paths are checked before lookups. */
export const isUuid = (value: string): boolean => UUID_PATTERN.test(value)
