import type { Layer } from "effect"
import type { EventEnvelope } from "../../src/kernel/EventEnvelope.ts"
import type { BillingAccountRecord, UserRecord } from "../../src/ports/AccountStore.ts"
import type { ApiKeyRecord } from "../../src/ports/ApiKeyStore.ts"
import type { ChannelRecord } from "../../src/ports/ChannelStore.ts"
import type { ConnectTokenRecord } from "../../src/ports/ConnectTokenStore.ts"
import type { ContactRecord } from "../../src/ports/ContactStore.ts"
import type { StoragePorts } from "../../src/ports/StoragePorts.ts"
import type { TenantRecord } from "../../src/ports/TenantStore.ts"
import type { WebhookEndpointRecord } from "../../src/ports/WebhookEndpointStore.ts"

/** What an adapter can do; a test needing a capability the adapter lacks skips itself and says why. */
export interface StorageCapabilities {
  /** Several transactions can be open at once, on separate connections contending for locks. */
  readonly concurrentConnections: boolean
}

/**
 * Reads straight from the database, bypassing the ports, decoded into the ports' record shapes.
 * The suite checks every write with it; an adapter without one is checked through its own reads.
 */
export interface StoredRows {
  readonly user: (id: string) => Promise<UserRecord | undefined>
  readonly billingAccount: (id: string) => Promise<BillingAccountRecord | undefined>
  readonly tenant: (id: string) => Promise<TenantRecord | undefined>
  readonly apiKey: (lookup: string) => Promise<ApiKeyRecord | undefined>
  /** Every contact of the tenant, in any order. */
  readonly contacts: (tenantId: string) => Promise<ReadonlyArray<ContactRecord>>
  /** Every outbox event of the tenant, in append order. */
  readonly outboxEvents: (tenantId: string) => Promise<ReadonlyArray<EventEnvelope>>
  /** Every channel of the tenant, in any order. */
  readonly channels: (tenantId: string) => Promise<ReadonlyArray<ChannelRecord>>
  /** Every connect token of the tenant, in any order. */
  readonly connectTokens: (tenantId: string) => Promise<ReadonlyArray<ConnectTokenRecord>>
  /**
   * Every webhook endpoint of the tenant, in any order. Optional, so readers written before
   * webhooks still compile; the ports' reads stand in when it is absent.
   */
  readonly webhookEndpoints?: (tenantId: string) => Promise<ReadonlyArray<WebhookEndpointRecord>>
}

/**
 * An opened adapter over a migrated database. Each test works in tenants it creates itself, so one
 * database serves the whole suite.
 */
export interface StorageAdapter {
  /** Every storage port, over the opened database. */
  readonly layer: Layer.Layer<StoragePorts>
  readonly capabilities: StorageCapabilities
  /** Direct reads of the database, to check writes where they land; the ports' reads stand in when absent. */
  readonly storedRows?: StoredRows
  /** Releases the database; called after the suite, once the ports' layer is released. */
  readonly close: () => Promise<void>
}
