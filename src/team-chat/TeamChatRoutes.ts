import { Effect, Schema } from "effect"
import { route } from "../http/Route.ts"
import { isUuid, pathId } from "../kernel/Id.ts"
import { pageQueryFields, paginationInfo, toPageRequest } from "../kernel/Pagination.ts"
import {
  MAX_BYTES,
  PRICES,
  RATE_LIMITS,
  Summary,
  SummaryErrors,
  SummaryResponse,
  summaryResponseStatus
} from "../summaries/SummaryService.ts"
import {
  actorOf,
  CreateChannelRequest,
  DirectMessageRequest,
  PostMessageRequest,
  TeamChatChannel,
  TeamChatChannelList,
  TeamChatMessage,
  TeamChatMessageList,
  TeamChatService
} from "./TeamChatService.ts"

/** Default and largest `page_size` of a channel's messages. */
export const TEAM_CHAT_PAGE_SIZE = { default: 50, max: 100 } as const

/** Default and largest `page_size` of the caller's channels. */
export const TEAM_CHAT_CHANNELS_PAGE_SIZE = { default: 25, max: 100 } as const

const MB = 1024 * 1024
const ListQuery = Schema.Struct(pageQueryFields(TEAM_CHAT_PAGE_SIZE.max))
const ChannelListQuery = Schema.Struct(pageQueryFields(TEAM_CHAT_CHANNELS_PAGE_SIZE.max))

/** A direct message as `POST /team-chat/direct-messages` answers: the channel, and whether it existed already. */
const OpenedDirectMessage = Schema.Struct({ ...TeamChatChannel.fields, already_existed: Schema.Boolean })

const AS_USER = "Acts as the user the API key is bound to (api-key create --user); a key bound to nobody gets 403"

// A malformed id names nothing: the summary routes' own 404 body, like an unknown or unseen one.
const summaryIds = (params: Readonly<Record<string, string>>) => {
  const messageId = params.message_id ?? ""
  const attachmentId = params.attachment_id ?? ""
  return isUuid(messageId) && isUuid(attachmentId)
    ? Effect.succeed({ messageId: messageId.toLowerCase(), attachmentId: attachmentId.toLowerCase() })
    : Effect.fail(SummaryErrors.attachmentNotFound(attachmentId))
}

/** Every route of the team chat area. */
export const teamChatRoutes = [
  route({
    method: "POST",
    path: "/team-chat/channels",
    operationId: "createTeamChatChannel",
    summary:
      `Create a channel; the caller is a member. Members are users of this workspace or of a workspace it is shared with (each of which the caller belongs to). Channels shared across workspaces or with external guests never offer AI summaries. ${AS_USER}`,
    tag: "Team chat",
    auth: { kind: "api_key", scopes: ["team_chat:create"] },
    body: CreateChannelRequest,
    response: { status: 201, schema: TeamChatChannel, description: "The channel" },
    errors: [422],
    handle: ({ principal, body }) =>
      Effect.gen(function*() {
        return yield* (yield* TeamChatService).createChannel(yield* actorOf(principal), body)
      })
  }),
  route({
    method: "GET",
    path: "/team-chat/channels",
    operationId: "listTeamChatChannels",
    summary:
      `The channels and direct messages the caller is a member of (of those this workspace sees: its own and those shared with it), newest activity first: last_activity_at is when the newest message or thread reply was posted, or the channel made before any. ${AS_USER}`,
    tag: "Team chat",
    auth: { kind: "api_key", scopes: ["team_chat:read"] },
    query: ChannelListQuery,
    response: { status: 200, schema: TeamChatChannelList, description: "One page of channels and direct messages" },
    errors: [422],
    handle: ({ principal, query }) =>
      Effect.gen(function*() {
        const page = toPageRequest(query, TEAM_CHAT_CHANNELS_PAGE_SIZE.default)
        const { items, total } = yield* (yield* TeamChatService).listChannels(yield* actorOf(principal), page)
        return { items, pagination: paginationInfo(page, total) }
      })
  }),
  route({
    method: "POST",
    path: "/team-chat/direct-messages",
    operationId: "openTeamChatDirectMessage",
    summary:
      `Open the direct message between the caller and users of this workspace: the existing one for the same participants (200) or a new one (201). ${AS_USER}`,
    tag: "Team chat",
    auth: { kind: "api_key", scopes: ["team_chat:create"] },
    body: DirectMessageRequest,
    response: {
      status: 201,
      schema: OpenedDirectMessage,
      description: "A new direct message",
      statusOf: (result) => (result.already_existed ? 200 : 201),
      alternatives: { 200: "The direct message between these participants existed already (already_existed: true)" }
    },
    errors: [422],
    handle: ({ principal, body }) =>
      Effect.gen(function*() {
        const opened = yield* (yield* TeamChatService).openDirectMessage(yield* actorOf(principal), body)
        return { ...opened.channel, already_existed: !opened.created }
      })
  }),
  route({
    method: "POST",
    path: "/team-chat/channels/{channel_id}/messages",
    operationId: "postTeamChatMessage",
    summary:
      `Post a message, or a reply in a thread (parent_message_id: a top-level message of the channel), with files uploaded before (POST /attachments/upload) in this workspace; each file is posted once. Files carry ai_summary, ai_summary_available and ai_summary_credits as the caller sees them: a file counts as inbound when someone else posted it. ${AS_USER}`,
    tag: "Team chat",
    auth: { kind: "api_key", scopes: ["team_chat:create"] },
    body: PostMessageRequest,
    response: { status: 201, schema: TeamChatMessage, description: "The message" },
    errors: [404, 422],
    handle: ({ principal, params, body }) =>
      Effect.gen(function*() {
        const channelId = yield* pathId(params, "channel_id", "Channel")
        return yield* (yield* TeamChatService).postMessage(yield* actorOf(principal), channelId, body)
      })
  }),
  route({
    method: "GET",
    path: "/team-chat/channels/{channel_id}/messages",
    operationId: "listTeamChatMessages",
    summary:
      `A channel's (or direct message's) messages and thread replies together, oldest first; a reply names its top-level message in parent_message_id. 404 for a caller who is not a member. ${AS_USER}`,
    tag: "Team chat",
    auth: { kind: "api_key", scopes: ["team_chat:read"] },
    query: ListQuery,
    response: { status: 200, schema: TeamChatMessageList, description: "One page of messages" },
    errors: [404, 422],
    handle: ({ principal, params, query }) =>
      Effect.gen(function*() {
        const channelId = yield* pathId(params, "channel_id", "Channel")
        const page = toPageRequest(query, TEAM_CHAT_PAGE_SIZE.default)
        const { items, total } = yield* (yield* TeamChatService).listMessages(yield* actorOf(principal), channelId, page)
        return { items, pagination: paginationInfo(page, total) }
      })
  }),
  route({
    method: "GET",
    path: "/team-chat/messages/{message_id}",
    operationId: "getTeamChatMessage",
    summary: `A channel message, thread reply or direct message. 404 for a caller who is not a member or participant. ${AS_USER}`,
    tag: "Team chat",
    auth: { kind: "api_key", scopes: ["team_chat:read"] },
    response: { status: 200, schema: TeamChatMessage, description: "The message" },
    errors: [404],
    handle: ({ principal, params }) =>
      Effect.gen(function*() {
        const messageId = yield* pathId(params, "message_id", "Message")
        return yield* (yield* TeamChatService).getMessage(yield* actorOf(principal), messageId)
      })
  }),
  route({
    method: "GET",
    path: "/team-chat/messages/{message_id}/attachments/{attachment_id}/summary",
    operationId: "getTeamChatAttachmentSummary",
    summary:
      `The AI summary of a file of a team chat message (untrusted plain text). 404 attachment_not_found when the caller is not a member or participant, or the file is not this message's. ${AS_USER}`,
    tag: "Team chat",
    auth: { kind: "api_key", scopes: ["team_chat:read"] },
    response: { status: 200, schema: Summary, description: "The summary" },
    errors: [403, 404],
    handle: ({ principal, params }) =>
      Effect.gen(function*() {
        const { messageId, attachmentId } = yield* summaryIds(params)
        return yield* (yield* TeamChatService).getSummary(yield* actorOf(principal), messageId, attachmentId)
      })
  }),
  route({
    method: "POST",
    path: "/team-chat/messages/{message_id}/attachments/{attachment_id}/summary",
    operationId: "requestTeamChatAttachmentSummary",
    summary:
      `Request an AI summary of a file someone else posted: an image (up to ${MAX_BYTES.image / MB} MB, ${PRICES.image} credits) or PDF (up to ${MAX_BYTES.pdf / MB} MB, first 10 pages, ${PRICES.pdf} credits), as POST /attachments/{id}/summary (200 existing, 202 pending, at most ${RATE_LIMITS.perCaller} requests a minute per user and ${RATE_LIMITS.perWorkspace} per workspace). 422 attachment_not_summarizable in channels shared across workspaces or with external guests. Never emits attachment.summarized. ${AS_USER}`,
    tag: "Team chat",
    auth: { kind: "api_key", scopes: ["team_chat:create"] },
    response: {
      status: 201,
      schema: SummaryResponse,
      description: "A new summary; credits_charged is its price",
      statusOf: summaryResponseStatus,
      alternatives: {
        200: "The summary existed already; nothing charged",
        202: "The summary is being generated (status pending); nothing charged"
      }
    },
    errors: [402, 403, 404, 422, 429, 502, 503],
    handle: ({ principal, params }) =>
      Effect.gen(function*() {
        const { messageId, attachmentId } = yield* summaryIds(params)
        return yield* (yield* TeamChatService).requestSummary(yield* actorOf(principal), messageId, attachmentId)
      })
  })
]
