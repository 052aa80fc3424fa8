import type { Layer } from "effect"
import type { EventEnvelope } from "../../src/kernel/EventEnvelope.ts"
import type { BillingAccountRecord, UserRecord } from "../../src/ports/AccountStore.ts"
import type { ApiKeyRecord } from "../../src/ports/ApiKeyStore.ts"
import type { AttachmentRecord } from "../../src/ports/AttachmentStore.ts"
import type { CampaignBatchRecord, CampaignRecipientRecord, CampaignRecord } from "../../src/ports/CampaignStore.ts"
import type { ChannelRecord } from "../../src/ports/ChannelStore.ts"
import type { ConnectTokenRecord } from "../../src/ports/ConnectTokenStore.ts"
import type { ContactRecord } from "../../src/ports/ContactStore.ts"
import type { ConversationRecord } from "../../src/ports/ConversationStore.ts"
import type { EmailAttachmentRecord, EmailIntegrationRecord, EmailMessageRecord, InlineImageRecord } from "../../src/ports/EmailStore.ts"
import type { CustomFieldRecord, FlowDefinitionRecord, FlowSessionRecord, FlowVersionRecord, TagRecord } from "../../src/ports/FlowStore.ts"
import type { InboundPayloadRecord, InboundSource } from "../../src/ports/InboundStore.ts"
import type { ListRecord, MarketingOptOutRecord, SubscriptionRecord } from "../../src/ports/ListStore.ts"
import type { MessageRecord, MessageStatusReport } from "../../src/ports/MessageStore.ts"
import type { StoragePorts } from "../../src/ports/StoragePorts.ts"
import type { CreditBalance, CreditEntryRecord, SummaryRecord } from "../../src/ports/SummaryStore.ts"
import type { TeamChatChannelRecord, TeamChatMemberRecord, TeamChatMessageRecord } from "../../src/ports/TeamChatStore.ts"
import type { TenantRecord } from "../../src/ports/TenantStore.ts"
import type { FanOutLease, WebhookDeliveryRecord } from "../../src/ports/WebhookDeliveryStore.ts"
import type { WebhookEndpointRecord } from "../../src/ports/WebhookEndpointStore.ts"

/** What an adapter can do; a test needing a capability the adapter lacks skips itself and says why. */
export interface StorageCapabilities {
  /**
   * Several transactions can be open at once, on separate connections contending for locks. Without
   * it transactions run one at a time, which keeps every locking promise of the ports by itself.
   */
  readonly concurrentConnections: boolean
}

/** An outbox row as stored: the event, its place in the outbox, and when fan-out took it (null until then). */
export interface StoredOutboxEvent {
  readonly seq: number
  readonly event: EventEnvelope
  readonly fanned_out_at: string | null
}

/** A tag on a contact as stored: the port gives only the tag ids of a contact. */
export interface StoredContactTag {
  readonly tenant_id: string
  readonly contact_id: string
  readonly tag_id: string
  readonly tagged_at: string
}

/**
 * Reads straight from the database, bypassing the ports, decoded into the ports' record shapes. The
 * suites check every write with them, so a port that writes one thing and reads back another fails.
 */
export interface StoredRows {
  readonly user: (id: string) => Promise<UserRecord | undefined>
  readonly billingAccount: (id: string) => Promise<BillingAccountRecord | undefined>
  readonly tenant: (id: string) => Promise<TenantRecord | undefined>
  readonly apiKey: (lookup: string) => Promise<ApiKeyRecord | undefined>
  /** Every contact of the tenant, in any order. */
  readonly contacts: (tenantId: string) => Promise<ReadonlyArray<ContactRecord>>
  /** Every outbox event of the tenant, in append order. */
  readonly outboxEvents: (tenantId: string) => Promise<ReadonlyArray<StoredOutboxEvent>>
  /** Every channel of the tenant, in any order. */
  readonly channels: (tenantId: string) => Promise<ReadonlyArray<ChannelRecord>>
  /** Every connect token of the tenant, in any order. */
  readonly connectTokens: (tenantId: string) => Promise<ReadonlyArray<ConnectTokenRecord>>
  /** Every webhook endpoint of the tenant, in any order. */
  readonly webhookEndpoints: (tenantId: string) => Promise<ReadonlyArray<WebhookEndpointRecord>>
  /** Every webhook delivery of the tenant, in any order. */
  readonly webhookDeliveries: (tenantId: string) => Promise<ReadonlyArray<WebhookDeliveryRecord>>
  /** The fan-out lease with this id, its `seqs` in ascending order. */
  readonly fanOutLease: (id: string) => Promise<FanOutLease | undefined>
  /** The inbound payload with this id, its body as a plain `Uint8Array`. */
  readonly inboundPayload: (id: string) => Promise<InboundPayloadRecord | undefined>
  /** When the inbound item `key` of `source` was recorded as handled; `undefined` if it was not. */
  readonly inboundHandled: (source: InboundSource, key: string) => Promise<string | undefined>
  /** Every conversation of the tenant, in any order. */
  readonly conversations: (tenantId: string) => Promise<ReadonlyArray<ConversationRecord>>
  /** Every message of the tenant, in any order. */
  readonly messages: (tenantId: string) => Promise<ReadonlyArray<MessageRecord>>
  /** Every status kept for the tenant's message ids, in any order. */
  readonly messageStatuses: (tenantId: string) => Promise<ReadonlyArray<MessageStatusReport>>
  /** Every attachment of the tenant, in any order. */
  readonly attachments: (tenantId: string) => Promise<ReadonlyArray<AttachmentRecord>>
  /** Every email integration of the tenant, in any order. */
  readonly emailIntegrations: (tenantId: string) => Promise<ReadonlyArray<EmailIntegrationRecord>>
  /** Every email message of the tenant, in any order. */
  readonly emailMessages: (tenantId: string) => Promise<ReadonlyArray<EmailMessageRecord>>
  /** Every email attachment of the tenant, in any order. */
  readonly emailAttachments: (tenantId: string) => Promise<ReadonlyArray<EmailAttachmentRecord>>
  /** Every inline image upload of the tenant, by attachment id. */
  readonly inlineImages: (tenantId: string) => Promise<ReadonlyArray<InlineImageRecord>>
  /** Every list of the tenant, deleted ones too, in any order. */
  readonly lists: (tenantId: string) => Promise<ReadonlyArray<ListRecord>>
  /** Every subscription of the tenant, either status, by list id and then contact id. */
  readonly listSubscriptions: (tenantId: string) => Promise<ReadonlyArray<SubscriptionRecord>>
  /** Every marketing opt-out of the tenant, by contact id and then channel id (every channel, null, first). */
  readonly marketingOptOuts: (tenantId: string) => Promise<ReadonlyArray<MarketingOptOutRecord>>
  /** Every campaign of the tenant, in any order. */
  readonly campaigns: (tenantId: string) => Promise<ReadonlyArray<CampaignRecord>>
  /** Every recipient of the tenant's campaigns, by campaign id and then seq. */
  readonly campaignRecipients: (tenantId: string) => Promise<ReadonlyArray<CampaignRecipientRecord>>
  /** Every batch of the tenant's campaigns, by campaign id, then channel id, then day. */
  readonly campaignBatches: (tenantId: string) => Promise<ReadonlyArray<CampaignBatchRecord>>
  /** Every flow definition of the tenant, in any order. */
  readonly flowDefinitions: (tenantId: string) => Promise<ReadonlyArray<FlowDefinitionRecord>>
  /** Every flow version of the tenant, in any order. */
  readonly flowVersions: (tenantId: string) => Promise<ReadonlyArray<FlowVersionRecord>>
  /** Every flow session of the tenant, in any order. */
  readonly flowSessions: (tenantId: string) => Promise<ReadonlyArray<FlowSessionRecord>>
  /** Every custom field definition of the tenant, in any order. */
  readonly customFields: (tenantId: string) => Promise<ReadonlyArray<CustomFieldRecord>>
  /** Every tag of the tenant, in any order. */
  readonly tags: (tenantId: string) => Promise<ReadonlyArray<TagRecord>>
  /** Every tag on the tenant's contacts, by contact id and then tag id. */
  readonly contactTags: (tenantId: string) => Promise<ReadonlyArray<StoredContactTag>>
  /** Every team chat channel and direct message made in the tenant, in any order. */
  readonly teamChatChannels: (tenantId: string) => Promise<ReadonlyArray<TeamChatChannelRecord>>
  /** Every team chat member admitted through the tenant, by channel id and then user id. */
  readonly teamChatMembers: (tenantId: string) => Promise<ReadonlyArray<TeamChatMemberRecord>>
  /** Every team chat message written in the tenant, with its files in order, in any order. */
  readonly teamChatMessages: (tenantId: string) => Promise<ReadonlyArray<TeamChatMessageRecord>>
  /** Every attachment summary of the tenant, by id. */
  readonly attachmentSummaries: (tenantId: string) => Promise<ReadonlyArray<SummaryRecord>>
  /** Every AI credit ledger line of the tenant, by id. */
  readonly creditEntries: (tenantId: string) => Promise<ReadonlyArray<CreditEntryRecord>>
  /** The tenant's stored credit balance row; `undefined` before its first ledger line. */
  readonly creditBalance: (tenantId: string) => Promise<CreditBalance | undefined>
  /** Every summary request counter of the tenant, by key and then window start. */
  readonly rateCounters: (tenantId: string) => Promise<ReadonlyArray<StoredRateCounter>>
}

/** A summary request counter as stored: requests counted for a key in the window starting at `window_start`. */
export interface StoredRateCounter {
  readonly key: string
  readonly window_start: string
  readonly count: number
}

/** The name of one reader of `StoredRows`: a table a suite checks writes in. */
export type StoredTable = keyof StoredRows

/**
 * An opened adapter over a migrated database, as a suite needs it: a layer providing the ports `R`,
 * and direct readers of the tables `T` the suite checks. Each test works in tenants it creates
 * itself, so one database serves every suite.
 */
export interface StorageAdapter<R = StoragePorts, T extends StoredTable = StoredTable> {
  /** The ports under test, over the opened database. */
  readonly layer: Layer.Layer<R>
  readonly capabilities: StorageCapabilities
  /** Direct reads of the database, to check writes where they land. */
  readonly storedRows: Pick<StoredRows, T>
  /** Releases the database; called after the suite, once the ports' layers are released. */
  readonly close: () => Promise<void>
}
