import { Schema } from "effect"
import type { ValidationIssue } from "../kernel/ApiError.ts"
import { type LibraryButton, type LibraryEntry, requiresInput } from "./LibraryEntry.ts"

/** The button types an adopt request's `button_inputs` may name (the spec's Button input). */
export const BUTTON_INPUT_TYPES = ["URL", "PHONE_NUMBER", "OTP", "MPM", "CATALOG", "FLOW", "VOICE_CALL", "APP"] as const

/** One element of `button_inputs`: the destination of one of the entry's buttons. */
export const ButtonInput = Schema.Struct({
  type: Schema.Literals(BUTTON_INPUT_TYPES),
  url: Schema.optionalKey(Schema.Struct({
    base_url: Schema.String,
    url_suffix_example: Schema.optionalKey(Schema.String)
  })),
  phone_number: Schema.optionalKey(Schema.String),
  otp_type: Schema.optionalKey(Schema.String),
  zero_tap_terms_accepted: Schema.optionalKey(Schema.Boolean),
  supported_apps: Schema.optionalKey(Schema.Array(Schema.Struct({ package_name: Schema.String, signature_hash: Schema.String })))
})
/** One element of `button_inputs`. */
export type ButtonInput = typeof ButtonInput.Type
export declare namespace ButtonInput {}

/**
 * The entry as the client displayed it (`snapshot`): a library entry as the browse returned it, every
 * field optional but the body. Its header, body and footer are the wording it asks for; the others
 * are taken as they come and only its buttons are read (when the operator cannot be asked for the entry).
 */
export const LibrarySnapshot = Schema.Struct({
  id: Schema.optionalKey(Schema.String),
  name: Schema.optionalKey(Schema.String),
  language: Schema.optionalKey(Schema.String),
  category: Schema.optionalKey(Schema.String),
  topic: Schema.optionalKey(Schema.NullOr(Schema.String)),
  usecase: Schema.optionalKey(Schema.NullOr(Schema.String)),
  industry: Schema.optionalKey(Schema.NullOr(Schema.Array(Schema.String))),
  header: Schema.optionalKey(Schema.NullOr(Schema.String)),
  body: Schema.String,
  footer: Schema.optionalKey(Schema.NullOr(Schema.String)),
  body_params: Schema.optionalKey(Schema.Array(Schema.String)),
  body_param_types: Schema.optionalKey(Schema.NullOr(Schema.Array(Schema.String))),
  buttons: Schema.optionalKey(Schema.Array(Schema.Struct({
    type: Schema.String,
    text: Schema.optionalKey(Schema.NullOr(Schema.String)),
    url: Schema.optionalKey(Schema.NullOr(Schema.String)),
    phone_number: Schema.optionalKey(Schema.NullOr(Schema.String)),
    otp_type: Schema.optionalKey(Schema.NullOr(Schema.String))
  }))),
  already_added: Schema.optionalKey(Schema.Boolean),
  requires_input: Schema.optionalKey(Schema.Boolean)
})
/** The entry as the client displayed it. */
export type LibrarySnapshot = typeof LibrarySnapshot.Type
export declare namespace LibrarySnapshot {}

/** The operator's limit on a template name's length. */
export const MAX_TEMPLATE_NAME = 512

/** A template name as the operator takes it: lower case, every run of other characters one underscore, none at the ends. */
export const normalTemplateName = (raw: string): string =>
  raw.normalize("NFKD").replace(/\p{M}/gu, "").toLowerCase().replace(/[^a-z0-9]+/g, "_").replace(/^_+|_+$/g, "")

const blank = (value: string | null | undefined): string | null => (value === undefined || value === null || value.trim() === "" ? null : value)

/**
 * Whether the snapshot asks for other wording than the entry's: its header, body or footer differ
 * (a blank one and an absent one are the same). A renamed template and re-pointed buttons are not
 * changes of content (the spec's rule); no snapshot is no change.
 */
export const contentChanged = (entry: LibraryEntry, snapshot: LibrarySnapshot | undefined): boolean =>
  snapshot !== undefined && (
    blank(snapshot.header) !== blank(entry.header) ||
    snapshot.body !== entry.body ||
    blank(snapshot.footer) !== blank(entry.footer)
  )

/** The entry a snapshot describes, for when the operator cannot be asked for it. */
export const entryOfSnapshot = (snapshot: LibrarySnapshot, name: string, language: string, category: string): LibraryEntry => {
  const buttons: ReadonlyArray<LibraryButton> = (snapshot.buttons ?? []).map((button) => ({
    type: button.type.toUpperCase(),
    text: blank(button.text),
    url: blank(button.url),
    phone_number: blank(button.phone_number),
    otp_type: blank(button.otp_type)
  }))
  return {
    id: `${name}:${language}`,
    name,
    language,
    category: snapshot.category ?? category,
    topic: "",
    usecase: "",
    industry: [],
    header: blank(snapshot.header),
    body: snapshot.body,
    footer: blank(snapshot.footer),
    body_params: snapshot.body_params ?? [],
    body_param_types: [],
    buttons,
    requires_input: requiresInput(buttons)
  }
}

const E164 = /^\+[1-9]\d{6,14}$/
const OTP_TYPES = new Set(["COPY_CODE", "ONE_TAP", "ZERO_TAP"])
const VARIABLE = /\{\{\s*(\d+)\s*\}\}/g

const httpUrl = (value: string): boolean => {
  try {
    const url = new URL(value)
    return (url.protocol === "https:" || url.protocol === "http:") && url.hostname !== ""
  } catch {
    return false
  }
}

/** The problems of a URL input: a base with at most one `{{1}}`, and then an example it fills. */
const urlIssues = (input: ButtonInput, at: ReadonlyArray<string | number>): ReadonlyArray<ValidationIssue> => {
  if (input.url === undefined) return [{ loc: [...at, "url"], msg: "A URL button needs url.base_url", type: "missing" }]
  const { base_url: base, url_suffix_example: example } = input.url
  const variables = [...base.matchAll(VARIABLE)]
  if (variables.length > 1 || variables.some((match) => match[1] !== "1")) {
    return [{ loc: [...at, "url", "base_url"], msg: "base_url may contain a single {{1}} variable and no other", type: "value_error" }]
  }
  if (!httpUrl(base.replace(VARIABLE, "x"))) {
    return [{ loc: [...at, "url", "base_url"], msg: "base_url must be an absolute http(s) URL", type: "value_error" }]
  }
  if (variables.length === 0) {
    return example === undefined || example === base
      ? []
      : [{ loc: [...at, "url", "url_suffix_example"], msg: "Without a {{1}} variable, url_suffix_example must be base_url itself or absent", type: "value_error" }]
  }
  if (example === undefined) {
    return [{ loc: [...at, "url", "url_suffix_example"], msg: "Required when base_url contains {{1}}: the full example URL with the variable filled", type: "missing" }]
  }
  const [before, after] = base.split(variables[0]![0]) as [string, string]
  const filled = example.slice(before.length, example.length - after.length)
  if (!example.startsWith(before) || !example.endsWith(after) || example.length <= before.length + after.length || /\s/.test(filled)) {
    return [{ loc: [...at, "url", "url_suffix_example"], msg: `Must be base_url with {{1}} filled in: ${before}…${after}`, type: "value_error" }]
  }
  return httpUrl(example) ? [] : [{ loc: [...at, "url", "url_suffix_example"], msg: "Must be an absolute http(s) URL", type: "value_error" }]
}

/**
 * The problems of `button_inputs` against the entry's buttons: one element per URL or phone button,
 * in the entry's order (quick replies take none); an OTP element sets an authentication button's
 * `otp_type`; other types must name a button the entry has. Omitted inputs are fine unless a button
 * ships a stand-in destination (`requires_input`).
 */
export const buttonInputIssues = (
  entry: LibraryEntry,
  inputs: ReadonlyArray<ButtonInput> | undefined
): ReadonlyArray<ValidationIssue> => {
  const destinations = entry.buttons.filter((button) => button.type === "URL" || button.type === "PHONE_NUMBER")
  if (inputs === undefined) {
    return entry.requires_input
      ? [{
        loc: ["body", "button_inputs"],
        msg: `Required: this entry's buttons ship stand-in destinations; give one element per button that opens a link or dials a number, in order (${
          destinations.map((button) => button.type).join(", ")
        })`,
        type: "missing"
      }]
      : []
  }
  const issues: Array<ValidationIssue> = []
  let destination = 0
  const others = new Map<string, number>()
  inputs.forEach((input, index) => {
    const at = ["body", "button_inputs", index]
    if (input.type === "URL" || input.type === "PHONE_NUMBER") {
      const expected = destinations[destination]
      destination += 1
      if (expected === undefined) {
        issues.push({ loc: [...at, "type"], msg: `The entry has only ${destinations.length} button(s) that open a link or dial a number`, type: "value_error" })
        return
      }
      if (expected.type !== input.type) {
        issues.push({ loc: [...at, "type"], msg: `Expected ${expected.type} for the entry's button "${expected.text ?? expected.type}"`, type: "value_error" })
        return
      }
      if (input.type === "URL") issues.push(...urlIssues(input, at))
      else if (input.phone_number === undefined) issues.push({ loc: [...at, "phone_number"], msg: "A PHONE_NUMBER button needs phone_number", type: "missing" })
      else if (!E164.test(input.phone_number)) {
        issues.push({ loc: [...at, "phone_number"], msg: "Must be in E.164 format, e.g. +14155550123", type: "value_error" })
      }
      return
    }
    const seen = (others.get(input.type) ?? 0) + 1
    others.set(input.type, seen)
    if (entry.buttons.filter((button) => button.type === input.type).length < seen) {
      issues.push({ loc: [...at, "type"], msg: `The entry has no (further) ${input.type} button`, type: "value_error" })
      return
    }
    if (input.type === "OTP" && (input.otp_type === undefined || !OTP_TYPES.has(input.otp_type))) {
      issues.push({ loc: [...at, "otp_type"], msg: "Must be one of COPY_CODE, ONE_TAP, ZERO_TAP", type: "value_error" })
    }
  })
  if (issues.length === 0 && destination < destinations.length && entry.requires_input) {
    issues.push({
      loc: ["body", "button_inputs"],
      msg: `Expected ${destinations.length} element(s) for the buttons that open a link or dial a number, got ${destination}`,
      type: "value_error"
    })
  }
  return issues
}

/** The entry's buttons with the inputs' destinations applied, each input to the next button of its type. */
export const buttonsWithInputs = (
  buttons: ReadonlyArray<LibraryButton>,
  inputs: ReadonlyArray<ButtonInput>
): ReadonlyArray<LibraryButton & { readonly example?: ReadonlyArray<string> }> => {
  const used = new Set<number>()
  return buttons.map((button) => {
    const at = inputs.findIndex((input, i) => !used.has(i) && input.type === button.type)
    if (at === -1) return button
    used.add(at)
    const input = inputs[at]!
    return {
      ...button,
      ...(input.url === undefined ? {} : { url: input.url.base_url }),
      ...(input.url?.url_suffix_example === undefined ? {} : { example: [input.url.url_suffix_example] }),
      ...(input.phone_number === undefined ? {} : { phone_number: input.phone_number }),
      ...(input.otp_type === undefined ? {} : { otp_type: input.otp_type })
    }
  })
}

const variableCount = (text: string | null): number =>
  text === null ? 0 : Math.max(0, ...[...text.matchAll(VARIABLE)].map((match) => Number(match[1])))

/**
 * The template's components in the operator's create shape: a text header, the body with its example
 * values, the footer, and the buttons (each with only the fields its type uses).
 */
export const componentsOf = (
  content: { readonly header: string | null; readonly body: string; readonly footer: string | null; readonly body_params: ReadonlyArray<string> },
  buttons: ReadonlyArray<LibraryButton & { readonly example?: ReadonlyArray<string> }>
): ReadonlyArray<Readonly<Record<string, unknown>>> => {
  const bodyVariables = variableCount(content.body)
  const examples = Array.from({ length: bodyVariables }, (_, i) => content.body_params[i] ?? `example ${i + 1}`)
  return [
    ...(content.header === null ? [] : [{ type: "HEADER", format: "TEXT", text: content.header }]),
    { type: "BODY", text: content.body, ...(bodyVariables === 0 ? {} : { example: { body_text: [examples] } }) },
    ...(content.footer === null ? [] : [{ type: "FOOTER", text: content.footer }]),
    ...(buttons.length === 0 ? [] : [{
      type: "BUTTONS",
      buttons: buttons.map((button) => ({
        type: button.type,
        ...(button.text === null ? {} : { text: button.text }),
        ...(button.url === null ? {} : { url: button.url }),
        ...(button.example === undefined ? {} : { example: button.example }),
        ...(button.phone_number === null ? {} : { phone_number: button.phone_number }),
        ...(button.otp_type === null ? {} : { otp_type: button.otp_type })
      }))
    }])
  ]
}
