import { type Kysely, sql } from "kysely"

/**
 * A message's status moves without new index entries. `messages_pending_idx` (0025) named `status` in
 * its predicate, and PostgreSQL writes a new entry in every index of a row whose indexed or predicate
 * columns change: each of a message's three statuses (sent, delivered, read) added one to each of its
 * four indexes. The pending messages are now indexed by `pending_at`, a generated column holding
 * `created_at` while the message is `pending` and null after: it changes once, when the send settles,
 * and a later move touches no indexed column, so PostgreSQL updates the row in place on its page (a
 * heap-only update). `fillfactor` 80 leaves room on each page for those moves. The sweep of unanswered
 * sends reads the new index in the same order (created time, then id) as it read the old one.
 *
 * PostgreSQL has no virtual generated columns before version 18: adding a stored one rewrites the
 * table under an exclusive lock, a few seconds per million messages. On a large database run this
 * migration in a quiet moment; the new index is created only if missing, so it may be built first
 * with `CREATE INDEX CONCURRENTLY` under the same name once the column exists. SQLite adds the column
 * as a virtual one (computed when read), without a rewrite. Never edit once landed.
 */
export const up = async (db: Kysely<unknown>, dialect: "sqlite" | "postgres"): Promise<void> => {
  const pendingAt = sql`CASE WHEN status = 'pending' THEN created_at END`
  if (dialect === "postgres") {
    // Before the rewrite, so the rewritten pages keep the room too.
    await sql`ALTER TABLE messages SET (fillfactor = 80)`.execute(db)
    await sql`ALTER TABLE messages ADD COLUMN IF NOT EXISTS pending_at text GENERATED ALWAYS AS (${pendingAt}) STORED`.execute(db)
  } else {
    await sql`ALTER TABLE messages ADD COLUMN pending_at text GENERATED ALWAYS AS (${pendingAt}) VIRTUAL`.execute(db)
  }
  await db.schema.createIndex("messages_pending_at_idx").ifNotExists().on("messages").columns(["pending_at", "id"])
    .where(sql.ref("pending_at"), "is not", null).execute()
  await db.schema.dropIndex("messages_pending_idx").ifExists().execute()
}
