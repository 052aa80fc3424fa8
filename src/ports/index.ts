/** Every port the core needs from outside, for adapter authors. */
export { AccountStore, type BillingAccountRecord, type UserRecord } from "./AccountStore.ts"
export { type ApiKeyRecord, ApiKeyStore } from "./ApiKeyStore.ts"
export { type ContactErasure, type ContactRecord, ContactStore } from "./ContactStore.ts"
export { OutboxNotices, type OutboxNoticesService } from "./OutboxNotices.ts"
export { type OutboxPruneCursor, OutboxStore } from "./OutboxStore.ts"
export { StorageError } from "./StorageError.ts"
export type { StoragePorts } from "./StoragePorts.ts"
export { type TenantReach, type TenantRecord, TenantStore } from "./TenantStore.ts"
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
  type OutboundSend,
  type OutboundStreamed
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
export {
  type InboundClaim,
  type InboundOutcome,
  type InboundPayloadRecord,
  type InboundPayloadStatus,
  type InboundSource,
  InboundStore,
  type PayloadToStore
} from "./InboundStore.ts"
export { type ConversationFilter, type ConversationRecord, type ConversationStatus, ConversationStore } from "./ConversationStore.ts"
export {
  type MessageDirection,
  type MessageError,
  type MessageRecord,
  type MessageStatus,
  type MessageStatusColumns,
  type MessageStatusReport,
  MessageStore,
  statusColumnsOf
} from "./MessageStore.ts"
export { type AttachmentOrigin, type AttachmentRecord, AttachmentStore, type UnsentDeletion } from "./AttachmentStore.ts"
export {
  type ChatappCredentials,
  type ChatappLibraryTemplate,
  type ChatappMedia,
  type ChatappMediaUpload,
  type ChatappOutboundMessage,
  type ChatappPage,
  type ChatappPhoneNumber,
  type ChatappSent,
  type ChatappTemplate,
  type ChatappTemplateCreated,
  ChatPlatform,
  ChatPlatformError,
  ChatPlatformErrorKind,
  type LibraryQuery
} from "./ChatPlatform.ts"
export { BlobStore, BlobStoreError, type BlobWritten } from "./BlobStore.ts"
export { type TemplateFilter, type TemplateRecord, TemplateStore } from "./TemplateStore.ts"
export { type LibraryCacheRecord, LibraryCacheStore } from "./LibraryCacheStore.ts"
export { type SendingLimitRecord, SendingLimitStore } from "./SendingLimitStore.ts"
export { type ReservedSlots, type SendRateRecord, SendRateStore, type SlotRequest } from "./SendRateStore.ts"
export { MultipartError, type MultipartFile, MultipartReader } from "./MultipartReader.ts"
export { type MailAddress, Mailer, MailerError, type MailFile, type MailSent, type OutgoingMail } from "./Mailer.ts"
export {
  type EmailAddressValue,
  type EmailAttachmentRecord,
  type EmailHeader,
  type EmailIntegrationRecord,
  type EmailMessageRecord,
  type EmailMessageStatus,
  EmailStore,
  type InlineImageRecord
} from "./EmailStore.ts"
export {
  type ListFilters,
  type ListRecord,
  ListStore,
  type ListType,
  type MarketingOptOutRecord,
  type OptinMethod,
  type SubscriptionRecord
} from "./ListStore.ts"
export {
  type CampaignBatchRecord,
  type CampaignChanges,
  type CampaignClaim,
  type CampaignRecipientRecord,
  type CampaignRecord,
  type CampaignStatus,
  CampaignStore,
  type RecipientCounts,
  type RecipientState,
  type SplitSending,
  THROTTLE_REASONS,
  type ThrottleReason
} from "./CampaignStore.ts"
export {
  type CustomFieldRecord,
  type FlowDefinitionRecord,
  type FlowInput,
  type FlowScreen,
  type FlowSessionRecord,
  FlowStore,
  type FlowVersionRecord,
  type TagRecord,
  type WritebackMapping
} from "./FlowStore.ts"
export { type SummarizeInput, Summarizer, type SummaryDraft, SummarizerError, type SummarySection } from "./Summarizer.ts"
export {
  type CreditBalance,
  type CreditEntryRecord,
  type RateBucket,
  type StoredSummarySection,
  type SummaryOutcome,
  type SummaryRecord,
  SummaryStore
} from "./SummaryStore.ts"
export {
  type TeamChatChannelActivity,
  type TeamChatChannelRecord,
  type TeamChatChannelWithMembers,
  type TeamChatKind,
  type TeamChatMemberRecord,
  type TeamChatMessageRecord,
  TeamChatStore,
  type TenantUser
} from "./TeamChatStore.ts"
