import { Effect } from "effect"
import { expect, it } from "vitest"
import { AccountStore } from "../../src/ports/AccountStore.ts"
import { ApiKeyStore } from "../../src/ports/ApiKeyStore.ts"
import { ConnectTokenStore } from "../../src/ports/ConnectTokenStore.ts"
import { ContactStore } from "../../src/ports/ContactStore.ts"
import { OutboxStore } from "../../src/ports/OutboxStore.ts"
import type { StorageError } from "../../src/ports/StorageError.ts"
import { TenantStore } from "../../src/ports/TenantStore.ts"
import { apiKeyRecord, connectTokenRecord, contactRecord, outboxEvent, seedTenant, tenantRecord, userRecord } from "./Fixtures.ts"
import { eventsOf, makeSuite, type Suite, type UseHarness } from "./Harness.ts"

/** What the unique violations suite runs against: every store with a unique index, and the tenants rows belong to. */
type UniquePorts = ContactStore | TenantStore | AccountStore | ApiKeyStore | ConnectTokenStore | OutboxStore
/** The tables the unique violations suite checks that no duplicate was stored in. */
type UniqueTables = "contacts" | "tenant" | "user" | "apiKey" | "connectTokens" | "outboxEvents"

// What every adapter must report for a duplicate: the same reason and index name on every database.
const expectUniqueViolation = (error: StorageError, constraint: string) => {
  expect(error).toMatchObject({ _tag: "StorageError", reason: "UniqueViolation", constraint })
  expect(error.isRetryable).toBe(false)
}

const failure = (h: UseHarness<UniquePorts, UniqueTables>, effect: Effect.Effect<unknown, StorageError, UniquePorts>) =>
  h().run(Effect.flip(effect))

/** Unique violations: each duplicate fails with `UniqueViolation` naming the same index on every database, and is not stored. */
export const uniqueViolationSuite: Suite<UniquePorts, UniqueTables> = makeSuite({
  name: "unique violations",
  tables: ["contacts", "tenant", "user", "apiKey", "connectTokens", "outboxEvents"],
  tests: (h) => {
    it("names contacts_tenant_phone_unique for a second contact with a phone in the same tenant", async () => {
      const { tenant } = await h().run(seedTenant)
      await h().run(ContactStore.use((s) => s.insert(contactRecord(tenant.id, { phone: "+14155550100" }))))

      const error = await failure(h, ContactStore.use((s) => s.insert(contactRecord(tenant.id, { phone: "+14155550100" }))))

      expectUniqueViolation(error, "contacts_tenant_phone_unique")
      expect(await h().stored.contacts(tenant.id)).toHaveLength(1)
    })

    it("names contacts_tenant_email_unique for a second contact with an email in the same tenant", async () => {
      const { tenant } = await h().run(seedTenant)
      await h().run(ContactStore.use((s) => s.insert(contactRecord(tenant.id, { email: "ada@example.com" }))))

      const error = await failure(h, ContactStore.use((s) => s.insert(contactRecord(tenant.id, { email: "ada@example.com" }))))

      expectUniqueViolation(error, "contacts_tenant_email_unique")
      expect(await h().stored.contacts(tenant.id)).toHaveLength(1)
    })

    it("lets many contacts of one tenant have no phone and no email", async () => {
      const { tenant } = await h().run(seedTenant)
      await h().run(ContactStore.use((s) =>
        Effect.forEach([1, 2, 3], (i) => s.insert(contactRecord(tenant.id, { name: `Nameless ${i}` })), { discard: true })
      ))
      expect(await h().stored.contacts(tenant.id)).toHaveLength(3)
    })

    it("names tenants_slug_unique for a second tenant with a taken slug", async () => {
      const { account, tenant } = await h().run(seedTenant)

      const duplicate = tenantRecord(account.id, { slug: tenant.slug })
      const error = await failure(h, TenantStore.use((s) => s.insert(duplicate)))

      expectUniqueViolation(error, "tenants_slug_unique")
      expect(await h().stored.tenant(duplicate.id)).toBeUndefined()
    })

    it("names users_email_unique for a second user with a taken email", async () => {
      const user = userRecord()
      await h().run(AccountStore.use((s) => s.insertUser(user)))

      const duplicate = userRecord({ email: user.email })
      const error = await failure(h, AccountStore.use((s) => s.insertUser(duplicate)))

      expectUniqueViolation(error, "users_email_unique")
      expect(await h().stored.user(duplicate.id)).toBeUndefined()
    })

    it("names api_keys_lookup_unique for a second key with a taken lookup", async () => {
      const { tenant } = await h().run(seedTenant)
      const key = apiKeyRecord(tenant.id)
      await h().run(ApiKeyStore.use((s) => s.insert(key)))

      const error = await failure(h, ApiKeyStore.use((s) => s.insert(apiKeyRecord(tenant.id, { lookup: key.lookup }))))

      expectUniqueViolation(error, "api_keys_lookup_unique")
      expect(await h().stored.apiKey(key.lookup)).toEqual(key)
    })

    it("names connect_tokens_lookup_unique for a second connect token with a taken lookup, in any tenant", async () => {
      const { tenant } = await h().run(seedTenant)
      const { tenant: other } = await h().run(seedTenant)
      const token = connectTokenRecord(tenant.id)
      await h().run(ConnectTokenStore.use((s) => s.insert(token)))

      const error = await failure(h, ConnectTokenStore.use((s) => s.insert(connectTokenRecord(other.id, { lookup: token.lookup }))))

      expectUniqueViolation(error, "connect_tokens_lookup_unique")
      expect(await h().stored.connectTokens(other.id)).toEqual([])
    })

    it("names outbox_events_id_unique for an event appended twice", async () => {
      const event = outboxEvent(`tenant-${globalThis.crypto.randomUUID()}`)
      await h().run(OutboxStore.use((s) => s.append([event])))

      const error = await failure(h, OutboxStore.use((s) => s.append([event])))

      expectUniqueViolation(error, "outbox_events_id_unique")
      expect(eventsOf(await h().stored.outboxEvents(event.tenant_id))).toEqual([event])
    })
  }
})
