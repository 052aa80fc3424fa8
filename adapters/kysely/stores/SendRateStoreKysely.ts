import { Effect, Layer, Option } from "effect"
import { sql } from "kysely"
import { SendRateStore } from "../../../src/ports/SendRateStore.ts"
import { KyselyConnection, query } from "../Connection.ts"
import type { SendRatesTable } from "../Database.ts"

// BIGINT may come back as a string (PGlite, a pool without this adapter's type parsers).
const fromRow = (row: SendRatesTable) => ({ ...row, next_free_us: Number(row.next_free_us) })

/** `SendRateStore` on Kysely: each write one upsert, atomic on both dialects. */
export const sendRateStoreLayer: Layer.Layer<SendRateStore, never, KyselyConnection> = Layer.effect(
  SendRateStore,
  Effect.gen(function*() {
    const connection = yield* KyselyConnection
    // The larger of two values: SQLite's two-argument max() is PostgreSQL's GREATEST().
    const greatest = sql.raw(connection.dialect === "postgres" ? "GREATEST" : "max")

    const get = (tenantId: string, channelId: string) =>
      query(connection, (db) =>
        db.selectFrom("send_rates").selectAll().where("tenant_id", "=", tenantId).where("channel_id", "=", channelId)
          .executeTakeFirst())
        .pipe(Effect.map((row) => Option.map(Option.fromNullishOr(row), fromRow)))

    return SendRateStore.of({
      get,
      reserve: Effect.fnUntraced(function*(tenantId, channelId, { count, intervalUs, nowUs, maxAheadUs }) {
        const cost = count * intervalUs
        // The first reservation inserts the row; later ones move it only while the next free slot is
        // within reach, under the row's lock (PostgreSQL) or the one writer (SQLite).
        const moved = yield* query(connection, (db) =>
          db.insertInto("send_rates")
            .values({ tenant_id: tenantId, channel_id: channelId, next_free_us: nowUs + cost, host_per_second: null })
            .onConflict((oc) =>
              oc.columns(["tenant_id", "channel_id"])
                .doUpdateSet({ next_free_us: sql<number>`${greatest}(send_rates.next_free_us, ${nowUs}) + ${cost}` })
                .where("send_rates.next_free_us", "<=", nowUs + maxAheadUs)
            )
            .returning("next_free_us")
            .executeTakeFirst())
        if (moved !== undefined) return { reserved: true as const, startUs: Number(moved.next_free_us) - cost }
        const held = yield* get(tenantId, channelId)
        // The row exists (the insert met it); read back 0 only were it deleted in between.
        return { reserved: false as const, nextFreeUs: Option.match(held, { onNone: () => 0, onSome: (r) => r.next_free_us }) }
      }),
      holdUntil: (tenantId, channelId, untilUs) =>
        query(connection, (db) =>
          db.insertInto("send_rates")
            .values({ tenant_id: tenantId, channel_id: channelId, next_free_us: untilUs, host_per_second: null })
            .onConflict((oc) =>
              oc.columns(["tenant_id", "channel_id"])
                .doUpdateSet({ next_free_us: sql<number>`${greatest}(send_rates.next_free_us, ${untilUs})` })
            )
            .execute()).pipe(Effect.asVoid),
      setHostRate: (tenantId, channelId, perSecond) =>
        query(connection, (db) =>
          db.insertInto("send_rates")
            .values({ tenant_id: tenantId, channel_id: channelId, next_free_us: 0, host_per_second: perSecond })
            .onConflict((oc) => oc.columns(["tenant_id", "channel_id"]).doUpdateSet({ host_per_second: perSecond }))
            .execute()).pipe(Effect.asVoid)
    })
  })
)
