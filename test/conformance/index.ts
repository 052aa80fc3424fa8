/**
 * omnichannel-core/testing: the conformance suite every storage adapter must pass.
 *
 * ```ts
 * import { storageConformance } from "omnichannel-core/testing"
 * storageConformance("my-store", async () => ({ layer, capabilities: { concurrentConnections: true }, close }))
 * ```
 */
import { afterAll, beforeAll, describe } from "vitest"
import { accountStoreSuite } from "./AccountStoreSuite.ts"
import { apiKeyStoreSuite } from "./ApiKeyStoreSuite.ts"
import { atomicitySuite } from "./AtomicitySuite.ts"
import { channelStoreSuite } from "./ChannelStoreSuite.ts"
import { concurrencySuite } from "./ConcurrencySuite.ts"
import { connectTokenStoreSuite } from "./ConnectTokenStoreSuite.ts"
import { contactStoreSuite } from "./ContactStoreSuite.ts"
import { type Harness, makeHarness } from "./Harness.ts"
import { outboxStoreSuite } from "./OutboxStoreSuite.ts"
import type { StorageAdapter } from "./StorageAdapter.ts"
import { tenantIsolationSuite } from "./TenantIsolationSuite.ts"
import { tenantStoreSuite } from "./TenantStoreSuite.ts"
import { uniqueViolationSuite } from "./UniqueViolationSuite.ts"
import { webhookDeliveryStoreSuite } from "./WebhookDeliveryStoreSuite.ts"
import { webhookEndpointStoreSuite } from "./WebhookEndpointStoreSuite.ts"

export type { StorageAdapter, StorageCapabilities, StoredRows } from "./StorageAdapter.ts"

/**
 * Registers the whole suite under `describe(name)`: `open` is called once before it (for a
 * migrated database) and the adapter closed after it.
 */
export const storageConformance = (name: string, open: () => Promise<StorageAdapter>): void => {
  describe(name, () => {
    let harness: Harness | undefined
    beforeAll(async () => {
      harness = makeHarness(await open())
    })
    afterAll(async () => {
      await harness?.close()
    })
    const current = (): Harness => {
      if (harness === undefined) throw new Error(`storage adapter ${name} did not open`)
      return harness
    }
    accountStoreSuite(current)
    tenantStoreSuite(current)
    apiKeyStoreSuite(current)
    contactStoreSuite(current)
    outboxStoreSuite(current)
    channelStoreSuite(current)
    connectTokenStoreSuite(current)
    webhookEndpointStoreSuite(current)
    tenantIsolationSuite(current)
    atomicitySuite(current)
    concurrencySuite(current)
    uniqueViolationSuite(current)
    webhookDeliveryStoreSuite(current)
  })
}
