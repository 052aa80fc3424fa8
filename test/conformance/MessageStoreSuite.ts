import { Effect, Option } from "effect"
import { describe, expect, it } from "vitest"
import type { AccountStore } from "../../src/ports/AccountStore.ts"
import { type MessageRecord, type MessageStatusColumns, type MessageStatusReport, MessageStore, statusColumnsOf } from "../../src/ports/MessageStore.ts"
import type { StorageError } from "../../src/ports/StorageError.ts"
import type { TenantStore } from "../../src/ports/TenantStore.ts"
import { Transactor } from "../../src/ports/Transactor.ts"
import { contend } from "./Contention.ts"
import { AWKWARD_TEXTS, contentionTransactor, conversationRecord, messageRecord, NEEDS_CONTENTION, seedTenant } from "./Fixtures.ts"
import { byId, makeSuite, type Suite, type UseHarness } from "./Harness.ts"

type UseMessages = UseHarness<MessageStore | TenantStore | AccountStore, "messages" | "messageStatuses">

/** An instant of the messages' day as stored, from `HH:MM:SS.mmm`. */
const at = (time: string): string => `2026-11-26T${time}Z`

/** A reply's, a location's and a reaction's fields, with every JSON kind, nesting and unicode. */
const RICH_CONTENT = {
  caption: "Zoë's 山田 🚀 \"quoted\" \\ back\nslash",
  location: { latitude: -23.5505, longitude: -46.6333, name: "São Paulo", address: null },
  context: { message_id: "wamid.HBgLMTQxNTU1NTAxMDAVAgARGBI5QTNDQTVCM0Q0Q0Q2RTY3RTcA", forwarded: false },
  reaction: { emoji: "👍🏽" },
  contacts: [{ name: { formatted_name: "Ada" }, phones: [{ phone: "+14155550100", type: "CELL" }] }],
  big: 9007199254740991,
  ratio: 0.25
}

const insertAll = (messages: ReadonlyArray<MessageRecord>) =>
  MessageStore.use((s) => Effect.forEach(messages, (m) => s.insert(m), { discard: true }))

const getMessage = (h: UseMessages, tenantId: string, id: string) =>
  h().run(MessageStore.use((s) => s.get(tenantId, id))).then(Option.getOrUndefined)

const findByExternalId = (h: UseMessages, tenantId: string, channelId: string, externalId: string) =>
  h().run(MessageStore.use((s) => s.findByExternalId(tenantId, channelId, externalId))).then(Option.getOrUndefined)

const page = (h: UseMessages, tenantId: string, conversationId: string, limit = 50, offset = 0) =>
  h().run(MessageStore.use((s) => s.listByConversation(tenantId, conversationId, { limit, offset })))

const record = (h: UseMessages, report: MessageStatusReport) => h().run(MessageStore.use((s) => s.recordStatus(report)))

const statusesOf = (h: UseMessages, tenantId: string, channelId: string, externalId: string) =>
  h().run(MessageStore.use((s) => s.statusesOf(tenantId, channelId, externalId)))

// What every adapter must report for an operator id stored twice on a channel: the same reason and index name on every database.
const expectExternalIdUniqueViolation = (error: StorageError) => {
  expect(error).toMatchObject({ _tag: "StorageError", reason: "UniqueViolation", constraint: "messages_channel_external_unique" })
  expect(error.isRetryable).toBe(false)
}

/** A `sent` report for the message id `externalId` of `channelId` in `tenantId`. */
const report = (tenantId: string, channelId: string, externalId: string, overrides: Partial<MessageStatusReport> = {}): MessageStatusReport => ({
  tenant_id: tenantId,
  channel_id: channelId,
  external_id: externalId,
  status: "sent",
  occurred_at: at("12:00:00.000"),
  error: null,
  received_at: at("12:00:01.000"),
  ...overrides
})

/** Orders status reports the way none of their fields does alone, so stored lists compare whole. */
const byReport = (a: MessageStatusReport, b: MessageStatusReport) =>
  `${a.external_id} ${a.status}`.localeCompare(`${b.external_id} ${b.status}`)

const awkward = (i: number): string => AWKWARD_TEXTS[i % AWKWARD_TEXTS.length]!

/** The status columns a move writes. */
type StatusState = MessageStatusColumns

/** A move of `message` from its state as read to that state with `to` over it. */
const moveOf = (message: MessageRecord, to: Partial<StatusState>) => ({
  id: message.id,
  expected: { status: message.status, updated_at: message.updated_at },
  to: { ...statusColumnsOf(message), ...to }
})

const moveStatuses = (tenantId: string, moves: ReadonlyArray<ReturnType<typeof moveOf>>) =>
  MessageStore.use((s) => s.moveStatuses(tenantId, moves))

const findByExternalIds = (h: UseMessages, tenantId: string, channelId: string, externalIds: ReadonlyArray<string>, hold = false) =>
  h().run(MessageStore.use((s) => s.findByExternalIds(tenantId, channelId, externalIds, { hold }))).then((found) => [...found].sort(byId))

const holdByExternalIds = (tenantId: string, channelId: string, externalIds: ReadonlyArray<string>) =>
  MessageStore.use((s) => s.findByExternalIds(tenantId, channelId, externalIds, { hold: true })).pipe(Effect.map((found) => [...found].sort(byId)))

/** An outbound message of `conversation` not yet handed to its transport. */
const pendingOf = (conversation: ReturnType<typeof conversationRecord>, overrides: Partial<MessageRecord> = {}) =>
  messageRecord(conversation, { direction: "outbound", status: "pending", external_id: null, ...overrides })

type Outcome = Parameters<MessageStore["Service"]["settlePending"]>[1][number]

/** What the transport answered for `message`: its operator id and status state as read, with `to` over them. */
const outcomeOf = (message: MessageRecord, to: Partial<StatusState & Pick<MessageRecord, "external_id">>): Outcome => ({
  id: message.id,
  external_id: message.external_id,
  ...statusColumnsOf(message),
  ...to
})

const settlePending = (tenantId: string, outcomes: ReadonlyArray<Outcome>) => MessageStore.use((s) => s.settlePending(tenantId, outcomes))

const deletePending = (tenantId: string, ids: ReadonlyArray<string>) => MessageStore.use((s) => s.deletePending(tenantId, ids))

const statusesOfMany = (h: UseMessages, tenantId: string, channelId: string, externalIds: ReadonlyArray<string>) =>
  h().run(MessageStore.use((s) => s.statusesOfMany(tenantId, channelId, externalIds)))

/** Reports by operator id, each id's in the order given: the port promises an order within an id only. */
const perId = (reports: ReadonlyArray<MessageStatusReport>): ReadonlyMap<string, ReadonlyArray<MessageStatusReport>> => {
  const grouped = new Map<string, Array<MessageStatusReport>>()
  for (const r of reports) grouped.set(r.external_id, [...(grouped.get(r.external_id) ?? []), r])
  return grouped
}

/** The transport's acceptance of a message under a new operator id, and its refusal with an error that looks like JSON. */
const accepted = () =>
  ({ external_id: `wamid.${globalThis.crypto.randomUUID()}`, status: "sent", sent_at: at("12:00:01.000"), updated_at: at("12:00:01.000") }) as const
const refused = {
  status: "failed",
  error: { code: 131_026, title: `{"a":1}`, message: "Receiver is incapable 🚫 \"quoted\"", details: "null" },
  failed_at: at("12:00:02.000"),
  updated_at: at("12:00:02.000")
} as const

// A conversation in each of two tenants, with one message each.
const twoTenants = Effect.gen(function*() {
  const a = (yield* seedTenant).tenant
  const b = (yield* seedTenant).tenant
  const conversationOfA = conversationRecord(a.id)
  const conversationOfB = conversationRecord(b.id)
  const messageOfA = messageRecord(conversationOfA)
  const messageOfB = messageRecord(conversationOfB, { text: "Only for B" })
  yield* insertAll([messageOfA, messageOfB])
  return { a, b, conversationOfB, messageOfA, messageOfB }
})

/**
 * MessageStore: every field round-trips; an operator id is unique per channel; update replaces; a
 * conversation's messages page oldest first; reported statuses are kept once each, in the order
 * received; no tenant reaches another's messages or statuses. Needs TenantStore and AccountStore
 * for the tenants they belong to.
 */
export const messageStoreSuite: Suite<MessageStore | TenantStore | AccountStore, "messages" | "messageStatuses"> = makeSuite({
  name: "MessageStore",
  tables: ["messages", "messageStatuses"],
  tests: (h) => {
    it("stores every field, with unicode text, rich content and the operator's error, and reads it back unchanged", async () => {
      const { tenant } = await h().run(seedTenant)
      const message = messageRecord(conversationRecord(tenant.id), {
        direction: "outbound",
        message_type: "location",
        text: "こんにちは 🚀 \"quoted\" \\ back\nslash",
        content: RICH_CONTENT,
        status: "failed",
        error: { code: 131_047, title: "Re-engagement message", message: "More than 24 hours have passed", details: "Send a template \"instead\"" },
        created_at: at("10:15:30.123"),
        updated_at: at("10:16:00.000"),
        sent_at: at("10:15:31.000"),
        delivered_at: at("10:15:32.000"),
        read_at: at("10:15:33.000"),
        failed_at: at("10:16:00.000")
      })
      await h().run(insertAll([message]))

      expect(await h().stored.messages(tenant.id)).toEqual([message])
      expect(await getMessage(h, tenant.id, message.id)).toEqual(message)
    })

    it("stores an outbound message not yet accepted, with no contact, text, operator id or error, and reads it back unchanged", async () => {
      const { tenant } = await h().run(seedTenant)
      const message = messageRecord(conversationRecord(tenant.id), {
        contact_id: null,
        direction: "outbound",
        message_type: "image",
        text: null,
        status: "pending",
        external_id: null,
        error: { code: null, title: null, message: "no answer", details: null }
      })
      const bare = messageRecord(conversationRecord(tenant.id), { text: null, external_id: null, error: null })
      await h().run(insertAll([message, bare]))

      expect(await h().stored.messages(tenant.id)).toEqual([message, bare].sort(byId))
      expect(await getMessage(h, tenant.id, message.id)).toEqual(message)
      expect(await getMessage(h, tenant.id, bare.id)).toEqual(bare)
    })

    it("finds no message for an unknown id", async () => {
      const { tenant } = await h().run(seedTenant)
      expect(await getMessage(h, tenant.id, messageRecord(conversationRecord(tenant.id)).id)).toBeUndefined()
    })

    it("replaces every changeable field on update and reports that it did", async () => {
      const { tenant } = await h().run(seedTenant)
      const before = messageRecord(conversationRecord(tenant.id), { direction: "outbound", status: "pending", external_id: null })
      await h().run(insertAll([before]))
      const after: MessageRecord = {
        ...before,
        status: "delivered",
        external_id: `wamid.${globalThis.crypto.randomUUID()}`,
        content: { caption: "changed" },
        updated_at: at("12:00:02.000"),
        sent_at: at("12:00:01.000"),
        delivered_at: at("12:00:02.000")
      }

      expect(await h().run(MessageStore.use((s) => s.update(tenant.id, after)))).toBe(true)
      expect(await h().stored.messages(tenant.id)).toEqual([after])
      expect(await findByExternalId(h, tenant.id, after.channel_id, after.external_id!)).toEqual(after)
    })

    it("updates nothing and reports false for an unknown message", async () => {
      const { tenant } = await h().run(seedTenant)
      const existing = messageRecord(conversationRecord(tenant.id))
      await h().run(insertAll([existing]))

      expect(await h().run(MessageStore.use((s) => s.update(tenant.id, messageRecord(conversationRecord(tenant.id)))))).toBe(false)
      expect(await h().stored.messages(tenant.id)).toEqual([existing])
    })

    describe("operator ids", () => {
      it("finds a message by its operator id on its channel, and nothing on another channel or for an unknown id", async () => {
        const { tenant } = await h().run(seedTenant)
        const message = messageRecord(conversationRecord(tenant.id))
        await h().run(insertAll([message]))

        expect(await findByExternalId(h, tenant.id, message.channel_id, message.external_id!)).toEqual(message)
        expect(await findByExternalId(h, tenant.id, conversationRecord(tenant.id).channel_id, message.external_id!)).toBeUndefined()
        expect(await findByExternalId(h, tenant.id, message.channel_id, `${message.external_id}x`)).toBeUndefined()
      })

      it("refuses an operator id already stored on the channel with UniqueViolation naming messages_channel_external_unique", async () => {
        const { tenant } = await h().run(seedTenant)
        const conversation = conversationRecord(tenant.id)
        const first = messageRecord(conversation)
        await h().run(insertAll([first]))

        const again = messageRecord(conversationRecord(tenant.id, { channel_id: conversation.channel_id }), { external_id: first.external_id })
        expectExternalIdUniqueViolation(await h().run(Effect.flip(insertAll([again]))))
        expect(await h().stored.messages(tenant.id)).toEqual([first])
      })

      it("refuses an update that gives a message an operator id another holds on the channel", async () => {
        const { tenant } = await h().run(seedTenant)
        const conversation = conversationRecord(tenant.id)
        const holder = messageRecord(conversation)
        const pending = messageRecord(conversation, { direction: "outbound", status: "pending", external_id: null })
        await h().run(insertAll([holder, pending]))

        const clash: MessageRecord = { ...pending, status: "sent", external_id: holder.external_id }
        expectExternalIdUniqueViolation(await h().run(Effect.flip(MessageStore.use((s) => s.update(tenant.id, clash)))))
        expect(await h().stored.messages(tenant.id)).toEqual([holder, pending].sort(byId))
      })

      it("lets the same operator id stand on two channels, and many messages of one channel have none", async () => {
        const { tenant } = await h().run(seedTenant)
        const conversation = conversationRecord(tenant.id)
        const here = messageRecord(conversation)
        const there = messageRecord(conversationRecord(tenant.id), { external_id: here.external_id })
        const unsent = [1, 2, 3].map(() => messageRecord(conversation, { status: "pending", external_id: null }))
        await h().run(insertAll([here, there, ...unsent]))

        expect(await h().stored.messages(tenant.id)).toEqual([here, there, ...unsent].sort(byId))
        expect(await findByExternalId(h, tenant.id, there.channel_id, here.external_id!)).toEqual(there)
      })
    })

    describe("listByConversation", () => {
      it("lists a conversation's messages oldest first, one window at a time, with their total, and no other conversation's", async () => {
        const { tenant } = await h().run(seedTenant)
        const conversation = conversationRecord(tenant.id)
        const messages = Array.from({ length: 5 }, (_, i) => messageRecord(conversation, { created_at: at(`10:0${i}:00.000`) }))
        const elsewhere = messageRecord(conversationRecord(tenant.id, { channel_id: conversation.channel_id }))
        await h().run(insertAll([messages[3]!, messages[0]!, elsewhere, messages[4]!, messages[1]!, messages[2]!]))
        const [m0, m1, m2, m3, m4] = messages

        expect(await page(h, tenant.id, conversation.id, 2, 0)).toEqual({ items: [m0, m1], total: 5 })
        expect(await page(h, tenant.id, conversation.id, 2, 2)).toEqual({ items: [m2, m3], total: 5 })
        expect(await page(h, tenant.id, conversation.id, 2, 4)).toEqual({ items: [m4], total: 5 })
        expect(await page(h, tenant.id, conversation.id, 2, 6)).toEqual({ items: [], total: 5 })
        expect(await page(h, tenant.id, conversationRecord(tenant.id).id)).toEqual({ items: [], total: 0 })
      })

      it("pages through messages created at the same instant without repeating or skipping any", async () => {
        const { tenant } = await h().run(seedTenant)
        const conversation = conversationRecord(tenant.id)
        const twins = Array.from({ length: 7 }, () => messageRecord(conversation))
        await h().run(insertAll(twins))

        const seen: Array<string> = []
        for (let offset = 0; offset < 7; offset += 3) seen.push(...(await page(h, tenant.id, conversation.id, 3, offset)).items.map((m) => m.id))
        expect([...seen].sort()).toEqual(twins.map((m) => m.id).sort())
      })
    })

    describe("reported statuses", () => {
      it("keeps each status of a message id once: true the first time, false after", async () => {
        const { tenant } = await h().run(seedTenant)
        const channelId = conversationRecord(tenant.id).channel_id
        const sent = report(tenant.id, channelId, "wamid.one")

        expect(await record(h, sent)).toBe(true)
        expect(await record(h, { ...sent, occurred_at: at("12:00:05.000"), received_at: at("12:00:06.000") })).toBe(false)
        expect(await statusesOf(h, tenant.id, channelId, "wamid.one")).toEqual([sent])
        expect(await h().stored.messageStatuses(tenant.id)).toEqual([sent])
      })

      it("keeps every status of a message id, with the operator's error, in the order received", async () => {
        const { tenant } = await h().run(seedTenant)
        const channelId = conversationRecord(tenant.id).channel_id
        const externalId = `wamid.${globalThis.crypto.randomUUID()}`
        const read = report(tenant.id, channelId, externalId, { status: "read", occurred_at: at("12:00:03.000"), received_at: at("12:00:03.500") })
        const delivered = report(tenant.id, channelId, externalId, { status: "delivered", occurred_at: at("12:00:02.000"), received_at: at("12:00:04.000") })
        const sent = report(tenant.id, channelId, externalId, { occurred_at: at("12:00:01.000"), received_at: at("12:00:04.000") })
        const failed = report(tenant.id, channelId, externalId, {
          status: "failed",
          occurred_at: at("12:00:05.000"),
          received_at: at("12:00:05.000"),
          error: { code: 131_026, title: "Message undeliverable", message: "Receiver is incapable of receiving this message 🚫", details: null }
        })
        for (const r of [failed, sent, delivered, read]) expect(await record(h, r)).toBe(true)

        // Received at the same instant, sent and delivered come in the order a message goes through them.
        expect(await statusesOf(h, tenant.id, channelId, externalId)).toEqual([read, sent, delivered, failed])
        expect([...await h().stored.messageStatuses(tenant.id)].sort(byReport)).toEqual([delivered, failed, read, sent])
      })

      it("keeps the statuses of an id apart per channel, and answers none for an id nothing was reported for", async () => {
        const { tenant } = await h().run(seedTenant)
        const [here, there] = [conversationRecord(tenant.id).channel_id, conversationRecord(tenant.id).channel_id]
        const onHere = report(tenant.id, here, "wamid.shared")
        const onThere = report(tenant.id, there, "wamid.shared", { status: "delivered" })

        expect(await record(h, onHere)).toBe(true)
        expect(await record(h, { ...onThere, status: "sent" })).toBe(true)
        expect(await record(h, onThere)).toBe(true)
        expect(await statusesOf(h, tenant.id, here, "wamid.shared")).toEqual([onHere])
        expect(await statusesOf(h, tenant.id, there, "wamid.shared")).toEqual([{ ...onThere, status: "sent" }, onThere])
        expect(await statusesOf(h, tenant.id, here, "wamid.nothing")).toEqual([])
      })
    })

    describe("insertMany", () => {
      it("keeps text and content that look like JSON as that text, and a null text null", async () => {
        const { tenant } = await h().run(seedTenant)
        const conversation = conversationRecord(tenant.id)
        const messages = [`{"a":1}`, "[1,2]", "null", "true", "12", null].map((text) =>
          messageRecord(conversation, { text, content: text === null ? {} : { raw: text, [text]: [text, null] } }))

        await h().run(MessageStore.use((s) => s.insertMany(messages)))
        expect(await h().stored.messages(tenant.id)).toEqual([...messages].sort(byId))
        expect(await getMessage(h, tenant.id, messages[0]!.id)).toEqual(messages[0])
      })

      it("stores 1,200 messages in one call, every field, with awkward text, several without an operator id", async () => {
        const { tenant } = await h().run(seedTenant)
        const conversations = [conversationRecord(tenant.id), conversationRecord(tenant.id)]
        const messages = Array.from({ length: 1_200 }, (_, i) =>
          messageRecord(conversations[i % 2]!, {
            direction: i % 3 === 0 ? "outbound" : "inbound",
            text: i % 5 === 0 ? null : awkward(i),
            content: i % 4 === 0 ? {} : i % 4 === 1 ? RICH_CONTENT : { raw: awkward(i), list: [awkward(i + 1), null] },
            status: i % 3 === 0 ? "failed" : "received",
            // The first operator ids are the awkward texts themselves, and every 7th message has none.
            external_id: i < AWKWARD_TEXTS.length ? awkward(i) : i % 7 === 0 ? null : `wamid.${i}.${globalThis.crypto.randomUUID()}`,
            error: i % 3 === 0 ? { code: i, title: i % 2 === 0 ? null : awkward(i), message: awkward(i + 2), details: null } : null,
            created_at: at(`10:${String(i % 60).padStart(2, "0")}:00.000`),
            updated_at: i % 3 === 0 ? at("11:00:00.000") : null,
            failed_at: i % 3 === 0 ? at("11:00:00.000") : null
          }))

        await h().run(MessageStore.use((s) => s.insertMany(messages)))
        expect(await h().stored.messages(tenant.id)).toEqual([...messages].sort(byId))
      })

      it("fails whole with UniqueViolation for an operator id stored on the channel or given twice in the batch, storing none", async () => {
        const { tenant } = await h().run(seedTenant)
        const conversation = conversationRecord(tenant.id)
        const first = messageRecord(conversation)
        await h().run(insertAll([first]))
        const insertMany = (messages: ReadonlyArray<MessageRecord>) => h().run(Effect.flip(MessageStore.use((s) => s.insertMany(messages))))

        expectExternalIdUniqueViolation(await insertMany([messageRecord(conversation), messageRecord(conversation, { external_id: first.external_id })]))
        const twins = [messageRecord(conversation, { external_id: "wamid.twice" }), messageRecord(conversation, { external_id: "wamid.twice" })]
        expectExternalIdUniqueViolation(await insertMany([messageRecord(conversation), ...twins]))
        expect(await h().stored.messages(tenant.id)).toEqual([first])
      })

      it("stores nothing for an empty batch", async () => {
        const { tenant } = await h().run(seedTenant)
        await h().run(MessageStore.use((s) => s.insertMany([])))
        expect(await h().stored.messages(tenant.id)).toEqual([])
      })
    })

    describe("recordStatuses", () => {
      it("keeps each report not kept already: the same status of one id twice in a batch, or kept before, once", async () => {
        const { tenant } = await h().run(seedTenant)
        const channelId = conversationRecord(tenant.id).channel_id
        const kept = report(tenant.id, channelId, "wamid.one")
        expect(await record(h, kept)).toBe(true)
        const delivered = [
          report(tenant.id, channelId, "wamid.one", { status: "delivered", received_at: at("12:00:02.000") }),
          report(tenant.id, channelId, "wamid.one", { status: "delivered", received_at: at("12:00:03.000") })
        ]
        const failed = report(tenant.id, channelId, "wamid.two", {
          status: "failed",
          error: { code: null, title: `{"a":1}`, message: "[1,2]", details: "null" }
        })

        await h().run(MessageStore.use((s) => s.recordStatuses([{ ...kept, received_at: at("12:00:09.000") }, delivered[0]!, failed, delivered[1]!])))
        const stored = [...await h().stored.messageStatuses(tenant.id)].sort(byReport)
        const keptDelivered = stored.find((r) => r.status === "delivered")
        expect(delivered).toContainEqual(keptDelivered)
        expect(stored).toEqual([kept, keptDelivered!, failed].sort(byReport))
      })

      it("keeps 1,200 reports in one call, with awkward operator ids and errors", async () => {
        const { tenant } = await h().run(seedTenant)
        const channelId = conversationRecord(tenant.id).channel_id
        const statuses = ["sent", "delivered", "read", "failed"] as const
        const reports = Array.from({ length: 1_200 }, (_, i) =>
          report(tenant.id, channelId, i < 4 * AWKWARD_TEXTS.length ? awkward(Math.floor(i / 4)) : `wamid.${Math.floor(i / 4)}`, {
            status: statuses[i % 4]!,
            error: i % 4 === 3 ? { code: i, title: awkward(i), message: awkward(i + 1), details: i % 8 === 3 ? null : awkward(i + 2) } : null
          }))

        await h().run(MessageStore.use((s) => s.recordStatuses(reports)))
        expect([...await h().stored.messageStatuses(tenant.id)].sort(byReport)).toEqual([...reports].sort(byReport))
      })

      it("keeps nothing for an empty batch", async () => {
        const { tenant } = await h().run(seedTenant)
        await h().run(MessageStore.use((s) => s.recordStatuses([])))
        expect(await h().stored.messageStatuses(tenant.id)).toEqual([])
      })

      it("keeps the report another open transaction keeps of the same status, once it commits, and the batch's others (needs several connections)", async (ctx) => {
        const transactor = await contentionTransactor(h())
        ctx.skip(transactor === undefined, NEEDS_CONTENTION)
        const { tenant } = await h().run(seedTenant)
        const channelId = conversationRecord(tenant.id).channel_id
        const theirs = report(tenant.id, channelId, "wamid.one")
        const delivered = report(tenant.id, channelId, "wamid.one", { status: "delivered", received_at: at("12:00:02.000") })

        const { whileHeld } = await h().run(
          contend({
            hold: MessageStore.use((s) => s.recordStatus(theirs)),
            finish: () => Effect.void,
            contend: MessageStore.use((s) => s.recordStatuses([{ ...theirs, received_at: at("12:00:09.000") }, delivered]))
          }).pipe(Effect.provideService(Transactor, transactor!))
        )
        expect(whileHeld).toEqual(Option.none())
        expect([...await h().stored.messageStatuses(tenant.id)].sort(byReport)).toEqual([delivered, theirs])
      })
    })

    describe("findByExternalIds", () => {
      it("finds the messages of the operator ids on the channel, once each, leaving out unknown ids, other channels' and other tenants'", async () => {
        const { a, b, messageOfA, messageOfB } = await h().run(twoTenants)
        const conversation = conversationRecord(a.id, { channel_id: messageOfA.channel_id })
        const second = messageRecord(conversation)
        const elsewhere = messageRecord(conversationRecord(a.id), { external_id: second.external_id })
        const theirsHere = messageRecord(conversationRecord(b.id, { channel_id: messageOfA.channel_id }))
        await h().run(insertAll([second, elsewhere, theirsHere]))

        const asked = [messageOfA.external_id!, second.external_id!, second.external_id!, "wamid.unknown", theirsHere.external_id!, messageOfB.external_id!]
        for (const hold of [false, true]) {
          expect(await findByExternalIds(h, a.id, messageOfA.channel_id, asked, hold)).toEqual([messageOfA, second].sort(byId))
          expect(await findByExternalIds(h, b.id, messageOfA.channel_id, asked, hold)).toEqual([theirsHere])
          expect(await findByExternalIds(h, a.id, messageOfA.channel_id, [], hold)).toEqual([])
        }
      })

      it("finds 1,200 messages in one call, by awkward and JSON-looking operator ids too", async () => {
        const { tenant } = await h().run(seedTenant)
        const conversation = conversationRecord(tenant.id)
        const messages = Array.from({ length: 1_200 }, (_, i) =>
          messageRecord(conversation, { external_id: i < AWKWARD_TEXTS.length ? awkward(i) : `wamid.${i}` }))
        await h().run(MessageStore.use((s) => s.insertMany(messages)))

        const asked = [...messages.map((m) => m.external_id!), "wamid.unknown", `{"a": 1}`]
        expect(await findByExternalIds(h, tenant.id, conversation.channel_id, asked)).toEqual([...messages].sort(byId))
        expect(await findByExternalIds(h, tenant.id, conversation.channel_id, asked, true)).toEqual([...messages].sort(byId))
      })

      // A sent message moved, and a pending one (named already by a status) settled, in another transaction.
      const writers = [
        {
          writer: "a move",
          message: (conversation: ReturnType<typeof conversationRecord>) =>
            messageRecord(conversation, { direction: "outbound", status: "sent", sent_at: at("11:00:00.000"), updated_at: at("11:00:00.000") }),
          change: () => ({ status: "delivered", delivered_at: at("11:00:05.000"), updated_at: at("11:00:05.000") }) as const,
          write: (tenantId: string, message: MessageRecord, change: Partial<StatusState>) => moveStatuses(tenantId, [moveOf(message, change)])
        },
        {
          writer: "a settlement",
          message: (conversation: ReturnType<typeof conversationRecord>) =>
            pendingOf(conversation, { external_id: `wamid.${globalThis.crypto.randomUUID()}` }),
          change: () => accepted(),
          write: (tenantId: string, message: MessageRecord, change: Partial<StatusState & Pick<MessageRecord, "external_id">>) =>
            settlePending(tenantId, [outcomeOf(message, { ...change, external_id: message.external_id })])
        }
      ]

      it.for(writers)("held, waits for $writer in another open transaction and reads the message as it left it (needs several connections)", async ({ change, message, write }, ctx) => {
        const transactor = await contentionTransactor(h())
        ctx.skip(transactor === undefined, NEEDS_CONTENTION)
        const { tenant } = await h().run(seedTenant)
        const conversation = conversationRecord(tenant.id)
        const written = message(conversation)
        await h().run(insertAll([written]))
        const to = { ...change(), external_id: written.external_id }

        const { whileHeld, after } = await h().run(
          contend({
            hold: write(tenant.id, written, to),
            finish: () => Effect.void,
            contend: holdByExternalIds(tenant.id, conversation.channel_id, [written.external_id!])
          }).pipe(Effect.provideService(Transactor, transactor!))
        )
        // Answering before the write committed, it would have handed out the message as it was before.
        expect(whileHeld).toEqual(Option.none())
        expect(after).toEqual([{ ...written, ...to }])
      })

      it("held, takes its messages in their operator ids' order whatever order they are asked in, so two holders never deadlock (needs several connections)", async (ctx) => {
        const transactor = await contentionTransactor(h())
        ctx.skip(transactor === undefined, NEEDS_CONTENTION)
        const { tenant } = await h().run(seedTenant)
        const conversation = conversationRecord(tenant.id)
        const [low, high] = [messageRecord(conversation), messageRecord(conversation)]
          .sort((a, b) => (a.external_id! < b.external_id! ? -1 : 1))
        await h().run(insertAll([low!, high!]))
        const channel = conversation.channel_id

        // The first holds the lower one; the second asks for both, the higher first, and waits for the
        // lower holding nothing; so the first can still take the higher. Taken in the order asked, the
        // second would hold the higher while it waits, and the two would wait for each other.
        const { whileHeld, after } = await h().run(
          contend({
            hold: holdByExternalIds(tenant.id, channel, [low!.external_id!]),
            finish: () => holdByExternalIds(tenant.id, channel, [high!.external_id!]),
            contend: holdByExternalIds(tenant.id, channel, [high!.external_id!, low!.external_id!])
          }).pipe(Effect.provideService(Transactor, transactor!))
        )
        expect(whileHeld).toEqual(Option.none())
        expect(after).toEqual([low!, high!].sort(byId))
      })
    })

    describe("moveStatuses", () => {
      it("moves each message still standing as read, writing only the status columns, and resolves to the ids it moved", async () => {
        const { tenant } = await h().run(seedTenant)
        const conversation = conversationRecord(tenant.id)
        const sent = messageRecord(conversation, { direction: "outbound", status: "sent", updated_at: at("12:00:01.000"), sent_at: at("12:00:01.000") })
        const pending = messageRecord(conversation, { direction: "outbound", status: "pending", external_id: null })
        await h().run(insertAll([sent, pending]))
        // Another writer changes the text after the read, keeping the status as it stood.
        const edited: MessageRecord = { ...sent, text: "Edited meanwhile", content: { edited: true } }
        expect(await h().run(MessageStore.use((s) => s.update(tenant.id, edited)))).toBe(true)
        const delivered = { status: "delivered", delivered_at: at("12:00:02.000"), updated_at: at("12:00:02.000") } as const
        const failed = {
          status: "failed",
          error: { code: 131_026, title: `{"a":1}`, message: "Receiver is incapable 🚫 \"quoted\"", details: null },
          failed_at: at("12:00:03.000"),
          updated_at: at("12:00:03.000")
        } as const

        const moved = await h().run(moveStatuses(tenant.id, [moveOf(sent, delivered), moveOf(pending, failed)]))
        expect(moved).toEqual(new Set([sent.id, pending.id]))
        expect(await h().stored.messages(tenant.id)).toEqual([{ ...edited, ...delivered }, { ...pending, ...failed }].sort(byId))
      })

      it("leaves a message another writer moved since the read, by status or time, and leaves it out of the ids moved", async () => {
        const { tenant } = await h().run(seedTenant)
        const conversation = conversationRecord(tenant.id)
        const outbound = { direction: "outbound", status: "sent", updated_at: at("12:00:01.000"), sent_at: at("12:00:01.000") } as const
        const [byStatus, byTime, standing] = [messageRecord(conversation, outbound), messageRecord(conversation, outbound), messageRecord(conversation, outbound)]
        await h().run(insertAll([byStatus, byTime, standing]))
        const movedMeanwhile: ReadonlyArray<MessageRecord> = [
          { ...byStatus, status: "read", read_at: at("12:00:05.000"), updated_at: at("12:00:05.000") },
          { ...byTime, updated_at: at("12:00:04.000") }
        ]
        for (const m of movedMeanwhile) expect(await h().run(MessageStore.use((s) => s.update(tenant.id, m)))).toBe(true)
        const delivered = { status: "delivered", delivered_at: at("12:00:02.000"), updated_at: at("12:00:02.000") } as const

        const moved = await h().run(moveStatuses(tenant.id, [byStatus, byTime, standing].map((m) => moveOf(m, delivered))))
        expect(moved).toEqual(new Set([standing.id]))
        expect(await h().stored.messages(tenant.id)).toEqual([...movedMeanwhile, { ...standing, ...delivered }].sort(byId))
      })

      it("moves a message given twice in one batch once, to one of its moves", async () => {
        const { tenant } = await h().run(seedTenant)
        const conversation = conversationRecord(tenant.id)
        const [twice, rivals] = [messageRecord(conversation, { status: "sent" }), messageRecord(conversation, { status: "sent" })]
        await h().run(insertAll([twice, rivals]))
        const delivered = { status: "delivered", delivered_at: at("12:00:02.000"), updated_at: at("12:00:02.000") } as const
        const read = { status: "read", read_at: at("12:00:03.000"), updated_at: at("12:00:03.000") } as const

        const moved = await h().run(moveStatuses(tenant.id, [moveOf(twice, delivered), moveOf(rivals, delivered), moveOf(twice, delivered), moveOf(rivals, read)]))
        expect(moved).toEqual(new Set([twice.id, rivals.id]))
        const stored = await h().stored.messages(tenant.id)
        expect([{ ...rivals, ...delivered }, { ...rivals, ...read }]).toContainEqual(stored.find((m) => m.id === rivals.id))
        expect(stored.find((m) => m.id === twice.id)).toEqual({ ...twice, ...delivered })
      })

      it("never moves another tenant's message, and moves nothing for an empty batch", async () => {
        const { a, b, messageOfA, messageOfB } = await h().run(twoTenants)
        const read = { status: "read", read_at: at("12:00:03.000"), updated_at: at("12:00:03.000") } as const

        expect(await h().run(moveStatuses(a.id, [moveOf(messageOfB, read)]))).toEqual(new Set())
        expect(await h().run(moveStatuses(a.id, []))).toEqual(new Set())
        expect(await h().stored.messages(b.id)).toEqual([messageOfB])
        expect(await h().stored.messages(a.id)).toEqual([messageOfA])
      })

      it("moves 1,200 messages in one call, with awkward errors", async () => {
        const { tenant } = await h().run(seedTenant)
        const conversation = conversationRecord(tenant.id)
        const messages = Array.from({ length: 1_200 }, (_, i) =>
          messageRecord(conversation, { direction: "outbound", status: "sent", updated_at: i % 2 === 0 ? null : at("12:00:01.000") }))
        await h().run(MessageStore.use((s) => s.insertMany(messages)))
        const toOf = (i: number): Partial<StatusState> =>
          i % 3 === 0
            ? { status: "failed", error: { code: i, title: awkward(i), message: awkward(i + 1), details: null }, failed_at: at("12:00:05.000"), updated_at: at("12:00:05.000") }
            : { status: "delivered", delivered_at: at("12:00:04.000"), updated_at: at("12:00:04.000") }

        const moved = await h().run(moveStatuses(tenant.id, messages.map((m, i) => moveOf(m, toOf(i)))))
        expect(moved).toEqual(new Set(messages.map((m) => m.id)))
        expect(await h().stored.messages(tenant.id)).toEqual(messages.map((m, i) => ({ ...m, ...toOf(i) })).sort(byId))
      })

      it("loses to a move in another open transaction: reports the id not moved and leaves that writer's row (needs several connections)", async (ctx) => {
        const transactor = await contentionTransactor(h())
        ctx.skip(transactor === undefined, NEEDS_CONTENTION)
        const { tenant } = await h().run(seedTenant)
        const conversation = conversationRecord(tenant.id)
        const sent = messageRecord(conversation, { direction: "outbound", status: "sent", updated_at: at("12:00:01.000") })
        const other = messageRecord(conversation, { direction: "outbound", status: "sent", updated_at: at("12:00:01.000") })
        await h().run(insertAll([sent, other]))
        const read = { status: "read", read_at: at("12:00:03.000"), updated_at: at("12:00:03.000") } as const
        const delivered = { status: "delivered", delivered_at: at("12:00:02.000"), updated_at: at("12:00:02.000") } as const

        const { whileHeld, after } = await h().run(
          contend({
            hold: moveStatuses(tenant.id, [moveOf(sent, read)]),
            finish: () => Effect.void,
            contend: moveStatuses(tenant.id, [moveOf(sent, delivered), moveOf(other, delivered)])
          }).pipe(Effect.provideService(Transactor, transactor!))
        )
        // Answering before the other committed, it would have moved the message under that writer.
        expect(whileHeld).toEqual(Option.none())
        expect(after).toEqual(new Set([other.id]))
        expect(await h().stored.messages(tenant.id)).toEqual([{ ...sent, ...read }, { ...other, ...delivered }].sort(byId))
      })
    })

    describe("attachExternalIds", () => {
      const attach = (tenantId: string, channelId: string, attachments: ReadonlyArray<{ id: string; external_id: string }>) =>
        MessageStore.use((s) => s.attachExternalIds(tenantId, channelId, attachments))

      it("gives pending outbound messages of the channel without one their operator id, writing only that column, and resolves to the ids it wrote", async () => {
        const { tenant } = await h().run(seedTenant)
        const conversation = conversationRecord(tenant.id)
        const [first, second] = [pendingOf(conversation), pendingOf(conversation, { text: "Zoë 🚀 \"quoted\"" })]
        await h().run(insertAll([first, second]))

        const written = await h().run(attach(tenant.id, conversation.channel_id, [
          { id: first.id, external_id: "wamid.ATTACHED1" },
          { id: second.id, external_id: awkward(0) }
        ]))
        expect(written).toEqual(new Set([first.id, second.id]))
        expect(await h().stored.messages(tenant.id)).toEqual([
          { ...first, external_id: "wamid.ATTACHED1" },
          { ...second, external_id: awkward(0) }
        ].sort(byId))
        // Still pending: the settlement that follows writes the status and keeps the id.
        expect(await h().run(settlePending(tenant.id, [outcomeOf({ ...first, external_id: "wamid.ATTACHED1" }, accepted())]))).toEqual(new Set([first.id]))
      })

      it("never writes a message that has an operator id, is settled, inbound, of another channel or tenant, nor an unknown id", async () => {
        const { a, b, conversationOfB } = await h().run(twoTenants)
        const conversation = conversationRecord(a.id)
        const withId = pendingOf(conversation, { external_id: "wamid.HAD" })
        const failed = pendingOf(conversation, { status: "failed", error: { code: 1, title: null, message: "refused", details: null }, failed_at: at("11:00:00.000") })
        const inbound = messageRecord(conversation, { external_id: null })
        const elsewhere = pendingOf(conversationRecord(a.id))
        const ofB = pendingOf(conversationOfB)
        await h().run(insertAll([withId, failed, inbound, elsewhere, ofB]))
        const before = { a: await h().stored.messages(a.id), b: await h().stored.messages(b.id) }

        const written = await h().run(attach(a.id, conversation.channel_id, [
          ...[withId, failed, inbound, elsewhere, ofB].map((m, i) => ({ id: m.id, external_id: `wamid.NOT${i}` })),
          { id: globalThis.crypto.randomUUID(), external_id: "wamid.UNKNOWN" }
        ]))
        expect(written).toEqual(new Set())
        expect(await h().run(attach(a.id, conversation.channel_id, []))).toEqual(new Set())
        expect({ a: await h().stored.messages(a.id), b: await h().stored.messages(b.id) }).toEqual(before)
      })

      it("writes a message named twice in one batch once", async () => {
        const { tenant } = await h().run(seedTenant)
        const conversation = conversationRecord(tenant.id)
        const pending = pendingOf(conversation)
        await h().run(insertAll([pending]))

        const written = await h().run(attach(tenant.id, conversation.channel_id, [
          { id: pending.id, external_id: "wamid.TWICE" },
          { id: pending.id, external_id: "wamid.TWICE" }
        ]))
        expect(written).toEqual(new Set([pending.id]))
        expect(await h().stored.messages(tenant.id)).toEqual([{ ...pending, external_id: "wamid.TWICE" }])
      })
    })

    describe("held pending messages and their settlement", () => {
      it("a held read of a pending message keeps its settlement in another transaction waiting until it ends (needs several connections)", async (ctx) => {
        const transactor = await contentionTransactor(h())
        ctx.skip(transactor === undefined, NEEDS_CONTENTION)
        const { tenant } = await h().run(seedTenant)
        const conversation = conversationRecord(tenant.id)
        const held = pendingOf(conversation, { external_id: `wamid.${globalThis.crypto.randomUUID()}` })
        await h().run(insertAll([held]))

        const { whileHeld, after } = await h().run(
          contend({
            hold: holdByExternalIds(tenant.id, conversation.channel_id, [held.external_id!]),
            finish: () => Effect.void,
            contend: settlePending(tenant.id, [outcomeOf(held, { ...accepted(), external_id: held.external_id })])
          }).pipe(Effect.provideService(Transactor, transactor!))
        )
        expect(whileHeld).toEqual(Option.none())
        expect(after).toEqual(new Set([held.id]))
      })
    })

    describe("pendingAcrossTenants", () => {
      // Made in 2001, before anything other cases store (the suite's database is shared): only these are older than `before`.
      const old = (second: number) => `2001-01-01T00:00:0${second}.000Z`
      const pendingAcross = (before: string, after: { created_at: string; id: string } | null, limit: number) =>
        MessageStore.use((s) => s.pendingAcrossTenants(before, after, limit))

      it("finds pending outbound chat-app messages made before the cut-off, of every tenant, oldest first by time and id, a keyset page at a time", async () => {
        const { a, b, conversationOfB } = await h().run(twoTenants)
        const ofA = conversationRecord(a.id)
        const [early, sameTime] = [pendingOf(ofA, { created_at: old(1) }), pendingOf(conversationOfB, { created_at: old(1) })].sort(byId)
        const later = pendingOf(ofA, { created_at: old(3), external_id: "wamid.ATTACHED" })
        const leftOut = [
          pendingOf(ofA, { created_at: old(5) }), // at the cut-off
          pendingOf(ofA, { created_at: old(2), message_type: "email" }),
          messageRecord(ofA, { created_at: old(2), direction: "outbound", status: "sent", sent_at: old(2) }),
          messageRecord(ofA, { created_at: old(2) }),
          pendingOf(conversationOfB, { created_at: old(2), status: "failed", failed_at: old(4), error: { code: null, title: null, message: "no", details: null } })
        ]
        await h().run(insertAll([later, ...leftOut, sameTime!, early!]))

        const first = await h().run(pendingAcross(old(5), null, 2))
        expect(first).toEqual([early, sameTime])
        const rest = await h().run(pendingAcross(old(5), { created_at: sameTime!.created_at, id: sameTime!.id }, 2))
        expect(rest).toEqual([later])
        expect(await h().run(pendingAcross(old(5), { created_at: later.created_at, id: later.id }, 2))).toEqual([])
        expect(new Set([...first, ...rest].map((m) => m.tenant_id))).toEqual(new Set([a.id, b.id]))
      })
    })

    describe("settlePending", () => {
      it("settles each message still pending with its transport's answer, writing only the operator id and status columns, and resolves to the ids it settled", async () => {
        const { tenant } = await h().run(seedTenant)
        const conversation = conversationRecord(tenant.id)
        const [sent, failed] = [pendingOf(conversation), pendingOf(conversation, { message_type: "image", text: null, content: { link: "https://x/a.png" } })]
        await h().run(insertAll([sent, failed]))
        // Another writer changes the text while the send is under way, leaving the message pending.
        const edited: MessageRecord = { ...sent, text: "Edited meanwhile", content: { edited: true } }
        expect(await h().run(MessageStore.use((s) => s.update(tenant.id, edited)))).toBe(true)
        const accept = accepted()

        const settled = await h().run(settlePending(tenant.id, [outcomeOf(sent, accept), outcomeOf(failed, refused)]))
        expect(settled).toEqual(new Set([sent.id, failed.id]))
        expect(await h().stored.messages(tenant.id)).toEqual([{ ...edited, ...accept }, { ...failed, ...refused }].sort(byId))
        expect(await findByExternalId(h, tenant.id, sent.channel_id, accept.external_id)).toEqual({ ...edited, ...accept })
      })

      it("never settles a message no longer pending (sent, failed, received) nor an unknown id, leaving them out of the ids settled", async () => {
        const { tenant } = await h().run(seedTenant)
        const conversation = conversationRecord(tenant.id)
        const outbound = { direction: "outbound", updated_at: at("11:00:00.000") } as const
        const sentAlready = messageRecord(conversation, { ...outbound, status: "sent", sent_at: at("11:00:00.000") })
        const failedAlready = messageRecord(conversation, {
          ...outbound,
          status: "failed",
          external_id: null,
          error: { code: 1, title: null, message: "earlier", details: null },
          failed_at: at("11:00:00.000")
        })
        const inbound = messageRecord(conversation)
        const pending = pendingOf(conversation)
        await h().run(insertAll([sentAlready, failedAlready, inbound, pending]))
        const unknown = pendingOf(conversation)

        const settled = await h().run(settlePending(tenant.id, [sentAlready, failedAlready, inbound, unknown, pending].map((m) => outcomeOf(m, refused))))
        expect(settled).toEqual(new Set([pending.id]))
        const stored = [sentAlready, failedAlready, inbound, { ...pending, ...refused }].sort(byId)
        expect(await h().stored.messages(tenant.id)).toEqual(stored)

        // A second answer for the message settled (another holder of the same batch) changes nothing.
        expect(await h().run(settlePending(tenant.id, [outcomeOf(pending, accepted())]))).toEqual(new Set())
        expect(await h().stored.messages(tenant.id)).toEqual(stored)
      })

      it("settles a message given twice in one batch once, to one of its outcomes", async () => {
        const { tenant } = await h().run(seedTenant)
        const conversation = conversationRecord(tenant.id)
        const [twice, rivals] = [pendingOf(conversation), pendingOf(conversation)]
        await h().run(insertAll([twice, rivals]))
        const [accept, acceptRival] = [accepted(), accepted()]

        const settled = await h().run(
          settlePending(tenant.id, [outcomeOf(twice, accept), outcomeOf(rivals, acceptRival), outcomeOf(twice, accept), outcomeOf(rivals, refused)])
        )
        expect(settled).toEqual(new Set([twice.id, rivals.id]))
        const stored = await h().stored.messages(tenant.id)
        expect(stored.find((m) => m.id === twice.id)).toEqual({ ...twice, ...accept })
        expect([{ ...rivals, ...acceptRival }, { ...rivals, ...refused }]).toContainEqual(stored.find((m) => m.id === rivals.id))
      })

      it("never settles another tenant's pending message, and settles nothing for an empty batch", async () => {
        const { a, b, conversationOfB, messageOfA, messageOfB } = await h().run(twoTenants)
        const pendingOfB = pendingOf(conversationOfB)
        await h().run(insertAll([pendingOfB]))

        expect(await h().run(settlePending(a.id, [outcomeOf(pendingOfB, accepted()), outcomeOf(messageOfB, refused)]))).toEqual(new Set())
        expect(await h().run(settlePending(a.id, []))).toEqual(new Set())
        expect(await h().stored.messages(b.id)).toEqual([messageOfB, pendingOfB].sort(byId))
        expect(await h().stored.messages(a.id)).toEqual([messageOfA])
      })

      it("settles 1,200 messages in one call, with awkward operator ids and errors", async () => {
        const { tenant } = await h().run(seedTenant)
        const conversation = conversationRecord(tenant.id)
        const messages = Array.from({ length: 1_200 }, () => pendingOf(conversation))
        await h().run(MessageStore.use((s) => s.insertMany(messages)))
        // The first operator ids are the awkward texts themselves; later refusals carry none.
        const toOf = (i: number): Partial<StatusState & Pick<MessageRecord, "external_id">> => ({
          external_id: i < AWKWARD_TEXTS.length ? awkward(i) : i % 3 === 0 ? null : `wamid.${i}`,
          ...(i % 3 === 0
            ? { status: "failed", error: { code: i, title: awkward(i), message: awkward(i + 1), details: i % 2 === 0 ? null : awkward(i + 2) }, failed_at: at("12:00:05.000") }
            : { status: "sent", sent_at: at("12:00:04.000") }),
          updated_at: at("12:00:05.000")
        })

        const settled = await h().run(settlePending(tenant.id, messages.map((m, i) => outcomeOf(m, toOf(i)))))
        expect(settled).toEqual(new Set(messages.map((m) => m.id)))
        expect(await h().stored.messages(tenant.id)).toEqual(messages.map((m, i) => ({ ...m, ...toOf(i) })).sort(byId))
      })

      it("loses to a settlement in another open transaction: waits for it, reports the id not settled and leaves that answer (needs several connections)", async (ctx) => {
        const transactor = await contentionTransactor(h())
        ctx.skip(transactor === undefined, NEEDS_CONTENTION)
        const { tenant } = await h().run(seedTenant)
        const conversation = conversationRecord(tenant.id)
        const [contested, other] = [pendingOf(conversation), pendingOf(conversation)]
        await h().run(insertAll([contested, other]))
        const accept = accepted()

        const { whileHeld, after } = await h().run(
          contend({
            hold: settlePending(tenant.id, [outcomeOf(contested, accept)]),
            finish: () => Effect.void,
            contend: settlePending(tenant.id, [outcomeOf(contested, refused), outcomeOf(other, refused)])
          }).pipe(Effect.provideService(Transactor, transactor!))
        )
        // Answering before the other committed, it would have settled the message a second time.
        expect(whileHeld).toEqual(Option.none())
        expect(after).toEqual(new Set([other.id]))
        expect(await h().stored.messages(tenant.id)).toEqual([{ ...contested, ...accept }, { ...other, ...refused }].sort(byId))
      })
    })

    describe("deletePending", () => {
      it("deletes the messages among the ids still pending, leaving sent, failed and inbound ones, pending ones not named, and unknown ids", async () => {
        const { tenant } = await h().run(seedTenant)
        const conversation = conversationRecord(tenant.id)
        const [named, alsoNamed, notNamed] = [pendingOf(conversation), pendingOf(conversation), pendingOf(conversation)]
        const sent = messageRecord(conversation, { direction: "outbound", status: "sent", sent_at: at("11:00:00.000") })
        const failed = pendingOf(conversation, { status: "failed", error: { code: null, title: null, message: "x", details: null }, failed_at: at("11:00:00.000") })
        const inbound = messageRecord(conversation)
        await h().run(insertAll([named, alsoNamed, notNamed, sent, failed, inbound]))

        const ids = [named.id, sent.id, failed.id, inbound.id, pendingOf(conversation).id, named.id, alsoNamed.id, `{"a":1}`]
        await h().run(deletePending(tenant.id, ids))
        expect(await h().stored.messages(tenant.id)).toEqual([notNamed, sent, failed, inbound].sort(byId))
      })

      it("deletes none of another tenant's pending messages, and nothing for no ids", async () => {
        const { a, b, conversationOfB, messageOfA, messageOfB } = await h().run(twoTenants)
        const pendingOfA = pendingOf(conversationRecord(a.id))
        const pendingOfB = pendingOf(conversationOfB)
        await h().run(insertAll([pendingOfA, pendingOfB]))

        await h().run(deletePending(a.id, [pendingOfB.id, messageOfB.id]))
        await h().run(deletePending(a.id, []))
        expect(await h().stored.messages(b.id)).toEqual([messageOfB, pendingOfB].sort(byId))
        expect(await h().stored.messages(a.id)).toEqual([messageOfA, pendingOfA].sort(byId))
      })

      it("deletes 1,200 messages in one call, leaving the sent ones among the ids", async () => {
        const { tenant } = await h().run(seedTenant)
        const conversation = conversationRecord(tenant.id)
        const messages = Array.from({ length: 1_200 }, (_, i) =>
          i % 4 === 0 ? messageRecord(conversation, { direction: "outbound", status: "sent" }) : pendingOf(conversation))
        await h().run(MessageStore.use((s) => s.insertMany(messages)))

        await h().run(deletePending(tenant.id, messages.map((m) => m.id)))
        expect(await h().stored.messages(tenant.id)).toEqual(messages.filter((m) => m.status === "sent").sort(byId))
      })

      it("leaves a message another open transaction settles: waits for it and deletes only what is still pending (needs several connections)", async (ctx) => {
        const transactor = await contentionTransactor(h())
        ctx.skip(transactor === undefined, NEEDS_CONTENTION)
        const { tenant } = await h().run(seedTenant)
        const conversation = conversationRecord(tenant.id)
        const [contested, other] = [pendingOf(conversation), pendingOf(conversation)]
        await h().run(insertAll([contested, other]))
        const accept = accepted()

        const { whileHeld } = await h().run(
          contend({
            hold: settlePending(tenant.id, [outcomeOf(contested, accept)]),
            finish: () => Effect.void,
            contend: deletePending(tenant.id, [contested.id, other.id])
          }).pipe(Effect.provideService(Transactor, transactor!))
        )
        // Answering before the other committed, it would have deleted a message its transport accepted.
        expect(whileHeld).toEqual(Option.none())
        expect(await h().stored.messages(tenant.id)).toEqual([{ ...contested, ...accept }])
      })
    })

    describe("statusesOfMany", () => {
      it("answers every status kept for the ids on the channel once, each id's in the order received, leaving out other channels', other tenants' and unknown ids", async () => {
        const { a, b } = await h().run(Effect.all({ a: Effect.map(seedTenant, (s) => s.tenant), b: Effect.map(seedTenant, (s) => s.tenant) }))
        const [here, there] = [conversationRecord(a.id).channel_id, conversationRecord(a.id).channel_id]
        const x = `wamid.${globalThis.crypto.randomUUID()}`
        const y = `{"a":1}`
        const ofX = [
          report(a.id, here, x, { status: "read", occurred_at: at("12:00:03.000"), received_at: at("12:00:03.500") }),
          // Received at the same instant, sent and delivered come in the order a message goes through them.
          report(a.id, here, x, { occurred_at: at("12:00:01.000"), received_at: at("12:00:04.000") }),
          report(a.id, here, x, { status: "delivered", occurred_at: at("12:00:02.000"), received_at: at("12:00:04.000") }),
          report(a.id, here, x, {
            status: "failed",
            received_at: at("12:00:05.000"),
            error: { code: 131_026, title: "[1,2]", message: "Receiver is incapable 🚫", details: null }
          })
        ]
        const ofY = [report(a.id, here, y, { received_at: at("11:00:00.000") }), report(a.id, here, y, { status: "delivered", received_at: at("11:00:01.000") })]
        const xThere = report(a.id, there, x)
        const ofB = report(b.id, here, "wamid.of-b")
        for (const r of [ofX[3]!, ofY[1]!, ofX[2]!, xThere, ofX[1]!, ofB, ofY[0]!, ofX[0]!]) expect(await record(h, r)).toBe(true)

        const answer = await statusesOfMany(h, a.id, here, [x, y, x, "wamid.of-b", "wamid.unknown"])
        expect(answer).toHaveLength(6)
        expect(perId(answer)).toEqual(new Map([[x, ofX], [y, ofY]]))
        expect(await statusesOfMany(h, b.id, here, [x, y, "wamid.of-b"])).toEqual([ofB])
        expect(await statusesOfMany(h, a.id, there, [x, y])).toEqual([xThere])
        expect(await statusesOfMany(h, a.id, here, [])).toEqual([])
      })

      it("answers the statuses of 1,200 ids in one call, by awkward and JSON-looking ids too", async () => {
        const { tenant } = await h().run(seedTenant)
        const channelId = conversationRecord(tenant.id).channel_id
        const externalIds = Array.from({ length: 1_200 }, (_, i) => (i < AWKWARD_TEXTS.length ? awkward(i) : `wamid.${i}`))
        // Each id's delivered report comes first in the batch, though received after its sent one.
        const reports = externalIds.flatMap((externalId, i) => [
          report(tenant.id, channelId, externalId, { status: "delivered", received_at: at("12:00:02.000"), error: null }),
          report(tenant.id, channelId, externalId, { received_at: at("12:00:01.000"), error: i % 5 === 0 ? { code: i, title: awkward(i), message: awkward(i + 1), details: null } : null })
        ])
        await h().run(MessageStore.use((s) => s.recordStatuses(reports)))

        const answer = await statusesOfMany(h, tenant.id, channelId, [...externalIds, "wamid.unknown", `{"a": 1}`])
        expect(answer).toHaveLength(2_400)
        expect(perId(answer)).toEqual(new Map(externalIds.map((externalId, i) => [externalId, [reports[2 * i + 1]!, reports[2 * i]!]])))
      })
    })

    describe("tenant isolation", () => {
      it("returns nothing for another tenant's message, by id or by operator id", async () => {
        const { a, messageOfB } = await h().run(twoTenants)
        expect(await getMessage(h, a.id, messageOfB.id)).toBeUndefined()
        expect(await findByExternalId(h, a.id, messageOfB.channel_id, messageOfB.external_id!)).toBeUndefined()
      })

      it("refuses to update another tenant's message and leaves it unchanged", async () => {
        const { a, b, messageOfB } = await h().run(twoTenants)
        const hijack: MessageRecord = { ...messageOfB, text: "Hijacked", status: "read", read_at: at("12:00:00.000") }

        expect(await h().run(MessageStore.use((s) => s.update(a.id, hijack)))).toBe(false)
        expect(await h().run(MessageStore.use((s) => s.update(a.id, { ...hijack, tenant_id: a.id })))).toBe(false)
        expect(await h().stored.messages(b.id)).toEqual([messageOfB])
      })

      it("lists and counts none of another tenant's conversation's messages", async () => {
        const { a, b, conversationOfB, messageOfB } = await h().run(twoTenants)
        expect(await page(h, a.id, conversationOfB.id)).toEqual({ items: [], total: 0 })
        expect(await page(h, b.id, conversationOfB.id)).toEqual({ items: [messageOfB], total: 1 })
      })

      it("reads none of another tenant's reported statuses", async () => {
        const { a, b, messageOfB } = await h().run(twoTenants)
        const ofB = report(b.id, messageOfB.channel_id, messageOfB.external_id!)
        await record(h, ofB)

        expect(await statusesOf(h, a.id, messageOfB.channel_id, messageOfB.external_id!)).toEqual([])
        expect(await statusesOf(h, b.id, messageOfB.channel_id, messageOfB.external_id!)).toEqual([ofB])
        expect(await h().stored.messageStatuses(a.id)).toEqual([])
      })
    })
  }
})
