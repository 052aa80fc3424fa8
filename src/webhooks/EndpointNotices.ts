import { Effect, Option } from "effect"
import { type Notification, Notifier } from "../ports/Notifier.ts"
import type { WebhookEndpointRecord } from "../ports/WebhookEndpointStore.ts"
import { TenantService } from "../tenants/TenantService.ts"
import type { EndpointIntent } from "./EndpointMachine.ts"

/** A notice to an endpoint's account, before its address is looked up. */
export type Notice = Omit<Notification, "to">

/** The endpoint machine's intents that tell the account something. */
export type NoticeIntent = Extract<EndpointIntent, { readonly _tag: `Notify${string}` }>

const TEXTS: Readonly<Record<NoticeIntent["_tag"], (e: WebhookEndpointRecord) => { subject: string; text: string }>> = {
  NotifySuspended: (e) => ({
    subject: `Webhook endpoint "${e.name}" suspended`,
    text: `Deliveries to ${e.url} failed 20 times in a row, so the endpoint is suspended and new events are queued.\n` +
      `It is checked again 1 minute, 5 and 15 minutes, 30 minutes and 1, 2, 4, 8 and 12 hours after suspension; ` +
      `a successful check replays the queue. You can also call POST /webhook-endpoints/${e.id}/verify.\n` +
      `Last error: ${e.last_error ?? "unknown"}\n`
  }),
  NotifyReactivated: (e) => ({
    subject: `Webhook endpoint "${e.name}" active again`,
    text: `${e.url} answered its verification, so the endpoint is active again and its queued events are being replayed.\n`
  }),
  NotifyDisabled: (e) => ({
    subject: `Webhook endpoint "${e.name}" disabled`,
    text: `${e.url} did not recover within 12 hours, so the endpoint is permanently deactivated and its queued ` +
      `deliveries are dead-lettered (they can be retried one by one). Set is_active to true to use it again.\n`
  })
}

/** The notice `intent` asks for about `endpoint`, as it is after the transition. */
export const noticeOf = (intent: NoticeIntent, endpoint: WebhookEndpointRecord): Notice => ({
  tenant_id: endpoint.tenant_id,
  ...TEXTS[intent._tag](endpoint)
})

/**
 * Resolves to a function that sends notices to their tenants' support address (none is sent to a
 * tenant without one). Call it after the transaction that made them commits.
 */
export const makeNoticeSender = Effect.gen(function*() {
  const tenants = yield* TenantService
  const notifier = yield* Notifier
  return (notices: ReadonlyArray<Notice>) =>
    Effect.forEach(notices, (notice) =>
      Effect.gen(function*() {
        const to = yield* tenants.supportEmailOf(notice.tenant_id)
        if (Option.isSome(to)) yield* notifier.send({ ...notice, to: to.value })
      }), { discard: true })
})
