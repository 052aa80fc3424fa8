import { Clock, Effect, Option } from "effect"
import type { DirectAnswer, DirectRoute } from "../kernel/DirectRoute.ts"
import { inMemoryResponse } from "../http/InMemoryResponse.ts"
import { limitedBody, readLimited } from "../http/RequestBody.ts"
import { LogRequests, logRequest, observeRequest, REQUEST_ID_HEADER, requestIdFrom } from "../http/RequestTelemetry.ts"
import { EMAIL_WEBHOOK_PREFIX } from "../email/EmailService.ts"
import { errorBody } from "../kernel/ApiError.ts"
import { countInboundAnswered, countInboundReceived } from "../kernel/Metrics.ts"
import { StorageError } from "../kernel/StorageError.ts"
import { tracingOn } from "../kernel/TraceContext.ts"
import { WallClock } from "../kernel/WallClock.ts"
import { InboundService } from "./InboundService.ts"

/** Largest received email the inbound route takes: 20 MB of files grow by a third in base64, plus bodies. */
export const MAX_RECEIVED_EMAIL_BYTES = 40 * 1024 * 1024

/** Where the operator's webhooks arrive, below the public URL. */
export const CHATAPP_WEBHOOK_PATH = "/webhooks/chatapp"

/** Largest operator payload accepted; real ones are a few kilobytes, batches well under this. */
export const MAX_CHATAPP_PAYLOAD_BYTES = 3 * 1024 * 1024

// The chat-app route's answers, as text for a direct route and as responses for the handler.
const RECEIVED: DirectAnswer = { status: 200, headers: { "content-type": "application/json" }, body: JSON.stringify({ received: true }) }
const INVALID_SIGNATURE: DirectAnswer = {
  status: 401,
  headers: { "content-type": "application/json" },
  body: JSON.stringify(errorBody("invalid_signature", "Invalid signature"))
}
const UNAVAILABLE_ANSWER: DirectAnswer = {
  status: 503,
  headers: { "content-type": "application/json" },
  body: JSON.stringify(errorBody("temporarily_unavailable", "Temporarily unavailable; retry"))
}
const responseOf = (answer: DirectAnswer) => inMemoryResponse(answer.status, answer.body, answer.headers)

const text = (status: number, body: string) => inMemoryResponse(status, body, { "content-type": "text/plain; charset=utf-8" })
const json = (status: number, body: unknown) => inMemoryResponse(status, JSON.stringify(body), { "content-type": "application/json" })
// A failure in the API's one error body, `{"detail": {"code", "message"}}`.
const failure = (status: number, code: string, message: string) => json(status, errorBody(code, message))
const UNAVAILABLE = () => responseOf(UNAVAILABLE_ANSWER)

/**
 * The handler of `GET` and `POST /webhooks/chatapp` and `POST /webhooks/email/{id}` (outside
 * `/api/v1`): the handshake answers the challenge as plain text; a signed payload or an email with
 * its integration's secret is stored and answered 200 before anything else happens.
 */
export const makeInboundHandler = Effect.gen(function*() {
  const context = yield* Effect.context<InboundService>()
  const service = yield* InboundService

  // `POST /webhooks/email/{id}`: one received email, raw RFC 5322, opened by the integration's secret.
  const receiveEmail = (request: Request, integrationId: string): Effect.Effect<Response> => {
    if (request.method !== "POST") return Effect.succeed(new Response(null, { status: 405, headers: { allow: "POST" } }))
    const contentType = request.headers.get("content-type")
    const mediaType = (contentType ?? "").split(";")[0]!.trim().toLowerCase()
    if (mediaType !== "message/rfc822" && mediaType !== "application/octet-stream" && mediaType !== "text/plain") {
      return Effect.succeed(
        failure(415, "unsupported_media_type", "Send the email as raw RFC 5322 bytes with Content-Type: message/rfc822")
      )
    }
    return Effect.gen(function*() {
      // The secret is checked before the body is read: a stranger's upload is not taken in.
      if (!(yield* service.authenticateEmail(integrationId, request.headers.get("authorization")))) {
        return failure(401, "invalid_credentials", "Invalid credentials")
      }
      // Streamed into storage as it arrives: the route never holds the email whole.
      const body = yield* limitedBody(request, MAX_RECEIVED_EMAIL_BYTES)
      const outcome = yield* service.receiveEmail(integrationId, request.headers.get("authorization"), body, contentType)
      return outcome.stored ? json(200, { received: true, id: outcome.id }) : failure(401, "invalid_credentials", "Invalid credentials")
    }).pipe(
      Effect.catchTags({
        PayloadTooLarge: () =>
          Effect.succeed(failure(413, "payload_too_large", `An email may be at most ${MAX_RECEIVED_EMAIL_BYTES / 1024 / 1024} MB`)),
        BadRequest: (error) => Effect.succeed(failure(400, "bad_request", error.message)),
        StorageError: () => Effect.sync(UNAVAILABLE),
        BlobStoreError: (error) =>
          Effect.logError("a received email could not be written to the blob store", error).pipe(
            Effect.map(UNAVAILABLE)
          )
      })
    )
  }

  const handle = (request: Request, url: URL): Effect.Effect<Response> => {
    if (url.pathname.startsWith(EMAIL_WEBHOOK_PREFIX)) {
      return receiveEmail(request, decodeURIComponent(url.pathname.slice(EMAIL_WEBHOOK_PREFIX.length)))
        .pipe(Effect.tap(countInboundReceived("email")))
    }
    if (url.pathname !== CHATAPP_WEBHOOK_PATH) return Effect.succeed(failure(404, "not_found", "Not Found"))
    if (request.method === "GET") {
      return Effect.succeed(Option.match(service.handshake(url.searchParams), {
        onNone: () => text(403, "Forbidden"),
        onSome: (challenge) => text(200, challenge)
      }))
    }
    if (request.method !== "POST") {
      return Effect.succeed(new Response(null, { status: 405, headers: { allow: "GET, POST" } }))
    }
    return readLimited(request, MAX_CHATAPP_PAYLOAD_BYTES).pipe(
      Effect.flatMap((body) =>
        service.receiveChatapp(
          body as Uint8Array<ArrayBuffer>,
          request.headers.get("x-hub-signature-256"),
          request.headers.get("content-type")
        )
      ),
      Effect.map((outcome) => responseOf(outcome.stored ? RECEIVED : INVALID_SIGNATURE)),
      Effect.catchTags({
        PayloadTooLarge: () => Effect.succeed(failure(413, "payload_too_large", "Payload too large")),
        BadRequest: (error) => Effect.succeed(failure(400, "bad_request", error.message)),
        // The operator retries what was not answered 2xx: a brief storage failure loses nothing.
        StorageError: () => Effect.sync(UNAVAILABLE)
      }),
      Effect.tap(countInboundReceived("chatapp"))
    )
  }

  const routeOf = (pathname: string) =>
    pathname.startsWith(EMAIL_WEBHOOK_PREFIX)
      ? `${EMAIL_WEBHOOK_PREFIX}{email_integration_id}`
      : pathname === CHATAPP_WEBHOOK_PATH
      ? CHATAPP_WEBHOOK_PATH
      : undefined

  const runWith = Effect.runPromiseWith(context)
  return (request: Request): Promise<Response> => {
    const url = new URL(request.url)
    return runWith(observeRequest(request, routeOf(url.pathname), () => handle(request, url)))
  }
})

/**
 * `POST /webhooks/chatapp` as a direct route (`DirectRoute`): the same answers, metrics and request
 * log line as the handler, without a web `Request`, `Response` or a fiber per request. Not offered
 * (undefined) with tracing on, where the handler's server span is wanted, or when the signer cannot
 * verify on the calling thread.
 */
export const makeChatappDirectRoute: Effect.Effect<DirectRoute | undefined, never, InboundService> = Effect.gen(function*() {
  const receiveNow = (yield* InboundService).receiveChatappNow
  if (receiveNow === undefined || (yield* tracingOn)) return undefined
  const clock = yield* Clock.Clock
  const wall = yield* WallClock
  const logRequests = yield* LogRequests
  const runSync = Effect.runSyncWith(yield* Effect.context<never>())
  const answered = (answer: DirectAnswer, requestId: string, started: number): DirectAnswer => {
    runSync(Effect.andThen(
      countInboundAnswered("chatapp", answer.status),
      logRequests ? logRequest(requestId, "POST", CHATAPP_WEBHOOK_PATH, answer.status, wall.nowMillis() - started, undefined) : Effect.void
    ))
    return { ...answer, headers: { ...answer.headers, [REQUEST_ID_HEADER]: requestId } }
  }
  return {
    method: "POST",
    path: CHATAPP_WEBHOOK_PATH,
    maxBytes: MAX_CHATAPP_PAYLOAD_BYTES,
    handle: async (body, header) => {
      const started = wall.nowMillis()
      const requestId = requestIdFrom(header(REQUEST_ID_HEADER))
      try {
        const outcome = await receiveNow(body, header("x-hub-signature-256") ?? null, header("content-type") ?? null, clock.currentTimeMillisUnsafe())
        return answered(outcome.stored ? RECEIVED : INVALID_SIGNATURE, requestId, started)
      } catch (error) {
        // The operator retries what was not answered 2xx: a brief storage failure loses nothing.
        if (error instanceof StorageError) return answered(UNAVAILABLE_ANSWER, requestId, started)
        throw error
      }
    }
  }
})
