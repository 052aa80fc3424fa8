import { type Kysely, sql } from "kysely"

/**
 * Erasure and the prune of uploads never sent: attachments no message carries yet, by `created_at`
 * (`attachments_unsent_idx`, partial: it holds only uploads and fetched files waiting for a send, so
 * the retention prune finds the old ones without reading every file ever received), and email files
 * by the attachment they name (`email_attachments_attachment_idx`: whether an email still carries a
 * file before it is deleted). Created only if missing, so an operator of a large PostgreSQL database
 * may build them first with `CREATE INDEX CONCURRENTLY` under the same names. Never edit once landed.
 */
export const up = async (db: Kysely<unknown>, _dialect: "sqlite" | "postgres"): Promise<void> => {
  await db.schema.createIndex("attachments_unsent_idx").ifNotExists().on("attachments")
    .columns(["created_at"])
    .where(sql.ref("message_id"), "is", null)
    .execute()
  await db.schema.createIndex("email_attachments_attachment_idx").ifNotExists().on("email_attachments")
    .columns(["attachment_id"])
    .execute()
}
