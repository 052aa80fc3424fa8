import { Effect, Layer, Option } from "effect"
import { sql } from "kysely"
import {
  type CampaignBatchRecord,
  type CampaignChanges,
  type CampaignClaim,
  type CampaignRecipientRecord,
  type CampaignRecord,
  type CampaignStatus,
  CampaignStore,
  type RecipientCounts,
  type RecipientState,
  type SplitSending,
  type ThrottleReason
} from "../../../src/ports/CampaignStore.ts"
import { amongKeys, atomically, KyselyConnection, query, skipLocked } from "../Connection.ts"
import type { CampaignBatchesTable, CampaignRecipientsTable, CampaignsTable, Db } from "../Database.ts"
import { type BatchColumn, filterOnly, jsonBatch } from "../JsonBatch.ts"
import { fromFlag, toFlag } from "./Rows.ts"

const integerOrNull = (value: number | string | null): number | null => (value === null ? null : Number(value))

// The lease (`lease_until`, `holder`) is the claim's, not part of the record.
const campaignFromRow = ({ lease_until: _lease, holder: _holder, ...row }: CampaignsTable): CampaignRecord => ({
  ...row,
  status: row.status as CampaignStatus,
  throttle_reason: row.throttle_reason as ThrottleReason | null,
  channel_ids: JSON.parse(row.channel_ids) as Array<string>,
  variable_values: JSON.parse(row.variable_values) as Array<string>,
  audience: JSON.parse(row.audience) as CampaignRecord["audience"],
  skip_duplicates: fromFlag(row.skip_duplicates),
  split_sending: row.split_sending === null ? null : JSON.parse(row.split_sending) as SplitSending,
  warmup_acknowledged_audience: integerOrNull(row.warmup_acknowledged_audience),
  audience_size: integerOrNull(row.audience_size)
})

const campaignToRow = (campaign: CampaignRecord): Omit<CampaignsTable, "lease_until" | "holder"> => ({
  ...campaign,
  channel_ids: JSON.stringify(campaign.channel_ids),
  variable_values: JSON.stringify(campaign.variable_values),
  audience: JSON.stringify(campaign.audience),
  skip_duplicates: toFlag(campaign.skip_duplicates),
  split_sending: campaign.split_sending === null ? null : JSON.stringify(campaign.split_sending)
})

// The columns a conditional write may set, in one statement's order; the lease and identity are never among them.
const CHANGEABLE = [
  "name",
  "status",
  "throttle_reason",
  "channel_ids",
  "template_id",
  "variable_values",
  "audience",
  "timezone",
  "skip_duplicates",
  "split_sending",
  "send_at",
  "warmup_acknowledged_at",
  "warmup_acknowledged_audience",
  "audience_size",
  "next_run_at",
  "started_at",
  "paused_at",
  "completed_at",
  "updated_at"
] as const satisfies ReadonlyArray<keyof CampaignChanges>

// Columns stored as JSON text.
const JSON_COLUMNS: ReadonlySet<string> = new Set(["channel_ids", "variable_values", "audience", "split_sending"])

/** The columns `changes` names as stored (JSON text, flags), and only those. */
const changesToRow = (changes: CampaignChanges): Partial<CampaignsTable> => {
  const row: Record<string, unknown> = {}
  for (const column of CHANGEABLE) {
    const value = changes[column]
    if (value === undefined) continue
    row[column] = column === "skip_duplicates"
      ? toFlag(value as boolean)
      : JSON_COLUMNS.has(column) && value !== null
      ? JSON.stringify(value)
      : value
  }
  return row as Partial<CampaignsTable>
}

const recipientFromRow = (row: CampaignRecipientsTable): CampaignRecipientRecord => ({
  ...row,
  seq: Number(row.seq),
  state: row.state as RecipientState,
  batch_day: Number(row.batch_day)
})

const batchFromRow = (row: CampaignBatchesTable): CampaignBatchRecord => ({
  ...row,
  day: Number(row.day),
  planned_size: Number(row.planned_size)
})

const chunks = <A>(items: ReadonlyArray<A>, size: number): Array<ReadonlyArray<A>> =>
  Array.from({ length: Math.ceil(items.length / size) }, (_, i) => items.slice(i * size, (i + 1) * size))

// At most ~900 bound values a statement, under SQLite's oldest limit (999) whatever the build.
const MAX_VALUES = 900
const BATCH_ROWS = Math.floor(MAX_VALUES / 6)
const IN_LIST = 500

// A recipient's columns as the batch insert reads them from its JSON rows.
const RECIPIENT_COLUMNS = [
  "tenant_id",
  "campaign_id",
  ["seq", "integer"],
  "contact_id",
  "channel_id",
  "state",
  "skip_reason",
  ["batch_day", "integer"],
  "planned_at",
  "handed_at",
  "message_id",
  "external_id",
  "error",
  "updated_at"
] as const satisfies ReadonlyArray<BatchColumn & (keyof CampaignRecipientsTable | readonly [keyof CampaignRecipientsTable, string])>
const columnName = (column: BatchColumn): string => (typeof column === "string" ? column : column[0])

// The recipients' lookups and moves are planned at each run: a generic plan made on a nearly empty
// table walked the campaign's or the channel's recipients for each batch (their keys have no column of
// their own to look up by).
const PLANNED_EACH_RUN = { prepared: false } as const

/** Compares text code unit by code unit, whatever the database's collation. */
const byText = (x: string, y: string): number => (x < y ? -1 : x > y ? 1 : 0)

/** Claims in the order they are taken: the campaign due first, then by id. */
const byDue = (a: CampaignsTable, b: CampaignsTable): number =>
  byText(a.next_run_at ?? "", b.next_run_at ?? "") || byText(a.id, b.id)

/** `text` as a LIKE pattern matching itself only (`\` escapes). */
const literalLike = (text: string): string => text.replace(/[\\%_]/g, (c) => `\\${c}`)

/** Whether campaign `campaignId` is one of the tenant's. */
const ownsCampaign = async (db: Db, tenantId: string, campaignId: string): Promise<boolean> =>
  (await db.selectFrom("campaigns").select("id").where("tenant_id", "=", tenantId).where("id", "=", campaignId)
    .executeTakeFirst()) !== undefined

/**
 * `CampaignStore` on Kysely. The claim is one UPDATE over the due campaigns it picks (a partial index
 * holds only campaigns with a `next_run_at`), as the inbound claim is: on PostgreSQL concurrent
 * claimers skip each other's rows (`skipLocked`, `amongKeys` in Connection.ts); releasing is a
 * compare-and-set on the holder. Recipients and batches are written only under a campaign of their
 * own tenant: the keys (campaign_id, seq) and (campaign_id, channel_id, day) do not hold the tenant,
 * so rows of one tenant under another's campaign id would block that campaign's own.
 */
export const campaignStoreLayer: Layer.Layer<CampaignStore, never, KyselyConnection> = Layer.effect(
  CampaignStore,
  Effect.gen(function*() {
    const connection = yield* KyselyConnection
    const recipients = (db: Db, tenantId: string, campaignId: string) =>
      db.selectFrom("campaign_recipients").where("tenant_id", "=", tenantId).where("campaign_id", "=", campaignId)
    // Recipients handed to the operator through the channel: campaign_recipients_tenant_channel_handed_idx.
    const handedThrough = (db: Db, tenantId: string, channelId: string) =>
      db.selectFrom("campaign_recipients").where("tenant_id", "=", tenantId).where("channel_id", "=", channelId)
        .where("handed_at", "is not", null)
    const recipientsByExternalIds = jsonBatch({
      dialect: connection.dialect,
      name: "campaign-recipients-by-external-ids",
      ...PLANNED_EACH_RUN,
      columns: ["external_id"],
      template: (_rows, keyIn) =>
        `SELECT * FROM campaign_recipients WHERE channel_id = $2
        AND ${keyIn("external_id")} AND ${filterOnly("tenant_id")} = $3`
    })
    const moveRecipients = jsonBatch({
      dialect: connection.dialect,
      name: "campaign-recipients-move",
      ...PLANNED_EACH_RUN,
      columns: ["campaign_id", ["seq", "integer"], "expected", "state", "error", "updated_at"],
      template: (rows, keyIn) =>
        `UPDATE campaign_recipients SET state = r.state, error = r.error, updated_at = r.updated_at
        FROM ${rows} WHERE ${keyIn("campaign_recipients.campaign_id")} AND ${keyIn("campaign_recipients.seq")}
        AND ${filterOnly("campaign_recipients.tenant_id")} = $2 AND campaign_recipients.campaign_id = r.campaign_id AND campaign_recipients.seq = r.seq AND campaign_recipients.state = r.expected
        RETURNING campaign_recipients.campaign_id, campaign_recipients.seq`
    })
    const settleRecipients = jsonBatch({
      dialect: connection.dialect,
      name: "campaign-recipients-settle",
      ...PLANNED_EACH_RUN,
      columns: [["seq", "integer"], "expected", "state", "handed_at", "message_id", "external_id", "error", "updated_at"],
      template: (rows, keyIn) =>
        `UPDATE campaign_recipients SET state = r.state, handed_at = r.handed_at, message_id = r.message_id,
        external_id = r.external_id, error = r.error, updated_at = r.updated_at
        FROM ${rows} WHERE campaign_recipients.campaign_id = $2 AND ${keyIn("campaign_recipients.seq")}
        AND ${filterOnly("campaign_recipients.tenant_id")} = $3 AND campaign_recipients.seq = r.seq AND campaign_recipients.state = r.expected
        RETURNING campaign_recipients.seq`
    })
    // A page of the audience in one statement and one parameter (its text the same for every page).
    const insertRecipients = jsonBatch({
      dialect: connection.dialect,
      name: "campaign-recipients-insert",
      columns: RECIPIENT_COLUMNS,
      template: (rows) =>
        `INSERT INTO campaign_recipients (${RECIPIENT_COLUMNS.map(columnName).join(", ")})
        SELECT ${RECIPIENT_COLUMNS.map((c) => `r.${columnName(c)}`).join(", ")} FROM ${rows} WHERE true
        ON CONFLICT (campaign_id, seq) DO NOTHING`
    })
    return CampaignStore.of({
      findRecipientsByExternalIds: (tenantId, channelId, externalIds) =>
        query(connection, (db) =>
          recipientsByExternalIds.run<CampaignRecipientsTable>(db, externalIds.map((external_id) => ({ external_id })), [
            channelId,
            tenantId
          ])).pipe(Effect.map((rows) => rows.map(recipientFromRow))),
      moveRecipients: (tenantId, moves) =>
        query(connection, (db) =>
          moveRecipients.run<{ readonly campaign_id: string; readonly seq: number | string }>(db, moves, [tenantId]))
          .pipe(Effect.map((rows) => new Set(rows.map((row) => `${row.campaign_id} ${Number(row.seq)}`)))),
      settleRecipients: (tenantId, campaignId, moves) =>
        moves.length === 0 ? Effect.succeed(new Set<number>()) : query(connection, (db) =>
          settleRecipients.run<{ readonly seq: number | string }>(db, moves, [campaignId, tenantId]))
          .pipe(Effect.map((rows) => new Set(rows.map((row) => Number(row.seq))))),
      insert: (campaign) =>
        query(connection, (db) =>
          db.insertInto("campaigns").values({ ...campaignToRow(campaign), lease_until: null, holder: null }).execute())
          .pipe(Effect.asVoid),
      get: (tenantId, id) =>
        query(connection, (db) =>
          db.selectFrom("campaigns").selectAll().where("tenant_id", "=", tenantId).where("id", "=", id).executeTakeFirst())
          .pipe(Effect.map((row) => Option.map(Option.fromNullishOr(row), campaignFromRow))),
      // Through campaigns_tenant_created_idx, read backwards.
      list: (tenantId, window) =>
        query(connection, async (db) => {
          const items = await db.selectFrom("campaigns").selectAll().where("tenant_id", "=", tenantId)
            .orderBy("created_at", "desc").orderBy("id", "desc").limit(window.limit).offset(window.offset).execute()
          const count = await db.selectFrom("campaigns").select((eb) => eb.fn.countAll().as("n"))
            .where("tenant_id", "=", tenantId).executeTakeFirstOrThrow()
          return { items: items.map(campaignFromRow), total: Number(count.n) }
        }),
      // The lease is left as it is: the holder updates the campaign it works on, then releases it.
      update: (tenantId, campaign) => {
        const { id: _id, tenant_id: _tenant, created_at: _created, ...changes } = campaignToRow(campaign)
        return query(connection, (db) =>
          db.updateTable("campaigns").set(changes).where("tenant_id", "=", tenantId).where("id", "=", campaign.id)
            .executeTakeFirst())
          .pipe(Effect.map((result) => Number(result.numUpdatedRows) > 0))
      },
      // One UPDATE under the expected statuses; with nothing to set, whether the campaign is in one of them.
      transition: (tenantId, id, { expected, set }) => {
        if (expected.length === 0) return Effect.succeed(false)
        const changes = changesToRow(set)
        return query(connection, async (db) => {
          if (Object.keys(changes).length === 0) {
            return (await db.selectFrom("campaigns").select("id").where("tenant_id", "=", tenantId).where("id", "=", id)
              .where("status", "in", [...expected]).executeTakeFirst()) !== undefined
          }
          const result = await db.updateTable("campaigns").set(changes).where("tenant_id", "=", tenantId).where("id", "=", id)
            .where("status", "in", [...expected]).executeTakeFirst()
          return Number(result.numUpdatedRows) > 0
        })
      },
      // The due test repeats the partial index's condition, so SQLite's planner matches it too.
      claimDue: ({ holder, leaseUntil, limit, now }) =>
        query(connection, (db) => {
          const due = sql`SELECT id FROM campaigns
              WHERE next_run_at IS NOT NULL AND next_run_at <= ${now} AND (lease_until IS NULL OR lease_until <= ${now})
              ORDER BY next_run_at, id LIMIT ${limit}${skipLocked(connection.dialect)}`
          return sql<CampaignsTable>`UPDATE campaigns SET lease_until = ${leaseUntil}, holder = ${holder}
            WHERE ${amongKeys(connection.dialect, "id", due)}
            RETURNING *`.execute(db)
        }).pipe(Effect.map(({ rows }) =>
          [...rows].sort(byDue).map((row): CampaignClaim => ({ campaign: campaignFromRow(row), holder }))
        )),
      release: (tenantId, id, holder) =>
        query(connection, (db) =>
          db.updateTable("campaigns").set({ lease_until: null, holder: null })
            .where("tenant_id", "=", tenantId).where("id", "=", id).where("holder", "=", holder)
            .executeTakeFirst())
          .pipe(Effect.map((result) => Number(result.numUpdatedRows) > 0)),

      insertRecipients: (rows) =>
        rows.length === 0 ? Effect.void : atomically(connection, async (db) => {
          const owned = new Map<string, boolean>()
          const kept: Array<CampaignRecipientRecord> = []
          for (const row of rows) {
            const key = JSON.stringify([row.tenant_id, row.campaign_id])
            let mine = owned.get(key)
            if (mine === undefined) {
              mine = await ownsCampaign(db, row.tenant_id, row.campaign_id)
              owned.set(key, mine)
            }
            if (mine) kept.push(row)
          }
          await insertRecipients.run(db, kept)
        }),
      // Through campaign_recipients_tenant_contact_idx.
      hasRecipient: (tenantId, campaignId, contactId) =>
        query(connection, (db) =>
          recipients(db, tenantId, campaignId).select("seq").where("contact_id", "=", contactId).limit(1).executeTakeFirst())
          .pipe(Effect.map((row) => row !== undefined)),
      // Keyset by seq, through campaign_recipients_tenant_state_idx.
      recipientsIn: (tenantId, campaignId, state, page) =>
        query(connection, (db) => {
          const due = page.plannedBy !== null && page.afterSeq === null
          // A keyset page walks campaign_recipients_state_seq_idx (campaign, state, seq) from `afterSeq`
          // and stops at `limit`: only rows in the state are read, in seq order, and the tenant is
          // compared on the row, so no index led by it (and not in seq order) is read whole and sorted.
          let select = due
            ? recipients(db, tenantId, campaignId).selectAll().where("state", "=", state)
            : db.selectFrom("campaign_recipients").selectAll().where(sql.raw(filterOnly("tenant_id")), "=", tenantId)
              .where("campaign_id", "=", campaignId).where("state", "=", state)
          if (page.plannedBy !== null) select = select.where("planned_at", "<=", page.plannedBy)
          if (page.afterSeq !== null) select = select.where("seq", ">", page.afterSeq)
          if (page.channelId !== undefined) select = select.where("channel_id", "=", page.channelId)
          // Due ones in the index's own order (planned time, then seq), so a round reads its page and
          // stops, however many are pending; a keyset page goes by seq.
          return (due ? select.orderBy("planned_at").orderBy("seq") : select.orderBy("seq"))
            .limit(page.limit).execute()
        }).pipe(Effect.map((rows) => rows.map(recipientFromRow))),
      updateRecipient: (recipient) => {
        const { tenant_id, campaign_id, seq, ...changes } = recipient
        return query(connection, (db) =>
          db.updateTable("campaign_recipients").set(changes)
            .where("tenant_id", "=", tenant_id).where("campaign_id", "=", campaign_id).where("seq", "=", seq)
            .execute()).pipe(Effect.asVoid)
      },
      // One UPDATE per planned batch (day and start) and chunk of seqs; recipients no longer pending keep theirs.
      replanRecipients: (tenantId, campaignId, plan) => {
        if (plan.length === 0) return Effect.void
        const groups = new Map<string, { batch_day: number; planned_at: string; seqs: Array<number> }>()
        for (const { batch_day, planned_at, seq } of plan) {
          const key = JSON.stringify([batch_day, planned_at])
          const group = groups.get(key) ?? { batch_day, planned_at, seqs: [] }
          group.seqs.push(seq)
          groups.set(key, group)
        }
        return atomically(connection, async (db) => {
          for (const { batch_day, planned_at, seqs } of groups.values()) {
            for (const part of chunks(seqs, IN_LIST)) {
              await db.updateTable("campaign_recipients").set({ batch_day, planned_at })
                .where("tenant_id", "=", tenantId).where("campaign_id", "=", campaignId)
                .where("state", "=", "pending").where("seq", "in", [...part])
                .execute()
            }
          }
        })
      },
      // Through campaign_recipients_channel_external_idx.
      findRecipientByExternalId: (tenantId, channelId, externalId) =>
        query(connection, (db) =>
          db.selectFrom("campaign_recipients").selectAll().where("channel_id", "=", channelId)
            .where("external_id", "=", externalId).where("tenant_id", "=", tenantId).executeTakeFirst())
          .pipe(Effect.map((row) => Option.map(Option.fromNullishOr(row), recipientFromRow))),
      // A skipped recipient without a reason counts in `byState` only.
      counts: (tenantId, campaignId) =>
        query(connection, (db) =>
          recipients(db, tenantId, campaignId).select((eb) => ["state", "skip_reason", eb.fn.countAll().as("n")])
            .groupBy(["state", "skip_reason"]).execute())
          .pipe(Effect.map((rows) => {
            const byState: Partial<Record<RecipientState, number>> = {}
            const skippedByReason: Record<string, number> = {}
            for (const row of rows) {
              const n = Number(row.n)
              const state = row.state as RecipientState
              byState[state] = (byState[state] ?? 0) + n
              if (state === "skipped" && row.skip_reason !== null) {
                skippedByReason[row.skip_reason] = (skippedByReason[row.skip_reason] ?? 0) + n
              }
            }
            return { byState, skippedByReason } satisfies RecipientCounts
          })),
      batchCounts: (tenantId, campaignId) =>
        query(connection, (db) =>
          recipients(db, tenantId, campaignId).where("channel_id", "is not", null)
            .select((eb) => ["channel_id", "batch_day", "state", eb.fn.countAll().as("n")])
            .groupBy(["channel_id", "batch_day", "state"]).execute())
          .pipe(Effect.map((rows) =>
            rows
              .map((row) => ({
                channel_id: row.channel_id!,
                day: Number(row.batch_day),
                state: row.state as RecipientState,
                n: Number(row.n)
              }))
              .sort((a, b) => byText(a.channel_id, b.channel_id) || a.day - b.day || byText(a.state, b.state))
          )),

      // Replaced in one transaction; the batches are written under the arguments' tenant and campaign.
      putBatches: (tenantId, campaignId, batches) =>
        atomically(connection, async (db) => {
          if (!await ownsCampaign(db, tenantId, campaignId)) return
          await db.deleteFrom("campaign_batches").where("tenant_id", "=", tenantId).where("campaign_id", "=", campaignId)
            .execute()
          for (const part of chunks(batches, BATCH_ROWS)) {
            await db.insertInto("campaign_batches")
              .values(part.map((batch) => ({ ...batch, tenant_id: tenantId, campaign_id: campaignId })))
              .execute()
          }
        }),
      // In the primary key's order: by channel id, then day.
      batchesOf: (tenantId, campaignId) =>
        query(connection, (db) =>
          db.selectFrom("campaign_batches").selectAll().where("tenant_id", "=", tenantId).where("campaign_id", "=", campaignId)
            .execute())
          .pipe(Effect.map((rows) => rows.map(batchFromRow).sort((a, b) => byText(a.channel_id, b.channel_id) || a.day - b.day))),

      // LIKE on the JSON text picks the candidates on both dialects (SQLite's LIKE ignores ASCII case);
      // the parsed list decides.
      completedThrough: (tenantId, channelId, exceptCampaignId) =>
        query(connection, (db) =>
          db.selectFrom("campaigns").select("channel_ids").where("tenant_id", "=", tenantId)
            .where("status", "=", "completed").where("id", "<>", exceptCampaignId)
            .where(sql<boolean>`channel_ids LIKE ${`%${literalLike(JSON.stringify(channelId))}%`} ESCAPE '\\'`)
            .execute())
          .pipe(Effect.map((rows) =>
            rows.filter((row) => (JSON.parse(row.channel_ids) as Array<string>).includes(channelId)).length
          )),
      sentThrough: (tenantId, channelId) =>
        query(connection, (db) =>
          handedThrough(db, tenantId, channelId).select((eb) => eb.fn.countAll().as("n")).executeTakeFirstOrThrow())
          .pipe(Effect.map((row) => Number(row.n))),
      reachedSince: (tenantId, channelId, since, contactIds) =>
        query(connection, async (db) => {
          const handed = handedThrough(db, tenantId, channelId).where("handed_at", ">=", since)
          const distinct = await handed.select((eb) => eb.fn.count("contact_id").distinct().as("n")).executeTakeFirstOrThrow()
          const wanted = [...new Set(contactIds)]
          const found = new Set<string>()
          for (const part of chunks(wanted, IN_LIST)) {
            const rows = await handed.select("contact_id").distinct().where("contact_id", "in", [...part]).execute()
            for (const row of rows) found.add(row.contact_id)
          }
          return { distinct: Number(distinct.n), already: wanted.filter((id) => found.has(id)) }
        })
    })
  })
)
