import { Clock, Context, Effect, Exit, Option, Tracer } from "effect"
import { traceContextOf, traceparentOf } from "../../kernel/TraceContext.ts"
import { WallClock } from "../../kernel/WallClock.ts"
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
 * Attempt spans one worker makes per second (real time) at most. Exporting a span costs about as much
 * CPU as the rest of the attempt; past this budget attempts make none, and the recorder's span of
 * their batch counts them (`WebhookDispatcher.record`).
 */
export const ATTEMPT_SPANS_PER_SECOND = 50

/**
 * An attempt past the budget: no span of its own, so an endpoint that opted in hears the span that
 * appended the event, and its receiver still joins that trace.
 */
const unsampled = (leased: Leased, endpoint: WebhookEndpointRecord): AttemptSpan => {
  const cause = endpoint.propagate_trace_context ? traceContextOf(leased.delivery.envelope) : undefined
  return cause === undefined ? UNTRACED : { traceparent: traceparentOf(cause), end: () => undefined }
}

/**
 * Resolves to the maker of delivery attempts' spans, for the pump (which runs a request per
 * callback, without a fiber of its own, so it opens and ends spans by hand). Each attempt, within
 * `ATTEMPT_SPANS_PER_SECOND`, is a client span `WebhookDelivery.attempt`, a child of the span that
 * appended its event (stored with the outbox event and the delivery), so one trace shows the
 * request, its event and its attempts and retries. Without a tracer installed it makes nothing:
 * tracing off costs one comparison per run.
 */
export const makeAttemptSpans: Effect.Effect<(leased: Leased, endpoint: WebhookEndpointRecord) => AttemptSpan> = Effect
  .gen(function*() {
    const tracer = yield* Effect.tracer
    if (tracer === Tracer.nativeTracer) return () => UNTRACED
    const clock = yield* Clock.Clock
    const wall = yield* WallClock
    // Spans made in the current second of real time.
    let second = 0
    let made = 0
    return (leased: Leased, endpoint: WebhookEndpointRecord): AttemptSpan => {
      const now = Math.floor(wall.nowMillis() / 1000)
      if (now !== second) {
        second = now
        made = 0
      }
      if (made >= ATTEMPT_SPANS_PER_SECOND) return unsampled(leased, endpoint)
      made += 1
      const { delivery } = leased
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
