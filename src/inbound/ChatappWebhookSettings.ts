import { Context } from "effect"

/**
 * What the host holds for the operator's webhooks: the app secret that signs each `POST`
 * (`X-Hub-Signature-256`) and the token that answers the subscription handshake.
 */
export class ChatappWebhookSettings extends Context.Service<ChatappWebhookSettings, {
  readonly appSecret: string
  readonly verifyToken: string
}>()("omnichannel-core/inbound/ChatappWebhookSettings") {}
