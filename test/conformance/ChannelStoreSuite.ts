import { Effect, Option, Result } from "effect"
import { expect, it } from "vitest"
import type { AccountStore } from "../../src/ports/AccountStore.ts"
import { type ChannelRecord, ChannelStore } from "../../src/ports/ChannelStore.ts"
import type { StorageError } from "../../src/ports/StorageError.ts"
import type { TenantStore } from "../../src/ports/TenantStore.ts"
import { channelRecord, seedTenant } from "./Fixtures.ts"
import { byId, makeSuite, type Suite, type UseHarness } from "./Harness.ts"

// `n` channels of one tenant, the i-th created `i` minutes after the base time.
const channelsOverMinutes = (tenantId: string, n: number) =>
  Array.from({ length: n }, (_, i) =>
    channelRecord(tenantId, { name: `Channel ${i}`, created_at: `2026-11-22T10:${String(i).padStart(2, "0")}:00.000Z` }))

const insertAll = (channels: ReadonlyArray<ChannelRecord>) =>
  ChannelStore.use((s) => Effect.forEach(channels, (channel) => s.insert(channel), { discard: true }))

/** Ten digits no other test uses: config values and provider ids no other channel holds. */
const uniqueDigits = (): string => BigInt(`0x${globalThis.crypto.randomUUID().replaceAll("-", "")}`).toString().slice(-10)

const getChannel = (h: UseHarness<ChannelStore, "channels">, tenantId: string, id: string) =>
  h().run(ChannelStore.use((s) => s.get(tenantId, id))).then(Option.getOrUndefined)

const expectNumberTaken = (error: StorageError) => {
  expect(error).toMatchObject({ _tag: "StorageError", reason: "UniqueViolation", constraint: "channels_active_external_unique" })
}

const disconnectedAt = (channel: ChannelRecord, at: string): ChannelRecord => ({
  ...channel,
  status: "disconnected",
  updated_at: at,
  disconnected_at: at
})

// Two tenants with one channel each.
const twoTenants = Effect.gen(function*() {
  const a = (yield* seedTenant).tenant
  const b = (yield* seedTenant).tenant
  const channelOfA = channelRecord(a.id, { name: "Line of A" })
  const channelOfB = channelRecord(b.id, { name: "Line of B", secrets: { access_token: "b-only-secret-token-0001" } })
  yield* insertAll([channelOfA, channelOfB])
  return { a, b, channelOfA, channelOfB }
})

/**
 * ChannelStore: every field round-trips; update replaces; list pages newest first; no tenant reaches
 * another's channels, save through the two reads across tenants, of the active channels holding a
 * provider id or a config value (matched exactly). Needs TenantStore and AccountStore for the tenants
 * channels belong to.
 */
export const channelStoreSuite: Suite<ChannelStore | TenantStore | AccountStore, "channels"> = makeSuite({
  name: "ChannelStore",
  tables: ["channels"],
  tests: (h) => {
    const findByConfig = (platform: string, key: string, value: string) =>
      h().run(ChannelStore.use((s) => s.findActiveByConfig(platform, key, value)))

    it("stores every field, with unicode config and secrets and the link it came through, and reads it back unchanged", async () => {
      const { tenant } = await h().run(seedTenant)
      const channel = channelRecord(tenant.id, {
        platform: "smtp_imap",
        name: "zoë@exämple.com 山田 🚀",
        external_id: "zoë@exämple.com",
        config: { email_address: "zoë@exämple.com", imap_host: "imap.exämple.com", imap_port: "993", note: "\"quoted\" \\ back\nslash" },
        secrets: { password: "pässwörd with spaces, quotes \" and ' and emoji 🔑" },
        created_via_connect_token_id: globalThis.crypto.randomUUID(),
        created_at: "2026-11-22T10:15:30.123Z",
        updated_at: "2026-11-22T11:00:00.001Z"
      })
      await h().run(ChannelStore.use((s) => s.insert(channel)))

      expect(await h().stored.channels(tenant.id)).toEqual([channel])
      expect(await getChannel(h, tenant.id, channel.id)).toEqual(channel)
    })

    it("stores a disconnected channel with empty config and secrets and reads it back unchanged", async () => {
      const { tenant } = await h().run(seedTenant)
      const channel = channelRecord(tenant.id, {
        status: "disconnected",
        config: {},
        secrets: {},
        updated_at: "2026-11-22T11:00:00.000Z",
        disconnected_at: "2026-11-22T11:00:00.000Z"
      })
      await h().run(ChannelStore.use((s) => s.insert(channel)))

      expect(await h().stored.channels(tenant.id)).toEqual([channel])
      expect(await getChannel(h, tenant.id, channel.id)).toEqual(channel)
    })

    it("finds no channel for an unknown id", async () => {
      const { tenant } = await h().run(seedTenant)
      expect(await getChannel(h, tenant.id, channelRecord(tenant.id).id)).toBeUndefined()
    })

    it("replaces every changeable field on update and reports that it did", async () => {
      const { tenant } = await h().run(seedTenant)
      const before = channelRecord(tenant.id)
      await h().run(ChannelStore.use((s) => s.insert(before)))
      const after: ChannelRecord = {
        ...before,
        name: "Renamed line",
        status: "disconnected",
        config: { phone_number_id: "1065550199" },
        secrets: { access_token: "rotated-secret-token-0002" },
        updated_at: "2026-11-22T12:00:00.000Z",
        disconnected_at: "2026-11-22T12:00:00.000Z"
      }

      expect(await h().run(ChannelStore.use((s) => s.update(tenant.id, after)))).toBe(true)
      expect(await h().stored.channels(tenant.id)).toEqual([after])
    })

    it("updates nothing and reports false for an unknown channel", async () => {
      const { tenant } = await h().run(seedTenant)
      const existing = channelRecord(tenant.id)
      await h().run(ChannelStore.use((s) => s.insert(existing)))

      expect(await h().run(ChannelStore.use((s) => s.update(tenant.id, channelRecord(tenant.id, { name: "Ghost" }))))).toBe(false)
      expect(await h().stored.channels(tenant.id)).toEqual([existing])
    })

    it("lists newest first, one window at a time, with the tenant's total on every page", async () => {
      const { tenant } = await h().run(seedTenant)
      const channels = channelsOverMinutes(tenant.id, 5)
      await h().run(insertAll(channels))
      const page = (offset: number) => h().run(ChannelStore.use((s) => s.list(tenant.id, { limit: 2, offset })))
      const [c0, c1, c2, c3, c4] = channels

      expect(await h().stored.channels(tenant.id)).toEqual([...channels].sort(byId))
      expect(await page(0)).toEqual({ items: [c4, c3], total: 5 })
      expect(await page(2)).toEqual({ items: [c2, c1], total: 5 })
      expect(await page(4)).toEqual({ items: [c0], total: 5 })
      expect(await page(6)).toEqual({ items: [], total: 5 })
    })

    it("pages through channels created at the same instant without repeating or skipping any", async () => {
      const { tenant } = await h().run(seedTenant)
      const channels = Array.from({ length: 7 }, (_, i) => channelRecord(tenant.id, { name: `Twin ${i}` }))
      await h().run(insertAll(channels))

      const seen: Array<string> = []
      for (let offset = 0; offset < 7; offset += 3) {
        const { items } = await h().run(ChannelStore.use((s) => s.list(tenant.id, { limit: 3, offset })))
        seen.push(...items.map((c) => c.id))
      }
      expect([...seen].sort()).toEqual(channels.map((c) => c.id).sort())
    })

    it("finds the active channel of a platform and provider id in whichever tenant holds it, and no others", async () => {
      const a = (await h().run(seedTenant)).tenant
      const b = (await h().run(seedTenant)).tenant
      const externalId = `10655${uniqueDigits()}`
      const active = channelRecord(a.id, { external_id: externalId, created_at: "2026-11-22T11:00:00.000Z" })
      const disconnected = disconnectedAt(
        channelRecord(b.id, { external_id: externalId, created_at: "2026-11-22T12:00:00.000Z" }),
        "2026-11-22T12:30:00.000Z"
      )
      const otherPlatform = channelRecord(b.id, { platform: "smtp_imap", external_id: externalId })
      const otherNumber = channelRecord(a.id, { external_id: `${externalId}9` })
      await h().run(insertAll([disconnected, active, otherPlatform, otherNumber]))
      const find = (platform: string, id: string) => h().run(ChannelStore.use((s) => s.findActiveByExternalId(platform, id)))

      expect(await find("chatapp", externalId)).toEqual([active])
      expect(await find("smtp_imap", externalId)).toEqual([otherPlatform])
      expect(await find("chatapp", `${externalId}8`)).toEqual([])
    })

    it("refuses a second active channel of a platform and provider id, in the same tenant or another, with UniqueViolation naming channels_active_external_unique, and keeps the first", async () => {
      const a = (await h().run(seedTenant)).tenant
      const b = (await h().run(seedTenant)).tenant
      const first = channelRecord(a.id)
      await h().run(insertAll([first]))

      const sameTenant = channelRecord(a.id, { external_id: first.external_id, name: "Again in A" })
      const otherTenant = channelRecord(b.id, { external_id: first.external_id, name: "Taken over by B" })
      expectNumberTaken(await h().run(Effect.flip(insertAll([sameTenant]))))
      expectNumberTaken(await h().run(Effect.flip(insertAll([otherTenant]))))

      expect(await h().stored.channels(a.id)).toEqual([first])
      expect(await h().stored.channels(b.id)).toEqual([])
    })

    it("lets the same provider id be active once per platform, and stored disconnected any number of times", async () => {
      const a = (await h().run(seedTenant)).tenant
      const b = (await h().run(seedTenant)).tenant
      const chatapp = channelRecord(a.id)
      const otherPlatform = channelRecord(b.id, { platform: "sms", external_id: chatapp.external_id })
      const gone = [a, b].map((tenant) =>
        disconnectedAt(channelRecord(tenant.id, { external_id: chatapp.external_id }), "2026-11-22T12:00:00.000Z")
      )
      await h().run(insertAll([chatapp, otherPlatform, ...gone]))

      expect(await h().stored.channels(a.id)).toEqual([chatapp, gone[0]!].sort(byId))
      expect(await h().stored.channels(b.id)).toEqual([otherPlatform, gone[1]!].sort(byId))
    })

    it("accepts the number again, in any tenant, once the channel holding it is disconnected", async () => {
      const a = (await h().run(seedTenant)).tenant
      const b = (await h().run(seedTenant)).tenant
      const first = channelRecord(a.id)
      await h().run(insertAll([first]))
      const gone = disconnectedAt(first, "2026-11-22T12:00:00.000Z")
      expect(await h().run(ChannelStore.use((s) => s.update(a.id, gone)))).toBe(true)

      const again = channelRecord(b.id, { external_id: first.external_id })
      await h().run(insertAll([again]))

      expect(await h().stored.channels(a.id)).toEqual([gone])
      expect(await h().stored.channels(b.id)).toEqual([again])
    })

    it("refuses to make a disconnected channel active while another holds its number, and leaves it unchanged", async () => {
      const { tenant } = await h().run(seedTenant)
      const gone = disconnectedAt(channelRecord(tenant.id), "2026-11-22T12:00:00.000Z")
      const holder = channelRecord(tenant.id, { external_id: gone.external_id })
      await h().run(insertAll([gone, holder]))

      const revived: ChannelRecord = { ...gone, status: "active", disconnected_at: null }
      expectNumberTaken(await h().run(Effect.flip(ChannelStore.use((s) => s.update(tenant.id, revived)))))
      expect(await h().stored.channels(tenant.id)).toEqual([gone, holder].sort(byId))
    })

    it("stores exactly one of two active channels of one number inserted at once", async () => {
      const a = (await h().run(seedTenant)).tenant
      const b = (await h().run(seedTenant)).tenant
      const ofA = channelRecord(a.id)
      const ofB = channelRecord(b.id, { external_id: ofA.external_id })
      const results = await h().run(
        Effect.all([ofA, ofB].map((channel) => Effect.result(insertAll([channel]))), { concurrency: 2 })
      )

      expect(results.filter(Result.isSuccess)).toHaveLength(1)
      for (const failed of results.filter(Result.isFailure)) expectNumberTaken(failed.failure)
      const stored = [...await h().stored.channels(a.id), ...await h().stored.channels(b.id)]
      expect(stored).toHaveLength(1)
      expect(stored[0]!.external_id).toBe(ofA.external_id)
    })

    it("finds no channel by provider id once every channel holding it is disconnected", async () => {
      const { tenant } = await h().run(seedTenant)
      const externalId = `10655${globalThis.crypto.randomUUID().replaceAll("-", "").slice(0, 10)}`
      const channel = channelRecord(tenant.id, { external_id: externalId })
      await h().run(insertAll([channel]))
      const find = () => h().run(ChannelStore.use((s) => s.findActiveByExternalId("chatapp", externalId)))

      expect(await find()).toEqual([channel])
      const disconnected: ChannelRecord = { ...channel, status: "disconnected", disconnected_at: "2026-11-22T12:00:00.000Z" }
      expect(await h().run(ChannelStore.use((s) => s.update(tenant.id, disconnected)))).toBe(true)
      expect(await find()).toEqual([])
    })

    it("finds the active channels of a platform whose config holds exactly the value under the key, in every tenant, newest first", async () => {
      const a = (await h().run(seedTenant)).tenant
      const b = (await h().run(seedTenant)).tenant
      const account = `20655${uniqueDigits()}`
      const withAccount = (tenantId: string, overrides: Partial<ChannelRecord>) =>
        channelRecord(tenantId, { ...overrides, config: { phone_number_id: uniqueDigits(), business_account_id: account, ...overrides.config } })
      const older = withAccount(a.id, { created_at: "2026-11-22T10:00:00.000Z" })
      const newer = withAccount(b.id, { created_at: "2026-11-22T11:00:00.000Z" })
      const disconnected = withAccount(b.id, {
        status: "disconnected",
        created_at: "2026-11-22T12:00:00.000Z",
        disconnected_at: "2026-11-22T12:30:00.000Z"
      })
      const otherPlatform = withAccount(a.id, { platform: "smtp_imap" })
      const otherKey = channelRecord(a.id, { config: { phone_number_id: account, parent_business_account_id: account } })
      const longer = channelRecord(a.id, { config: { business_account_id: `${account}3` } })
      const shorter = channelRecord(a.id, { config: { business_account_id: account.slice(0, -1) } })
      const prefixed = channelRecord(a.id, { config: { business_account_id: `9${account}` } })
      await h().run(insertAll([disconnected, older, otherPlatform, otherKey, newer, longer, shorter, prefixed]))

      expect(await findByConfig("chatapp", "business_account_id", account)).toEqual([newer, older])
      expect(await findByConfig("smtp_imap", "business_account_id", account)).toEqual([otherPlatform])
      expect(await findByConfig("chatapp", "parent_business_account_id", account)).toEqual([otherKey])
      expect(await findByConfig("chatapp", "business_account_id", `${account}3`)).toEqual([longer])
      expect(await findByConfig("chatapp", "business_account_id", `${account}4`)).toEqual([])
      expect(await findByConfig("chatapp", "business_account", account)).toEqual([])
    })

    it("matches a config value exactly: LIKE metacharacters, quotes and case count as themselves", async () => {
      const { tenant } = await h().run(seedTenant)
      const u = uniqueDigits()
      const values = {
        underscore: `${u}_1`,
        percent: `${u}%`,
        backslash: `${u}\\d`,
        quoted: `${u} "quoted" 山田 🚀`,
        upper: `${u}ABC`
      }
      const holding = (value: string) => channelRecord(tenant.id, { config: { business_account_id: value } })
      const byValue = Object.fromEntries(Object.entries(values).map(([k, v]) => [k, holding(v)])) as Record<keyof typeof values, ChannelRecord>
      const lookalikes = [`${u}x1`, `${u}%x`, `${u}50`, `${u}\\xd`, `${u}\\`, `${u}\\dd`, `${u}abc`].map(holding)
      await h().run(insertAll([...Object.values(byValue), ...lookalikes]))
      const find = (value: string) => findByConfig("chatapp", "business_account_id", value)

      for (const key of Object.keys(values) as Array<keyof typeof values>) expect(await find(values[key])).toEqual([byValue[key]])
      expect(await find(`${u}_`)).toEqual([])
      expect(await find(`${u}%%`)).toEqual([])
      expect(await find(`${u}\\`)).toEqual([lookalikes[4]])
      expect(await find(`${u}abc`)).toEqual([lookalikes[6]])
      expect(await find(`${u}Abc`)).toEqual([])
      expect(await find(`%`)).toEqual([])
    })

    it("finds no channel by config once the channel holding the value is disconnected", async () => {
      const { tenant } = await h().run(seedTenant)
      const channel = channelRecord(tenant.id, { config: { business_account_id: uniqueDigits() } })
      await h().run(insertAll([channel]))
      const find = () => findByConfig("chatapp", "business_account_id", channel.config["business_account_id"]!)

      expect(await find()).toEqual([channel])
      const disconnected: ChannelRecord = { ...channel, status: "disconnected", disconnected_at: "2026-11-22T12:00:00.000Z" }
      expect(await h().run(ChannelStore.use((s) => s.update(tenant.id, disconnected)))).toBe(true)
      expect(await find()).toEqual([])
    })

    it("returns nothing for another tenant's channel", async () => {
      const { a, channelOfB } = await h().run(twoTenants)
      expect(await getChannel(h, a.id, channelOfB.id)).toBeUndefined()
    })

    it("refuses to update another tenant's channel and leaves it unchanged", async () => {
      const { a, b, channelOfB } = await h().run(twoTenants)
      const hijack: ChannelRecord = { ...channelOfB, name: "Hijacked", status: "disconnected", secrets: { access_token: "stolen" } }

      expect(await h().run(ChannelStore.use((s) => s.update(a.id, hijack)))).toBe(false)
      expect(await h().run(ChannelStore.use((s) => s.update(a.id, { ...hijack, tenant_id: a.id })))).toBe(false)
      expect(await h().stored.channels(b.id)).toEqual([channelOfB])
    })

    it("lists and counts only the tenant's own channels", async () => {
      const { a, b, channelOfA, channelOfB } = await h().run(twoTenants)
      const extraOfB = channelRecord(b.id, { name: "Extra of B" })
      await h().run(ChannelStore.use((s) => s.insert(extraOfB)))

      expect(await h().run(ChannelStore.use((s) => s.list(a.id, { limit: 50, offset: 0 }))))
        .toEqual({ items: [channelOfA], total: 1 })
      const ofB = await h().run(ChannelStore.use((s) => s.list(b.id, { limit: 50, offset: 0 })))
      expect(ofB.total).toBe(2)
      expect(ofB.items.map((c) => c.id).sort()).toEqual([channelOfB.id, extraOfB.id].sort())
    })
  }
})
