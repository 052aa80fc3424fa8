/**
 * omnichannel-core/testing: the conformance suites every storage adapter must pass, one per port and
 * one per promise that spans ports. Each suite's type says which ports its layer must provide and
 * which direct readers of stored rows it needs; `storageConformance` runs them all on one database.
 *
 * ```ts
 * import { contactStoreSuite, storageConformance } from "omnichannel-core/testing"
 * contactStoreSuite("my contacts", async () => ({ layer, capabilities, storedRows: { contacts }, close }))
 * storageConformance("my adapter", async () => ({ layer, capabilities, storedRows, close }))
 * ```
 */
import { accountStoreSuite } from "./AccountStoreSuite.ts"
import { apiKeyStoreSuite } from "./ApiKeyStoreSuite.ts"
import { atomicitySuite } from "./AtomicitySuite.ts"
import { attachmentStoreSuite } from "./AttachmentStoreSuite.ts"
import { campaignStoreSuite } from "./CampaignStoreSuite.ts"
import { channelStoreSuite } from "./ChannelStoreSuite.ts"
import { concurrencySuite } from "./ConcurrencySuite.ts"
import { connectTokenStoreSuite } from "./ConnectTokenStoreSuite.ts"
import { contactErasureSuite } from "./ContactErasureSuite.ts"
import { contactStoreSuite } from "./ContactStoreSuite.ts"
import { conversationStoreSuite } from "./ConversationStoreSuite.ts"
import { emailStoreSuite } from "./EmailStoreSuite.ts"
import { flowStoreSuite } from "./FlowStoreSuite.ts"
import { describeOpened, type Suite } from "./Harness.ts"
import { inboundStoreSuite } from "./InboundStoreSuite.ts"
import { libraryCacheStoreSuite } from "./LibraryCacheStoreSuite.ts"
import { listStoreSuite } from "./ListStoreSuite.ts"
import { messageStoreSuite } from "./MessageStoreSuite.ts"
import { outboxStoreSuite } from "./OutboxStoreSuite.ts"
import { retentionSuite } from "./RetentionSuite.ts"
import { sendingLimitStoreSuite } from "./SendingLimitStoreSuite.ts"
import { sendRateStoreSuite } from "./SendRateStoreSuite.ts"
import { summaryStoreSuite } from "./SummaryStoreSuite.ts"
import type { StorageAdapter, StoredTable } from "./StorageAdapter.ts"
import { teamChatStoreSuite } from "./TeamChatStoreSuite.ts"
import { templateStoreSuite } from "./TemplateStoreSuite.ts"
import { tenantIsolationSuite } from "./TenantIsolationSuite.ts"
import { tenantStoreSuite } from "./TenantStoreSuite.ts"
import { transactorSuite } from "./TransactorSuite.ts"
import { uniqueViolationSuite } from "./UniqueViolationSuite.ts"
import { webhookDeliveryStoreSuite } from "./WebhookDeliveryStoreSuite.ts"
import { webhookEndpointStoreSuite } from "./WebhookEndpointStoreSuite.ts"
import type { StoragePorts } from "../../src/ports/StoragePorts.ts"

export type { Suite } from "./Harness.ts"
export type {
  StorageAdapter,
  StorageCapabilities,
  StoredContactTag,
  StoredOutboxEvent,
  StoredRateCounter,
  StoredRows,
  StoredTable
} from "./StorageAdapter.ts"
export {
  accountStoreSuite,
  apiKeyStoreSuite,
  atomicitySuite,
  attachmentStoreSuite,
  campaignStoreSuite,
  channelStoreSuite,
  concurrencySuite,
  connectTokenStoreSuite,
  contactErasureSuite,
  contactStoreSuite,
  conversationStoreSuite,
  emailStoreSuite,
  flowStoreSuite,
  inboundStoreSuite,
  libraryCacheStoreSuite,
  listStoreSuite,
  messageStoreSuite,
  outboxStoreSuite,
  retentionSuite,
  sendingLimitStoreSuite,
  sendRateStoreSuite,
  summaryStoreSuite,
  teamChatStoreSuite,
  templateStoreSuite,
  tenantIsolationSuite,
  tenantStoreSuite,
  transactorSuite,
  uniqueViolationSuite,
  webhookDeliveryStoreSuite,
  webhookEndpointStoreSuite
}

// Every suite, in the order `storageConformance` runs them (the delivery store's last, as it always ran).
const EVERY_SUITE: ReadonlyArray<Suite<StoragePorts, StoredTable>> = [
  accountStoreSuite,
  tenantStoreSuite,
  apiKeyStoreSuite,
  contactStoreSuite,
  outboxStoreSuite,
  channelStoreSuite,
  connectTokenStoreSuite,
  webhookEndpointStoreSuite,
  inboundStoreSuite,
  conversationStoreSuite,
  messageStoreSuite,
  attachmentStoreSuite,
  templateStoreSuite,
  libraryCacheStoreSuite,
  sendingLimitStoreSuite,
  sendRateStoreSuite,
  emailStoreSuite,
  listStoreSuite,
  campaignStoreSuite,
  flowStoreSuite,
  summaryStoreSuite,
  teamChatStoreSuite,
  contactErasureSuite,
  tenantIsolationSuite,
  atomicitySuite,
  transactorSuite,
  concurrencySuite,
  uniqueViolationSuite,
  webhookDeliveryStoreSuite,
  // Last: it deletes across tenants (only rows older than any other suite makes).
  retentionSuite
]

/**
 * Registers every suite under `describe(name)`, against one database: `open` is called once before
 * them (for a migrated database, every port and every reader) and the adapter closed after them.
 */
export const storageConformance = (name: string, open: () => Promise<StorageAdapter>): void =>
  describeOpened(name, open, (adapter) => {
    for (const suite of EVERY_SUITE) suite.register(adapter)
  })
