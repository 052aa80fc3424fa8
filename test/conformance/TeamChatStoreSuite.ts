import { Effect, Option } from "effect"
import { expect, it } from "vitest"
import { AccountStore } from "../../src/ports/AccountStore.ts"
import { ApiKeyStore } from "../../src/ports/ApiKeyStore.ts"
import type { StorageError } from "../../src/ports/StorageError.ts"
import {
  type TeamChatChannelRecord,
  type TeamChatMemberRecord,
  type TeamChatMessageRecord,
  TeamChatStore
} from "../../src/ports/TeamChatStore.ts"
import { TenantStore } from "../../src/ports/TenantStore.ts"
import {
  apiKeyRecord,
  billingAccountRecord,
  seedTenant,
  teamChatChannelRecord,
  teamChatMessageRecord,
  tenantRecord,
  userRecord
} from "./Fixtures.ts"
import { makeSuite, type Suite, type UseHarness } from "./Harness.ts"

/** The tables the team chat suite checks writes in. */
type TeamChatTables = "teamChatChannels" | "teamChatMembers" | "teamChatMessages"

/** What the team chat suite runs against: the port, and the tenants, users and keys membership reads. */
type TeamChatPorts = TeamChatStore | TenantStore | AccountStore | ApiKeyStore

type UseTeamChat = UseHarness<TeamChatPorts, TeamChatTables>

const newId = (): string => globalThis.crypto.randomUUID()

/** An instant of the day as stored, from `HH:MM:SS.mmm`. */
const at = (time: string): string => `2026-11-26T${time}Z`

const store = <A, E, R>(f: (s: TeamChatStore["Service"]) => Effect.Effect<A, E, R>) => TeamChatStore.use(f)

const channelRecord = (tenantId: string, overrides: Partial<TeamChatChannelRecord> = {}): TeamChatChannelRecord =>
  teamChatChannelRecord(tenantId, { created_at: at("09:00:00.000"), ...overrides })

const member = (channel: TeamChatChannelRecord, userId: string, tenantId = channel.tenant_id, joinedAt = channel.created_at): TeamChatMemberRecord => ({
  channel_id: channel.id,
  user_id: userId,
  tenant_id: tenantId,
  joined_at: joinedAt
})

const messageRecord = (channel: TeamChatChannelRecord, overrides: Partial<TeamChatMessageRecord> = {}): TeamChatMessageRecord =>
  teamChatMessageRecord(channel, { created_at: at("09:05:00.000"), ...overrides })

const expectUniqueViolation = (error: StorageError, constraint: string) => {
  expect(error).toMatchObject({ _tag: "StorageError", reason: "UniqueViolation", constraint })
  expect(error.isRetryable).toBe(false)
}

const tenants = (h: UseTeamChat, count: number) =>
  Promise.all(Array.from({ length: count }, () => h().run(seedTenant)))

const insertChannel = (h: UseTeamChat, channel: TeamChatChannelRecord, members: ReadonlyArray<TeamChatMemberRecord>) =>
  h().run(store((s) => s.insertChannel(channel, members)))

const getChannel = (h: UseTeamChat, tenantId: string, channelId: string) =>
  h().run(store((s) => s.getChannel(tenantId, channelId))).then(Option.getOrUndefined)

const getMessage = (h: UseTeamChat, tenantId: string, messageId: string) =>
  h().run(store((s) => s.getMessage(tenantId, messageId))).then(Option.getOrUndefined)

/**
 * TeamChatStore: channels with the tenants that see them and their members, direct messages unique
 * per participants and tenant, messages and replies with their files in order, listed in the order
 * stored; every read from a tenant that neither made nor shares the channel finds nothing; and who
 * belongs to a tenant (billing account owners, holders of live bound keys, active tenants only).
 */
export const teamChatStoreSuite: Suite<TeamChatPorts, TeamChatTables> = makeSuite({
  name: "TeamChatStore",
  tables: ["teamChatChannels", "teamChatMembers", "teamChatMessages"],
  tests: (h) => {
    it("stores a shared channel with guests and its members, and each tenant that sees it reads it back whole", async () => {
      const [own, b, c, stranger] = await tenants(h, 4)
      const channel = channelRecord(own!.tenant.id, {
        shared_with_tenant_ids: [c!.tenant.id, b!.tenant.id].sort().reverse(),
        has_external_guests: true,
        created_by: own!.user.id
      })
      const members = [
        member(channel, own!.user.id),
        member(channel, b!.user.id, b!.tenant.id, at("09:00:01.000")),
        member(channel, c!.user.id, c!.tenant.id, at("09:00:01.000"))
      ]
      await insertChannel(h, channel, members)

      const expected = { ...channel, shared_with_tenant_ids: [b!.tenant.id, c!.tenant.id].sort() }
      expect(await h().stored.teamChatChannels(own!.tenant.id)).toEqual([expected])
      expect(await h().stored.teamChatMembers(b!.tenant.id)).toEqual([members[1]])
      const joinedLater = [members[1]!, members[2]!].sort((x, y) => (x.user_id < y.user_id ? -1 : 1))
      for (const viewer of [own!, b!, c!]) {
        expect(await getChannel(h, viewer.tenant.id, channel.id)).toEqual({ channel: expected, members: [members[0], ...joinedLater] })
      }
      expect(await getChannel(h, stranger!.tenant.id, channel.id)).toBeUndefined()
      expect(await getChannel(h, own!.tenant.id, newId())).toBeUndefined()
    })

    it("keeps one direct message per participants and tenant, found only in its tenant", async () => {
      const [own, other] = await tenants(h, 2)
      const key = [newId(), newId()].sort().join(",")
      const dm = channelRecord(own!.tenant.id, { kind: "dm", name: null, dm_key: key })
      await insertChannel(h, dm, key.split(",").map((userId) => member(dm, userId)))

      expect(await h().run(store((s) => s.findDirectMessage(own!.tenant.id, key)))).toEqual(Option.some(dm))
      expect(await h().run(store((s) => s.findDirectMessage(other!.tenant.id, key)))).toEqual(Option.none())
      expect((await getChannel(h, own!.tenant.id, dm.id))?.members.map((m) => m.user_id)).toEqual(key.split(","))

      // The same participants again in the same tenant collide, and nothing of the second is kept.
      const again = channelRecord(own!.tenant.id, { kind: "dm", name: null, dm_key: key })
      const error = await h().run(Effect.flip(store((s) => s.insertChannel(again, [member(again, newId())]))))
      expectUniqueViolation(error, "team_chat_channels_tenant_dm_unique")
      expect(await getChannel(h, own!.tenant.id, again.id)).toBeUndefined()
      expect((await h().stored.teamChatMembers(own!.tenant.id)).filter((m) => m.channel_id === again.id)).toEqual([])

      // Another tenant may hold a direct message between the same users; channels (no key) never collide.
      const elsewhere = channelRecord(other!.tenant.id, { kind: "dm", name: null, dm_key: key })
      await insertChannel(h, elsewhere, [])
      await insertChannel(h, channelRecord(own!.tenant.id), [])
      await insertChannel(h, channelRecord(own!.tenant.id), [])
      expect((await h().stored.teamChatChannels(own!.tenant.id)).length).toBe(3)
    })

    it("stores messages and replies with their files in order, and lists them in the order stored though the clock stands still", async () => {
      const [own, shared, stranger] = await tenants(h, 3)
      const channel = channelRecord(own!.tenant.id, { shared_with_tenant_ids: [shared!.tenant.id] })
      await insertChannel(h, channel, [member(channel, channel.created_by)])
      const files = [newId(), newId(), newId()]
      const first = messageRecord(channel, { attachment_ids: [files[2]!, files[0]!, files[1]!] })
      const reply = messageRecord(channel, { text: "", parent_message_id: first.id, author_user_id: newId() })
      const later = Array.from({ length: 5 }, (_, i) => messageRecord(channel, { text: `message ${i}` }))
      for (const message of [first, reply, ...later]) await h().run(store((s) => s.insertMessage(message)))

      expect(await h().stored.teamChatMessages(own!.tenant.id)).toEqual([first, reply, ...later].sort((x, y) => (x.id < y.id ? -1 : 1)))
      expect(await getMessage(h, own!.tenant.id, first.id)).toEqual(first)
      expect(await getMessage(h, shared!.tenant.id, reply.id)).toEqual(reply)
      expect(await getMessage(h, stranger!.tenant.id, first.id)).toBeUndefined()

      const page = (tenantId: string, limit: number, offset: number) =>
        h().run(store((s) => s.listMessages(tenantId, channel.id, { limit, offset })))
      expect(await page(own!.tenant.id, 100, 0)).toEqual({ items: [first, reply, ...later], total: 7 })
      expect(await page(shared!.tenant.id, 3, 2)).toEqual({ items: later.slice(0, 3), total: 7 })
      expect(await page(stranger!.tenant.id, 100, 0)).toEqual({ items: [], total: 0 })
    })

    it("lists a member's channels and direct messages the tenant sees, newest activity first, with members, shared tenants and paging", async () => {
      const [own, partner, stranger] = await tenants(h, 3)
      const me = newId()
      const someoneElse = newId()
      const channel = (tenantId: string, created: string, overrides: Partial<TeamChatChannelRecord> = {}) =>
        channelRecord(tenantId, { created_at: at(created), created_by: me, ...overrides })
      // Quiet: no message, so its creation is its activity; two made in the same instant tie, broken by id.
      const [quietLow, quietHigh] = [channel(own!.tenant.id, "09:00:00.000"), channel(own!.tenant.id, "09:00:00.000")]
        .sort((x, y) => (x.id < y.id ? -1 : 1))
      const busy = channel(own!.tenant.id, "08:00:00.000")
      const dm = channel(own!.tenant.id, "09:01:00.000", { kind: "dm", name: null, dm_key: [me, someoneElse].sort().join(",") })
      // Made in the partner tenant, shared with this one, where I joined through this one.
      const shared = channel(partner!.tenant.id, "07:00:00.000", { shared_with_tenant_ids: [own!.tenant.id], created_by: someoneElse })
      const notMine = channel(own!.tenant.id, "09:30:00.000", { created_by: someoneElse })
      const elsewhere = channel(stranger!.tenant.id, "09:40:00.000")
      await insertChannel(h, quietLow!, [member(quietLow!, me)])
      await insertChannel(h, quietHigh!, [member(quietHigh!, me)])
      await insertChannel(h, busy, [member(busy, me), member(busy, someoneElse, own!.tenant.id, at("08:00:01.000"))])
      await insertChannel(h, dm, [member(dm, me), member(dm, someoneElse)].sort((x, y) => (x.user_id < y.user_id ? -1 : 1)))
      await insertChannel(h, shared, [member(shared, someoneElse), member(shared, me, own!.tenant.id, at("07:00:01.000"))])
      await insertChannel(h, notMine, [member(notMine, someoneElse)])
      await insertChannel(h, elsewhere, [member(elsewhere, me)])
      // A thread reply is activity too; the newest of a channel's messages counts, not the last stored.
      const sharedTop = messageRecord(shared, { created_at: at("09:02:00.000") })
      for (const message of [
        messageRecord(busy, { created_at: at("09:10:00.000") }),
        messageRecord(busy, { created_at: at("08:30:00.000") }),
        messageRecord(dm, { created_at: at("09:05:00.000") }),
        sharedTop,
        messageRecord(shared, { created_at: at("09:20:00.000"), parent_message_id: sharedTop.id }),
        messageRecord(notMine, { created_at: at("09:50:00.000") }),
        messageRecord(elsewhere, { created_at: at("09:50:00.000") })
      ]) await h().run(store((s) => s.insertMessage(message)))

      const list = (tenantId: string, userId: string, limit = 100, offset = 0) =>
        h().run(store((s) => s.listMemberChannels(tenantId, userId, { limit, offset })))
      const all = await list(own!.tenant.id, me)
      expect(all.total).toBe(5)
      expect(all.items.map((item) => [item.channel.id, item.last_activity_at])).toEqual([
        [shared.id, at("09:20:00.000")],
        [busy.id, at("09:10:00.000")],
        [dm.id, at("09:05:00.000")],
        [quietHigh!.id, at("09:00:00.000")],
        [quietLow!.id, at("09:00:00.000")]
      ])
      // Each whole, as getChannel reads it.
      for (const item of all.items) {
        expect({ channel: item.channel, members: item.members }).toEqual(await getChannel(h, own!.tenant.id, item.channel.id))
      }
      expect(all.items[0]!.channel.shared_with_tenant_ids).toEqual([own!.tenant.id])

      expect(await list(own!.tenant.id, me, 2, 1)).toEqual({ items: all.items.slice(1, 3), total: 5 })
      expect(await list(own!.tenant.id, me, 2, 5)).toEqual({ items: [], total: 5 })
      // From the partner tenant, only what it sees; a stranger's channel only from the stranger tenant.
      expect((await list(partner!.tenant.id, me)).items.map((item) => item.channel.id)).toEqual([shared.id])
      expect((await list(stranger!.tenant.id, me)).items.map((item) => item.channel.id)).toEqual([elsewhere.id])
      expect((await list(own!.tenant.id, someoneElse)).items.map((item) => item.channel.id)).toEqual([notMine.id, shared.id, busy.id, dm.id])
      expect(await list(own!.tenant.id, newId())).toEqual({ items: [], total: 0 })
    })

    it("carries a file in one team chat message only, and says which files are posted, per tenant", async () => {
      const [own, other] = await tenants(h, 2)
      const channel = channelRecord(own!.tenant.id)
      await insertChannel(h, channel, [])
      const [a, b, c] = [newId(), newId(), newId()]
      await h().run(store((s) => s.insertMessage(messageRecord(channel, { attachment_ids: [a, b] }))))

      const twice = messageRecord(channel, { attachment_ids: [c, b] })
      const error = await h().run(Effect.flip(store((s) => s.insertMessage(twice))))
      expectUniqueViolation(error, "team_chat_message_attachments_attachment_unique")
      expect(await getMessage(h, own!.tenant.id, twice.id)).toBeUndefined()

      const posted = await h().run(store((s) => s.postedAttachmentIds(own!.tenant.id, [a, b, c])))
      expect([...posted].sort()).toEqual([a, b].sort())
      expect(await h().run(store((s) => s.postedAttachmentIds(other!.tenant.id, [a, b, c])))).toEqual([])
      expect(await h().run(store((s) => s.postedAttachmentIds(own!.tenant.id, [])))).toEqual([])
    })

    it("says who belongs to which tenant: billing account owners and holders of live bound keys, in active tenants only", async () => {
      const [one, two] = await tenants(h, 2)
      const [keyHolder, revoked, expired, future, unbound, nobody] = Array.from({ length: 6 }, () => userRecord())
      const accounts = [keyHolder!, revoked!, expired!, future!, unbound!, nobody!]
      await h().run(Effect.forEach(accounts, (user) => AccountStore.use((s) => s.insertUser(user)), { discard: true }))
      const inactiveAccount = billingAccountRecord(one!.user.id)
      const inactive = tenantRecord(inactiveAccount.id, { is_active: false })
      await h().run(AccountStore.use((s) => s.insertBillingAccount(inactiveAccount)))
      await h().run(TenantStore.use((s) => s.insert(inactive)))
      const now = at("12:00:00.000")
      const keys = [
        apiKeyRecord(one!.tenant.id, { user_id: keyHolder!.id }),
        apiKeyRecord(two!.tenant.id, { user_id: keyHolder!.id, revoked_at: at("11:00:00.000") }),
        apiKeyRecord(one!.tenant.id, { user_id: revoked!.id, revoked_at: at("11:00:00.000") }),
        apiKeyRecord(one!.tenant.id, { user_id: expired!.id, expires_at: now }),
        apiKeyRecord(one!.tenant.id, { user_id: future!.id, expires_at: at("12:00:00.001") }),
        apiKeyRecord(one!.tenant.id),
        apiKeyRecord(inactive.id, { user_id: keyHolder!.id })
      ]
      await h().run(Effect.forEach(keys, (key) => ApiKeyStore.use((s) => s.insert(key)), { discard: true }))

      const users = [one!.user.id, two!.user.id, ...accounts.map((u) => u.id)]
      const found = await h().run(store((s) => s.tenantUsers([one!.tenant.id, two!.tenant.id, inactive.id], users, now)))
      const pairs = found.map((p) => `${p.tenant_id}/${p.user_id}`).sort()
      expect(pairs).toEqual([
        `${one!.tenant.id}/${one!.user.id}`,
        `${one!.tenant.id}/${keyHolder!.id}`,
        `${one!.tenant.id}/${future!.id}`,
        `${two!.tenant.id}/${two!.user.id}`
      ].sort())
      // A user holding both ways is one pair; asked about nobody, the answer is empty.
      const both = apiKeyRecord(one!.tenant.id, { user_id: one!.user.id })
      await h().run(ApiKeyStore.use((s) => s.insert(both)))
      expect(await h().run(store((s) => s.tenantUsers([one!.tenant.id], [one!.user.id], now)))).toEqual([
        { tenant_id: one!.tenant.id, user_id: one!.user.id }
      ])
      expect(await h().run(store((s) => s.tenantUsers([one!.tenant.id], [], now)))).toEqual([])
      expect(await h().run(store((s) => s.tenantUsers([], [one!.user.id], now)))).toEqual([])
    })
  }
})
