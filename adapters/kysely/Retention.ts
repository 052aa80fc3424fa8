import { sql } from "kysely"
import type { OutboxPruneCursor } from "../../src/ports/OutboxStore.ts"
import { amongKeys, type KyselyConnection, skipLocked } from "./Connection.ts"
import type { Db } from "./Database.ts"

/**
 * The retention prunes' SQL, one statement per batch, each read from an index of migration 0017
 * that holds only rows the prune may take. Every delete names its rows by primary key, picked by
 * the subquery that (on PostgreSQL) locks them `FOR UPDATE SKIP LOCKED`: a batch never waits for a
 * row another transaction holds, and holds its own only for one short statement. No claim ever
 * locks a finished row, so claims and prunes never meet.
 */

const affected = (result: { readonly numAffectedRows?: bigint }): number => Number(result.numAffectedRows ?? 0n)

/** Deletes up to `limit` finished deliveries completed before `before`, oldest first (`webhook_deliveries_finished_idx`). */
export const pruneFinishedDeliveries = async (
  connection: KyselyConnection["Service"],
  db: Db,
  before: string,
  limit: number
): Promise<number> => {
  const picked = sql`SELECT id FROM webhook_deliveries
    WHERE status IN ('success', 'failed', 'dead_letter') AND completed_at < ${before}
    ORDER BY completed_at LIMIT ${limit}${skipLocked(connection.dialect)}`
  return affected(await sql`DELETE FROM webhook_deliveries WHERE ${amongKeys(connection.dialect, "id", picked)}`.execute(db))
}

/**
 * Deletes up to `limit` payloads processed or failed before `before`, oldest first
 * (`inbound_payloads_finished_idx`); resolves to the deleted payloads' ids and sources.
 */
export const pruneFinishedPayloads = async (
  connection: KyselyConnection["Service"],
  db: Db,
  before: string,
  limit: number
): Promise<ReadonlyArray<{ readonly id: string; readonly source: string }>> => {
  const picked = sql`SELECT id FROM inbound_payloads
    WHERE processed_at IS NOT NULL AND processed_at < ${before}
      AND status IN ('processed', 'failed') AND lease_until IS NULL
    ORDER BY processed_at LIMIT ${limit}${skipLocked(connection.dialect)}`
  const { rows } = await sql<{ id: string; source: string }>`DELETE FROM inbound_payloads
    WHERE ${amongKeys(connection.dialect, "id", picked)} RETURNING id, source`.execute(db)
  return rows
}

/**
 * One keyset batch of the outbox prune: the next `limit` events fanned out before `before` after
 * `after` (`outbox_events_fanned_idx`), then, among them, those without a delivery
 * (`webhook_deliveries_outbox_seq_idx`) and outside any fan-out lease are deleted. A lease's events
 * were all marked fanned out at its `fanned_at`, so an event whose time matches a lease's is kept.
 * Events kept (a delivery still refers to them) are passed over, so they cost each pass one look.
 */
export const pruneFannedOutEvents = async (
  connection: KyselyConnection["Service"],
  db: Db,
  input: { readonly before: string; readonly after: OutboxPruneCursor | null; readonly limit: number }
): Promise<{ readonly deleted: number; readonly next: OutboxPruneCursor | null }> => {
  const { after, before, limit } = input
  // Written as a range on the index's first column plus a tie-break, which both planners read in order.
  const from = after === null
    ? sql``
    : sql` AND fanned_out_at >= ${after.fanned_out_at} AND (fanned_out_at > ${after.fanned_out_at} OR seq > ${after.seq})`
  const { rows } = await sql<{ seq: number | string; fanned_out_at: string }>`SELECT seq, fanned_out_at FROM outbox_events
    WHERE fanned_out_at IS NOT NULL AND fanned_out_at < ${before}${from}
    ORDER BY fanned_out_at, seq LIMIT ${limit}`.execute(db)
  const last = rows.at(-1)
  const next = rows.length < limit || last === undefined ? null : { fanned_out_at: last.fanned_out_at, seq: Number(last.seq) }
  if (rows.length === 0) return { deleted: 0, next }
  const seqs = sql.join(rows.map((row) => sql.lit(Number(row.seq))))
  const picked = sql`SELECT e.seq FROM outbox_events e
    WHERE e.seq IN (${seqs})
      AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.outbox_seq = e.seq)
      AND NOT EXISTS (SELECT 1 FROM webhook_fanout_leases l WHERE l.fanned_at = e.fanned_out_at)${skipLocked(connection.dialect)}`
  const deleted = affected(await sql`DELETE FROM outbox_events WHERE ${amongKeys(connection.dialect, "seq", picked)}`.execute(db))
  return { deleted, next }
}
