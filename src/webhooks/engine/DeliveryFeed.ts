import { Deferred, Effect, Option, Queue } from "effect"
import type { Cause } from "effect"
import { idle, type Running } from "../../kernel/BackgroundWork.ts"
import { addSeconds, now } from "../../kernel/Timestamp.ts"
import { WallClock } from "../../kernel/WallClock.ts"
import type { StorageError } from "../../ports/StorageError.ts"
import { type WebhookDeliveryRecord, WebhookDeliveryStore } from "../../ports/WebhookDeliveryStore.ts"
import { type WebhookEndpointRecord, WebhookEndpointStore } from "../../ports/WebhookEndpointStore.ts"
import { OutboxSignal } from "../../events/OutboxSignal.ts"
import { DispatchSettings } from "./DispatchSettings.ts"
import { type FannedOut, makeFanOut } from "./FanOut.ts"
import type { Leased } from "./Leased.ts"
import type { RunState } from "./RunState.ts"

/** A running worker whose claims find nothing still claims at least this often, in feed rounds. */
const CLAIM_AT_LEAST_EVERY_ROUNDS = 8

/** How often (by the Clock) a running worker looks for deliveries whose worker died holding them. */
const EXPIRED_LOOK_SECONDS = 5

/**
 * Real milliseconds a round that commits set off waits for more: commits tend to come in runs (a
 * request's, each inbound message's), and one round then takes what gathered rather than a round per
 * commit.
 */
const GATHER_MS = 3

/** What the feed keeps between its rounds. */
interface FeedState {
  /**
   * Whether the last claim found anything. While claims keep finding nothing, a running worker
   * claims only every few rounds: new deliveries come from the fan-out anyway, and each claim is a
   * statement the database runs for nothing. Retries and replays wait a few rounds at most.
   */
  claimsFound: boolean
  claimsSkipped: number
  /** When it last looked for a dead worker's claims and fan-outs (none yet: at its first round). */
  lastExpiredLook: string | undefined
}

/**
 * Resolves to the feed of a delivery run: round after round it claims due deliveries (and, every few
 * seconds, those and the fan-outs a dead worker left) while it fans out new outbox events, and offers
 * what it got to the run's work queue. A drain (no `running`) ends at the first round that finds
 * nothing; a worker goes on until it is asked to stop, and after a round that left nothing known to
 * wait, it waits for its idle time or a commit, and a round that commits set off waits a few
 * milliseconds more for those that follow. It ends the queue when it ends.
 */
export const makeDeliveryFeed = Effect.gen(function*() {
  const endpoints = yield* WebhookEndpointStore
  const deliveries = yield* WebhookDeliveryStore
  const settings = yield* DispatchSettings
  const signal = yield* OutboxSignal
  const wall = yield* WallClock
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

  // This round's claims: due deliveries, and, every few seconds, what a dead worker left. A running
  // worker skips them on most rounds while they keep finding nothing (see `FeedState`).
  const claim = (
    feed: FeedState,
    running: Running | undefined,
    at: string,
    leaseUntil: string
  ): Effect.Effect<ReadonlyArray<WebhookDeliveryRecord>, StorageError> =>
    Effect.gen(function*() {
      const claimed: Array<WebhookDeliveryRecord> = []
      if (running !== undefined && !feed.claimsFound && feed.claimsSkipped < CLAIM_AT_LEAST_EVERY_ROUNDS) {
        feed.claimsSkipped += 1
        return claimed
      }
      feed.claimsSkipped = 0
      // A dead worker's claims and fan-outs are looked for at the start of a run and then every few
      // seconds: they wait out a lease of minutes anyway. What its fan-outs lacked is stored first, so
      // this round's claim takes it.
      const lookForExpired = feed.lastExpiredLook === undefined || at >= addSeconds(feed.lastExpiredLook, EXPIRED_LOOK_SECONDS)
      if (lookForExpired) {
        feed.lastExpiredLook = at
        yield* recoverFanOuts(at)
      }
      claimed.push(...yield* deliveries.claimDue(at, leaseUntil, settings.attemptBatch))
      if (lookForExpired) claimed.push(...yield* deliveries.claimExpired(at, leaseUntil, settings.attemptBatch))
      feed.claimsFound = claimed.length > 0
      return claimed
    })

  return (
    run: RunState,
    running: Running | undefined,
    work: Queue.Queue<Leased, Cause.Done>
  ): Effect.Effect<void, StorageError> => {
    const feed: FeedState = { claimsFound: true, claimsSkipped: 0, lastExpiredLook: undefined }
    return Effect.gen(function*() {
      // Whether events are known to wait (a commit was signalled, or the last round took a full batch),
      // so the fan-out need not look first.
      let expected = false
      while (running === undefined || !(yield* Deferred.isDone(running.stopping))) {
        running?.beat?.()
        const began = wall.nowMillis()
        // Events committed from here on end the wait after this round.
        const mark = signal.mark()
        const at = yield* now
        const leaseUntil = addSeconds(at, settings.leaseSeconds)
        run.rounds += 1
        // Claims and fan-out at once: a new event never waits behind a claim's round trips.
        const [claimed, fanned]: readonly [ReadonlyArray<WebhookDeliveryRecord>, FannedOut] = yield* Effect.all(
          [claim(feed, running, at, leaseUntil), fanOut(run.rounds, expected)],
          { concurrency: 2 }
        )
        const due = yield* withEndpoints(claimed, run.rounds, Date.parse(leaseUntil))
        run.done += fanned.events
        if (due.length > 0 || fanned.leased.length > 0) yield* Queue.offerAll(work, [...due, ...fanned.leased])
        expected = fanned.events >= settings.fanOutBatch || signal.mark() !== mark
        // A round that filled a batch left more waiting: the next starts at once.
        if (fanned.events >= settings.fanOutBatch || claimed.length >= settings.attemptBatch) continue
        if (running === undefined) {
          if (!expected && fanned.events === 0 && due.length === 0) return
          continue
        }
        // Otherwise a worker waits for its idle time or a commit, unless one came during the round. What
        // commits set off waits for those that follow: `GATHER_MS` after the commit that woke the worker,
        // or after this round began.
        const woken = !expected && (yield* Effect.raceFirst(Effect.as(idle(running), false), Effect.as(signal.after(mark), true)))
        const gather = woken ? GATHER_MS : began + GATHER_MS - wall.nowMillis()
        expected ||= woken
        if (expected && gather > 0) yield* idle(running, gather)
      }
    }).pipe(Effect.ensuring(Queue.end(work)))
  }
})
