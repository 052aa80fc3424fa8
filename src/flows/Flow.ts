import { Schema } from "effect"
import { UuidId, UuidString } from "../kernel/Id.ts"
import { PaginationInfo } from "../kernel/Pagination.ts"
import type {
  CustomFieldRecord,
  FlowDefinitionRecord,
  FlowSessionRecord,
  FlowVersionRecord,
  TagRecord
} from "../ports/FlowStore.ts"

const Name = Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(200))
const InputName = Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(200))

/** A screen of a flow version as the API takes and returns it. */
export const FlowScreenSchema = Schema.Struct({
  id: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(200)),
  inputs: Schema.Array(Schema.Struct({ name: InputName, type: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(100)) }))
    .check(Schema.isMaxLength(100)),
  sensitive_fields: Schema.optionalKey(Schema.Array(InputName).check(Schema.isMaxLength(100)))
})

/** A write-back mapping as the API takes and returns it. */
export const WritebackMappingSchema = Schema.Struct({
  input: InputName,
  target: Schema.Literals(["contact_field", "custom_field", "tag", "subscription", "unsubscription"]),
  field: Schema.optionalKey(Schema.Literals(["name", "email", "phone", "language"])),
  custom_field_id: Schema.optionalKey(UuidString),
  tag_id: Schema.optionalKey(UuidString),
  list_id: Schema.optionalKey(UuidString)
})

const Screens = Schema.Array(FlowScreenSchema).check(Schema.isMinLength(1), Schema.isMaxLength(50))
const Writeback = Schema.Array(WritebackMappingSchema).check(Schema.isMaxLength(200))

/** Body of `POST /chatapp-flows`: a flow definition and its first version. */
export const CreateFlowRequest = Schema.Struct({
  name: Name,
  channel_id: UuidString,
  meta_flow_id: Schema.String.check(
    Schema.isPattern(/^[1-9]\d{0,29}$/, { message: "The platform's flow id: digits only, not starting with 0" })
  ),
  screens: Screens,
  writeback: Schema.optionalKey(Writeback)
})
/** Body of `POST /chatapp-flows`. */
export type CreateFlowRequest = typeof CreateFlowRequest.Type
export declare namespace CreateFlowRequest {}

/** Body of `POST /chatapp-flows/{id}/versions`. */
export const CreateVersionRequest = Schema.Struct({ screens: Screens, writeback: Schema.optionalKey(Writeback) })
/** Body of `POST /chatapp-flows/{id}/versions`. */
export type CreateVersionRequest = typeof CreateVersionRequest.Type
export declare namespace CreateVersionRequest {}

/** Body of `POST /chatapp-flows/{id}/send`. */
export const SendFlowRequest = Schema.Struct({
  contact_id: UuidString,
  channel_id: UuidString,
  /** The message's text above the button; default: the flow's name. */
  body: Schema.optionalKey(Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(1024))),
  /** The button's label; default "Open". */
  cta: Schema.optionalKey(Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(30)))
})
/** Body of `POST /chatapp-flows/{id}/send`. */
export type SendFlowRequest = typeof SendFlowRequest.Type
export declare namespace SendFlowRequest {}

/** A flow version as the API returns it. */
export const FlowVersion = Schema.Struct({
  id: UuidId,
  number: Schema.Int,
  screens: Schema.Array(Schema.Struct({
    id: Schema.String,
    inputs: Schema.Array(Schema.Struct({ name: Schema.String, type: Schema.String })),
    sensitive_fields: Schema.Array(Schema.String)
  })),
  writeback: Schema.Array(Schema.Struct({
    input: Schema.String,
    target: Schema.Literals(["contact_field", "custom_field", "tag", "subscription", "unsubscription"]),
    field: Schema.optionalKey(Schema.String),
    custom_field_id: Schema.optionalKey(UuidId),
    tag_id: Schema.optionalKey(UuidId),
    list_id: Schema.optionalKey(UuidId)
  })),
  created_at: Schema.String
})

/** A flow definition as the API returns it, with its latest version. */
export const FlowDefinition = Schema.Struct({
  id: UuidId,
  tenant_id: UuidId,
  channel_id: UuidId,
  name: Schema.String,
  meta_flow_id: Schema.String,
  status: Schema.NullOr(Schema.String),
  health_status: Schema.NullOr(Schema.String),
  latest_version: Schema.NullOr(FlowVersion),
  created_at: Schema.String,
  updated_at: Schema.NullOr(Schema.String)
})
/** A flow definition as the API returns it. */
export type FlowDefinition = typeof FlowDefinition.Type
export declare namespace FlowDefinition {}

/** Response of `GET /chatapp-flows`. */
export const FlowDefinitionList = Schema.Struct({ items: Schema.Array(FlowDefinition) })

/** The spec's Flow session. */
export const FlowSession = Schema.Struct({
  id: UuidId,
  definition_id: UuidId,
  version_id: Schema.NullOr(UuidId),
  version_number: Schema.NullOr(Schema.Int),
  contact_id: Schema.NullOr(UuidId),
  contact_name: Schema.NullOr(Schema.String),
  conversation_id: Schema.NullOr(UuidId),
  channel_id: UuidId,
  sender_type: Schema.Literals(["inbox", "campaign", "automation", "api", "adopted"]),
  status: Schema.String,
  last_screen: Schema.NullOr(Schema.String),
  answers: Schema.NullOr(Schema.Record(Schema.String, Schema.Unknown)),
  writeback_result: Schema.NullOr(Schema.Record(Schema.String, Schema.Unknown)),
  last_error: Schema.NullOr(Schema.String),
  created_at: Schema.String,
  opened_at: Schema.NullOr(Schema.String),
  completed_at: Schema.NullOr(Schema.String),
  expires_at: Schema.String
})
/** The spec's Flow session. */
export type FlowSession = typeof FlowSession.Type
export declare namespace FlowSession {}

/** Response of `GET /chatapp-flows/{id}/sessions`. */
export const FlowSessionList = Schema.Struct({ items: Schema.Array(FlowSession), pagination: PaginationInfo })

/** A custom field definition as the API takes and returns it. */
export const CustomField = Schema.Struct({
  id: UuidId,
  key: Schema.String,
  type: Schema.Literals(["text", "number", "boolean", "date"]),
  editable: Schema.Boolean,
  created_at: Schema.String
})
/** A custom field definition as the API returns it. */
export type CustomField = typeof CustomField.Type
export declare namespace CustomField {}
/** Body of `POST /custom-fields`. */
export const CreateCustomFieldRequest = Schema.Struct({
  key: Schema.String.check(Schema.isPattern(/^[a-z][a-z0-9_]{0,63}$/, { message: "Lower-case letters, digits and underscores, starting with a letter, at most 64" })),
  type: Schema.Literals(["text", "number", "boolean", "date"]),
  editable: Schema.optionalKey(Schema.Boolean)
})
/** A tag as the API returns it. */
export const Tag = Schema.Struct({ id: UuidId, name: Schema.String, created_at: Schema.String })
/** A tag as the API returns it. */
export type Tag = typeof Tag.Type
export declare namespace Tag {}
/** Body of `POST /tags`. */
export const CreateTagRequest = Schema.Struct({ name: Name })

/** The wire form of a version. */
export const toFlowVersion = (record: FlowVersionRecord): typeof FlowVersion.Type => ({
  id: record.id,
  number: record.number,
  screens: record.screens.map((s) => ({ id: s.id, inputs: s.inputs.map((i) => ({ ...i })), sensitive_fields: [...s.sensitive_fields] })),
  writeback: record.writeback.map((m) => ({ ...m })),
  created_at: record.created_at
})

/** The wire form of a definition with its latest version. */
export const toFlowDefinition = (record: FlowDefinitionRecord, latest: FlowVersionRecord | null): FlowDefinition => ({
  id: record.id,
  tenant_id: record.tenant_id,
  channel_id: record.channel_id,
  name: record.name,
  meta_flow_id: record.meta_flow_id,
  status: record.status,
  health_status: record.health_status,
  latest_version: latest === null ? null : toFlowVersion(latest),
  created_at: record.created_at,
  updated_at: record.updated_at
})

/** The wire form of a session (`status` as read now: `expired` past its time). The flow token is never shown. */
export const toFlowSession = (record: FlowSessionRecord, contactName: string | null, status: string): FlowSession => ({
  id: record.id,
  definition_id: record.definition_id,
  version_id: record.version_id,
  version_number: record.version_number,
  contact_id: record.contact_id,
  contact_name: contactName,
  conversation_id: record.conversation_id,
  channel_id: record.channel_id,
  sender_type: record.sender_type,
  status,
  last_screen: record.last_screen,
  answers: record.answers,
  writeback_result: record.writeback_result,
  last_error: record.last_error,
  created_at: record.created_at,
  opened_at: record.opened_at,
  completed_at: record.completed_at,
  expires_at: record.expires_at
})

/** The wire form of a custom field definition. */
export const toCustomField = (record: CustomFieldRecord): CustomField => ({
  id: record.id,
  key: record.key,
  type: record.type,
  editable: record.editable,
  created_at: record.created_at
})

/** The wire form of a tag. */
export const toTag = (record: TagRecord): Tag => ({ id: record.id, name: record.name, created_at: record.created_at })
