import { type Kysely, sql } from "kysely"

/**
 * Every database gets the partial index on outbox events not yet fanned out, whichever 0005 it ran.
 * 0005 was edited after it landed: the drop and re-creation of `outbox_events_unfanned_idx` as a
 * partial index on `seq` came later, so databases migrated with its first version still hold 0004's
 * index on `(fanned_out_at, seq)` over every event. Its header is wrong too: a fanned-out delivery is
 * no longer "stored leased and then saved finished"; since 0006 the fan-out lease holds the batch and
 * each delivery is stored once, after its first attempt, in the state that attempt left it in.
 * Never edit once landed.
 */
export const up = async (db: Kysely<unknown>): Promise<void> => {
  await db.schema.dropIndex("outbox_events_unfanned_idx").ifExists().execute()
  await db.schema.createIndex("outbox_events_unfanned_idx").on("outbox_events").columns(["seq"])
    .where(sql.ref("fanned_out_at"), "is", null).execute()
}
