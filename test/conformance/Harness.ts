import { Effect, type Exit, Layer, ManagedRuntime, Option } from "effect"
import { ContactService } from "../../src/contacts/ContactService.ts"
import { AccountStore } from "../../src/ports/AccountStore.ts"
import { ApiKeyStore } from "../../src/ports/ApiKeyStore.ts"
import { ChannelStore } from "../../src/ports/ChannelStore.ts"
import { ConnectTokenStore } from "../../src/ports/ConnectTokenStore.ts"
import { ContactStore } from "../../src/ports/ContactStore.ts"
import { OutboxStore } from "../../src/ports/OutboxStore.ts"
import type { StoragePorts } from "../../src/ports/StoragePorts.ts"
import { TenantStore } from "../../src/ports/TenantStore.ts"
import { WebhookEndpointStore } from "../../src/ports/WebhookEndpointStore.ts"
import { TenantService } from "../../src/tenants/TenantService.ts"
import type { StorageAdapter, StorageCapabilities, StoredRows } from "./StorageAdapter.ts"

/** What the suites run against: the storage ports and the use cases that drive them. */
export type SuiteServices = StoragePorts | ContactService | TenantService

/** One opened adapter as the suites use it. */
export interface Harness {
  readonly capabilities: StorageCapabilities
  /**
   * The rows as stored; contacts, channels, connect tokens and webhook endpoints come sorted by id
   * so a test can compare whole lists.
   */
  readonly stored: Required<StoredRows>
  readonly run: <A, E>(effect: Effect.Effect<A, E, SuiteServices>) => Promise<A>
  readonly exit: <A, E>(effect: Effect.Effect<A, E, SuiteServices>) => Promise<Exit.Exit<A, E>>
  readonly close: () => Promise<void>
}

/** The harness of the running suite; it exists once `beforeAll` has opened the adapter. */
export type UseHarness = () => Harness

// Far more rows than any test writes for one tenant, so a read through the ports sees them all.
const EVERY_ROW = 10_000

/** Orders records by id, so lists read in any order compare whole. */
export const byId = (a: { readonly id: string }, b: { readonly id: string }): number => a.id.localeCompare(b.id)

/** Builds the services over the adapter's ports and the stored-row reader the suites check with. */
export const makeHarness = (adapter: StorageAdapter): Harness => {
  const runtime = ManagedRuntime.make(
    Layer.mergeAll(ContactService.layer, TenantService.layer).pipe(Layer.provideMerge(adapter.layer))
  )
  const run = <A, E>(effect: Effect.Effect<A, E, SuiteServices>) => runtime.runPromise(effect)
  const throughPorts: Required<StoredRows> = {
    user: (id) => run(AccountStore.use((s) => s.getUser(id)).pipe(Effect.map(Option.getOrUndefined))),
    billingAccount: (id) =>
      run(AccountStore.use((s) => s.getBillingAccount(id)).pipe(Effect.map(Option.getOrUndefined))),
    tenant: (id) => run(TenantStore.use((s) => s.get(id)).pipe(Effect.map(Option.getOrUndefined))),
    apiKey: (lookup) => run(ApiKeyStore.use((s) => s.findByLookup(lookup)).pipe(Effect.map(Option.getOrUndefined))),
    contacts: (tenantId) =>
      run(ContactStore.use((s) => s.list(tenantId, { limit: EVERY_ROW, offset: 0 })).pipe(Effect.map((page) => page.items))),
    outboxEvents: (tenantId) => run(OutboxStore.use((s) => s.listByTenant(tenantId, { limit: EVERY_ROW }))),
    channels: (tenantId) =>
      run(ChannelStore.use((s) => s.list(tenantId, { limit: EVERY_ROW, offset: 0 })).pipe(Effect.map((page) => page.items))),
    connectTokens: (tenantId) =>
      run(ConnectTokenStore.use((s) => s.list(tenantId, { limit: EVERY_ROW, offset: 0 })).pipe(Effect.map((page) => page.items))),
    webhookEndpoints: (tenantId) => run(WebhookEndpointStore.use((s) => s.list(tenantId)))
  }
  const stored = adapter.storedRows ?? throughPorts
  // An adapter's reader from before webhooks has none for endpoints: the ports' read stands in.
  const webhookEndpoints = stored.webhookEndpoints ?? throughPorts.webhookEndpoints
  return {
    capabilities: adapter.capabilities,
    stored: {
      ...stored,
      contacts: async (tenantId) => [...await stored.contacts(tenantId)].sort(byId),
      channels: async (tenantId) => [...await stored.channels(tenantId)].sort(byId),
      connectTokens: async (tenantId) => [...await stored.connectTokens(tenantId)].sort(byId),
      webhookEndpoints: async (tenantId) => [...await webhookEndpoints(tenantId)].sort(byId)
    },
    run,
    exit: (effect) => runtime.runPromiseExit(effect),
    close: async () => {
      await runtime.dispose()
      await adapter.close()
    }
  }
}
