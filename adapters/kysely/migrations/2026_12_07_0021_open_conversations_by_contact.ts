import { type Kysely, sql } from "kysely"

/**
 * Open conversations by contact and channel (`conversations_open_by_contact`, no tenant first): a
 * batch finds each pair's open conversation through it, the tenant compared on the row. Every other
 * index of the table starts with the tenant, and with stale statistics PostgreSQL walked all of the
 * tenant's (or the number's) open conversations through one of them for each batch. Never edit once
 * landed.
 */
export const up = async (db: Kysely<unknown>, _dialect: "sqlite" | "postgres"): Promise<void> => {
  await db.schema.createIndex("conversations_open_by_contact").on("conversations")
    .columns(["contact_id", "channel_id"])
    .where(sql.ref("status"), "=", sql.lit("open"))
    .execute()
}
