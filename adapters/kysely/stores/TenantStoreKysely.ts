import { Effect, Layer, Option } from "effect"
import { type TenantRecord, TenantStore } from "../../../src/ports/TenantStore.ts"
import { KyselyConnection, query } from "../Connection.ts"
import type { TenantsTable } from "../Database.ts"
import { fromFlag, toFlag } from "./Rows.ts"

const fromRow = (row: TenantsTable): TenantRecord => ({
  ...row,
  is_trial: fromFlag(row.is_trial),
  is_active: fromFlag(row.is_active),
  ai_features_enabled: fromFlag(row.ai_features_enabled),
  multi_agent_mode: fromFlag(row.multi_agent_mode),
  sms_enabled: fromFlag(row.sms_enabled)
})

const toRow = (tenant: TenantRecord) => ({
  ...tenant,
  is_trial: toFlag(tenant.is_trial),
  is_active: toFlag(tenant.is_active),
  ai_features_enabled: toFlag(tenant.ai_features_enabled),
  multi_agent_mode: toFlag(tenant.multi_agent_mode),
  sms_enabled: toFlag(tenant.sms_enabled)
})

/** `TenantStore` on Kysely. */
export const tenantStoreLayer: Layer.Layer<TenantStore, never, KyselyConnection> = Layer.effect(
  TenantStore,
  Effect.gen(function*() {
    const connection = yield* KyselyConnection
    return TenantStore.of({
      insert: (tenant) =>
        query(connection, (db) => db.insertInto("tenants").values(toRow(tenant)).execute()).pipe(Effect.asVoid),
      // ON CONFLICT (slug) DO NOTHING: a taken slug inserts nothing and raises nothing.
      insertUnlessSlugTaken: (tenant) =>
        query(connection, (db) =>
          db.insertInto("tenants").values(toRow(tenant)).onConflict((oc) => oc.column("slug").doNothing())
            .executeTakeFirst()).pipe(Effect.map((result) => Number(result.numInsertedOrUpdatedRows ?? 0n) > 0)),
      get: (tenantId) =>
        query(connection, (db) => db.selectFrom("tenants").selectAll().where("id", "=", tenantId).executeTakeFirst())
          .pipe(Effect.map((row) => Option.map(Option.fromNullishOr(row), fromRow))),
      setSmsEnabled: (tenantId, enabled, at) =>
        query(connection, (db) =>
          db.updateTable("tenants").set({ sms_enabled: toFlag(enabled), updated_at: at }).where("id", "=", tenantId)
            .executeTakeFirst()).pipe(Effect.map((result) => Number(result.numUpdatedRows) > 0)),
      setAiFeaturesEnabled: (tenantId, enabled, at) =>
        query(connection, (db) =>
          db.updateTable("tenants").set({ ai_features_enabled: toFlag(enabled), updated_at: at }).where("id", "=", tenantId)
            .executeTakeFirst()).pipe(Effect.map((result) => Number(result.numUpdatedRows) > 0)),
      listReachable: (reach, window) => {
        const ids = [...new Set(reach.tenantIds)]
        const accounts = [...new Set(reach.activeInBillingAccounts)]
        if (ids.length === 0 && accounts.length === 0) return Effect.succeed({ items: [], total: 0 })
        return query(connection, async (db) => {
          // The named tenants by primary key, the accounts' through `tenants_billing_account_idx`.
          const reached = db.selectFrom("tenants").where((eb) =>
            eb.or([
              ...(ids.length === 0 ? [] : [eb("id", "in", ids)]),
              ...(accounts.length === 0 ? [] : [eb.and([eb("billing_account_id", "in", accounts), eb("is_active", "=", toFlag(true))])])
            ])
          )
          const rows = await reached.selectAll().orderBy("created_at").orderBy("id").limit(window.limit).offset(window.offset).execute()
          const count = await reached.select((eb) => eb.fn.countAll().as("n")).executeTakeFirstOrThrow()
          return { items: rows.map(fromRow), total: Number(count.n) }
        })
      },
      slugTaken: (slug) =>
        query(connection, (db) => db.selectFrom("tenants").select("id").where("slug", "=", slug).executeTakeFirst())
          .pipe(Effect.map((row) => row !== undefined)),
      listAll: (window) =>
        query(connection, async (db) => {
          const rows = await db.selectFrom("tenants").selectAll().orderBy("created_at").orderBy("id")
            .limit(window.limit).offset(window.offset).execute()
          const count = await db.selectFrom("tenants").select((eb) => eb.fn.countAll().as("n")).executeTakeFirstOrThrow()
          return { items: rows.map(fromRow), total: Number(count.n) }
        })
    })
  })
)
