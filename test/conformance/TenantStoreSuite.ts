import { Effect, Option } from "effect"
import { expect, it } from "vitest"
import { AccountStore } from "../../src/ports/AccountStore.ts"
import { TenantStore } from "../../src/ports/TenantStore.ts"
import { billingAccountRecord, seedTenant, tenantRecord, userRecord } from "./Fixtures.ts"
import { makeSuite, type Suite } from "./Harness.ts"

// A billing account to hang tenants on (tenants reference one).
const newBillingAccount = Effect.gen(function*() {
  const accounts = yield* AccountStore
  const user = userRecord()
  const account = billingAccountRecord(user.id)
  yield* accounts.insertUser(user)
  yield* accounts.insertBillingAccount(account)
  return account
})

/**
 * TenantStore: every field (booleans both ways, nulls, timestamps) round-trips; SMS is switched per
 * tenant; slugs are looked up. Needs AccountStore for the billing accounts tenants belong to.
 */
export const tenantStoreSuite: Suite<TenantStore | AccountStore, "tenant"> = makeSuite({
  name: "TenantStore",
  tables: ["tenant"],
  tests: (h) => {
    it("stores every field set, with every flag true, and reads it back unchanged", async () => {
      const account = await h().run(newBillingAccount)
      const tenant = tenantRecord(account.id, {
        name: "Zoë's Café 山田 🚀",
        company_email: "billing@zoe.example",
        support_email: "help@zoe.example",
        pricing_model_id: "pm_growth_2026",
        is_trial: true,
        trial_ends_at: "2026-12-06T23:59:59.999Z",
        is_active: true,
        subscription_tier: "growth",
        ai_features_enabled: true,
        multi_agent_mode: true,
        auto_summarize_on_close: "enabled",
        auto_transcript_export_format: "pdf",
        created_at: "2026-11-22T00:00:00.000Z",
        updated_at: "2026-11-23T08:30:00.250Z"
      })
      await h().run(TenantStore.use((s) => s.insert(tenant)))

      expect(await h().stored.tenant(tenant.id)).toEqual(tenant)
      expect(Option.getOrUndefined(await h().run(TenantStore.use((s) => s.get(tenant.id))))).toEqual(tenant)
    })

    it("stores every optional field null, with every flag false, and reads it back unchanged", async () => {
      const account = await h().run(newBillingAccount)
      const tenant = tenantRecord(account.id, {
        company_email: null,
        support_email: null,
        pricing_model_id: null,
        is_trial: false,
        trial_ends_at: null,
        is_active: false,
        ai_features_enabled: false,
        multi_agent_mode: false,
        updated_at: null
      })
      await h().run(TenantStore.use((s) => s.insert(tenant)))

      expect(await h().stored.tenant(tenant.id)).toEqual(tenant)
      expect(Option.getOrUndefined(await h().run(TenantStore.use((s) => s.get(tenant.id))))).toEqual(tenant)
    })

    it("finds no tenant for an unknown id", async () => {
      const unknown = tenantRecord("no-such-account")
      expect(Option.isNone(await h().run(TenantStore.use((s) => s.get(unknown.id))))).toBe(true)
    })

    it("turns SMS on and off at the given time, and reports that it did", async () => {
      const { tenant } = await h().run(seedTenant)
      const setSms = (enabled: boolean, at: string) => h().run(TenantStore.use((s) => s.setSmsEnabled(tenant.id, enabled, at)))

      expect(await setSms(true, "2026-11-23T09:00:00.000Z")).toBe(true)
      expect(await h().stored.tenant(tenant.id)).toEqual({ ...tenant, sms_enabled: true, updated_at: "2026-11-23T09:00:00.000Z" })
      expect(await setSms(false, "2026-11-23T10:00:00.000Z")).toBe(true)
      expect(await h().stored.tenant(tenant.id)).toEqual({ ...tenant, sms_enabled: false, updated_at: "2026-11-23T10:00:00.000Z" })
    })

    it("turns AI features on and off at the given time, touching nothing else, and reports that it did", async () => {
      const { tenant } = await h().run(seedTenant)
      const setAi = (id: string, enabled: boolean, at: string) => h().run(TenantStore.use((s) => s.setAiFeaturesEnabled(id, enabled, at)))

      expect(await setAi(tenant.id, true, "2026-11-23T09:00:00.000Z")).toBe(true)
      expect(await h().stored.tenant(tenant.id)).toEqual({ ...tenant, ai_features_enabled: true, updated_at: "2026-11-23T09:00:00.000Z" })
      expect(await setAi(tenant.id, false, "2026-11-23T10:00:00.000Z")).toBe(true)
      expect(await h().stored.tenant(tenant.id)).toEqual({ ...tenant, ai_features_enabled: false, updated_at: "2026-11-23T10:00:00.000Z" })
      expect(await setAi(tenantRecord(tenant.billing_account_id).id, true, "2026-11-23T11:00:00.000Z")).toBe(false)
    })

    it("switches nothing and reports false for an unknown tenant", async () => {
      const { tenant } = await h().run(seedTenant)
      const unknown = tenantRecord(tenant.billing_account_id)

      expect(await h().run(TenantStore.use((s) => s.setSmsEnabled(unknown.id, true, "2026-11-23T09:00:00.000Z")))).toBe(false)
      expect(await h().stored.tenant(unknown.id)).toBeUndefined()
      expect(await h().stored.tenant(tenant.id)).toEqual(tenant)
    })

    it("inserts unless the slug is taken: true and stored, or false with nothing stored and nothing raised", async () => {
      const account = await h().run(newBillingAccount)
      const first = tenantRecord(account.id)
      expect(await h().run(TenantStore.use((s) => s.insertUnlessSlugTaken(first)))).toBe(true)
      expect(await h().run(TenantStore.use((s) => s.get(first.id)))).toEqual(Option.some(first))
      const clash = tenantRecord(account.id, { slug: first.slug })
      expect(await h().run(TenantStore.use((s) => s.insertUnlessSlugTaken(clash)))).toBe(false)
      expect(await h().run(TenantStore.use((s) => s.get(clash.id)))).toEqual(Option.none())
    })

    it("lists the tenants a reach names, oldest first with ties by id, paged with the total: named ones whatever their state, the accounts' active ones", async () => {
      const account = await h().run(newBillingAccount)
      const other = await h().run(newBillingAccount)
      const third = await h().run(newBillingAccount)
      const at = (minute: number) => `2026-11-23T09:${String(minute).padStart(2, "0")}:00.000Z`
      // Two made in the same instant, to show the tie broken by id.
      const [tiedA, tiedB] = [tenantRecord(account.id, { created_at: at(2) }), tenantRecord(account.id, { created_at: at(2) })]
        .sort((x, y) => (x.id < y.id ? -1 : 1))
      const home = tenantRecord(account.id, { created_at: at(1) })
      const later = tenantRecord(account.id, { created_at: at(3) })
      const inactive = tenantRecord(account.id, { created_at: at(4), is_active: false })
      const named = tenantRecord(other.id, { created_at: at(0), is_active: false })
      const elsewhere = tenantRecord(other.id, { created_at: at(5) })
      const inThird = tenantRecord(third.id, { created_at: at(6) })
      for (const tenant of [later, inactive, tiedB!, named, home, tiedA!, elsewhere, inThird]) {
        await h().run(TenantStore.use((s) => s.insert(tenant)))
      }
      const list = (reach: { tenantIds: ReadonlyArray<string>; activeInBillingAccounts: ReadonlyArray<string> }, limit = 100, offset = 0) =>
        h().run(TenantStore.use((s) => s.listReachable(reach, { limit, offset })))

      // A parent key's reach: its own tenant and its account's active ones.
      const parent = { tenantIds: [home.id], activeInBillingAccounts: [account.id] }
      expect(await list(parent)).toEqual({ items: [home, tiedA, tiedB, later], total: 4 })
      expect(await list(parent, 2, 1)).toEqual({ items: [tiedA, tiedB], total: 4 })
      expect(await list(parent, 2, 4)).toEqual({ items: [], total: 4 })
      // A named tenant counts whatever its state, once even when its account is named too.
      expect(await list({ tenantIds: [named.id], activeInBillingAccounts: [] })).toEqual({ items: [named], total: 1 })
      expect(await list({ tenantIds: [inactive.id, home.id], activeInBillingAccounts: [account.id] }))
        .toEqual({ items: [home, tiedA, tiedB, later, inactive], total: 5 })
      // Several accounts at once (a user's), and nothing for an empty reach or unknown names.
      expect(await list({ tenantIds: [], activeInBillingAccounts: [account.id, other.id] }))
        .toEqual({ items: [home, tiedA, tiedB, later, elsewhere], total: 5 })
      expect(await list({ tenantIds: [], activeInBillingAccounts: [] })).toEqual({ items: [], total: 0 })
      expect(await list({ tenantIds: [tenantRecord(account.id).id], activeInBillingAccounts: [billingAccountRecord(account.owner_user_id).id] }))
        .toEqual({ items: [], total: 0 })
    })

    it("reports a slug taken once a tenant holds it, and free before", async () => {
      const { tenant } = await h().run(seedTenant)
      expect(await h().run(TenantStore.use((s) => s.slugTaken(tenant.slug)))).toBe(true)
      expect(await h().run(TenantStore.use((s) => s.slugTaken(`${tenant.slug}-2`)))).toBe(false)
    })

    it("lists every tenant of every billing account, inactive ones too, oldest first with ties by id, in pages", async () => {
      const [one, two] = [await h().run(newBillingAccount), await h().run(newBillingAccount)]
      const late = tenantRecord(one.id, { created_at: "1970-01-03T00:00:00.000Z" })
      const tiedA = tenantRecord(two.id, { created_at: "1970-01-02T00:00:00.000Z", is_active: false })
      const tiedB = tenantRecord(one.id, { created_at: "1970-01-02T00:00:00.000Z" })
      for (const tenant of [late, tiedA, tiedB]) await h().run(TenantStore.use((s) => s.insert(tenant)))
      const ours = new Set([late.id, tiedA.id, tiedB.id])

      const all = await h().run(TenantStore.use((s) => s.listAll({ limit: 10_000, offset: 0 })))
      expect(all.total).toBe(all.items.length)
      const tied = [tiedA, tiedB].sort((a, b) => (a.id < b.id ? -1 : 1))
      expect(all.items.filter((t) => ours.has(t.id))).toEqual([...tied, late])
      const paged = []
      for (let offset = 0; offset < all.total; offset += 2) {
        const page = await h().run(TenantStore.use((s) => s.listAll({ limit: 2, offset })))
        expect(page.total).toBe(all.total)
        paged.push(...page.items)
      }
      expect(paged).toEqual(all.items)
    })
  }
})
