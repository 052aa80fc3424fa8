import { Effect, Schema } from "effect"
import { route } from "../http/Route.ts"
import { pathId, UuidId } from "../kernel/Id.ts"
import { ContactImportRequest, ImportResultSchema, MAX_IMPORT_CONTACTS } from "./ContactImport.ts"
import { CreateListRequest, List, ListList, SubscribeRequest, Subscription, UpdateListRequest } from "./List.ts"
import { ListService } from "./ListService.ts"

const OptOut = Schema.Struct({
  contact_id: UuidId,
  channel_id: Schema.NullOr(UuidId),
  source: Schema.String,
  opted_out_at: Schema.String
})

/** Response of `GET /contacts/{id}/subscriptions`. */
export const ContactSubscriptions = Schema.Struct({
  items: Schema.Array(Subscription),
  /** Marketing opt-outs: a total opt-out word, or the operator's (campaigns skip these contacts). */
  marketing_opt_outs: Schema.Array(OptOut)
})

const listId = (params: Readonly<Record<string, string>>) => pathId(params, "list_id", "List")

/** Every route of the lists area. */
export const listRoutes = [
  route({
    method: "POST",
    path: "/lists",
    operationId: "createList",
    summary:
      "Create a list: static (members are its subscribers) or dynamic (the contacts matching its filters). The slug (URL-safe, unique in the workspace) defaults to one made from the name; at most one list is the default, which bare 'start' subscribes to",
    tag: "Lists",
    auth: { kind: "api_key", scopes: ["contacts:update"] },
    body: CreateListRequest,
    response: { status: 201, schema: List, description: "The list" },
    errors: [409, 422],
    handle: ({ principal, body }) => Effect.flatMap(ListService, (service) => service.create(principal.tenantId, body))
  }),
  route({
    method: "GET",
    path: "/lists",
    operationId: "listLists",
    summary: "List the workspace's lists, oldest first",
    tag: "Lists",
    auth: { kind: "api_key", scopes: ["contacts:read"] },
    response: { status: 200, schema: ListList, description: "The lists" },
    errors: [],
    handle: ({ principal }) =>
      Effect.map(Effect.flatMap(ListService, (service) => service.list(principal.tenantId)), (items) => ({ items }))
  }),
  route({
    method: "GET",
    path: "/lists/{list_id}",
    operationId: "getList",
    summary: "Get a list",
    tag: "Lists",
    auth: { kind: "api_key", scopes: ["contacts:read"] },
    response: { status: 200, schema: List, description: "The list" },
    errors: [404],
    handle: ({ principal, params }) =>
      Effect.gen(function*() {
        return yield* (yield* ListService).get(principal.tenantId, yield* listId(params))
      })
  }),
  route({
    method: "PATCH",
    path: "/lists/{list_id}",
    operationId: "updateList",
    summary: "Change a list's name, slug, default flag, filters or welcome message (null restores the default text)",
    tag: "Lists",
    auth: { kind: "api_key", scopes: ["contacts:update"] },
    body: UpdateListRequest,
    response: { status: 200, schema: List, description: "The list" },
    errors: [404, 409, 422],
    handle: ({ principal, params, body }) =>
      Effect.gen(function*() {
        return yield* (yield* ListService).update(principal.tenantId, yield* listId(params), body)
      })
  }),
  route({
    method: "DELETE",
    path: "/lists/{list_id}",
    operationId: "deleteList",
    summary: "Delete a list; its subscriptions and unsubscriptions stay on record",
    tag: "Lists",
    auth: { kind: "api_key", scopes: ["contacts:update"] },
    response: {
      status: 200,
      schema: Schema.Struct({ id: UuidId, deleted: Schema.Literal(true) }),
      description: "The list is deleted"
    },
    errors: [404],
    handle: ({ principal, params }) =>
      Effect.gen(function*() {
        const id = yield* listId(params)
        yield* (yield* ListService).remove(principal.tenantId, id)
        return { id, deleted: true as const }
      })
  }),
  route({
    method: "POST",
    path: "/lists/{list_id}/subscriptions",
    operationId: "subscribeContact",
    summary: "Subscribe a contact to a static list (opt-in method api); subscribing again changes nothing",
    tag: "Lists",
    auth: { kind: "api_key", scopes: ["contacts:update"] },
    body: SubscribeRequest,
    response: { status: 201, schema: Subscription, description: "The subscription" },
    errors: [404, 422],
    handle: ({ principal, params, body }) =>
      Effect.gen(function*() {
        return yield* (yield* ListService).subscribe(principal.tenantId, yield* listId(params), body.contact_id, { method: "api" })
      })
  }),
  route({
    method: "DELETE",
    path: "/lists/{list_id}/subscriptions/{contact_id}",
    operationId: "unsubscribeContact",
    summary: "Unsubscribe a contact (contact.unsubscribed); the subscription stays on record as unsubscribed",
    tag: "Lists",
    auth: { kind: "api_key", scopes: ["contacts:update"] },
    response: { status: 200, schema: Subscription, description: "The subscription, unsubscribed" },
    errors: [404],
    handle: ({ principal, params }) =>
      Effect.gen(function*() {
        const contactId = yield* pathId(params, "contact_id", "Contact")
        return yield* (yield* ListService).unsubscribe(principal.tenantId, yield* listId(params), contactId, { method: "api" })
      })
  }),
  route({
    method: "GET",
    path: "/contacts/{contact_id}/subscriptions",
    operationId: "getContactSubscriptions",
    summary: "A contact's subscriptions (subscribed and unsubscribed) and marketing opt-outs",
    tag: "Lists",
    auth: { kind: "api_key", scopes: ["contacts:read"] },
    response: { status: 200, schema: ContactSubscriptions, description: "The subscriptions" },
    errors: [404],
    handle: ({ principal, params }) =>
      Effect.gen(function*() {
        const contactId = yield* pathId(params, "contact_id", "Contact")
        return yield* (yield* ListService).subscriptionsOf(principal.tenantId, contactId)
      })
  }),
  route({
    method: "POST",
    path: "/contacts/import",
    operationId: "importContacts",
    summary:
      `Import up to ${MAX_IMPORT_CONTACTS} contacts: each is matched by phone, else email, and updated, or created. They are subscribed to list_ids only with optin_confirmed: true (opt-in method import); a contact that cannot be stored is reported by its index`,
    tag: "Lists",
    auth: { kind: "api_key", scopes: ["contacts:create"] },
    body: ContactImportRequest,
    response: { status: 200, schema: ImportResultSchema, description: "What the import did" },
    errors: [404, 422],
    handle: ({ principal, body }) => Effect.flatMap(ListService, (service) => service.importContacts(principal.tenantId, body))
  })
]
