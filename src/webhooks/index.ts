/** Webhooks: endpoint management, the retry schedule and the delivery and endpoint machines. */
export * as DeliveryMachine from "./DeliveryMachine.ts"
export * as EndpointMachine from "./EndpointMachine.ts"
export { SUBSCRIBABLE_EVENT_TYPES } from "./EventTypes.ts"
export {
  MAX_QUEUED_PER_ENDPOINT,
  retryDelaySeconds,
  RetryStrategy,
  reverificationSchedule,
  SUSPEND_AFTER_CONSECUTIVE_FAILURES
} from "./RetrySchedule.ts"
export { CreateWebhookEndpointRequest, UpdateWebhookEndpointRequest, WebhookEndpoint } from "./WebhookEndpoint.ts"
export { newSigningSecret, WebhookEndpointService } from "./WebhookEndpointService.ts"
export { wants, WebhookDispatcher } from "./WebhookDispatcher.ts"
export { sign } from "./Signature.ts"
