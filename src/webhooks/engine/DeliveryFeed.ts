import { Deferred, Effect, Option, Queue } from "effect"
import type { Cause } from "effect"
import { idle, type Running } from "../../kernel/BackgroundWork.ts"
import { addSeconds, now } from "../../kernel/Timestamp.ts"
import type { StorageError } from "../../ports/StorageError.ts"
import { type WebhookDeliveryRecord, WebhookDeliveryStore } from "../../ports/WebhookDeliveryStore.ts"
import { type WebhookEndpointRecord, WebhookEndpointStore } from "../../ports/WebhookEndpointStore.ts"
import { OutboxSignal } from "../../events/OutboxSignal.ts"
import { DispatchSettings } from "./DispatchSettings.ts"
import { makeFanOut } from "./FanOut.ts"
import type { Leased } from "./Leased.ts"
import type { RunState } from "./RunState.ts"

/** A running worker whose claims find nothing still claims at least this often, in feed rounds. */
const CLAIM_AT_LEAST_EVERY_ROUNDS = 8

/** How often (by the Clock) a running worker looks for deliveries whose worker died holding them. */
const EXPIRED_LOOK_SECONDS = 5

/** What the feed keeps between its rounds. */
interface FeedState {
  /**
   * Whether the last claim found anything. While claims keep finding nothing, a running worker
   * claims only every few rounds: new deliveries come from the fan-out anyway, and each claim is a
   * round trip that a new event would otherwise wait behind. Retries and replays wait a few rounds at most.
   */
  claimsFound: boolean
  claimsSkipped: number
  /** When it last looked for a dead worker's claims and fan-outs (none yet: at its first round). */
  lastExpiredLook: string | undefined
}

/**
 * Resolves to the feed of a delivery run: round after round it claims due deliveries (and, every few
 * seconds, those and the fan-outs a dead worker left), fans out new outbox events, and offers what
 * it got to the run's work queue. A drain (no `running`) ends at the first round that finds nothing;
 * a worker waits for new events or its idle time and goes on until it is asked to stop. It ends the
 * queue when it ends.
 */
export const makeDeliveryFeed = Effect.gen(function*() {
  const endpoints = yield* WebhookEndpointStore
  const deliveries = yield* WebhookDeliveryStore
  const settings = yield* DispatchSettings
  const signal = yield* OutboxSignal
  const { fanOut, recoverFanOuts } = yield* makeFanOut

  // Reads the endpoints of claimed deliveries as they are now, once per endpoint.
  const withEndpoints = Effect.fnUntraced(function*(
    claimed: ReadonlyArray<WebhookDeliveryRecord>,
    round: number,
    leaseUntil: number
  ) {
    const configs = new Map<string, Option.Option<WebhookEndpointRecord>>()
    const due: Array<Leased> = []
    for (const delivery of claimed) {
      let endpoint = configs.get(delivery.webhook_endpoint_id)
      if (endpoint === undefined) {
        endpoint = yield* endpoints.get(delivery.tenant_id, delivery.webhook_endpoint_id)
        configs.set(delivery.webhook_endpoint_id, endpoint)
      }
      due.push({ delivery, endpoint: Option.getOrUndefined(endpoint), round, leaseUntil, batch: undefined })
    }
    return due
  })

  return (
    run: RunState,
    running: Running | undefined,
    work: Queue.Queue<Leased, Cause.Done>
  ): Effect.Effect<void, StorageError> => {
    const feed: FeedState = { claimsFound: true, claimsSkipped: 0, lastExpiredLook: undefined }
    return Effect.gen(function*() {
      while (running === undefined || !(yield* Deferred.isDone(running.stopping))) {
        running?.beat?.()
        // Events this process commits from here on end the idle wait below.
        const mark = signal.mark()
        const at = yield* now
        const leaseUntil = addSeconds(at, settings.leaseSeconds)
        const claimed: Array<WebhookDeliveryRecord> = []
        if (running === undefined || feed.claimsFound || feed.claimsSkipped >= CLAIM_AT_LEAST_EVERY_ROUNDS) {
          feed.claimsSkipped = 0
          // A dead worker's claims and fan-outs are looked for at the start of a run and then every few
          // seconds: they wait out a lease of minutes anyway. What its fan-outs lacked is stored first,
          // so this round's claim takes it.
          const lookForExpired = feed.lastExpiredLook === undefined ||
            at >= addSeconds(feed.lastExpiredLook, EXPIRED_LOOK_SECONDS)
          if (lookForExpired) {
            feed.lastExpiredLook = at
            yield* recoverFanOuts(at)
          }
          claimed.push(...yield* deliveries.claimDue(at, leaseUntil, settings.attemptBatch))
          if (lookForExpired) claimed.push(...yield* deliveries.claimExpired(at, leaseUntil, settings.attemptBatch))
          feed.claimsFound = claimed.length > 0
        } else {
          feed.claimsSkipped += 1
        }
        run.rounds += 1
        const due = yield* withEndpoints(claimed, run.rounds, Date.parse(leaseUntil))
        const fanned = yield* fanOut(run.rounds)
        run.done += fanned.events
        if (fanned.events === 0 && due.length === 0) {
          if (running === undefined) return
          yield* Effect.raceFirst(idle(running), signal.after(mark))
          continue
        }
        yield* Queue.offerAll(work, [...due, ...fanned.leased])
      }
    }).pipe(Effect.ensuring(Queue.end(work)))
  }
})
