import type { EventEnvelope } from "../kernel/EventEnvelope.ts"
import type { WebhookEndpointRecord } from "../ports/WebhookEndpointStore.ts"

// The ids that tie an event to a source, for `selected` endpoints.
const sourceOf = (event: EventEnvelope): { readonly channel?: string; readonly emailIntegration?: string } => {
  const data = event.data as {
    readonly channel?: { readonly id?: unknown }
    readonly channel_id?: unknown
    readonly email_integration_id?: unknown
  }
  const channel = typeof data.channel?.id === "string" ? data.channel.id : data.channel_id
  const emailIntegration = data.email_integration_id
  return {
    ...(typeof channel === "string" ? { channel } : {}),
    ...(typeof emailIntegration === "string" ? { emailIntegration } : {})
  }
}

/**
 * Whether `endpoint` wants `event`: it subscribes to the type, and in `selected` mode the event's
 * channel or email integration is one it lists. Events tied to no source (a contact's) pass.
 */
export const wants = (endpoint: WebhookEndpointRecord, event: EventEnvelope): boolean => {
  if (!endpoint.subscribed_events.includes(event.type)) return false
  if (endpoint.source_filter_mode === "all") return true
  const source = sourceOf(event)
  if (source.channel === undefined && source.emailIntegration === undefined) return true
  return (source.channel !== undefined && (endpoint.filtered_channel_ids ?? []).includes(source.channel)) ||
    (source.emailIntegration !== undefined &&
      (endpoint.filtered_email_integration_ids ?? []).includes(source.emailIntegration))
}
