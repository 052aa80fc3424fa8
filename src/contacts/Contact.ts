import { Schema, SchemaTransformation } from "effect"
import { EMAIL_PATTERN } from "../kernel/Email.ts"
import { UuidId } from "../kernel/Id.ts"
import { PaginationInfo } from "../kernel/Pagination.ts"
import type { ContactRecord } from "../ports/ContactStore.ts"

/** E.164: a plus sign, a non-zero digit, at most 15 digits in all. */
export const E164_PATTERN = /^\+[1-9]\d{1,14}$/
/** A language tag such as `en`, `pt_BR` or `de-CH`. */
export const LANGUAGE_PATTERN = /^[A-Za-z]{2,3}(?:[_-][A-Za-z0-9]{2,8})*$/
/** Custom field keys: lower-case snake case, starting with a letter. */
export const CUSTOM_FIELD_KEY_PATTERN = /^[a-z][a-z0-9_]{0,63}$/
/** Most custom fields one contact may carry. */
export const MAX_CUSTOM_FIELDS = 100

/** Spaces, dashes, dots and brackets people type in phone numbers; dropped before the E.164 check. */
export const normalizePhone = (phone: string): string => phone.replace(/[\s\-.()]/g, "")

const Phone = Schema.String.pipe(
  Schema.decodeTo(
    Schema.String.check(Schema.isPattern(E164_PATTERN, { message: "Must be a phone number in E.164 form, such as +14155550100" })),
    SchemaTransformation.transform({ decode: normalizePhone, encode: (phone: string) => phone })
  )
)

// Names are stored trimmed, so one of only spaces would become an empty name.
const Name = Schema.String.check(
  Schema.isMinLength(1),
  Schema.isMaxLength(255),
  Schema.isPattern(/\S/, { message: "Must not be blank" })
)
const Email = Schema.String.check(Schema.isMaxLength(254), Schema.isPattern(EMAIL_PATTERN, { message: "Must be an email address" }))
const Language = Schema.String.check(Schema.isPattern(LANGUAGE_PATTERN, { message: "Must be a language code such as en, pt_BR or de-CH" }))
const CustomFieldValue = Schema.Union([Schema.String, Schema.Number, Schema.Boolean, Schema.Null])
// Keys are checked by a filter on the whole record, so a bad key is named as such (not "unknown field").
const CustomFields = Schema.Record(Schema.String, CustomFieldValue).check(
  Schema.isMaxProperties(MAX_CUSTOM_FIELDS),
  Schema.makeFilter((fields: Readonly<Record<string, unknown>>) =>
    Object.keys(fields).filter((key) => !CUSTOM_FIELD_KEY_PATTERN.test(key)).map((key) => ({
      path: [key],
      issue: "Custom field keys are lower-case snake_case, start with a letter and have at most 64 characters"
    }))
  )
)

/** Body of `POST /contacts`; at least one of name, phone or email. */
export const CreateContactRequest = Schema.Struct({
  name: Schema.optionalKey(Name),
  phone: Schema.optionalKey(Phone),
  email: Schema.optionalKey(Email),
  language: Schema.optionalKey(Language),
  custom_fields: Schema.optionalKey(CustomFields)
})
/** Body of `POST /contacts`. */
export type CreateContactRequest = typeof CreateContactRequest.Type
export declare namespace CreateContactRequest {}

/**
 * Body of `PATCH /contacts/{contact_id}`: only fields present change, `null` clears one, and
 * `custom_fields` merges key by key (a key set to `null` is removed).
 */
export const UpdateContactRequest = Schema.Struct({
  name: Schema.optionalKey(Schema.NullOr(Name)),
  phone: Schema.optionalKey(Schema.NullOr(Phone)),
  email: Schema.optionalKey(Schema.NullOr(Email)),
  language: Schema.optionalKey(Schema.NullOr(Language)),
  custom_fields: Schema.optionalKey(CustomFields)
})
/** Body of `PATCH /contacts/{contact_id}`. */
export type UpdateContactRequest = typeof UpdateContactRequest.Type
export declare namespace UpdateContactRequest {}

/** A contact as the API returns it. */
export const Contact = Schema.Struct({
  id: UuidId,
  tenant_id: UuidId,
  name: Schema.NullOr(Schema.String),
  phone: Schema.NullOr(Schema.String),
  email: Schema.NullOr(Schema.String),
  language: Schema.NullOr(Schema.String),
  custom_fields: Schema.Record(Schema.String, CustomFieldValue),
  created_at: Schema.String,
  updated_at: Schema.NullOr(Schema.String)
})
/** A contact as the API returns it. */
export type Contact = typeof Contact.Type
export declare namespace Contact {}

/** Response of `GET /contacts`. */
export const ContactList = Schema.Struct({
  items: Schema.Array(Contact),
  pagination: PaginationInfo
})

/** Response of `DELETE /contacts/{contact_id}`: what the erasure did. */
export const ContactDeleted = Schema.Struct({
  id: UuidId,
  deleted: Schema.Literal(true),
  /** The contact's conversations, kept without its personal data (closed if they were open). */
  conversation_ids: Schema.Array(UuidId),
  /** Chat-app and email messages whose text and content were erased. */
  messages_erased: Schema.Int,
  /** Emails whose addresses, subject, bodies and headers were erased. */
  emails_erased: Schema.Int,
  /** Files of those messages and emails deleted, bytes and records. */
  files_deleted: Schema.Int
})
/** Response of `DELETE /contacts/{contact_id}`. */
export type ContactDeleted = typeof ContactDeleted.Type
export declare namespace ContactDeleted {}

/** The wire form of a stored contact. */
export const toContact = (record: ContactRecord): Contact => ({
  id: record.id,
  tenant_id: record.tenant_id,
  name: record.name,
  phone: record.phone,
  email: record.email,
  language: record.language,
  custom_fields: record.custom_fields as Contact["custom_fields"],
  created_at: record.created_at,
  updated_at: record.updated_at
})
