import { Option } from "effect"
import { expect, it } from "vitest"
import { ALL_SCOPES } from "../../src/kernel/Scope.ts"
import type { AccountStore } from "../../src/ports/AccountStore.ts"
import { ApiKeyStore } from "../../src/ports/ApiKeyStore.ts"
import type { TenantStore } from "../../src/ports/TenantStore.ts"
import { apiKeyRecord, seedTenant } from "./Fixtures.ts"
import { makeSuite, type Suite } from "./Harness.ts"

/**
 * ApiKeyStore: keys round-trip with their scopes; revoking stamps the first revocation time only.
 * Needs TenantStore and AccountStore for the tenants keys belong to.
 */
export const apiKeyStoreSuite: Suite<ApiKeyStore | TenantStore | AccountStore, "apiKey"> = makeSuite({
  name: "ApiKeyStore",
  tables: ["apiKey"],
  tests: (h) => {
    it("stores a parent key with a name, every scope in order and an expiry, and reads it back unchanged", async () => {
      const { tenant } = await h().run(seedTenant)
      const key = apiKeyRecord(tenant.id, {
        name: "Zoë's bootstrap key 🔑",
        scopes: [...ALL_SCOPES].reverse(),
        is_parent: true,
        expires_at: "2027-11-22T10:15:30.123Z"
      })
      await h().run(ApiKeyStore.use((s) => s.insert(key)))

      expect(await h().stored.apiKey(key.lookup)).toEqual(key)
      expect(Option.getOrUndefined(await h().run(ApiKeyStore.use((s) => s.findByLookup(key.lookup))))).toEqual(key)
    })

    it("stores a key without name, expiry or scopes, and reads it back unchanged", async () => {
      const { tenant } = await h().run(seedTenant)
      const key = apiKeyRecord(tenant.id, { name: null, scopes: [], is_parent: false, expires_at: null })
      await h().run(ApiKeyStore.use((s) => s.insert(key)))

      expect(await h().stored.apiKey(key.lookup)).toEqual(key)
      expect(Option.getOrUndefined(await h().run(ApiKeyStore.use((s) => s.findByLookup(key.lookup))))).toEqual(key)
    })

    it("stores a key bound to a user and reads the binding back", async () => {
      const { tenant, user } = await h().run(seedTenant)
      const key = apiKeyRecord(tenant.id, { user_id: user.id })
      await h().run(ApiKeyStore.use((s) => s.insert(key)))

      expect(await h().stored.apiKey(key.lookup)).toEqual(key)
      expect(Option.getOrUndefined(await h().run(ApiKeyStore.use((s) => s.findByLookup(key.lookup))))?.user_id).toBe(user.id)
    })

    it("finds no key for an unknown lookup", async () => {
      expect(Option.isNone(await h().run(ApiKeyStore.use((s) => s.findByLookup("key-that-was-never-issued")))))
        .toBe(true)
    })

    it("revokes a key at the given time and returns it revoked", async () => {
      const { tenant } = await h().run(seedTenant)
      const key = apiKeyRecord(tenant.id)
      await h().run(ApiKeyStore.use((s) => s.insert(key)))

      const revoked = await h().run(ApiKeyStore.use((s) => s.revoke(key.id, "2026-11-23T00:00:00.000Z")))

      const expected = { ...key, revoked_at: "2026-11-23T00:00:00.000Z" }
      expect(Option.getOrUndefined(revoked)).toEqual(expected)
      expect(await h().stored.apiKey(key.lookup)).toEqual(expected)
    })

    it("keeps the first revocation time when a key is revoked twice", async () => {
      const { tenant } = await h().run(seedTenant)
      const key = apiKeyRecord(tenant.id)
      await h().run(ApiKeyStore.use((s) => s.insert(key)))

      await h().run(ApiKeyStore.use((s) => s.revoke(key.id, "2026-11-23T00:00:00.000Z")))
      const again = await h().run(ApiKeyStore.use((s) => s.revoke(key.id, "2026-11-24T00:00:00.000Z")))

      expect(Option.getOrUndefined(again)?.revoked_at).toBe("2026-11-23T00:00:00.000Z")
      expect((await h().stored.apiKey(key.lookup))?.revoked_at).toBe("2026-11-23T00:00:00.000Z")
    })

    it("lists a tenant's keys, revoked and expired ones too, oldest first with ties by id, and none of another tenant", async () => {
      const [{ tenant }, { tenant: other }] = [await h().run(seedTenant), await h().run(seedTenant)]
      const late = apiKeyRecord(tenant.id, { created_at: "2026-11-23T00:00:00.000Z", revoked_at: "2026-11-24T00:00:00.000Z" })
      const tiedA = apiKeyRecord(tenant.id, { created_at: "2026-11-22T00:00:00.000Z", expires_at: "2026-11-22T01:00:00.000Z" })
      const tiedB = apiKeyRecord(tenant.id, { created_at: "2026-11-22T00:00:00.000Z", is_parent: true, user_id: null })
      const foreign = apiKeyRecord(other.id)
      for (const key of [late, tiedA, foreign, tiedB]) await h().run(ApiKeyStore.use((s) => s.insert(key)))

      const tied = [tiedA, tiedB].sort((a, b) => (a.id < b.id ? -1 : 1))
      expect(await h().run(ApiKeyStore.use((s) => s.listByTenant(tenant.id)))).toEqual([...tied, late])
      expect(await h().run(ApiKeyStore.use((s) => s.listByTenant(other.id)))).toEqual([foreign])
      expect(await h().run(ApiKeyStore.use((s) => s.listByTenant("no-such-tenant")))).toEqual([])
    })

    it("revokes nothing for an unknown key id", async () => {
      const { tenant } = await h().run(seedTenant)
      const kept = apiKeyRecord(tenant.id)
      await h().run(ApiKeyStore.use((s) => s.insert(kept)))
      const unknown = apiKeyRecord("no-such-tenant")

      expect(Option.isNone(await h().run(ApiKeyStore.use((s) => s.revoke(unknown.id, "2026-11-23T00:00:00.000Z")))))
        .toBe(true)
      expect(await h().stored.apiKey(kept.lookup)).toEqual(kept)
    })
  }
})
