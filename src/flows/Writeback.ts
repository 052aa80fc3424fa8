// Write-back of a flow's answers onto the contact it was sent to (spec: "Write-back result"), as a
// pure plan: what to write, and the result to report if every planned write succeeds. The service
// applies the plan and turns the writes that failed into `error` with `withFailures`.
import { EMAIL_PATTERN, normalizeEmail } from "../kernel/Email.ts"
import type { ContactRecord } from "../ports/ContactStore.ts"
import type { CustomFieldRecord, WritebackMapping } from "../ports/FlowStore.ts"
import { MASK } from "./FlowSession.ts"

// The contact rules (src/contacts/Contact.ts), so write-back accepts exactly what the API does.
/** E.164: a plus sign, a non-zero digit, at most 15 digits in all. */
const E164_PATTERN = /^\+[1-9]\d{1,14}$/
/** A language tag such as `en`, `pt_BR` or `de-CH`. */
const LANGUAGE_PATTERN = /^[A-Za-z]{2,3}(?:[_-][A-Za-z0-9]{2,8})*$/
/** Spaces, dashes, dots and brackets people type in phone numbers; dropped before the E.164 check. */
const normalizePhone = (phone: string): string => phone.replace(/[\s\-.()]/g, "")
const MAX_NAME_LENGTH = 255
const MAX_EMAIL_LENGTH = 254

/** Components whose answers are uploaded files, never a field's value. */
const MEDIA_INPUT_TYPES: ReadonlySet<string> = new Set(["PhotoPicker", "DocumentPicker"])

/** Everything write-back needs to know, read beforehand by the service. */
export interface WritebackInput {
  /** The contact the flow was sent to; null: an adopted session, nothing is written. */
  readonly contact: ContactRecord | null
  readonly mappings: ReadonlyArray<WritebackMapping>
  /** As received (unmasked): sensitive values may be written to the contact, never into the result. */
  readonly answers: Readonly<Record<string, unknown>>
  /** Input names that are sensitive: their values never appear in the result. */
  readonly sensitive: ReadonlySet<string>
  /** Input name → component type (OptIn, CheckboxGroup, DatePicker, TextInput, PhotoPicker, …). */
  readonly inputTypes: ReadonlyMap<string, string>
  /** Custom field definitions by id. */
  readonly customFields: ReadonlyMap<string, CustomFieldRecord>
  /** Existing tag ids. */
  readonly tags: ReadonlySet<string>
  /** Existing (live) lists by id. */
  readonly lists: ReadonlyMap<string, { readonly type: "static" | "dynamic" }>
  /** The id of the contact holding that email (lower-cased), or null. */
  readonly emailOwner: (email: string) => string | null
  /** The id of the contact holding that phone (E.164), or null. */
  readonly phoneOwner: (phone: string) => string | null
}

export type ContactFieldName = "name" | "email" | "phone" | "language"

export interface CustomFieldOutcome {
  readonly custom_field_id: string
  /** The field's key; null when no field has that id. */
  readonly key: string | null
  readonly status: "ok" | "not_found" | "not_editable" | "invalid"
  readonly reason?: string
}
export interface TagOutcome {
  readonly tag_id: string
  readonly status: "ok" | "not_found" | "error"
}
export interface SubscriptionOutcome {
  readonly list_id: string
  readonly status: "ok" | "not_found" | "list_type_not_allowed" | "not_offered" | "error"
}
export interface UnsubscriptionOutcome {
  readonly list_id: string
  readonly status: "ok" | "skipped" | "error"
  readonly reason?: string
}
export interface SkippedOutcome {
  readonly input: string
  readonly target: string
  /** The contact field, the custom field's key (its id when unknown), the tag id or the list id. */
  readonly field: string
  readonly reason: string
}
export interface MediaOutcome {
  readonly file_name: string
  readonly mime_type: string
  readonly stored: boolean
  readonly file_size: number
}

/** The spec's write-back result, item by item. */
export interface WritebackResult {
  readonly state: "done" | "partial" | "error" | "skipped"
  /** Field name → written value; "••••" for a value from a sensitive input. */
  readonly contact_fields: Readonly<Record<string, string>>
  readonly custom_fields: ReadonlyArray<CustomFieldOutcome>
  readonly tags: ReadonlyArray<TagOutcome>
  readonly subscriptions: ReadonlyArray<SubscriptionOutcome>
  readonly unsubscriptions: ReadonlyArray<UnsubscriptionOutcome>
  readonly skipped: ReadonlyArray<SkippedOutcome>
  /** Input name → the files copied; filled by the service. */
  readonly media: Readonly<Record<string, ReadonlyArray<MediaOutcome>>>
}

/** What to write to the contact, and what to report if it all succeeds. */
export interface WritebackPlan {
  /** The contact written to: always the session's own; null for an adopted session. */
  readonly contactId: string | null
  readonly contactFields: Readonly<Partial<Record<ContactFieldName, string>>>
  /** Custom field key → value. */
  readonly customFields: Readonly<Record<string, string | number | boolean>>
  readonly tagIds: ReadonlyArray<string>
  readonly subscribe: ReadonlyArray<string>
  readonly unsubscribe: ReadonlyArray<string>
  readonly result: WritebackResult
}

const EMPTY_RESULT: WritebackResult = {
  state: "skipped",
  contact_fields: {},
  custom_fields: [],
  tags: [],
  subscriptions: [],
  unsubscriptions: [],
  skipped: [],
  media: {}
}

/** An answer selects (a tag, an unsubscription): true, a non-blank string, a non-empty array. */
const isSelected = (value: unknown): boolean =>
  value === true || (typeof value === "string" && value.trim() !== "") || (Array.isArray(value) && value.length > 0)

type Checked<A> = { readonly ok: true; readonly value: A } | { readonly ok: false; readonly reason: string }
const valid = <A>(value: A): Checked<A> => ({ ok: true, value })
const invalid = (reason: string): Checked<never> => ({ ok: false, reason })

/** A contact field's value as the contacts API would store it, or why it cannot be. */
const contactFieldValue = (
  field: string,
  value: unknown,
  contactId: string,
  input: Pick<WritebackInput, "emailOwner" | "phoneOwner">
): Checked<string> => {
  switch (field) {
    case "name": {
      const name = typeof value === "string" ? value.trim() : ""
      return name !== "" && name.length <= MAX_NAME_LENGTH ? valid(name) : invalid("invalid_name")
    }
    case "email": {
      if (typeof value !== "string") return invalid("invalid_email")
      const email = normalizeEmail(value)
      if (email.length > MAX_EMAIL_LENGTH || !EMAIL_PATTERN.test(email)) return invalid("invalid_email")
      const owner = input.emailOwner(email)
      return owner !== null && owner !== contactId ? invalid("owned_by_other_contact") : valid(email)
    }
    case "phone": {
      if (typeof value !== "string") return invalid("invalid_phone")
      const phone = normalizePhone(value.trim())
      if (!E164_PATTERN.test(phone)) return invalid("invalid_phone")
      const owner = input.phoneOwner(phone)
      return owner !== null && owner !== contactId ? invalid("owned_by_other_contact") : valid(phone)
    }
    case "language": {
      const language = typeof value === "string" ? value.trim() : ""
      return LANGUAGE_PATTERN.test(language) ? valid(language) : invalid("invalid_language")
    }
    default:
      return invalid("unknown_field")
  }
}

const NUMBER_TEXT = /^[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?$/
const DATE_TEXT = /^(\d{4})-(\d{2})-(\d{2})$/

/** A calendar date `YYYY-MM-DD` that exists (no 30 February). */
const isCalendarDate = (text: string): boolean => {
  const match = DATE_TEXT.exec(text)
  if (match === null) return false
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])]
  const date = new Date(Date.UTC(year, month - 1, day))
  return date.getUTCFullYear() === year && date.getUTCMonth() === month - 1 && date.getUTCDate() === day
}

/** A custom field's value for its type, or why the answer does not fit it. */
const customFieldValue = (type: CustomFieldRecord["type"], value: unknown): Checked<string | number | boolean> => {
  switch (type) {
    case "text":
      if (typeof value === "string") return valid(value)
      if ((typeof value === "number" && Number.isFinite(value)) || typeof value === "boolean") return valid(String(value))
      // A checkbox group's option ids, as one text.
      if (Array.isArray(value) && value.every((item) => typeof item === "string" || typeof item === "number")) {
        return valid(value.join(", "))
      }
      return invalid("expected_text")
    case "number": {
      if (typeof value === "number" && Number.isFinite(value)) return valid(value)
      const text = typeof value === "string" ? value.trim() : ""
      return NUMBER_TEXT.test(text) && Number.isFinite(Number(text)) ? valid(Number(text)) : invalid("expected_number")
    }
    case "boolean": {
      if (typeof value === "boolean") return valid(value)
      const text = typeof value === "string" ? value.trim().toLowerCase() : ""
      return text === "true" ? valid(true) : text === "false" ? valid(false) : invalid("expected_boolean")
    }
    case "date": {
      const text = typeof value === "string" ? value.trim() : ""
      return isCalendarDate(text) ? valid(text) : invalid("invalid_date")
    }
  }
}

const stateOf = (result: Omit<WritebackResult, "state">): "done" | "partial" =>
  result.skipped.length === 0 &&
    result.custom_fields.every((entry) => entry.status === "ok") &&
    result.tags.every((entry) => entry.status === "ok") &&
    result.subscriptions.every((entry) => entry.status === "ok") &&
    result.unsubscriptions.every((entry) => entry.status === "ok")
    ? "done"
    : "partial"

/**
 * Plans the write-back of a session's answers, mapping by mapping in their order, onto the
 * session's own contact only (an adopted session, without one, writes nothing: `skipped`).
 *
 * - An input absent from the answers records nothing, but for a subscription (`not_offered`).
 * - `contact_field`: `name` (non-blank), `email` (checked and lower-cased; `invalid_email`), `phone`
 *   (spaces and dashes dropped, E.164; `invalid_phone`), `language` (`invalid_language`); an email or
 *   phone held by another contact: `owned_by_other_contact`; another field name: `unknown_field`;
 *   media: `media_input`. Problems go to `skipped`.
 * - `custom_field`: `not_found`, `not_editable`, or `invalid` with a reason (`expected_text`,
 *   `expected_number`, `expected_boolean`, `invalid_date` — also listed in `skipped` —,
 *   `media_input`). Text fields take strings, numbers, booleans and option ids (joined by ", ");
 *   number and boolean fields also take their text forms.
 * - `tag`: applied when the answer selects (true, a non-blank string, a non-empty array); unknown:
 *   `not_found`; not selected: `skipped` with `not_selected`.
 * - `subscription`: only an explicit `true` (a ticked opt-in) subscribes; anything else is
 *   `consent_required` in `skipped`; unknown list `not_found`; dynamic list `list_type_not_allowed`.
 * - `unsubscription`: when the answer selects; else `skipped` with `not_requested`; unknown list
 *   `list_not_found`, dynamic list `list_type_not_allowed`, both as `skipped`.
 * - The first mapping that writes a contact field or custom field wins; a later one writing the same
 *   field is `skipped` with `duplicate_field`. A list both subscribed and unsubscribed: the later
 *   mapping is `skipped` with `conflicting_mapping`.
 * - Values of sensitive inputs are written, but shown as "••••" in `contact_fields`; no other part
 *   of the result carries an answer's value.
 */
export const planWriteback = (input: WritebackInput): WritebackPlan => {
  const contact = input.contact
  if (contact === null) {
    return { contactId: null, contactFields: {}, customFields: {}, tagIds: [], subscribe: [], unsubscribe: [], result: EMPTY_RESULT }
  }
  const contactFields = new Map<ContactFieldName, string>()
  const shownContactFields = new Map<string, string>()
  const customFields = new Map<string, string | number | boolean>()
  const tagIds = new Set<string>()
  const subscribe = new Set<string>()
  const unsubscribe = new Set<string>()
  const customOutcomes: Array<CustomFieldOutcome> = []
  const tagOutcomes: Array<TagOutcome> = []
  const subscriptionOutcomes: Array<SubscriptionOutcome> = []
  const unsubscriptionOutcomes: Array<UnsubscriptionOutcome> = []
  const skipped: Array<SkippedOutcome> = []

  for (const mapping of input.mappings) {
    const name = mapping.input
    // Own keys only: an input named `constructor` is not Object.prototype's.
    const answered = Object.hasOwn(input.answers, name) && input.answers[name] !== undefined
    const value = answered ? input.answers[name] : undefined
    const isMedia = MEDIA_INPUT_TYPES.has(input.inputTypes.get(name) ?? "")
    const skip = (field: string, reason: string) => skipped.push({ input: name, target: mapping.target, field, reason })

    switch (mapping.target) {
      case "contact_field": {
        if (!answered) break
        const field = mapping.field ?? ""
        const checked = isMedia ? invalid("media_input") : contactFieldValue(field, value, contact.id, input)
        if (!checked.ok) skip(field, checked.reason)
        else if (contactFields.has(field as ContactFieldName)) skip(field, "duplicate_field")
        else {
          contactFields.set(field as ContactFieldName, checked.value)
          shownContactFields.set(field, input.sensitive.has(name) ? MASK : checked.value)
        }
        break
      }
      case "custom_field": {
        if (!answered) break
        const id = mapping.custom_field_id ?? ""
        const definition = input.customFields.get(id)
        if (definition === undefined) {
          customOutcomes.push({ custom_field_id: id, key: null, status: "not_found" })
          break
        }
        if (!definition.editable) {
          customOutcomes.push({ custom_field_id: id, key: definition.key, status: "not_editable" })
          break
        }
        const checked = isMedia ? invalid("media_input") : customFieldValue(definition.type, value)
        if (!checked.ok) {
          customOutcomes.push({ custom_field_id: id, key: definition.key, status: "invalid", reason: checked.reason })
          if (checked.reason === "invalid_date") skip(definition.key, "invalid_date")
        } else if (customFields.has(definition.key)) {
          skip(definition.key, "duplicate_field")
        } else {
          customFields.set(definition.key, checked.value)
          customOutcomes.push({ custom_field_id: id, key: definition.key, status: "ok" })
        }
        break
      }
      case "tag": {
        if (!answered) break
        const id = mapping.tag_id ?? ""
        if (!input.tags.has(id)) tagOutcomes.push({ tag_id: id, status: "not_found" })
        else if (!isSelected(value)) skip(id, "not_selected")
        else {
          tagIds.add(id)
          tagOutcomes.push({ tag_id: id, status: "ok" })
        }
        break
      }
      case "subscription": {
        const id = mapping.list_id ?? ""
        const list = input.lists.get(id)
        if (!answered) subscriptionOutcomes.push({ list_id: id, status: "not_offered" })
        else if (list === undefined) subscriptionOutcomes.push({ list_id: id, status: "not_found" })
        else if (list.type !== "static") subscriptionOutcomes.push({ list_id: id, status: "list_type_not_allowed" })
        // Consent is a ticked opt-in, nothing less.
        else if (value !== true) skip(id, "consent_required")
        else if (unsubscribe.has(id)) skip(id, "conflicting_mapping")
        else {
          subscribe.add(id)
          subscriptionOutcomes.push({ list_id: id, status: "ok" })
        }
        break
      }
      case "unsubscription": {
        if (!answered) break
        const id = mapping.list_id ?? ""
        const list = input.lists.get(id)
        const skipUnsubscription = (reason: string) => unsubscriptionOutcomes.push({ list_id: id, status: "skipped", reason })
        if (list === undefined) skipUnsubscription("list_not_found")
        else if (list.type !== "static") skipUnsubscription("list_type_not_allowed")
        else if (!isSelected(value)) skipUnsubscription("not_requested")
        else if (subscribe.has(id)) skip(id, "conflicting_mapping")
        else {
          unsubscribe.add(id)
          unsubscriptionOutcomes.push({ list_id: id, status: "ok" })
        }
        break
      }
      default:
        // A target this version does not know (stored by a newer one): reported, never guessed at.
        if (answered) skip(String((mapping as { readonly target: unknown }).target), "unknown_target")
    }
  }

  const entries = {
    contact_fields: Object.fromEntries(shownContactFields),
    custom_fields: customOutcomes,
    tags: tagOutcomes,
    subscriptions: subscriptionOutcomes,
    unsubscriptions: unsubscriptionOutcomes,
    skipped,
    media: {}
  }
  return {
    contactId: contact.id,
    contactFields: Object.fromEntries(contactFields),
    customFields: Object.fromEntries(customFields),
    tagIds: [...tagIds],
    subscribe: [...subscribe],
    unsubscribe: [...unsubscribe],
    result: { state: stateOf(entries), ...entries }
  }
}

/**
 * Turns planned statuses into `error` for the writes that failed when applied, and recomputes
 * `state`. `all`: the write-back failed as a whole: `error`, and every tag, subscription and
 * unsubscription planned `ok` becomes `error` (contact and custom fields have no such status; the
 * state says they were not written). A `skipped` result (no contact) stays as it is.
 */
export const withFailures = (
  result: WritebackResult,
  failed: {
    readonly tags?: ReadonlyArray<string>
    readonly subscriptions?: ReadonlyArray<string>
    readonly unsubscriptions?: ReadonlyArray<string>
    readonly all?: boolean
  }
): WritebackResult => {
  if (result.state === "skipped") return result
  const all = failed.all === true
  const failedTags = new Set(failed.tags ?? [])
  const failedSubscriptions = new Set(failed.subscriptions ?? [])
  const failedUnsubscriptions = new Set(failed.unsubscriptions ?? [])
  const fails = (status: string, id: string, ids: ReadonlySet<string>) => status === "ok" && (all || ids.has(id))
  const entries = {
    contact_fields: result.contact_fields,
    custom_fields: result.custom_fields,
    tags: result.tags.map((entry): TagOutcome =>
      fails(entry.status, entry.tag_id, failedTags) ? { ...entry, status: "error" } : entry
    ),
    subscriptions: result.subscriptions.map((entry): SubscriptionOutcome =>
      fails(entry.status, entry.list_id, failedSubscriptions) ? { ...entry, status: "error" } : entry
    ),
    unsubscriptions: result.unsubscriptions.map((entry): UnsubscriptionOutcome =>
      fails(entry.status, entry.list_id, failedUnsubscriptions) ? { ...entry, status: "error" } : entry
    ),
    skipped: result.skipped,
    media: result.media
  }
  return { state: all || result.state === "error" ? "error" : stateOf(entries), ...entries }
}
