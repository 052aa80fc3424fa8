import { Effect, Option } from "effect"
import { expect, it } from "vitest"
import type { AccountStore } from "../../src/ports/AccountStore.ts"
import { type ChannelRecord, ChannelStore } from "../../src/ports/ChannelStore.ts"
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

// Two tenants with one channel each, for the same provider account (allowed: channels are per tenant).
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

    it("finds the active channels of a platform and provider id in every tenant, newest first, and no others", async () => {
      const a = (await h().run(seedTenant)).tenant
      const b = (await h().run(seedTenant)).tenant
      const externalId = `10655${globalThis.crypto.randomUUID().replaceAll("-", "").slice(0, 10)}`
      const older = channelRecord(a.id, { external_id: externalId, created_at: "2026-11-22T10:00:00.000Z" })
      const newer = channelRecord(b.id, { external_id: externalId, created_at: "2026-11-22T11:00:00.000Z" })
      const disconnected = channelRecord(b.id, {
        external_id: externalId,
        status: "disconnected",
        created_at: "2026-11-22T12:00:00.000Z",
        disconnected_at: "2026-11-22T12:30:00.000Z"
      })
      const otherPlatform = channelRecord(a.id, { platform: "smtp_imap", external_id: externalId })
      const otherNumber = channelRecord(a.id, { external_id: `${externalId}9` })
      await h().run(insertAll([disconnected, older, otherPlatform, newer, otherNumber]))
      const find = (platform: string, id: string) => h().run(ChannelStore.use((s) => s.findActiveByExternalId(platform, id)))

      expect(await find("chatapp", externalId)).toEqual([newer, older])
      expect(await find("smtp_imap", externalId)).toEqual([otherPlatform])
      expect(await find("chatapp", `${externalId}8`)).toEqual([])
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
