import type { Kysely } from "kysely"

/**
 * AI file summaries, the AI credit ledger and the summary request counters.
 *
 * `attachment_summaries`: one summary per attachment in a tenant (`attachment_summaries_tenant_attachment_unique`),
 * `sections` JSON text, `truncated` 0/1; `generation` counts generations and `lease_until` says when
 * a `pending` one may be taken over. `ai_credit_entries` is the ledger: grants positive, charges
 * negative; a charge's `charge_key` (`<summary id>:<generation>`) is unique in the tenant
 * (`ai_credit_entries_tenant_charge_unique`; NULL for grants, which both databases let repeat), so a
 * generation is charged once. `ai_credit_balances` keeps each tenant's sum and charged total, moved in
 * the same transaction as each entry, so reading a balance is one row. `summary_rate_counters` holds
 * one fixed-window count per tenant, key and window start, incremented by an upsert so processes on
 * one database share it. Never edit once landed.
 */
export const up = async (db: Kysely<unknown>, _dialect: "sqlite" | "postgres"): Promise<void> => {
  await db.schema.createTable("attachment_summaries")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("tenant_id", "text", (c) => c.notNull().references("tenants.id"))
    .addColumn("attachment_id", "text", (c) => c.notNull())
    .addColumn("status", "text", (c) => c.notNull())
    .addColumn("kind", "text", (c) => c.notNull())
    .addColumn("text", "text", (c) => c.notNull())
    .addColumn("sections", "text", (c) => c.notNull())
    .addColumn("pages_read", "integer")
    .addColumn("pages_total", "integer")
    .addColumn("truncated", "integer", (c) => c.notNull())
    .addColumn("model", "text", (c) => c.notNull())
    .addColumn("source", "text", (c) => c.notNull())
    .addColumn("error", "text")
    .addColumn("generation", "integer", (c) => c.notNull())
    .addColumn("lease_until", "text")
    .addColumn("created_at", "text", (c) => c.notNull())
    .addColumn("updated_at", "text", (c) => c.notNull())
    .execute()
  await db.schema.createIndex("attachment_summaries_tenant_attachment_unique").on("attachment_summaries")
    .columns(["tenant_id", "attachment_id"]).unique().execute()

  await db.schema.createTable("ai_credit_entries")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("tenant_id", "text", (c) => c.notNull().references("tenants.id"))
    .addColumn("amount", "integer", (c) => c.notNull())
    .addColumn("reason", "text", (c) => c.notNull())
    .addColumn("attachment_id", "text")
    .addColumn("charge_key", "text")
    .addColumn("created_at", "text", (c) => c.notNull())
    .execute()
  await db.schema.createIndex("ai_credit_entries_tenant_charge_unique").on("ai_credit_entries")
    .columns(["tenant_id", "charge_key"]).unique().execute()
  await db.schema.createIndex("ai_credit_entries_tenant_created_idx").on("ai_credit_entries")
    .columns(["tenant_id", "created_at", "id"]).execute()

  await db.schema.createTable("ai_credit_balances")
    .addColumn("tenant_id", "text", (c) => c.primaryKey().references("tenants.id"))
    .addColumn("balance", "bigint", (c) => c.notNull())
    .addColumn("charged_total", "bigint", (c) => c.notNull())
    .addColumn("updated_at", "text", (c) => c.notNull())
    .execute()

  await db.schema.createTable("summary_rate_counters")
    .addColumn("tenant_id", "text", (c) => c.notNull())
    .addColumn("key", "text", (c) => c.notNull())
    .addColumn("window_start", "text", (c) => c.notNull())
    .addColumn("count", "integer", (c) => c.notNull())
    .addPrimaryKeyConstraint("summary_rate_counters_pkey", ["tenant_id", "key", "window_start"])
    .execute()
}
