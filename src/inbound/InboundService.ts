import { Context, Effect, Layer, Option } from "effect"
import { newId } from "../kernel/Id.ts"
import { constantTimeEqual } from "../kernel/Secret.ts"
import type { StorageError } from "../kernel/StorageError.ts"
import { now } from "../kernel/Timestamp.ts"
import { InboundStore } from "../ports/InboundStore.ts"
import { ChatappWebhookSettings } from "./ChatappWebhookSettings.ts"
import { verifyHubSignature } from "./HubSignature.ts"

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
  /** The answer to the operator's subscription handshake: the challenge when mode and token match. */
  readonly handshake: (query: URLSearchParams) => Option.Option<string>
}>()("omnichannel-core/inbound/InboundService") {
  static readonly layer = Layer.effect(
    InboundService,
    Effect.gen(function*() {
      const store = yield* InboundStore
      const settings = yield* ChatappWebhookSettings
      return InboundService.of({
        receiveChatapp: Effect.fn("InboundService.receiveChatapp")(function*(body, signature, contentType) {
          if (!(yield* verifyHubSignature(settings.appSecret, signature, body))) return { stored: false } as const
          const at = yield* now
          const id = yield* newId
          yield* store.insert({
            id,
            source: "chatapp",
            route_key: null,
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
          return { stored: true, id } as const
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
