import { Context, type Effect, type Option } from "effect"
import type { StorageError } from "./StorageError.ts"

/** Which way a message went. */
export type MessageDirection = "inbound" | "outbound"

/**
 * Where a message stands: inbound ones are `received`; outbound ones go `pending` (stored, not yet
 * accepted by the operator) → `sent` → `delivered` → `read`, or `failed`.
 */
export type MessageStatus = "received" | "pending" | "sent" | "delivered" | "read" | "failed"

/** What the operator said when a message failed. */
export interface MessageError {
  readonly code: number | null
  readonly title: string | null
  readonly message: string
  readonly details: string | null
}

/** A message as stored. */
export interface MessageRecord {
  readonly id: string
  readonly tenant_id: string
  readonly conversation_id: string
  readonly channel_id: string
  readonly contact_id: string | null
  readonly direction: MessageDirection
  /** `text`, `image`, `document`, …, `unsupported` for a type the service does not know. */
  readonly message_type: string
  readonly text: string | null
  /** What the type carries beyond text: a location, shared contacts, a reply's ids, a reaction, a caption. */
  readonly content: Readonly<Record<string, unknown>>
  readonly status: MessageStatus
  /** The operator's message id (`wamid.…`); unique per channel. */
  readonly external_id: string | null
  readonly error: MessageError | null
  readonly created_at: string
  readonly updated_at: string | null
  readonly sent_at: string | null
  readonly delivered_at: string | null
  readonly read_at: string | null
  readonly failed_at: string | null
}

/** The columns a settlement or a status move writes of a message (`settlePending`, `moveStatuses`). */
export type MessageStatusColumns = Pick<MessageRecord, "status" | "error" | "sent_at" | "delivered_at" | "read_at" | "failed_at" | "updated_at">

/** The columns a settlement or a status move writes of a message, as `message` holds them. */
export const statusColumnsOf = (message: MessageRecord): MessageStatusColumns => ({
  status: message.status,
  error: message.error,
  sent_at: message.sent_at,
  delivered_at: message.delivered_at,
  read_at: message.read_at,
  failed_at: message.failed_at,
  updated_at: message.updated_at
})

/** A status the operator reported for a message id, kept even before the message is known here. */
export interface MessageStatusReport {
  readonly tenant_id: string
  readonly channel_id: string
  readonly external_id: string
  readonly status: "sent" | "delivered" | "read" | "failed"
  /** The operator's time of the status. */
  readonly occurred_at: string
  readonly error: MessageError | null
  readonly received_at: string
}

/** Messages and the statuses reported for them; every method is scoped by tenant id. */
export class MessageStore extends Context.Service<MessageStore, {
  /** Stores a message; an `external_id` already stored on the channel fails with `UniqueViolation`. */
  readonly insert: (message: MessageRecord) => Effect.Effect<void, StorageError>
  readonly get: (tenantId: string, id: string) => Effect.Effect<Option.Option<MessageRecord>, StorageError>
  /** The message the operator knows as `externalId` on `channelId`. */
  readonly findByExternalId: (
    tenantId: string,
    channelId: string,
    externalId: string
  ) => Effect.Effect<Option.Option<MessageRecord>, StorageError>
  /** One page of a conversation's messages, oldest first, and their total. */
  readonly listByConversation: (
    tenantId: string,
    conversationId: string,
    window: { readonly limit: number; readonly offset: number }
  ) => Effect.Effect<{ readonly items: ReadonlyArray<MessageRecord>; readonly total: number }, StorageError>
  /** Replaces the stored message `message.id` of `tenantId`; `false` when it does not exist there. */
  readonly update: (tenantId: string, message: MessageRecord) => Effect.Effect<boolean, StorageError>
  /** Keeps a reported status; `false` when this status of this message id was kept already. */
  readonly recordStatus: (report: MessageStatusReport) => Effect.Effect<boolean, StorageError>
  /** The batch form of `insert`: stores every message in one statement (a taken `external_id` fails it whole). */
  readonly insertMany: (messages: ReadonlyArray<MessageRecord>) => Effect.Effect<void, StorageError>
  /** The batch form of `recordStatus`: keeps each report not kept already (the same status of one id once). */
  readonly recordStatuses: (reports: ReadonlyArray<MessageStatusReport>) => Effect.Effect<void, StorageError>
  /**
   * The messages the operator knows by `externalIds` on `channelId` (any order; unknown ids are left
   * out). With `hold`, each is held until the caller's transaction ends (PostgreSQL: row locks, taken
   * in the operator ids' order whoever asks, so two callers holding overlapping sets wait for each other
   * and never deadlock; SQLite's writers take turns anyway), and a message another transaction was
   * writing is read as that transaction left it: what a status handler reads before it moves them, or
   * keeps their statuses for a pending one's settlement (which then waits for it), so the two cannot
   * pass each other.
   */
  readonly findByExternalIds: (
    tenantId: string,
    channelId: string,
    externalIds: ReadonlyArray<string>,
    options?: { readonly hold?: boolean }
  ) => Effect.Effect<ReadonlyArray<MessageRecord>, StorageError>
  /**
   * Moves messages of `tenantId` to a new status state (`status`, `error` and the four times, with
   * `updated_at`), each only if it still stands as read (`expected`: its status and `updated_at`),
   * and resolves to the ids it moved. Writes only those columns: a message another writer moved
   * meanwhile is left as that writer left it, for the caller to read again.
   */
  readonly moveStatuses: (
    tenantId: string,
    moves: ReadonlyArray<{
      readonly id: string
      readonly expected: Pick<MessageRecord, "status" | "updated_at">
      readonly to: MessageStatusColumns
    }>
  ) => Effect.Effect<ReadonlySet<string>, StorageError>
  /**
   * Gives outbound messages of `tenantId` on `channelId` that are still `pending` with no operator id
   * the id a status named them by (its send's reference), and resolves to the ids it wrote. Writes
   * only `external_id`: the message stays pending for whoever settles it (the send's answer, or the
   * recovery of a send whose sender died), which applies the statuses kept for that id.
   */
  readonly attachExternalIds: (
    tenantId: string,
    channelId: string,
    attachments: ReadonlyArray<{ readonly id: string; readonly external_id: string }>
  ) => Effect.Effect<ReadonlySet<string>, StorageError>
  /**
   * Settles outbound messages of `tenantId` still `pending` with what their transport answered: the
   * operator's `external_id` and the status state (`status`, `error`, the four times, `updated_at`),
   * and resolves to the ids it settled. Writes only those columns, and only while a message is still
   * `pending`, so a message settled already is never settled twice.
   */
  readonly settlePending: (
    tenantId: string,
    outcomes: ReadonlyArray<
      Pick<MessageRecord, "id" | "external_id" | "status" | "error" | "sent_at" | "delivered_at" | "read_at" | "failed_at" | "updated_at">
    >
  ) => Effect.Effect<ReadonlySet<string>, StorageError>
  /**
   * Outbound chat-app messages still `pending` that were made before `before`, of every tenant (a
   * background look across tenants: each record carries its `tenant_id`): oldest first, by
   * (`created_at`, `id`) after `after` when given, at most `limit`. Sends under way are younger than
   * any `before` the sweep of unanswered sends asks with; what it finds is a send in doubt.
   */
  readonly pendingAcrossTenants: (
    before: string,
    after: { readonly created_at: string; readonly id: string } | null,
    limit: number
  ) => Effect.Effect<ReadonlyArray<MessageRecord>, StorageError>
  /** Deletes messages of `tenantId` that are still `pending` (never handed to their transport). */
  readonly deletePending: (tenantId: string, ids: ReadonlyArray<string>) => Effect.Effect<void, StorageError>
  /** The batch form of `statusesOf`: every status kept for any of `externalIds` on `channelId`, each id's in the order received. */
  readonly statusesOfMany: (
    tenantId: string,
    channelId: string,
    externalIds: ReadonlyArray<string>
  ) => Effect.Effect<ReadonlyArray<MessageStatusReport>, StorageError>
  /** Every status kept for a message id, in the order they were received. */
  readonly statusesOf: (
    tenantId: string,
    channelId: string,
    externalId: string
  ) => Effect.Effect<ReadonlyArray<MessageStatusReport>, StorageError>
}>()("omnichannel-core/ports/MessageStore") {}
