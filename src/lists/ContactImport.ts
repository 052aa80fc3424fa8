import { Effect, Option, Schema } from "effect"
import { type ContactService, CreateContactRequest } from "../contacts/ContactService.ts"
import { InvalidRequest, type NotFound } from "../kernel/ApiError.ts"
import { chunksOf } from "../kernel/Grouping.ts"
import { UuidString } from "../kernel/Id.ts"
import type { StorageError } from "../kernel/StorageError.ts"
import type { ContactRecord } from "../ports/ContactStore.ts"
import type { ListRecord } from "../ports/ListStore.ts"
import type { Transactor } from "../ports/Transactor.ts"

/** Most contacts one import takes. */
export const MAX_IMPORT_CONTACTS = 5000

/** Contacts stored in one transaction by an import. */
const IMPORT_GROUP = 100

/** Body of `POST /contacts/import`. */
export const ContactImportRequest = Schema.Struct({
  contacts: Schema.Array(CreateContactRequest).check(Schema.isMinLength(1), Schema.isMaxLength(MAX_IMPORT_CONTACTS)),
  /** Lists the imported contacts are subscribed to, only with `optin_confirmed: true`. */
  list_ids: Schema.optionalKey(Schema.Array(UuidString)),
  /** The contacts agreed to receive messages from these lists; only then are they subscribed (method `import`). */
  optin_confirmed: Schema.optionalKey(Schema.Boolean)
})
/** Body of `POST /contacts/import`. */
export type ContactImport = typeof ContactImportRequest.Type

/** Response of `POST /contacts/import`. */
export const ImportResultSchema = Schema.Struct({
  created: Schema.Int,
  updated: Schema.Int,
  unchanged: Schema.Int,
  /** New subscriptions made (contacts already subscribed are not counted again). */
  subscribed: Schema.Int,
  /** Whether subscriptions were made: only with `optin_confirmed: true` and `list_ids`. */
  subscriptions_applied: Schema.Boolean,
  /** Contacts not imported, by their index in `contacts`, with why. */
  failed: Schema.Array(Schema.Struct({ index: Schema.Int, detail: Schema.String }))
})
/** Response of `POST /contacts/import`. */
export type ImportResult = typeof ImportResultSchema.Type

/** What an import needs. */
export interface ContactImportDeps {
  readonly transactor: Transactor["Service"]
  readonly contacts: ContactService["Service"]
  readonly listOf: (tenantId: string, id: string) => Effect.Effect<ListRecord, NotFound | StorageError>
  /** Subscribes many contacts (each once) to a static list, method `import`; resolves to those not subscribed before. */
  readonly subscribeMany: (tenantId: string, listId: string, contactIds: ReadonlyArray<string>) => Effect.Effect<ReadonlySet<string>, StorageError>
  /** Subscribes; `true` when the contact was not subscribed before. */
  readonly subscribe: (
    tenantId: string,
    listId: string,
    contactId: string
  ) => Effect.Effect<boolean, NotFound | InvalidRequest | StorageError>
}

// Whether an update changed nothing a user sees (timestamps can tie within one millisecond).
const sameFields = (a: ContactRecord, b: ContactRecord) =>
  a.name === b.name && a.phone === b.phone && a.email === b.email && a.language === b.language &&
  JSON.stringify(a.custom_fields) === JSON.stringify(b.custom_fields)

const detailOf = (error: { readonly _tag: string; readonly message?: string; readonly issues?: ReadonlyArray<{ readonly msg: string }> }) =>
  error.issues?.map((issue) => issue.msg).join("; ") ?? error.message ?? error._tag

/**
 * Imports contacts: each is matched by phone, else email, and updated with the fields given, or
 * created; a contact that cannot be stored is reported by its index and the others go on. The
 * lists are subscribed to only with `optin_confirmed: true`, with the opt-in method `import`.
 */
export const makeContactImport = (deps: ContactImportDeps) =>
  Effect.fn("ListService.importContacts")(function*(tenantId: string, request: ContactImport) {
    const { contacts } = deps
    const listIds = [...new Set(request.list_ids ?? [])]
    const lists = yield* Effect.forEach(listIds, (id) => deps.listOf(tenantId, id))
    const dynamic = lists.findIndex((list) => list.type === "dynamic")
    if (dynamic >= 0) {
      return yield* InvalidRequest.single(["body", "list_ids", dynamic], "A dynamic list takes no subscribers", "not_allowed")
    }
    const apply = request.optin_confirmed === true && lists.length > 0
    const result = { created: 0, updated: 0, unchanged: 0, subscribed: 0 }
    const failed: Array<{ index: number; detail: string }> = []
    const importOne = Effect.fnUntraced(function*(entry: ContactImport["contacts"][number]) {
      const found = yield* contacts.findByIdentity(tenantId, { phone: entry.phone, email: entry.email })
      let kind: "created" | "updated" | "unchanged"
      let contactId: string
      if (Option.isSome(found)) {
        const updated = yield* contacts.update(tenantId, found.value.id, entry)
        kind = sameFields(updated, found.value) ? "unchanged" : "updated"
        contactId = found.value.id
      } else {
        contactId = (yield* contacts.create(tenantId, entry)).id
        kind = "created"
      }
      let subscribed = 0
      if (apply) {
        for (const list of lists) if (yield* deps.subscribe(tenantId, list.id, contactId)) subscribed++
      }
      return { kind, contactId, subscribed }
    })
    // A group whose contacts all have a phone, each phone once, goes in a few statements: the contacts
    // found or created together, then each list's subscriptions together. The same outcome as one at a
    // time: such contacts cannot meet each other by phone, and by email only to fail as `create` would.
    type Entry = ContactImport["contacts"][number] & { readonly phone: string }
    const together = (group: ReadonlyArray<ContactImport["contacts"][number]>): group is ReadonlyArray<Entry> =>
      group.every((entry) => entry.phone !== undefined) && new Set(group.map((entry) => entry.phone)).size === group.length
    const importTogether = Effect.fnUntraced(function*(group: ReadonlyArray<Entry>) {
      const { byPhone, created } = yield* contacts.findOrCreateMany(tenantId, group)
      const outcomes: Array<{ kind: "created" | "updated" | "unchanged"; contactId: string; subscribed: number }> = []
      for (const entry of group) {
        const contact = byPhone.get(entry.phone)
        if (contact === undefined) {
          // Another writer removed it between the look and the insert: this one alone, as before.
          const alone = yield* importOne(entry)
          outcomes.push(alone)
        } else if (created.has(contact.id)) {
          outcomes.push({ kind: "created", contactId: contact.id, subscribed: 0 })
        } else {
          const updated = yield* contacts.update(tenantId, contact.id, entry)
          outcomes.push({ kind: sameFields(updated, contact) ? "unchanged" : "updated", contactId: contact.id, subscribed: 0 })
        }
      }
      if (apply) {
        const ids = [...new Set(outcomes.map((outcome) => outcome.contactId))]
        for (const list of lists) {
          const fresh = yield* deps.subscribeMany(tenantId, list.id, ids)
          for (const outcome of outcomes) if (fresh.has(outcome.contactId)) outcome.subscribed++
        }
      }
      return outcomes
    })
    const count = (outcome: { readonly kind: "created" | "updated" | "unchanged"; readonly subscribed: number }) => {
      result[outcome.kind]++
      result.subscribed += outcome.subscribed
    }
    // A group of contacts is stored in one transaction; a group where any contact cannot be stored
    // is rolled back and stored again one contact a transaction, so that contact alone is reported.
    for (const [start, group] of chunksOf(request.contacts, IMPORT_GROUP).map((g, i) => [i * IMPORT_GROUP, g] as const)) {
      const stored = yield* Effect.result(deps.transactor.withTransaction(
        together(group) ? importTogether(group) : Effect.forEach(group, importOne)
      ))
      if (stored._tag === "Success") {
        stored.success.forEach(count)
        continue
      }
      if (stored.failure._tag === "StorageError" && stored.failure.reason !== "UniqueViolation") {
        return yield* Effect.fail(stored.failure)
      }
      for (const [offset, entry] of group.entries()) {
        const outcome = yield* Effect.result(deps.transactor.withTransaction(importOne(entry)))
        if (outcome._tag === "Success") count(outcome.success)
        if (outcome._tag === "Failure") {
          const error = outcome.failure
          if (error._tag === "StorageError" && error.reason !== "UniqueViolation") return yield* Effect.fail(error)
          failed.push({ index: start + offset, detail: detailOf(error) })
        }
      }
    }
    return { ...result, subscriptions_applied: apply, failed } satisfies ImportResult
  })
