/** Webhooks: endpoints and their deliveries (services), the engine that delivers in the background, the retry schedule and the delivery and endpoint machines. */
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
export { WebhookDispatcher } from "./WebhookDispatcher.ts"
export { DispatchSettings } from "./engine/DispatchSettings.ts"
export { WebhookDeliveryService } from "./WebhookDeliveryService.ts"
export { wants } from "./SourceFilter.ts"
export { sign, webCryptoSigner } from "./Signature.ts"
