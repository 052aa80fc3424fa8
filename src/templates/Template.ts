import { Schema } from "effect"
import { UuidId } from "../kernel/Id.ts"
import { PaginationInfo } from "../kernel/Pagination.ts"
import type { TemplateRecord } from "../ports/TemplateStore.ts"
import { ButtonInput, LibrarySnapshot } from "./Adoption.ts"
import { Placeholder, placeholdersOf } from "./TemplateParameters.ts"

/** A chat-app template of a channel as the API returns it. */
export const Template = Schema.Struct({
  id: UuidId,
  channel_id: UuidId,
  name: Schema.String,
  language: Schema.String,
  category: Schema.String,
  /** The operator's status in lower case (`approved`, `pending`, `rejected`, …), `submitting` while being created. */
  status: Schema.String,
  status_reason: Schema.NullOr(Schema.String),
  /** The operator's template id. */
  template_id: Schema.NullOr(Schema.String),
  /** The library entry it was adopted from unchanged; null for an ordinary template. */
  library_template_name: Schema.NullOr(Schema.String),
  components: Schema.Array(Schema.Record(Schema.String, Schema.Unknown)),
  /** The values a send supplies, in the order of `variable_values`. */
  placeholders: Schema.Array(Placeholder),
  created_at: Schema.String,
  updated_at: Schema.NullOr(Schema.String)
})
/** A template as the API returns it. */
export type Template = typeof Template.Type
export declare namespace Template {}

/** Response of `GET /chatapp-templates`. */
export const TemplateList = Schema.Struct({ items: Schema.Array(Template), pagination: PaginationInfo })

/** The wire form of a stored template. */
export const toTemplate = (record: TemplateRecord): Template => ({
  id: record.id,
  channel_id: record.channel_id,
  name: record.name,
  language: record.language,
  category: record.category,
  status: record.status,
  status_reason: record.status_reason,
  template_id: record.external_id,
  library_template_name: record.library_template_name,
  components: record.components,
  placeholders: placeholdersOf(record.components),
  created_at: record.created_at,
  updated_at: record.updated_at
})

/** The categories a template may have. */
export const TEMPLATE_CATEGORIES = ["UTILITY", "MARKETING", "AUTHENTICATION"] as const

/** Body of `POST /chatapp-templates/library/adopt`. */
export const AdoptRequest = Schema.Struct({
  channel_id: Schema.String,
  library_template_name: Schema.String.check(Schema.isMinLength(1)),
  /** The operator's language code; `en_US` when absent. Blank is refused, not read as "all languages". */
  language: Schema.optionalKey(Schema.String.check(Schema.isPattern(/\S/, { message: "Must not be blank" }))),
  category: Schema.optionalKey(Schema.Literals(TEMPLATE_CATEGORIES)),
  name: Schema.optionalKey(Schema.String),
  button_inputs: Schema.optionalKey(Schema.Array(ButtonInput)),
  snapshot: Schema.optionalKey(LibrarySnapshot)
})
/** Body of `POST /chatapp-templates/library/adopt`. */
export type AdoptRequest = typeof AdoptRequest.Type
export declare namespace AdoptRequest {}

/** The adopt response (the spec's Adopt response); on failure `success` is false and the error fields are filled. */
export const AdoptResponse = Schema.Struct({
  success: Schema.Boolean,
  id: Schema.NullOr(UuidId),
  template_id: Schema.NullOr(Schema.String),
  name: Schema.String,
  language: Schema.String,
  status: Schema.NullOr(Schema.String),
  category: Schema.NullOr(Schema.String),
  already_existed: Schema.Boolean,
  error: Schema.NullOr(Schema.String),
  error_code: Schema.NullOr(Schema.Int),
  error_subcode: Schema.NullOr(Schema.Int),
  error_is_retryable: Schema.Boolean,
  /** The operator's trace id of the failed request; null when the operator gave none (and on success). */
  fbtrace_id: Schema.NullOr(Schema.String)
})
/** The adopt response. */
export type AdoptResponse = typeof AdoptResponse.Type
export declare namespace AdoptResponse {}

/** The adopt response of a stored template. */
export const adoptedResponse = (record: TemplateRecord, alreadyExisted: boolean): AdoptResponse => ({
  success: true,
  id: record.id,
  template_id: record.external_id,
  name: record.name,
  language: record.language,
  status: record.status,
  category: record.category,
  already_existed: alreadyExisted,
  error: null,
  error_code: null,
  error_subcode: null,
  error_is_retryable: false,
  fbtrace_id: null
})

/** Body of `POST /chatapp-templates/{template_id}/send`. */
export const SendTemplateRequest = Schema.Struct({
  contact_id: Schema.String,
  channel_id: Schema.String,
  language: Schema.optionalKey(Schema.String),
  variable_values: Schema.optionalKey(Schema.Array(Schema.String))
})
/** Body of `POST /chatapp-templates/{template_id}/send`. */
export type SendTemplateRequest = typeof SendTemplateRequest.Type
export declare namespace SendTemplateRequest {}
