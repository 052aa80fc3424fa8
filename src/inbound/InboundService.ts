import { Context, Effect, Layer, Option } from "effect"
import type { LimitedBody, PayloadTooLarge } from "../http/RequestBody.ts"
import { BadRequest } from "../kernel/ApiError.ts"
import { newId } from "../kernel/Id.ts"
import { constantTimeEqual } from "../kernel/Secret.ts"
import { InboundSignal } from "../kernel/WorkSignal.ts"
import type { StorageError } from "../kernel/StorageError.ts"
import { now } from "../kernel/Timestamp.ts"
import { EmailService } from "../email/EmailService.ts"
import { BlobStore, type BlobStoreError } from "../ports/BlobStore.ts"
import { InboundStore } from "../ports/InboundStore.ts"
import { ChatappWebhookSettings } from "./ChatappWebhookSettings.ts"
import { verifyHubSignature } from "./HubSignature.ts"
import { receivedEmailKey } from "./ReceivedEmailBlobs.ts"

/** How a `POST /webhooks/chatapp` ended: stored (answer 200) or refused for its signature (401). */
export type ReceiveOutcome = { readonly stored: true; readonly id: string } | { readonly stored: false }

/** The edge of inbound traffic: checks what arrives and keeps it, durably, before it is answered. */
export class InboundService extends Context.Service<InboundService, {
  /**
   * Checks the signature over `body` exactly as received and stores the payload for background
   * processing. A bad or missing signature stores nothing.
   */
  readonly receiveChatapp: (
    body: Uint8Array<ArrayBuffer>,
    signature: string | null,
    contentType: string | null
  ) => Effect.Effect<ReceiveOutcome, StorageError>
  /** Whether `authorization` opens the inbound route of email integration `integrationId` (checked before a body is read). */
  readonly authenticateEmail: (integrationId: string, authorization: string | null) => Effect.Effect<boolean, StorageError>
  /**
   * Checks the inbound secret of email integration `integrationId` (`Authorization: Bearer …`) and
   * stores the received email for background processing: its bytes streamed into the blob store as
   * they arrive (`receivedEmailKey`), then its payload row. A wrong secret, or an unknown or
   * disabled integration, stores nothing (and says no more than that); so does a body past its
   * limit, one that broke off, or an empty one (`BadRequest`).
   */
  readonly receiveEmail: (
    integrationId: string,
    authorization: string | null,
    body: LimitedBody,
    contentType: string | null
  ) => Effect.Effect<ReceiveOutcome, StorageError | BlobStoreError | PayloadTooLarge | BadRequest>
  /** The answer to the operator's subscription handshake: the challenge when mode and token match. */
  readonly handshake: (query: URLSearchParams) => Option.Option<string>
}>()("omnichannel-core/inbound/InboundService") {
  static readonly layer = Layer.effect(
    InboundService,
    Effect.gen(function*() {
      const store = yield* InboundStore
      const settings = yield* ChatappWebhookSettings
      const email = yield* EmailService
      const signal = yield* InboundSignal
      const blobs = yield* BlobStore
      const keep = Effect.fnUntraced(function*(
        id: string,
        source: "chatapp" | "email",
        routeKey: string | null,
        body: Uint8Array,
        contentType: string | null
      ) {
        const at = yield* now
        yield* store.insert({
          id,
          source,
          route_key: routeKey,
          body,
          content_type: contentType,
          received_at: at,
          status: "pending",
          attempts: 0,
          next_attempt_at: at,
          lease_until: null,
          processed_at: null,
          note: null
        })
        // A worker of this process waiting for work starts on it now.
        signal.notify()
        return { stored: true, id } as const
      })
      return InboundService.of({
        receiveChatapp: Effect.fn("InboundService.receiveChatapp")(function*(body, signature, contentType) {
          if (!(yield* verifyHubSignature(settings.appSecret, signature, body))) return { stored: false } as const
          return yield* keep(yield* newId, "chatapp", null, body, contentType)
        }),
        authenticateEmail: (integrationId, authorization) => email.authenticateInbound(integrationId, authorization),
        receiveEmail: Effect.fn("InboundService.receiveEmail")(function*(integrationId, authorization, body, contentType) {
          if (!(yield* email.authenticateInbound(integrationId, authorization))) {
            yield* Effect.promise(() => body.stream.cancel().catch(() => undefined))
            return { stored: false } as const
          }
          const id = yield* newId
          const key = receivedEmailKey(id)
          const remove = blobs.delete(key).pipe(Effect.ignore)
          // A put is atomic: a body cut off or past its limit leaves nothing behind.
          const written = yield* Effect.result(blobs.put(key, body.stream))
          if (written._tag === "Failure") return yield* Effect.fail(body.failure() ?? written.failure)
          if (written.success.size === 0) {
            yield* remove
            return yield* new BadRequest({ message: "The email is empty" })
          }
          // The row holds no body: the processor reads the bytes from the blob store.
          return yield* keep(id, "email", integrationId.toLowerCase(), new Uint8Array(0), contentType).pipe(
            Effect.tapError(() => remove)
          )
        }),
        handshake: (query) => {
          const token = query.get("hub.verify_token") ?? ""
          const challenge = query.get("hub.challenge")
          return query.get("hub.mode") === "subscribe" && challenge !== null &&
              constantTimeEqual(token, settings.verifyToken)
            ? Option.some(challenge)
            : Option.none()
        }
      })
    })
  )
}
