import { type Kysely, sql } from "kysely"

/**
 * Claim indexes that only hold rows a claim can take: outbox events not yet fanned out, and
 * deliveries due and unleased. A delivery fanned out in the normal way is
 * stored leased and then saved finished, so it never enters the two due indexes: a burst leaves no
 * churn there for claims to step over. Leased rows are found through their own index, read only
 * when looking for claims a dead worker left. Never edit once landed.
 */
export const up = async (db: Kysely<unknown>): Promise<void> => {
  await db.schema.dropIndex("outbox_events_unfanned_idx").execute()
  await db.schema.createIndex("outbox_events_unfanned_idx").on("outbox_events").columns(["seq"])
    .where(sql.ref("fanned_out_at"), "is", null).execute()
  await db.schema.dropIndex("webhook_deliveries_due_idx").execute()
  await db.schema.createIndex("webhook_deliveries_pending_idx").on("webhook_deliveries")
    .columns(["created_at", "outbox_seq"])
    .where(sql.ref("status"), "=", sql.lit("pending")).where(sql.ref("lease_expires_at"), "is", null)
    .execute()
  await db.schema.createIndex("webhook_deliveries_retrying_idx").on("webhook_deliveries")
    .columns(["next_retry_at", "created_at", "outbox_seq"])
    .where(sql.ref("status"), "=", sql.lit("retrying")).where(sql.ref("lease_expires_at"), "is", null)
    .execute()
  await db.schema.createIndex("webhook_deliveries_lease_idx").on("webhook_deliveries")
    .columns(["lease_expires_at"])
    .where(sql.ref("lease_expires_at"), "is not", null)
    .execute()
}
