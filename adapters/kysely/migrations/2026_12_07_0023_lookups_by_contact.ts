import type { Kysely } from "kysely"

/**
 * Indexes led by the key hot batches look rows up by, the tenant only a filter beside it: contacts by
 * phone (`contacts_phone_idx`, the inbound batch's senders), list subscriptions and marketing opt-outs
 * by contact (`list_subscriptions_contact_idx`, `marketing_opt_outs_contact_idx`, a campaign's audience
 * page). Through the indexes led by the tenant, PostgreSQL with statistics older than the tables'
 * contents matched only the tenant and read every row of it for each batch. Created only if missing,
 * so an operator of a large PostgreSQL database may build them first with `CREATE INDEX CONCURRENTLY`
 * under the same names. Never edit once landed.
 */
export const up = async (db: Kysely<unknown>, _dialect: "sqlite" | "postgres"): Promise<void> => {
  await db.schema.createIndex("contacts_phone_idx").ifNotExists().on("contacts").columns(["phone"]).execute()
  await db.schema.createIndex("list_subscriptions_contact_idx").ifNotExists().on("list_subscriptions").columns(["contact_id"]).execute()
  await db.schema.createIndex("marketing_opt_outs_contact_idx").ifNotExists().on("marketing_opt_outs").columns(["contact_id"]).execute()
}
