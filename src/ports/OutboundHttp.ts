import { Context, type Effect, Schema } from "effect"

/** A request the service makes for a tenant (a webhook delivery, a verification, a from-url fetch). */
export interface OutboundRequest {
  readonly method: "GET" | "POST"
  readonly url: string
  readonly headers: Readonly<Record<string, string>>
  readonly body?: string | Uint8Array
  /** Whole-exchange limit in real milliseconds (network timeouts never follow the test clock). */
  readonly timeoutMs: number
  /** Largest response body kept; a longer one fails with `TooLarge`. Default 1 MiB. */
  readonly maxResponseBytes?: number
}

/** The answer, whatever its status: a 3xx is returned as it is, never followed. */
export interface OutboundResponse {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly body: Uint8Array
  /** Milliseconds from sending to the end of the response. */
  readonly timeMs: number
}

/**
 * An outbound request failed before a complete answer: `UrlNotAllowed` (not http(s), or an
 * address that is private, loopback, link-local or otherwise not public, unless allowed, or a
 * name that does not resolve), `Timeout`, `Connection` (refused, reset, TLS), `TooLarge`.
 */
export class OutboundError extends Schema.TaggedError<OutboundError>()("OutboundError", {
  reason: Schema.Literals(["UrlNotAllowed", "Timeout", "Connection", "TooLarge"]),
  message: Schema.String,
  timeMs: Schema.optional(Schema.Number)
}) {}

/** The guarded HTTP client every tenant-supplied URL goes through. */
export class OutboundHttp extends Context.Service<OutboundHttp, {
  readonly request: (request: OutboundRequest) => Effect.Effect<OutboundResponse, OutboundError>
}>()("omnichannel-core/ports/OutboundHttp") {}
