import { Clock, Effect } from "effect"
import type { BackgroundJob } from "../kernel/BackgroundWork.ts"
import { groupBy } from "../kernel/Grouping.ts"
import { fromMillis } from "../kernel/Timestamp.ts"
import type { MessageRecord, MessageStore } from "../ports/MessageStore.ts"
import type { Transactor } from "../ports/Transactor.ts"
import type { OutboundLifecycle } from "./OutboundLifecycle.ts"

/**
 * How long a chat-app send in doubt waits for the operator's status before it fails: 15 minutes from
 * when it was made. The operator reports `sent` within seconds of taking a message.
 */
const SEND_IN_DOUBT_SECONDS = 900

/**
 * A message pending this long is no send under way: the operator's answer comes within its 30-second
 * timeout, and a campaign hands a message over well within its round. Only older ones are looked at.
 */
const UNDER_WAY_SECONDS = 300

/** Why a send in doubt failed. */
const UNANSWERED = `The chat-app operator gave no answer to this send and reported no status for it within ${SEND_IN_DOUBT_SECONDS / 60} ` +
  "minutes; it is not sent again, so it is never sent twice"

const PAGE = 200

/** What the sweep needs. */
export interface UnansweredSendsDeps {
  readonly messages: MessageStore["Service"]
  readonly transactor: Transactor["Service"]
  readonly lifecycle: OutboundLifecycle
}

/**
 * The background job `unanswered-sends`: settles chat-app sends in doubt, the outbound messages left
 * `pending` because the operator's answer never came (a timeout, a connection dropped after the
 * request left: the API answered 504 `operator_no_answer`) or their process stopped mid-send. Each
 * send names its message (`biz_opaque_callback_data`), and a status naming it gives the message its
 * operator id; the sweep then settles it `sent` with every status kept for it (`settleReported`,
 * emitting `message.sent`). A message no status named within `SEND_IN_DOUBT_SECONDS` of being made
 * fails (`UNANSWERED`), never sent again. It looks at messages pending for over `UNDER_WAY_SECONDS`
 * only, a page at a time oldest first through `messages_pending_idx`, every `pollEveryMs`; each
 * tenant's page is settled in one transaction, and every write is conditional on the message still
 * being pending, so two workers sweeping at once write each message once.
 */
export const makeUnansweredSendsJob = (deps: UnansweredSendsDeps): BackgroundJob => {
  const { lifecycle, messages, transactor } = deps

  const expiredBy = (message: MessageRecord, nowMs: number) => Date.parse(message.created_at) + SEND_IN_DOUBT_SECONDS * 1000 <= nowMs

  const settleTenant = (tenantId: string, group: ReadonlyArray<MessageRecord>, nowMs: number) =>
    transactor.withTransaction(Effect.gen(function*() {
      const settled = new Set((yield* lifecycle.settleReportedOf(tenantId, group)).map((message) => message.id))
      const expired = group.filter((message) => !settled.has(message.id) && expiredBy(message, nowMs))
      const failed = yield* lifecycle.failPending(
        tenantId,
        expired.map((message) => message.id),
        { code: null, title: null, message: UNANSWERED, details: null },
        fromMillis(nowMs)
      )
      return { settled: settled.size, failed: failed.size }
    }))

  // Messages still waiting (no status named them yet, not expired) cost no transaction.
  const actionable = (message: MessageRecord, nowMs: number) => message.external_id !== null || expiredBy(message, nowMs)

  const runDue = Effect.gen(function*() {
    const nowMs = yield* Clock.currentTimeMillis
    const before = fromMillis(nowMs - UNDER_WAY_SECONDS * 1000)
    let after: { readonly created_at: string; readonly id: string } | null = null
    let settled = 0
    let failed = 0
    for (;;) {
      const page: ReadonlyArray<MessageRecord> = yield* messages.pendingAcrossTenants(before, after, PAGE)
      for (const [tenantId, group] of groupBy(page.filter((message) => actionable(message, nowMs)), (message) => message.tenant_id)) {
        const done = yield* settleTenant(tenantId, group, nowMs)
        settled += done.settled
        failed += done.failed
      }
      if (page.length < PAGE) break
      const last = page[page.length - 1]!
      after = { created_at: last.created_at, id: last.id }
    }
    if (settled + failed > 0) {
      yield* Effect.logInfo(`unanswered sends: ${settled} settled by the operator's statuses, ${failed} failed with no status`)
        .pipe(Effect.annotateLogs({ job: "unanswered-sends", settled, failed }))
    }
    return settled + failed
  })

  return { name: "unanswered-sends", runDue, pollEveryMs: 10_000 }
}
