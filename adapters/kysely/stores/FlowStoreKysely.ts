import { Effect, Layer, Option } from "effect"
import {
  type CustomFieldRecord,
  type FlowDefinitionRecord,
  type FlowScreen,
  type FlowSessionRecord,
  FlowStore,
  type FlowVersionRecord,
  type TagRecord,
  type WritebackMapping
} from "../../../src/ports/FlowStore.ts"
import { StorageError } from "../../../src/ports/StorageError.ts"
import { atomically, KyselyConnection, query } from "../Connection.ts"
import type {
  CustomFieldDefinitionsTable,
  Db,
  FlowDefinitionsTable,
  FlowSessionsTable,
  FlowVersionsTable,
  TagsTable
} from "../Database.ts"
import { fromFlag, toFlag } from "./Rows.ts"

const integerOrNull = (value: number | string | null): number | null => (value === null ? null : Number(value))

const jsonOrNull = <A>(text: string | null): A | null => (text === null ? null : JSON.parse(text) as A)

const definitionFromRow = (row: FlowDefinitionsTable): FlowDefinitionRecord => ({
  ...row,
  alerts: JSON.parse(row.alerts) as Record<string, string>
})

const definitionToRow = (definition: FlowDefinitionRecord): FlowDefinitionsTable => ({
  ...definition,
  alerts: JSON.stringify(definition.alerts)
})

const versionFromRow = (row: FlowVersionsTable): FlowVersionRecord => ({
  ...row,
  number: Number(row.number),
  screens: JSON.parse(row.screens) as Array<FlowScreen>,
  writeback: JSON.parse(row.writeback) as Array<WritebackMapping>
})

const versionToRow = (version: FlowVersionRecord): FlowVersionsTable => ({
  ...version,
  screens: JSON.stringify(version.screens),
  writeback: JSON.stringify(version.writeback)
})

const sessionFromRow = (row: FlowSessionsTable): FlowSessionRecord => ({
  ...row,
  version_number: integerOrNull(row.version_number),
  sender_type: row.sender_type as FlowSessionRecord["sender_type"],
  answers: jsonOrNull<Record<string, unknown>>(row.answers),
  writeback_result: jsonOrNull<Record<string, unknown>>(row.writeback_result)
})

const sessionToRow = (session: FlowSessionRecord): FlowSessionsTable => ({
  ...session,
  answers: session.answers === null ? null : JSON.stringify(session.answers),
  writeback_result: session.writeback_result === null ? null : JSON.stringify(session.writeback_result)
})

/** What an update of a session writes: every field but its key (tenant and id), which picks the row. */
const sessionChanges = (session: FlowSessionRecord): Omit<FlowSessionsTable, "id" | "tenant_id"> => {
  const { id: _id, tenant_id: _tenant, ...changes } = sessionToRow(session)
  return changes
}

const customFieldFromRow = (row: CustomFieldDefinitionsTable): CustomFieldRecord => ({
  ...row,
  type: row.type as CustomFieldRecord["type"],
  editable: fromFlag(row.editable)
})

const customFieldToRow = (field: CustomFieldRecord): CustomFieldDefinitionsTable => ({
  ...field,
  editable: toFlag(field.editable)
})

const tagFromRow = (row: TagsTable): TagRecord => row

/** Whether definition `definitionId` is one of the tenant's. */
const ownsDefinition = async (db: Db, tenantId: string, definitionId: string): Promise<boolean> =>
  (await db.selectFrom("flow_definitions").select("id").where("tenant_id", "=", tenantId).where("id", "=", definitionId)
    .executeTakeFirst()) !== undefined

/**
 * `FlowStore` on Kysely. Every read and write is scoped by tenant but `findSessionByTokenHash` (an
 * answer names only the token) and `findDefinitionsByMetaFlowId` (a platform webhook names only the
 * flow). Versions are stored only under a definition of their own tenant: the key (definition_id,
 * number) does not hold the tenant, so a version of one tenant under another's definition id would
 * take that definition's number. Completing a session is one conditional UPDATE on its status, so of
 * two answers at once exactly one completes it. Lists without an order of the port's come in the order
 * rows were created (created_at, then id).
 */
export const flowStoreLayer: Layer.Layer<FlowStore, never, KyselyConnection> = Layer.effect(
  FlowStore,
  Effect.gen(function*() {
    const connection = yield* KyselyConnection
    // A definition's sessions with the filters: the flow_sessions_tenant_definition_* indexes.
    const sessionsOf = (
      db: Db,
      tenantId: string,
      definitionId: string,
      filter: {
        readonly status?: string
        readonly contact_id?: string
        readonly expires_from?: string
        readonly expired_before?: string
      }
    ) => {
      let select = db.selectFrom("flow_sessions").where("tenant_id", "=", tenantId).where("definition_id", "=", definitionId)
      if (filter.status !== undefined) select = select.where("status", "=", filter.status)
      if (filter.contact_id !== undefined) select = select.where("contact_id", "=", filter.contact_id)
      if (filter.expires_from !== undefined) select = select.where("expires_at", ">=", filter.expires_from)
      if (filter.expired_before !== undefined) select = select.where("expires_at", "<", filter.expired_before)
      return select
    }
    return FlowStore.of({
      insertDefinition: (definition) =>
        query(connection, (db) => db.insertInto("flow_definitions").values(definitionToRow(definition)).execute())
          .pipe(Effect.asVoid),
      getDefinition: (tenantId, id) =>
        query(connection, (db) =>
          db.selectFrom("flow_definitions").selectAll().where("tenant_id", "=", tenantId).where("id", "=", id)
            .executeTakeFirst())
          .pipe(Effect.map((row) => Option.map(Option.fromNullishOr(row), definitionFromRow))),
      // Through flow_definitions_tenant_created_idx.
      listDefinitions: (tenantId) =>
        query(connection, (db) =>
          db.selectFrom("flow_definitions").selectAll().where("tenant_id", "=", tenantId)
            .orderBy("created_at").orderBy("id").execute())
          .pipe(Effect.map((rows) => rows.map(definitionFromRow))),
      // Through flow_definitions_meta_flow_idx; in every tenant.
      findDefinitionsByMetaFlowId: (metaFlowId) =>
        query(connection, (db) =>
          db.selectFrom("flow_definitions").selectAll().where("meta_flow_id", "=", metaFlowId)
            .orderBy("created_at").orderBy("id").execute())
          .pipe(Effect.map((rows) => rows.map(definitionFromRow))),
      updateDefinition: (tenantId, definition) => {
        const { id: _id, tenant_id: _tenant, created_at: _created, ...changes } = definitionToRow(definition)
        return query(connection, (db) =>
          db.updateTable("flow_definitions").set(changes).where("tenant_id", "=", tenantId).where("id", "=", definition.id)
            .executeTakeFirst())
          .pipe(Effect.map((result) => Number(result.numUpdatedRows) > 0))
      },

      // The number's uniqueness is flow_versions_definition_number_unique's; a definition of another
      // tenant (or none) is refused before anything is written.
      insertVersion: (version) =>
        atomically(connection, async (db) => {
          if (!await ownsDefinition(db, version.tenant_id, version.definition_id)) return false
          await db.insertInto("flow_versions").values(versionToRow(version)).execute()
          return true
        }).pipe(Effect.flatMap((stored) =>
          stored ? Effect.void : Effect.fail(
            new StorageError({
              reason: "Unknown",
              message: `flow version ${version.id}: definition ${version.definition_id} is not one of tenant ${version.tenant_id}'s`
            })
          )
        )),
      getVersion: (tenantId, id) =>
        query(connection, (db) =>
          db.selectFrom("flow_versions").selectAll().where("tenant_id", "=", tenantId).where("id", "=", id)
            .executeTakeFirst())
          .pipe(Effect.map((row) => Option.map(Option.fromNullishOr(row), versionFromRow))),
      // Through flow_versions_definition_number_unique, read backwards.
      listVersions: (tenantId, definitionId) =>
        query(connection, (db) =>
          db.selectFrom("flow_versions").selectAll().where("definition_id", "=", definitionId)
            .where("tenant_id", "=", tenantId).orderBy("number", "desc").execute())
          .pipe(Effect.map((rows) => rows.map(versionFromRow))),

      insertSession: (session) =>
        query(connection, (db) => db.insertInto("flow_sessions").values(sessionToRow(session)).execute())
          .pipe(Effect.asVoid),
      getSession: (tenantId, id) =>
        query(connection, (db) =>
          db.selectFrom("flow_sessions").selectAll().where("tenant_id", "=", tenantId).where("id", "=", id)
            .executeTakeFirst())
          .pipe(Effect.map((row) => Option.map(Option.fromNullishOr(row), sessionFromRow))),
      // Through flow_sessions_token_unique; in every tenant.
      findSessionByTokenHash: (tokenHash) =>
        query(connection, (db) =>
          db.selectFrom("flow_sessions").selectAll().where("flow_token_hash", "=", tokenHash).executeTakeFirst())
          .pipe(Effect.map((row) => Option.map(Option.fromNullishOr(row), sessionFromRow))),
      // One statement: the status test and the write are one, so concurrent completions find the row
      // already changed (PostgreSQL re-reads it once the first commits) and change nothing.
      completeSession: (tenantId, session) =>
        query(connection, (db) =>
          db.updateTable("flow_sessions").set(sessionChanges(session))
            .where("tenant_id", "=", tenantId).where("id", "=", session.id).where("status", "=", "sent")
            .executeTakeFirst())
          .pipe(Effect.map((result) => Number(result.numUpdatedRows) > 0)),
      updateSession: (tenantId, session) =>
        query(connection, (db) =>
          db.updateTable("flow_sessions").set(sessionChanges(session))
            .where("tenant_id", "=", tenantId).where("id", "=", session.id)
            .executeTakeFirst())
          .pipe(Effect.map((result) => Number(result.numUpdatedRows) > 0)),
      listSessions: (tenantId, definitionId, filter, window) =>
        query(connection, async (db) => {
          const items = await sessionsOf(db, tenantId, definitionId, filter).selectAll()
            .orderBy("created_at", "desc").orderBy("id", "desc").limit(window.limit).offset(window.offset).execute()
          const count = await sessionsOf(db, tenantId, definitionId, filter).select((eb) => eb.fn.countAll().as("n"))
            .executeTakeFirstOrThrow()
          return { items: items.map(sessionFromRow), total: Number(count.n) }
        }),

      insertCustomField: (field) =>
        query(connection, (db) => db.insertInto("custom_field_definitions").values(customFieldToRow(field)).execute())
          .pipe(Effect.asVoid),
      getCustomField: (tenantId, id) =>
        query(connection, (db) =>
          db.selectFrom("custom_field_definitions").selectAll().where("tenant_id", "=", tenantId).where("id", "=", id)
            .executeTakeFirst())
          .pipe(Effect.map((row) => Option.map(Option.fromNullishOr(row), customFieldFromRow))),
      listCustomFields: (tenantId) =>
        query(connection, (db) =>
          db.selectFrom("custom_field_definitions").selectAll().where("tenant_id", "=", tenantId)
            .orderBy("created_at").orderBy("id").execute())
          .pipe(Effect.map((rows) => rows.map(customFieldFromRow))),

      insertTag: (tag) =>
        query(connection, (db) => db.insertInto("tags").values(tag).execute()).pipe(Effect.asVoid),
      getTag: (tenantId, id) =>
        query(connection, (db) =>
          db.selectFrom("tags").selectAll().where("tenant_id", "=", tenantId).where("id", "=", id).executeTakeFirst())
          .pipe(Effect.map((row) => Option.map(Option.fromNullishOr(row), tagFromRow))),
      listTags: (tenantId) =>
        query(connection, (db) =>
          db.selectFrom("tags").selectAll().where("tenant_id", "=", tenantId).orderBy("created_at").orderBy("id").execute())
          .pipe(Effect.map((rows) => rows.map(tagFromRow))),
      // Already there: the first tagging (and its time) is kept.
      tagContact: (tenantId, contactId, tagId, at) =>
        query(connection, (db) =>
          db.insertInto("contact_tags").values({ tenant_id: tenantId, contact_id: contactId, tag_id: tagId, tagged_at: at })
            .onConflict((oc) => oc.columns(["tenant_id", "contact_id", "tag_id"]).doNothing())
            .execute()).pipe(Effect.asVoid),
      // Through contact_tags_pkey, in the order the contact was tagged.
      tagsOf: (tenantId, contactId) =>
        query(connection, (db) =>
          db.selectFrom("contact_tags").select("tag_id").where("tenant_id", "=", tenantId).where("contact_id", "=", contactId)
            .orderBy("tagged_at").orderBy("tag_id").execute())
          .pipe(Effect.map((rows) => rows.map((row) => row.tag_id)))
    })
  })
)
