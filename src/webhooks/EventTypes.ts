/** The event types an endpoint can subscribe to: every type the spec names. */
export const SUBSCRIBABLE_EVENT_TYPES = [
  "message.received",
  "message.sent",
  "conversation.created",
  "conversation.closed",
  "contact.created",
  "contact.updated",
  "contact.unsubscribed",
  "contact.deleted",
  "channel.created",
  "channel.updated",
  "attachment.summarized",
  "chatapp_flow.completed",
  "chatapp_flow.status_changed",
  "chatapp_flow.health_changed"
] as const

/** An event type an endpoint can subscribe to. */
export type SubscribableEventType = typeof SUBSCRIBABLE_EVENT_TYPES[number]
