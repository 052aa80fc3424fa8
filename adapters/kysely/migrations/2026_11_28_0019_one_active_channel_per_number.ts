import { type Kysely, sql } from "kysely"

interface ActiveChannel {
  readonly id: string
  readonly tenant_id: string
  readonly platform: string
  readonly external_id: string
}

/**
 * One active channel per number: a partial unique index on `(platform, external_id)` over active
 * channels (`channels_active_external_unique`), so a second tenant can no longer connect a number
 * another holds and take over its inbound messages. Numbers already active in several channels are
 * settled first: the oldest (by `created_at`, then `id`) stays active, the others are disconnected,
 * and each group is named in a warning. On PostgreSQL the table is locked against writers for the
 * migration's transaction, so no duplicate can land between the settling and the index; on SQLite a
 * writer in between makes the index fail and the migration run again at the next start. Never edit
 * once landed.
 */
export const up = async (db: Kysely<unknown>, dialect: "sqlite" | "postgres"): Promise<void> => {
  if (dialect === "postgres") await sql`LOCK TABLE channels IN SHARE ROW EXCLUSIVE MODE`.execute(db)
  const { rows } = await sql<ActiveChannel>`
    SELECT c.id, c.tenant_id, c.platform, c.external_id FROM channels c
    WHERE c.status = 'active' AND EXISTS (
      SELECT 1 FROM channels d
      WHERE d.platform = c.platform AND d.external_id = c.external_id AND d.status = 'active' AND d.id <> c.id
    )
    ORDER BY c.platform, c.external_id, c.created_at, c.id`.execute(db)
  const groups = new Map<string, [ActiveChannel, ...Array<ActiveChannel>]>()
  for (const row of rows) {
    const key = JSON.stringify([row.platform, row.external_id])
    const group = groups.get(key)
    if (group === undefined) groups.set(key, [row])
    else group.push(row)
  }
  // A migration runs outside Effect and its Clock: the wall clock is when the channels were disconnected.
  const at = new Date().toISOString()
  for (const [kept, ...others] of groups.values()) {
    await sql`UPDATE channels SET status = 'disconnected', disconnected_at = ${at}, updated_at = ${at}
      WHERE id IN (${sql.join(others.map((c) => c.id))})`.execute(db)
    console.warn(
      `migration 2026_11_28_0019: one ${kept.platform} number or account was active in ${others.length + 1} channels; ` +
        `kept the oldest, ${kept.id} (tenant ${kept.tenant_id}), and disconnected ` +
        others.map((c) => `${c.id} (tenant ${c.tenant_id})`).join(", ")
    )
  }
  await db.schema.createIndex("channels_active_external_unique").on("channels")
    .columns(["platform", "external_id"]).unique()
    .where(sql.ref("status"), "=", sql.lit("active"))
    .execute()
}
