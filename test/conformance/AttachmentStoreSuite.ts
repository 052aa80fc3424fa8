import { Effect, Option } from "effect"
import { expect, it } from "vitest"
import type { AccountStore } from "../../src/ports/AccountStore.ts"
import { type AttachmentRecord, AttachmentStore } from "../../src/ports/AttachmentStore.ts"
import type { TenantStore } from "../../src/ports/TenantStore.ts"
import { attachmentRecord, seedTenant } from "./Fixtures.ts"
import { byId, makeSuite, type Suite, type UseHarness } from "./Harness.ts"

type UseAttachments = UseHarness<AttachmentStore | TenantStore | AccountStore, "attachments">

/** An instant of the attachments' day as stored, from `HH:MM`. */
const at = (time: string): string => `2026-11-26T${time}:00.000Z`

const newId = () => globalThis.crypto.randomUUID()

const insertAll = (attachments: ReadonlyArray<AttachmentRecord>) =>
  AttachmentStore.use((s) => Effect.forEach(attachments, (a) => s.insert(a), { discard: true }))

const getAttachment = (h: UseAttachments, tenantId: string, id: string) =>
  h().run(AttachmentStore.use((s) => s.get(tenantId, id))).then(Option.getOrUndefined)

const listByMessages = (h: UseAttachments, tenantId: string, messageIds: ReadonlyArray<string>) =>
  h().run(AttachmentStore.use((s) => s.listByMessages(tenantId, messageIds)))

const attach = (h: UseAttachments, tenantId: string, ids: ReadonlyArray<string>, messageId: string, conversationId: string) =>
  h().run(AttachmentStore.use((s) => s.attach(tenantId, ids, messageId, conversationId)))

/**
 * AttachmentStore: every field round-trips; a message's attachments list in creation order;
 * attaching points uploads at their message; no tenant reads or attaches another's attachments.
 * Needs TenantStore and AccountStore for the tenants they belong to.
 */
export const attachmentStoreSuite: Suite<AttachmentStore | TenantStore | AccountStore, "attachments"> = makeSuite({
  name: "AttachmentStore",
  tables: ["attachments"],
  tests: (h) => {
    it("stores every field, with a unicode file name and a size past 4 GiB, and reads it back unchanged", async () => {
      const { tenant } = await h().run(seedTenant)
      const attachment = attachmentRecord(tenant.id, {
        message_id: newId(),
        conversation_id: newId(),
        direction: "inbound",
        origin: "chatapp_media",
        filename: "Zoë's 山田 \"scan\" \\ 🚀.jpeg",
        content_type: "image/jpeg",
        file_size: 5_000_000_123,
        external_id: "1234567890123456",
        created_at: "2026-11-26T10:15:30.123Z"
      })
      await h().run(insertAll([attachment]))

      expect(await h().stored.attachments(tenant.id)).toEqual([attachment])
      expect(await getAttachment(h, tenant.id, attachment.id)).toEqual(attachment)
    })

    it("stores an upload not yet sent, of no bytes, and reads it back unchanged", async () => {
      const { tenant } = await h().run(seedTenant)
      const attachment = attachmentRecord(tenant.id, { file_size: 0, filename: "empty.txt", content_type: "text/plain" })
      await h().run(insertAll([attachment]))

      expect(await h().stored.attachments(tenant.id)).toEqual([attachment])
      expect(await getAttachment(h, tenant.id, attachment.id)).toEqual(attachment)
    })

    it("finds no attachment for an unknown id", async () => {
      const { tenant } = await h().run(seedTenant)
      expect(await getAttachment(h, tenant.id, newId())).toBeUndefined()
    })

    it("lists the attachments of the messages asked for, in creation order, and none of other messages", async () => {
      const { tenant } = await h().run(seedTenant)
      const [first, second, other] = [newId(), newId(), newId()]
      const attachments = [
        attachmentRecord(tenant.id, { message_id: second, created_at: at("10:03") }),
        attachmentRecord(tenant.id, { message_id: first, created_at: at("10:01") }),
        attachmentRecord(tenant.id, { message_id: other, created_at: at("10:00") }),
        attachmentRecord(tenant.id, { message_id: second, created_at: at("10:02") }),
        attachmentRecord(tenant.id, { created_at: at("09:00") })
      ]
      await h().run(insertAll(attachments))
      const [s2, f1, , s1] = attachments

      expect(await listByMessages(h, tenant.id, [first, second])).toEqual([f1, s1, s2])
      expect(await listByMessages(h, tenant.id, [second])).toEqual([s1, s2])
      expect(await listByMessages(h, tenant.id, [newId()])).toEqual([])
      expect(await listByMessages(h, tenant.id, [])).toEqual([])
    })

    it("lists attachments created at the same instant, every one once", async () => {
      const { tenant } = await h().run(seedTenant)
      const messageId = newId()
      const twins = Array.from({ length: 5 }, () => attachmentRecord(tenant.id, { message_id: messageId }))
      await h().run(insertAll(twins))

      expect([...await listByMessages(h, tenant.id, [messageId])].sort(byId)).toEqual([...twins].sort(byId))
    })

    it("attaches uploads to the message that carries them, and leaves the others alone", async () => {
      const { tenant } = await h().run(seedTenant)
      const uploads = [1, 2, 3].map((i) => attachmentRecord(tenant.id, { created_at: at(`10:0${i}`) }))
      await h().run(insertAll(uploads))
      const [messageId, conversationId] = [newId(), newId()]

      await attach(h, tenant.id, [uploads[0]!.id, uploads[2]!.id], messageId, conversationId)
      await attach(h, tenant.id, [], messageId, conversationId)

      const attached = [uploads[0]!, uploads[2]!].map((u) => ({ ...u, message_id: messageId, conversation_id: conversationId }))
      expect(await listByMessages(h, tenant.id, [messageId])).toEqual(attached)
      expect(await h().stored.attachments(tenant.id)).toEqual([...attached, uploads[1]!].sort(byId))
    })

    it("returns nothing for another tenant's attachment, by id or by its message", async () => {
      const { tenant: a } = await h().run(seedTenant)
      const { tenant: b } = await h().run(seedTenant)
      const messageId = newId()
      const ofB = attachmentRecord(b.id, { message_id: messageId })
      await h().run(insertAll([ofB]))

      expect(await getAttachment(h, a.id, ofB.id)).toBeUndefined()
      expect(await listByMessages(h, a.id, [messageId])).toEqual([])
      expect(await listByMessages(h, b.id, [messageId])).toEqual([ofB])
    })

    it("attaches none of another tenant's uploads and leaves them unchanged", async () => {
      const { tenant: a } = await h().run(seedTenant)
      const { tenant: b } = await h().run(seedTenant)
      const ofA = attachmentRecord(a.id)
      const ofB = attachmentRecord(b.id)
      await h().run(insertAll([ofA, ofB]))
      const [messageId, conversationId] = [newId(), newId()]

      await attach(h, a.id, [ofA.id, ofB.id], messageId, conversationId)

      expect(await h().stored.attachments(b.id)).toEqual([ofB])
      expect(await h().stored.attachments(a.id)).toEqual([{ ...ofA, message_id: messageId, conversation_id: conversationId }])
      expect(await listByMessages(h, a.id, [messageId])).toEqual([{ ...ofA, message_id: messageId, conversation_id: conversationId }])
    })

    it("deletes an upload no message carries, and reports a carried one as sent and an unknown or foreign one as missing", async () => {
      const { tenant: a } = await h().run(seedTenant)
      const { tenant: b } = await h().run(seedTenant)
      const unsent = attachmentRecord(a.id)
      const kept = attachmentRecord(a.id)
      const [messageId, conversationId] = [newId(), newId()]
      const sent = attachmentRecord(a.id, { message_id: messageId, conversation_id: conversationId })
      const ofB = attachmentRecord(b.id)
      await h().run(insertAll([unsent, kept, sent, ofB]))
      const deleteUnsent = (tenantId: string, id: string) => h().run(AttachmentStore.use((s) => s.deleteUnsent(tenantId, id)))

      expect(await deleteUnsent(a.id, unsent.id)).toEqual({ _tag: "Deleted", blob_key: unsent.blob_key })
      expect(await deleteUnsent(a.id, unsent.id)).toEqual({ _tag: "Missing" })
      expect(await deleteUnsent(a.id, sent.id)).toEqual({ _tag: "Sent", message_id: messageId, conversation_id: conversationId })
      expect(await deleteUnsent(a.id, ofB.id)).toEqual({ _tag: "Missing" })

      expect(await h().stored.attachments(a.id)).toEqual([kept, sent].sort(byId))
      expect(await h().stored.attachments(b.id)).toEqual([ofB])
    })

    // Rows dated long before any other suite's, so the prune (which spans tenants) takes only these.
    it("prunes uploads and fetched files no message carries made before the cut-off, oldest first, up to the limit", async () => {
      const { tenant: a } = await h().run(seedTenant)
      const { tenant: b } = await h().run(seedTenant)
      const old = (tenantId: string, minute: number, overrides: Partial<AttachmentRecord> = {}) =>
        attachmentRecord(tenantId, { created_at: `1999-12-31T23:${String(minute).padStart(2, "0")}:00.000Z`, ...overrides })
      const oldest = old(a.id, 1)
      const fetched = old(b.id, 2, { origin: "url" })
      const third = old(a.id, 3)
      const carried = old(a.id, 0, { message_id: newId(), conversation_id: newId() })
      const received = old(a.id, 0, { origin: "chatapp_media", direction: "inbound" })
      const atCutoff = attachmentRecord(a.id, { created_at: "2000-01-01T00:00:00.000Z" })
      await h().run(insertAll([oldest, fetched, third, carried, received, atCutoff]))
      const prune = (limit: number) =>
        h().run(AttachmentStore.use((s) => s.pruneUnsent("2000-01-01T00:00:00.000Z", limit))).then((keys) => [...keys].sort())

      expect(await prune(2)).toEqual([oldest.blob_key, fetched.blob_key].sort())
      expect(await prune(2)).toEqual([third.blob_key])
      expect(await prune(2)).toEqual([])

      expect(await h().stored.attachments(a.id)).toEqual([carried, received, atCutoff].sort(byId))
      expect(await h().stored.attachments(b.id)).toEqual([])
    })
  }
})
