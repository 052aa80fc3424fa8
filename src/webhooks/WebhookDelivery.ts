import { Schema } from "effect"
import { UuidId } from "../kernel/Id.ts"
import type { WebhookDeliveryRecord } from "../ports/WebhookDeliveryStore.ts"
import { canRetry, DeliveryStatus } from "./DeliveryMachine.ts"

/** A delivery as the API returns it: the spec's fields plus `previous_delivery_id`. */
export const WebhookDelivery = Schema.Struct({
  id: UuidId,
  tenant_id: UuidId,
  webhook_endpoint_id: UuidId,
  event_type: Schema.String,
  event_id: UuidId,
  attempt_number: Schema.Int,
  status: DeliveryStatus,
  response_status_code: Schema.NullOr(Schema.Int),
  response_time_ms: Schema.NullOr(Schema.Int),
  error_message: Schema.NullOr(Schema.String),
  next_retry_at: Schema.NullOr(Schema.String),
  created_at: Schema.String,
  completed_at: Schema.NullOr(Schema.String),
  can_retry: Schema.Boolean,
  previous_delivery_id: Schema.NullOr(UuidId)
})
/** A delivery as the API returns it. */
export type WebhookDelivery = typeof WebhookDelivery.Type

/** Response of the deliveries list: items with the spec's flat paging fields. */
export const WebhookDeliveryList = Schema.Struct({
  items: Schema.Array(WebhookDelivery),
  total: Schema.Int,
  page: Schema.Int,
  page_size: Schema.Int,
  has_more: Schema.Boolean
})

/** Response of a manual retry. */
export const WebhookRetried = Schema.Struct({
  success: Schema.Boolean,
  delivery_id: UuidId,
  previous_delivery_id: UuidId,
  message: Schema.String
})

/** Response of verify: what the check got and where the endpoint stands now. */
export const WebhookVerified = Schema.Struct({
  success: Schema.Boolean,
  webhook_id: UuidId,
  is_verified: Schema.Boolean,
  is_active: Schema.Boolean,
  status: Schema.String,
  response_status_code: Schema.NullOr(Schema.Int),
  response_time_ms: Schema.NullOr(Schema.Int),
  error: Schema.NullOr(Schema.String),
  message: Schema.String
})

/** The wire form of a stored delivery. */
export const toWebhookDelivery = (record: WebhookDeliveryRecord): WebhookDelivery => ({
  id: record.id,
  tenant_id: record.tenant_id,
  webhook_endpoint_id: record.webhook_endpoint_id,
  event_type: record.event_type,
  event_id: record.event_id,
  attempt_number: record.attempt_number,
  status: record.status,
  response_status_code: record.response_status_code,
  response_time_ms: record.response_time_ms,
  error_message: record.error_message,
  next_retry_at: record.next_retry_at,
  created_at: record.created_at,
  completed_at: record.completed_at,
  can_retry: canRetry(record),
  previous_delivery_id: record.previous_delivery_id
})
