import { Effect, Schema } from "effect"
import { route } from "../http/Route.ts"
import { pathId, UuidString } from "../kernel/Id.ts"
import { pageQueryFields, paginationInfo, toPageRequest } from "../kernel/Pagination.ts"
import { Message, MessageList, SendMessageRequest, SendMessageResponse } from "./Message.ts"
import { MessageService } from "./MessageService.ts"
import { ConversationService } from "../conversations/ConversationService.ts"
import { EmailService } from "../email/EmailService.ts"
import { NotFound } from "../kernel/ApiError.ts"

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
      "Send in a conversation (message.sent). Chat-app, only within the operator's 24-hour customer-service window (outside it, send an approved template): text, or files (attachment ids from the upload endpoints, at most 10) sent one message each, uploaded to the operator first, the text as the first file's caption; message_type image (JPEG/PNG ≤ 5 MB), video (MP4/3GPP ≤ 16 MB), audio (AAC/AMR/MP3/M4A/OGG ≤ 16 MB, no caption), document (any type ≤ 100 MB) or sticker (WebP ≤ 100 KB, animated ≤ 500 KB, no caption), else the first file's type decides; the answer is the first message with messages, all of them. Email: plain text and files in one email (never fanned out), all as regular file attachments, at most 20 MB in all; subject required unless the conversation has one",
    tag: "Messages",
    auth: { kind: "api_key", scopes: ["messages:create"] },
    body: SendMessageRequest,
    response: {
      status: 201,
      schema: SendMessageResponse,
      description: "The message, accepted by the operator or the mail server (status sent); a chat-app file send adds messages, one per file"
    },
    errors: [400, 404, 413, 422, 429, 502, 503],
    handle: ({ principal, body }) =>
      Effect.gen(function*() {
        const messages = yield* MessageService
        const email = yield* EmailService
        const conversation = yield* Effect.catchTag(
          (yield* ConversationService).get(principal.tenantId, body.conversation_id.toLowerCase()),
          "NotFound",
          () => Effect.fail(new NotFound({ message: `Conversation ${body.conversation_id} not found` }))
        )
        if (!email.isEmailConversation(conversation)) return yield* messages.send(principal.tenantId, body)
        const id = yield* email.sendInConversation(conversation, body)
        return yield* messages.get(principal.tenantId, id)
      })
  })
]
