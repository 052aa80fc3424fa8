import { Effect, Schema } from "effect"
import { route } from "../http/Route.ts"
import { pathId } from "../kernel/Id.ts"
import { pageQueryFields, paginationInfo, toPageRequest, WholeNumberFromString } from "../kernel/Pagination.ts"
import { LibraryBrowseResponse } from "./LibraryEntry.ts"
import { AdoptRequest, AdoptResponse, SendTemplateRequest, Template, TemplateList } from "./Template.ts"
import { Message } from "../messages/MessageService.ts"
import { TemplateService } from "./TemplateService.ts"

/** `limit` of a library browse: 1 to 500, 100 when absent (the spec's Limits). */
export const LIBRARY_LIMIT = { default: 100, max: 500 } as const
/** Default and largest `page_size` of `GET /chatapp-templates`. */
export const TEMPLATES_PAGE_SIZE = { default: 50, max: 200 } as const

const Filter = Schema.optionalKey(Schema.String)

const BrowseQuery = Schema.Struct({
  channel_id: Schema.String.check(Schema.isMinLength(1)),
  language: Filter,
  search: Filter,
  topic: Filter,
  usecase: Filter,
  industry: Filter,
  name: Filter,
  limit: Schema.optionalKey(WholeNumberFromString.check(Schema.isBetween({ minimum: 1, maximum: LIBRARY_LIMIT.max })))
})

const ListQuery = Schema.Struct({
  ...pageQueryFields(TEMPLATES_PAGE_SIZE.max),
  channel_id: Filter,
  status: Filter
})

const templateId = (params: Readonly<Record<string, string>>) => pathId(params, "template_id", "Template")

/** Every route of the templates area. */
export const templateRoutes = [
  route({
    method: "GET",
    path: "/chatapp-templates/library",
    operationId: "browseTemplateLibrary",
    summary:
      "Browse the operator's library of pre-reviewed templates through a channel's business account, with facets of the matched set. Served from a cache (fresh 12 hours); when the operator is rate-limiting or unreachable, a copy up to 14 days old is served with stale: true and a warning",
    tag: "Templates",
    auth: { kind: "api_key", scopes: ["channels:read"] },
    query: BrowseQuery,
    // Up to 500 entries, written from the JSON text kept with the cached copy.
    response: { status: 200, schema: LibraryBrowseResponse, description: "The matched entries (up to limit), their total and facets" },
    errors: [400, 404, 422, 429, 502, 503],
    handle: ({ principal, query }) =>
      Effect.flatMap(TemplateService, (service) =>
        service.browseEncoded(principal.tenantId, { ...query, limit: query.limit ?? LIBRARY_LIMIT.default }))
  }),
  route({
    method: "POST",
    path: "/chatapp-templates/library/adopt",
    operationId: "adoptLibraryTemplate",
    summary:
      "Adopt a library entry into a channel. Unchanged wording is created through the operator's library and approved at once (201); changed header, body or footer (in snapshot) becomes an ordinary template for review. The same name and language already on the channel answers 200 with already_existed: true. On failure success is false with the operator's error; 429 and 503 are worth retrying, 409, 422 and 502 are not",
    tag: "Templates",
    auth: { kind: "api_key", scopes: ["channels:admin", "messages:create"] },
    body: AdoptRequest,
    response: {
      status: 201,
      schema: AdoptResponse,
      description: "The template was created",
      statusOf: (result) => (result.already_existed ? 200 : 201),
      alternatives: { 200: "The channel already had a template of this name and language; nothing was sent to the operator" }
    },
    errors: [400, 404, 409, 422, 429, 502, 503],
    // An adoption the operator or the service refused answers `success: false` with the error fields.
    failureBody: AdoptResponse,
    handle: ({ principal, body }) => Effect.flatMap(TemplateService, (service) => service.adopt(principal.tenantId, body))
  }),
  route({
    method: "GET",
    path: "/chatapp-templates",
    operationId: "listTemplates",
    summary: "List the tenant's chat-app templates, newest first, by channel and status",
    tag: "Templates",
    auth: { kind: "api_key", scopes: ["channels:read", "messages:read"] },
    query: ListQuery,
    response: { status: 200, schema: TemplateList, description: "One page of templates" },
    errors: [422],
    handle: ({ principal, query }) =>
      Effect.gen(function*() {
        const page = toPageRequest(query, TEMPLATES_PAGE_SIZE.default)
        const filter = {
          ...(query.channel_id === undefined ? {} : { channel_id: query.channel_id.toLowerCase() }),
          ...(query.status === undefined ? {} : { status: query.status.toLowerCase() })
        }
        const { items, total } = yield* (yield* TemplateService).list(principal.tenantId, filter, page)
        return { items, pagination: paginationInfo(page, total) }
      })
  }),
  route({
    method: "GET",
    path: "/chatapp-templates/{template_id}",
    operationId: "getTemplate",
    summary: "Get a chat-app template with its components, status and the placeholders a send fills",
    tag: "Templates",
    auth: { kind: "api_key", scopes: ["channels:read", "messages:read"] },
    response: { status: 200, schema: Template, description: "The template" },
    errors: [404],
    handle: ({ principal, params }) =>
      Effect.gen(function*() {
        const id = yield* templateId(params)
        return yield* (yield* TemplateService).get(principal.tenantId, id)
      })
  }),
  route({
    method: "POST",
    path: "/chatapp-templates/{template_id}/send",
    operationId: "sendTemplate",
    summary:
      "Send an approved template to a contact on its channel, any time (no customer-service window); variable_values fill the placeholders in order. The message joins the contact's conversation on that channel (message.sent)",
    tag: "Templates",
    auth: { kind: "api_key", scopes: ["messages:create"] },
    body: SendTemplateRequest,
    response: { status: 201, schema: Message, description: "The message, accepted by the operator (status sent)" },
    errors: [400, 404, 422, 429, 502, 503],
    handle: ({ principal, params, body }) =>
      Effect.gen(function*() {
        const id = yield* templateId(params)
        return yield* (yield* TemplateService).send(principal.tenantId, id, body)
      })
  })
]
