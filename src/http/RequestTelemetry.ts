import { Context, Effect } from "effect"
import { newIdNow } from "../kernel/Id.ts"
import { parseTraceparent } from "../kernel/TraceContext.ts"
import { WallClock } from "../kernel/WallClock.ts"

/**
 * Whether each HTTP request is logged once, when answered (`Effect.logInfo("request")` annotated with
 * `request_id`, `method`, `route`, `status`, `duration_ms` and `tenant_id`). Off unless the host
 * turns it on (`make({ logRequests: true })`).
 */
export const LogRequests = Context.Reference<boolean>("omnichannel-core/http/LogRequests", {
  defaultValue: () => false
})

/** What a handler learns while serving a request, for its span and log line. */
export interface RequestFacts {
  /** The tenant the request acted in, once authenticated. */
  tenantId: string | undefined
}

/** The header carrying a request's id, accepted from the caller or made, and echoed on the answer. */
export const REQUEST_ID_HEADER = "x-request-id"

// A caller's id is kept only when short and plain: it goes into logs and back into a header.
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/

/** The caller's `X-Request-Id` when it is 1–128 letters, digits, `.`, `_`, `:` or `-`; a new UUID otherwise. */
export const requestIdOf = (request: Request): string => requestIdFrom(request.headers.get(REQUEST_ID_HEADER))

/** `requestIdOf` for the header's value as sent (null or undefined when absent). */
export const requestIdFrom = (sent: string | null | undefined): string =>
  sent !== null && sent !== undefined && REQUEST_ID.test(sent) ? sent : newIdNow()

// A 5xx answer, carried out of the span as a failure so the span is marked as an error.
class ServerErrorAnswer {
  readonly message: string
  constructor(readonly response: Response) {
    this.message = `HTTP ${response.status}`
  }
}

const withRequestId = (response: Response, requestId: string): Response => {
  try {
    response.headers.set(REQUEST_ID_HEADER, requestId)
    return response
  } catch {
    // Immutable headers (a response made elsewhere): copied with the id added.
    const headers = new Headers(response.headers)
    headers.set(REQUEST_ID_HEADER, requestId)
    return new Response(response.body, { status: response.status, statusText: response.statusText, headers })
  }
}

/** The one log line of an answered request (see `LogRequests`). */
export const logRequest = (
  requestId: string,
  method: string,
  route: string | undefined,
  status: number,
  durationMs: number,
  tenantId: string | undefined
): Effect.Effect<void> =>
  Effect.logInfo("request").pipe(Effect.annotateLogs({
    request_id: requestId,
    method,
    route: route ?? null,
    status,
    duration_ms: Math.round(durationMs * 10) / 10,
    tenant_id: tenantId ?? null
  }))

/**
 * Serves `request` with `handle` inside a server span named by its method and route template
 * (`POST /api/v1/contacts/{contact_id}`; never the raw path, which holds ids and tokens), continuing
 * the caller's W3C `traceparent`. The span carries the status and tenant id; a 5xx marks it failed.
 * The answer carries the request id; with `LogRequests`, one log line records the request.
 */
export const observeRequest = <R>(
  request: Request,
  route: string | undefined,
  handle: (facts: RequestFacts) => Effect.Effect<Response, never, R>
): Effect.Effect<Response, never, R> =>
  // Every request passes here: its settings are read from the fiber at once, and the steps are few.
  Effect.withFiber((fiber) => {
    const wall = fiber.getRef(WallClock)
    const logRequests = fiber.getRef(LogRequests)
    const started = wall.nowMillis()
    const requestId = requestIdOf(request)
    const facts: RequestFacts = { tenantId: undefined }
    const method = request.method
    const parent = parseTraceparent(request.headers.get("traceparent"))
    const served = Effect.flatMap(handle(facts), (response) => {
      const annotated = Effect.annotateCurrentSpan({
        "http.response.status_code": response.status,
        ...(facts.tenantId === undefined ? {} : { "tenant.id": facts.tenantId })
      })
      const recorded = logRequests
        ? Effect.andThen(
          annotated,
          logRequest(requestId, method, route, response.status, wall.nowMillis() - started, facts.tenantId)
        )
        : annotated
      return Effect.andThen(recorded, response.status >= 500 ? Effect.fail(new ServerErrorAnswer(response)) : Effect.succeed(response))
    })
    return served.pipe(
      Effect.withSpan(route === undefined ? method : `${method} ${route}`, {
        kind: "server",
        ...(parent === undefined ? {} : { parent }),
        attributes: {
          "http.request.method": method,
          ...(route === undefined ? {} : { "http.route": route }),
          "request.id": requestId
        }
        // Its stack would always point here: taking it cost a stack trace per request.
      }, { captureStackTrace: false }),
      Effect.catch((answer: ServerErrorAnswer) => Effect.succeed(answer.response)),
      Effect.map((response) => withRequestId(response, requestId))
    )
  })
