import { Context, Effect, Layer, Option } from "effect"
import { ChannelService } from "../channels/ChannelService.ts"
import { ContactService } from "../contacts/ContactService.ts"
import { ConversationService } from "../conversations/ConversationService.ts"
import { MessageService } from "../messages/MessageService.ts"
import { Conflict, InvalidRequest, NotFound } from "../kernel/ApiError.ts"
import type { ChatappFieldHandler, ChatappMessageHandler, ChatappStatusHandler } from "../kernel/ChatappEvents.ts"
import { makeEvent } from "../kernel/EventEnvelope.ts"
import { newId } from "../kernel/Id.ts"
import { candidate, slugify } from "../kernel/Slug.ts"
import { StorageError } from "../kernel/StorageError.ts"
import { now } from "../kernel/Timestamp.ts"
import type { ContactRecord } from "../ports/ContactStore.ts"
import { type ListFilters, type ListRecord, ListStore, type MarketingOptOutRecord, type OptinMethod, type SubscriptionRecord } from "../ports/ListStore.ts"
import { OutboxStore } from "../ports/OutboxStore.ts"
import { Transactor } from "../ports/Transactor.ts"
import { type ContactImport, type ImportResult, makeContactImport } from "./ContactImport.ts"
import { makeKeywordHandlers } from "./KeywordHandler.ts"
import { makeOptOutStatusHandler } from "./OptOutStatusHandler.ts"
import {
  type CreateListRequest,
  type List,
  type Subscription,
  toList,
  toSubscription,
  type UpdateListRequest
} from "./List.ts"

// A dynamic list's filters over a contact: every condition given holds, and the contact is reachable.
const matchesFilters = (contact: ContactRecord, filters: ListFilters): boolean =>
  (contact.phone !== null || contact.email !== null) &&
  (filters.has_phone === undefined || (contact.phone !== null) === filters.has_phone) &&
  (filters.has_email === undefined || (contact.email !== null) === filters.has_email) &&
  (filters.language === undefined || contact.language === filters.language) &&
  Object.entries(filters.custom_fields ?? {}).every(([key, value]) => {
    const held = contact.custom_fields[key]
    return held !== undefined && held !== null && String(held) === value
  })

const notFound = (id: string) => new NotFound({ message: `List ${id} not found` })

// A slug or a second default taken meanwhile is a conflict the caller can fix.
const asConflict = <A, E>(effect: Effect.Effect<A, E | StorageError>) =>
  Effect.catchIf(effect, (error): error is StorageError => error instanceof StorageError, (error): Effect.Effect<never, Conflict | StorageError> =>
    error.reason === "UniqueViolation"
      ? Effect.fail(new Conflict({
        message: error.constraint === "lists_tenant_default_unique"
          ? "Another list became the default meanwhile; try again"
          : "A list with this slug already exists in the workspace"
      }))
      : Effect.fail(error))

/** How a subscription change came about. */
export interface SubscriptionChange {
  readonly method: OptinMethod
  readonly channelId?: string | null
}

/** A subscription of the contact to the list, made now by `change`. */
const newSubscription = (tenantId: string, listId: string, contactId: string, change: SubscriptionChange, at: string): SubscriptionRecord => ({
  tenant_id: tenantId,
  list_id: listId,
  contact_id: contactId,
  status: "subscribed",
  optin_method: change.method,
  optin_channel_id: change.channelId ?? null,
  subscribed_at: at,
  unsubscribed_at: null,
  unsubscribe_method: null,
  updated_at: at
})

/**
 * Lists and subscriptions: lists of a tenant, who is on them (unsubscriptions kept), opt-in keywords
 * on inbound chat-app text, marketing opt-outs, and contact imports that carry subscriptions only
 * with confirmed opt-in.
 */
export class ListService extends Context.Service<ListService, {
  readonly create: (tenantId: string, request: CreateListRequest) => Effect.Effect<List, Conflict | InvalidRequest | StorageError>
  readonly list: (tenantId: string) => Effect.Effect<ReadonlyArray<List>, StorageError>
  readonly get: (tenantId: string, id: string) => Effect.Effect<List, NotFound | StorageError>
  /** The list as stored, without its subscriber count (which `get` reads over every subscription). */
  readonly record: (tenantId: string, id: string) => Effect.Effect<ListRecord, NotFound | StorageError>
  readonly update: (
    tenantId: string,
    id: string,
    request: UpdateListRequest
  ) => Effect.Effect<List, NotFound | Conflict | InvalidRequest | StorageError>
  /** Deletes the list softly: its subscriptions stay on record. */
  readonly remove: (tenantId: string, id: string) => Effect.Effect<void, NotFound | StorageError>
  /** Subscribes the contact (again); joins the caller's transaction. */
  readonly subscribe: (
    tenantId: string,
    listId: string,
    contactId: string,
    change: SubscriptionChange
  ) => Effect.Effect<Subscription, NotFound | InvalidRequest | StorageError>
  /** Unsubscribes the contact (`contact.unsubscribed`); the row is kept. Not subscribed: 404. */
  readonly unsubscribe: (
    tenantId: string,
    listId: string,
    contactId: string,
    change: { readonly method: string; readonly channelId?: string | null }
  ) => Effect.Effect<Subscription, NotFound | StorageError>
  /** The contact's subscriptions, either status, and marketing opt-outs. */
  readonly subscriptionsOf: (
    tenantId: string,
    contactId: string
  ) => Effect.Effect<
    { readonly items: ReadonlyArray<Subscription>; readonly marketing_opt_outs: ReadonlyArray<MarketingOptOutRecord> },
    NotFound | StorageError
  >
  /**
   * One page of a list's audience, contact ids by id after `after`: a static list's subscribers; a
   * dynamic list's contacts matching its filters that are reachable (a phone or an email) and have
   * not opted out. `next` continues (null at the end); a page may hold fewer than `limit`.
   */
  readonly audiencePage: (
    tenantId: string,
    listId: string,
    after: string | null,
    limit: number
  ) => Effect.Effect<{ readonly contactIds: ReadonlyArray<string>; readonly next: string | null }, NotFound | StorageError>
  /** What a campaign must know of these contacts: their opt-outs, and who left every list they were on. */
  readonly consentAmong: (
    tenantId: string,
    contactIds: ReadonlyArray<string>
  ) => Effect.Effect<{
    readonly optOuts: ReadonlyArray<MarketingOptOutRecord>
    readonly unsubscribedOnly: ReadonlySet<string>
  }, StorageError>
  /** Records that the contact refused marketing (a keyword, the operator's preferences or send error). */
  readonly recordOptOut: (optOut: MarketingOptOutRecord) => Effect.Effect<void, StorageError>
  /** `POST /contacts/import`. */
  readonly importContacts: (tenantId: string, request: ContactImport) => Effect.Effect<ImportResult, NotFound | InvalidRequest | StorageError>
  /** The inbound handler of opt-in keywords; it runs before flows and the conversation store. */
  readonly keywordHandler: ChatappMessageHandler
  /** The handler of the operator's `user_preferences` webhook field (marketing opt-out and resume). */
  readonly preferencesHandler: ChatappFieldHandler
  /** The handler of `failed` statuses saying the recipient stopped marketing messages (the opt-out is recorded). */
  readonly statusHandler: ChatappStatusHandler
}>()("omnichannel-core/lists/ListService") {
  static readonly layer = Layer.effect(
    ListService,
    Effect.gen(function*() {
      const store = yield* ListStore
      const outbox = yield* OutboxStore
      const transactor = yield* Transactor
      const contacts = yield* ContactService
      const conversations = yield* ConversationService
      const messages = yield* MessageService
      const channels = yield* ChannelService

      const wire = (record: ListRecord) => Effect.map(store.countSubscribed(record.tenant_id, record.id), (n) => toList(record, n))

      const listRecord = Effect.fnUntraced(function*(tenantId: string, id: string) {
        const found = yield* store.getList(tenantId, id)
        if (Option.isNone(found)) return yield* notFound(id)
        return found.value
      })

      // The one default of the tenant: making a list the default takes it from the one before.
      const clearDefault = Effect.fnUntraced(function*(tenantId: string, exceptId: string) {
        const current = yield* store.findDefaultList(tenantId)
        if (Option.isSome(current) && current.value.id !== exceptId) {
          yield* store.updateList(tenantId, { ...current.value, is_default: false, updated_at: yield* now })
        }
      })

      const freeSlug = Effect.fnUntraced(function*(tenantId: string, name: string) {
        const base = slugify(name)
        for (let n = 1; n <= 50; n++) {
          const slug = candidate(base, n)
          if (Option.isNone(yield* store.findListBySlug(tenantId, slug))) return slug
        }
        return `${base}-${(yield* newId).slice(0, 8)}`
      })

      const checkShape = (type: "static" | "dynamic", filters: unknown, welcome: unknown) =>
        type === "static" && filters !== undefined && filters !== null
          ? InvalidRequest.single(["body", "filters"], "Only a dynamic list has filters", "not_allowed")
          : type === "dynamic" && welcome !== undefined && welcome !== null
          ? InvalidRequest.single(["body", "welcome_message"], "A dynamic list takes no subscribers, so no welcome message", "not_allowed")
          : Effect.void

      const subscribe = Effect.fn("ListService.subscribe")(function*(
        tenantId: string,
        listId: string,
        contactId: string,
        change: SubscriptionChange
      ) {
        const list = yield* listRecord(tenantId, listId)
        if (list.type === "dynamic") {
          return yield* InvalidRequest.single(["path", "list_id"], "A dynamic list's members are the contacts matching its filters; nobody subscribes to it", "not_allowed")
        }
        yield* contacts.get(tenantId, contactId)
        const at = yield* now
        const before = yield* store.getSubscription(tenantId, listId, contactId)
        const keep = Option.isSome(before) && before.value.status === "subscribed"
        const record = keep ? before.value : newSubscription(tenantId, listId, contactId, change, at)
        if (!keep) yield* store.putSubscription(record)
        return { subscription: toSubscription(record, list.slug), changed: !keep }
      })

      const unsubscribe = Effect.fn("ListService.unsubscribe")(function*(
        tenantId: string,
        listId: string,
        contactId: string,
        change: { readonly method: string; readonly channelId?: string | null }
      ) {
        const list = yield* listRecord(tenantId, listId)
        const before = yield* store.getSubscription(tenantId, listId, contactId)
        if (Option.isNone(before) || before.value.status !== "subscribed") {
          return yield* new NotFound({ message: `Contact ${contactId} is not subscribed to list ${listId}` })
        }
        const at = yield* now
        const record: SubscriptionRecord = {
          ...before.value,
          status: "unsubscribed",
          unsubscribed_at: at,
          unsubscribe_method: change.method,
          updated_at: at
        }
        yield* store.putSubscription(record)
        const contact = yield* contacts.get(tenantId, contactId)
        yield* outbox.append([
          yield* makeEvent({
            type: "contact.unsubscribed",
            tenantId,
            data: {
              contact_id: contact.id,
              list_id: list.id,
              slug: list.slug,
              method: change.method,
              channel_id: change.channelId ?? null
            }
          })
        ])
        return toSubscription(record, list.slug)
      })

      const recordOptOut = (optOut: MarketingOptOutRecord) => store.putOptOut(optOut)

      const keyword = makeKeywordHandlers({
        store,
        contacts,
        conversations,
        messages,
        channels,
        subscribe: (tenantId, listId, contactId, channelId) =>
          subscribe(tenantId, listId, contactId, { method: "keyword", channelId }).pipe(
            Effect.catchTags({ NotFound: () => Effect.void, InvalidRequest: () => Effect.void }),
            Effect.asVoid
          ),
        unsubscribe: (tenantId, listId, contactId, method, channelId) =>
          unsubscribe(tenantId, listId, contactId, { method, channelId }).pipe(
            Effect.catchTag("NotFound", () => Effect.void),
            Effect.asVoid
          ),
        recordOptOut,
        removeOptOut: (tenantId, contactId, channelId) => store.removeOptOut(tenantId, contactId, channelId)
      })

      const importContacts = makeContactImport({
        transactor,
        contacts,
        listOf: listRecord,
        subscribeMany: (tenantId, listId, contactIds) =>
          Effect.flatMap(now, (at) =>
            store.subscribeMany(contactIds.map((contactId) => newSubscription(tenantId, listId, contactId, { method: "import" }, at)))),
        subscribe: (tenantId, listId, contactId) =>
          Effect.map(subscribe(tenantId, listId, contactId, { method: "import" }), (result) => result.changed)
      })

      return ListService.of({
        create: Effect.fn("ListService.create")(function*(tenantId, request) {
          const type = request.type ?? "static"
          yield* checkShape(type, request.filters, request.welcome_message)
          if (type === "dynamic" && request.is_default === true) {
            return yield* InvalidRequest.single(["body", "is_default"], "The default list takes keyword subscribers, so it must be static", "not_allowed")
          }
          return yield* asConflict(transactor.withTransaction(Effect.gen(function*() {
            const id = yield* newId
            const record: ListRecord = {
              id,
              tenant_id: tenantId,
              name: request.name.trim(),
              slug: request.slug ?? (yield* freeSlug(tenantId, request.name)),
              is_default: request.is_default ?? false,
              type,
              filters: type === "dynamic" ? (request.filters ?? {}) : null,
              welcome_message: request.welcome_message ?? null,
              created_at: yield* now,
              updated_at: null,
              deleted_at: null
            }
            if (record.is_default) yield* clearDefault(tenantId, id)
            yield* store.insertList(record)
            return toList(record, 0)
          })))
        }),
        list: Effect.fn("ListService.list")(function*(tenantId) {
          return yield* Effect.forEach(yield* store.listLists(tenantId), wire)
        }),
        get: Effect.fn("ListService.get")(function*(tenantId, id) {
          return yield* wire(yield* listRecord(tenantId, id))
        }),
        record: listRecord,
        update: Effect.fn("ListService.update")(function*(tenantId, id, request) {
          return yield* asConflict(transactor.withTransaction(Effect.gen(function*() {
            const before = yield* listRecord(tenantId, id)
            yield* checkShape(before.type, request.filters, request.welcome_message)
            if (before.type === "dynamic" && request.is_default === true) {
              return yield* InvalidRequest.single(["body", "is_default"], "The default list takes keyword subscribers, so it must be static", "not_allowed")
            }
            const after: ListRecord = {
              ...before,
              name: request.name?.trim() ?? before.name,
              slug: request.slug ?? before.slug,
              is_default: request.is_default ?? before.is_default,
              filters: request.filters ?? before.filters,
              welcome_message: request.welcome_message === undefined ? before.welcome_message : request.welcome_message,
              updated_at: yield* now
            }
            if (after.is_default && !before.is_default) yield* clearDefault(tenantId, id)
            yield* store.updateList(tenantId, after)
            return yield* wire(after)
          })))
        }),
        remove: Effect.fn("ListService.remove")(function*(tenantId, id) {
          const before = yield* listRecord(tenantId, id)
          const at = yield* now
          yield* store.updateList(tenantId, { ...before, is_default: false, deleted_at: at, updated_at: at })
        }),
        subscribe: (tenantId, listId, contactId, change) =>
          Effect.map(transactor.withTransaction(subscribe(tenantId, listId, contactId, change)), (result) => result.subscription),
        unsubscribe: (tenantId, listId, contactId, change) =>
          transactor.withTransaction(unsubscribe(tenantId, listId, contactId, change)),
        subscriptionsOf: Effect.fn("ListService.subscriptionsOf")(function*(tenantId, contactId) {
          yield* contacts.get(tenantId, contactId)
          const rows = yield* store.subscriptionsOf(tenantId, contactId)
          // Slugs of deleted lists are read too: the history names the list it was.
          const slugs = new Map((yield* store.listAllLists(tenantId)).map((list) => [list.id, list.slug]))
          return {
            items: rows.map((row) => toSubscription(row, slugs.get(row.list_id) ?? "")),
            marketing_opt_outs: yield* store.optOutsOf(tenantId, contactId)
          }
        }),
        recordOptOut,
        audiencePage: Effect.fn("ListService.audiencePage")(function*(tenantId, listId, after, limit) {
          const list = yield* listRecord(tenantId, listId)
          if (list.type === "static") {
            const contactIds = yield* store.subscribedContacts(tenantId, listId, { afterContactId: after, limit })
            return { contactIds, next: contactIds.length < limit ? null : contactIds.at(-1)! }
          }
          const page = yield* contacts.pageById(tenantId, after, limit)
          const ids = page.map((contact) => contact.id)
          const optedOut = new Set((yield* store.optOutsAmong(tenantId, ids)).map((o) => o.contact_id))
          const filters = list.filters ?? {}
          const subscribed = filters.has_opt_in === true
            ? new Set((yield* store.subscriptionsAmong(tenantId, ids)).filter((s) => s.status === "subscribed").map((s) => s.contact_id))
            : null
          const contactIds = page.filter((contact) =>
            matchesFilters(contact, filters) && !optedOut.has(contact.id) && (subscribed === null || subscribed.has(contact.id))
          ).map((contact) => contact.id)
          return { contactIds, next: page.length < limit ? null : page.at(-1)!.id }
        }),
        consentAmong: Effect.fn("ListService.consentAmong")(function*(tenantId, contactIds) {
          const optOuts = yield* store.optOutsAmong(tenantId, contactIds)
          const states = new Map<string, boolean>()
          for (const row of yield* store.subscriptionsAmong(tenantId, contactIds)) {
            states.set(row.contact_id, (states.get(row.contact_id) ?? false) || row.status === "subscribed")
          }
          const unsubscribedOnly = new Set([...states].filter(([, subscribedSomewhere]) => !subscribedSomewhere).map(([id]) => id))
          return { optOuts, unsubscribedOnly }
        }),
        importContacts,
        keywordHandler: keyword.messageHandler,
        preferencesHandler: keyword.preferencesHandler,
        statusHandler: makeOptOutStatusHandler({ contacts, recordOptOut })
      })
    })
  )
}
