import { Cause, Effect, Option } from "effect"
import { AttachmentService } from "../attachments/AttachmentService.ts"
import type { FailedWithBody } from "../kernel/ApiError.ts"
import { makeEvent } from "../kernel/EventEnvelope.ts"
import { newId } from "../kernel/Id.ts"
import { countSummarySettled } from "../kernel/Metrics.ts"
import type { StorageError } from "../kernel/StorageError.ts"
import { now } from "../kernel/Timestamp.ts"
import type { AttachmentRecord } from "../ports/AttachmentStore.ts"
import { OutboxStore } from "../ports/OutboxStore.ts"
import { type SummaryDraft, Summarizer, SummarizerError } from "../ports/Summarizer.ts"
import { type SummaryOutcome, type SummaryRecord, SummaryStore } from "../ports/SummaryStore.ts"
import { Transactor } from "../ports/Transactor.ts"
import { SummaryErrors, type SummaryResponse, toSummary } from "./Summary.ts"
import {
  MAX_PAGES,
  summarizable,
  type SummaryCandidate,
  type SummaryIntent,
  type SummarySource,
  type SummaryState,
  transition,
  wouldGenerate
} from "./SummaryMachine.ts"

/** What one run of the summary rules is about. */
export interface GenerationInput {
  readonly tenantId: string
  readonly target: SummaryCandidate
  readonly attachment: AttachmentRecord
  readonly source: SummarySource
  readonly announce: boolean
}

// How often a request re-reads after another one changed the summary first (then it answers 202 or 200).
const CLAIM_TRIES = 3

/** Longest summary text kept, in characters; a summarizer's longer answer is cut. */
const MAX_TEXT = 20_000

// Plain text only: C0 controls but tab and line breaks are dropped (PostgreSQL text cannot hold NUL).
// biome-ignore lint/suspicious/noControlCharactersInRegex: the point is to match them.
const CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/g
const plain = (text: string): string => text.replace(CONTROL, "").slice(0, MAX_TEXT)

/** A stored summary as the machine sees it. */
export const stateOf = (record: SummaryRecord | null): SummaryState => {
  if (record === null) return { status: "none" }
  switch (record.status) {
    case "ok":
      return { status: "ok", generation: record.generation }
    case "failed":
      return { status: "failed", generation: record.generation }
    case "pending":
      return {
        status: "pending",
        generation: record.generation,
        // A pending row always has a lease; without one it may be taken over at once.
        lease_until: record.lease_until ?? record.updated_at,
        source: record.source,
        kind: record.kind
      }
  }
}

const has = <T extends SummaryIntent["type"]>(intents: ReadonlyArray<SummaryIntent>, type: T) =>
  intents.find((intent): intent is Extract<SummaryIntent, { type: T }> => intent.type === type)

/**
 * The summary rules at work: the machine decides, this performs. A claim is one conditional write
 * (two requests at once: one generates, the other answers 202); the file is read and the summarizer
 * called outside any transaction; the outcome is written over the claim only while it is still this
 * generation's, with its charge and `attachment.summarized` in the same transaction.
 */
export const makeSummaryGeneration = Effect.gen(function*() {
  const store = yield* SummaryStore
  const transactor = yield* Transactor
  const outbox = yield* OutboxStore
  const summarizer = yield* Summarizer
  const attachments = yield* AttachmentService

  const respond = (record: SummaryRecord, credits: number): SummaryResponse => ({
    attachment_id: record.attachment_id,
    summary: toSummary(record),
    credits_charged: credits
  })

  // Takes the summary pending under the claimed generation; none when another request was first.
  const claim = Effect.fnUntraced(function*(
    tenantId: string,
    attachmentId: string,
    current: SummaryRecord | null,
    intent: Extract<SummaryIntent, { type: "claim" }>
  ) {
    const at = yield* now
    if (current === null) {
      const record: SummaryRecord = {
        id: yield* newId,
        tenant_id: tenantId,
        attachment_id: attachmentId,
        status: "pending",
        kind: intent.kind,
        text: "",
        sections: [],
        pages_read: null,
        pages_total: null,
        truncated: false,
        model: "",
        source: intent.source,
        error: null,
        generation: intent.generation,
        lease_until: intent.lease_until,
        created_at: at,
        updated_at: at
      }
      return (yield* store.insertPending(record)) ? record : null
    }
    const next = { kind: intent.kind, source: intent.source, lease_until: intent.lease_until, updated_at: at }
    if (!(yield* store.claimNext(tenantId, current.id, current.generation, next))) return null
    return { ...current, ...next, status: "pending" as const, generation: intent.generation, error: null }
  })

  const draftOf = Effect.fnUntraced(function*(attachment: AttachmentRecord, kind: "image" | "pdf") {
    const bytes = yield* attachments.bytesOf(attachment).pipe(
      Effect.mapError((error) => new SummarizerError({ reason: "Unreadable", message: error.message }))
    )
    return yield* summarizer.summarize({
      kind,
      contentType: attachment.content_type,
      filename: attachment.filename,
      bytes,
      maxPages: MAX_PAGES
    })
  })

  // The summarizer's answer, or why there is none: a defect of the summarizer fails the generation too.
  const attempt = (attachment: AttachmentRecord, kind: "image" | "pdf") =>
    draftOf(attachment, kind).pipe(
      Effect.map((draft): { readonly draft: SummaryDraft } | { readonly error: string } => ({ draft })),
      Effect.catchCause((cause) => {
        const error = Cause.squash(cause)
        return Effect.as(
          Effect.logWarning("summary generation failed", Cause.pretty(cause)),
          { error: error instanceof SummarizerError ? `${error.reason}: ${error.message}` : "Defect" }
        )
      })
    )

  // Writes the outcome, its charge and its event together; false when the generation was taken over.
  const settle = Effect.fnUntraced(function*(
    pending: SummaryRecord,
    attachment: AttachmentRecord,
    outcome: SummaryOutcome,
    intents: ReadonlyArray<SummaryIntent>
  ) {
    let charged = 0
    const settled = yield* transactor.withTransaction(Effect.gen(function*() {
      charged = 0
      if (!(yield* store.settle(pending.tenant_id, pending.id, pending.generation, outcome))) return false
      const charge = has(intents, "charge")
      if (charge !== undefined) {
        const added = yield* store.addCredits({
          id: yield* newId,
          tenant_id: pending.tenant_id,
          amount: -charge.credits,
          reason: "summary",
          attachment_id: pending.attachment_id,
          charge_key: `${pending.id}:${pending.generation}`,
          created_at: outcome.updated_at
        })
        if (added) charged = charge.credits
      }
      if (has(intents, "announce") !== undefined) {
        yield* outbox.append([
          yield* makeEvent({
            type: "attachment.summarized",
            tenantId: pending.tenant_id,
            data: {
              attachment_id: attachment.id,
              message_id: attachment.message_id,
              conversation_id: attachment.conversation_id,
              summary: toSummary({ ...pending, ...outcome })
            }
          })
        ])
      }
      return true
    }))
    // Counted once committed: a generation another took over counts nothing, a charge already on the ledger not again.
    if (settled) yield* countSummarySettled(pending.tenant_id, outcome.status === "ok" ? "ok" : "failed", pending.kind, charged)
    return settled
  })

  const run = Effect.fnUntraced(function*(input: GenerationInput): Effect.fn.Return<SummaryResponse, FailedWithBody | StorageError> {
    const checked = summarizable(input.target)
    if (!checked.summarizable) return yield* SummaryErrors.notSummarizable(checked.reason)
    const { tenantId, attachment } = input
    for (let tries = 0;; tries++) {
      const current = Option.getOrNull(yield* store.get(tenantId, attachment.id))
      const state = stateOf(current)
      const at = yield* now
      const balance = input.source === "on_demand" && wouldGenerate(state, at) ? (yield* store.balance(tenantId)).balance : 0
      const decided = transition(state, { type: "requested", source: input.source, kind: checked.kind, balance }, at)
      if (has(decided.intents, "answer_existing") !== undefined) return respond(current!, 0)
      if (has(decided.intents, "answer_pending") !== undefined) return respond(current!, 0)
      const refused = has(decided.intents, "refuse_credits")
      if (refused !== undefined) return yield* SummaryErrors.insufficientCredits(refused.required, refused.balance)
      const intent = has(decided.intents, "claim")!
      const pending = yield* claim(tenantId, attachment.id, current, intent)
      if (pending === null) {
        if (tries + 1 < CLAIM_TRIES) continue
        return yield* SummaryErrors.summaryFailed()
      }
      return yield* finish(input, pending, decided.state, checked.kind)
    }
  })

  const finish = Effect.fnUntraced(function*(
    input: GenerationInput,
    pending: SummaryRecord,
    state: SummaryState,
    kind: "image" | "pdf"
  ): Effect.fn.Return<SummaryResponse, FailedWithBody | StorageError> {
    const result = yield* attempt(input.attachment, kind)
    const at = yield* now
    if ("draft" in result) {
      const { draft } = result
      const decided = transition(state, { type: "generated", generation: pending.generation, announce: input.announce }, at)
      const outcome: SummaryOutcome = {
        status: "ok",
        text: plain(draft.text),
        sections: draft.sections.map((section) => ({ key: plain(section.key).slice(0, 100), text: plain(section.text) })),
        pages_read: kind === "pdf" ? draft.pagesRead : null,
        pages_total: kind === "pdf" ? draft.pagesTotal : null,
        truncated: kind === "pdf" && draft.truncated,
        model: plain(draft.model).slice(0, 200),
        error: null,
        updated_at: at
      }
      if (yield* settle(pending, input.attachment, outcome, decided.intents)) {
        const created = has(decided.intents, "answer_created")
        return respond({ ...pending, ...outcome }, created?.credits_charged ?? 0)
      }
      return yield* taken(pending)
    }
    const decided = transition(state, { type: "generation_failed", generation: pending.generation }, at)
    const outcome: SummaryOutcome = {
      status: "failed",
      text: "",
      sections: [],
      pages_read: null,
      pages_total: null,
      truncated: false,
      model: "",
      error: result.error,
      updated_at: at
    }
    if (yield* settle(pending, input.attachment, outcome, decided.intents)) return yield* SummaryErrors.summaryFailed()
    return yield* taken(pending)
  })

  // The generation was taken over while it ran (its lease ran out): answer with what is there now.
  const taken = Effect.fnUntraced(function*(pending: SummaryRecord) {
    const current = yield* store.get(pending.tenant_id, pending.attachment_id)
    if (Option.isNone(current) || current.value.status === "failed") return yield* SummaryErrors.summaryFailed()
    return respond(current.value, 0)
  })

  /** Adds a grant to the ledger. */
  const grant = Effect.fnUntraced(function*(tenantId: string, amount: number) {
    yield* store.addCredits({
      id: yield* newId,
      tenant_id: tenantId,
      amount,
      reason: "grant",
      attachment_id: null,
      charge_key: null,
      created_at: yield* now
    })
  })

  return { run, grant }
})
