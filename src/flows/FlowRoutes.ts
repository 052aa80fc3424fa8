import { Effect, Schema } from "effect"
import { route } from "../http/Route.ts"
import { pathId, UuidString } from "../kernel/Id.ts"
import { pageQueryFields, paginationInfo, toPageRequest } from "../kernel/Pagination.ts"
import {
  CreateCustomFieldRequest,
  CreateFlowRequest,
  CreateTagRequest,
  CreateVersionRequest,
  CustomField,
  FlowDefinition,
  FlowDefinitionList,
  FlowSession,
  FlowSessionList,
  SendFlowRequest,
  Tag
} from "./Flow.ts"
import { FlowService } from "./FlowService.ts"

/** Default and largest `page_size` of the sessions listing (the spec's). */
export const SESSIONS_PAGE_SIZE = { default: 25, max: 100 } as const

const flowId = (params: Readonly<Record<string, string>>) => pathId(params, "flow_id", "Flow")
const SessionsQuery = Schema.Struct({
  ...pageQueryFields(SESSIONS_PAGE_SIZE.max),
  status: Schema.optionalKey(Schema.Literals(["sent", "completed", "expired", "failed"])),
  contact_id: Schema.optionalKey(UuidString)
})

/** Every route of the flows area. */
export const flowRoutes = [
  route({
    method: "POST",
    path: "/chatapp-flows",
    operationId: "createFlow",
    summary:
      "Define a chat-app flow (the platform's flow id on a chat-app channel) with its first version: screens, their inputs and sensitive fields (masked before anything is stored), and write-back mappings (contact field, custom field, tag, subscription, unsubscription)",
    tag: "Flows",
    auth: { kind: "api_key", scopes: ["chatapp_flows:update"] },
    body: CreateFlowRequest,
    response: { status: 201, schema: FlowDefinition, description: "The flow with its first version" },
    errors: [400, 404, 422],
    handle: ({ principal, body }) => Effect.flatMap(FlowService, (service) => service.create(principal.tenantId, body))
  }),
  route({
    method: "GET",
    path: "/chatapp-flows",
    operationId: "listFlows",
    summary: "List the workspace's flows, with their status, health and latest version",
    tag: "Flows",
    auth: { kind: "api_key", scopes: ["chatapp_flows:read"] },
    response: { status: 200, schema: FlowDefinitionList, description: "The flows" },
    errors: [],
    handle: ({ principal }) => Effect.map(Effect.flatMap(FlowService, (service) => service.list(principal.tenantId)), (items) => ({ items }))
  }),
  route({
    method: "GET",
    path: "/chatapp-flows/{flow_id}",
    operationId: "getFlow",
    summary: "Get a flow with its latest version",
    tag: "Flows",
    auth: { kind: "api_key", scopes: ["chatapp_flows:read"] },
    response: { status: 200, schema: FlowDefinition, description: "The flow" },
    errors: [404],
    handle: ({ principal, params }) =>
      Effect.gen(function*() {
        return yield* (yield* FlowService).get(principal.tenantId, yield* flowId(params))
      })
  }),
  route({
    method: "POST",
    path: "/chatapp-flows/{flow_id}/versions",
    operationId: "createFlowVersion",
    summary: "Add a version (numbered from 1); later sends use it, sessions keep the version they were sent with",
    tag: "Flows",
    auth: { kind: "api_key", scopes: ["chatapp_flows:update"] },
    body: CreateVersionRequest,
    response: { status: 201, schema: FlowDefinition, description: "The flow with its new latest version" },
    errors: [404, 422],
    handle: ({ principal, params, body }) =>
      Effect.gen(function*() {
        return yield* (yield* FlowService).createVersion(principal.tenantId, yield* flowId(params), body)
      })
  }),
  route({
    method: "POST",
    path: "/chatapp-flows/{flow_id}/send",
    operationId: "sendFlow",
    summary:
      "Send the flow's latest version to a contact inside the 24-hour customer-service window: the interactive flow message carries an unguessable flow token (never shown), and a session (sender_type api) waits for the answer",
    tag: "Flows",
    auth: { kind: "api_key", scopes: ["chatapp_flows:update", "messages:create"] },
    body: SendFlowRequest,
    response: { status: 201, schema: FlowSession, description: "The session" },
    errors: [400, 404, 422, 429, 502, 503],
    handle: ({ principal, params, body }) =>
      Effect.gen(function*() {
        return yield* (yield* FlowService).send(principal.tenantId, yield* flowId(params), body, "api")
      })
  }),
  route({
    method: "GET",
    path: "/chatapp-flows/{flow_id}/sessions",
    operationId: "listFlowSessions",
    summary: "Every send of a flow, newest first, by status (`expired`: sent and not answered in time) and contact",
    tag: "Flows",
    auth: { kind: "api_key", scopes: ["chatapp_flows:read"] },
    query: SessionsQuery,
    response: { status: 200, schema: FlowSessionList, description: "One page of sessions" },
    errors: [404, 422],
    handle: ({ principal, params, query }) =>
      Effect.gen(function*() {
        const page = toPageRequest(query, SESSIONS_PAGE_SIZE.default)
        const filter = {
          ...(query.status === undefined ? {} : { status: query.status }),
          ...(query.contact_id === undefined ? {} : { contact_id: query.contact_id })
        }
        const { items, total } = yield* (yield* FlowService).sessions(principal.tenantId, yield* flowId(params), filter, page)
        return { items, pagination: paginationInfo(page, total) }
      })
  }),
  route({
    method: "POST",
    path: "/custom-fields",
    operationId: "createCustomField",
    summary: "Define a custom field contacts may hold (a key, a type, whether write-back may change it)",
    tag: "Contacts",
    auth: { kind: "api_key", scopes: ["contacts:update"] },
    body: CreateCustomFieldRequest,
    response: { status: 201, schema: CustomField, description: "The custom field" },
    errors: [409, 422],
    handle: ({ principal, body }) => Effect.flatMap(FlowService, (service) => service.createCustomField(principal.tenantId, body))
  }),
  route({
    method: "GET",
    path: "/custom-fields",
    operationId: "listCustomFields",
    summary: "List the workspace's custom field definitions",
    tag: "Contacts",
    auth: { kind: "api_key", scopes: ["contacts:read"] },
    response: { status: 200, schema: Schema.Struct({ items: Schema.Array(CustomField) }), description: "The custom fields" },
    errors: [],
    handle: ({ principal }) =>
      Effect.map(Effect.flatMap(FlowService, (service) => service.listCustomFields(principal.tenantId)), (items) => ({ items }))
  }),
  route({
    method: "POST",
    path: "/tags",
    operationId: "createTag",
    summary: "Create a tag contacts may carry",
    tag: "Contacts",
    auth: { kind: "api_key", scopes: ["contacts:update"] },
    body: CreateTagRequest,
    response: { status: 201, schema: Tag, description: "The tag" },
    errors: [409, 422],
    handle: ({ principal, body }) => Effect.flatMap(FlowService, (service) => service.createTag(principal.tenantId, body))
  }),
  route({
    method: "GET",
    path: "/tags",
    operationId: "listTags",
    summary: "List the workspace's tags",
    tag: "Contacts",
    auth: { kind: "api_key", scopes: ["contacts:read"] },
    response: { status: 200, schema: Schema.Struct({ items: Schema.Array(Tag) }), description: "The tags" },
    errors: [],
    handle: ({ principal }) => Effect.map(Effect.flatMap(FlowService, (service) => service.listTags(principal.tenantId)), (items) => ({ items }))
  })
]
