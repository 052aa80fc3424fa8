import { Effect, Option } from "effect"
import { now } from "../kernel/Timestamp.ts"
import type { StorageError } from "../ports/StorageError.ts"
import { WebhookDeliveryStore } from "../ports/WebhookDeliveryStore.ts"
import { type WebhookEndpointRecord, WebhookEndpointStore } from "../ports/WebhookEndpointStore.ts"
import * as EndpointMachine from "./EndpointMachine.ts"
import { type Notice, noticeOf } from "./EndpointNotices.ts"

/** What `makeEndpointIntents` gives: the one place the endpoint machine's intents are carried out. */
export interface EndpointIntents {
  /**
   * Carries out `intents` for `endpoint` (as the transition left it): the bulk moves of its
   * deliveries happen in the caller's transaction; the notices are returned, to be sent after it
   * commits, so a rolled-back move mails nobody.
   */
  readonly perform: (
    endpoint: WebhookEndpointRecord,
    intents: ReadonlyArray<EndpointMachine.EndpointIntent>,
    at: string
  ) => Effect.Effect<ReadonlyArray<Notice>, StorageError>
  /**
   * Applies `event` to the endpoint under its row lock (call inside a transaction), stores the new
   * state if it changed and performs the intents. Resolves to the endpoint as left (none if it is
   * gone) and the notices to send after commit.
   */
  readonly move: (
    tenantId: string,
    endpointId: string,
    event: EndpointMachine.EndpointEvent
  ) => Effect.Effect<
    { readonly endpoint: Option.Option<WebhookEndpointRecord>; readonly notices: ReadonlyArray<Notice> },
    StorageError
  >
}

/** Builds `EndpointIntents` over the webhook stores. */
export const makeEndpointIntents = Effect.gen(function*() {
  const deliveries = yield* WebhookDeliveryStore
  const endpoints = yield* WebhookEndpointStore

  const perform: EndpointIntents["perform"] = Effect.fnUntraced(function*(endpoint, intents, at) {
    const notices: Array<Notice> = []
    for (const intent of intents) {
      switch (intent._tag) {
        case "QueueOutstanding":
          yield* deliveries.parkOutstanding(endpoint.tenant_id, endpoint.id)
          break
        case "ReplayQueued":
          yield* deliveries.replayQueued(endpoint.tenant_id, endpoint.id)
          break
        case "DeadLetterOutstanding":
          yield* deliveries.deadLetterOutstanding(endpoint.tenant_id, endpoint.id, intent.reason, at)
          break
        case "NotifySuspended":
        case "NotifyReactivated":
        case "NotifyDisabled":
          notices.push(noticeOf(intent, endpoint))
      }
    }
    return notices
  })

  const move: EndpointIntents["move"] = Effect.fnUntraced(function*(tenantId, endpointId, event) {
    const found = yield* endpoints.getForUpdate(tenantId, endpointId)
    if (Option.isNone(found)) return { endpoint: Option.none<WebhookEndpointRecord>(), notices: [] }
    const at = yield* now
    const { intents, state } = EndpointMachine.transition(found.value, event, at)
    const next = { ...found.value, ...state }
    if (state !== found.value) yield* endpoints.update(tenantId, { ...next, updated_at: at })
    return { endpoint: Option.some(next), notices: yield* perform(next, intents, at) }
  })

  return { perform, move } satisfies EndpointIntents
})
