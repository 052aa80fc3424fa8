import type { Kysely } from "kysely"

/**
 * Chat-app templates per channel (one per name and language: `chatapp_templates_channel_name_unique`,
 * which also makes two identical adoptions create one), copies of the operator's template library per
 * business account and query, and the last known sending limit of each chat-app channel. Never edit
 * once landed.
 */
export const up = async (db: Kysely<unknown>, _dialect: "sqlite" | "postgres"): Promise<void> => {
  await db.schema.createTable("chatapp_templates")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("tenant_id", "text", (c) => c.notNull().references("tenants.id"))
    .addColumn("channel_id", "text", (c) => c.notNull())
    .addColumn("name", "text", (c) => c.notNull())
    .addColumn("language", "text", (c) => c.notNull())
    .addColumn("category", "text", (c) => c.notNull())
    .addColumn("status", "text", (c) => c.notNull())
    .addColumn("status_reason", "text")
    .addColumn("external_id", "text")
    .addColumn("library_template_name", "text")
    .addColumn("components", "text", (c) => c.notNull())
    .addColumn("attempt_id", "text")
    .addColumn("created_at", "text", (c) => c.notNull())
    .addColumn("updated_at", "text")
    .execute()
  await db.schema.createIndex("chatapp_templates_channel_name_unique").on("chatapp_templates")
    .columns(["tenant_id", "channel_id", "name", "language"]).unique().execute()
  await db.schema.createIndex("chatapp_templates_tenant_created_idx").on("chatapp_templates")
    .columns(["tenant_id", "created_at", "id"]).execute()
  await db.schema.createIndex("chatapp_templates_external_idx").on("chatapp_templates").column("external_id").execute()

  await db.schema.createTable("library_cache")
    .addColumn("business_account_id", "text", (c) => c.notNull())
    .addColumn("query_key", "text", (c) => c.notNull())
    .addColumn("entries", "text", (c) => c.notNull())
    .addColumn("fetched_at", "text", (c) => c.notNull())
    .addPrimaryKeyConstraint("library_cache_pkey", ["business_account_id", "query_key"])
    .execute()
  await db.schema.createIndex("library_cache_fetched_idx").on("library_cache").column("fetched_at").execute()

  await db.schema.createTable("sending_limits")
    .addColumn("tenant_id", "text", (c) => c.notNull().references("tenants.id"))
    .addColumn("channel_id", "text", (c) => c.notNull())
    .addColumn("messaging_limit_tier", "text")
    .addColumn("quality_rating", "text")
    .addColumn("throughput_level", "text")
    .addColumn("phone_status", "text")
    .addColumn("source", "text", (c) => c.notNull())
    .addColumn("updated_at", "text", (c) => c.notNull())
    .addPrimaryKeyConstraint("sending_limits_pkey", ["tenant_id", "channel_id"])
    .execute()
}
