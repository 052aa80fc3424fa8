import { Effect, Option } from "effect"
import { describe, expect, it } from "vitest"
import type { AccountStore } from "../../src/ports/AccountStore.ts"
import { type ConversationFilter, type ConversationRecord, ConversationStore } from "../../src/ports/ConversationStore.ts"
import type { StorageError } from "../../src/ports/StorageError.ts"
import type { TenantStore } from "../../src/ports/TenantStore.ts"
import { Transactor } from "../../src/ports/Transactor.ts"
import { contend } from "./Contention.ts"
import { AWKWARD_TEXTS, contentionTransactor, conversationRecord, NEEDS_CONTENTION, seedTenant } from "./Fixtures.ts"
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

const openMany = (tenantId: string, candidates: ReadonlyArray<ConversationRecord>) =>
  ConversationStore.use((s) => s.openMany(tenantId, candidates))

/** What `openMany` resolves to, its conversations sorted so the answer compares whole. */
const opened = (answer: { readonly conversations: ReadonlyArray<ConversationRecord>; readonly inserted: ReadonlySet<string> }) => ({
  conversations: [...answer.conversations].sort(byId),
  inserted: answer.inserted
})

type Note = { readonly id: string; readonly at: string; readonly inbound_at: string | null }

const noteMessages = (tenantId: string, notes: ReadonlyArray<Note>) => ConversationStore.use((s) => s.noteMessages(tenantId, notes))

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

    describe("openMany", () => {
      it("opens a conversation for each pair without an open chat one, and finds the open one of the others unchanged", async () => {
        const { tenant } = await h().run(seedTenant)
        const open = conversationRecord(tenant.id, { subject: "Stored first", last_message_at: at("09:00") })
        const closed = conversationRecord(tenant.id, { status: "closed", closed_at: at("08:00") })
        const thread = conversationRecord(tenant.id, { kind: "email", subject: "Order 1234" })
        await h().run(insertAll([open, closed, thread]))
        const pairOf = (c: ConversationRecord) => ({ channel_id: c.channel_id, contact_id: c.contact_id })
        const again = conversationRecord(tenant.id, pairOf(open))
        // A closed conversation or an open email thread of the pair is no open chat conversation.
        const afterClosed = conversationRecord(tenant.id, pairOf(closed))
        const besideThread = conversationRecord(tenant.id, pairOf(thread))
        const fresh = conversationRecord(tenant.id)

        const answer = await h().run(openMany(tenant.id, [again, afterClosed, besideThread, fresh]))
        const stored = [afterClosed, besideThread, fresh]
        expect(opened(answer)).toEqual({ conversations: [open, ...stored].sort(byId), inserted: new Set(stored.map((c) => c.id)) })
        expect(await h().stored.conversations(tenant.id)).toEqual([open, closed, thread, ...stored].sort(byId))
      })

      it("answers only the pairs asked for, not an open conversation of a channel and a contact each asked with another", async () => {
        const { tenant } = await h().run(seedTenant)
        const [x, y] = [conversationRecord(tenant.id).channel_id, conversationRecord(tenant.id).channel_id]
        const [p, q] = [conversationRecord(tenant.id).contact_id, conversationRecord(tenant.id).contact_id]
        const crossed = [
          conversationRecord(tenant.id, { channel_id: x, contact_id: q }),
          conversationRecord(tenant.id, { channel_id: y, contact_id: p })
        ]
        await h().run(insertAll(crossed))
        const asked = [conversationRecord(tenant.id, { channel_id: x, contact_id: p }), conversationRecord(tenant.id, { channel_id: y, contact_id: q })]

        const answer = await h().run(openMany(tenant.id, asked))
        expect(opened(answer)).toEqual({ conversations: [...asked].sort(byId), inserted: new Set(asked.map((c) => c.id)) })
        expect(await h().stored.conversations(tenant.id)).toEqual([...crossed, ...asked].sort(byId))
      })

      it("opens a pair given twice in one batch once, and answers that conversation for both", async () => {
        const { tenant } = await h().run(seedTenant)
        const first = conversationRecord(tenant.id, { subject: "One" })
        const twin = conversationRecord(tenant.id, { channel_id: first.channel_id, contact_id: first.contact_id, subject: "Two" })
        const other = conversationRecord(tenant.id, { channel_id: first.channel_id })

        const answer = await h().run(openMany(tenant.id, [first, other, twin]))
        const stored = await h().stored.conversations(tenant.id)
        const kept = stored.find((c) => c.contact_id === first.contact_id)
        expect([first, twin]).toContainEqual(kept)
        expect(stored).toEqual([kept!, other].sort(byId))
        expect(opened(answer)).toEqual({ conversations: stored, inserted: new Set([kept!.id, other.id]) })
      })

      it("fails whole with UniqueViolation for a candidate whose id another conversation has, storing none of the batch", async () => {
        const { tenant } = await h().run(seedTenant)
        const closed = conversationRecord(tenant.id, { status: "closed" })
        await h().run(insertAll([closed]))
        const batch = [conversationRecord(tenant.id), conversationRecord(tenant.id, { id: closed.id })]

        expect(await h().run(Effect.flip(openMany(tenant.id, batch)))).toMatchObject({ _tag: "StorageError", reason: "UniqueViolation" })
        expect(await h().stored.conversations(tenant.id)).toEqual([closed])
      })

      it("resolves an empty batch to no conversations, storing nothing", async () => {
        const { tenant } = await h().run(seedTenant)
        expect(opened(await h().run(openMany(tenant.id, [])))).toEqual({ conversations: [], inserted: new Set() })
        expect(await h().stored.conversations(tenant.id)).toEqual([])
      })

      it("neither finds another tenant's open conversation of the same pair nor is kept from opening its own", async () => {
        const { a, b, conversationOfB } = await h().run(twoTenants)
        const mine = conversationRecord(a.id, { channel_id: conversationOfB.channel_id, contact_id: conversationOfB.contact_id })

        expect(opened(await h().run(openMany(a.id, [mine])))).toEqual({ conversations: [mine], inserted: new Set([mine.id]) })
        expect((await h().stored.conversations(a.id)).filter((c) => c.contact_id === mine.contact_id)).toEqual([mine])
        expect(await h().stored.conversations(b.id)).toEqual([conversationOfB])
      })

      it("opens and finds 1,200 conversations in one call, keeping awkward and JSON-looking text as text", async () => {
        const { tenant } = await h().run(seedTenant)
        const awkward = (i: number) => AWKWARD_TEXTS[i % AWKWARD_TEXTS.length]!
        const channels = [conversationRecord(tenant.id).channel_id, ...AWKWARD_TEXTS]
        const candidates = Array.from({ length: 1_200 }, (_, i) =>
          conversationRecord(tenant.id, {
            // Awkward channel and contact ids too: the lookup must match them exactly.
            channel_id: channels[i % channels.length]!,
            contact_id: i < 2 * AWKWARD_TEXTS.length ? `${awkward(i)}${i < AWKWARD_TEXTS.length ? "" : " "}` : `contact-${i}`,
            subject: i % 4 === 0 ? null : awkward(i),
            created_at: at(`1${i % 10}:0${i % 6}`)
          }))
        // A third opened first: the call opens the rest and finds those.
        const first = candidates.filter((_, i) => i % 3 === 1)
        await h().run(openMany(tenant.id, first))
        const again = candidates.map((c, i) =>
          i % 3 === 1 ? conversationRecord(tenant.id, { channel_id: c.channel_id, contact_id: c.contact_id, subject: "Not stored" }) : c
        )

        const answer = await h().run(openMany(tenant.id, again))
        const rest = candidates.filter((_, i) => i % 3 !== 1)
        expect(opened(answer)).toEqual({ conversations: [...candidates].sort(byId), inserted: new Set(rest.map((c) => c.id)) })
        expect(await h().stored.conversations(tenant.id)).toEqual([...candidates].sort(byId))
      })

      it("finds a conversation another open transaction opens once that one commits, and never doubles it (needs several connections)", async (ctx) => {
        const transactor = await contentionTransactor(h())
        ctx.skip(transactor === undefined, NEEDS_CONTENTION)
        const { tenant } = await h().run(seedTenant)
        const theirs = conversationRecord(tenant.id, { subject: "Opened by the other" })
        const mine = conversationRecord(tenant.id, { channel_id: theirs.channel_id, contact_id: theirs.contact_id })
        const fresh = conversationRecord(tenant.id, { channel_id: theirs.channel_id })

        const { whileHeld, after } = await h().run(
          contend({ hold: insertAll([theirs]), finish: () => Effect.void, contend: openMany(tenant.id, [mine, fresh]) })
            .pipe(Effect.provideService(Transactor, transactor!))
        )
        // Answering before the other committed, it could neither find that conversation nor open its own.
        expect(whileHeld).toEqual(Option.none())
        expect(opened(after)).toEqual({ conversations: [theirs, fresh].sort(byId), inserted: new Set([fresh.id]) })
        expect(await h().stored.conversations(tenant.id)).toEqual([theirs, fresh].sort(byId))
      })
    })

    describe("noteMessages", () => {
      it("moves the times to the latest of several notes of one conversation in one call, the inbound time to the latest inbound one", async () => {
        const { tenant } = await h().run(seedTenant)
        const quiet = conversationRecord(tenant.id)
        const busy = conversationRecord(tenant.id, { updated_at: at("10:00"), last_message_at: at("10:00"), last_inbound_at: at("09:00") })
        await h().run(insertAll([quiet, busy]))

        await h().run(noteMessages(tenant.id, [
          { id: quiet.id, at: at("11:00"), inbound_at: at("11:00") },
          { id: busy.id, at: at("10:30"), inbound_at: null },
          { id: quiet.id, at: at("11:05"), inbound_at: null },
          { id: quiet.id, at: at("11:03"), inbound_at: at("11:03") },
          { id: quiet.id, at: at("11:03"), inbound_at: at("11:03") }
        ]))
        expect(await h().stored.conversations(tenant.id)).toEqual([
          { ...quiet, updated_at: at("11:05"), last_message_at: at("11:05"), last_inbound_at: at("11:03") },
          { ...busy, updated_at: at("10:30"), last_message_at: at("10:30") }
        ].sort(byId))
      })

      it("moves no time back: a note older than what is stored changes nothing, a newer one only the times it is newer than", async () => {
        const { tenant } = await h().run(seedTenant)
        const times = { updated_at: at("11:30"), last_message_at: at("11:00"), last_inbound_at: at("11:00") }
        const [older, between] = [conversationRecord(tenant.id, times), conversationRecord(tenant.id, times)]
        await h().run(insertAll([older, between]))

        await h().run(noteMessages(tenant.id, [
          { id: older.id, at: at("10:00"), inbound_at: at("10:00") },
          { id: between.id, at: at("11:10"), inbound_at: at("10:50") }
        ]))
        expect(await h().stored.conversations(tenant.id)).toEqual([older, { ...between, last_message_at: at("11:10") }].sort(byId))
      })

      it("writes only the times: a status, subject and closing another writer stored after the read stay", async () => {
        const { tenant } = await h().run(seedTenant)
        const read = conversationRecord(tenant.id, { subject: "Before" })
        await h().run(insertAll([read]))
        const closed: ConversationRecord = { ...read, status: "closed", subject: "Closed by an agent", closed_at: at("11:59"), updated_at: at("11:59") }
        expect(await h().run(ConversationStore.use((s) => s.update(tenant.id, closed)))).toBe(true)

        await h().run(noteMessages(read.tenant_id, [{ id: read.id, at: at("12:00"), inbound_at: at("12:00") }]))
        expect(await h().stored.conversations(tenant.id))
          .toEqual([{ ...closed, updated_at: at("12:00"), last_message_at: at("12:00"), last_inbound_at: at("12:00") }])
      })

      it("keeps a closing another open transaction commits meanwhile, with the note's times (needs several connections)", async (ctx) => {
        const transactor = await contentionTransactor(h())
        ctx.skip(transactor === undefined, NEEDS_CONTENTION)
        const { tenant } = await h().run(seedTenant)
        const read = conversationRecord(tenant.id)
        await h().run(insertAll([read]))
        const closed: ConversationRecord = { ...read, status: "closed", subject: "Closed by an agent", closed_at: at("11:59"), updated_at: at("11:59") }

        await h().run(
          contend({
            hold: ConversationStore.use((s) => s.update(tenant.id, closed)),
            finish: () => Effect.void,
            contend: noteMessages(tenant.id, [{ id: read.id, at: at("12:00"), inbound_at: at("12:00") }])
          }).pipe(Effect.provideService(Transactor, transactor!))
        )
        expect(await h().stored.conversations(tenant.id))
          .toEqual([{ ...closed, updated_at: at("12:00"), last_message_at: at("12:00"), last_inbound_at: at("12:00") }])
      })

      it("changes nothing of another tenant's conversation, nor anything for an empty batch", async () => {
        const { a, b, conversationOfA, conversationOfB } = await h().run(twoTenants)

        await h().run(noteMessages(a.id, [{ id: conversationOfB.id, at: at("12:00"), inbound_at: at("12:00") }]))
        await h().run(noteMessages(a.id, []))
        expect(await h().stored.conversations(b.id)).toEqual([conversationOfB])
        expect(await h().stored.conversations(a.id)).toEqual([conversationOfA])
      })

      it("takes 1,200 notes of 600 conversations in one call", async () => {
        const { tenant } = await h().run(seedTenant)
        const conversations = Array.from({ length: 600 }, (_, i) =>
          conversationRecord(tenant.id, i % 2 === 0 ? {} : { updated_at: at("10:30"), last_message_at: at("10:30"), last_inbound_at: at("10:30") }))
        await h().run(openMany(tenant.id, conversations))
        // Each gets an inbound note at 10:00 and an outbound one at 11:00, in either order.
        const notes = conversations.flatMap((c, i): ReadonlyArray<Note> => {
          const pair: ReadonlyArray<Note> = [{ id: c.id, at: at("10:00"), inbound_at: at("10:00") }, { id: c.id, at: at("11:00"), inbound_at: null }]
          return i % 3 === 0 ? [...pair].reverse() : pair
        })

        await h().run(noteMessages(tenant.id, notes))
        expect(await h().stored.conversations(tenant.id)).toEqual(
          conversations.map((c) => ({ ...c, updated_at: at("11:00"), last_message_at: at("11:00"), last_inbound_at: c.last_inbound_at ?? at("10:00") }))
            .sort(byId)
        )
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
