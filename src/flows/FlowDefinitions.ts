import { Effect, Option } from "effect"
import type { ListService } from "../lists/ListService.ts"
import { InvalidRequest } from "../kernel/ApiError.ts"
import type { FlowScreen, FlowStore, WritebackMapping } from "../ports/FlowStore.ts"
import type { CreateVersionRequest } from "./Flow.ts"

/** The screens of a request with their sensitive lists filled in. */
export const screensOf = (request: CreateVersionRequest): ReadonlyArray<FlowScreen> =>
  request.screens.map((screen) => ({
    id: screen.id,
    inputs: screen.inputs.map((input) => ({ name: input.name, type: input.type })),
    sensitive_fields: [...(screen.sensitive_fields ?? [])]
  }))

/**
 * Checks a version before it is stored: input names unique across screens, sensitive fields among
 * their screen's inputs, each mapping on a known input with the one parameter its target needs,
 * and the custom field, tag or list it names existing in the tenant.
 */
export const checkVersion = (
  deps: { readonly store: FlowStore["Service"]; readonly lists: ListService["Service"] },
  tenantId: string,
  request: CreateVersionRequest
) =>
  Effect.gen(function*() {
    const seen = new Set<string>()
    for (const [s, screen] of request.screens.entries()) {
      for (const [i, input] of screen.inputs.entries()) {
        if (seen.has(input.name)) {
          return yield* InvalidRequest.single(["body", "screens", s, "inputs", i, "name"], `Input '${input.name}' appears twice; names are unique across screens`)
        }
        seen.add(input.name)
      }
      const own = new Set(screen.inputs.map((input) => input.name))
      for (const [f, field] of (screen.sensitive_fields ?? []).entries()) {
        if (!own.has(field)) {
          return yield* InvalidRequest.single(["body", "screens", s, "sensitive_fields", f], `'${field}' is not an input of screen ${screen.id}`)
        }
      }
    }
    const mappings: ReadonlyArray<WritebackMapping> = request.writeback ?? []
    for (const [m, mapping] of mappings.entries()) {
      const loc = ["body", "writeback", m]
      if (!seen.has(mapping.input)) return yield* InvalidRequest.single([...loc, "input"], `No screen has an input '${mapping.input}'`)
      const need = mapping.target === "contact_field"
        ? "field"
        : mapping.target === "custom_field"
        ? "custom_field_id"
        : mapping.target === "tag"
        ? "tag_id"
        : "list_id"
      if (mapping[need] === undefined) return yield* InvalidRequest.single([...loc, need], `Field required for target ${mapping.target}`, "missing")
      if (mapping.custom_field_id !== undefined && Option.isNone(yield* deps.store.getCustomField(tenantId, mapping.custom_field_id))) {
        return yield* InvalidRequest.single([...loc, "custom_field_id"], `Custom field ${mapping.custom_field_id} not found`, "not_found")
      }
      if (mapping.tag_id !== undefined && Option.isNone(yield* deps.store.getTag(tenantId, mapping.tag_id))) {
        return yield* InvalidRequest.single([...loc, "tag_id"], `Tag ${mapping.tag_id} not found`, "not_found")
      }
      if (mapping.list_id !== undefined) {
        const found = yield* deps.lists.get(tenantId, mapping.list_id).pipe(
          Effect.map(Option.some),
          Effect.catchTag("NotFound", () => Effect.succeed(Option.none()))
        )
        if (Option.isNone(found)) return yield* InvalidRequest.single([...loc, "list_id"], `List ${mapping.list_id} not found`, "not_found")
      }
    }
    return { screens: screensOf(request), writeback: mappings }
  })
