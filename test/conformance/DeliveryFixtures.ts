import type { WebhookDeliveryRecord } from "../../src/ports/WebhookDeliveryStore.ts"
import type { WebhookEndpointRecord } from "../../src/ports/WebhookEndpointStore.ts"
import { outboxEvent } from "./Fixtures.ts"

/** An instant of the deliveries' day as stored (fixed-width ISO 8601 UTC with milliseconds), from `HH:MM:SS.mmm`. */
export const at = (time: string): string => `2026-11-22T${time}Z`

/** When the deliveries' tests claim, unless they say otherwise. */
export const NOW = at("12:00:00.000")

/** The lease their claims take, unless they say otherwise. */
export const LEASE_UNTIL = at("12:02:00.000")

// Outbox positions of made-up deliveries only need to grow; a counter shared by the suites keeps them apart.
let nextSeq = 1

/** Reserves `count` outbox positions no other made-up delivery has, and returns the first. */
export const reserveSeqs = (count: number): number => {
  const first = nextSeq
  nextSeq += count
  return first
}

/** A `pending` first delivery of a fresh contact.created event to `endpoint`, fanned out at 12:00. */
export const deliveryRecord = (
  endpoint: WebhookEndpointRecord,
  overrides: Partial<WebhookDeliveryRecord> = {}
): WebhookDeliveryRecord => {
  const envelope = outboxEvent(endpoint.tenant_id)
  return {
    id: globalThis.crypto.randomUUID(),
    tenant_id: endpoint.tenant_id,
    webhook_endpoint_id: endpoint.id,
    event_id: envelope.event_id,
    event_type: envelope.type,
    envelope,
    outbox_seq: reserveSeqs(1),
    previous_delivery_id: null,
    created_at: NOW,
    status: "pending",
    attempt_number: 0,
    max_retries: endpoint.max_retries,
    retry_strategy: endpoint.retry_strategy,
    next_retry_at: null,
    completed_at: null,
    response_status_code: null,
    response_time_ms: null,
    error_message: null,
    ...overrides
  }
}
