import { Effect, Schema } from "effect"
import { route } from "../http/Route.ts"
import { pathId } from "../kernel/Id.ts"
import { pageQueryFields, paginationInfo, toPageRequest } from "../kernel/Pagination.ts"
import { Channel, ChannelList, toChannel } from "./Channel.ts"
import { ChannelService } from "./ChannelService.ts"
import { SendingLimit, SendingLimitService } from "./SendingLimitService.ts"

/** Default and largest `page_size` of `GET /channels`. */
export const CHANNELS_PAGE_SIZE = { default: 25, max: 100 } as const

const channelId = (params: Readonly<Record<string, string>>) => pathId(params, "channel_id", "Channel")

/** Every route of the channels area. */
export const channelRoutes = [
  route({
    method: "GET",
    path: "/channels",
    operationId: "listChannels",
    summary: "List the tenant's channels, newest first",
    tag: "Channels",
    auth: { kind: "api_key", scopes: ["channels:read"] },
    query: Schema.Struct(pageQueryFields(CHANNELS_PAGE_SIZE.max)),
    response: { status: 200, schema: ChannelList, description: "One page of channels" },
    errors: [422],
    handle: ({ principal, query }) =>
      Effect.gen(function*() {
        const page = toPageRequest(query, CHANNELS_PAGE_SIZE.default)
        const { items, total } = yield* (yield* ChannelService).list(principal.tenantId, page)
        return { items: items.map(toChannel), pagination: paginationInfo(page, total) }
      })
  }),
  route({
    method: "GET",
    path: "/channels/{channel_id}",
    operationId: "getChannel",
    summary: "Get a channel",
    tag: "Channels",
    auth: { kind: "api_key", scopes: ["channels:read"] },
    response: { status: 200, schema: Channel, description: "The channel" },
    errors: [404],
    handle: ({ principal, params }) =>
      Effect.gen(function*() {
        const id = yield* channelId(params)
        return toChannel(yield* (yield* ChannelService).get(principal.tenantId, id))
      })
  }),
  route({
    method: "POST",
    path: "/channels/{channel_id}/disconnect",
    operationId: "disconnectChannel",
    summary: "Disconnect a channel (emits channel.updated)",
    tag: "Channels",
    auth: { kind: "api_key", scopes: ["channels:admin"] },
    response: { status: 200, schema: Channel, description: "The channel, now disconnected" },
    errors: [404],
    handle: ({ principal, params }) =>
      Effect.gen(function*() {
        const id = yield* channelId(params)
        return toChannel(yield* (yield* ChannelService).disconnect(principal.tenantId, id))
      })
  }),
  route({
    method: "GET",
    path: "/chatapp/channels/{channel_id}/sending-limit",
    operationId: "getSendingLimit",
    summary:
      "The operator's sending limit of a chat-app channel's number, read from the operator (stale: true with the last known values when it cannot be read; supported: false for other channel types)",
    tag: "Channels",
    auth: { kind: "api_key", scopes: ["channels:read"] },
    response: { status: 200, schema: SendingLimit, description: "The sending limit" },
    errors: [404, 429, 502, 503],
    handle: ({ principal, params }) =>
      Effect.gen(function*() {
        const id = yield* channelId(params)
        return yield* (yield* SendingLimitService).get(principal.tenantId, id)
      })
  })
]
