/**
 * omnichannel-core: the domain of a multi-tenant omnichannel messaging service.
 * One namespace per area; `make` starts the library over your storage and returns the HTTP handler.
 */
export { make, type Omnichannel, type OmnichannelOptions, routes, servicesLayer, type Services, VERSION, type WorkerOptions, type Workers } from "./app/Omnichannel.ts"
export type { ApiHandler, ApiHandlerOptions } from "./http/ApiHandler.ts"
export type { DirectAnswer, DirectRoute } from "./kernel/DirectRoute.ts"
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
export * as Summaries from "./summaries/index.ts"
export * as TeamChat from "./team-chat/index.ts"
export * as Retention from "./retention/index.ts"
// Types are exported flat: declaration bundling cannot put interfaces inside the namespaces above.
export type { BackgroundJob, Running } from "./kernel/BackgroundWork.ts"
export type {
  Bootstrapped,
  CreatedChannel,
  CreatedEmailIntegration,
  IssuedApiKey,
  IssuedUser,
  ListedApiKey,
  ListedChannel
} from "./auth/Operator.ts"
export type { ChannelThroughput, ThroughputGrant } from "./channels/ThroughputService.ts"
export type { ConversationSend } from "./email/EmailService.ts"
export type { SummaryCaller, SummaryQuery, SummaryRequest, SummaryTarget } from "./summaries/SummaryService.ts"
export type { TeamChatActor } from "./team-chat/TeamChatService.ts"
export type { ReceivedEmailInput } from "./kernel/EmailEvents.ts"
export { EmailHandlers } from "./kernel/EmailEvents.ts"
export { PublicUrl } from "./kernel/PublicUrl.ts"
export type { ConnectTokenEvent, ConnectTokenIntent, ConnectTokenState, ConnectTokenStatus } from "./connect-tokens/ConnectTokenMachine.ts"
/** The ports, flat: what a storage adapter implements. */
export * from "./ports/index.ts"
/**
 * What the public declarations mention, exported by name so that an application's own declarations
 * (`declaration: true`) can name them: a type only reachable inside the bundle fails there with
 * TS2742/TS2883/TS4023 ("cannot be named"). The schemas among them are also in their area's namespace.
 */
export { DeliveryState, DeliveryStatus } from "./ports/WebhookDeliveryStore.ts"
export { EndpointState, RetryStrategy } from "./ports/WebhookEndpointStore.ts"
export { EventEnvelope } from "./kernel/EventEnvelope.ts"
export type { envelopeJson, makeEvent, rememberEnvelopeJson } from "./kernel/EventEnvelope.ts"
export { HmacSigner } from "./ports/HmacSigner.ts"
export { OperatorErrorKind } from "./kernel/OperatorErrorKind.ts"
export type { PageRequest } from "./kernel/Pagination.ts"
export type { ApiKeyPrincipal, UserPrincipal } from "./kernel/Principal.ts"
export type { ChatappFieldHandler, ChatappMessageHandler, ChatappStatusHandler } from "./kernel/ChatappEvents.ts"
export type { Route } from "./http/Route.ts"
export type { SummaryFields } from "./summaries/Summary.ts"
export type { SummaryCandidate, SummaryTransition } from "./summaries/SummaryMachine.ts"
export type { SubscriptionChange } from "./lists/ListService.ts"
export type { KeywordState } from "./lists/Keywords.ts"
export type { ContactImportDeps } from "./lists/ContactImport.ts"
export type { SettledMessage } from "./messages/OutboundLifecycle.ts"
export type { OutgoingMessage, ReceivedMessage } from "./messages/MessageRecording.ts"
export type { OutboundDelivery } from "./messages/MessageService.ts"
export type { InboundFile } from "./attachments/AttachmentService.ts"
export type { BrowseRequest, PreparedTemplateSend } from "./templates/TemplateService.ts"
export type { LibraryCopy } from "./templates/TemplateLibraryService.ts"
export type { NumberPacer } from "./channels/NumberPacer.ts"
export type { PlannedBatch, SplitPlanInput, WarmupInput, WarmupResult } from "./campaigns/Pacing.ts"
export type { CampaignEngineSettings } from "./campaigns/CampaignEngine.ts"
export type { ReceivedEmail } from "./email/ReceivedEmail.ts"
export type { ChosenFile, FilePlacement } from "./email/OutgoingEmail.ts"
export type { OpenLink } from "./connect-tokens/ConnectTokenService.ts"
export type { Admission } from "./team-chat/TeamChatRules.ts"
export type { WritebackInput, WritebackPlan, WritebackResult } from "./flows/Writeback.ts"
export type { SignatureHeaders, SignatureInput } from "./webhooks/Signature.ts"
export type { CheckResult } from "./webhooks/EndpointCheck.ts"
export type { DispatchSettings } from "./webhooks/engine/DispatchSettings.ts"
export type { RetentionSettings } from "./retention/Retention.ts"
// The classes the areas' namespaces hold, by name as types (use them as values through the namespace):
// a namespace holds only an alias of each, which a declaration cannot name them by.
export type {
  BadRequest,
  ChannelUnavailable,
  Conflict,
  FailedWithBody,
  FeatureDisabled,
  Forbidden,
  InvalidRequest,
  MissingScope,
  NotFound,
  OperatorFailed,
  Unauthenticated
} from "./kernel/ApiError.ts"
export type { BackgroundWork } from "./kernel/BackgroundWork.ts"
export type { ChatappHandlers, RetryLater } from "./kernel/ChatappEvents.ts"
export type { EncodedJson } from "./kernel/EncodedJson.ts"
export type { InboundSettingsService } from "./app/Omnichannel.ts"
export type { PayloadTooLarge } from "./http/RequestBody.ts"
export type { ApiKeyAuth } from "./auth/ApiKeyAuth.ts"
export type { Operator } from "./auth/Operator.ts"
export type { TenantService } from "./tenants/TenantService.ts"
export type { ContactService } from "./contacts/ContactService.ts"
export type { ChannelService } from "./channels/ChannelService.ts"
export type { SendingLimitService } from "./channels/SendingLimitService.ts"
export type { ThroughputService } from "./channels/ThroughputService.ts"
export type { ConnectLinks } from "./connect-tokens/ConnectLinks.ts"
export type { ChannelTypeUnavailable, ConnectTokenService, LinkUnusable } from "./connect-tokens/ConnectTokenService.ts"
export type { ConversationService } from "./conversations/ConversationService.ts"
export type { MessageService } from "./messages/MessageService.ts"
export type { AttachmentService } from "./attachments/AttachmentService.ts"
export type { DownloadLinks } from "./attachments/DownloadLinks.ts"
export type { EmailService } from "./email/EmailService.ts"
export type { UnreadableEmail } from "./email/ReceivedEmail.ts"
export type { EventService } from "./events/EventService.ts"
export type { ChatappWebhookSettings } from "./inbound/ChatappWebhookSettings.ts"
export type { InboundRetentionService } from "./inbound/InboundRetentionService.ts"
export type { InboundService } from "./inbound/InboundService.ts"
export type { WebhookDeliveryService } from "./webhooks/WebhookDeliveryService.ts"
export type { WebhookDispatcher } from "./webhooks/WebhookDispatcher.ts"
export type { WebhookEndpointService } from "./webhooks/WebhookEndpointService.ts"
export type { WebhookRetentionService } from "./webhooks/WebhookRetentionService.ts"
export type { TemplateLibraryService } from "./templates/TemplateLibraryService.ts"
export type { TemplateService } from "./templates/TemplateService.ts"
export type { ListService } from "./lists/ListService.ts"
export type { CampaignService } from "./campaigns/CampaignService.ts"
export type { FlowService } from "./flows/FlowService.ts"
export type { SummaryService } from "./summaries/SummaryService.ts"
export type { TeamChatService } from "./team-chat/TeamChatService.ts"
// The webhooks' nested namespaces, by name as types: `Webhooks.DeliveryMachine` is otherwise an alias
// that an application's declarations cannot name (TS4023), and this keeps their types reachable.
import type * as DeliveryMachine from "./webhooks/DeliveryMachine.ts"
import type * as EndpointMachine from "./webhooks/EndpointMachine.ts"
export type { DeliveryMachine, EndpointMachine }
export type { DeliveryTransition } from "./webhooks/DeliveryMachine.ts"
export type { EndpointTransition } from "./webhooks/EndpointMachine.ts"
export type { ContactErasureService } from "./contacts/ContactErasureService.ts"
