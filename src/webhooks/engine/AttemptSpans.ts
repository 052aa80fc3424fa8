import { Clock, Context, Effect, Exit, Option, Tracer } from "effect"
import { traceContextOf, traceparentOf } from "../../kernel/TraceContext.ts"
import type { WebhookEndpointRecord } from "../../ports/WebhookEndpointStore.ts"
import type { Outcome } from "../DeliveryAttempt.ts"
import type { Leased } from "./Leased.ts"

/** One delivery attempt's span, open while its request is in flight. */
export interface AttemptSpan {
  /** The `traceparent` to send, when the endpoint opted in (`propagate_trace_context`). */
  readonly traceparent: string | undefined
  /** Ends the span with what the attempt came to (none: it was let go unsent, or failed as a defect). */
  readonly end: (outcome: Outcome | undefined) => void
}

/** What an attempt is when no tracer is installed: nothing, sent without `traceparent`. */
const UNTRACED: AttemptSpan = { traceparent: undefined, end: () => undefined }

/**
 * Resolves to the maker of delivery attempts' spans, for the pump (which runs a request per
 * callback, without a fiber of its own, so it opens and ends spans by hand). Each attempt is a
 * client span `WebhookDelivery.attempt`, a child of the span that appended its event (stored with
 * the outbox event and the delivery), so one trace shows the request, its event and every attempt
 * and retry. Without a tracer installed it makes nothing: tracing off costs one comparison per run.
 */
export const makeAttemptSpans: Effect.Effect<(leased: Leased, endpoint: WebhookEndpointRecord) => AttemptSpan> = Effect
  .gen(function*() {
    const tracer = yield* Effect.tracer
    if (tracer === Tracer.nativeTracer) return () => UNTRACED
    const clock = yield* Clock.Clock
    return ({ delivery }: Leased, endpoint: WebhookEndpointRecord): AttemptSpan => {
      const parent = traceContextOf(delivery.envelope)
      const span = tracer.span({
        name: "WebhookDelivery.attempt",
        parent: Option.fromUndefinedOr(parent),
        annotations: Context.empty(),
        links: [],
        startTime: clock.currentTimeNanosUnsafe(),
        kind: "client",
        root: parent === undefined,
        sampled: parent?.sampled ?? true
      })
      span.attribute("tenant.id", delivery.tenant_id)
      span.attribute("webhook.endpoint_id", endpoint.id)
      span.attribute("webhook.delivery_id", delivery.id)
      span.attribute("webhook.event_type", delivery.event_type)
      span.attribute("webhook.event_id", delivery.event_id)
      span.attribute("webhook.attempt", delivery.attempt_number + 1)
      span.attribute("http.request.method", "POST")
      return {
        traceparent: endpoint.propagate_trace_context ? traceparentOf(span) : undefined,
        end: (outcome: Outcome | undefined) => {
          if (outcome?.status_code !== null && outcome?.status_code !== undefined) {
            span.attribute("http.response.status_code", outcome.status_code)
          }
          span.attribute("webhook.outcome", outcome === undefined ? "not_sent" : outcome.ok ? "delivered" : "failed")
          span.end(
            clock.currentTimeNanosUnsafe(),
            outcome === undefined || outcome.ok ? Exit.void : Exit.fail(new Error(outcome.error))
          )
        }
      }
    }
  })
