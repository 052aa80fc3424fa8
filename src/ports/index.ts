/** Every port the core needs from outside, for adapter authors. */
export { AccountStore, type BillingAccountRecord, type UserRecord } from "./AccountStore.ts"
export { type ApiKeyRecord, ApiKeyStore } from "./ApiKeyStore.ts"
export { type ContactRecord, ContactStore } from "./ContactStore.ts"
export { OutboxNotices, type OutboxNoticesService } from "./OutboxNotices.ts"
export { OutboxStore } from "./OutboxStore.ts"
export { StorageError } from "./StorageError.ts"
export type { StoragePorts } from "./StoragePorts.ts"
export { type TenantRecord, TenantStore } from "./TenantStore.ts"
export { Transactor } from "./Transactor.ts"
export { type ChannelProvider, ChannelProviders, type ProviderConnection, type ProviderField, ProviderRejected } from "./ChannelProviders.ts"
export { type ChannelRecord, ChannelStore } from "./ChannelStore.ts"
export { type ConnectTokenRecord, ConnectTokenStore } from "./ConnectTokenStore.ts"
export {
  type OutboundClient,
  OutboundError,
  OutboundHttp,
  outboundHttpOf,
  type OutboundRequest,
  type OutboundResponse,
  type OutboundSend
} from "./OutboundHttp.ts"
export { WebhookEndpointStore, type WebhookEndpointRecord } from "./WebhookEndpointStore.ts"
export { type Notification, Notifier } from "./Notifier.ts"
export {
  type DeliveryKey,
  type EndpointKey,
  type DeliverySave,
  type DeliveryStateOf,
  type FanOutHold,
  type FanOutLease,
  WebhookDeliveryStore,
  type WebhookDeliveryRecord
} from "./WebhookDeliveryStore.ts"
