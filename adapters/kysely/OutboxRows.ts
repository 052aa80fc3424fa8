import { type EventEnvelope, rememberEnvelopeJson } from "../../src/kernel/EventEnvelope.ts"
import { rememberTraceContext } from "../../src/kernel/TraceContext.ts"

// An `outbox_events` row as read: the envelope's columns, with `data` still the stored JSON text.
type OutboxRow = Omit<EventEnvelope, "data"> & { readonly data: string }

/**
 * An outbox row as the event it stores. Its JSON (what a webhook delivery sends) is assembled from
 * the stored `data` text rather than serialized again from the parsed object: `append` stored that
 * text with `JSON.stringify`, so the result is the same text. `data` is parsed when first read (and
 * then kept): fan-out reads it only for a `selected` endpoint's source filter, and a delivery sends
 * the text.
 */
export const toEvent = ({ data, ...row }: OutboxRow): EventEnvelope => {
  let parsed: Record<string, unknown> | undefined
  const event: EventEnvelope = {
    id: row.id,
    tenant_id: row.tenant_id,
    type: row.type,
    event_id: row.event_id,
    created_at: row.created_at,
    get data() {
      return parsed ??= JSON.parse(data) as Record<string, unknown>
    }
  }
  rememberEnvelopeJson(
    event,
    `{"id":${JSON.stringify(row.id)},"tenant_id":${JSON.stringify(row.tenant_id)},"type":${JSON.stringify(row.type)},` +
      `"event_id":${JSON.stringify(row.event_id)},"created_at":${JSON.stringify(row.created_at)},"data":${data}}`
  )
  return event
}

/**
 * A row read with its place in the outbox, as fan-out takes it; the trace context it was appended
 * under, when read too, travels with the event (`traceContextOf`).
 */
export const toPlaced = (
  { seq, trace_context, ...row }: OutboxRow & { readonly seq: number | string; readonly trace_context?: string | null }
) => {
  const event = toEvent(row)
  rememberTraceContext(event, trace_context)
  return { seq: Number(seq), event }
}
