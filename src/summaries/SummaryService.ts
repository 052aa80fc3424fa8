import { Context, Effect, Layer, Option } from "effect"
import { AttachmentService } from "../attachments/AttachmentService.ts"
import { type FailedWithBody, type FeatureDisabled, InvalidRequest, NotFound } from "../kernel/ApiError.ts"
import type { StorageError } from "../kernel/StorageError.ts"
import { nowMillis } from "../kernel/Timestamp.ts"
import type { AttachmentRecord } from "../ports/AttachmentStore.ts"
import { SummaryStore } from "../ports/SummaryStore.ts"
import { TenantService } from "../tenants/TenantService.ts"
import { NO_SUMMARY, type Summary, SummaryErrors, type SummaryFields, type SummaryResponse, toSummary } from "./Summary.ts"
import { makeSummaryGeneration } from "./SummaryGeneration.ts"
import { availability, rateBuckets, rateDecision, rateWindow, type SummaryCandidate } from "./SummaryMachine.ts"

export { NO_SUMMARY, Summary, SummaryErrors, SummaryFields, SummaryResponse, summaryResponseStatus } from "./Summary.ts"
export { PRICES, MAX_BYTES, MAX_PAGES, RATE_LIMITS } from "./SummaryMachine.ts"

/**
 * A file as the summary rules see it, wherever it is shown: its attachment id (the one the summary
 * routes take), checked type and size, whether it was sent to the workspace, and whether the place it
 * is in offers summaries at all.
 */
export interface SummaryTarget extends SummaryCandidate {
  readonly attachmentId: string
}

/** Who asks for a summary, for the per-caller request limit: an API key, or a user (team chat). */
export interface SummaryCaller {
  readonly kind: "api_key" | "user"
  readonly id: string
}

/** A summary read (`GET …/summary`): the workspace and the file, resolved and checked visible by the caller's area. */
export interface SummaryQuery {
  readonly tenantId: string
  readonly target: SummaryTarget
}

/** A summary request (`POST …/summary`). */
export interface SummaryRequest extends SummaryQuery {
  readonly caller: SummaryCaller
  /**
   * Whether a new `ok` summary emits `attachment.summarized` (with the attachment's message and
   * conversation): true for conversation files, false for team chat, which never emits it.
   */
  readonly announce: boolean
}

/**
 * The target of an attachment of a conversation message (chat-app media, email files, uploads): inbound
 * when a contact sent it; an inline image of an email is never offered.
 */
export const conversationTarget = (record: AttachmentRecord): SummaryTarget => ({
  attachmentId: record.id,
  contentType: record.content_type,
  fileSize: record.file_size,
  inbound: record.direction === "inbound",
  offered: record.origin !== "email_inline"
})

/**
 * The target of a file of a team chat message: it counts as inbound when someone else than the caller
 * posted it; `offered` is false in channels shared across workspaces or with external guests.
 */
export const teamChatTarget = (
  record: AttachmentRecord,
  place: { readonly postedByCaller: boolean; readonly offered: boolean }
): SummaryTarget => ({
  attachmentId: record.id,
  contentType: record.content_type,
  fileSize: record.file_size,
  inbound: !place.postedByCaller,
  offered: place.offered
})

/**
 * AI file summaries (spec: "AI file summaries"): the three summary fields of attachments in every
 * message, email thread and team chat response; reading and requesting a summary with the spec's
 * codes, prices, size limits and request rates; generation outside any transaction, its outcome
 * stored with its charge and `attachment.summarized` in one; summaries for a host's assistant; the
 * AI credit ledger.
 *
 * Team chat calls `summaryFor` and `requestSummary` with `teamChatTarget(…)` and `announce: false`,
 * after checking the caller may see the message (its own 404); the 403, 404 `summary_not_found`, 422,
 * 429, 503, 502 and 402 answers come from here, as API errors its routes return as they are.
 */
export class SummaryService extends Context.Service<SummaryService, {
  /**
   * The three summary fields of each target, in order: one read of the workspace and one of the
   * summaries, whatever the number of targets. AI features off: no summary, nothing available.
   */
  readonly fieldsFor: (tenantId: string, targets: ReadonlyArray<SummaryTarget>) => Effect.Effect<ReadonlyArray<SummaryFields>, StorageError>
  /** `GET …/summary` of a resolved file: 403 `feature_disabled`, 404 `summary_not_found`, else the summary. */
  readonly summaryFor: (query: SummaryQuery) => Effect.Effect<Summary, FeatureDisabled | FailedWithBody | StorageError>
  /**
   * `POST …/summary` of a resolved file: 403 `feature_disabled`, 429/503 rate limits, 422
   * `attachment_not_summarizable`, then 200 existing, 202 pending, 201 new (charged), 402
   * `insufficient_credits` or 502 `summary_failed`. Generates in the call (the answer waits for it).
   * The status is `summaryResponseStatus(response)`.
   */
  readonly requestSummary: (request: SummaryRequest) => Effect.Effect<SummaryResponse, FeatureDisabled | FailedWithBody | StorageError>
  /** `GET /attachments/{id}/summary`: the tenant's attachment (404 `attachment_not_found`), then `summaryFor`. */
  readonly getForAttachment: (tenantId: string, attachmentId: string) => Effect.Effect<Summary, FeatureDisabled | FailedWithBody | StorageError>
  /** `POST /attachments/{id}/summary`: the tenant's attachment (404 `attachment_not_found`), then `requestSummary`, announced. */
  readonly requestForAttachment: (
    tenantId: string,
    caller: SummaryCaller,
    attachmentId: string
  ) => Effect.Effect<SummaryResponse, FeatureDisabled | FailedWithBody | StorageError>
  /**
   * A summary for a host's conversational agent (`source: agent`): same availability and sizes, no
   * charge and no request limit; a new one still emits `attachment.summarized`. An existing summary is
   * returned as it is.
   */
  readonly summarizeForAgent: (tenantId: string, attachmentId: string) => Effect.Effect<SummaryResponse, FeatureDisabled | FailedWithBody | StorageError>
  /** Adds AI credits to a tenant's balance (a positive whole number). */
  readonly grantCredits: (
    tenantId: string,
    amount: number
  ) => Effect.Effect<{ readonly tenant_id: string; readonly balance: number }, NotFound | InvalidRequest | StorageError>
  /** A tenant's AI credit balance and the credits charged so far. */
  readonly credits: (
    tenantId: string
  ) => Effect.Effect<{ readonly tenant_id: string; readonly balance: number; readonly charged_total: number }, NotFound | StorageError>
}>()("omnichannel-core/summaries/SummaryService") {
  static readonly layer = Layer.effect(
    SummaryService,
    Effect.gen(function*() {
      const store = yield* SummaryStore
      const tenants = yield* TenantService
      const attachments = yield* AttachmentService
      const generation = yield* makeSummaryGeneration

      const aiEnabled = (tenantId: string) =>
        Effect.map(tenants.get(tenantId), (tenant) => Option.isSome(tenant) && tenant.value.ai_features_enabled)
      const requireAi = Effect.fnUntraced(function*(tenantId: string) {
        if (!(yield* aiEnabled(tenantId))) return yield* SummaryErrors.featureDisabled()
      })
      const attachmentOf = (tenantId: string, attachmentId: string) =>
        Effect.catchTag(attachments.get(tenantId, attachmentId), "NotFound", () =>
          Effect.fail(SummaryErrors.attachmentNotFound(attachmentId)))

      // A request is taken from the caller's counter, then the workspace's, in the store, so every
      // process on one database shares the count; a counter that cannot be read refuses with 503.
      const limitRate = Effect.fnUntraced(function*(tenantId: string, caller: SummaryCaller) {
        const at = yield* nowMillis
        const full = yield* store.takeRequest(tenantId, rateWindow(at).start, rateBuckets(caller)).pipe(
          Effect.catchTag("StorageError", (error) =>
            Effect.andThen(
              Effect.logWarning("summary request counter unavailable", error.message),
              Effect.fail(SummaryErrors.rateLimitUnavailable())
            ))
        )
        const decision = rateDecision(Option.getOrNull(full), at)
        if (!decision.allowed) return yield* SummaryErrors.rateLimited(decision.limit, decision.scope, decision.retryAfter)
      })

      const summaryFor = Effect.fn("SummaryService.summaryFor")(function*(query: SummaryQuery) {
        yield* requireAi(query.tenantId)
        const found = yield* store.get(query.tenantId, query.target.attachmentId)
        if (Option.isNone(found)) return yield* SummaryErrors.summaryNotFound(query.target.attachmentId)
        return toSummary(found.value)
      })

      const requestSummary = Effect.fn("SummaryService.requestSummary")(function*(request: SummaryRequest) {
        yield* requireAi(request.tenantId)
        yield* limitRate(request.tenantId, request.caller)
        const record = yield* attachmentOf(request.tenantId, request.target.attachmentId)
        return yield* generation.run({
          tenantId: request.tenantId,
          target: request.target,
          attachment: record,
          source: "on_demand",
          announce: request.announce
        })
      })

      return SummaryService.of({
        fieldsFor: Effect.fn("SummaryService.fieldsFor")(function*(tenantId, targets) {
          if (targets.length === 0) return []
          if (!(yield* aiEnabled(tenantId))) return targets.map(() => NO_SUMMARY)
          const ids = [...new Set(targets.map((target) => target.attachmentId))]
          const byAttachment = new Map((yield* store.listByAttachments(tenantId, ids)).map((s) => [s.attachment_id, s]))
          return targets.map((target): SummaryFields => {
            const summary = byAttachment.get(target.attachmentId)
            return {
              ai_summary: summary === undefined ? null : toSummary(summary),
              ...availability(true, target, summary?.status ?? null)
            }
          })
        }),
        summaryFor,
        requestSummary,
        getForAttachment: Effect.fn("SummaryService.getForAttachment")(function*(tenantId, attachmentId) {
          const record = yield* attachmentOf(tenantId, attachmentId)
          return yield* summaryFor({ tenantId, target: conversationTarget(record) })
        }),
        requestForAttachment: Effect.fn("SummaryService.requestForAttachment")(function*(tenantId, caller, attachmentId) {
          const record = yield* attachmentOf(tenantId, attachmentId)
          return yield* requestSummary({ tenantId, caller, target: conversationTarget(record), announce: true })
        }),
        summarizeForAgent: Effect.fn("SummaryService.summarizeForAgent")(function*(tenantId, attachmentId) {
          const record = yield* attachmentOf(tenantId, attachmentId)
          yield* requireAi(tenantId)
          return yield* generation.run({
            tenantId,
            target: conversationTarget(record),
            attachment: record,
            source: "agent",
            announce: true
          })
        }),
        grantCredits: Effect.fn("SummaryService.grantCredits")(function*(tenantId, amount) {
          if (!Number.isSafeInteger(amount) || amount <= 0) {
            return yield* InvalidRequest.single(["amount"], "A positive whole number of credits", "value_error")
          }
          if (Option.isNone(yield* tenants.get(tenantId))) return yield* new NotFound({ message: `Tenant ${tenantId} not found` })
          yield* generation.grant(tenantId, amount)
          return { tenant_id: tenantId, balance: (yield* store.balance(tenantId)).balance }
        }),
        credits: Effect.fn("SummaryService.credits")(function*(tenantId) {
          if (Option.isNone(yield* tenants.get(tenantId))) return yield* new NotFound({ message: `Tenant ${tenantId} not found` })
          const balance = yield* store.balance(tenantId)
          return { tenant_id: tenantId, balance: balance.balance, charged_total: balance.charged_total }
        })
      })
    })
  )
}
