import { type Kysely, sql } from "kysely"

/**
 * Lists, their subscriptions and marketing opt-outs. Lists are deleted softly (`deleted_at`), so their
 * slug is unique among a tenant's live lists only (`lists_tenant_slug_unique`), as is the default
 * (`lists_tenant_default_unique`: at most one live list of a tenant with `is_default`); `filters` is
 * JSON text. A subscription is one row per list and contact, kept when the contact unsubscribes;
 * `list_subscriptions_tenant_list_status_idx` pages a list's subscribed contacts by contact id. An
 * opt-out is one row per tenant, contact and channel; `channel_key` holds the channel id, or '' for
 * every channel, since a primary key column cannot be null on PostgreSQL. Never edit once landed.
 */
export const up = async (db: Kysely<unknown>, _dialect: "sqlite" | "postgres"): Promise<void> => {
  await db.schema.createTable("lists")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("tenant_id", "text", (c) => c.notNull().references("tenants.id"))
    .addColumn("name", "text", (c) => c.notNull())
    .addColumn("slug", "text", (c) => c.notNull())
    .addColumn("is_default", "integer", (c) => c.notNull())
    .addColumn("type", "text", (c) => c.notNull())
    .addColumn("filters", "text")
    .addColumn("welcome_message", "text")
    .addColumn("created_at", "text", (c) => c.notNull())
    .addColumn("updated_at", "text")
    .addColumn("deleted_at", "text")
    .execute()
  await db.schema.createIndex("lists_tenant_slug_unique").on("lists")
    .columns(["tenant_id", "slug"]).unique()
    .where(sql.ref("deleted_at"), "is", null)
    .execute()
  await db.schema.createIndex("lists_tenant_default_unique").on("lists")
    .column("tenant_id").unique()
    .where(sql.ref("is_default"), "=", sql.lit(1))
    .where(sql.ref("deleted_at"), "is", null)
    .execute()
  await db.schema.createIndex("lists_tenant_created_idx").on("lists")
    .columns(["tenant_id", "created_at", "id"]).execute()

  await db.schema.createTable("list_subscriptions")
    .addColumn("tenant_id", "text", (c) => c.notNull().references("tenants.id"))
    .addColumn("list_id", "text", (c) => c.notNull())
    .addColumn("contact_id", "text", (c) => c.notNull())
    .addColumn("status", "text", (c) => c.notNull())
    .addColumn("optin_method", "text", (c) => c.notNull())
    .addColumn("optin_channel_id", "text")
    .addColumn("subscribed_at", "text", (c) => c.notNull())
    .addColumn("unsubscribed_at", "text")
    .addColumn("unsubscribe_method", "text")
    .addColumn("updated_at", "text", (c) => c.notNull())
    .addPrimaryKeyConstraint("list_subscriptions_pkey", ["list_id", "contact_id"])
    .execute()
  await db.schema.createIndex("list_subscriptions_tenant_contact_idx").on("list_subscriptions")
    .columns(["tenant_id", "contact_id"]).execute()
  await db.schema.createIndex("list_subscriptions_tenant_list_status_idx").on("list_subscriptions")
    .columns(["tenant_id", "list_id", "status", "contact_id"]).execute()

  await db.schema.createTable("marketing_opt_outs")
    .addColumn("tenant_id", "text", (c) => c.notNull().references("tenants.id"))
    .addColumn("contact_id", "text", (c) => c.notNull())
    .addColumn("channel_key", "text", (c) => c.notNull())
    .addColumn("source", "text", (c) => c.notNull())
    .addColumn("opted_out_at", "text", (c) => c.notNull())
    .addPrimaryKeyConstraint("marketing_opt_outs_pkey", ["tenant_id", "contact_id", "channel_key"])
    .execute()
}
