import { Effect, Layer, Option } from "effect"
import { type ApiKeyRecord, ApiKeyStore } from "../../../src/ports/ApiKeyStore.ts"
import { KyselyConnection, query } from "../Connection.ts"
import type { ApiKeysTable } from "../Database.ts"
import { fromFlag, toFlag } from "./Rows.ts"

const fromRow = (row: ApiKeysTable): ApiKeyRecord => ({
  ...row,
  scopes: JSON.parse(row.scopes) as Array<string>,
  is_parent: fromFlag(row.is_parent)
})

/** `ApiKeyStore` on Kysely. */
export const apiKeyStoreLayer: Layer.Layer<ApiKeyStore, never, KyselyConnection> = Layer.effect(
  ApiKeyStore,
  Effect.gen(function*() {
    const connection = yield* KyselyConnection
    const get = (column: "id" | "lookup", value: string) =>
      query(connection, (db) => db.selectFrom("api_keys").selectAll().where(column, "=", value).executeTakeFirst())
        .pipe(Effect.map((row) => Option.map(Option.fromNullishOr(row), fromRow)))
    return ApiKeyStore.of({
      insert: (key) =>
        query(connection, (db) =>
          db.insertInto("api_keys").values({
            ...key,
            scopes: JSON.stringify(key.scopes),
            is_parent: toFlag(key.is_parent)
          }).execute()).pipe(Effect.asVoid),
      findByLookup: (lookup) => get("lookup", lookup),
      revoke: (id, at) =>
        query(connection, (db) =>
          db.updateTable("api_keys").set({ revoked_at: at }).where("id", "=", id).where("revoked_at", "is", null)
            .execute()).pipe(Effect.andThen(get("id", id))),
      listByTenant: (tenantId) =>
        query(connection, (db) =>
          db.selectFrom("api_keys").selectAll().where("tenant_id", "=", tenantId).orderBy("created_at").orderBy("id").execute())
          .pipe(Effect.map((rows) => rows.map(fromRow)))
    })
  })
)
