import { Effect, Schema } from "effect"
import { route } from "../http/Route.ts"
import { pathId, UuidString } from "../kernel/Id.ts"
import { pageQueryFields, paginationInfo, toPageRequest } from "../kernel/Pagination.ts"
import { Conversation, ConversationList, toConversation } from "./Conversation.ts"
import { ConversationService } from "./ConversationService.ts"

/** Default and largest `page_size` of `GET /conversations`, like contacts. */
export const CONVERSATIONS_PAGE_SIZE = { default: 25, max: 100 } as const

const conversationId = (params: Readonly<Record<string, string>>) => pathId(params, "conversation_id", "Conversation")

const ListQuery = Schema.Struct({
  ...pageQueryFields(CONVERSATIONS_PAGE_SIZE.max),
  channel_id: Schema.optionalKey(UuidString),
  contact_id: Schema.optionalKey(UuidString),
  status: Schema.optionalKey(Schema.Literals(["open", "closed"]))
})

/** Every route of the conversations area. */
export const conversationRoutes = [
  route({
    method: "GET",
    path: "/conversations",
    operationId: "listConversations",
    summary: "List conversations, most recent activity first; filter by channel, contact or status",
    tag: "Conversations",
    auth: { kind: "api_key", scopes: ["conversations:read"] },
    query: ListQuery,
    response: { status: 200, schema: ConversationList, description: "One page of conversations" },
    errors: [422],
    handle: ({ principal, query }) =>
      Effect.gen(function*() {
        const page = toPageRequest(query, CONVERSATIONS_PAGE_SIZE.default)
        const filter = {
          ...(query.channel_id === undefined ? {} : { channel_id: query.channel_id }),
          ...(query.contact_id === undefined ? {} : { contact_id: query.contact_id }),
          ...(query.status === undefined ? {} : { status: query.status })
        }
        const { items, total } = yield* (yield* ConversationService).list(principal.tenantId, filter, page)
        return { items: items.map(toConversation), pagination: paginationInfo(page, total) }
      })
  }),
  route({
    method: "GET",
    path: "/conversations/{conversation_id}",
    operationId: "getConversation",
    summary: "Get a conversation",
    tag: "Conversations",
    auth: { kind: "api_key", scopes: ["conversations:read"] },
    response: { status: 200, schema: Conversation, description: "The conversation" },
    errors: [404],
    handle: ({ principal, params }) =>
      Effect.gen(function*() {
        const id = yield* conversationId(params)
        return toConversation(yield* (yield* ConversationService).get(principal.tenantId, id))
      })
  }),
  route({
    method: "POST",
    path: "/conversations/{conversation_id}/close",
    operationId: "closeConversation",
    summary: "Close a conversation (conversation.closed); the contact's next message opens a new one",
    tag: "Conversations",
    auth: { kind: "api_key", scopes: ["conversations:update"] },
    response: { status: 200, schema: Conversation, description: "The closed conversation" },
    errors: [404],
    handle: ({ principal, params }) =>
      Effect.gen(function*() {
        const id = yield* conversationId(params)
        return toConversation(yield* (yield* ConversationService).close(principal.tenantId, id))
      })
  })
]
