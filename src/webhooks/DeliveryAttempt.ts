import { Effect } from "effect"
import { type EventEnvelope, envelopeJson } from "../kernel/EventEnvelope.ts"
import { currentTraceparent } from "../kernel/TraceContext.ts"
import { WallClock } from "../kernel/WallClock.ts"
import { HmacSigner } from "../ports/HmacSigner.ts"
import { type OutboundError, OutboundHttp, type OutboundRequest, type OutboundResponse } from "../ports/OutboundHttp.ts"
import type { WebhookEndpointRecord } from "../ports/WebhookEndpointStore.ts"
import { sign, type SignatureHeaders } from "./Signature.ts"

/** What one request to an endpoint came to: a 2xx in time, or why not. */
export interface Outcome {
  readonly ok: boolean
  readonly status_code: number | null
  readonly time_ms: number | null
  readonly error: string
}

/** The most of a receiver's answer that is read; the rest is cut off. */
const MAX_RESPONSE_BYTES = 64 * 1024

/**
 * The POST delivering `body` to `endpoint`, with its signature headers, and `traceparent` when given
 * (only to an endpoint that opted in: see `propagate_trace_context`).
 */
export const requestOf = (
  endpoint: WebhookEndpointRecord,
  body: string,
  signature: SignatureHeaders,
  traceparent?: string
): OutboundRequest => ({
  method: "POST",
  url: endpoint.url,
  headers: {
    "content-type": "application/json",
    "user-agent": "omnichannel-core-webhooks/1",
    ...signature,
    ...(endpoint.authorization_header === null ? {} : { authorization: endpoint.authorization_header }),
    ...(traceparent === undefined ? {} : { traceparent })
  },
  body,
  timeoutMs: endpoint.timeout_seconds * 1000,
  maxResponseBytes: MAX_RESPONSE_BYTES
})

/** An answer's outcome: only a 2xx succeeds, and a redirect is not followed. */
export const answered = (response: OutboundResponse): Outcome =>
  response.status >= 200 && response.status < 300
    ? { ok: true, status_code: response.status, time_ms: Math.round(response.timeMs), error: "" }
    : {
      ok: false,
      status_code: response.status,
      time_ms: Math.round(response.timeMs),
      error: response.status >= 300 && response.status < 400
        ? `HTTP ${response.status}: redirects are not followed`
        : `HTTP ${response.status}`
    }

/** The outcome of a request that got no answer (refused address, timeout, connection). */
export const unanswered = (error: OutboundError): Outcome => ({
  ok: false,
  status_code: null,
  time_ms: error.timeMs === undefined ? null : Math.round(error.timeMs),
  error: `${error.reason}: ${error.message}`
})

/**
 * One-off requests (verification): resolves to a function that signs an envelope for an endpoint
 * at the wall clock's now and posts it once.
 */
export const makeAttemptOnce = Effect.gen(function*() {
  const signer = yield* HmacSigner
  const outbound = yield* OutboundHttp
  return Effect.fnUntraced(function*(endpoint: WebhookEndpointRecord, envelope: EventEnvelope) {
    const body = envelopeJson(envelope)
    const wall = yield* WallClock
    const signature = yield* sign(
      { secret: endpoint.secret, messageId: envelope.id, timestampSeconds: wall.nowMillis() / 1000, body },
      signer
    )
    // The request is a span of its own (a child of the request or job asking for it); the receiver
    // sees its `traceparent` only when the endpoint opted in.
    return yield* Effect.gen(function*() {
      const traceparent = endpoint.propagate_trace_context ? yield* currentTraceparent : undefined
      return yield* outbound.request(requestOf(endpoint, body, signature, traceparent)).pipe(
        Effect.map(answered),
        Effect.catchTag("OutboundError", (e) => Effect.succeed(unanswered(e)))
      )
    }).pipe(Effect.withSpan("WebhookEndpoint.request", {
      kind: "client",
      attributes: { "tenant.id": endpoint.tenant_id, "webhook.endpoint_id": endpoint.id, "webhook.event_type": envelope.type }
    }))
  })
})
