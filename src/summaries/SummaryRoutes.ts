import { Effect } from "effect"
import { route } from "../http/Route.ts"
import { isUuid } from "../kernel/Id.ts"
import { MAX_BYTES, PRICES, RATE_LIMITS, Summary, SummaryErrors, SummaryResponse, summaryResponseStatus, SummaryService } from "./SummaryService.ts"

const MB = 1024 * 1024

// The spec's "Summary errors", as the OpenAPI document describes them.
const FEATURE_DISABLED = "`feature_disabled` (`{detail: {code, feature: \"ai_features\", message}}`): AI features are off for the workspace; or the plain-string body of a missing scope"
const NOT_FOUND = "`{detail: {code, message}}`: `attachment_not_found` (unknown, in another workspace, or an email attachment's own id)"

// A malformed id names no attachment: the summary routes' own 404 body, like an unknown one.
const attachmentId = (params: Readonly<Record<string, string>>) => {
  const id = params.attachment_id ?? ""
  return isUuid(id) ? Effect.succeed(id.toLowerCase()) : Effect.fail(SummaryErrors.attachmentNotFound(id))
}

/** Every route of the summaries area. */
export const summaryRoutes = [
  route({
    method: "GET",
    path: "/attachments/{attachment_id}/summary",
    operationId: "getAttachmentSummary",
    summary:
      "Get the AI summary of an attachment (status ok, pending or failed). Its text is AI-generated from customer content: treat it as untrusted plain text",
    tag: "AI summaries",
    auth: { kind: "api_key", scopes: ["messages:read"] },
    response: { status: 200, schema: Summary, description: "The summary" },
    errors: [403, 404],
    errorDescriptions: {
      403: FEATURE_DISABLED,
      404: `${NOT_FOUND}, or \`summary_not_found\` (none requested yet)`
    },
    handle: ({ principal, params }) =>
      Effect.gen(function*() {
        return yield* (yield* SummaryService).getForAttachment(principal.tenantId, yield* attachmentId(params))
      })
  }),
  route({
    method: "POST",
    path: "/attachments/{attachment_id}/summary",
    operationId: "requestAttachmentSummary",
    summary:
      `Request an AI summary of an inbound image (up to ${MAX_BYTES.image / MB} MB, ${PRICES.image} credits) or PDF (up to ${MAX_BYTES.pdf / MB} MB, first 10 pages, ${PRICES.pdf} credits). No body. Idempotent: an existing summary is returned without charge (200), one being generated answers 202 (poll GET). At most ${RATE_LIMITS.perCaller} requests a minute per API key and ${RATE_LIMITS.perWorkspace} per workspace (429 with Retry-After)`,
    tag: "AI summaries",
    auth: { kind: "api_key", scopes: ["conversations:update"] },
    response: {
      status: 201,
      schema: SummaryResponse,
      description: "A new summary; credits_charged is its price",
      statusOf: summaryResponseStatus,
      alternatives: {
        200: "The summary existed already; nothing charged",
        202: "The summary is being generated (status pending); nothing charged"
      }
    },
    errors: [402, 403, 404, 422, 429, 502, 503],
    errorDescriptions: {
      402: "`insufficient_credits` (`{detail: {code, message, required, balance}}`): the workspace's AI credits are below the price; nothing generated",
      403: FEATURE_DISABLED,
      404: NOT_FOUND,
      422: "`attachment_not_summarizable` (`{detail: {code, message}}`): not an inbound image or PDF, too large, or not offered here",
      429: "`{detail: {error: \"rate_limit_exceeded\", message, scope, limit, retry_after}}` with `Retry-After` (seconds)",
      502: "`summary_failed` (`{detail: {code, message}}`): generation failed, nothing charged; a later request generates anew",
      503: "`{detail: {error: \"rate_limit_unavailable\", message}}`: requests cannot be counted right now; retry shortly"
    },
    handle: ({ principal, params }) =>
      Effect.gen(function*() {
        return yield* (yield* SummaryService).requestForAttachment(
          principal.tenantId,
          { kind: "api_key", id: principal.keyId },
          yield* attachmentId(params)
        )
      })
  })
]
