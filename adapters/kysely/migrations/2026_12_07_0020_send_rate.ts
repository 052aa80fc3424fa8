import type { Kysely } from "kysely"

/**
 * The send slots of chat-app numbers (`send_rates`), one row per tenant and channel: when the number's
 * next send slot opens, in epoch microseconds (a slot at 80 a second lasts 12.5 ms, kept exact), and
 * the sends a second a host set for the channel (null: the operator's throughput level decides). Every
 * process sending through a number reserves its slots here in one statement. Never edit once landed.
 */
export const up = async (db: Kysely<unknown>, _dialect: "sqlite" | "postgres"): Promise<void> => {
  await db.schema.createTable("send_rates")
    .addColumn("tenant_id", "text", (c) => c.notNull().references("tenants.id"))
    .addColumn("channel_id", "text", (c) => c.notNull())
    .addColumn("next_free_us", "bigint", (c) => c.notNull())
    .addColumn("host_per_second", "integer")
    .addPrimaryKeyConstraint("send_rates_pkey", ["tenant_id", "channel_id"])
    .execute()
}
