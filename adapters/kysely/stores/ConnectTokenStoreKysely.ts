import { Effect, Layer, Option } from "effect"
import { type ConnectTokenRecord, ConnectTokenStore } from "../../../src/ports/ConnectTokenStore.ts"
import { KyselyConnection, query } from "../Connection.ts"
import type { ConnectTokensTable } from "../Database.ts"

const fromRow = (row: ConnectTokensTable): ConnectTokenRecord => ({
  ...row,
  max_uses: Number(row.max_uses),
  uses_count: Number(row.uses_count),
  use_window_minutes: Number(row.use_window_minutes),
  allowed_channel_types: JSON.parse(row.allowed_channel_types) as Array<string>
})

/** `ConnectTokenStore` on Kysely. */
export const connectTokenStoreLayer: Layer.Layer<ConnectTokenStore, never, KyselyConnection> = Layer.effect(
  ConnectTokenStore,
  Effect.gen(function*() {
    const connection = yield* KyselyConnection
    const one = (run: Parameters<typeof query<ConnectTokensTable | undefined>>[1]) =>
      query(connection, run).pipe(Effect.map((row) => Option.map(Option.fromNullishOr(row), fromRow)))
    return ConnectTokenStore.of({
      insert: (token) =>
        query(connection, (db) =>
          db.insertInto("connect_tokens").values({
            ...token,
            allowed_channel_types: JSON.stringify(token.allowed_channel_types)
          }).execute()).pipe(Effect.asVoid),
      findByLookup: (lookup) =>
        one((db) => db.selectFrom("connect_tokens").selectAll().where("lookup", "=", lookup).executeTakeFirst()),
      get: (tenantId, id) =>
        one((db) =>
          db.selectFrom("connect_tokens").selectAll().where("tenant_id", "=", tenantId).where("id", "=", id)
            .executeTakeFirst()),
      list: (tenantId, window) =>
        query(connection, async (db) => {
          const items = await db.selectFrom("connect_tokens").selectAll().where("tenant_id", "=", tenantId)
            .orderBy("created_at", "desc").orderBy("id", "desc").limit(window.limit).offset(window.offset).execute()
          const count = await db.selectFrom("connect_tokens").select((eb) => eb.fn.countAll().as("n"))
            .where("tenant_id", "=", tenantId).executeTakeFirstOrThrow()
          return { items: items.map(fromRow), total: Number(count.n) }
        }),
      compareAndSet: (expected, next) =>
        query(connection, (db) => {
          // Row locks make a concurrent writer wait and then re-check this condition against the committed row.
          let update = db.updateTable("connect_tokens")
            .set({
              uses_count: next.uses_count,
              use_window_ends_at: next.use_window_ends_at,
              revoked_at: next.revoked_at
            })
            .where("tenant_id", "=", expected.tenant_id)
            .where("id", "=", expected.id)
            .where("uses_count", "=", expected.uses_count)
          update = expected.revoked_at === null
            ? update.where("revoked_at", "is", null)
            : update.where("revoked_at", "=", expected.revoked_at)
          return update.executeTakeFirst()
        }).pipe(Effect.map((result) => Number(result.numUpdatedRows) === 1))
    })
  })
)
