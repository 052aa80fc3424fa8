import { type Kysely, sql } from "kysely"

/**
 * Campaigns, their recipients and their daily batches. A campaign's `channel_ids`, `variable_values`,
 * `audience` and `split_sending` are JSON text, `skip_duplicates` is 0/1; `lease_until` and `holder`
 * are the background claim's lease, not part of the record. `campaigns_next_run_idx` holds only the
 * campaigns background work has something to do with (`next_run_at` set), in the claim's order;
 * `campaigns_tenant_created_idx` lists a tenant's campaigns newest first. A recipient is one row per
 * campaign and `seq` (the audience's order, its idempotency key): `campaign_recipients_tenant_state_idx`
 * pages a campaign's recipients in a state, `campaign_recipients_tenant_contact_idx` finds a contact
 * already among them, `campaign_recipients_channel_external_idx` the recipient of an operator's status
 * report, and `campaign_recipients_tenant_channel_handed_idx` counts what a channel was handed, and
 * since when. A batch is one row per campaign, channel and day. Never edit once landed.
 */
export const up = async (db: Kysely<unknown>, _dialect: "sqlite" | "postgres"): Promise<void> => {
  await db.schema.createTable("campaigns")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("tenant_id", "text", (c) => c.notNull().references("tenants.id"))
    .addColumn("name", "text", (c) => c.notNull())
    .addColumn("status", "text", (c) => c.notNull())
    .addColumn("throttle_reason", "text")
    .addColumn("channel_ids", "text", (c) => c.notNull())
    .addColumn("template_id", "text")
    .addColumn("variable_values", "text", (c) => c.notNull())
    .addColumn("audience", "text", (c) => c.notNull())
    .addColumn("timezone", "text", (c) => c.notNull())
    .addColumn("skip_duplicates", "integer", (c) => c.notNull())
    .addColumn("split_sending", "text")
    .addColumn("send_at", "text")
    .addColumn("warmup_acknowledged_at", "text")
    .addColumn("warmup_acknowledged_audience", "integer")
    .addColumn("audience_size", "integer")
    .addColumn("next_run_at", "text")
    .addColumn("started_at", "text")
    .addColumn("paused_at", "text")
    .addColumn("completed_at", "text")
    .addColumn("created_at", "text", (c) => c.notNull())
    .addColumn("updated_at", "text")
    .addColumn("lease_until", "text")
    .addColumn("holder", "text")
    .execute()
  await db.schema.createIndex("campaigns_next_run_idx").on("campaigns")
    .column("next_run_at")
    .where(sql.ref("next_run_at"), "is not", null)
    .execute()
  await db.schema.createIndex("campaigns_tenant_created_idx").on("campaigns")
    .columns(["tenant_id", "created_at", "id"]).execute()

  await db.schema.createTable("campaign_recipients")
    .addColumn("tenant_id", "text", (c) => c.notNull().references("tenants.id"))
    .addColumn("campaign_id", "text", (c) => c.notNull())
    .addColumn("seq", "integer", (c) => c.notNull())
    .addColumn("contact_id", "text", (c) => c.notNull())
    .addColumn("channel_id", "text")
    .addColumn("state", "text", (c) => c.notNull())
    .addColumn("skip_reason", "text")
    .addColumn("batch_day", "integer", (c) => c.notNull())
    .addColumn("planned_at", "text", (c) => c.notNull())
    .addColumn("handed_at", "text")
    .addColumn("message_id", "text")
    .addColumn("external_id", "text")
    .addColumn("error", "text")
    .addColumn("updated_at", "text", (c) => c.notNull())
    .addPrimaryKeyConstraint("campaign_recipients_pkey", ["campaign_id", "seq"])
    .execute()
  await db.schema.createIndex("campaign_recipients_tenant_state_idx").on("campaign_recipients")
    .columns(["tenant_id", "campaign_id", "state", "planned_at", "seq"]).execute()
  await db.schema.createIndex("campaign_recipients_tenant_contact_idx").on("campaign_recipients")
    .columns(["tenant_id", "campaign_id", "contact_id"]).execute()
  await db.schema.createIndex("campaign_recipients_channel_external_idx").on("campaign_recipients")
    .columns(["channel_id", "external_id"]).execute()
  await db.schema.createIndex("campaign_recipients_tenant_channel_handed_idx").on("campaign_recipients")
    .columns(["tenant_id", "channel_id", "handed_at"]).execute()

  await db.schema.createTable("campaign_batches")
    .addColumn("tenant_id", "text", (c) => c.notNull().references("tenants.id"))
    .addColumn("campaign_id", "text", (c) => c.notNull())
    .addColumn("channel_id", "text", (c) => c.notNull())
    .addColumn("day", "integer", (c) => c.notNull())
    .addColumn("planned_size", "integer", (c) => c.notNull())
    .addColumn("starts_at", "text", (c) => c.notNull())
    .addPrimaryKeyConstraint("campaign_batches_pkey", ["campaign_id", "channel_id", "day"])
    .execute()
}
