import type { Kysely } from "kysely"

/**
 * Chat-app flows (definitions, numbered versions, sessions), custom field definitions and tags.
 * A definition's `alerts`, a version's `screens` and `writeback`, and a session's `answers` and
 * `writeback_result` are JSON text; `editable` is 0/1. `flow_definitions_tenant_created_idx` lists a
 * tenant's definitions, `flow_definitions_meta_flow_idx` finds those of a platform flow id in any
 * tenant. A version's number is unique within its definition (`flow_versions_definition_number_unique`).
 * A session is found by its flow token's hash alone (`flow_sessions_token_unique`); the three
 * `flow_sessions_tenant_definition_*` indexes list a definition's sessions newest first, unfiltered,
 * by status or by contact. A custom field's key and a tag's name are unique within the tenant; a
 * contact carries a tag once (primary key tenant, contact, tag). Never edit once landed.
 */
export const up = async (db: Kysely<unknown>, _dialect: "sqlite" | "postgres"): Promise<void> => {
  await db.schema.createTable("flow_definitions")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("tenant_id", "text", (c) => c.notNull().references("tenants.id"))
    .addColumn("channel_id", "text", (c) => c.notNull())
    .addColumn("name", "text", (c) => c.notNull())
    .addColumn("meta_flow_id", "text", (c) => c.notNull())
    .addColumn("status", "text")
    .addColumn("health_status", "text")
    .addColumn("alerts", "text", (c) => c.notNull())
    .addColumn("created_at", "text", (c) => c.notNull())
    .addColumn("updated_at", "text")
    .execute()
  await db.schema.createIndex("flow_definitions_tenant_created_idx").on("flow_definitions")
    .columns(["tenant_id", "created_at", "id"]).execute()
  await db.schema.createIndex("flow_definitions_meta_flow_idx").on("flow_definitions")
    .column("meta_flow_id").execute()

  await db.schema.createTable("flow_versions")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("tenant_id", "text", (c) => c.notNull().references("tenants.id"))
    .addColumn("definition_id", "text", (c) => c.notNull())
    .addColumn("number", "integer", (c) => c.notNull())
    .addColumn("screens", "text", (c) => c.notNull())
    .addColumn("writeback", "text", (c) => c.notNull())
    .addColumn("created_at", "text", (c) => c.notNull())
    .execute()
  await db.schema.createIndex("flow_versions_definition_number_unique").on("flow_versions")
    .columns(["definition_id", "number"]).unique().execute()

  await db.schema.createTable("flow_sessions")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("tenant_id", "text", (c) => c.notNull().references("tenants.id"))
    .addColumn("definition_id", "text", (c) => c.notNull())
    .addColumn("version_id", "text")
    .addColumn("version_number", "integer")
    .addColumn("contact_id", "text")
    .addColumn("conversation_id", "text")
    .addColumn("channel_id", "text", (c) => c.notNull())
    .addColumn("sender_type", "text", (c) => c.notNull())
    .addColumn("status", "text", (c) => c.notNull())
    .addColumn("flow_token_hash", "text", (c) => c.notNull())
    .addColumn("last_screen", "text")
    .addColumn("answers", "text")
    .addColumn("writeback_result", "text")
    .addColumn("last_error", "text")
    .addColumn("message_id", "text")
    .addColumn("answer_message_id", "text")
    .addColumn("created_at", "text", (c) => c.notNull())
    .addColumn("opened_at", "text")
    .addColumn("completed_at", "text")
    .addColumn("expires_at", "text", (c) => c.notNull())
    .execute()
  await db.schema.createIndex("flow_sessions_token_unique").on("flow_sessions")
    .column("flow_token_hash").unique().execute()
  await db.schema.createIndex("flow_sessions_tenant_definition_created_idx").on("flow_sessions")
    .columns(["tenant_id", "definition_id", "created_at", "id"]).execute()
  await db.schema.createIndex("flow_sessions_tenant_definition_status_idx").on("flow_sessions")
    .columns(["tenant_id", "definition_id", "status", "created_at", "id"]).execute()
  await db.schema.createIndex("flow_sessions_tenant_definition_contact_idx").on("flow_sessions")
    .columns(["tenant_id", "definition_id", "contact_id", "created_at", "id"]).execute()

  await db.schema.createTable("custom_field_definitions")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("tenant_id", "text", (c) => c.notNull().references("tenants.id"))
    .addColumn("key", "text", (c) => c.notNull())
    .addColumn("type", "text", (c) => c.notNull())
    .addColumn("editable", "integer", (c) => c.notNull())
    .addColumn("created_at", "text", (c) => c.notNull())
    .execute()
  await db.schema.createIndex("custom_fields_tenant_key_unique").on("custom_field_definitions")
    .columns(["tenant_id", "key"]).unique().execute()

  await db.schema.createTable("tags")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("tenant_id", "text", (c) => c.notNull().references("tenants.id"))
    .addColumn("name", "text", (c) => c.notNull())
    .addColumn("created_at", "text", (c) => c.notNull())
    .execute()
  await db.schema.createIndex("tags_tenant_name_unique").on("tags")
    .columns(["tenant_id", "name"]).unique().execute()

  await db.schema.createTable("contact_tags")
    .addColumn("tenant_id", "text", (c) => c.notNull().references("tenants.id"))
    .addColumn("contact_id", "text", (c) => c.notNull())
    .addColumn("tag_id", "text", (c) => c.notNull())
    .addColumn("tagged_at", "text", (c) => c.notNull())
    .addPrimaryKeyConstraint("contact_tags_pkey", ["tenant_id", "contact_id", "tag_id"])
    .execute()
}
