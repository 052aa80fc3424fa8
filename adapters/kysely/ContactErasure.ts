import { sql } from "kysely"
import type { ContactErasure } from "../../src/ports/ContactStore.ts"
import type { Db } from "./Database.ts"
import type { Dialect } from "./Migrations.ts"

/**
 * The SQL of `ContactStore.erase`: every table that holds a contact's personal data, cleared or
 * deleted in one transaction (the caller's). Rows are chosen through the contact's conversations
 * (`conversations_tenant_contact_idx`) and each table's tenant-led index by conversation, message or
 * email; nothing outside the tenant is read or written.
 */

const affected = (result: { readonly numUpdatedRows?: bigint; readonly numDeletedRows?: bigint }): number =>
  Number(result.numUpdatedRows ?? result.numDeletedRows ?? 0n)

/** What an erased error keeps: the operator's code and title, never the message (it may name the person). */
const ERASED_MESSAGE = "Erased with the contact"

// A message keeps only the link to its email (an id), marked erased.
const erasedContent = (dialect: Dialect) =>
  dialect === "postgres"
    ? sql<string>`CASE WHEN (content::json ->> 'email_message_id') IS NOT NULL
        THEN json_build_object('erased', true, 'email_message_id', content::json ->> 'email_message_id')::text
        ELSE '{"erased":true}' END`
    : sql<string>`CASE WHEN json_extract(content, '$.email_message_id') IS NOT NULL
        THEN json_object('erased', json('true'), 'email_message_id', json_extract(content, '$.email_message_id'))
        ELSE '{"erased":true}' END`

const erasedError = (dialect: Dialect) =>
  dialect === "postgres"
    ? sql<string | null>`CASE WHEN error IS NULL THEN NULL ELSE json_build_object(
        'code', error::json -> 'code', 'title', error::json -> 'title', 'message', CAST(${ERASED_MESSAGE} AS text), 'details', NULL)::text END`
    : sql<string | null>`CASE WHEN error IS NULL THEN NULL ELSE json_object(
        'code', json_extract(error, '$.code'), 'title', json_extract(error, '$.title'), 'message', CAST(${ERASED_MESSAGE} AS text), 'details', NULL) END`

const chunks = <A>(items: ReadonlyArray<A>, size: number): Array<ReadonlyArray<A>> =>
  Array.from({ length: Math.ceil(items.length / size) }, (_, i) => items.slice(i * size, (i + 1) * size))

/** Runs the erasure on `db` (a transaction); undefined when the tenant has no such contact. */
export const eraseContact = async (
  db: Db,
  dialect: Dialect,
  tenantId: string,
  contactId: string,
  at: string
): Promise<ContactErasure | undefined> => {
  const gone = await db.deleteFrom("contacts").where("tenant_id", "=", tenantId).where("id", "=", contactId)
    .returning("id").executeTakeFirst()
  if (gone === undefined) return undefined

  const conversations = db.selectFrom("conversations").select("id")
    .where("tenant_id", "=", tenantId).where("contact_id", "=", contactId)
  const conversationIds = (await conversations.execute()).map((row) => row.id)
  const messagesOf = db.selectFrom("messages").select("id")
    .where("tenant_id", "=", tenantId).where("conversation_id", "in", conversations)
  const emailsOf = db.selectFrom("email_messages").select("id")
    .where("tenant_id", "=", tenantId).where("conversation_id", "in", conversations)

  // The files of the contact's messages, but not one another conversation's email or a team chat
  // message also carries (an upload sent to several people stays theirs).
  const files = conversationIds.length === 0 ? [] : await db.selectFrom("attachments as a")
    .select(["a.id", "a.blob_key"])
    .where("a.tenant_id", "=", tenantId)
    .where("a.message_id", "in", messagesOf)
    .where((eb) =>
      eb.not(eb.exists(
        eb.selectFrom("email_attachments as ea").innerJoin("email_messages as em", "em.id", "ea.email_message_id")
          .select(sql.lit(1).as("one"))
          .whereRef("ea.attachment_id", "=", "a.id")
          .where("ea.tenant_id", "=", tenantId)
          .where("em.conversation_id", "not in", conversations)
      ))
    )
    .where((eb) =>
      eb.not(eb.exists(
        eb.selectFrom("team_chat_message_attachments as t").select(sql.lit(1).as("one")).whereRef("t.attachment_id", "=", "a.id")
      ))
    )
    .execute()
  for (const part of chunks(files.map((file) => file.id), 500)) {
    await db.deleteFrom("attachment_summaries").where("tenant_id", "=", tenantId).where("attachment_id", "in", [...part]).execute()
    await db.deleteFrom("email_inline_images").where("tenant_id", "=", tenantId).where("attachment_id", "in", [...part]).execute()
    await db.deleteFrom("attachments").where("tenant_id", "=", tenantId).where("id", "in", [...part]).execute()
  }

  let messages = 0
  let emails = 0
  if (conversationIds.length > 0) {
    await db.deleteFrom("email_attachments").where("tenant_id", "=", tenantId).where("email_message_id", "in", emailsOf).execute()
    emails = affected(
      await db.updateTable("email_messages").set({
        subject: null,
        from_address: null,
        to_addresses: "[]",
        cc_addresses: "[]",
        reply_to_addresses: "[]",
        text_body: null,
        html_body: null,
        headers: "[]",
        reference_ids: "[]",
        in_reply_to: null,
        // Never matched by a reply again, and no trace of the sender's mail system.
        message_id_header: sql<string>`id || '@erased.invalid'`,
        error: sql<string | null>`CASE WHEN error IS NULL THEN NULL ELSE CAST(${ERASED_MESSAGE} AS text) END`,
        updated_at: at
      }).where("tenant_id", "=", tenantId).where("conversation_id", "in", conversations).executeTakeFirst()
    )
    messages = affected(
      await db.updateTable("messages").set({ text: null, content: erasedContent(dialect), error: erasedError(dialect) })
        .where("tenant_id", "=", tenantId).where("conversation_id", "in", conversations).executeTakeFirst()
    )
    await db.updateTable("conversations").set({
      subject: null,
      status: "closed",
      closed_at: sql<string>`COALESCE(closed_at, ${at})`,
      updated_at: at
    }).where("tenant_id", "=", tenantId).where("contact_id", "=", contactId).execute()
  }

  await db.updateTable("flow_sessions").set({ answers: null, writeback_result: null, last_error: null })
    .where("tenant_id", "=", tenantId)
    .where((eb) =>
      conversationIds.length === 0
        ? eb("contact_id", "=", contactId)
        : eb.or([eb("contact_id", "=", contactId), eb("conversation_id", "in", conversations)])
    )
    .execute()
  await db.deleteFrom("contact_tags").where("tenant_id", "=", tenantId).where("contact_id", "=", contactId).execute()
  await db.deleteFrom("list_subscriptions").where("tenant_id", "=", tenantId).where("contact_id", "=", contactId).execute()
  await db.deleteFrom("marketing_opt_outs").where("tenant_id", "=", tenantId).where("contact_id", "=", contactId).execute()

  return { conversation_ids: conversationIds, messages, emails, blob_keys: files.map((file) => file.blob_key) }
}
