import { Effect, Option, type Result } from "effect"
import type { ConversationService } from "../conversations/ConversationService.ts"
import type { EventEnvelope } from "../kernel/EventEnvelope.ts"
import { groupBy } from "../kernel/Grouping.ts"
import { operatorFailure, operatorNoAnswer } from "../kernel/OperatorFailure.ts"
import type { StorageError } from "../kernel/StorageError.ts"
import { now } from "../kernel/Timestamp.ts"
import type { ChatappSent, ChatPlatformError } from "../ports/ChatPlatform.ts"
import type { ConversationRecord } from "../ports/ConversationStore.ts"
import { type MessageError, type MessageRecord, type MessageStore, statusColumnsOf } from "../ports/MessageStore.ts"
import type { OutboxStore } from "../ports/OutboxStore.ts"
import type { Transactor } from "../ports/Transactor.ts"
import type { Message } from "./Message.ts"
import { applyStatus } from "./MessageStatusMachine.ts"

/** An outbound message about to be handed to its transport (the operator, or an email server). */
export interface OutboundDraft {
  readonly conversation: ConversationRecord
  readonly messageType: string
  readonly text: string | null
  readonly content: Readonly<Record<string, unknown>>
}

/** What the transport answered for a pending message. */
export type OutboundOutcome =
  | { readonly _tag: "sent"; readonly message: MessageRecord; readonly externalId: string | null; readonly at: string }
  | { readonly _tag: "failed"; readonly message: MessageRecord; readonly error: MessageError; readonly at: string }

/** A settled message: its stored state, and its wire form when it was sent (the `message.sent` event's). */
export interface SettledMessage {
  readonly record: MessageRecord
  /** Whether this call settled it (false: it was no longer pending, another writer settled it). */
  readonly settled: boolean
  readonly wire: Message | null
}

/** What the outbound lifecycle needs. */
export interface OutboundLifecycleDeps {
  readonly messages: MessageStore["Service"]
  readonly outbox: OutboxStore["Service"]
  readonly conversations: ConversationService["Service"]
  readonly wireOf: (records: ReadonlyArray<MessageRecord>) => Effect.Effect<ReadonlyArray<Message>, StorageError>
  readonly messageEvent: (type: "message.sent", message: Message) => Effect.Effect<EventEnvelope>
}

/** A pending outbound message of `draft`, made at `at` with id `id`. */
export const pendingMessage = (draft: OutboundDraft, id: string, at: string): MessageRecord => ({
  id,
  tenant_id: draft.conversation.tenant_id,
  conversation_id: draft.conversation.id,
  channel_id: draft.conversation.channel_id,
  contact_id: draft.conversation.contact_id,
  direction: "outbound",
  message_type: draft.messageType,
  text: draft.text,
  content: draft.content,
  status: "pending",
  external_id: null,
  error: null,
  created_at: at,
  updated_at: null,
  sent_at: null,
  delivered_at: null,
  read_at: null,
  failed_at: null
})

/**
 * The one lifecycle of outbound messages, chat-app and email alike, one or many at once: stored
 * `pending` before the transport is asked, then settled by its answer to `sent` (with the operator's
 * id; statuses the operator reported before the answer was written are applied by the same
 * forward-only rule, `applyStatus`) or `failed`. Settling writes each message only while it is still
 * pending, moves its conversation's times (never the rest of the row) and emits `message.sent`, all in
 * the caller's transaction.
 */
export const makeOutboundLifecycle = (deps: OutboundLifecycleDeps) => {
  const { conversations, messageEvent, messages, outbox, wireOf } = deps

  // The statuses the operator reported before its answer was written, read once per channel.
  const caughtUp = Effect.fnUntraced(function*(tenantId: string, sent: ReadonlyArray<MessageRecord>) {
    const withIds = sent.filter((message) => message.external_id !== null)
    if (withIds.length === 0) return sent
    const moved = new Map<string, MessageRecord>()
    for (const [channelId, group] of groupBy(withIds, (message) => message.channel_id)) {
      const reports = yield* messages.statusesOfMany(tenantId, channelId, group.map((message) => message.external_id!))
      if (reports.length === 0) continue
      const byExternal = groupBy(reports, (report) => report.external_id)
      for (const message of group) {
        let state: MessageRecord = message
        for (const report of byExternal.get(message.external_id!) ?? []) {
          const next = applyStatus(state, { status: report.status, at: report.occurred_at, error: report.error })
          if (next.changed) state = { ...state, ...next.state }
        }
        if (state !== message) moved.set(message.id, state)
      }
    }
    return sent.map((message) => moved.get(message.id) ?? message)
  })

  /** Stores the drafts' messages `pending` (in the caller's transaction), one statement for all. */
  const recordPendingMany = (records: ReadonlyArray<MessageRecord>): Effect.Effect<void, StorageError> =>
    records.length === 0 ? Effect.void : messages.insertMany(records)

  /**
   * Settles pending messages of one tenant by their transport's answers, in the caller's transaction:
   * one write for the messages, one for their conversations' times, one for the `message.sent` events.
   */
  const settle = Effect.fnUntraced(function*(tenantId: string, outcomes: ReadonlyArray<OutboundOutcome>) {
    if (outcomes.length === 0) return [] as ReadonlyArray<SettledMessage>
    const next = outcomes.map((outcome): MessageRecord =>
      outcome._tag === "sent"
        ? { ...outcome.message, status: "sent", external_id: outcome.externalId, sent_at: outcome.at, updated_at: outcome.at }
        : { ...outcome.message, status: "failed", error: outcome.error, failed_at: outcome.at, updated_at: outcome.at }
    )
    const sentIds = new Set(outcomes.filter((outcome) => outcome._tag === "sent").map((outcome) => outcome.message.id))
    const settled = yield* messages.settlePending(tenantId, next.map((m) => ({ id: m.id, external_id: m.external_id, ...statusColumnsOf(m) })))
    // The statuses kept for them, read once they are written: a status handler that held a message
    // (`findByExternalIds` with `hold`) ended before the write could, so what it kept is read here.
    const written = next.filter((message) => settled.has(message.id) && sentIds.has(message.id))
    const caught = (yield* caughtUp(tenantId, written)).flatMap((state, i) => (state === written[i] ? [] : [{ from: written[i]!, state }]))
    if (caught.length > 0) {
      yield* messages.moveStatuses(tenantId, caught.map(({ from, state }) => ({
        id: state.id,
        expected: { status: from.status, updated_at: from.updated_at },
        to: statusColumnsOf(state)
      })))
    }
    const moved = new Map(caught.map(({ state }) => [state.id, state]))
    const final = next.map((message) => moved.get(message.id) ?? message)
    const sentNow = final.filter((message) => settled.has(message.id) && sentIds.has(message.id))
    if (sentNow.length > 0) {
      yield* conversations.noteMessages(tenantId, sentNow.map((message) => ({
        conversationId: message.conversation_id,
        at: message.sent_at!,
        inbound: false
      })))
    }
    const wires = new Map((yield* wireOf(sentNow)).map((wire) => [wire.id, wire]))
    if (wires.size > 0) yield* outbox.append(yield* Effect.forEach([...wires.values()], (wire) => messageEvent("message.sent", wire)))
    return final.map((record): SettledMessage => ({ record, settled: settled.has(record.id), wire: wires.get(record.id) ?? null }))
  })

  /** Fails messages still pending whose fate is settled without a transport's answer (never handed to it). */
  const failPending = (tenantId: string, ids: ReadonlyArray<string>, error: MessageError, at: string) =>
    messages.settlePending(tenantId, ids.map((id) => ({
      id,
      external_id: null,
      status: "failed" as const,
      error,
      sent_at: null,
      delivered_at: null,
      read_at: null,
      failed_at: at,
      updated_at: at
    })))

  /**
   * Settles messages in doubt (their sender stopped, or their answer never came, before the operator's
   * answer was written) by what the operator reported since: a pending message a status named by its
   * send's reference (it holds the operator's id, see `attachExternalIds`) is settled sent, at the time
   * of its `sent` status, with every status kept for it; one no status named yet stays pending.
   * Resolves to the messages that are settled now, by this call or before it (another writer, the
   * sweep of unanswered sends), as stored, so whoever waited on one follows its state. In the
   * caller's transaction.
   */
  const settleReported = Effect.fnUntraced(function*(tenantId: string, ids: ReadonlyArray<string>) {
    const read = yield* Effect.forEach(ids, (id) => messages.get(tenantId, id))
    return yield* settleReportedOf(tenantId, read.flatMap((found) => (Option.isSome(found) ? [found.value] : [])))
  })

  /** `settleReported` of messages already read. */
  const settleReportedOf = Effect.fnUntraced(function*(tenantId: string, read: ReadonlyArray<MessageRecord>) {
    const before = read.filter((message) => message.status !== "pending")
    const named = read.filter((message) => message.status === "pending" && message.external_id !== null)
    const outcomes: Array<OutboundOutcome> = []
    for (const [channelId, group] of groupBy(named, (message) => message.channel_id)) {
      const reports = groupBy(yield* messages.statusesOfMany(tenantId, channelId, group.map((m) => m.external_id!)), (r) => r.external_id)
      for (const message of group) {
        const kept = reports.get(message.external_id!) ?? []
        const at = (kept.find((r) => r.status === "sent") ?? kept[0])?.occurred_at ?? message.created_at
        outcomes.push({ _tag: "sent", message, externalId: message.external_id, at })
      }
    }
    const now = (yield* settle(tenantId, outcomes)).flatMap((settled) => (settled.settled ? [settled.record] : []))
    return [...before, ...now] as ReadonlyArray<MessageRecord>
  })

  /** Deletes messages still pending that were never handed to their transport and will be made again. */
  const dropPending = (tenantId: string, ids: ReadonlyArray<string>) => messages.deletePending(tenantId, ids)

  return { recordPendingMany, settle, settleReported, settleReportedOf, failPending, dropPending }
}

/** The outbound lifecycle's operations. */
export type OutboundLifecycle = ReturnType<typeof makeOutboundLifecycle>

/**
 * Settles `pending` by the operator's answer to its send: `sent` with the operator's id (in one
 * transaction), or `failed` with the operator's error, then failing with the answer the API gives
 * for that refusal.
 */
export const settleOperatorAnswer = Effect.fnUntraced(function*(
  lifecycle: OutboundLifecycle,
  transactor: Transactor["Service"],
  pending: MessageRecord,
  answered: Result.Result<ChatappSent, ChatPlatformError>
) {
  const at = yield* now
  if (answered._tag === "Failure") {
    const error = answered.failure
    // The request left and no answer came: the operator may have it. The message stays pending, named
    // by its send's reference, for the operator's status to settle (`settleReported`).
    if (error.unanswered === true) return yield* operatorNoAnswer(error, pending.id)
    yield* lifecycle.settle(pending.tenant_id, [{
      _tag: "failed",
      message: pending,
      at,
      error: { code: error.code, title: error.userTitle, message: error.userMessage ?? error.message, details: null }
    }])
    return yield* operatorFailure(error, pending.id)
  }
  const [settled] = yield* transactor.withTransaction(
    lifecycle.settle(pending.tenant_id, [{ _tag: "sent", message: pending, externalId: answered.success.messageId, at }])
  )
  return settled!
})
