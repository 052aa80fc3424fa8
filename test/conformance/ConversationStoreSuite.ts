import { Effect, Option } from "effect"
import { describe, expect, it } from "vitest"
import type { AccountStore } from "../../src/ports/AccountStore.ts"
import { type ConversationFilter, type ConversationRecord, ConversationStore } from "../../src/ports/ConversationStore.ts"
import type { StorageError } from "../../src/ports/StorageError.ts"
import type { TenantStore } from "../../src/ports/TenantStore.ts"
import { conversationRecord, seedTenant } from "./Fixtures.ts"
import { byId, makeSuite, type Suite, type UseHarness } from "./Harness.ts"

type UseConversations = UseHarness<ConversationStore | TenantStore | AccountStore, "conversations">

/** An instant of the conversations' day as stored, from `HH:MM`. */
const at = (time: string): string => `2026-11-26T${time}:00.000Z`

const insertAll = (conversations: ReadonlyArray<ConversationRecord>) =>
  ConversationStore.use((s) => Effect.forEach(conversations, (c) => s.insert(c), { discard: true }))

const getConversation = (h: UseConversations, tenantId: string, id: string) =>
  h().run(ConversationStore.use((s) => s.get(tenantId, id))).then(Option.getOrUndefined)

const findOpen = (h: UseConversations, tenantId: string, channelId: string, contactId: string) =>
  h().run(ConversationStore.use((s) => s.findOpen(tenantId, channelId, contactId))).then(Option.getOrUndefined)

const list = (h: UseConversations, tenantId: string, filter: ConversationFilter = {}, limit = 50, offset = 0) =>
  h().run(ConversationStore.use((s) => s.list(tenantId, filter, { limit, offset })))

// What every adapter must report for a second open conversation: the same reason and index name on every database.
const expectOpenUniqueViolation = (error: StorageError) => {
  expect(error).toMatchObject({ _tag: "StorageError", reason: "UniqueViolation", constraint: "conversations_open_unique" })
  expect(error.isRetryable).toBe(false)
}

// Two tenants with one open conversation each.
const twoTenants = Effect.gen(function*() {
  const a = (yield* seedTenant).tenant
  const b = (yield* seedTenant).tenant
  const conversationOfA = conversationRecord(a.id)
  const conversationOfB = conversationRecord(b.id, { subject: "Order 1234 of B" })
  yield* insertAll([conversationOfA, conversationOfB])
  return { a, b, conversationOfA, conversationOfB }
})

/**
 * ConversationStore: every field round-trips; one open chat conversation per contact and channel,
 * while email threads may be several and are never the open one `findOpen` finds; update replaces;
 * list pages by latest activity with filters and totals; no tenant reaches another's conversations.
 * Needs TenantStore and AccountStore for the tenants they belong to.
 */
export const conversationStoreSuite: Suite<ConversationStore | TenantStore | AccountStore, "conversations"> = makeSuite({
  name: "ConversationStore",
  tables: ["conversations"],
  tests: (h) => {
    it("stores every field, with a unicode subject, and reads it back unchanged", async () => {
      const { tenant } = await h().run(seedTenant)
      const conversation = conversationRecord(tenant.id, {
        status: "closed",
        subject: "Re: Zoë's invoice 山田 🚀 \"quoted\" \\ back\nslash",
        created_at: "2026-11-26T10:15:30.123Z",
        updated_at: "2026-11-26T11:00:00.001Z",
        closed_at: "2026-11-26T11:00:00.001Z",
        last_message_at: "2026-11-26T10:59:59.999Z",
        last_inbound_at: "2026-11-26T10:58:00.000Z"
      })
      await h().run(insertAll([conversation]))

      expect(await h().stored.conversations(tenant.id)).toEqual([conversation])
      expect(await getConversation(h, tenant.id, conversation.id)).toEqual(conversation)
    })

    it("stores an open conversation with no subject and no activity yet, and reads it back unchanged", async () => {
      const { tenant } = await h().run(seedTenant)
      const conversation = conversationRecord(tenant.id)
      await h().run(insertAll([conversation]))

      expect(await h().stored.conversations(tenant.id)).toEqual([conversation])
      expect(await getConversation(h, tenant.id, conversation.id)).toEqual(conversation)
    })

    it("finds no conversation for an unknown id", async () => {
      const { tenant } = await h().run(seedTenant)
      expect(await getConversation(h, tenant.id, conversationRecord(tenant.id).id)).toBeUndefined()
    })

    it("replaces every changeable field on update and reports that it did", async () => {
      const { tenant } = await h().run(seedTenant)
      const before = conversationRecord(tenant.id)
      await h().run(insertAll([before]))
      const after: ConversationRecord = {
        ...before,
        status: "closed",
        subject: "Closed by an agent",
        updated_at: at("12:00"),
        closed_at: at("12:00"),
        last_message_at: at("11:59"),
        last_inbound_at: at("11:58")
      }

      expect(await h().run(ConversationStore.use((s) => s.update(tenant.id, after)))).toBe(true)
      expect(await h().stored.conversations(tenant.id)).toEqual([after])
      expect(await getConversation(h, tenant.id, before.id)).toEqual(after)
    })

    it("updates nothing and reports false for an unknown conversation", async () => {
      const { tenant } = await h().run(seedTenant)
      const existing = conversationRecord(tenant.id)
      await h().run(insertAll([existing]))

      expect(await h().run(ConversationStore.use((s) => s.update(tenant.id, conversationRecord(tenant.id))))).toBe(false)
      expect(await h().stored.conversations(tenant.id)).toEqual([existing])
    })

    describe("one open conversation per contact and channel", () => {
      it("finds the open conversation of a contact on a channel, and none on another channel or for another contact", async () => {
        const { tenant } = await h().run(seedTenant)
        const open = conversationRecord(tenant.id)
        const closed = conversationRecord(tenant.id, { channel_id: open.channel_id, contact_id: open.contact_id, status: "closed" })
        const elsewhere = conversationRecord(tenant.id, { contact_id: open.contact_id })
        await h().run(insertAll([closed, open, elsewhere]))

        expect(await findOpen(h, tenant.id, open.channel_id, open.contact_id)).toEqual(open)
        expect(await findOpen(h, tenant.id, elsewhere.channel_id, open.contact_id)).toEqual(elsewhere)
        expect(await findOpen(h, tenant.id, open.channel_id, conversationRecord(tenant.id).contact_id)).toBeUndefined()
        expect(await findOpen(h, tenant.id, conversationRecord(tenant.id).channel_id, open.contact_id)).toBeUndefined()
      })

      it("finds no open conversation when the contact's conversations on the channel are all closed", async () => {
        const { tenant } = await h().run(seedTenant)
        const first = conversationRecord(tenant.id, { status: "closed" })
        const second = conversationRecord(tenant.id, { channel_id: first.channel_id, contact_id: first.contact_id, status: "closed" })
        await h().run(insertAll([first, second]))

        expect(await findOpen(h, tenant.id, first.channel_id, first.contact_id)).toBeUndefined()
        expect(await h().stored.conversations(tenant.id)).toEqual([first, second].sort(byId))
      })

      it("refuses a second open conversation with UniqueViolation naming conversations_open_unique, and stores nothing", async () => {
        const { tenant } = await h().run(seedTenant)
        const open = conversationRecord(tenant.id)
        await h().run(insertAll([open]))

        const second = conversationRecord(tenant.id, { channel_id: open.channel_id, contact_id: open.contact_id })
        expectOpenUniqueViolation(await h().run(Effect.flip(insertAll([second]))))
        expect(await h().stored.conversations(tenant.id)).toEqual([open])
      })

      it("takes a new open conversation once the open one is closed", async () => {
        const { tenant } = await h().run(seedTenant)
        const first = conversationRecord(tenant.id)
        await h().run(insertAll([first]))
        const closed: ConversationRecord = { ...first, status: "closed", closed_at: at("12:00"), updated_at: at("12:00") }
        expect(await h().run(ConversationStore.use((s) => s.update(tenant.id, closed)))).toBe(true)

        const next = conversationRecord(tenant.id, { channel_id: first.channel_id, contact_id: first.contact_id, created_at: at("12:01") })
        await h().run(insertAll([next]))

        expect(await findOpen(h, tenant.id, first.channel_id, first.contact_id)).toEqual(next)
        expect(await h().stored.conversations(tenant.id)).toEqual([closed, next].sort(byId))
      })

      it("refuses to reopen a closed conversation while another is open, and leaves both unchanged", async () => {
        const { tenant } = await h().run(seedTenant)
        const closed = conversationRecord(tenant.id, { status: "closed", closed_at: at("11:00") })
        const open = conversationRecord(tenant.id, { channel_id: closed.channel_id, contact_id: closed.contact_id })
        await h().run(insertAll([closed, open]))

        const reopened: ConversationRecord = { ...closed, status: "open", closed_at: null }
        expectOpenUniqueViolation(await h().run(Effect.flip(ConversationStore.use((s) => s.update(tenant.id, reopened)))))
        expect(await h().stored.conversations(tenant.id)).toEqual([closed, open].sort(byId))
      })
    })

    describe("kinds", () => {
      it("stores an email thread's kind and reads it back unchanged", async () => {
        const { tenant } = await h().run(seedTenant)
        const thread = conversationRecord(tenant.id, { kind: "email", subject: "Order 1234 — Zoë" })
        await h().run(insertAll([thread]))

        expect(await h().stored.conversations(tenant.id)).toEqual([thread])
        expect(await getConversation(h, tenant.id, thread.id)).toEqual(thread)
        expect(await list(h, tenant.id)).toEqual({ items: [thread], total: 1 })
      })

      it("takes several open email threads of one contact on one channel, beside its open chat conversation", async () => {
        const { tenant } = await h().run(seedTenant)
        const first = conversationRecord(tenant.id, { kind: "email", created_at: at("10:00") })
        const second = conversationRecord(tenant.id, {
          channel_id: first.channel_id,
          contact_id: first.contact_id,
          kind: "email",
          created_at: at("10:01")
        })
        const chat = conversationRecord(tenant.id, { channel_id: first.channel_id, contact_id: first.contact_id, created_at: at("10:02") })
        await h().run(insertAll([first, second, chat]))

        expect(await h().stored.conversations(tenant.id)).toEqual([first, second, chat].sort(byId))
        expect(await list(h, tenant.id, { channel_id: first.channel_id, status: "open" }))
          .toEqual({ items: [chat, second, first], total: 3 })
      })

      it("still refuses a second open chat conversation where open email threads exist, with UniqueViolation", async () => {
        const { tenant } = await h().run(seedTenant)
        const thread = conversationRecord(tenant.id, { kind: "email" })
        const chat = conversationRecord(tenant.id, { channel_id: thread.channel_id, contact_id: thread.contact_id })
        await h().run(insertAll([thread, chat]))

        const second = conversationRecord(tenant.id, { channel_id: thread.channel_id, contact_id: thread.contact_id })
        expectOpenUniqueViolation(await h().run(Effect.flip(insertAll([second]))))
        expect(await h().stored.conversations(tenant.id)).toEqual([thread, chat].sort(byId))
      })

      it("finds only a chat conversation as the open one, never an email thread", async () => {
        const { tenant } = await h().run(seedTenant)
        const thread = conversationRecord(tenant.id, { kind: "email" })
        await h().run(insertAll([thread]))

        expect(await findOpen(h, tenant.id, thread.channel_id, thread.contact_id)).toBeUndefined()

        const chat = conversationRecord(tenant.id, { channel_id: thread.channel_id, contact_id: thread.contact_id })
        await h().run(insertAll([chat]))
        expect(await findOpen(h, tenant.id, thread.channel_id, thread.contact_id)).toEqual(chat)
      })
    })

    describe("list", () => {
      it("lists by latest activity (the last message, else the creation), one window at a time, with the total", async () => {
        const { tenant } = await h().run(seedTenant)
        const quietOld = conversationRecord(tenant.id, { created_at: at("09:00") })
        const busyOld = conversationRecord(tenant.id, { created_at: at("08:00"), last_message_at: at("11:30") })
        const newest = conversationRecord(tenant.id, { created_at: at("11:00") })
        const busyNew = conversationRecord(tenant.id, { created_at: at("10:00"), last_message_at: at("10:30") })
        await h().run(insertAll([quietOld, busyOld, newest, busyNew]))

        expect(await list(h, tenant.id, {}, 3, 0)).toEqual({ items: [busyOld, newest, busyNew], total: 4 })
        expect(await list(h, tenant.id, {}, 3, 3)).toEqual({ items: [quietOld], total: 4 })
        expect(await list(h, tenant.id, {}, 3, 6)).toEqual({ items: [], total: 4 })
      })

      it("pages through conversations of equal activity without repeating or skipping any", async () => {
        const { tenant } = await h().run(seedTenant)
        const twins = Array.from({ length: 7 }, () => conversationRecord(tenant.id))
        await h().run(insertAll(twins))

        const seen: Array<string> = []
        for (let offset = 0; offset < 7; offset += 3) seen.push(...(await list(h, tenant.id, {}, 3, offset)).items.map((c) => c.id))
        expect([...seen].sort()).toEqual(twins.map((c) => c.id).sort())
      })

      it("filters by channel, contact and status, each alone and together, with the total of what matches", async () => {
        const { tenant } = await h().run(seedTenant)
        const channel = conversationRecord(tenant.id).channel_id
        const contact = conversationRecord(tenant.id).contact_id
        const openHere = conversationRecord(tenant.id, { channel_id: channel, contact_id: contact, created_at: at("10:04") })
        const closedHere = conversationRecord(tenant.id, { channel_id: channel, contact_id: contact, status: "closed", created_at: at("10:03") })
        const otherContact = conversationRecord(tenant.id, { channel_id: channel, created_at: at("10:02") })
        const otherChannel = conversationRecord(tenant.id, { contact_id: contact, status: "closed", created_at: at("10:01") })
        await h().run(insertAll([openHere, closedHere, otherContact, otherChannel]))

        expect(await list(h, tenant.id, { channel_id: channel })).toEqual({ items: [openHere, closedHere, otherContact], total: 3 })
        expect(await list(h, tenant.id, { contact_id: contact })).toEqual({ items: [openHere, closedHere, otherChannel], total: 3 })
        expect(await list(h, tenant.id, { status: "closed" })).toEqual({ items: [closedHere, otherChannel], total: 2 })
        expect(await list(h, tenant.id, { status: "open" })).toEqual({ items: [openHere, otherContact], total: 2 })
        expect(await list(h, tenant.id, { channel_id: channel, contact_id: contact, status: "closed" }))
          .toEqual({ items: [closedHere], total: 1 })
        expect(await list(h, tenant.id, { channel_id: channel, status: "open" }, 1, 1)).toEqual({ items: [otherContact], total: 2 })
        expect(await list(h, tenant.id, { channel_id: conversationRecord(tenant.id).channel_id })).toEqual({ items: [], total: 0 })
      })
    })

    describe("tenant isolation", () => {
      it("returns nothing for another tenant's conversation, by id or as its open one", async () => {
        const { a, conversationOfB } = await h().run(twoTenants)
        expect(await getConversation(h, a.id, conversationOfB.id)).toBeUndefined()
        expect(await findOpen(h, a.id, conversationOfB.channel_id, conversationOfB.contact_id)).toBeUndefined()
      })

      it("refuses to update another tenant's conversation and leaves it unchanged", async () => {
        const { a, b, conversationOfB } = await h().run(twoTenants)
        const hijack: ConversationRecord = { ...conversationOfB, status: "closed", subject: "Hijacked", closed_at: at("12:00") }

        expect(await h().run(ConversationStore.use((s) => s.update(a.id, hijack)))).toBe(false)
        expect(await h().run(ConversationStore.use((s) => s.update(a.id, { ...hijack, tenant_id: a.id })))).toBe(false)
        expect(await h().stored.conversations(b.id)).toEqual([conversationOfB])
      })

      it("lists and counts only the tenant's own conversations, whatever the filter names", async () => {
        const { a, b, conversationOfA, conversationOfB } = await h().run(twoTenants)

        expect(await list(h, a.id)).toEqual({ items: [conversationOfA], total: 1 })
        expect(await list(h, a.id, { channel_id: conversationOfB.channel_id })).toEqual({ items: [], total: 0 })
        expect(await list(h, a.id, { contact_id: conversationOfB.contact_id })).toEqual({ items: [], total: 0 })
        expect(await list(h, b.id)).toEqual({ items: [conversationOfB], total: 1 })
      })
    })
  }
})
