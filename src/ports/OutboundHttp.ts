import { Context, Effect, type Exit, Schema } from "effect"

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
 * An answer whose body is still arriving (`stream`): read the body or cancel it, which ends the
 * exchange. The body errors with an `OutboundError` when the exchange fails midway (`TooLarge` past
 * `maxResponseBytes`, `Timeout`, `Connection`).
 */
export interface OutboundStreamed {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly body: ReadableStream<Uint8Array>
}

/**
 * An outbound request failed before a complete answer: `UrlNotAllowed` (not http(s), or an
 * address that is private, loopback, link-local or otherwise not public, unless allowed, or a
 * name that does not resolve), `Timeout`, `Connection` (refused, reset, TLS), `TooLarge`.
 * `message` may be shown to the tenant whose URL it was, so it never names an address the URL's
 * host resolved to (`it resolves to a loopback address`); `detail`, when there is more to say,
 * says it all for the host's log (`vm resolves to 127.0.0.1, loopback`).
 */
export class OutboundError extends Schema.TaggedError<OutboundError>()("OutboundError", {
  reason: Schema.Literals(["UrlNotAllowed", "Timeout", "Connection", "TooLarge"]),
  message: Schema.String,
  detail: Schema.optional(Schema.String),
  timeMs: Schema.optional(Schema.Number),
  /**
   * True when the request had left on a connection before it failed (timed out, or the connection
   * dropped before the answer ended): the server may have acted on it. Absent when it never left.
   */
  sent: Schema.optional(Schema.Boolean)
}) {}

/**
 * Logs what a failed request's `detail` holds back from the tenant: a refused URL as a warning (the
 * host's allow list may be wrong), other failures at debug level (a receiver that is down would
 * otherwise log once per delivery attempt); nothing when there is no detail.
 */
export const logOutboundDetail = (error: OutboundError): Effect.Effect<void> => {
  if (error.detail === undefined) return Effect.void
  const line = `outbound request failed (${error.reason}): ${error.detail}`
  return error.reason === "UrlNotAllowed" ? Effect.logWarning(line) : Effect.logDebug(line)
}

/**
 * Makes `request`, calling `done` once with what it came to (possibly before returning, when the URL
 * is refused at once); the returned function abandons it, after which `done` is not called.
 */
export type OutboundSend = (
  request: OutboundRequest,
  done: (result: Exit.Exit<OutboundResponse, OutboundError>) => void
) => () => void

/**
 * The guarded HTTP client every tenant-supplied URL goes through. `send` is the same request
 * answered through a callback: the webhook engine keeps dozens of deliveries in flight with it
 * without a fiber for each.
 */
export class OutboundHttp extends Context.Service<OutboundHttp, {
  readonly request: (request: OutboundRequest) => Effect.Effect<OutboundResponse, OutboundError>
  readonly send: OutboundSend
  /**
   * The same request answered as soon as its status and headers arrive, the body streamed (a large
   * download never held whole). A declared `Content-Length` over `maxResponseBytes` fails at once
   * with `TooLarge`; `timeoutMs` bounds the whole exchange, body included.
   */
  readonly stream: (request: OutboundRequest) => Effect.Effect<OutboundStreamed, OutboundError>
}>()("omnichannel-core/ports/OutboundHttp") {}

/** An outbound client as a host may hand one over: `send` and `stream` are optional. */
export interface OutboundClient {
  readonly request: OutboundHttp["Service"]["request"]
  readonly send?: OutboundSend
  readonly stream?: OutboundHttp["Service"]["stream"]
}

/**
 * `client` as the port's service: a client without `send` gets one that runs its `request`, and one
 * without `stream` gets its `request`'s whole answer as a stream, so a custom client only has to
 * write `request`. A failure's `detail` is logged by the fiber that asked (`send` has no fiber: its
 * caller logs).
 */
export const outboundHttpOf = (client: OutboundClient): OutboundHttp["Service"] => {
  const request: OutboundHttp["Service"]["request"] = (outbound) => Effect.tapError(client.request(outbound), logOutboundDetail)
  const stream = client.stream
  return OutboundHttp.of({
    request,
    stream: stream === undefined
      ? (outbound) =>
        Effect.map(request(outbound), (response) => ({
          status: response.status,
          headers: response.headers,
          body: new ReadableStream<Uint8Array>({
            start: (controller) => {
              if (response.body.byteLength > 0) controller.enqueue(response.body)
              controller.close()
            }
          })
        }))
      : (outbound) => Effect.tapError(stream(outbound), logOutboundDetail),
    send: client.send ?? ((outbound, done) => {
      // The fiber's own exit is the request's, caught: a runtime reports a fiber that fails unobserved.
      const fiber = Effect.runFork(Effect.exit(client.request(outbound)))
      let abandoned = false
      fiber.addObserver((exit) => {
        if (!abandoned) done(exit._tag === "Success" ? exit.value : exit as Exit.Exit<never>)
      })
      return () => {
        abandoned = true
        fiber.interruptUnsafe()
      }
    })
  })
}
