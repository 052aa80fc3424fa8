import { Context, Effect, Layer, Option } from "effect"
import { Conflict, InvalidRequest, NotFound } from "../kernel/ApiError.ts"
import { normalizeEmail } from "../kernel/Email.ts"
import { makeEvent } from "../kernel/EventEnvelope.ts"
import { newId, newIdNow } from "../kernel/Id.ts"
import { type PageRequest, toWindow } from "../kernel/Pagination.ts"
import { StorageError } from "../kernel/StorageError.ts"
import { now } from "../kernel/Timestamp.ts"
import { type ContactRecord, ContactStore } from "../ports/ContactStore.ts"
import { OutboxStore } from "../ports/OutboxStore.ts"
import { Transactor } from "../ports/Transactor.ts"
import { type CreateContactRequest, MAX_CUSTOM_FIELDS, toContact, type UpdateContactRequest } from "./Contact.ts"

const notFound = (id: string) => new NotFound({ message: `Contact ${id} not found` })

const FIELDS = ["name", "phone", "email", "language", "custom_fields"] as const

/** A new contact known by one phone or email, named by what the channel said (trimmed, at most 200 characters). */
/** A new contact of `tenantId` with the fields of `request` (as `POST /contacts` takes them). */
const requested = (id: string, tenantId: string, request: CreateContactRequest, at: string): ContactRecord => ({
  id,
  tenant_id: tenantId,
  name: request.name?.trim() ?? null,
  phone: request.phone ?? null,
  email: request.email === undefined ? null : normalizeEmail(request.email),
  language: request.language ?? null,
  custom_fields: request.custom_fields ?? {},
  created_at: at,
  updated_at: null
})

const identified = (
  id: string,
  tenantId: string,
  field: "phone" | "email",
  value: string,
  name: string | null,
  at: string
): ContactRecord => ({
  id,
  tenant_id: tenantId,
  name: name?.trim().slice(0, 200) || null,
  phone: field === "phone" ? value : null,
  email: field === "email" ? value : null,
  language: null,
  custom_fields: {},
  created_at: at,
  updated_at: null
})

/** Contacts: created, read, listed and updated within one tenant, announcing changes as events. */
export class ContactService extends Context.Service<ContactService, {
  readonly create: (
    tenantId: string,
    request: CreateContactRequest
  ) => Effect.Effect<ContactRecord, InvalidRequest | Conflict | StorageError>
  readonly get: (tenantId: string, id: string) => Effect.Effect<ContactRecord, NotFound | StorageError>
  readonly list: (
    tenantId: string,
    page: PageRequest
  ) => Effect.Effect<{ readonly items: ReadonlyArray<ContactRecord>; readonly total: number }, StorageError>
  /**
   * The tenant's contact with this phone (E.164), or a new one named `name` (`contact.created`): how a
   * sender becomes a contact. Joins the caller's transaction; a concurrent creation of the same phone
   * fails with a `UniqueViolation` for the caller to try again.
   */
  readonly findOrCreateByPhone: (
    tenantId: string,
    phone: string,
    name: string | null
  ) => Effect.Effect<{ readonly contact: ContactRecord; readonly created: boolean }, StorageError>
  /**
   * The tenant's contact with this email address (compared lower-cased), or a new one named `name`
   * (`contact.created`): how a sender of mail becomes a contact. Joins the caller's transaction, like
   * `findOrCreateByPhone`.
   */
  /**
   * The batch form of `findOrCreateByPhone`: the tenant's contact of every phone of `people`, new ones
   * (`contact.created`) made for phones nobody holds, named by the first name given for the phone.
   * Resolves to the contacts by phone. Joins the caller's transaction; a contact another writer made
   * meanwhile is found, never doubled.
   */
  readonly findOrCreateByPhones: (
    tenantId: string,
    people: ReadonlyArray<{ readonly phone: string; readonly name: string | null }>
  ) => Effect.Effect<ReadonlyMap<string, ContactRecord>, StorageError>
  /**
   * For imports, in the caller's transaction: the tenant's contact of each request's phone, new ones
   * stored with the request's fields (`contact.created`) for phones nobody holds. Resolves to the
   * contacts by phone and the ids it created. An email another contact holds fails it whole
   * (`UniqueViolation`), as `create` would for that contact.
   */
  readonly findOrCreateMany: (
    tenantId: string,
    requests: ReadonlyArray<CreateContactRequest & { readonly phone: string }>
  ) => Effect.Effect<{ readonly byPhone: ReadonlyMap<string, ContactRecord>; readonly created: ReadonlySet<string> }, StorageError>
  readonly findOrCreateByEmail: (
    tenantId: string,
    email: string,
    name: string | null
  ) => Effect.Effect<{ readonly contact: ContactRecord; readonly created: boolean }, StorageError>
  /** The tenant's contact with this phone, else with this email (lower-cased), if any: how an import matches. */
  readonly findByIdentity: (
    tenantId: string,
    identity: { readonly phone?: string | undefined; readonly email?: string | undefined }
  ) => Effect.Effect<Option.Option<ContactRecord>, StorageError>
  /** The tenant's contacts among `ids`, any order (for reading audiences a page at a time). */
  readonly getMany: (tenantId: string, ids: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<ContactRecord>, StorageError>
  /** Up to `limit` of the tenant's contacts by id after `afterId`. */
  readonly pageById: (
    tenantId: string,
    afterId: string | null,
    limit: number
  ) => Effect.Effect<ReadonlyArray<ContactRecord>, StorageError>
  /** Applies the given fields; emits `contact.updated` only when something actually changed. */
  readonly update: (
    tenantId: string,
    id: string,
    request: UpdateContactRequest
  ) => Effect.Effect<ContactRecord, NotFound | InvalidRequest | Conflict | StorageError>
}>()("omnichannel-core/contacts/ContactService") {
  static readonly layer = Layer.effect(
    ContactService,
    Effect.gen(function*() {
      const contacts = yield* ContactStore
      const outbox = yield* OutboxStore
      const transactor = yield* Transactor

      // Phone and email identify a contact within a tenant; a second contact may not claim either.
      const ensureUnique = Effect.fnUntraced(function*(contact: ContactRecord) {
        for (const field of ["phone", "email"] as const) {
          const value = contact[field]
          if (value === null) continue
          const holder = yield* contacts.findBy(contact.tenant_id, field, value)
          if (Option.isSome(holder) && holder.value.id !== contact.id) {
            return yield* new Conflict({ message: `Contact ${holder.value.id} already has ${field} ${value}` })
          }
        }
      })

      // A concurrent writer can still win between the check and the write; the index then answers.
      const uniqueViolationAsConflict = <A, E>(effect: Effect.Effect<A, E | StorageError>) =>
        effect.pipe(Effect.mapError((e) =>
          e instanceof StorageError && e.reason === "UniqueViolation"
            ? new Conflict({ message: "Another contact already has this phone or email" })
            : e
        ))

      const findOrCreate = Effect.fnUntraced(function*(
        tenantId: string,
        field: "phone" | "email",
        value: string,
        name: string | null
      ) {
        const found = yield* contacts.findBy(tenantId, field, value)
        if (Option.isSome(found)) return { contact: found.value, created: false }
        const contact = identified(yield* newId, tenantId, field, value, name, yield* now)
        yield* contacts.insert(contact)
        yield* outbox.append([
          yield* makeEvent({ type: "contact.created", tenantId, data: { contact: toContact(contact) } })
        ])
        return { contact, created: true }
      })

      // The tenant's contact of each phone, the first candidate made for a phone nobody holds stored
      // (`contact.created`), in the caller's transaction.
      const findOrInsertByPhones = Effect.fnUntraced(function*<P extends { readonly phone: string }>(
        tenantId: string,
        people: ReadonlyArray<P>,
        candidateOf: (person: P) => ContactRecord
      ) {
        const candidates = new Map<string, ContactRecord>()
        for (const person of people) if (!candidates.has(person.phone)) candidates.set(person.phone, candidateOf(person))
        const { contacts: found, inserted } = yield* contacts.findOrInsertByPhones(tenantId, [...candidates.values()])
        const created = found.filter((contact) => inserted.has(contact.id))
        if (created.length > 0) {
          yield* outbox.append(
            yield* Effect.forEach(created, (contact) => makeEvent({ type: "contact.created", tenantId, data: { contact: toContact(contact) } }))
          )
        }
        return { byPhone: new Map(found.map((contact) => [contact.phone!, contact])) as ReadonlyMap<string, ContactRecord>, created: inserted }
      })

      return ContactService.of({
        create: Effect.fn("ContactService.create")(function*(tenantId, request) {
          if (request.name === undefined && request.phone === undefined && request.email === undefined) {
            return yield* InvalidRequest.single(["body"], "Give at least one of name, phone or email", "missing")
          }
          const contact = requested(yield* newId, tenantId, request, yield* now)
          return yield* uniqueViolationAsConflict(transactor.withTransaction(Effect.gen(function*() {
            yield* ensureUnique(contact)
            yield* contacts.insert(contact)
            yield* outbox.append([
              yield* makeEvent({ type: "contact.created", tenantId, data: { contact: toContact(contact) } })
            ])
            return contact
          })))
        }),
        findOrCreateByPhone: Effect.fn("ContactService.findOrCreateByPhone")(function*(tenantId, phone, name) {
          return yield* findOrCreate(tenantId, "phone", phone, name)
        }),
        findOrCreateMany: Effect.fnUntraced(function*(tenantId, requests) {
          const at = yield* now
          return yield* findOrInsertByPhones(tenantId, requests, (request) => requested(newIdNow(), tenantId, request, at))
        }),
        findOrCreateByPhones: Effect.fnUntraced(function*(tenantId, people) {
          const at = yield* now
          const found = yield* findOrInsertByPhones(tenantId, people, ({ name, phone }) => identified(newIdNow(), tenantId, "phone", phone, name, at))
          return found.byPhone
        }),
        findOrCreateByEmail: Effect.fn("ContactService.findOrCreateByEmail")(function*(tenantId, email, name) {
          return yield* findOrCreate(tenantId, "email", normalizeEmail(email), name)
        }),
        getMany: (tenantId, ids) => contacts.getMany(tenantId, ids),
        pageById: (tenantId, afterId, limit) => contacts.pageById(tenantId, afterId, limit),
        findByIdentity: Effect.fn("ContactService.findByIdentity")(function*(tenantId, identity) {
          if (identity.phone !== undefined) {
            const byPhone = yield* contacts.findBy(tenantId, "phone", identity.phone)
            if (Option.isSome(byPhone)) return byPhone
          }
          if (identity.email !== undefined) return yield* contacts.findBy(tenantId, "email", normalizeEmail(identity.email))
          return Option.none()
        }),
        get: Effect.fn("ContactService.get")(function*(tenantId, id) {
          const found = yield* contacts.get(tenantId, id)
          if (Option.isNone(found)) return yield* notFound(id)
          return found.value
        }),
        list: Effect.fn("ContactService.list")(function*(tenantId, page) {
          return yield* contacts.list(tenantId, toWindow(page))
        }),
        update: Effect.fn("ContactService.update")(function*(tenantId, id, request) {
          return yield* uniqueViolationAsConflict(transactor.withTransaction(Effect.gen(function*() {
            const found = yield* contacts.get(tenantId, id)
            if (Option.isNone(found)) return yield* notFound(id)
            const before = found.value
            const customFields: Record<string, unknown> = { ...before.custom_fields }
            for (const [key, value] of Object.entries(request.custom_fields ?? {})) {
              if (value === null) delete customFields[key]
              else customFields[key] = value
            }
            if (Object.keys(customFields).length > MAX_CUSTOM_FIELDS) {
              return yield* InvalidRequest.single(
                ["body", "custom_fields"],
                `A contact may hold at most ${MAX_CUSTOM_FIELDS} custom fields`
              )
            }
            const pick = <K extends "name" | "phone" | "email" | "language">(key: K) =>
              request[key] === undefined ? before[key] : request[key]
            const email = pick("email")
            const after: ContactRecord = {
              ...before,
              name: pick("name")?.trim() ?? null,
              phone: pick("phone"),
              email: email === null ? null : normalizeEmail(email),
              language: pick("language"),
              custom_fields: customFields
            }
            const changed = FIELDS.filter((field) => JSON.stringify(before[field]) !== JSON.stringify(after[field]))
            if (changed.length === 0) return before
            if (after.name === null && after.phone === null && after.email === null) {
              return yield* InvalidRequest.single(["body"], "A contact keeps at least one of name, phone or email")
            }
            yield* ensureUnique(after)
            const updated = { ...after, updated_at: yield* now }
            yield* contacts.update(tenantId, updated)
            yield* outbox.append([
              yield* makeEvent({
                type: "contact.updated",
                tenantId,
                data: { contact: toContact(updated), changed_fields: changed }
              })
            ])
            return updated
          })))
        })
      })
    })
  )
}

/** A contact's fields as `POST /contacts` takes them, for areas that take contacts in bulk (imports). */
export { Contact, CreateContactRequest } from "./Contact.ts"
