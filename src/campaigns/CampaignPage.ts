import { Clock, Effect, Option } from "effect"
import type { ThroughputService } from "../channels/ThroughputService.ts"
import type { ContactService } from "../contacts/ContactService.ts"
import { type ConversationService, openKey } from "../conversations/ConversationService.ts"
import type { ListService } from "../lists/ListService.ts"
import { type MessageService, type OutboundOutcome, pendingMessage } from "../messages/MessageService.ts"
import type { TemplateService } from "../templates/TemplateService.ts"
import { chunksOf } from "../kernel/Grouping.ts"
import { newId } from "../kernel/Id.ts"
import { sendReferenceOf } from "../kernel/SendReference.ts"
import { fromMillis } from "../kernel/Timestamp.ts"
import type { CampaignRecipientRecord, CampaignRecord, CampaignStore, RecipientState } from "../ports/CampaignStore.ts"
import type { ChatPlatform, ChatPlatformError } from "../ports/ChatPlatform.ts"
import type { ConversationRecord } from "../ports/ConversationStore.ts"
import type { MessageError, MessageRecord } from "../ports/MessageStore.ts"
import type { Transactor } from "../ports/Transactor.ts"

/** After the operator's throughput limit (130429), the number's sends hold this long, in every process. */
const RETRY_RATE_LIMITED_MS = 250
/** After the operator's pair limit (too fast to one recipient, 131056), the next round waits this long. */
const RETRY_PAIR_MS = 6_000
/** After an operator failure of the moment (5xx, timeout), the next round waits this long. */
const RETRY_TRANSIENT_MS = 30_000
/** Recipients handed over, and their answers written back, per transaction. */
const HAND_OVER_GROUP = 32

/** What a round learnt from the operator's answers. */
export interface RoundFacts {
  /** Set when the operator asked to slow down (rate limit) or failed for the moment: wait this long. */
  backoffMs: number | null
  /** The number is restricted for quality: the campaign pauses. */
  restricted: boolean
  /** The backoff is the number's throughput (the operator's 130429): the campaign shows `throughput`. */
  throughputHeld: boolean
  /** Nobody is handed over after this time (ms), so the round ends well within its lease. */
  readonly handUntilMs: number
  /** Recipients were due but left for the next round at `handUntilMs`. */
  cutShort: boolean
  /**
   * A send got no answer after its request left (a timeout, a dropped connection): its recipient
   * stays `sending` and its message pending, for the operator's status to settle (see the engine's
   * recovery), never sent again.
   */
  inDoubt: boolean
}

/** One recipient's send and what came of it. */
interface SendResult {
  readonly recipient: CampaignRecipientRecord
  readonly message: MessageRecord
  readonly outcome:
    | { readonly _tag: "sent"; readonly externalId: string }
    | { readonly _tag: "failed"; readonly error: ChatPlatformError }
    | { readonly _tag: "retry" }
    | { readonly _tag: "inDoubt" }
  readonly at: string
}

/** The stored error of a message the operator refused. */
const messageErrorOf = (error: ChatPlatformError): MessageError => ({
  code: error.code,
  title: error.userTitle,
  message: error.userMessage ?? error.message,
  details: null
})

/** A recipient's state is its message's: the forward-only rule lives in the message lifecycle. */
export const recipientStateOf = (message: MessageRecord): RecipientState =>
  message.status === "delivered" || message.status === "read" || message.status === "failed" ? message.status : "sent"

/** A pending recipient failed before anything was handed to the operator for it. */
const failedUnsent = (recipient: CampaignRecipientRecord, error: string, at: string) => ({
  seq: recipient.seq,
  expected: "pending" as const,
  state: "failed" as const,
  handed_at: null,
  message_id: null,
  external_id: null,
  error,
  updated_at: at
})

/** A recipient handed over: its pending message, and the number it goes to (without the `+`). */
interface Handed {
  readonly message: MessageRecord
  readonly to: string
}

/** What sending a page needs. */
export interface PageDeps {
  readonly store: CampaignStore["Service"]
  readonly transactor: Transactor["Service"]
  readonly contacts: ContactService["Service"]
  readonly lists: ListService["Service"]
  readonly templates: TemplateService["Service"]
  readonly messages: MessageService["Service"]
  readonly conversations: ConversationService["Service"]
  readonly platform: ChatPlatform["Service"]
  /** Each number's send slots, at its throughput, shared by every process sending through it. */
  readonly throughput: ThroughputService["Service"]
}

/**
 * One number's due recipients of a round, a page at a time: handed over a group per transaction
 * (their conversations found or opened, their messages stored pending, the recipients marked
 * sending), sent at the number's pace, and each group's answers written back in one transaction.
 * At most `concurrency` recipients are handed over and not yet settled at once.
 */
export const makePageSender = (deps: PageDeps, concurrency: number) => {
  const { store, transactor } = deps

  const sendPage = Effect.fnUntraced(function*(
    campaign: CampaignRecord,
    channelId: string,
    templateId: string | null,
    due: ReadonlyArray<CampaignRecipientRecord>,
    facts: RoundFacts
  ) {
    const tenantId = campaign.tenant_id
    const startAt = fromMillis(yield* Clock.currentTimeMillis)
    const failAll = (error: string) => store.settleRecipients(tenantId, campaign.id, due.map((r) => failedUnsent(r, error, startAt)))
    if (templateId === null) return yield* failAll("no approved template of the campaign on this number")
    // Checked and rendered once for the whole page.
    const prepared = yield* Effect.result(deps.templates.prepareSend(tenantId, templateId, {
      channel_id: channelId,
      variable_values: [...campaign.variable_values]
    }))
    if (prepared._tag === "Failure") {
      if (prepared.failure._tag === "StorageError") return yield* Effect.fail(prepared.failure)
      return yield* failAll(prepared.failure.message)
    }
    const send = prepared.success
    const phones = new Map(
      (yield* deps.contacts.getMany(tenantId, [...new Set(due.map((r) => r.contact_id))])).map((c) => [c.id, c.phone])
    )

    const handOver = (slice: ReadonlyArray<CampaignRecipientRecord>) =>
      transactor.withTransaction(Effect.gen(function*() {
        const handed = new Map<number, Handed>()
        if (facts.backoffMs !== null || facts.restricted) return handed
        const nowMs = yield* Clock.currentTimeMillis
        const at = fromMillis(nowMs)
        if (nowMs > facts.handUntilMs) {
          facts.cutShort = true
          return handed
        }
        // Paused (or otherwise stopped) since the round began: nobody more is handed over.
        const now = yield* store.get(tenantId, campaign.id)
        if (Option.isNone(now) || now.value.status !== "sending") return handed
        const reachable = slice.filter((r) => phones.get(r.contact_id) != null)
        const unreachable = slice.filter((r) => phones.get(r.contact_id) == null)
        const open = reachable.length === 0
          ? new Map<string, ConversationRecord>()
          : yield* deps.conversations.openForMany(tenantId, reachable.map((r) => ({ channelId, contactId: r.contact_id })))
        for (const r of reachable) {
          const conversation = open.get(openKey(channelId, r.contact_id))!
          const message = pendingMessage({ conversation, messageType: send.messageType, text: send.text, content: send.content }, yield* newId, at)
          handed.set(r.seq, { message, to: phones.get(r.contact_id)!.replace(/^\+/, "") })
        }
        yield* deps.messages.outbound.recordPendingMany([...handed.values()].map(({ message }) => message))
        const moved = yield* store.settleRecipients(tenantId, campaign.id, [
          ...reachable.map((r) => ({
            seq: r.seq,
            expected: "pending" as const,
            state: "sending" as const,
            handed_at: at,
            message_id: handed.get(r.seq)!.message.id,
            external_id: null,
            error: null,
            updated_at: at
          })),
          ...unreachable.map((r) => failedUnsent(r, "The contact has no phone number", at))
        ])
        // A recipient no longer pending (settled by another writer) is not sent; its message goes.
        const lost = [...handed.entries()].filter(([seq]) => !moved.has(seq))
        if (lost.length > 0) {
          yield* deps.messages.outbound.dropPending(tenantId, lost.map(([, { message }]) => message.id))
          for (const [seq] of lost) handed.delete(seq)
        }
        return handed
      }))

    const pacer = yield* deps.throughput.pacer(tenantId, channelId, due.length)

    const sendOne = (recipient: CampaignRecipientRecord, item: Handed) =>
      Effect.gen(function*() {
        const result = (outcome: SendResult["outcome"], at: string): SendResult => ({ recipient, message: item.message, outcome, at })
        const retryNow = Effect.map(Clock.currentTimeMillis, (ms) => result({ _tag: "retry" }, fromMillis(ms)))
        if (facts.backoffMs !== null || facts.restricted) {
          return yield* retryNow
        }
        // The number's slot could not be had (the database failed): not sent, so back to pending.
        const paced = yield* Effect.result(pacer.take)
        if (paced._tag === "Failure") {
          facts.backoffMs = Math.max(facts.backoffMs ?? 0, RETRY_TRANSIENT_MS)
          return yield* retryNow
        }
        // Refused meanwhile for the number's throughput: this one waits for the next round too.
        if (facts.backoffMs !== null || facts.restricted) {
          return yield* retryNow
        }
        // The send names its message, so a status settles it even if this answer is never written.
        const operatorMessage = { ...send.operatorMessage, biz_opaque_callback_data: sendReferenceOf(item.message.id) }
        const answer = yield* Effect.result(deps.platform.sendMessage(send.credentials, item.to, operatorMessage))
        yield* paced.success.answered
        const at = fromMillis(yield* Clock.currentTimeMillis)
        if (answer._tag === "Success") {
          return result({ _tag: "sent", externalId: answer.success.messageId }, at)
        }
        const error = answer.failure
        // No answer to a request that left: the operator may have the message, so it is not sent again.
        if (error.unanswered === true) {
          facts.inDoubt = true
          facts.backoffMs = Math.max(facts.backoffMs ?? 0, RETRY_TRANSIENT_MS)
          return result({ _tag: "inDoubt" }, at)
        }
        // The number above its throughput (130429): every sender of the number holds off a moment.
        if (error.kind === "rate_limited") {
          facts.throughputHeld = true
          yield* deps.throughput.penalize(tenantId, channelId, RETRY_RATE_LIMITED_MS)
        }
        if (error.kind === "rate_limited" || error.kind === "pair_rate_limited" || error.kind === "transient") {
          // The number's hold lives in its shared slots: the next round may start at once and waits there.
          const wait = error.kind === "rate_limited" ? 0 : error.kind === "pair_rate_limited" ? RETRY_PAIR_MS : RETRY_TRANSIENT_MS
          facts.backoffMs = Math.max(facts.backoffMs ?? 0, wait)
          return result({ _tag: "retry" }, at)
        }
        if (error.kind === "quality_restricted") {
          facts.restricted = true
          return result({ _tag: "retry" }, at)
        }
        return result({ _tag: "failed", error }, at)
      })

    // Groups of 32 (at most half the window) side by side: some in flight while others are handed
    // over or written back, so at most `concurrency` recipients are ever handed over and not settled.
    const group = Math.max(1, Math.min(HAND_OVER_GROUP, Math.floor(concurrency / 2)))
    yield* Effect.forEach(chunksOf(due, group), (slice) =>
      Effect.gen(function*() {
        const handed = yield* handOver(slice)
        if (handed.size === 0) return
        const results = yield* Effect.forEach(slice.filter((r) => handed.has(r.seq)), (r) => sendOne(r, handed.get(r.seq)!), {
          concurrency: "unbounded"
        })
        yield* writeOutcomes(campaign, results)
      }), { concurrency: Math.max(2, Math.floor(concurrency / group)), discard: true })
  })

  // A group of the operator's answers, written in one transaction: the messages settled (sent with
  // the operator's id, or failed with its error) with their conversations' times and `message.sent`
  // events; recipients the operator refused for a reason of the moment back to pending, their
  // messages dropped; each recipient settled from its message's state; opt-outs the operator
  // reported kept on the contact.
  const writeOutcomes = (campaign: CampaignRecord, group: ReadonlyArray<SendResult>) =>
    transactor.withTransaction(Effect.gen(function*() {
      const tenantId = campaign.tenant_id
      const settled = yield* deps.messages.outbound.settle(tenantId, group.flatMap(({ at, message, outcome }): Array<OutboundOutcome> =>
        outcome._tag === "sent"
          ? [{ _tag: "sent", message, externalId: outcome.externalId, at }]
          : outcome._tag === "failed"
          ? [{ _tag: "failed", message, at, error: messageErrorOf(outcome.error) }]
          : []
      ))
      const byMessage = new Map(settled.map((s) => [s.record.id, s.record]))
      const retried = group.filter(({ outcome }) => outcome._tag === "retry")
      yield* deps.messages.outbound.dropPending(tenantId, retried.map(({ message }) => message.id))
      // A send in doubt is left as it stands: `sending`, its message pending.
      const answered = group.filter(({ outcome }) => outcome._tag !== "inDoubt")
      yield* store.settleRecipients(tenantId, campaign.id, answered.map(({ at, message, outcome, recipient }) => {
        if (outcome._tag === "retry") {
          return { seq: recipient.seq, expected: "sending" as const, state: "pending" as const, handed_at: null, message_id: null, external_id: null, error: null, updated_at: at }
        }
        const record = byMessage.get(message.id)!
        return {
          seq: recipient.seq,
          expected: "sending" as const,
          state: recipientStateOf(record),
          // A refusal reached nobody: it counts neither toward the messaging limit nor the warm-up history.
          handed_at: outcome._tag === "failed" ? null : at,
          message_id: message.id,
          external_id: record.external_id,
          error: outcome._tag === "failed" ? (record.error?.message ?? outcome.error.message) : null,
          updated_at: at
        }
      }))
      const optedOut = group.filter(({ outcome }) => outcome._tag === "failed" && outcome.error.kind === "opted_out")
      yield* Effect.forEach(optedOut, ({ at, recipient }) =>
        deps.lists.recordOptOut({ tenant_id: tenantId, contact_id: recipient.contact_id, channel_id: recipient.channel_id, source: "operator_error", opted_out_at: at }), { discard: true })
    }))

  return sendPage
}
