import { Effect, Option } from "effect"
import { describe, expect, it } from "vitest"
import type { AccountStore } from "../../src/ports/AccountStore.ts"
import {
  type EmailAttachmentRecord,
  type EmailIntegrationRecord,
  type EmailMessageRecord,
  EmailStore,
  type InlineImageRecord
} from "../../src/ports/EmailStore.ts"
import type { StorageError } from "../../src/ports/StorageError.ts"
import type { TenantStore } from "../../src/ports/TenantStore.ts"
import {
  conversationRecord,
  emailAttachmentRecord,
  emailIntegrationRecord,
  emailMessageRecord,
  inlineImageRecord,
  seedTenant
} from "./Fixtures.ts"
import { byId, makeSuite, type Suite, type UseHarness } from "./Harness.ts"

/** The tables the email suite checks writes in. */
type EmailTables = "emailIntegrations" | "emailMessages" | "emailAttachments" | "inlineImages"

type UseEmail = UseHarness<EmailStore | TenantStore | AccountStore, EmailTables>

/** An instant of the emails' day as stored, from `HH:MM`. */
const at = (time: string): string => `2026-11-26T${time}:00.000Z`

const newId = (): string => globalThis.crypto.randomUUID()

const insertIntegrations = (integrations: ReadonlyArray<EmailIntegrationRecord>) =>
  EmailStore.use((s) => Effect.forEach(integrations, (i) => s.insertIntegration(i), { discard: true }))

const insertMessages = (messages: ReadonlyArray<EmailMessageRecord>) =>
  EmailStore.use((s) => Effect.forEach(messages, (m) => s.insertMessage(m), { discard: true }))

const getIntegration = (h: UseEmail, tenantId: string, id: string) =>
  h().run(EmailStore.use((s) => s.getIntegration(tenantId, id))).then(Option.getOrUndefined)

const findForInbound = (h: UseEmail, id: string) =>
  h().run(EmailStore.use((s) => s.findIntegrationForInbound(id))).then(Option.getOrUndefined)

const listIntegrations = (h: UseEmail, tenantId: string) => h().run(EmailStore.use((s) => s.listIntegrations(tenantId)))

const getMessage = (h: UseEmail, tenantId: string, id: string) =>
  h().run(EmailStore.use((s) => s.getMessage(tenantId, id))).then(Option.getOrUndefined)

const listByConversation = (h: UseEmail, tenantId: string, conversationId: string) =>
  h().run(EmailStore.use((s) => s.listByConversation(tenantId, conversationId)))

/** The matches of a threading lookup, sorted by id: the port promises no order. */
const findByHeaders = (h: UseEmail, tenantId: string, integrationId: string, headers: ReadonlyArray<string>) =>
  h().run(EmailStore.use((s) => s.findByHeaders(tenantId, integrationId, headers))).then((found) => [...found].sort(byId))

const listAttachments = (h: UseEmail, tenantId: string, emailMessageIds: ReadonlyArray<string>) =>
  h().run(EmailStore.use((s) => s.listAttachments(tenantId, emailMessageIds)))

const getAttachment = (h: UseEmail, tenantId: string, id: string) =>
  h().run(EmailStore.use((s) => s.getAttachment(tenantId, id))).then(Option.getOrUndefined)

/** The inline images found, by attachment id: the port promises no order. */
const findInlineImages = (h: UseEmail, tenantId: string, attachmentIds: ReadonlyArray<string>) =>
  h().run(EmailStore.use((s) => s.findInlineImages(tenantId, attachmentIds))).then((found) =>
    [...found].sort(byAttachmentId)
  )

const byAttachmentId = (a: InlineImageRecord, b: InlineImageRecord) => a.attachment_id.localeCompare(b.attachment_id)

/** Files in the order `listAttachments` answers: by email, then position. */
const byEmailThenPosition = (a: EmailAttachmentRecord, b: EmailAttachmentRecord) =>
  a.email_message_id === b.email_message_id
    ? a.position - b.position
    : (a.email_message_id < b.email_message_id ? -1 : 1)

// What every adapter must report for a duplicate: the same reason and index name on every database.
const expectUniqueViolation = (error: StorageError, constraint: string) => {
  expect(error).toMatchObject({ _tag: "StorageError", reason: "UniqueViolation", constraint })
  expect(error.isRetryable).toBe(false)
}

/**
 * An email of `tenantId` sent from a mailbox in a thread of its own, with every field set: unicode,
 * several addresses, references and headers in order, a failure.
 */
const richOutbound = (tenantId: string): EmailMessageRecord =>
  emailMessageRecord(conversationRecord(tenantId, { kind: "email" }), newId(), {
    direction: "outbound",
    status: "failed",
    message_id_header: `${newId()}.zoë@mail.example.com`,
    in_reply_to: `${newId()}@sender.example.com`,
    references: [`${newId()}@a.example.com`, `${newId()}@b.example.com`, `ref-山田-${newId()}@c.example.com`],
    subject: "Re: Zoë's invoice 山田 🚀 \"quoted\" \\ back\nslash",
    from: { address: "support@mail.example.com", name: "Acme Support — Zoë" },
    to: [
      { address: "ada@example.com", name: "Ada Lovelace" },
      { address: "yamada@example.jp", name: "山田 太郎" }
    ],
    cc: [{ address: "billing@example.com", name: null }],
    reply_to: [{ address: "replies@mail.example.com", name: "Réponses" }],
    text_body: "Olá Zoë,\n\n> quoted line\n— Acme 🚀",
    html_body: "<p>Olá <b>Zoë</b> <img src=\"cid:logo@omni\"></p>",
    headers: [
      { name: "Received", value: "from a.example.com by mx.example.com" },
      { name: "Received", value: "from b.example.com by a.example.com" },
      { name: "Subject", value: "Re: Zoë's invoice 山田 🚀" },
      { name: "X-Empty", value: "" }
    ],
    error: "550 5.1.1 mailbox unavailable: «ada@example.com»",
    sent_at: "2026-11-26T10:15:30.123Z",
    created_at: "2026-11-26T10:15:29.999Z",
    updated_at: "2026-11-26T10:15:31.001Z"
  })

// Two tenants, each with a mailbox of the same address, an email in a thread and a file of it.
const twoTenants = Effect.gen(function*() {
  const a = (yield* seedTenant).tenant
  const b = (yield* seedTenant).tenant
  const integrationOfA = emailIntegrationRecord(a.id)
  const integrationOfB = emailIntegrationRecord(b.id, { address: integrationOfA.address, display_name: "B" })
  yield* insertIntegrations([integrationOfA, integrationOfB])
  const threadOfA = conversationRecord(a.id, { channel_id: integrationOfA.id, kind: "email" })
  const threadOfB = conversationRecord(b.id, { channel_id: integrationOfB.id, kind: "email" })
  const emailOfA = emailMessageRecord(threadOfA, integrationOfA.id)
  const emailOfB = emailMessageRecord(threadOfB, integrationOfB.id, { message_id_header: emailOfA.message_id_header })
  yield* insertMessages([emailOfA, emailOfB])
  const fileOfA = emailAttachmentRecord(a.id, emailOfA.id, 0)
  const fileOfB = emailAttachmentRecord(b.id, emailOfB.id, 0)
  const imageOfA = inlineImageRecord(a.id)
  const imageOfB = inlineImageRecord(b.id)
  yield* EmailStore.use((s) =>
    Effect.all([
      s.insertAttachments([fileOfA]),
      s.insertAttachments([fileOfB]),
      s.insertInlineImage(imageOfA),
      s.insertInlineImage(imageOfB)
    ], { discard: true })
  )
  return {
    a,
    b,
    integrationOfA,
    integrationOfB,
    threadOfA,
    threadOfB,
    emailOfA,
    emailOfB,
    fileOfA,
    fileOfB,
    imageOfA,
    imageOfB
  }
})

/**
 * EmailStore: every field of integrations, emails, their files and inline images round-trips; one
 * mailbox per address in a tenant; an email update replaces; a thread's emails list in the order
 * stored; a reply's lookup matches only its mailbox; files list by email and position; the inbound
 * route finds a mailbox in any tenant, and nothing else reaches another tenant's. Needs TenantStore
 * and AccountStore for the tenants rows belong to.
 */
export const emailStoreSuite: Suite<EmailStore | TenantStore | AccountStore, EmailTables> = makeSuite({
  name: "EmailStore",
  tables: ["emailIntegrations", "emailMessages", "emailAttachments", "inlineImages"],
  tests: (h) => {
    describe("integrations", () => {
      it("stores every field, with a unicode name, and reads it back unchanged by id, for inbound mail and listed", async () => {
        const { tenant } = await h().run(seedTenant)
        const integration = emailIntegrationRecord(tenant.id, {
          address: `zoë.山田-${newId()}@mail.example.com`,
          display_name: "Zoë's Support 山田 🚀 \"quoted\" \\ back\nslash",
          created_at: "2026-11-26T10:15:30.123Z",
          updated_at: "2026-11-26T11:00:00.001Z"
        })
        await h().run(insertIntegrations([integration]))

        expect(await h().stored.emailIntegrations(tenant.id)).toEqual([integration])
        expect(await getIntegration(h, tenant.id, integration.id)).toEqual(integration)
        expect(await findForInbound(h, integration.id)).toEqual(integration)
        expect(await listIntegrations(h, tenant.id)).toEqual([integration])
      })

      it("stores a disabled integration with no display name and no update, and reads it back unchanged", async () => {
        const { tenant } = await h().run(seedTenant)
        const integration = emailIntegrationRecord(tenant.id, { display_name: null, status: "disabled" })
        await h().run(insertIntegrations([integration]))

        expect(await h().stored.emailIntegrations(tenant.id)).toEqual([integration])
        expect(await getIntegration(h, tenant.id, integration.id)).toEqual(integration)
        expect(await findForInbound(h, integration.id)).toEqual(integration)
      })

      it("finds no integration for an unknown id, in the tenant or for inbound mail, and lists none for a tenant without", async () => {
        const { tenant } = await h().run(seedTenant)
        expect(await getIntegration(h, tenant.id, newId())).toBeUndefined()
        expect(await findForInbound(h, newId())).toBeUndefined()
        expect(await listIntegrations(h, tenant.id)).toEqual([])
      })

      it("lists the tenant's integrations oldest first", async () => {
        const { tenant } = await h().run(seedTenant)
        const middle = emailIntegrationRecord(tenant.id, { created_at: at("10:01") })
        const newest = emailIntegrationRecord(tenant.id, { created_at: at("10:02") })
        const oldest = emailIntegrationRecord(tenant.id, { created_at: at("10:00") })
        await h().run(insertIntegrations([middle, newest, oldest]))

        expect(await listIntegrations(h, tenant.id)).toEqual([oldest, middle, newest])
      })

      it("refuses a second integration of an address in the tenant with UniqueViolation naming email_integrations_tenant_address_unique", async () => {
        const { tenant } = await h().run(seedTenant)
        const first = emailIntegrationRecord(tenant.id)
        await h().run(insertIntegrations([first]))

        const second = emailIntegrationRecord(tenant.id, { address: first.address, display_name: "Second" })
        expectUniqueViolation(
          await h().run(Effect.flip(insertIntegrations([second]))),
          "email_integrations_tenant_address_unique"
        )
        expect(await h().stored.emailIntegrations(tenant.id)).toEqual([first])
        expect(await findForInbound(h, second.id)).toBeUndefined()
      })

      it("takes the same address in another tenant", async () => {
        const { tenant } = await h().run(seedTenant)
        const other = (await h().run(seedTenant)).tenant
        const mine = emailIntegrationRecord(tenant.id)
        const theirs = emailIntegrationRecord(other.id, { address: mine.address })
        await h().run(insertIntegrations([mine, theirs]))

        expect(await listIntegrations(h, tenant.id)).toEqual([mine])
        expect(await listIntegrations(h, other.id)).toEqual([theirs])
      })
    })

    describe("messages", () => {
      it("stores every field, with unicode, several addresses and ordered headers, and reads it back unchanged", async () => {
        const { tenant } = await h().run(seedTenant)
        const message = richOutbound(tenant.id)
        await h().run(insertMessages([message]))

        expect(await h().stored.emailMessages(tenant.id)).toEqual([message])
        expect(await getMessage(h, tenant.id, message.id)).toEqual(message)
        expect(await listByConversation(h, tenant.id, message.conversation_id)).toEqual([message])
        expect(await findByHeaders(h, tenant.id, message.integration_id, [message.message_id_header])).toEqual([message])
      })

      it("stores an email with no sender, subject, bodies, thread, error or date and empty lists, and reads it back unchanged", async () => {
        const { tenant } = await h().run(seedTenant)
        const message = emailMessageRecord(conversationRecord(tenant.id, { kind: "email" }), newId(), {
          direction: "outbound",
          status: "pending",
          in_reply_to: null,
          references: [],
          subject: null,
          from: null,
          to: [],
          cc: [],
          reply_to: [],
          text_body: null,
          html_body: null,
          headers: [],
          error: null,
          sent_at: null,
          updated_at: null
        })
        await h().run(insertMessages([message]))

        expect(await h().stored.emailMessages(tenant.id)).toEqual([message])
        expect(await getMessage(h, tenant.id, message.id)).toEqual(message)
      })

      it("finds no email for an unknown id, and lists none for an unknown conversation", async () => {
        const { tenant } = await h().run(seedTenant)
        expect(await getMessage(h, tenant.id, newId())).toBeUndefined()
        expect(await listByConversation(h, tenant.id, newId())).toEqual([])
      })

      it("replaces every changeable field on update and reports that it did", async () => {
        const { tenant } = await h().run(seedTenant)
        const before = emailMessageRecord(conversationRecord(tenant.id, { kind: "email" }), newId(), {
          direction: "outbound",
          status: "pending",
          sent_at: null
        })
        await h().run(insertMessages([before]))
        const after: EmailMessageRecord = { ...richOutbound(tenant.id), id: before.id, created_at: before.created_at }

        expect(await h().run(EmailStore.use((s) => s.updateMessage(tenant.id, after)))).toBe(true)
        expect(await h().stored.emailMessages(tenant.id)).toEqual([after])
        expect(await getMessage(h, tenant.id, before.id)).toEqual(after)
        expect(await listByConversation(h, tenant.id, before.conversation_id)).toEqual([])
        expect(await listByConversation(h, tenant.id, after.conversation_id)).toEqual([after])
      })

      it("updates nothing and reports false for an unknown email", async () => {
        const { tenant } = await h().run(seedTenant)
        const existing = emailMessageRecord(conversationRecord(tenant.id, { kind: "email" }), newId())
        await h().run(insertMessages([existing]))

        const unknown = emailMessageRecord(conversationRecord(tenant.id, { kind: "email" }), existing.integration_id)
        expect(await h().run(EmailStore.use((s) => s.updateMessage(tenant.id, unknown)))).toBe(false)
        expect(await h().stored.emailMessages(tenant.id)).toEqual([existing])
      })

      it("lists a thread's emails by creation, those created at the same instant in the order stored, and no other thread's", async () => {
        const { tenant } = await h().run(seedTenant)
        const thread = conversationRecord(tenant.id, { kind: "email" })
        const integrationId = newId()
        const later = emailMessageRecord(thread, integrationId, { created_at: at("10:05") })
        // Ids are random, so the order stored is not the order of ids.
        const twins = Array.from({ length: 6 }, () => emailMessageRecord(thread, integrationId, { created_at: at("10:01") }))
        const earliest = emailMessageRecord(thread, integrationId, { created_at: at("10:00") })
        const elsewhere = emailMessageRecord(conversationRecord(tenant.id, { kind: "email" }), integrationId, { created_at: at("10:02") })
        await h().run(insertMessages([later, twins[0]!, elsewhere, twins[1]!, earliest, ...twins.slice(2)]))

        expect(await listByConversation(h, tenant.id, thread.id)).toEqual([earliest, ...twins, later])
        expect(await listByConversation(h, tenant.id, elsewhere.conversation_id)).toEqual([elsewhere])
      })

      it("finds a reply's earlier emails by their Message-ID, only on the given integration, and none for no or unknown ids", async () => {
        const { tenant } = await h().run(seedTenant)
        const integrationId = newId()
        const otherIntegrationId = newId()
        const thread = conversationRecord(tenant.id, { kind: "email" })
        const first = emailMessageRecord(thread, integrationId, { created_at: at("10:00") })
        const second = emailMessageRecord(thread, integrationId, { created_at: at("10:01"), in_reply_to: first.message_id_header })
        const unrelated = emailMessageRecord(thread, integrationId, { created_at: at("10:02") })
        // The same Message-ID received on another mailbox of the tenant.
        const onOtherIntegration = emailMessageRecord(conversationRecord(tenant.id, { kind: "email" }), otherIntegrationId, {
          message_id_header: first.message_id_header
        })
        // A sender reusing a Message-ID: both emails match.
        const reused = emailMessageRecord(thread, integrationId, { message_id_header: second.message_id_header })
        await h().run(insertMessages([first, second, unrelated, onOtherIntegration, reused]))

        expect(await findByHeaders(h, tenant.id, integrationId, [first.message_id_header])).toEqual([first])
        expect(await findByHeaders(h, tenant.id, integrationId, [first.message_id_header, second.message_id_header, "nope@x"]))
          .toEqual([first, second, reused].sort(byId))
        expect(await findByHeaders(h, tenant.id, otherIntegrationId, [first.message_id_header, second.message_id_header]))
          .toEqual([onOtherIntegration])
        expect(await findByHeaders(h, tenant.id, newId(), [first.message_id_header])).toEqual([])
        expect(await findByHeaders(h, tenant.id, integrationId, [`${newId()}@sender.example.com`])).toEqual([])
        expect(await findByHeaders(h, tenant.id, integrationId, [])).toEqual([])
      })
    })

    describe("attachments", () => {
      it("stores every field of a batch of files, inline ones with their content id, and reads them back unchanged", async () => {
        const { tenant } = await h().run(seedTenant)
        const emailId = newId()
        const files = [
          emailAttachmentRecord(tenant.id, emailId, 0, {
            filename: "Relatório de Zoë 山田 🚀 \"final\".pdf",
            file_size: 5_000_000_123,
            created_at: "2026-11-26T10:15:30.123Z"
          }),
          emailAttachmentRecord(tenant.id, emailId, 1, {
            filename: "logo.png",
            content_type: "image/png",
            file_size: 0,
            is_inline: true,
            content_id: "logo.ñ@omni"
          })
        ]
        await h().run(EmailStore.use((s) => s.insertAttachments(files)))

        expect(await h().stored.emailAttachments(tenant.id)).toEqual([...files].sort(byId))
        expect(await getAttachment(h, tenant.id, files[0]!.id)).toEqual(files[0])
        expect(await getAttachment(h, tenant.id, files[1]!.id)).toEqual(files[1])
        expect(await listAttachments(h, tenant.id, [emailId])).toEqual(files)
      })

      it("stores nothing for an empty batch, and finds no file for an unknown id", async () => {
        const { tenant } = await h().run(seedTenant)
        await h().run(EmailStore.use((s) => s.insertAttachments([])))

        expect(await h().stored.emailAttachments(tenant.id)).toEqual([])
        expect(await getAttachment(h, tenant.id, newId())).toBeUndefined()
        expect(await listAttachments(h, tenant.id, [newId()])).toEqual([])
        expect(await listAttachments(h, tenant.id, [])).toEqual([])
      })

      it("stores none of a batch when one of its files cannot be stored", async () => {
        const { tenant } = await h().run(seedTenant)
        const emailId = newId()
        const stored = emailAttachmentRecord(tenant.id, emailId, 0)
        await h().run(EmailStore.use((s) => s.insertAttachments([stored])))

        const batch = [emailAttachmentRecord(tenant.id, emailId, 1), { ...emailAttachmentRecord(tenant.id, emailId, 2), id: stored.id }]
        const error = await h().run(Effect.flip(EmailStore.use((s) => s.insertAttachments(batch))))
        expect(error).toMatchObject({ _tag: "StorageError", reason: "UniqueViolation" })
        expect(await h().stored.emailAttachments(tenant.id)).toEqual([stored])
      })

      it("lists the files of the given emails by email and then position, whatever order they were stored in", async () => {
        const { tenant } = await h().run(seedTenant)
        const [one, two, three] = [newId(), newId(), newId()]
        const files = [
          emailAttachmentRecord(tenant.id, two!, 2),
          emailAttachmentRecord(tenant.id, one!, 1),
          emailAttachmentRecord(tenant.id, three!, 0),
          emailAttachmentRecord(tenant.id, two!, 0, { is_inline: true, content_id: "a@omni" }),
          emailAttachmentRecord(tenant.id, one!, 0),
          emailAttachmentRecord(tenant.id, two!, 1)
        ]
        await h().run(EmailStore.use((s) => Effect.andThen(s.insertAttachments(files.slice(0, 3)), s.insertAttachments(files.slice(3)))))

        const ofOneAndTwo = files.filter((f) => f.email_message_id !== three).sort(byEmailThenPosition)
        expect(await listAttachments(h, tenant.id, [two!, one!])).toEqual(ofOneAndTwo)
        expect(await listAttachments(h, tenant.id, [two!])).toEqual(files.filter((f) => f.email_message_id === two).sort(byEmailThenPosition))
        expect(await listAttachments(h, tenant.id, [one!, two!, three!])).toEqual([...files].sort(byEmailThenPosition))
      })
    })

    describe("inline images", () => {
      it("stores an inline image upload and finds it among the attachment ids asked, with none for the others", async () => {
        const { tenant } = await h().run(seedTenant)
        const logo = inlineImageRecord(tenant.id, { content_id: "logo.山田@omni", created_at: "2026-11-26T10:15:30.123Z" })
        const banner = inlineImageRecord(tenant.id)
        await h().run(EmailStore.use((s) => Effect.andThen(s.insertInlineImage(logo), s.insertInlineImage(banner))))

        expect(await h().stored.inlineImages(tenant.id)).toEqual([logo, banner].sort(byAttachmentId))
        expect(await findInlineImages(h, tenant.id, [logo.attachment_id])).toEqual([logo])
        expect(await findInlineImages(h, tenant.id, [newId(), banner.attachment_id, logo.attachment_id]))
          .toEqual([logo, banner].sort(byAttachmentId))
        expect(await findInlineImages(h, tenant.id, [newId()])).toEqual([])
        expect(await findInlineImages(h, tenant.id, [])).toEqual([])
      })

      it("refuses a second inline image of an attachment with UniqueViolation naming email_inline_images_pkey", async () => {
        const { tenant } = await h().run(seedTenant)
        const image = inlineImageRecord(tenant.id)
        await h().run(EmailStore.use((s) => s.insertInlineImage(image)))

        const again = { ...image, content_id: "other@omni" }
        expectUniqueViolation(await h().run(Effect.flip(EmailStore.use((s) => s.insertInlineImage(again)))), "email_inline_images_pkey")
        expect(await h().stored.inlineImages(tenant.id)).toEqual([image])
      })
    })

    describe("tenant isolation", () => {
      it("returns nothing of another tenant's integrations, by id or listing, while inbound mail finds each tenant's own", async () => {
        const { a, b, integrationOfA, integrationOfB } = await h().run(twoTenants)

        expect(await getIntegration(h, a.id, integrationOfB.id)).toBeUndefined()
        expect(await getIntegration(h, b.id, integrationOfA.id)).toBeUndefined()
        expect(await listIntegrations(h, a.id)).toEqual([integrationOfA])
        expect(await listIntegrations(h, b.id)).toEqual([integrationOfB])
        expect(await findForInbound(h, integrationOfA.id)).toEqual(integrationOfA)
        expect(await findForInbound(h, integrationOfB.id)).toEqual(integrationOfB)
      })

      it("returns nothing of another tenant's emails, by id, thread or Message-ID", async () => {
        const { a, b, emailOfA, emailOfB, integrationOfB, threadOfB } = await h().run(twoTenants)

        expect(await getMessage(h, a.id, emailOfB.id)).toBeUndefined()
        expect(await listByConversation(h, a.id, threadOfB.id)).toEqual([])
        expect(await findByHeaders(h, a.id, integrationOfB.id, [emailOfB.message_id_header])).toEqual([])
        // Both tenants hold an email of the same Message-ID: each finds its own.
        expect(await findByHeaders(h, a.id, emailOfA.integration_id, [emailOfA.message_id_header])).toEqual([emailOfA])
        expect(await findByHeaders(h, b.id, integrationOfB.id, [emailOfA.message_id_header])).toEqual([emailOfB])
      })

      it("refuses to update another tenant's email and leaves it unchanged", async () => {
        const { a, b, emailOfB } = await h().run(twoTenants)
        const hijack: EmailMessageRecord = { ...emailOfB, status: "failed", subject: "Hijacked", error: "hijacked" }

        expect(await h().run(EmailStore.use((s) => s.updateMessage(a.id, hijack)))).toBe(false)
        expect(await h().run(EmailStore.use((s) => s.updateMessage(a.id, { ...hijack, tenant_id: a.id })))).toBe(false)
        expect(await h().stored.emailMessages(b.id)).toEqual([emailOfB])
        expect(await getMessage(h, b.id, emailOfB.id)).toEqual(emailOfB)
      })

      it("returns nothing of another tenant's files or inline images", async () => {
        const { a, b, emailOfA, emailOfB, fileOfA, fileOfB, imageOfA, imageOfB } = await h().run(twoTenants)

        expect(await getAttachment(h, a.id, fileOfB.id)).toBeUndefined()
        expect(await listAttachments(h, a.id, [emailOfA.id, emailOfB.id])).toEqual([fileOfA])
        expect(await listAttachments(h, b.id, [emailOfA.id, emailOfB.id])).toEqual([fileOfB])
        expect(await findInlineImages(h, a.id, [imageOfA.attachment_id, imageOfB.attachment_id])).toEqual([imageOfA])
        expect(await findInlineImages(h, b.id, [imageOfA.attachment_id, imageOfB.attachment_id])).toEqual([imageOfB])
        expect(await h().stored.emailAttachments(b.id)).toEqual([fileOfB])
        expect(await h().stored.inlineImages(b.id)).toEqual([imageOfB])
      })
    })
  }
})
