import { Context, type Effect, type Option } from "effect"
import type { StorageError } from "./StorageError.ts"

/** Whether a conversation takes new messages. */
export type ConversationStatus = "open" | "closed"

/**
 * What a conversation is: `chat`, a contact on a chat-app channel, at most one open per contact and
 * channel; `email`, a thread on a mailbox, of which one contact may have several open.
 */
export type ConversationKind = "chat" | "email"

/**
 * A contact on a channel: the thread messages join. At most one chat conversation per contact and
 * channel is open at a time (a second insert fails with `UniqueViolation`); email threads are not
 * limited.
 */
export interface ConversationRecord {
  readonly id: string
  readonly tenant_id: string
  readonly channel_id: string
  readonly contact_id: string
  readonly status: ConversationStatus
  /** `chat`: one open per contact and channel; `email`: a thread, several of which may be open. */
  readonly kind: ConversationKind
  /** Email threads carry a subject; chat-app conversations none. */
  readonly subject: string | null
  readonly created_at: string
  readonly updated_at: string | null
  readonly closed_at: string | null
  readonly last_message_at: string | null
  /** When the contact last wrote: the operator's 24-hour customer-service window runs from it. */
  readonly last_inbound_at: string | null
}

/** Filters of a conversation listing; absent ones do not filter. */
export interface ConversationFilter {
  readonly channel_id?: string
  readonly contact_id?: string
  readonly status?: ConversationStatus
}

/** Conversations; every method is scoped by tenant id. */
export class ConversationStore extends Context.Service<ConversationStore, {
  readonly insert: (conversation: ConversationRecord) => Effect.Effect<void, StorageError>
  readonly get: (tenantId: string, id: string) => Effect.Effect<Option.Option<ConversationRecord>, StorageError>
  /** The open chat conversation of `contactId` on `channelId`, if any (email threads are never found here). */
  readonly findOpen: (
    tenantId: string,
    channelId: string,
    contactId: string
  ) => Effect.Effect<Option.Option<ConversationRecord>, StorageError>
  /** One page, most recent activity first (last message, else creation), and the total matching. */
  readonly list: (
    tenantId: string,
    filter: ConversationFilter,
    window: { readonly limit: number; readonly offset: number }
  ) => Effect.Effect<{ readonly items: ReadonlyArray<ConversationRecord>; readonly total: number }, StorageError>
  /** Replaces the stored conversation `conversation.id` of `tenantId`; `false` when it does not exist there. */
  readonly update: (tenantId: string, conversation: ConversationRecord) => Effect.Effect<boolean, StorageError>
  /**
   * The batch form of `findOpen` and `insert` together: stores each of `candidates` (new open chat
   * conversations of `tenantId`, one per channel and contact) where that contact has no open chat
   * conversation on that channel yet, and resolves to the open one of every candidate's pair, with
   * the ids of those it stored. One another transaction opened meanwhile is found, never doubled.
   */
  readonly openMany: (
    tenantId: string,
    candidates: ReadonlyArray<ConversationRecord>
  ) => Effect.Effect<{ readonly conversations: ReadonlyArray<ConversationRecord>; readonly inserted: ReadonlySet<string> }, StorageError>
  /**
   * Moves the times of conversations of `tenantId` by the messages recorded in them: `last_message_at`
   * and `updated_at` to `at`, and `last_inbound_at` to `inbound_at` (when given), each only forward.
   * Writes only those columns, so it never undoes what another writer changed meanwhile.
   */
  readonly noteMessages: (
    tenantId: string,
    notes: ReadonlyArray<{ readonly id: string; readonly at: string; readonly inbound_at: string | null }>
  ) => Effect.Effect<void, StorageError>
}>()("omnichannel-core/ports/ConversationStore") {}
