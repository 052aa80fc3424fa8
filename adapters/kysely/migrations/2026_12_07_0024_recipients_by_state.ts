import type { Kysely } from "kysely"

/**
 * Recipients of a campaign in one state in `seq` order (`campaign_recipients_state_seq_idx`): a keyset
 * page of a state (the recipients left `sending` by a crashed round, whether any is still `pending`)
 * reads only rows in that state. Through the primary key, with the state compared on each row, a
 * campaign of 100,000 recipients none of which was in the state read all of them for each look.
 * Created only if missing, so an operator of a large PostgreSQL database may build it first with
 * `CREATE INDEX CONCURRENTLY` under the same name. Never edit once landed.
 */
export const up = async (db: Kysely<unknown>, _dialect: "sqlite" | "postgres"): Promise<void> => {
  await db.schema.createIndex("campaign_recipients_state_seq_idx").ifNotExists().on("campaign_recipients")
    .columns(["campaign_id", "state", "seq"]).execute()
}
