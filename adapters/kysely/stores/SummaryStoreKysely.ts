import { Effect, Layer, Option } from "effect"
import { sql } from "kysely"
import {
  type CreditEntryRecord,
  type StoredSummarySection,
  type SummaryRecord,
  SummaryStore
} from "../../../src/ports/SummaryStore.ts"
import { atomically, KyselyConnection, query } from "../Connection.ts"
import type { AttachmentSummariesTable, AiCreditEntriesTable } from "../Database.ts"
import { fromFlag, toFlag } from "./Rows.ts"

const integerOrNull = (value: number | string | null): number | null => (value === null ? null : Number(value))

const summaryFromRow = (row: AttachmentSummariesTable): SummaryRecord => ({
  ...row,
  status: row.status as SummaryRecord["status"],
  kind: row.kind as SummaryRecord["kind"],
  source: row.source as SummaryRecord["source"],
  sections: JSON.parse(row.sections) as Array<StoredSummarySection>,
  pages_read: integerOrNull(row.pages_read),
  pages_total: integerOrNull(row.pages_total),
  truncated: fromFlag(row.truncated),
  generation: Number(row.generation)
})

const summaryToRow = (summary: SummaryRecord): AttachmentSummariesTable => ({
  ...summary,
  sections: JSON.stringify(summary.sections),
  truncated: toFlag(summary.truncated)
})

const entryFromRow = (row: AiCreditEntriesTable): CreditEntryRecord => ({
  ...row,
  amount: Number(row.amount),
  reason: row.reason as CreditEntryRecord["reason"]
})

// Attachment ids per query: far below either database's bound on parameters.
const CHUNK = 500

/**
 * `SummaryStore` on Kysely; every read and write is scoped by tenant. The claims are single
 * conditional statements: a first summary is an insert that does nothing on
 * `attachment_summaries_tenant_attachment_unique`, a next generation an update on the generation
 * read and a status that still allows it, an outcome an update on the generation still pending; so of
 * several requests at once exactly one wins, on either database. A ledger line and the balance move
 * in one transaction, a charge's `charge_key` being unique. Rate counters are upserts that add one
 * only below the limit (PostgreSQL locks the row until the transaction ends), so processes on one
 * database share the count.
 */
export const summaryStoreLayer: Layer.Layer<SummaryStore, never, KyselyConnection> = Layer.effect(
  SummaryStore,
  Effect.gen(function*() {
    const connection = yield* KyselyConnection
    return SummaryStore.of({
      get: (tenantId, attachmentId) =>
        query(connection, (db) =>
          db.selectFrom("attachment_summaries").selectAll().where("tenant_id", "=", tenantId)
            .where("attachment_id", "=", attachmentId).executeTakeFirst())
          .pipe(Effect.map((row) => Option.map(Option.fromNullishOr(row), summaryFromRow))),
      // Through attachment_summaries_tenant_attachment_unique.
      listByAttachments: (tenantId, attachmentIds) =>
        query(connection, async (db) => {
          const rows: Array<AttachmentSummariesTable> = []
          for (let i = 0; i < attachmentIds.length; i += CHUNK) {
            rows.push(
              ...await db.selectFrom("attachment_summaries").selectAll().where("tenant_id", "=", tenantId)
                .where("attachment_id", "in", attachmentIds.slice(i, i + CHUNK)).execute()
            )
          }
          return rows.map(summaryFromRow)
        }),
      insertPending: (summary) =>
        query(connection, (db) =>
          db.insertInto("attachment_summaries").values(summaryToRow(summary))
            .onConflict((oc) => oc.columns(["tenant_id", "attachment_id"]).doNothing())
            .executeTakeFirst())
          .pipe(Effect.map((result) => Number(result.numInsertedOrUpdatedRows ?? 0n) > 0)),
      // Still at the generation read, and still failed or pending past its lease at the claim's time: an
      // outcome written meanwhile (which keeps the generation) makes the claim change nothing.
      claimNext: (tenantId, id, generation, next) =>
        query(connection, (db) =>
          db.updateTable("attachment_summaries")
            .set({
              status: "pending",
              generation: generation + 1,
              kind: next.kind,
              source: next.source,
              lease_until: next.lease_until,
              error: null,
              updated_at: next.updated_at
            })
            .where("tenant_id", "=", tenantId).where("id", "=", id).where("generation", "=", generation)
            .where((eb) =>
              eb.or([
                eb("status", "=", "failed"),
                eb.and([eb("status", "=", "pending"), eb("lease_until", "<=", next.updated_at)])
              ])
            )
            .executeTakeFirst())
          .pipe(Effect.map((result) => Number(result.numUpdatedRows) > 0)),
      settle: (tenantId, id, generation, outcome) =>
        query(connection, (db) =>
          db.updateTable("attachment_summaries")
            .set({
              status: outcome.status,
              text: outcome.text,
              sections: JSON.stringify(outcome.sections),
              pages_read: outcome.pages_read,
              pages_total: outcome.pages_total,
              truncated: toFlag(outcome.truncated),
              model: outcome.model,
              error: outcome.error,
              lease_until: null,
              updated_at: outcome.updated_at
            })
            .where("tenant_id", "=", tenantId).where("id", "=", id).where("generation", "=", generation)
            .where("status", "=", "pending")
            .executeTakeFirst())
          .pipe(Effect.map((result) => Number(result.numUpdatedRows) > 0)),

      addCredits: (entry) =>
        atomically(connection, async (db) => {
          const inserted = await db.insertInto("ai_credit_entries").values(entry)
            .onConflict((oc) => oc.columns(["tenant_id", "charge_key"]).doNothing())
            .executeTakeFirst()
          if (Number(inserted.numInsertedOrUpdatedRows ?? 0n) === 0) return false
          const charged = entry.amount < 0 ? -entry.amount : 0
          await db.insertInto("ai_credit_balances")
            .values({ tenant_id: entry.tenant_id, balance: entry.amount, charged_total: charged, updated_at: entry.created_at })
            .onConflict((oc) =>
              oc.column("tenant_id").doUpdateSet({
                balance: sql<number>`ai_credit_balances.balance + ${entry.amount}`,
                charged_total: sql<number>`ai_credit_balances.charged_total + ${charged}`,
                updated_at: entry.created_at
              })
            )
            .execute()
          return true
        }),
      balance: (tenantId) =>
        query(connection, (db) =>
          db.selectFrom("ai_credit_balances").select(["balance", "charged_total"]).where("tenant_id", "=", tenantId)
            .executeTakeFirst())
          .pipe(Effect.map((row) => ({ balance: Number(row?.balance ?? 0), charged_total: Number(row?.charged_total ?? 0) }))),
      // Through ai_credit_entries_tenant_created_idx.
      listCredits: (tenantId) =>
        query(connection, (db) =>
          db.selectFrom("ai_credit_entries").selectAll().where("tenant_id", "=", tenantId)
            .orderBy("created_at").orderBy("id").execute())
          .pipe(Effect.map((rows) => rows.map(entryFromRow))),

      takeRequest: (tenantId, windowStart, buckets) =>
        atomically(connection, async (db) => {
          await db.deleteFrom("summary_rate_counters").where("tenant_id", "=", tenantId)
            .where("window_start", "<", windowStart).execute()
          const taken: Array<string> = []
          for (const bucket of buckets) {
            const row = await db.insertInto("summary_rate_counters")
              .values({ tenant_id: tenantId, key: bucket.key, window_start: windowStart, count: 1 })
              .onConflict((oc) =>
                oc.columns(["tenant_id", "key", "window_start"])
                  .doUpdateSet({ count: sql<number>`summary_rate_counters.count + 1` })
                  .where(sql.ref("summary_rate_counters.count"), "<", bucket.limit)
              )
              .returning("count")
              .executeTakeFirst()
            if (row === undefined) {
              // Full: what the earlier buckets gave is given back, so a refused request counts nowhere.
              for (const key of taken) {
                await db.updateTable("summary_rate_counters").set({ count: sql<number>`count - 1` })
                  .where("tenant_id", "=", tenantId).where("key", "=", key).where("window_start", "=", windowStart)
                  .execute()
              }
              return Option.some(bucket.key)
            }
            taken.push(bucket.key)
          }
          return Option.none<string>()
        })
    })
  })
)
