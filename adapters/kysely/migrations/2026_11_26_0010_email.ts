import { type Kysely, sql } from "kysely"

/**
 * Email: a tenant's mailboxes (`email_integrations`, one per address in a tenant:
 * `email_integrations_tenant_address_unique`), its emails (`email_messages`; addresses, references and
 * headers as JSON text, in columns named apart from SQL's keywords: `reference_ids`, `from_address`,
 * `to_addresses`, `cc_addresses`, `reply_to_addresses`), their files (`email_attachments`) and the
 * images uploaded to be embedded in an HTML body (`email_inline_images`). Emails are listed in the
 * order they were stored, as messages are: `seq` (a `bigserial`) on PostgreSQL, `rowid` on SQLite.
 *
 * Conversations get a kind, `chat` for every one stored so far. Only chat conversations stay one open
 * per contact and channel: `conversations_open_unique` is recreated over open chat ones alone, as an
 * email thread is a conversation of its own and one contact may have several open on one mailbox.
 * Never edit once landed.
 */
export const up = async (db: Kysely<unknown>, dialect: "sqlite" | "postgres"): Promise<void> => {
  await db.schema.createTable("email_integrations")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("tenant_id", "text", (c) => c.notNull().references("tenants.id"))
    .addColumn("address", "text", (c) => c.notNull())
    .addColumn("display_name", "text")
    .addColumn("inbound_secret_hash", "text", (c) => c.notNull())
    .addColumn("status", "text", (c) => c.notNull())
    .addColumn("created_at", "text", (c) => c.notNull())
    .addColumn("updated_at", "text")
    .execute()
  await db.schema.createIndex("email_integrations_tenant_address_unique").on("email_integrations")
    .columns(["tenant_id", "address"]).unique().execute()

  await db.schema.createTable("email_messages")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("tenant_id", "text", (c) => c.notNull().references("tenants.id"))
    .addColumn("integration_id", "text", (c) => c.notNull())
    .addColumn("conversation_id", "text", (c) => c.notNull())
    .addColumn("message_id", "text", (c) => c.notNull())
    .addColumn("direction", "text", (c) => c.notNull())
    .addColumn("status", "text", (c) => c.notNull())
    .addColumn("message_id_header", "text", (c) => c.notNull())
    .addColumn("in_reply_to", "text")
    .addColumn("reference_ids", "text", (c) => c.notNull())
    .addColumn("subject", "text")
    .addColumn("from_address", "text")
    .addColumn("to_addresses", "text", (c) => c.notNull())
    .addColumn("cc_addresses", "text", (c) => c.notNull())
    .addColumn("reply_to_addresses", "text", (c) => c.notNull())
    .addColumn("text_body", "text")
    .addColumn("html_body", "text")
    .addColumn("headers", "text", (c) => c.notNull())
    .addColumn("error", "text")
    .addColumn("sent_at", "text")
    .addColumn("created_at", "text", (c) => c.notNull())
    .addColumn("updated_at", "text")
    .$call((t) => (dialect === "postgres" ? t.addColumn("seq", sql`bigserial`, (c) => c.notNull()) : t))
    .execute()
  await db.schema.createIndex("email_messages_conversation_created_idx").on("email_messages")
    .columns(dialect === "postgres" ? ["tenant_id", "conversation_id", "created_at", "seq"] : ["tenant_id", "conversation_id", "created_at"])
    .execute()
  // A reply's threading lookup; not unique, as a sender may reuse a Message-ID.
  await db.schema.createIndex("email_messages_integration_header_idx").on("email_messages")
    .columns(["tenant_id", "integration_id", "message_id_header"]).execute()

  await db.schema.createTable("email_attachments")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("tenant_id", "text", (c) => c.notNull().references("tenants.id"))
    .addColumn("email_message_id", "text", (c) => c.notNull())
    .addColumn("attachment_id", "text", (c) => c.notNull())
    .addColumn("filename", "text", (c) => c.notNull())
    .addColumn("content_type", "text", (c) => c.notNull())
    .addColumn("file_size", "bigint", (c) => c.notNull())
    .addColumn("is_inline", "integer", (c) => c.notNull())
    .addColumn("content_id", "text")
    .addColumn("position", "integer", (c) => c.notNull())
    .addColumn("created_at", "text", (c) => c.notNull())
    .execute()
  await db.schema.createIndex("email_attachments_message_position_idx").on("email_attachments")
    .columns(["tenant_id", "email_message_id", "position"]).execute()

  await db.schema.createTable("email_inline_images")
    .addColumn("attachment_id", "text", (c) => c.primaryKey())
    .addColumn("tenant_id", "text", (c) => c.notNull().references("tenants.id"))
    .addColumn("content_id", "text", (c) => c.notNull())
    .addColumn("created_at", "text", (c) => c.notNull())
    .execute()

  await sql`ALTER TABLE conversations ADD COLUMN kind text NOT NULL DEFAULT 'chat'`.execute(db)
  await db.schema.dropIndex("conversations_open_unique").execute()
  await db.schema.createIndex("conversations_open_unique").on("conversations")
    .columns(["tenant_id", "channel_id", "contact_id"]).unique()
    .where(sql.ref("status"), "=", sql.lit("open"))
    .where(sql.ref("kind"), "=", sql.lit("chat"))
    .execute()
}
