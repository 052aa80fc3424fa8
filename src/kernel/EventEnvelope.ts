import { Effect, Schema } from "effect"
import { newId, UuidId } from "./Id.ts"
import { now } from "./Timestamp.ts"

/**
 * The spec's standard event envelope. `id` is unique per emitted event; `event_id` is the key
 * receivers de-duplicate on, equal to `id` unless the event names its own (a flow session id, …).
 */
export const EventEnvelope = Schema.Struct({
  id: UuidId,
  type: Schema.String,
  event_id: UuidId,
  created_at: Schema.String,
  tenant_id: UuidId,
  data: Schema.Record(Schema.String, Schema.Unknown)
})
/** The spec's standard event envelope. */
export type EventEnvelope = typeof EventEnvelope.Type

/** Builds an envelope stamped with a new id and the Clock's time. */
export const makeEvent = (input: {
  readonly type: string
  readonly tenantId: string
  readonly data: Readonly<Record<string, unknown>>
  readonly eventId?: string
}): Effect.Effect<EventEnvelope> =>
  Effect.gen(function*() {
    const id = yield* newId
    return {
      id,
      type: input.type,
      event_id: input.eventId ?? id,
      created_at: yield* now,
      tenant_id: input.tenantId,
      data: input.data
    }
  })

// Envelopes are immutable once made, so each object's JSON is computed once: a delivery's envelope
// is stored and sent as the same text.
const json = new WeakMap<EventEnvelope, string>()

/**
 * Records `text` as the JSON of `envelope`, for a store that read the envelope from JSON it can
 * reassemble more cheaply than serializing the parsed object again. `text` must be the envelope's
 * JSON with its keys in the object's order.
 */
export const rememberEnvelopeJson = (envelope: EventEnvelope, text: string): void => {
  json.set(envelope, text)
}

/** The envelope as JSON text, serialized once per envelope object. */
export const envelopeJson = (envelope: EventEnvelope): string => {
  let text = json.get(envelope)
  if (text === undefined) {
    text = JSON.stringify(envelope)
    json.set(envelope, text)
  }
  return text
}
