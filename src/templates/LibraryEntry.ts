import { Schema } from "effect"
import type { ChatappLibraryTemplate, LibraryQuery } from "../ports/ChatPlatform.ts"

/** A button of a library entry; the fields its type does not use are null. */
export const LibraryButton = Schema.Struct({
  type: Schema.String,
  text: Schema.NullOr(Schema.String),
  url: Schema.NullOr(Schema.String),
  phone_number: Schema.NullOr(Schema.String),
  otp_type: Schema.NullOr(Schema.String)
})
/** A button of a library entry. */
export type LibraryButton = typeof LibraryButton.Type
export declare namespace LibraryButton {}

/** One entry of the operator's template library, as the API returns it (the spec's Library template entry). */
export const LibraryTemplateEntry = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  language: Schema.String,
  category: Schema.String,
  topic: Schema.String,
  usecase: Schema.String,
  industry: Schema.Array(Schema.String),
  header: Schema.NullOr(Schema.String),
  body: Schema.String,
  footer: Schema.NullOr(Schema.String),
  body_params: Schema.Array(Schema.String),
  body_param_types: Schema.Array(Schema.String),
  buttons: Schema.Array(LibraryButton),
  already_added: Schema.Boolean,
  requires_input: Schema.Boolean
})
/** One entry of the library as the API returns it. */
export type LibraryTemplateEntry = typeof LibraryTemplateEntry.Type
export declare namespace LibraryTemplateEntry {}

/** An entry as the service keeps it: the wire entry without the per-tenant `already_added`. */
export type LibraryEntry = Omit<LibraryTemplateEntry, "already_added">

/** The facets of a matched set: every value offered returns something when chosen. */
export const LibraryFacets = Schema.Struct({
  languages: Schema.Array(Schema.String),
  topics: Schema.Array(Schema.String),
  usecases: Schema.Array(Schema.String),
  industries: Schema.Array(Schema.String)
})
/** The facets of a matched set. */
export type LibraryFacets = typeof LibraryFacets.Type
export declare namespace LibraryFacets {}

/** Response of `GET /chatapp-templates/library` (the spec's Library browse response). */
export const LibraryBrowseResponse = Schema.Struct({
  items: Schema.Array(LibraryTemplateEntry),
  total: Schema.Int,
  facets: LibraryFacets,
  /** The language filter applied; null when none was. */
  language: Schema.NullOr(Schema.String),
  stale: Schema.Boolean,
  warning: Schema.NullOr(Schema.String)
})
/** Response of `GET /chatapp-templates/library`. */
export type LibraryBrowseResponse = typeof LibraryBrowseResponse.Type
export declare namespace LibraryBrowseResponse {}

const text = (value: unknown): string | null => (typeof value === "string" && value !== "" ? value : null)
const texts = (value: unknown): ReadonlyArray<string> =>
  Array.isArray(value) ? value.filter((item): item is string => typeof item === "string") : []

/** Button types whose destination (a link, a number to dial) the caller must give. */
const DESTINATION_BUTTONS: ReadonlySet<string> = new Set(["URL", "PHONE_NUMBER"])

/**
 * Whether some button needs a URL or phone number only the caller can supply: every URL or phone
 * button of a catalog entry does, since the catalog ships placeholder destinations (whatever they
 * look like: a real-looking number or domain in the catalog is still not the caller's).
 */
export const requiresInput = (buttons: ReadonlyArray<LibraryButton>): boolean =>
  buttons.some((button) => DESTINATION_BUTTONS.has(button.type))

const buttonOf = (raw: Readonly<Record<string, unknown>>): LibraryButton => ({
  type: typeof raw.type === "string" ? raw.type.toUpperCase() : "UNKNOWN",
  text: text(raw.text),
  url: text(raw.url),
  phone_number: text(raw.phone_number),
  otp_type: text(raw.otp_type)
})

/** An operator entry in the API's shape; a missing id is made from the name and language, which identify an entry. */
export const libraryEntryOf = (raw: ChatappLibraryTemplate): LibraryEntry => {
  const buttons = (raw.buttons ?? []).map(buttonOf)
  return {
    id: text(raw.id) ?? `${raw.name}:${raw.language}`,
    name: raw.name,
    language: raw.language,
    category: raw.category,
    topic: text(raw.topic) ?? "",
    usecase: text(raw.usecase) ?? "",
    industry: texts(raw.industry),
    header: text(raw.header),
    body: raw.body,
    footer: text(raw.footer),
    body_params: texts(raw.body_params),
    body_param_types: texts(raw.body_param_types),
    buttons,
    requires_input: requiresInput(buttons)
  }
}

const sorted = (values: Iterable<string>): ReadonlyArray<string> =>
  [...new Set(values)].filter((value) => value !== "").sort()

/** The facets of `entries`: the distinct values present, sorted. */
export const facetsOf = (entries: ReadonlyArray<LibraryEntry>): LibraryFacets => ({
  languages: sorted(entries.map((entry) => entry.language)),
  topics: sorted(entries.map((entry) => entry.topic)),
  usecases: sorted(entries.map((entry) => entry.usecase)),
  industries: sorted(entries.flatMap((entry) => entry.industry))
})

const FILTERS = ["search", "topic", "usecase", "industry", "language", "name"] as const

/** The query with blank filters removed and the others trimmed: what is sent to the operator and cached. */
export const normalQuery = (query: LibraryQuery): LibraryQuery => {
  const normal: Record<string, string> = {}
  for (const filter of FILTERS) {
    const value = query[filter]?.trim()
    if (value !== undefined && value !== "") normal[filter] = value
  }
  return normal
}

/** The cache key of a normal query: its filters in a fixed order. */
export const libraryQueryKey = (query: LibraryQuery): string =>
  JSON.stringify(FILTERS.map((filter) => query[filter]?.trim() || null))

/**
 * An entry's JSON text in two pieces around its `already_added` value, which depends on the tenant:
 * `head + "true" + tail` is the wire entry (fields in the schema's order), written once per copy.
 */
export const entryFragments = (entry: LibraryEntry): readonly [string, string] => {
  const { requires_input: requiresInput, ...rest } = entry
  return [`${JSON.stringify(rest).slice(0, -1)},"already_added":`, `,"requires_input":${requiresInput}}`]
}
