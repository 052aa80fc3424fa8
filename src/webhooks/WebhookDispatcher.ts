import { Context, Effect, Layer } from "effect"
import type { BackgroundJob } from "../kernel/BackgroundWork.ts"
import type { StorageError } from "../ports/StorageError.ts"
import { makeDeliveryRun } from "./engine/DeliveryRun.ts"
import { makeReverification } from "./engine/Reverification.ts"

/**
 * The webhook engine's background work: fan-out from the outbox, signed attempts, retries, the
 * circuit breaker and replay, and re-verification of suspended endpoints. What users do with
 * deliveries (the history, a manual retry, verify) is `WebhookDeliveryService`.
 */
export class WebhookDispatcher extends Context.Service<WebhookDispatcher, {
  /**
   * Turns outbox events into deliveries for every endpoint that wants them and attempts every
   * delivery due now, until neither is left; returns events fanned out plus attempts made.
   */
  readonly deliverDue: Effect.Effect<number, StorageError>
  /** Runs the re-verification checks due now; returns checks made. */
  readonly checkDue: Effect.Effect<number, StorageError>
  /** The engine's work, for hosts' workers and the test clock's drain. */
  readonly jobs: ReadonlyArray<BackgroundJob>
}>()("omnichannel-core/webhooks/WebhookDispatcher") {
  static readonly layer = Layer.effect(
    WebhookDispatcher,
    Effect.gen(function*() {
      const deliveryRun = yield* makeDeliveryRun
      const checkDue = yield* makeReverification
      const deliverDue = deliveryRun(undefined)
      return WebhookDispatcher.of({
        deliverDue,
        checkDue,
        jobs: [
          { name: "webhooks.deliveries", runDue: deliverDue, runUntil: (running) => Effect.asVoid(deliveryRun(running)) },
          // Checks are minutes apart: looking every second is plenty.
          { name: "webhooks.re-verification", runDue: checkDue, pollEveryMs: 1_000 }
        ]
      })
    })
  )
}
