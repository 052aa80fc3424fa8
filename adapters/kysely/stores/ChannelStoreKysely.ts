import { Effect, Layer, Option } from "effect"
import { sql } from "kysely"
import { type ChannelRecord, ChannelStore } from "../../../src/ports/ChannelStore.ts"
import { KyselyConnection, query } from "../Connection.ts"
import type { ChannelsTable } from "../Database.ts"

const fromRow = (row: ChannelsTable): ChannelRecord => ({
  ...row,
  status: row.status === "disconnected" ? "disconnected" : "active",
  config: JSON.parse(row.config) as Record<string, string>,
  secrets: JSON.parse(row.secrets) as Record<string, string>
})

const toRow = (channel: ChannelRecord): ChannelsTable => ({
  ...channel,
  config: JSON.stringify(channel.config),
  secrets: JSON.stringify(channel.secrets)
})

/** `text` as a LIKE pattern matching it literally, with `\\` as the escape character. */
const likeEscaped = (text: string): string => text.replace(/[\\%_]/g, (c) => `\\${c}`)

/** `ChannelStore` on Kysely. */
export const channelStoreLayer: Layer.Layer<ChannelStore, never, KyselyConnection> = Layer.effect(
  ChannelStore,
  Effect.gen(function*() {
    const connection = yield* KyselyConnection
    return ChannelStore.of({
      insert: (channel) =>
        query(connection, (db) => db.insertInto("channels").values(toRow(channel)).execute()).pipe(Effect.asVoid),
      get: (tenantId, id) =>
        query(connection, (db) =>
          db.selectFrom("channels").selectAll().where("tenant_id", "=", tenantId).where("id", "=", id)
            .executeTakeFirst())
          .pipe(Effect.map((row) => Option.map(Option.fromNullishOr(row), fromRow))),
      list: (tenantId, window) =>
        query(connection, async (db) => {
          const items = await db.selectFrom("channels").selectAll().where("tenant_id", "=", tenantId)
            .orderBy("created_at", "desc").orderBy("id", "desc").limit(window.limit).offset(window.offset).execute()
          const count = await db.selectFrom("channels").select((eb) => eb.fn.countAll().as("n"))
            .where("tenant_id", "=", tenantId).executeTakeFirstOrThrow()
          return { items: items.map(fromRow), total: Number(count.n) }
        }),
      // Across tenants, through channels_platform_external_idx.
      findActiveByExternalId: (platform, externalId) =>
        query(connection, (db) =>
          db.selectFrom("channels").selectAll().where("platform", "=", platform).where("external_id", "=", externalId)
            .where("status", "=", "active").orderBy("created_at", "desc").orderBy("id", "desc").execute())
          .pipe(Effect.map((rows) => rows.map(fromRow))),
      // Config is stored as JSON.stringify writes it, so `"key":"value"` appears verbatim in the text;
      // the LIKE narrows the platform's channels and the parsed config decides.
      findActiveByConfig: (platform, key, value) =>
        query(connection, (db) =>
          db.selectFrom("channels").selectAll().where("platform", "=", platform).where("status", "=", "active")
            .where(sql<boolean>`config LIKE ${`%${likeEscaped(JSON.stringify({ [key]: value }).slice(1, -1))}%`} ESCAPE '\\'`)
            .orderBy("created_at", "desc").orderBy("id", "desc").execute())
          .pipe(Effect.map((rows) => rows.map(fromRow).filter((channel) => channel.config[key] === value))),
      update: (tenantId, channel) => {
        const { id: _id, tenant_id: _tenant, created_at: _created, ...changes } = toRow(channel)
        return query(connection, (db) =>
          db.updateTable("channels").set(changes).where("tenant_id", "=", tenantId).where("id", "=", channel.id)
            .executeTakeFirst())
          .pipe(Effect.map((result) => Number(result.numUpdatedRows) > 0))
      }
    })
  })
)
