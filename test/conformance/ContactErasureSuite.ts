import { Effect, Option } from "effect"
import { expect, it } from "vitest"
import type { AccountStore } from "../../src/ports/AccountStore.ts"
import { AttachmentStore } from "../../src/ports/AttachmentStore.ts"
import { ContactStore } from "../../src/ports/ContactStore.ts"
import { ConversationStore } from "../../src/ports/ConversationStore.ts"
import { EmailStore } from "../../src/ports/EmailStore.ts"
import { FlowStore } from "../../src/ports/FlowStore.ts"
import { ListStore } from "../../src/ports/ListStore.ts"
import { MessageStore } from "../../src/ports/MessageStore.ts"
import { SummaryStore } from "../../src/ports/SummaryStore.ts"
import { TeamChatStore } from "../../src/ports/TeamChatStore.ts"
import type { TenantStore } from "../../src/ports/TenantStore.ts"
import {
  attachmentRecord,
  contactRecord,
  conversationRecord,
  emailAttachmentRecord,
  emailIntegrationRecord,
  emailMessageRecord,
  flowDefinitionRecord,
  flowSessionRecord,
  inlineImageRecord,
  listRecord,
  marketingOptOutRecord,
  messageRecord,
  seedTenant,
  subscriptionRecord,
  summaryRecord,
  tagRecord,
  teamChatChannelRecord,
  teamChatMessageRecord
} from "./Fixtures.ts"
import { makeSuite, type Suite } from "./Harness.ts"

type Ports =
  | ContactStore
  | ConversationStore
  | MessageStore
  | AttachmentStore
  | EmailStore
  | ListStore
  | FlowStore
  | SummaryStore
  | TeamChatStore
  | TenantStore
  | AccountStore

type Tables =
  | "contacts"
  | "conversations"
  | "messages"
  | "attachments"
  | "emailMessages"
  | "emailAttachments"
  | "inlineImages"
  | "listSubscriptions"
  | "marketingOptOuts"
  | "contactTags"
  | "flowSessions"
  | "attachmentSummaries"

const ERASED_AT = "2026-11-23T08:00:00.000Z"

/**
 * A contact of a new tenant with everything personal the stores keep about it: a chat conversation
 * (a message with a photo and its summary, a failed outbound message), an email thread (an inbound
 * email with a file and an inline image, an outbound reply carrying an upload that an email to another
 * contact also carries), a tag, a list subscription, an opt-out and an answered flow session; and a
 * second contact with the same kinds of rows, which the erasure must leave alone.
 */
const seedPerson = Effect.gen(function*() {
  const { tenant } = yield* seedTenant
  const tenantId = tenant.id
  const ana = contactRecord(tenantId, { name: "Ana", phone: "+34600000001", email: "ana@example.org", custom_fields: { vip: true } })
  const bob = contactRecord(tenantId, { name: "Bob", phone: "+34600000002", email: "bob@example.org" })
  yield* ContactStore.use((s) => Effect.forEach([ana, bob], (c) => s.insert(c), { discard: true }))

  const chat = conversationRecord(tenantId, { contact_id: ana.id })
  const thread = conversationRecord(tenantId, { contact_id: ana.id, kind: "email", subject: "My invoice", status: "closed", closed_at: "2026-11-22T11:00:00.000Z" })
  const bobChat = conversationRecord(tenantId, { contact_id: bob.id })
  const bobThread = conversationRecord(tenantId, { contact_id: bob.id, kind: "email", subject: "Bob's order" })
  yield* ConversationStore.use((s) => Effect.forEach([chat, thread, bobChat, bobThread], (c) => s.insert(c), { discard: true }))

  const [e1, e2, e3] = [globalThis.crypto.randomUUID(), globalThis.crypto.randomUUID(), globalThis.crypto.randomUUID()]
  const photoMessage = messageRecord(chat, { message_type: "image", text: "my receipt", content: { caption: "my receipt", sent_at: "x" } })
  const failed = messageRecord(chat, {
    direction: "outbound",
    status: "failed",
    text: "Hi Ana",
    content: { template: { variables: ["Ana"] } },
    error: { code: 131047, title: "Re-engagement message", message: "Ana at +34600000001 did not answer", details: null }
  })
  const inboundEmailMessage = messageRecord(thread, { message_type: "email", text: "Please see the invoice", content: { subject: "My invoice", email_message_id: e1 } })
  const replyMessage = messageRecord(thread, { direction: "outbound", status: "sent", message_type: "email", text: "Here it is", content: { subject: "Re: My invoice", email_message_id: e2 } })
  const bobMessage = messageRecord(bobChat, { text: "Bob's words" })
  const bobEmailMessage = messageRecord(bobThread, { message_type: "email", text: "Bob's email", content: { email_message_id: e3 } })
  yield* MessageStore.use((s) =>
    Effect.forEach([photoMessage, failed, inboundEmailMessage, replyMessage, bobMessage, bobEmailMessage], (m) => s.insert(m), { discard: true })
  )

  const carried = (message: typeof photoMessage, overrides: Partial<Parameters<typeof attachmentRecord>[1]> = {}) =>
    attachmentRecord(tenantId, { message_id: message.id, conversation_id: message.conversation_id, ...overrides })
  const photo = carried(photoMessage, { direction: "inbound", origin: "chatapp_media", content_type: "image/jpeg", filename: "ana-receipt.jpg" })
  const emailFile = carried(inboundEmailMessage, { direction: "inbound", origin: "email", filename: "ana-invoice.pdf" })
  const emailInline = carried(inboundEmailMessage, { direction: "inbound", origin: "email_inline", content_type: "image/png" })
  // The workspace's upload, sent to Ana first and then to Bob: it stays for Bob.
  const sharedUpload = carried(replyMessage, { filename: "price-list.pdf" })
  const replyUpload = carried(replyMessage, { filename: "ana-contract.pdf" })
  const bobPhoto = carried(bobMessage, { direction: "inbound", origin: "chatapp_media" })
  const loose = attachmentRecord(tenantId)
  const files = [photo, emailFile, emailInline, sharedUpload, replyUpload, bobPhoto, loose]
  yield* AttachmentStore.use((s) => Effect.forEach(files, (a) => s.insert(a), { discard: true }))
  const photoSummary = summaryRecord(tenantId, { attachment_id: photo.id })
  const bobSummary = summaryRecord(tenantId, { attachment_id: bobPhoto.id })
  yield* SummaryStore.use((s) => Effect.forEach([photoSummary, bobSummary], (x) => s.insertPending(x), { discard: true }))

  const integration = emailIntegrationRecord(tenantId)
  const inboundEmail = emailMessageRecord(thread, integration.id, {
    id: e1,
    message_id: inboundEmailMessage.id,
    subject: "My invoice",
    from: { address: "ana@example.org", name: "Ana" },
    cc: [{ address: "ana.sister@example.org", name: "Eva" }],
    reply_to: [{ address: "ana+replies@example.org", name: null }],
    text_body: "Please see the invoice",
    html_body: "<p>Please see the invoice</p>",
    headers: [{ name: "From", value: "Ana <ana@example.org>" }],
    references: ["older@mail.example.org"],
    in_reply_to: "older@mail.example.org"
  })
  const reply = emailMessageRecord(thread, integration.id, {
    id: e2,
    message_id: replyMessage.id,
    direction: "outbound",
    status: "failed",
    error: "550 <ana@example.org>: mailbox full",
    to: [{ address: "ana@example.org", name: "Ana" }]
  })
  const bobEmail = emailMessageRecord(bobThread, integration.id, { id: e3, message_id: bobEmailMessage.id, from: { address: "bob@example.org", name: "Bob" } })
  yield* EmailStore.use((s) =>
    Effect.gen(function*() {
      yield* s.insertIntegration(integration)
      for (const email of [inboundEmail, reply, bobEmail]) yield* s.insertMessage(email)
      yield* s.insertAttachments([
        emailAttachmentRecord(tenantId, inboundEmail.id, 0, { attachment_id: emailFile.id, filename: "ana-invoice.pdf" }),
        emailAttachmentRecord(tenantId, inboundEmail.id, 1, { attachment_id: emailInline.id, is_inline: true, content_id: "img1@ana" }),
        emailAttachmentRecord(tenantId, reply.id, 0, { attachment_id: sharedUpload.id }),
        emailAttachmentRecord(tenantId, reply.id, 1, { attachment_id: replyUpload.id }),
        emailAttachmentRecord(tenantId, bobEmail.id, 0, { attachment_id: sharedUpload.id })
      ])
      yield* s.insertInlineImage(inlineImageRecord(tenantId, { attachment_id: replyUpload.id }))
    })
  )

  const list = listRecord(tenantId)
  const tag = tagRecord(tenantId)
  const definition = flowDefinitionRecord(tenantId)
  const anaSession = flowSessionRecord(definition, {
    contact_id: ana.id,
    conversation_id: chat.id,
    status: "completed",
    answers: { name: "Ana", email: "ana@example.org" },
    writeback_result: { state: "done", contact_fields: { name: "Ana" } } as never,
    last_error: "Ana's phone refused"
  })
  const bobSession = flowSessionRecord(definition, { contact_id: bob.id, status: "completed", answers: { name: "Bob" } })
  yield* ListStore.use((s) =>
    Effect.gen(function*() {
      yield* s.insertList(list)
      yield* s.putSubscription(subscriptionRecord(tenantId, list.id, { contact_id: ana.id }))
      yield* s.putSubscription(subscriptionRecord(tenantId, list.id, { contact_id: bob.id }))
      yield* s.putOptOut(marketingOptOutRecord(tenantId, { contact_id: ana.id }))
      yield* s.putOptOut(marketingOptOutRecord(tenantId, { contact_id: bob.id }))
    })
  )
  yield* FlowStore.use((s) =>
    Effect.gen(function*() {
      yield* s.insertTag(tag)
      yield* s.tagContact(tenantId, ana.id, tag.id, ERASED_AT)
      yield* s.tagContact(tenantId, bob.id, tag.id, ERASED_AT)
      yield* s.insertDefinition(definition)
      yield* s.insertSession(anaSession)
      yield* s.insertSession(bobSession)
    })
  )
  return {
    tenantId,
    ana,
    bob,
    chat,
    thread,
    bobChat,
    bobThread,
    messages: { photoMessage, failed, inboundEmailMessage, replyMessage, bobMessage, bobEmailMessage },
    files: { photo, emailFile, emailInline, sharedUpload, replyUpload, bobPhoto, loose },
    emails: { inboundEmail, reply, bobEmail },
    sessions: { anaSession, bobSession }
  }
})

/**
 * Deleting what the API creates: `ContactStore.erase` takes the contact and everything personal
 * stored about it, in every table, and nothing of another contact or another tenant;
 * `AttachmentStore.deleteUnsent` and `pruneUnsent` never take a file an email or a team chat message
 * carries. Needs the ports it seeds rows with.
 */
export const contactErasureSuite: Suite<Ports, Tables> = makeSuite({
  name: "Erasure (ContactStore.erase, AttachmentStore.deleteUnsent and pruneUnsent)",
  tables: [
    "contacts",
    "conversations",
    "messages",
    "attachments",
    "emailMessages",
    "emailAttachments",
    "inlineImages",
    "listSubscriptions",
    "marketingOptOuts",
    "contactTags",
    "flowSessions",
    "attachmentSummaries"
  ],
  tests: (h) => {
    const erase = (tenantId: string, contactId: string) =>
      h().run(ContactStore.use((s) => s.erase(tenantId, contactId, ERASED_AT))).then(Option.getOrUndefined)

    it("deletes the contact and clears or deletes its personal data everywhere, resolving to what it did", async () => {
      const seeded = await h().run(seedPerson)
      const { tenantId, ana, bob, files, emails, messages } = seeded
      const stored = h().stored

      const done = await erase(tenantId, ana.id)

      expect(done).toBeDefined()
      expect([...done!.conversation_ids].sort()).toEqual([seeded.chat.id, seeded.thread.id].sort())
      expect(done!.messages).toBe(4)
      expect(done!.emails).toBe(2)
      expect([...done!.blob_keys].sort()).toEqual([files.photo, files.emailFile, files.emailInline, files.replyUpload].map((f) => f.blob_key).sort())

      expect((await stored.contacts(tenantId)).map((c) => c.id)).toEqual([bob.id])

      const conversations = new Map((await stored.conversations(tenantId)).map((c) => [c.id, c]))
      expect(conversations.get(seeded.chat.id)).toEqual({ ...seeded.chat, status: "closed", closed_at: ERASED_AT, updated_at: ERASED_AT })
      expect(conversations.get(seeded.thread.id)).toEqual({ ...seeded.thread, subject: null, updated_at: ERASED_AT })
      expect(conversations.get(seeded.bobChat.id)).toEqual(seeded.bobChat)
      expect(conversations.get(seeded.bobThread.id)).toEqual(seeded.bobThread)

      const stored_messages = new Map((await stored.messages(tenantId)).map((m) => [m.id, m]))
      expect(stored_messages.get(messages.photoMessage.id)).toEqual({ ...messages.photoMessage, text: null, content: { erased: true } })
      expect(stored_messages.get(messages.failed.id)).toEqual({
        ...messages.failed,
        text: null,
        content: { erased: true },
        error: { code: 131047, title: "Re-engagement message", message: "Erased with the contact", details: null }
      })
      expect(stored_messages.get(messages.inboundEmailMessage.id)).toEqual({
        ...messages.inboundEmailMessage,
        text: null,
        content: { erased: true, email_message_id: emails.inboundEmail.id }
      })
      expect(stored_messages.get(messages.bobMessage.id)).toEqual(messages.bobMessage)
      expect(stored_messages.get(messages.bobEmailMessage.id)).toEqual(messages.bobEmailMessage)

      const erasedEmail = {
        subject: null,
        from: null,
        to: [],
        cc: [],
        reply_to: [],
        text_body: null,
        html_body: null,
        headers: [],
        references: [],
        in_reply_to: null,
        updated_at: ERASED_AT
      }
      const storedEmails = new Map((await stored.emailMessages(tenantId)).map((e) => [e.id, e]))
      expect(storedEmails.get(emails.inboundEmail.id)).toEqual({
        ...emails.inboundEmail,
        ...erasedEmail,
        message_id_header: `${emails.inboundEmail.id}@erased.invalid`
      })
      expect(storedEmails.get(emails.reply.id)).toEqual({
        ...emails.reply,
        ...erasedEmail,
        message_id_header: `${emails.reply.id}@erased.invalid`,
        error: "Erased with the contact"
      })
      expect(storedEmails.get(emails.bobEmail.id)).toEqual(emails.bobEmail)
      expect((await stored.emailAttachments(tenantId)).map((a) => [a.email_message_id, a.attachment_id])).toEqual([[emails.bobEmail.id, files.sharedUpload.id]])
      expect(await stored.inlineImages(tenantId)).toEqual([])

      expect((await stored.attachments(tenantId)).map((a) => a.id).sort()).toEqual([files.sharedUpload.id, files.bobPhoto.id, files.loose.id].sort())
      expect((await stored.attachmentSummaries(tenantId)).map((s) => s.attachment_id)).toEqual([files.bobPhoto.id])

      expect((await stored.listSubscriptions(tenantId)).map((s) => s.contact_id)).toEqual([bob.id])
      expect((await stored.marketingOptOuts(tenantId)).map((o) => o.contact_id)).toEqual([bob.id])
      expect((await stored.contactTags(tenantId)).map((t) => t.contact_id)).toEqual([bob.id])
      const sessions = new Map((await stored.flowSessions(tenantId)).map((s) => [s.id, s]))
      expect(sessions.get(seeded.sessions.anaSession.id)).toEqual({ ...seeded.sessions.anaSession, answers: null, writeback_result: null, last_error: null })
      expect(sessions.get(seeded.sessions.bobSession.id)).toEqual(seeded.sessions.bobSession)
    })

    it("resolves to none and changes nothing for an unknown contact, or one of another tenant", async () => {
      const seeded = await h().run(seedPerson)
      const { tenant: other } = await h().run(seedTenant)
      const before = {
        contacts: await h().stored.contacts(seeded.tenantId),
        messages: await h().stored.messages(seeded.tenantId),
        attachments: await h().stored.attachments(seeded.tenantId),
        emails: await h().stored.emailMessages(seeded.tenantId),
        subscriptions: await h().stored.listSubscriptions(seeded.tenantId)
      }

      expect(await erase(other.id, seeded.ana.id)).toBeUndefined()
      expect(await erase(seeded.tenantId, globalThis.crypto.randomUUID())).toBeUndefined()

      expect({
        contacts: await h().stored.contacts(seeded.tenantId),
        messages: await h().stored.messages(seeded.tenantId),
        attachments: await h().stored.attachments(seeded.tenantId),
        emails: await h().stored.emailMessages(seeded.tenantId),
        subscriptions: await h().stored.listSubscriptions(seeded.tenantId)
      }).toEqual(before)
    })

    it("erases a contact with no conversations at all, and a second erasure finds nothing", async () => {
      const { tenant } = await h().run(seedTenant)
      const lone = contactRecord(tenant.id, { name: "Lone" })
      await h().run(ContactStore.use((s) => s.insert(lone)))

      expect(await erase(tenant.id, lone.id)).toEqual({ conversation_ids: [], messages: 0, emails: 0, blob_keys: [] })
      expect(await h().stored.contacts(tenant.id)).toEqual([])
      expect(await erase(tenant.id, lone.id)).toBeUndefined()
    })

    it("never deletes an upload a team chat message or an email carries, by id or by the prune", async () => {
      const { tenant } = await h().run(seedTenant)
      const old = "1999-12-30T00:00:00.000Z"
      const posted = attachmentRecord(tenant.id, { created_at: old })
      const emailed = attachmentRecord(tenant.id, { created_at: old })
      await h().run(AttachmentStore.use((s) => Effect.forEach([posted, emailed], (a) => s.insert(a), { discard: true })))
      const channel = teamChatChannelRecord(tenant.id)
      await h().run(TeamChatStore.use((s) =>
        Effect.gen(function*() {
          yield* s.insertChannel(channel, [])
          yield* s.insertMessage(teamChatMessageRecord(channel, { attachment_ids: [posted.id] }))
        })
      ))
      const thread = conversationRecord(tenant.id, { kind: "email" })
      const integration = emailIntegrationRecord(tenant.id)
      const email = emailMessageRecord(thread, integration.id)
      await h().run(EmailStore.use((s) =>
        Effect.gen(function*() {
          yield* s.insertIntegration(integration)
          yield* s.insertMessage(email)
          yield* s.insertAttachments([emailAttachmentRecord(tenant.id, email.id, 0, { attachment_id: emailed.id })])
        })
      ))

      for (const file of [posted, emailed]) {
        expect(await h().run(AttachmentStore.use((s) => s.deleteUnsent(tenant.id, file.id))))
          .toEqual({ _tag: "Sent", message_id: null, conversation_id: null })
      }
      expect(await h().run(AttachmentStore.use((s) => s.pruneUnsent("2000-01-01T00:00:00.000Z", 100)))).toEqual([])
      expect((await h().stored.attachments(tenant.id)).map((a) => a.id).sort()).toEqual([posted.id, emailed.id].sort())
    })
  }
})
