import { Effect, Layer, Option } from "effect"
import { LibraryCacheStore } from "../../../src/ports/LibraryCacheStore.ts"
import { KyselyConnection, query } from "../Connection.ts"

/** `LibraryCacheStore` on Kysely. */
export const libraryCacheStoreLayer: Layer.Layer<LibraryCacheStore, never, KyselyConnection> = Layer.effect(
  LibraryCacheStore,
  Effect.gen(function*() {
    const connection = yield* KyselyConnection
    return LibraryCacheStore.of({
      get: (businessAccountId, queryKey) =>
        query(connection, (db) =>
          db.selectFrom("library_cache").selectAll().where("business_account_id", "=", businessAccountId)
            .where("query_key", "=", queryKey).executeTakeFirst())
          .pipe(Effect.map(Option.fromNullishOr)),
      fetchedAt: (businessAccountId, queryKey) =>
        query(connection, (db) =>
          db.selectFrom("library_cache").select("fetched_at").where("business_account_id", "=", businessAccountId)
            .where("query_key", "=", queryKey).executeTakeFirst())
          .pipe(Effect.map((row) => Option.map(Option.fromNullishOr(row), (found) => found.fetched_at))),
      // An upsert that keeps a newer copy another process stored meanwhile (ISO instants order as text).
      put: (record) =>
        query(connection, (db) =>
          db.insertInto("library_cache").values(record)
            .onConflict((oc) =>
              oc.columns(["business_account_id", "query_key"]).doUpdateSet((eb) => ({
                entries: eb.ref("excluded.entries"),
                fetched_at: eb.ref("excluded.fetched_at")
              })).where("library_cache.fetched_at", "<=", record.fetched_at)
            )
            .execute()).pipe(Effect.asVoid),
      prune: (before) =>
        query(connection, (db) => db.deleteFrom("library_cache").where("fetched_at", "<", before).executeTakeFirst())
          .pipe(Effect.map((result) => Number(result.numDeletedRows)))
    })
  })
)
