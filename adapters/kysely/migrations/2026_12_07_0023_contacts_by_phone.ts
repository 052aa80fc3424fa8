import type { Kysely } from "kysely"

/**
 * Contacts by phone across tenants (`contacts_phone_idx`): the inbound batch looks its senders up by
 * phone, the tenant only a filter, so the lookup walks this index whatever PostgreSQL's statistics
 * say; through an index led by the tenant, a table loaded since its last ANALYZE was read whole for
 * every sender. Created only if missing, so an operator of a large PostgreSQL database may build it
 * first with `CREATE INDEX CONCURRENTLY` under the same name. Never edit once landed.
 */
export const up = async (db: Kysely<unknown>, _dialect: "sqlite" | "postgres"): Promise<void> => {
  await db.schema.createIndex("contacts_phone_idx").ifNotExists().on("contacts").columns(["phone"]).execute()
}
