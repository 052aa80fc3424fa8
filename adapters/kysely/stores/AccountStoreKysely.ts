import { Effect, Layer, Option } from "effect"
import { AccountStore } from "../../../src/ports/AccountStore.ts"
import { KyselyConnection, query } from "../Connection.ts"

/** `AccountStore` on Kysely. */
export const accountStoreLayer: Layer.Layer<AccountStore, never, KyselyConnection> = Layer.effect(
  AccountStore,
  Effect.gen(function*() {
    const connection = yield* KyselyConnection
    return AccountStore.of({
      insertUser: (user) =>
        query(connection, (db) => db.insertInto("users").values(user).execute()).pipe(Effect.asVoid),
      getUser: (userId) =>
        query(connection, (db) => db.selectFrom("users").selectAll().where("id", "=", userId).executeTakeFirst())
          .pipe(Effect.map(Option.fromNullishOr)),
      findUserByTokenLookup: (lookup) =>
        query(connection, (db) =>
          db.selectFrom("users").selectAll().where("token_lookup", "=", lookup).executeTakeFirst())
          .pipe(Effect.map(Option.fromNullishOr)),
      insertBillingAccount: (account) =>
        query(connection, (db) => db.insertInto("billing_accounts").values(account).execute()).pipe(Effect.asVoid),
      getBillingAccount: (id) =>
        query(connection, (db) =>
          db.selectFrom("billing_accounts").selectAll().where("id", "=", id).executeTakeFirst())
          .pipe(Effect.map(Option.fromNullishOr)),
      listBillingAccountsOwnedBy: (userId) =>
        query(connection, (db) =>
          db.selectFrom("billing_accounts").selectAll().where("owner_user_id", "=", userId)
            .orderBy("created_at").orderBy("id").execute())
    })
  })
)
