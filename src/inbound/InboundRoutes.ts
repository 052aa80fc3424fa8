import { Effect, Option } from "effect"
import { readLimited } from "../http/RequestBody.ts"
import { InboundService } from "./InboundService.ts"

/** Where the operator's webhooks arrive, below the public URL. */
export const CHATAPP_WEBHOOK_PATH = "/webhooks/chatapp"

/** Largest operator payload accepted; real ones are a few kilobytes, batches well under this. */
export const MAX_CHATAPP_PAYLOAD_BYTES = 3 * 1024 * 1024

const text = (status: number, body: string, headers: Record<string, string> = {}) =>
  new Response(body, { status, headers: { "content-type": "text/plain; charset=utf-8", ...headers } })
const json = (status: number, body: unknown) =>
  new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } })

/**
 * The handler of `GET` and `POST /webhooks/chatapp` (outside `/api/v1`): the handshake answers the
 * challenge as plain text; a signed payload is stored and answered 200 before anything else happens.
 */
export const makeInboundHandler = Effect.gen(function*() {
  const context = yield* Effect.context<InboundService>()
  const service = yield* InboundService

  const handle = (request: Request): Effect.Effect<Response> => {
    const url = new URL(request.url)
    if (url.pathname !== CHATAPP_WEBHOOK_PATH) return Effect.succeed(json(404, { detail: "Not Found" }))
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
      Effect.map((outcome) => outcome.stored ? json(200, { received: true }) : json(401, { detail: "Invalid signature" })),
      Effect.catchTags({
        PayloadTooLarge: () => Effect.succeed(json(413, { detail: "Payload too large" })),
        BadRequest: (error) => Effect.succeed(json(400, { detail: error.message })),
        // The operator retries what was not answered 2xx: a brief storage failure loses nothing.
        StorageError: () => Effect.succeed(json(503, { detail: "Temporarily unavailable; retry" }))
      })
    )
  }

  return (request: Request): Promise<Response> => Effect.runPromiseWith(context)(handle(request))
})
