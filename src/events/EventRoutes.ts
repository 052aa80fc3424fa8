import { Effect, Schema } from "effect"
import { route } from "../http/Route.ts"
import { EventEnvelope } from "../kernel/EventEnvelope.ts"
import { pageQueryFields, toPageRequest } from "../kernel/Pagination.ts"
import { EventService } from "./EventService.ts"

/** Default and largest `page_size` of `GET /events`. */
export const EVENTS_PAGE_SIZE = { default: 50, max: 100 } as const

/** Response of `GET /events`: flat paging fields, as the spec's deliveries list has them. */
export const EventList = Schema.Struct({
  items: Schema.Array(EventEnvelope),
  page: Schema.Int,
  page_size: Schema.Int,
  has_more: Schema.Boolean
})

/** The tenant's event log: every event its changes emitted, in the order they happened. */
export const eventRoutes = [
  route({
    method: "GET",
    path: "/events",
    operationId: "listEvents",
    summary: "List the tenant's events, oldest first (what webhooks deliver)",
    tag: "Events",
    auth: { kind: "api_key", scopes: ["webhooks:read"] },
    query: Schema.Struct({
      ...pageQueryFields(EVENTS_PAGE_SIZE.max),
      type: Schema.optionalKey(Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(100)))
    }),
    response: { status: 200, schema: EventList, description: "One page of events" },
    errors: [422],
    handle: ({ principal, query }) =>
      Effect.gen(function*() {
        const page = toPageRequest(query, EVENTS_PAGE_SIZE.default)
        const { items, has_more } = yield* (yield* EventService).list(principal.tenantId, page, query.type)
        return { items, page: page.page, page_size: page.pageSize, has_more }
      })
  })
]
