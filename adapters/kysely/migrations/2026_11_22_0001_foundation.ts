import { type Kysely, sql } from "kysely"

/** Users, billing accounts, tenants, API keys, contacts and the outbox. Never edit once landed. */
export const up = async (db: Kysely<unknown>, dialect: "sqlite" | "postgres"): Promise<void> => {
  await db.schema.createTable("users")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("email", "text", (c) => c.notNull())
    .addColumn("token_lookup", "text", (c) => c.notNull())
    .addColumn("token_hash", "text", (c) => c.notNull())
    .addColumn("created_at", "text", (c) => c.notNull())
    .execute()
  await db.schema.createTable("billing_accounts")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("owner_user_id", "text", (c) => c.notNull().references("users.id"))
    .addColumn("name", "text", (c) => c.notNull())
    .addColumn("created_at", "text", (c) => c.notNull())
    .execute()
  await db.schema.createIndex("billing_accounts_owner_idx").on("billing_accounts").column("owner_user_id").execute()
  await db.schema.createTable("tenants")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("billing_account_id", "text", (c) => c.notNull().references("billing_accounts.id"))
    .addColumn("name", "text", (c) => c.notNull())
    .addColumn("slug", "text", (c) => c.notNull())
    .addColumn("company_email", "text")
    .addColumn("support_email", "text")
    .addColumn("pricing_model_id", "text")
    .addColumn("is_trial", "integer", (c) => c.notNull())
    .addColumn("trial_ends_at", "text")
    .addColumn("is_active", "integer", (c) => c.notNull())
    .addColumn("subscription_tier", "text", (c) => c.notNull())
    .addColumn("ai_features_enabled", "integer", (c) => c.notNull())
    .addColumn("multi_agent_mode", "integer", (c) => c.notNull())
    .addColumn("auto_summarize_on_close", "text", (c) => c.notNull())
    .addColumn("auto_transcript_export_format", "text", (c) => c.notNull())
    .addColumn("created_at", "text", (c) => c.notNull())
    .addColumn("updated_at", "text")
    .execute()
  await db.schema.createIndex("tenants_billing_account_idx").on("tenants").column("billing_account_id").execute()
  await db.schema.createTable("api_keys")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("tenant_id", "text", (c) => c.notNull().references("tenants.id"))
    .addColumn("name", "text")
    .addColumn("lookup", "text", (c) => c.notNull())
    .addColumn("secret_hash", "text", (c) => c.notNull())
    .addColumn("prefix", "text", (c) => c.notNull())
    .addColumn("scopes", "text", (c) => c.notNull())
    .addColumn("is_parent", "integer", (c) => c.notNull())
    .addColumn("expires_at", "text")
    .addColumn("revoked_at", "text")
    .addColumn("created_at", "text", (c) => c.notNull())
    .execute()
  await db.schema.createTable("contacts")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("tenant_id", "text", (c) => c.notNull().references("tenants.id"))
    .addColumn("name", "text")
    .addColumn("phone", "text")
    .addColumn("email", "text")
    .addColumn("language", "text")
    .addColumn("custom_fields", "text", (c) => c.notNull())
    .addColumn("created_at", "text", (c) => c.notNull())
    .addColumn("updated_at", "text")
    .execute()
  await db.schema.createIndex("contacts_tenant_created_idx").on("contacts").columns(["tenant_id", "created_at", "id"]).execute()
  await db.schema.createTable("outbox_events")
    .addColumn("seq", dialect === "postgres" ? sql`bigserial` : "integer", (c) =>
      dialect === "postgres" ? c.primaryKey() : c.primaryKey().autoIncrement())
    .addColumn("id", "text", (c) => c.notNull())
    .addColumn("tenant_id", "text", (c) => c.notNull())
    .addColumn("type", "text", (c) => c.notNull())
    .addColumn("event_id", "text", (c) => c.notNull())
    .addColumn("created_at", "text", (c) => c.notNull())
    .addColumn("data", "text", (c) => c.notNull())
    .execute()
  await db.schema.createIndex("outbox_events_tenant_idx").on("outbox_events").columns(["tenant_id", "seq"]).execute()
  const unique: ReadonlyArray<readonly [string, string, ReadonlyArray<string>]> = [
    ["users_email_unique", "users", ["email"]],
    ["users_token_lookup_unique", "users", ["token_lookup"]],
    ["tenants_slug_unique", "tenants", ["slug"]],
    ["api_keys_lookup_unique", "api_keys", ["lookup"]],
    ["contacts_tenant_phone_unique", "contacts", ["tenant_id", "phone"]],
    ["contacts_tenant_email_unique", "contacts", ["tenant_id", "email"]],
    ["outbox_events_id_unique", "outbox_events", ["id"]]
  ]
  for (const [name, table, columns] of unique) {
    await db.schema.createIndex(name).on(table).columns([...columns]).unique().execute()
  }
}
