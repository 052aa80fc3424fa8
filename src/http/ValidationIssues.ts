import { SchemaIssue } from "effect"
import type { ValidationIssue } from "../kernel/ApiError.ts"

const format = SchemaIssue.makeFormatterStandardSchemaV1()

const messageOf = (issue: SchemaIssue.Issue): string => format(issue).issues[0]?.message ?? "Invalid value"

/** The issue of a field the schema does not declare (a body field or a query parameter). */
export const unknownField = (loc: ReadonlyArray<string | number>): ValidationIssue => ({
  loc: [...loc],
  msg: "Unknown field",
  type: "extra_forbidden"
})

/**
 * Flattens a Schema decoding issue into FastAPI-style `{loc, msg, type}` entries, one per
 * failing field, with `loc` starting at `root` (`body`, `query`, …).
 */
export const toValidationIssues = (
  issue: SchemaIssue.Issue,
  root: ReadonlyArray<string>
): Array<ValidationIssue> => {
  const out: Array<ValidationIssue> = []
  const walk = (node: SchemaIssue.Issue, path: ReadonlyArray<string | number>): void => {
    const loc = [...path]
    switch (node._tag) {
      case "Pointer":
        return walk(node.issue, [...path, ...node.path.map((p) => (typeof p === "number" ? p : String(p)))])
      case "Composite":
        return node.issues.forEach((child) => walk(child, path))
      case "Encoding":
        return walk(node.issue, path)
      case "Filter":
        // A filter may point below itself (a record filter naming one bad key); otherwise it is the leaf.
        if (node.issue._tag === "Pointer" || node.issue._tag === "Composite") return walk(node.issue, path)
        out.push({ loc, msg: messageOf(node), type: "value_error" })
        return
      case "AnyOf":
        if (node.issues.length === 0) {
          out.push({ loc, msg: messageOf(node), type: "enum" })
          return
        }
        return walk(node.issues[0]!, path)
      case "MissingKey":
        out.push({ loc, msg: "Field required", type: "missing" })
        return
      case "UnexpectedKey":
        out.push(unknownField(loc))
        return
      case "InvalidType":
        out.push({ loc, msg: messageOf(node), type: "type_error" })
        return
      default:
        out.push({ loc, msg: messageOf(node), type: "value_error" })
    }
  }
  walk(issue, root)
  return out
}
