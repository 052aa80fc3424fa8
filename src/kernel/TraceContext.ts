import { Context, Effect, Option, Tracer } from "effect"
import type { EventEnvelope } from "./EventEnvelope.ts"

/**
 * W3C trace context (`traceparent`) as the service carries it: read from an incoming request,
 * stored with each outbox event, and sent on outgoing requests that may carry it. Without a tracer
 * installed (Effect's native tracer), nothing is read, stored or sent, so tracing off costs nothing.
 */

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/

/** The span a `traceparent` value names (version 00 only), or undefined when it is malformed or all zero. */
export const parseTraceparent = (value: string | null | undefined): Tracer.ExternalSpan | undefined => {
  if (value === null || value === undefined) return undefined
  const match = TRACEPARENT.exec(value.trim())
  if (match === null) return undefined
  const [, traceId, spanId, flags] = match as unknown as [string, string, string, string]
  if (/^0+$/.test(traceId) || /^0+$/.test(spanId)) return undefined
  return Tracer.externalSpan({ traceId, spanId, sampled: (parseInt(flags, 16) & 1) === 1 })
}

/** The `traceparent` value naming `span`. */
export const traceparentOf = (span: Tracer.AnySpan): string =>
  `00-${span.traceId.padStart(32, "0")}-${span.spanId}-${span.sampled ? "01" : "00"}`

/** Whether spans made here go anywhere: a tracer other than Effect's native one is installed. */
export const tracingOn: Effect.Effect<boolean> = Effect.map(Effect.tracer, (tracer) => tracer !== Tracer.nativeTracer)

/**
 * The span this fiber runs in when it is one worth continuing: a tracer is installed, and the span
 * is neither a no-op (tracing disabled here, as in background polling) nor unsampled.
 */
export const currentTraceSpan: Effect.Effect<Tracer.AnySpan | undefined> = Effect.gen(function*() {
  if (!(yield* tracingOn)) return undefined
  const span = yield* Effect.option(Effect.currentParentSpan)
  if (Option.isNone(span)) return undefined
  if (!span.value.sampled || Context.get(span.value.annotations, Tracer.DisablePropagation)) return undefined
  return span.value
})

/** `currentTraceSpan` as a `traceparent` value. */
export const currentTraceparent: Effect.Effect<string | undefined> = Effect.map(
  currentTraceSpan,
  (span) => span === undefined ? undefined : traceparentOf(span)
)

// The trace context each event was appended under, as its store read it back. Envelopes are
// immutable and their JSON is what receivers get, so the context travels beside them, not inside.
const contexts = new WeakMap<EventEnvelope, string>()

/** Records the `traceparent` an event was appended under, for a store that read it back with the event. */
export const rememberTraceContext = (envelope: EventEnvelope, traceparent: string | null | undefined): void => {
  if (traceparent !== null && traceparent !== undefined) contexts.set(envelope, traceparent)
}

/** The span of the request (or job) that appended `envelope`, when it was traced. */
export const traceContextOf = (envelope: EventEnvelope): Tracer.ExternalSpan | undefined =>
  parseTraceparent(contexts.get(envelope))

/** The stored `traceparent` of `envelope`, as text, when it was traced. */
export const traceparentTextOf = (envelope: EventEnvelope): string | null => contexts.get(envelope) ?? null

/** The most links a background job's span keeps to the spans that caused its work. */
const MAX_LINKS = 128

/**
 * Runs `effect` as background work of its own: a root span `name`, linked to the spans that caused
 * the work (`causes`, each once, at most 128), traced even though the polling around it is not (see
 * `runWorker`), so its use cases appear as its children. Work with one cause of its own (an inbound
 * payload) names it as `parent` instead: the span is then its child, in the cause's trace.
 */
export const inJobSpan = (
  name: string,
  options: {
    readonly causes?: Iterable<Tracer.AnySpan | undefined>
    readonly parent?: Tracer.AnySpan | undefined
    readonly attributes?: Readonly<Record<string, unknown>>
  } = {}
) =>
<A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> => {
  const links: Array<Tracer.SpanLink> = []
  const seen = new Set<string>()
  for (const span of options.causes ?? []) {
    if (span === undefined || seen.has(span.spanId) || links.length >= MAX_LINKS) continue
    seen.add(span.spanId)
    links.push({ span, attributes: {} })
  }
  return effect.pipe(
    Effect.withSpan(name, {
      ...(options.parent === undefined ? { root: true } : { parent: options.parent }),
      links,
      ...(options.attributes === undefined ? {} : { attributes: options.attributes })
    }),
    Effect.withTracerEnabled(true)
  )
}

/**
 * Runs `effect` untraced: background polling that finds nothing is not worth a span, and would
 * export one every few milliseconds. Work found runs in `inJobSpan`s.
 */
export const untraced = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.withTracerEnabled(effect, false)
