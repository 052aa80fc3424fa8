import { Effect, Schema } from "effect"
import { route } from "../http/Route.ts"
import { pathId } from "../kernel/Id.ts"
import { pageQueryFields, paginationInfo, toPageRequest } from "../kernel/Pagination.ts"
import { now } from "../kernel/Timestamp.ts"
import {
  ConnectToken,
  ConnectTokenList,
  CreateConnectTokenRequest,
  CreatedConnectToken,
  toConnectToken
} from "./ConnectToken.ts"
import { ConnectTokenService } from "./ConnectTokenService.ts"

/** Default and largest `page_size` of `GET /channel-connect-tokens`. */
export const CONNECT_TOKENS_PAGE_SIZE = { default: 25, max: 100 } as const

const tokenId = (params: Readonly<Record<string, string>>) => pathId(params, "token_id", "Connect token")

const revokeRoute = (method: "DELETE" | "POST", path: string, operationId: string, summary: string) =>
  route({
    method,
    path,
    operationId,
    summary,
    tag: "Connect tokens",
    auth: { kind: "api_key", scopes: ["channels:create"] },
    response: { status: 200, schema: ConnectToken, description: "The token, now revoked" },
    errors: [404],
    handle: ({ principal, params }) =>
      Effect.gen(function*() {
        const id = yield* tokenId(params)
        const token = yield* (yield* ConnectTokenService).revoke(principal.tenantId, id)
        return toConnectToken(token, yield* now)
      })
  })

/** Every route of the connect-tokens area. */
export const connectTokenRoutes = [
  route({
    method: "POST",
    path: "/channel-connect-tokens",
    operationId: "createConnectToken",
    summary: "Create a channel connect link (in the X-Tenant-ID sub-account when sent)",
    tag: "Connect tokens",
    auth: { kind: "api_key", scopes: ["channels:create"] },
    body: CreateConnectTokenRequest,
    response: {
      status: 201,
      schema: CreatedConnectToken,
      description: "The token; connect_url holds the raw token and is shown only here"
    },
    errors: [422],
    handle: ({ principal, body }) =>
      Effect.gen(function*() {
        const { connect_url, token } = yield* (yield* ConnectTokenService).create(principal.tenantId, body)
        return { ...toConnectToken(token, yield* now), connect_url }
      })
  }),
  route({
    method: "GET",
    path: "/channel-connect-tokens",
    operationId: "listConnectTokens",
    summary: "List connect tokens, newest first (never the raw token)",
    tag: "Connect tokens",
    auth: { kind: "api_key", scopes: ["channels:read", "channels:create"] },
    query: Schema.Struct(pageQueryFields(CONNECT_TOKENS_PAGE_SIZE.max)),
    response: { status: 200, schema: ConnectTokenList, description: "One page of tokens" },
    errors: [422],
    handle: ({ principal, query }) =>
      Effect.gen(function*() {
        const page = toPageRequest(query, CONNECT_TOKENS_PAGE_SIZE.default)
        const { items, total } = yield* (yield* ConnectTokenService).list(principal.tenantId, page)
        const at = yield* now
        return { items: items.map((token) => toConnectToken(token, at)), pagination: paginationInfo(page, total) }
      })
  }),
  route({
    method: "GET",
    path: "/channel-connect-tokens/{token_id}",
    operationId: "getConnectToken",
    summary: "Get a connect token (never the raw token)",
    tag: "Connect tokens",
    auth: { kind: "api_key", scopes: ["channels:read", "channels:create"] },
    response: { status: 200, schema: ConnectToken, description: "The token" },
    errors: [404],
    handle: ({ principal, params }) =>
      Effect.gen(function*() {
        const id = yield* tokenId(params)
        return toConnectToken(yield* (yield* ConnectTokenService).get(principal.tenantId, id), yield* now)
      })
  }),
  revokeRoute("DELETE", "/channel-connect-tokens/{token_id}", "deleteConnectToken", "Revoke a connect token"),
  revokeRoute(
    "POST",
    "/channel-connect-tokens/{token_id}/revoke",
    "revokeConnectToken",
    "Revoke a connect token (same as DELETE)"
  )
]
