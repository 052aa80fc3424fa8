import { Effect, Layer, Option } from "effect"
import { type TemplateRecord, TemplateStore } from "../../../src/ports/TemplateStore.ts"
import { KyselyConnection, query } from "../Connection.ts"
import type { ChatappTemplatesTable } from "../Database.ts"

const fromRow = (row: ChatappTemplatesTable): TemplateRecord => ({
  ...row,
  components: JSON.parse(row.components) as TemplateRecord["components"]
})

const toRow = (template: TemplateRecord): ChatappTemplatesTable => ({
  ...template,
  components: JSON.stringify(template.components)
})

/** `TemplateStore` on Kysely. */
export const templateStoreLayer: Layer.Layer<TemplateStore, never, KyselyConnection> = Layer.effect(
  TemplateStore,
  Effect.gen(function*() {
    const connection = yield* KyselyConnection
    return TemplateStore.of({
      insert: (template) =>
        query(connection, (db) => db.insertInto("chatapp_templates").values(toRow(template)).execute()).pipe(Effect.asVoid),
      get: (tenantId, id) =>
        query(connection, (db) =>
          db.selectFrom("chatapp_templates").selectAll().where("tenant_id", "=", tenantId).where("id", "=", id)
            .executeTakeFirst())
          .pipe(Effect.map((row) => Option.map(Option.fromNullishOr(row), fromRow))),
      findByName: (tenantId, channelId, name, language) =>
        query(connection, (db) =>
          db.selectFrom("chatapp_templates").selectAll().where("tenant_id", "=", tenantId)
            .where("channel_id", "=", channelId).where("name", "=", name).where("language", "=", language)
            .executeTakeFirst())
          .pipe(Effect.map((row) => Option.map(Option.fromNullishOr(row), fromRow))),
      // From chatapp_templates_channel_name_unique alone.
      namesOnChannel: (tenantId, channelId) =>
        query(connection, (db) =>
          db.selectFrom("chatapp_templates").select(["name", "language"]).where("tenant_id", "=", tenantId)
            .where("channel_id", "=", channelId).execute()),
      list: (tenantId, filter, window) =>
        query(connection, async (db) => {
          let base = db.selectFrom("chatapp_templates").where("tenant_id", "=", tenantId)
          if (filter.channel_id !== undefined) base = base.where("channel_id", "=", filter.channel_id)
          if (filter.status !== undefined) base = base.where("status", "=", filter.status)
          const items = await base.selectAll().orderBy("created_at", "desc").orderBy("id", "desc")
            .limit(window.limit).offset(window.offset).execute()
          const count = await base.select((eb) => eb.fn.countAll().as("n")).executeTakeFirstOrThrow()
          return { items: items.map(fromRow), total: Number(count.n) }
        }),
      update: (tenantId, template, expectedAttemptId) => {
        const { id: _id, tenant_id: _tenant, created_at: _created, ...changes } = toRow(template)
        return query(connection, (db) => {
          let update = db.updateTable("chatapp_templates").set(changes).where("tenant_id", "=", tenantId)
            .where("id", "=", template.id)
          if (expectedAttemptId !== undefined) update = update.where("attempt_id", "=", expectedAttemptId)
          return update.executeTakeFirst()
        }).pipe(Effect.map((result) => Number(result.numUpdatedRows) > 0))
      },
      removeReservation: (tenantId, id, attemptId) =>
        query(connection, (db) =>
          db.deleteFrom("chatapp_templates").where("tenant_id", "=", tenantId).where("id", "=", id)
            .where("attempt_id", "=", attemptId).where("status", "=", "submitting").executeTakeFirst())
          .pipe(Effect.map((result) => Number(result.numDeletedRows) > 0)),
      // Across tenants, through chatapp_templates_external_idx.
      findByExternalId: (externalId) =>
        query(connection, (db) =>
          db.selectFrom("chatapp_templates").selectAll().where("external_id", "=", externalId)
            .orderBy("created_at", "asc").orderBy("id", "asc").execute())
          .pipe(Effect.map((rows) => rows.map(fromRow)))
    })
  })
)
