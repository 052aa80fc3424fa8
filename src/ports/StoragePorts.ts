import type { AccountStore } from "./AccountStore.ts"
import type { ApiKeyStore } from "./ApiKeyStore.ts"
import type { AttachmentStore } from "./AttachmentStore.ts"
import type { CampaignStore } from "./CampaignStore.ts"
import type { ChannelStore } from "./ChannelStore.ts"
import type { ConnectTokenStore } from "./ConnectTokenStore.ts"
import type { ContactStore } from "./ContactStore.ts"
import type { ConversationStore } from "./ConversationStore.ts"
import type { EmailStore } from "./EmailStore.ts"
import type { FlowStore } from "./FlowStore.ts"
import type { InboundStore } from "./InboundStore.ts"
import type { LibraryCacheStore } from "./LibraryCacheStore.ts"
import type { ListStore } from "./ListStore.ts"
import type { MessageStore } from "./MessageStore.ts"
import type { OutboxStore } from "./OutboxStore.ts"
import type { SendingLimitStore } from "./SendingLimitStore.ts"
import type { SendRateStore } from "./SendRateStore.ts"
import type { SummaryStore } from "./SummaryStore.ts"
import type { TeamChatStore } from "./TeamChatStore.ts"
import type { TemplateStore } from "./TemplateStore.ts"
import type { TenantStore } from "./TenantStore.ts"
import type { Transactor } from "./Transactor.ts"
import type { WebhookDeliveryStore } from "./WebhookDeliveryStore.ts"
import type { WebhookEndpointStore } from "./WebhookEndpointStore.ts"

/** The ports a storage adapter must provide. */
export type StoragePorts =
  | Transactor
  | TenantStore
  | AccountStore
  | ApiKeyStore
  | ContactStore
  | OutboxStore
  | ChannelStore
  | ConnectTokenStore
  | WebhookEndpointStore
  | WebhookDeliveryStore
  | InboundStore
  | ConversationStore
  | MessageStore
  | AttachmentStore
  | TemplateStore
  | LibraryCacheStore
  | SendingLimitStore
  | SendRateStore
  | EmailStore
  | ListStore
  | CampaignStore
  | FlowStore
  | SummaryStore
  | TeamChatStore
