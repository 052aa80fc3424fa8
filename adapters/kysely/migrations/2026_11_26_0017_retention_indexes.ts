import { type Kysely, sql } from "kysely"

/**
 * Retention: the indexes the prune reads, so it finds what it may delete without scanning the
 * history it keeps. Finished deliveries (`success`, `failed`, `dead_letter`) by `completed_at`,
 * fanned-out events by `(fanned_out_at, seq)` (the prune's keyset order), deliveries by
 * `outbox_seq` (whether an event still has a delivery), and handled or failed inbound payloads by
 * `processed_at`. The partial ones hold only rows the prune can take. Created only if missing, so an
 * operator of a large database may build them first with `CREATE INDEX CONCURRENTLY` under the
 * same names. Never edit once landed.
 */
export const up = async (db: Kysely<unknown>): Promise<void> => {
  await db.schema.createIndex("webhook_deliveries_finished_idx").ifNotExists().on("webhook_deliveries")
    .columns(["completed_at"])
    .where(sql.ref("status"), "in", [sql.lit("success"), sql.lit("failed"), sql.lit("dead_letter")])
    .execute()
  await db.schema.createIndex("webhook_deliveries_outbox_seq_idx").ifNotExists().on("webhook_deliveries")
    .columns(["outbox_seq"])
    .execute()
  await db.schema.createIndex("outbox_events_fanned_idx").ifNotExists().on("outbox_events")
    .columns(["fanned_out_at", "seq"])
    .where(sql.ref("fanned_out_at"), "is not", null)
    .execute()
  await db.schema.createIndex("inbound_payloads_finished_idx").ifNotExists().on("inbound_payloads")
    .columns(["processed_at"])
    .where(sql.ref("processed_at"), "is not", null)
    .execute()
}
