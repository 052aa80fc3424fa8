/**
 * omnichannel-core: the domain of a multi-tenant omnichannel messaging service.
 * One namespace per area; `make` starts the library over your storage and returns the HTTP handler.
 */
export { make, type Omnichannel, type OmnichannelOptions, routes, servicesLayer, type Services, VERSION, type WorkerOptions, type Workers } from "./app/Omnichannel.ts"
export type { ApiHandler, ApiHandlerOptions } from "./http/ApiHandler.ts"
export * as ApiErrors from "./kernel/ApiError.ts"
export * as Scopes from "./kernel/Scope.ts"
export * as Background from "./kernel/BackgroundWork.ts"
export * as Auth from "./auth/index.ts"
export * as Events from "./events/index.ts"
export { OutboxSignal, type OutboxSignalService, withOutboxSignal } from "./events/OutboxSignal.ts"
export * as Tenants from "./tenants/index.ts"
export * as Contacts from "./contacts/index.ts"
export * as Channels from "./channels/index.ts"
export * as ConnectTokens from "./connect-tokens/index.ts"
export * as Webhooks from "./webhooks/index.ts"
export * as Templates from "./templates/index.ts"
export * as Email from "./email/index.ts"
export * as Lists from "./lists/index.ts"
export * as Campaigns from "./campaigns/index.ts"
export * as Flows from "./flows/index.ts"
export * as Retention from "./retention/index.ts"
// Types are exported flat: declaration bundling cannot put interfaces inside the namespaces above.
export type { BackgroundJob, Running } from "./kernel/BackgroundWork.ts"
export type { Bootstrapped, CreatedEmailIntegration, IssuedApiKey, IssuedUser } from "./auth/Operator.ts"
export type { ConversationSend } from "./email/EmailService.ts"
export type { ReceivedEmailInput } from "./kernel/EmailEvents.ts"
export { EmailHandlers } from "./kernel/EmailEvents.ts"
export { PublicUrl } from "./kernel/PublicUrl.ts"
export type { ConnectTokenEvent, ConnectTokenIntent, ConnectTokenState, ConnectTokenStatus } from "./connect-tokens/ConnectTokenMachine.ts"
/** The ports, flat: what a storage adapter implements. */
export * from "./ports/index.ts"
