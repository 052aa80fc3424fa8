import { Effect } from "effect"
import { type EventEnvelope, envelopeJson } from "../kernel/EventEnvelope.ts"
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

/** The POST delivering `body` to `endpoint`, with its signature headers. */
export const requestOf = (endpoint: WebhookEndpointRecord, body: string, signature: SignatureHeaders): OutboundRequest => ({
  method: "POST",
  url: endpoint.url,
  headers: {
    "content-type": "application/json",
    "user-agent": "omnichannel-core-webhooks/1",
    ...signature,
    ...(endpoint.authorization_header === null ? {} : { authorization: endpoint.authorization_header })
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
    return yield* outbound.request(requestOf(endpoint, body, signature)).pipe(
      Effect.map(answered),
      Effect.catchTag("OutboundError", (e) => Effect.succeed(unanswered(e)))
    )
  })
})
