import type { Kysely } from "kysely"

/**
 * Traces: each raw inbound payload keeps the W3C trace context (`traceparent`) of the request that
 * stored it, so its processing (and the events and deliveries that follow from it) joins the trace
 * of the operator's request. Null when tracing is off. Nullable: no rewrite of existing rows. Never
 * edit once landed.
 */
export const up = async (db: Kysely<unknown>): Promise<void> => {
  await db.schema.alterTable("inbound_payloads").addColumn("trace_context", "text").execute()
}
