import { Effect, Layer, Option } from "effect"
import { sql } from "kysely"
import {
  type ListFilters,
  type ListRecord,
  ListStore,
  type MarketingOptOutRecord,
  type SubscriptionRecord
} from "../../../src/ports/ListStore.ts"
import { chunksOf } from "../../../src/kernel/Grouping.ts"
import { KyselyConnection, query } from "../Connection.ts"
import { filterOnly, jsonBatch } from "../JsonBatch.ts"
import type { Database, Db, ListsTable, ListSubscriptionsTable, MarketingOptOutsTable } from "../Database.ts"
import { fromFlag, toFlag } from "./Rows.ts"

const listFromRow = (row: ListsTable): ListRecord => ({
  ...row,
  is_default: fromFlag(row.is_default),
  type: row.type as ListRecord["type"],
  filters: row.filters === null ? null : JSON.parse(row.filters) as ListFilters
})

const listToRow = (list: ListRecord): ListsTable => ({
  ...list,
  is_default: toFlag(list.is_default),
  filters: list.filters === null ? null : JSON.stringify(list.filters)
})

const subscriptionFromRow = (row: ListSubscriptionsTable): SubscriptionRecord => ({
  ...row,
  status: row.status as SubscriptionRecord["status"],
  optin_method: row.optin_method as SubscriptionRecord["optin_method"]
})

/** `list_subscriptions`' columns, the key (tenant, list, contact) first. */
const SUBSCRIPTION_COLUMNS = [
  "tenant_id",
  "list_id",
  "contact_id",
  "status",
  "optin_method",
  "optin_channel_id",
  "subscribed_at",
  "unsubscribed_at",
  "unsubscribe_method",
  "updated_at"
]

// An opt-out for every channel is stored under the channel key '' (see migration 0011).
const EVERY_CHANNEL = ""

const optOutFromRow = ({ channel_key, ...row }: MarketingOptOutsTable): MarketingOptOutRecord => ({
  ...row,
  channel_id: channel_key === EVERY_CHANNEL ? null : channel_key
})

const optOutToRow = ({ channel_id, ...optOut }: MarketingOptOutRecord): MarketingOptOutsTable => ({
  ...optOut,
  channel_key: channel_id ?? EVERY_CHANNEL
})

/** `ListStore` on Kysely. */
export const listStoreLayer: Layer.Layer<ListStore, never, KyselyConnection> = Layer.effect(
  ListStore,
  Effect.gen(function*() {
    const connection = yield* KyselyConnection
    // A subscribed row stands as it was; an unsubscribed one (of the same tenant) is replaced.
    // `WHERE true` parts the SELECT from SQLite's ON CONFLICT.
    const subscribeStatement = jsonBatch({
      dialect: connection.dialect,
      name: "list-subscribe-many",
      columns: SUBSCRIPTION_COLUMNS,
      template: (rows) =>
        `INSERT INTO list_subscriptions (${SUBSCRIPTION_COLUMNS.join(", ")}) SELECT ${SUBSCRIPTION_COLUMNS.map((c) => `r.${c}`).join(", ")}
        FROM ${rows} WHERE true
        ON CONFLICT (list_id, contact_id) DO UPDATE SET ${SUBSCRIPTION_COLUMNS.slice(3).map((c) => `${c} = excluded.${c}`).join(", ")}
        WHERE list_subscriptions.status <> 'subscribed' AND list_subscriptions.tenant_id = excluded.tenant_id
        RETURNING contact_id`
    })
    // The tenant's lists that are not deleted: every read of lists sees only these.
    const liveLists = (db: Db, tenantId: string) =>
      db.selectFrom("lists").where("tenant_id", "=", tenantId).where("deleted_at", "is", null)
    const findList = (pick: (db: Db) => Promise<ListsTable | undefined>) =>
      query(connection, pick).pipe(Effect.map((row) => Option.map(Option.fromNullishOr(row), listFromRow)))
    // The rows of `table` for the tenant's `contactIds`, 500 a statement, through the index led by the
    // contact (migration 0023), the tenant a filter: led by the tenant, a stale plan read every row of
    // the tenant for each page of 500.
    const rowsAmong = <T extends "list_subscriptions" | "marketing_opt_outs">(table: T, tenantId: string, contactIds: ReadonlyArray<string>) =>
      Effect.map(
        Effect.forEach(chunksOf(contactIds, 500), (part) =>
          query(connection, (db) =>
            db.selectFrom(table as "list_subscriptions").selectAll().where(sql.raw(filterOnly("tenant_id")), "=", tenantId)
              .where("contact_id", "in", [...part]).execute())),
        (pages) => pages.flat() as Array<Database[T]>
      )
    return ListStore.of({
      insertList: (list) =>
        query(connection, (db) => db.insertInto("lists").values(listToRow(list)).execute()).pipe(Effect.asVoid),
      getList: (tenantId, id) =>
        findList((db) => liveLists(db, tenantId).selectAll().where("id", "=", id).executeTakeFirst()),
      // Through lists_tenant_slug_unique.
      findListBySlug: (tenantId, slug) =>
        findList((db) => liveLists(db, tenantId).selectAll().where("slug", "=", slug).executeTakeFirst()),
      // Through lists_tenant_default_unique, whose condition this repeats.
      findDefaultList: (tenantId) =>
        findList((db) => liveLists(db, tenantId).selectAll().where("is_default", "=", 1).executeTakeFirst()),
      listLists: (tenantId) =>
        query(connection, (db) => liveLists(db, tenantId).selectAll().orderBy("created_at").orderBy("id").execute())
          .pipe(Effect.map((rows) => rows.map(listFromRow))),
      listAllLists: (tenantId) =>
        query(connection, (db) =>
          db.selectFrom("lists").selectAll().where("tenant_id", "=", tenantId).orderBy("created_at").orderBy("id").execute())
          .pipe(Effect.map((rows) => rows.map(listFromRow))),
      hasLists: (tenantId) =>
        query(connection, (db) => liveLists(db, tenantId).select("id").limit(1).executeTakeFirst())
          .pipe(Effect.map((row) => row !== undefined)),
      // Deleted lists too: deleting one softly is an update, and so is restoring it.
      updateList: (tenantId, list) => {
        const { id: _id, tenant_id: _tenant, created_at: _created, ...changes } = listToRow(list)
        return query(connection, (db) =>
          db.updateTable("lists").set(changes).where("tenant_id", "=", tenantId).where("id", "=", list.id)
            .executeTakeFirst())
          .pipe(Effect.map((result) => Number(result.numUpdatedRows) > 0))
      },

      // The key is (list_id, contact_id) alone: a row of another tenant under it is left as it is.
      putSubscription: (subscription) => {
        const { tenant_id: _tenant, list_id: _list, contact_id: _contact, ...changes } = subscription
        return query(connection, (db) =>
          db.insertInto("list_subscriptions").values(subscription)
            .onConflict((oc) =>
              oc.columns(["list_id", "contact_id"]).doUpdateSet(changes)
                .where("list_subscriptions.tenant_id", "=", subscription.tenant_id)
            )
            .execute()).pipe(Effect.asVoid)
      },
      subscribeMany: (subscriptions) =>
        subscriptions.length === 0 ? Effect.succeed(new Set<string>()) : query(connection, (db) =>
          subscribeStatement.run<{ readonly contact_id: string }>(db, subscriptions))
          .pipe(Effect.map((rows) => new Set(rows.map((row) => row.contact_id)))),
      getSubscription: (tenantId, listId, contactId) =>
        query(connection, (db) =>
          db.selectFrom("list_subscriptions").selectAll().where("tenant_id", "=", tenantId)
            .where("list_id", "=", listId).where("contact_id", "=", contactId).executeTakeFirst())
          .pipe(Effect.map((row) => Option.map(Option.fromNullishOr(row), subscriptionFromRow))),
      // Through list_subscriptions_tenant_contact_idx.
      subscriptionsOf: (tenantId, contactId) =>
        query(connection, (db) =>
          db.selectFrom("list_subscriptions").selectAll().where("tenant_id", "=", tenantId)
            .where("contact_id", "=", contactId).orderBy("subscribed_at").orderBy("list_id").execute())
          .pipe(Effect.map((rows) => rows.map(subscriptionFromRow))),
      // Keyset over list_subscriptions_tenant_list_status_idx, in its order.
      subscribedContacts: (tenantId, listId, page) =>
        query(connection, (db) => {
          let select = db.selectFrom("list_subscriptions").select("contact_id").where("tenant_id", "=", tenantId)
            .where("list_id", "=", listId).where("status", "=", "subscribed")
          if (page.afterContactId !== null) select = select.where("contact_id", ">", page.afterContactId)
          return select.orderBy("contact_id").limit(page.limit).execute()
        }).pipe(Effect.map((rows) => rows.map((row) => row.contact_id))),
      countSubscribed: (tenantId, listId) =>
        query(connection, (db) =>
          db.selectFrom("list_subscriptions").select((eb) => eb.fn.countAll().as("n")).where("tenant_id", "=", tenantId)
            .where("list_id", "=", listId).where("status", "=", "subscribed").executeTakeFirstOrThrow())
          .pipe(Effect.map((row) => Number(row.n))),

      putOptOut: (optOut) =>
        query(connection, (db) =>
          db.insertInto("marketing_opt_outs").values(optOutToRow(optOut))
            .onConflict((oc) => oc.columns(["tenant_id", "contact_id", "channel_key"]).doNothing())
            .execute()).pipe(Effect.asVoid),
      subscriptionsAmong: (tenantId, contactIds) =>
        Effect.map(rowsAmong("list_subscriptions", tenantId, contactIds), (rows) => rows.map(subscriptionFromRow)),
      optOutsAmong: (tenantId, contactIds) =>
        Effect.map(rowsAmong("marketing_opt_outs", tenantId, contactIds), (rows) => rows.map(optOutFromRow)),
      removeOptOut: (tenantId, contactId, channelId) =>
        query(connection, (db) =>
          db.deleteFrom("marketing_opt_outs").where("tenant_id", "=", tenantId).where("contact_id", "=", contactId)
            .where("channel_key", "=", channelId ?? EVERY_CHANNEL).execute()).pipe(Effect.asVoid),
      optOutsOf: (tenantId, contactId) =>
        query(connection, (db) =>
          db.selectFrom("marketing_opt_outs").selectAll().where("tenant_id", "=", tenantId)
            .where("contact_id", "=", contactId).orderBy("channel_key").execute())
          .pipe(Effect.map((rows) => rows.map(optOutFromRow)))
    })
  })
)
