import { Effect, Schema } from "effect"
import { route } from "../http/Route.ts"
import { pathId } from "../kernel/Id.ts"
import { pageQueryFields, paginationInfo, toPageRequest } from "../kernel/Pagination.ts"
import { Contact, ContactDeleted, ContactList, CreateContactRequest, toContact, UpdateContactRequest } from "./Contact.ts"
import { ContactErasureService } from "./ContactErasureService.ts"
import { ContactService } from "./ContactService.ts"

/** Default and largest `page_size` of `GET /contacts`. */
export const CONTACTS_PAGE_SIZE = { default: 25, max: 100 } as const

const contactId = (params: Readonly<Record<string, string>>) => pathId(params, "contact_id", "Contact")

/** Every route of the contacts area. */
export const contactRoutes = [
  route({
    method: "POST",
    path: "/contacts",
    operationId: "createContact",
    summary: "Create a contact",
    tag: "Contacts",
    auth: { kind: "api_key", scopes: ["contacts:create"] },
    body: CreateContactRequest,
    response: { status: 201, schema: Contact, description: "The new contact" },
    errors: [409, 422],
    handle: ({ principal, body }) =>
      Effect.flatMap(ContactService, (contacts) => contacts.create(principal.tenantId, body)).pipe(Effect.map(toContact))
  }),
  route({
    method: "GET",
    path: "/contacts",
    operationId: "listContacts",
    summary: "List contacts, newest first",
    tag: "Contacts",
    auth: { kind: "api_key", scopes: ["contacts:read"] },
    query: Schema.Struct(pageQueryFields(CONTACTS_PAGE_SIZE.max)),
    response: { status: 200, schema: ContactList, description: "One page of contacts" },
    errors: [422],
    handle: ({ principal, query }) =>
      Effect.gen(function*() {
        const page = toPageRequest(query, CONTACTS_PAGE_SIZE.default)
        const { items, total } = yield* (yield* ContactService).list(principal.tenantId, page)
        return { items: items.map(toContact), pagination: paginationInfo(page, total) }
      })
  }),
  route({
    method: "GET",
    path: "/contacts/{contact_id}",
    operationId: "getContact",
    summary: "Get a contact",
    tag: "Contacts",
    auth: { kind: "api_key", scopes: ["contacts:read"] },
    response: { status: 200, schema: Contact, description: "The contact" },
    errors: [404],
    handle: ({ principal, params }) =>
      Effect.gen(function*() {
        const id = yield* contactId(params)
        return toContact(yield* (yield* ContactService).get(principal.tenantId, id))
      })
  }),
  route({
    method: "PATCH",
    path: "/contacts/{contact_id}",
    operationId: "updateContact",
    summary: "Update a contact: only the fields sent change; null clears one",
    tag: "Contacts",
    auth: { kind: "api_key", scopes: ["contacts:update"] },
    body: UpdateContactRequest,
    response: { status: 200, schema: Contact, description: "The contact after the change" },
    errors: [404, 409, 422],
    handle: ({ principal, params, body }) =>
      Effect.gen(function*() {
        const id = yield* contactId(params)
        return toContact(yield* (yield* ContactService).update(principal.tenantId, id, body))
      })
  }),
  route({
    method: "DELETE",
    path: "/contacts/{contact_id}",
    operationId: "deleteContact",
    summary:
      "Erase a contact (contact.deleted): the contact, its tags, list subscriptions and opt-outs are deleted; its conversations stay, closed, with their messages' and emails' text, content, subjects, addresses and headers erased and their files deleted (bytes and records); campaign recipients stay, naming nobody",
    tag: "Contacts",
    auth: { kind: "api_key", scopes: ["contacts:delete"] },
    response: { status: 200, schema: ContactDeleted, description: "The contact is erased; what went with it" },
    errors: [404],
    handle: ({ principal, params }) =>
      Effect.gen(function*() {
        const id = yield* contactId(params)
        return yield* (yield* ContactErasureService).erase(principal.tenantId, id)
      })
  })
]
