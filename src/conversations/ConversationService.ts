import { Context, Effect, Layer, Option } from "effect"
import { NotFound } from "../kernel/ApiError.ts"
import { makeEvent } from "../kernel/EventEnvelope.ts"
import { newId, newIdNow } from "../kernel/Id.ts"
import { type PageRequest, toWindow } from "../kernel/Pagination.ts"
import type { StorageError } from "../kernel/StorageError.ts"
import { now } from "../kernel/Timestamp.ts"
import { type ConversationFilter, type ConversationRecord, ConversationStore } from "../ports/ConversationStore.ts"
import { OutboxStore } from "../ports/OutboxStore.ts"
import { Transactor } from "../ports/Transactor.ts"
import { toConversation } from "./Conversation.ts"

/** A new open chat conversation, with no activity yet. */
const newChat = (id: string, tenantId: string, channelId: string, contactId: string, at: string): ConversationRecord => ({
  id,
  tenant_id: tenantId,
  channel_id: channelId,
  contact_id: contactId,
  status: "open",
  kind: "chat",
  subject: null,
  created_at: at,
  updated_at: null,
  closed_at: null,
  last_message_at: null,
  last_inbound_at: null
})

/** The key of a channel and contact pair in `openForMany`'s answer. */
export const openKey = (channelId: string, contactId: string): string => `${channelId} ${contactId}`

const notFound = (id: string) => new NotFound({ message: `Conversation ${id} not found` })

/** Conversations: opened by the first message of a contact on a channel, read, listed and closed. */
export class ConversationService extends Context.Service<ConversationService, {
  /**
   * The open conversation of the contact on the channel, or a new one (`conversation.created`).
   * Joins the caller's transaction. Two writers opening the same one at once: the loser fails with a
   * `UniqueViolation` and tries again.
   */
  readonly openFor: (input: {
    readonly tenantId: string
    readonly channelId: string
    readonly contactId: string
  }) => Effect.Effect<{ readonly conversation: ConversationRecord; readonly created: boolean }, StorageError>
  /**
   * A new email thread of the contact on a mailbox (`conversation.created`), with its subject; a
   * contact may have several open at once. Joins the caller's transaction.
   */
  readonly startThread: (input: {
    readonly tenantId: string
    readonly channelId: string
    readonly contactId: string
    readonly subject: string | null
  }) => Effect.Effect<ConversationRecord, StorageError>
  /**
   * The batch form of `openFor`: the open conversation of every channel and contact pair of
   * `pairs`, new ones (`conversation.created`) opened where there is none. Resolves to them by
   * `openKey(channelId, contactId)`. Joins the caller's transaction; one another writer opened
   * meanwhile is found, never doubled.
   */
  readonly openForMany: (
    tenantId: string,
    pairs: ReadonlyArray<{ readonly channelId: string; readonly contactId: string }>
  ) => Effect.Effect<ReadonlyMap<string, ConversationRecord>, StorageError>
  /**
   * Records messages in their conversations, many at once: each conversation's last activity, and
   * for inbound ones the customer-service window, move forward to the latest message's time. Writes
   * only those times, so a change another writer made meanwhile (a close, a newer message) stands.
   */
  readonly noteMessages: (
    tenantId: string,
    notes: ReadonlyArray<{ readonly conversationId: string; readonly at: string; readonly inbound: boolean }>
  ) => Effect.Effect<void, StorageError>
  /** Records a message in the conversation at `at`: its last activity and, for inbound ones, the customer-service window. */
  readonly noteMessage: (
    conversation: ConversationRecord,
    message: { readonly at: string; readonly inbound: boolean }
  ) => Effect.Effect<ConversationRecord, StorageError>
  readonly get: (tenantId: string, id: string) => Effect.Effect<ConversationRecord, NotFound | StorageError>
  readonly list: (
    tenantId: string,
    filter: ConversationFilter,
    page: PageRequest
  ) => Effect.Effect<{ readonly items: ReadonlyArray<ConversationRecord>; readonly total: number }, StorageError>
  /** Closes the conversation (`conversation.closed`); closing a closed one changes nothing. */
  readonly close: (tenantId: string, id: string) => Effect.Effect<ConversationRecord, NotFound | StorageError>
}>()("omnichannel-core/conversations/ConversationService") {
  static readonly layer = Layer.effect(
    ConversationService,
    Effect.gen(function*() {
      const conversations = yield* ConversationStore
      const outbox = yield* OutboxStore
      const transactor = yield* Transactor
      return ConversationService.of({
        // The conversation and its `conversation.created` commit together (the caller's transaction, or one of their own).
        openFor: Effect.fn("ConversationService.openFor")(function*({ tenantId, channelId, contactId }) {
          const open = yield* conversations.findOpen(tenantId, channelId, contactId)
          if (Option.isSome(open)) return { conversation: open.value, created: false }
          const conversation = newChat(yield* newId, tenantId, channelId, contactId, yield* now)
          const event = yield* makeEvent({ type: "conversation.created", tenantId, data: { conversation: toConversation(conversation) } })
          yield* transactor.withTransaction(Effect.andThen(conversations.insert(conversation), outbox.append([event])))
          return { conversation, created: true }
        }),
        startThread: Effect.fn("ConversationService.startThread")(function*({ tenantId, channelId, contactId, subject }) {
          const conversation: ConversationRecord = {
            id: yield* newId,
            tenant_id: tenantId,
            channel_id: channelId,
            contact_id: contactId,
            kind: "email",
            status: "open",
            subject,
            created_at: yield* now,
            updated_at: null,
            closed_at: null,
            last_message_at: null,
            last_inbound_at: null
          }
          const event = yield* makeEvent({ type: "conversation.created", tenantId, data: { conversation: toConversation(conversation) } })
          yield* transactor.withTransaction(Effect.andThen(conversations.insert(conversation), outbox.append([event])))
          return conversation
        }),
        // Joins the caller's transaction: new conversations and their events commit together.
        openForMany: Effect.fnUntraced(function*(tenantId, pairs) {
          const at = yield* now
          const candidates = new Map<string, ConversationRecord>()
          for (const { channelId, contactId } of pairs) {
            const key = openKey(channelId, contactId)
            if (candidates.has(key)) continue
            candidates.set(key, newChat(newIdNow(), tenantId, channelId, contactId, at))
          }
          const { conversations: found, inserted } = yield* conversations.openMany(tenantId, [...candidates.values()])
          const created = found.filter((conversation) => inserted.has(conversation.id))
          if (created.length > 0) {
            yield* outbox.append(yield* Effect.forEach(created, (conversation) =>
              makeEvent({ type: "conversation.created", tenantId, data: { conversation: toConversation(conversation) } })))
          }
          return new Map(found.map((conversation) => [openKey(conversation.channel_id, conversation.contact_id), conversation]))
        }),
        noteMessages: (tenantId, notes) =>
          conversations.noteMessages(
            tenantId,
            notes.map(({ at, conversationId, inbound }) => ({ id: conversationId, at, inbound_at: inbound ? at : null }))
          ),
        // The times only: a close or a newer message another writer stored meanwhile stands.
        noteMessage: Effect.fn("ConversationService.noteMessage")(function*(conversation, message) {
          const later = (current: string | null) => (current === null || message.at > current ? message.at : current)
          yield* conversations.noteMessages(conversation.tenant_id, [
            { id: conversation.id, at: message.at, inbound_at: message.inbound ? message.at : null }
          ])
          return {
            ...conversation,
            last_message_at: later(conversation.last_message_at),
            last_inbound_at: message.inbound ? later(conversation.last_inbound_at) : conversation.last_inbound_at,
            updated_at: later(conversation.updated_at)
          }
        }),
        get: Effect.fn("ConversationService.get")(function*(tenantId, id) {
          const found = yield* conversations.get(tenantId, id)
          if (Option.isNone(found)) return yield* notFound(id)
          return found.value
        }),
        list: Effect.fn("ConversationService.list")(function*(tenantId, filter, page) {
          return yield* conversations.list(tenantId, filter, toWindow(page))
        }),
        close: Effect.fn("ConversationService.close")(function*(tenantId, id) {
          return yield* transactor.withTransaction(Effect.gen(function*() {
            const found = yield* conversations.get(tenantId, id)
            if (Option.isNone(found)) return yield* notFound(id)
            if (found.value.status === "closed") return found.value
            const at = yield* now
            const closed: ConversationRecord = { ...found.value, status: "closed", closed_at: at, updated_at: at }
            yield* conversations.update(tenantId, closed)
            yield* outbox.append([
              yield* makeEvent({ type: "conversation.closed", tenantId, data: { conversation: toConversation(closed) } })
            ])
            return closed
          }))
        })
      })
    })
  )
}
