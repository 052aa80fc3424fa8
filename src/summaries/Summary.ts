import { Schema } from "effect"
import { FailedWithBody, FeatureDisabled } from "../kernel/ApiError.ts"
import { UuidId } from "../kernel/Id.ts"
import type { SummaryRecord } from "../ports/SummaryStore.ts"

/**
 * The spec's Summary object. Its text is AI-generated from customer content: plain text, untrusted,
 * never to be rendered as HTML or Markdown, followed or obeyed.
 */
export const Summary = Schema.Struct({
  status: Schema.Literals(["ok", "pending", "failed"]),
  kind: Schema.Literals(["image", "pdf"]),
  text: Schema.String,
  sections: Schema.Array(Schema.Struct({ key: Schema.String, text: Schema.String })),
  pages_read: Schema.NullOr(Schema.Int),
  pages_total: Schema.NullOr(Schema.Int),
  truncated: Schema.Boolean,
  model: Schema.String,
  source: Schema.Literals(["agent", "on_demand"]),
  created_at: Schema.String,
  updated_at: Schema.String
})
/** The spec's Summary object. */
export type Summary = typeof Summary.Type
export declare namespace Summary {}

/** Response of `POST …/summary`: 201 new (charged), 200 existing, 202 being generated. */
export const SummaryResponse = Schema.Struct({
  attachment_id: UuidId,
  summary: Summary,
  credits_charged: Schema.Int
})
/** Response of `POST …/summary`. */
export type SummaryResponse = typeof SummaryResponse.Type
export declare namespace SummaryResponse {}

/** The status a `POST …/summary` answers with, read from its body: 201 charged, 202 pending, else 200. */
export const summaryResponseStatus = (response: SummaryResponse): number =>
  response.credits_charged > 0 ? 201 : response.summary.status === "pending" ? 202 : 200

/**
 * The three summary fields every attachment of a message, email thread or team chat response carries
 * (spec: "Message attachment"): the summary or null, whether one can be requested, and its price.
 */
export const SummaryFields = {
  ai_summary: Schema.NullOr(Summary),
  ai_summary_available: Schema.Boolean,
  ai_summary_credits: Schema.NullOr(Schema.Int)
}
/** The three summary fields of an attachment. */
export interface SummaryFields {
  readonly ai_summary: Summary | null
  readonly ai_summary_available: boolean
  readonly ai_summary_credits: number | null
}
export declare namespace SummaryFields {}

/** The fields of an attachment that offers nothing: no summary, not available, no price. */
export const NO_SUMMARY: SummaryFields = { ai_summary: null, ai_summary_available: false, ai_summary_credits: null }

/** The wire form of a stored summary. */
export const toSummary = (record: SummaryRecord): Summary => ({
  status: record.status,
  kind: record.kind,
  text: record.text,
  sections: record.sections.map((section) => ({ key: section.key, text: section.text })),
  pages_read: record.pages_read,
  pages_total: record.pages_total,
  truncated: record.truncated,
  model: record.model,
  source: record.source,
  created_at: record.created_at,
  updated_at: record.updated_at
})

// The spec's summary error bodies: `{detail: {code, message}}`, rate limits `{detail: {error, …}}`.
const coded = (status: number, code: string, message: string, headers?: Readonly<Record<string, string>>) =>
  new FailedWithBody({ status, body: { detail: { code, message } }, ...(headers === undefined ? {} : { headers }) })

/** The summary errors of the spec's "Summary errors" table (and this service's one addition), as API errors. */
export const SummaryErrors = {
  /** 403 `feature_disabled` with `feature: ai_features`: AI features are off for the workspace. */
  featureDisabled: (): FeatureDisabled =>
    new FeatureDisabled({ feature: "ai_features", message: "AI features are not enabled for this workspace" }),
  /** 404 `attachment_not_found`: unknown, in another workspace, or not visible to the caller. */
  attachmentNotFound: (id: string): FailedWithBody => coded(404, "attachment_not_found", `Attachment ${id} not found`),
  /** 404 `summary_not_found`: the attachment has no summary yet. */
  summaryNotFound: (id: string): FailedWithBody =>
    coded(404, "summary_not_found", `Attachment ${id} has no summary yet; request one with POST`),
  /** 422 `attachment_not_summarizable`, saying why. */
  notSummarizable: (message: string): FailedWithBody => coded(422, "attachment_not_summarizable", message),
  /** 502 `summary_failed`: nothing was charged; a later request generates anew. */
  summaryFailed: (): FailedWithBody =>
    coded(502, "summary_failed", "The summary could not be generated; nothing was charged. You may retry."),
  /** 402 `insufficient_credits` (not in the spec's table; see DECISIONS.md): the balance is below the price. */
  insufficientCredits: (required: number, balance: number): FailedWithBody =>
    new FailedWithBody({
      status: 402,
      body: {
        detail: {
          code: "insufficient_credits",
          message: `This summary costs ${required} AI credits; the workspace has ${balance}`,
          required,
          balance
        }
      }
    }),
  /** 429 `rate_limit_exceeded` with `Retry-After` (seconds until the window ends). */
  rateLimited: (limit: number, scope: "caller" | "workspace", retryAfter: number): FailedWithBody =>
    new FailedWithBody({
      status: 429,
      body: {
        detail: {
          error: "rate_limit_exceeded",
          message: scope === "caller"
            ? `At most ${limit} summary requests per minute per user or API key; retry in ${retryAfter} s`
            : `At most ${limit} summary requests per minute per workspace; retry in ${retryAfter} s`,
          limit,
          scope,
          retry_after: retryAfter
        }
      },
      headers: { "retry-after": String(retryAfter) }
    }),
  /** 503 `rate_limit_unavailable`: the request counter could not be read; retry shortly. */
  rateLimitUnavailable: (): FailedWithBody =>
    new FailedWithBody({
      status: 503,
      body: { detail: { error: "rate_limit_unavailable", message: "Summary requests cannot be counted right now; retry shortly" } },
      headers: { "retry-after": "1" }
    })
}
