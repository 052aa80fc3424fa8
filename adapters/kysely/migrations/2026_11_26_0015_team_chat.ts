import { type Kysely, sql } from "kysely"

/**
 * Team chat, and API keys bound to a user. `api_keys.user_id` (nullable) names the user a bound key
 * acts as; `api_keys_tenant_user_idx` finds the users holding keys in a tenant.
 *
 * A channel (`kind` `channel` or `dm`) belongs to the tenant it was made in; `team_chat_channel_tenants`
 * holds one row per tenant that sees it (its own and each it is shared with), so every read starts
 * from the caller's tenant through `team_chat_channel_tenants_tenant_idx`. A direct message carries
 * `dm_key` (its participants' sorted ids), unique per tenant (`team_chat_channels_tenant_dm_unique`;
 * null for channels, which both dialects keep distinct). Members are one row per user and channel,
 * with the tenant they were admitted through. Messages keep the order they were stored in: `seq`
 * (a `bigserial`) on PostgreSQL, `rowid` on SQLite; a reply names its top-level message in
 * `parent_message_id`. A file is posted once in team chat (`team_chat_message_attachments_attachment_unique`),
 * `position` keeping a message's files in the order given; `tenant_id` is the file's tenant.
 * `has_external_guests` is 0/1. Never edit once landed.
 */
export const up = async (db: Kysely<unknown>, dialect: "sqlite" | "postgres"): Promise<void> => {
  await db.schema.alterTable("api_keys").addColumn("user_id", "text").execute()
  await db.schema.createIndex("api_keys_tenant_user_idx").on("api_keys").columns(["tenant_id", "user_id"]).execute()

  await db.schema.createTable("team_chat_channels")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("tenant_id", "text", (c) => c.notNull().references("tenants.id"))
    .addColumn("kind", "text", (c) => c.notNull())
    .addColumn("name", "text")
    .addColumn("has_external_guests", "integer", (c) => c.notNull())
    .addColumn("dm_key", "text")
    .addColumn("created_by", "text", (c) => c.notNull())
    .addColumn("created_at", "text", (c) => c.notNull())
    .execute()
  await db.schema.createIndex("team_chat_channels_tenant_dm_unique").on("team_chat_channels")
    .columns(["tenant_id", "dm_key"]).unique().execute()

  await db.schema.createTable("team_chat_channel_tenants")
    .addColumn("channel_id", "text", (c) => c.notNull())
    .addColumn("tenant_id", "text", (c) => c.notNull().references("tenants.id"))
    .addPrimaryKeyConstraint("team_chat_channel_tenants_pkey", ["channel_id", "tenant_id"])
    .execute()
  await db.schema.createIndex("team_chat_channel_tenants_tenant_idx").on("team_chat_channel_tenants")
    .columns(["tenant_id", "channel_id"]).execute()

  await db.schema.createTable("team_chat_members")
    .addColumn("channel_id", "text", (c) => c.notNull())
    .addColumn("user_id", "text", (c) => c.notNull())
    .addColumn("tenant_id", "text", (c) => c.notNull().references("tenants.id"))
    .addColumn("joined_at", "text", (c) => c.notNull())
    .addPrimaryKeyConstraint("team_chat_members_pkey", ["channel_id", "user_id"])
    .execute()

  await db.schema.createTable("team_chat_messages")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("tenant_id", "text", (c) => c.notNull().references("tenants.id"))
    .addColumn("channel_id", "text", (c) => c.notNull())
    .addColumn("author_user_id", "text", (c) => c.notNull())
    .addColumn("text", "text", (c) => c.notNull())
    .addColumn("parent_message_id", "text")
    .addColumn("created_at", "text", (c) => c.notNull())
    .$call((t) => (dialect === "postgres" ? t.addColumn("seq", sql`bigserial`, (c) => c.notNull()) : t))
    .execute()
  await db.schema.createIndex("team_chat_messages_channel_created_idx").on("team_chat_messages")
    .columns(dialect === "postgres" ? ["channel_id", "created_at", "seq"] : ["channel_id", "created_at"])
    .execute()

  await db.schema.createTable("team_chat_message_attachments")
    .addColumn("message_id", "text", (c) => c.notNull())
    .addColumn("attachment_id", "text", (c) => c.notNull())
    .addColumn("tenant_id", "text", (c) => c.notNull().references("tenants.id"))
    .addColumn("position", "integer", (c) => c.notNull())
    .addPrimaryKeyConstraint("team_chat_message_attachments_pkey", ["message_id", "attachment_id"])
    .execute()
  await db.schema.createIndex("team_chat_message_attachments_attachment_unique").on("team_chat_message_attachments")
    .column("attachment_id").unique().execute()
}
