import type { MessageError, MessageRecord, MessageStatus } from "../ports/MessageStore.ts"

/** A status the operator reports for an outbound message. */
export interface StatusReport {
  readonly status: "sent" | "delivered" | "read" | "failed"
  /** When it happened (the operator's time, else when it was received). */
  readonly at: string
  readonly error: MessageError | null
}

/** The part of a message the machine reads and moves. */
export type StatusState = Pick<MessageRecord, "status" | "sent_at" | "delivered_at" | "read_at" | "failed_at" | "error">

const RANK: Readonly<Record<MessageStatus, number>> = { received: -1, pending: 0, sent: 1, delivered: 2, read: 3, failed: 4 }

const TIME = { sent: "sent_at", delivered: "delivered_at", read: "read_at", failed: "failed_at" } as const

/**
 * Applies a reported status to an outbound message. The status only ever moves forward
 * (`pending` → `sent` → `delivered` → `read`): a `read` that arrives before `delivered`, or twice,
 * never moves it back; a late `delivered` still fills in its time. `failed` counts while the message
 * was not yet delivered; after that it is recorded nowhere but the status log. Inbound messages never
 * move. Pure: `(state, report) → state`, with `changed` telling whether anything moved.
 */
export const applyStatus = (state: StatusState, report: StatusReport): { readonly state: StatusState; readonly changed: boolean } => {
  if (state.status === "received" || state.status === "failed") return { state, changed: false }
  if (report.status === "failed") {
    if (RANK[state.status] >= RANK.delivered) return { state, changed: false }
    return { state: { ...state, status: "failed", failed_at: report.at, error: report.error }, changed: true }
  }
  const column = TIME[report.status]
  const fillsTime = state[column] === null
  const advances = RANK[report.status] > RANK[state.status]
  if (!fillsTime && !advances) return { state, changed: false }
  return {
    state: {
      ...state,
      ...(fillsTime ? { [column]: report.at } : {}),
      ...(advances ? { status: report.status } : {})
    },
    changed: true
  }
}

/**
 * Where a reported status takes an outbound message's status alone (for records that follow a
 * message without its times, such as a campaign's recipient): the same forward-only rule as
 * `applyStatus`; null when it does not move. `pending` and `sending` are both "not yet sent".
 */
export const nextOutboundStatus = (
  current: "pending" | "sending" | "sent" | "delivered" | "read" | "failed" | "skipped",
  reported: StatusReport["status"]
): StatusReport["status"] | null => {
  if (current === "skipped") return null
  const state: StatusState = {
    status: current === "sending" ? "pending" : current,
    sent_at: null,
    delivered_at: null,
    read_at: null,
    failed_at: null,
    error: null
  }
  const next = applyStatus(state, { status: reported, at: "", error: null })
  return next.state.status === state.status ? null : next.state.status as StatusReport["status"]
}
