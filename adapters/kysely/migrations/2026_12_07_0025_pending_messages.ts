import { type Kysely, sql } from "kysely"

/**
 * Messages still `pending`, oldest first (`messages_pending_idx`, partial: a message leaves it when it
 * is settled, so it holds only sends under way and sends in doubt): the sweep that settles sends whose
 * answer never came finds them without reading the table. Created only if missing, so an operator of
 * a large PostgreSQL database may build it first with `CREATE INDEX CONCURRENTLY` under the same name.
 * Never edit once landed.
 */
export const up = async (db: Kysely<unknown>, _dialect: "sqlite" | "postgres"): Promise<void> => {
  await db.schema.createIndex("messages_pending_idx").ifNotExists().on("messages").columns(["created_at", "id"])
    .where(sql.ref("status"), "=", sql.lit("pending")).execute()
}
