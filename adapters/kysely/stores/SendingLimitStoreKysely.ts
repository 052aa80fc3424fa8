import { Effect, Layer, Option } from "effect"
import { type SendingLimitRecord, SendingLimitStore } from "../../../src/ports/SendingLimitStore.ts"
import { KyselyConnection, query } from "../Connection.ts"
import type { SendingLimitsTable } from "../Database.ts"

const fromRow = (row: SendingLimitsTable): SendingLimitRecord => ({
  ...row,
  source: row.source === "webhook" ? "webhook" : "operator"
})

/** `SendingLimitStore` on Kysely. */
export const sendingLimitStoreLayer: Layer.Layer<SendingLimitStore, never, KyselyConnection> = Layer.effect(
  SendingLimitStore,
  Effect.gen(function*() {
    const connection = yield* KyselyConnection
    return SendingLimitStore.of({
      get: (tenantId, channelId) =>
        query(connection, (db) =>
          db.selectFrom("sending_limits").selectAll().where("tenant_id", "=", tenantId)
            .where("channel_id", "=", channelId).executeTakeFirst())
          .pipe(Effect.map((row) => Option.map(Option.fromNullishOr(row), fromRow))),
      put: (record) => {
        const { tenant_id: _tenant, channel_id: _channel, ...changes } = record
        return query(connection, (db) =>
          db.insertInto("sending_limits").values(record)
            .onConflict((oc) => oc.columns(["tenant_id", "channel_id"]).doUpdateSet(changes))
            .execute()).pipe(Effect.asVoid)
      }
    })
  })
)
