import type { Kysely } from "kysely"

/**
 * Fan-out leases: the worker that fans a batch of outbox events out holds the batch through one
 * row here while it sends, and stores each delivery once, after its first attempt, in the state that
 * attempt left it in. If the worker dies, the lease passes and another worker stores what the batch
 * still lacked as due deliveries. `seqs` is the batch's outbox sequence numbers as a JSON array,
 * `fanned_at` the fan-out time (every delivery of the batch is created at it), `holder` changes
 * with every claim so a worker whose lease was taken over can tell. Never edit once landed.
 */
export const up = async (db: Kysely<unknown>): Promise<void> => {
  await db.schema.createTable("webhook_fanout_leases")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("seqs", "text", (c) => c.notNull())
    .addColumn("fanned_at", "text", (c) => c.notNull())
    .addColumn("holder", "text", (c) => c.notNull())
    .addColumn("lease_until", "text", (c) => c.notNull())
    .execute()
  await db.schema.createIndex("webhook_fanout_leases_lease_idx").on("webhook_fanout_leases").columns(["lease_until"]).execute()
}
