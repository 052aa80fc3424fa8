import { Effect, Schema } from "effect"
import { route } from "../http/Route.ts"
import { pathId, UuidString } from "../kernel/Id.ts"
import { pageQueryFields, paginationInfo, toPageRequest } from "../kernel/Pagination.ts"
import { Message, MessageList, SendMessageRequest } from "./Message.ts"
import { MessageService } from "./MessageService.ts"

/** Default and largest `page_size` of `GET /messages`. */
export const MESSAGES_PAGE_SIZE = { default: 50, max: 200 } as const

const ListQuery = Schema.Struct({
  ...pageQueryFields(MESSAGES_PAGE_SIZE.max),
  conversation_id: UuidString
})

/** Every route of the messages area. */
export const messageRoutes = [
  route({
    method: "GET",
    path: "/messages",
    operationId: "listMessages",
    summary: "List a conversation's messages, oldest first",
    tag: "Messages",
    auth: { kind: "api_key", scopes: ["messages:read"] },
    query: ListQuery,
    response: { status: 200, schema: MessageList, description: "One page of the conversation's messages" },
    errors: [404, 422],
    handle: ({ principal, query }) =>
      Effect.gen(function*() {
        const page = toPageRequest(query, MESSAGES_PAGE_SIZE.default)
        const { items, total } = yield* (yield* MessageService).list(principal.tenantId, query.conversation_id, page)
        return { items, pagination: paginationInfo(page, total) }
      })
  }),
  route({
    method: "GET",
    path: "/messages/{message_id}",
    operationId: "getMessage",
    summary: "Get a message with its attachments",
    tag: "Messages",
    auth: { kind: "api_key", scopes: ["messages:read"] },
    response: { status: 200, schema: Message, description: "The message" },
    errors: [404],
    handle: ({ principal, params }) =>
      Effect.gen(function*() {
        const id = yield* pathId(params, "message_id", "Message")
        return yield* (yield* MessageService).get(principal.tenantId, id)
      })
  }),
  route({
    method: "POST",
    path: "/messages",
    operationId: "sendMessage",
    summary:
      "Send chat-app text in a conversation (message.sent). Only within the operator's 24-hour customer-service window; outside it, send an approved template",
    tag: "Messages",
    auth: { kind: "api_key", scopes: ["messages:create"] },
    body: SendMessageRequest,
    response: { status: 201, schema: Message, description: "The message, accepted by the operator (status sent)" },
    errors: [404, 422, 429, 502, 503],
    handle: ({ principal, body }) => Effect.flatMap(MessageService, (service) => service.send(principal.tenantId, body))
  })
]
