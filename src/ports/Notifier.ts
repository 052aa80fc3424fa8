import { Context, type Effect } from "effect"

/** An email to the account about its own configuration (a webhook endpoint suspended, …). */
export interface Notification {
  readonly tenant_id: string
  readonly to: string
  readonly subject: string
  readonly text: string
}

/** Sends account notifications; the reference host writes them as RFC 5322 files. */
export class Notifier extends Context.Service<Notifier, {
  readonly send: (notification: Notification) => Effect.Effect<void>
}>()("omnichannel-core/ports/Notifier") {}
