import { Schema } from "effect"

/** One value a send must supply: a variable of the header or body, or the dynamic part of a URL button. */
export const Placeholder = Schema.Struct({
  /** `header`, `body` or `button`. */
  component: Schema.Literals(["header", "body", "button"]),
  /** The variable's number (`{{2}}` is 2); for a button, its position among the template's buttons, from 0. */
  index: Schema.Int,
  /** The example value the template was created with, when there is one. */
  example: Schema.NullOr(Schema.String)
})
/** One value a send must supply. */
export type Placeholder = typeof Placeholder.Type
export declare namespace Placeholder {}

type Components = ReadonlyArray<Readonly<Record<string, unknown>>>

const VARIABLE = /\{\{\s*(\d+)\s*\}\}/g
const variableCount = (text: unknown): number =>
  typeof text === "string" ? Math.max(0, ...[...text.matchAll(VARIABLE)].map((match) => Number(match[1]))) : 0

const componentOf = (components: Components, type: string) =>
  components.find((component) => String(component.type).toUpperCase() === type)

const examplesOf = (component: Readonly<Record<string, unknown>> | undefined, field: string): ReadonlyArray<unknown> => {
  const example = component?.example as Record<string, unknown> | undefined
  const values = example?.[field]
  return Array.isArray(values) ? (Array.isArray(values[0]) ? values[0] : values) : []
}

const buttonsOf = (components: Components): ReadonlyArray<Readonly<Record<string, unknown>>> => {
  const buttons = componentOf(components, "BUTTONS")?.buttons
  return Array.isArray(buttons) ? buttons : []
}

/**
 * The values a send of a template with these components must supply, in the order
 * `variable_values` gives them: the header's variables, the body's, then one per URL button whose
 * URL ends in a variable. An authentication template's code button repeats the body's code and
 * takes no value of its own.
 */
export const placeholdersOf = (components: Components): ReadonlyArray<Placeholder> => {
  const header = componentOf(components, "HEADER")
  const body = componentOf(components, "BODY")
  const text = (value: unknown) => (typeof value === "string" ? value : value === undefined || value === null ? null : String(value))
  const headerExamples = examplesOf(header, "header_text")
  const bodyExamples = examplesOf(body, "body_text")
  return [
    ...Array.from({ length: variableCount(header?.text) }, (_, i) => ({ component: "header" as const, index: i + 1, example: text(headerExamples[i]) })),
    ...Array.from({ length: variableCount(body?.text) }, (_, i) => ({ component: "body" as const, index: i + 1, example: text(bodyExamples[i]) })),
    ...buttonsOf(components).flatMap((button, index) => {
      if (String(button.type).toUpperCase() !== "URL" || variableCount(button.url) === 0) return []
      const example = Array.isArray(button.example) ? text(button.example[0]) : null
      return [{ component: "button" as const, index, example }]
    })
  ]
}

/**
 * The `components` of a template message in the operator's send shape, the values given in
 * `placeholdersOf`'s order (their count already checked): `header` and `body` parameters as text, a
 * `button` of sub-type `url` per URL variable, and the code again for an authentication template's
 * code button.
 */
export const sendComponentsOf = (components: Components, values: ReadonlyArray<string>): ReadonlyArray<Record<string, unknown>> => {
  const placeholders = placeholdersOf(components)
  const valueOf = (component: string, index: number) =>
    values[placeholders.findIndex((placeholder) => placeholder.component === component && placeholder.index === index)] ?? ""
  const parameters = (component: "header" | "body") =>
    placeholders.filter((placeholder) => placeholder.component === component)
      .map((placeholder) => ({ type: "text", text: valueOf(component, placeholder.index) }))
  const header = parameters("header")
  const body = parameters("body")
  const buttons = buttonsOf(components).flatMap((button, index) => {
    const type = String(button.type).toUpperCase()
    if (type === "URL" && variableCount(button.url) > 0) {
      return [{ type: "button", sub_type: "url", index: String(index), parameters: [{ type: "text", text: valueOf("button", index) }] }]
    }
    // The operator takes the one-time code again on the copy-code / one-tap button.
    if (type === "OTP" && body.length > 0) {
      return [{ type: "button", sub_type: "url", index: String(index), parameters: [{ type: "text", text: body[0]!.text }] }]
    }
    return []
  })
  return [
    ...(header.length === 0 ? [] : [{ type: "header", parameters: header }]),
    ...(body.length === 0 ? [] : [{ type: "body", parameters: body }]),
    ...buttons
  ]
}
