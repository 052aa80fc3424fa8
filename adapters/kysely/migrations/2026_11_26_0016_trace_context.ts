import type { Kysely } from "kysely"

/**
 * Traces: each outbox event keeps the W3C trace context (`traceparent`) of the request or job that
 * appended it, and each webhook delivery the one of its event, so fan-out, every attempt and its
 * retries join the trace of what caused them. Both stay null when tracing is off. An endpoint sends
 * `traceparent` to its receiver only once its tenant opts in (`propagate_trace_context`, 0 by
 * default). Nullable or defaulted columns: no rewrite of existing rows. Never edit once landed.
 */
export const up = async (db: Kysely<unknown>): Promise<void> => {
  await db.schema.alterTable("outbox_events").addColumn("trace_context", "text").execute()
  await db.schema.alterTable("webhook_deliveries").addColumn("trace_context", "text").execute()
  await db.schema.alterTable("webhook_endpoints")
    .addColumn("propagate_trace_context", "integer", (c) => c.notNull().defaultTo(0))
    .execute()
}
