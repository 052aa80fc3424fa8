import { Cause, Clock, Effect, Exit, Option, Queue } from "effect"
import { envelopeJson } from "../../kernel/EventEnvelope.ts"
import { makeAttemptObserver } from "../../kernel/Metrics.ts"
import { WallClock } from "../../kernel/WallClock.ts"
import { HmacSigner } from "../../ports/HmacSigner.ts"
import { logOutboundDetail, type OutboundError, OutboundHttp, type OutboundResponse } from "../../ports/OutboundHttp.ts"
import type { WebhookEndpointRecord } from "../../ports/WebhookEndpointStore.ts"
import { answered, type Outcome, requestOf, unanswered } from "../DeliveryAttempt.ts"
import { type SignatureHeaders, signThen } from "../Signature.ts"
import { type AttemptSpan, makeAttemptSpans } from "./AttemptSpans.ts"
import { DispatchSettings } from "./DispatchSettings.ts"
import type { Attempted, Leased } from "./Leased.ts"
import type { RunState } from "./RunState.ts"

/**
 * Seconds of lease a delivery must have left beyond its endpoint's timeout to be sent (or half the
 * lease, if that is less, so a short lease still lets fresh claims through).
 */
const LEASE_MARGIN_SECONDS = 10

/** What the pump of one run keeps: its own, never read by the feed or the recorder. */
interface PumpState {
  /** The work queue ended: no delivery will come any more. */
  ended: boolean
  /** Inside `pump`, which a request's callback may call again. */
  pumping: boolean
  /** The first defect met (a client reporting neither an answer nor a failed request, a signer that threw). */
  failure: unknown
  /** Resumes the pump's fiber, while it waits. */
  wake: (() => void) | undefined
  /** How to abandon each request in flight. */
  readonly abandons: Set<() => void>
}

/**
 * Resolves to the senders of a delivery run: one pump keeping `attemptConcurrency` requests in
 * flight. A finished request hands its outcome to the recorder's queue and starts the next delivery
 * from the work queue at once, so a delivery costs no fiber of its own; the pump's fiber only waits
 * while the queue is empty or every request slot is taken. Interrupted, it abandons what is in
 * flight. A delivery whose endpoint stopped, or whose lease would run out before its request could
 * time out, is handed over unsent, to be let go and claimed again.
 */
export const makeDeliveryPump = Effect.gen(function*() {
  const outbound = yield* OutboundHttp
  const signer = yield* HmacSigner
  const settings = yield* DispatchSettings

  return (
    run: RunState,
    work: Queue.Queue<Leased, Cause.Done>,
    finished: Queue.Queue<Attempted, Cause.Done>
  ): Effect.Effect<void> =>
    Effect.gen(function*() {
      const clock = yield* Clock.Clock
      const wall = yield* WallClock
      const spanOf = yield* makeAttemptSpans
      const observe = yield* makeAttemptObserver
      // The run's own services, for logging from a request's callback (which runs in no fiber).
      const context = yield* Effect.context<never>()
      const pump: PumpState = { ended: false, pumping: false, failure: undefined, wake: undefined, abandons: new Set() }

      // A request in flight came to `outcome` (none if it was never answered nor failed).
      const settle = (leased: Leased, outcome: Outcome | undefined) => {
        run.inFlight -= 1
        if (outcome !== undefined) observe(leased.delivery, outcome)
        Queue.offerUnsafe(finished, [leased.delivery, outcome, leased.batch])
        next()
      }
      // What a request came to. Neither an answer nor a failed request is a defect: it is kept to fail
      // the run, as it would have failed a fiber, and the delivery is let go.
      const outcomeOf = (exit: Exit.Exit<OutboundResponse, OutboundError>): Outcome | undefined => {
        if (Exit.isSuccess(exit)) return answered(exit.value)
        const error = Cause.findErrorOption(exit.cause)
        if (Option.isSome(error)) {
          // What the tenant's delivery record does not say (a refused address) goes to the host's log.
          if (error.value.detail !== undefined) Effect.runSyncWith(context)(logOutboundDetail(error.value))
          return unanswered(error.value)
        }
        pump.failure ??= Cause.squash(exit.cause)
        return undefined
      }
      const post = (leased: Leased, endpoint: WebhookEndpointRecord, body: string, signature: SignatureHeaders, span: AttemptSpan) => {
        // `send` may answer before it returns (a URL refused at once): then there is nothing to abandon.
        let settled = false
        let abandon: (() => void) | undefined
        abandon = outbound.send(requestOf(endpoint, body, signature, span.traceparent), (exit) => {
          settled = true
          if (abandon !== undefined) pump.abandons.delete(abandon)
          const outcome = outcomeOf(exit)
          span.end(outcome)
          settle(leased, outcome)
        })
        if (!settled) pump.abandons.add(abandon)
      }
      const start = (leased: Leased) => {
        const { delivery, endpoint, leaseUntil, round } = leased
        run.done += 1
        // Not sent: the endpoint is gone or stopped, or the lease would run out before the request
        // could time out (a slow receiver held the queue up), which would let another worker send
        // it too. It is let go (a fresh one stored due) and claimed again.
        const leaseLeft = (leaseUntil - clock.currentTimeMillisUnsafe()) / 1000
        if (
          endpoint === undefined || (run.stoppedIn.get(endpoint.id) ?? -1) >= round ||
          leaseLeft < Math.min(endpoint.timeout_seconds + LEASE_MARGIN_SECONDS, settings.leaseSeconds / 2)
        ) {
          return void Queue.offerUnsafe(finished, [delivery, undefined, leased.batch])
        }
        run.inFlight += 1
        const span = spanOf(leased, endpoint)
        const body = envelopeJson(delivery.envelope)
        const input = { secret: endpoint.secret, messageId: delivery.envelope.id, timestampSeconds: wall.nowMillis() / 1000, body }
        signThen(input, (signed) => {
          if (Exit.isSuccess(signed)) return post(leased, endpoint, body, signed.value, span)
          pump.failure ??= Cause.squash(signed.cause)
          span.end(undefined)
          settle(leased, undefined)
        }, signer)
      }
      // Starts deliveries from the queue while slots are free; wakes the fiber when it has to act.
      const next = () => {
        if (pump.pumping) return
        pump.pumping = true
        try {
          while (pump.failure === undefined && !pump.ended && run.inFlight < settings.attemptConcurrency) {
            const taken = Queue.takeUnsafe(work)
            if (taken === undefined) break
            if (Exit.isFailure(taken)) pump.ended = true
            else start(taken.value)
          }
        } catch (error) {
          pump.failure ??= error
        } finally {
          pump.pumping = false
        }
        const act = pump.failure !== undefined ||
          (pump.ended ? run.inFlight === 0 : run.inFlight < settings.attemptConcurrency)
        if (act && pump.wake !== undefined) {
          const resume = pump.wake
          pump.wake = undefined
          resume()
        }
      }
      // The fiber waits for a free slot, or for the last answer once the queue ended.
      const woken = Effect.callback<void>((resume) => {
        pump.wake = () => resume(Effect.void)
        return Effect.sync(() => {
          pump.wake = undefined
        })
      })
      return yield* Effect.gen(function*() {
        for (;;) {
          next()
          if (pump.failure !== undefined) return yield* Effect.die(pump.failure)
          if (pump.ended) {
            if (run.inFlight === 0) return
            yield* woken
          } else if (run.inFlight < settings.attemptConcurrency) {
            // The queue is empty: wait for the feed. A defect met meanwhile fails the run with the next
            // delivery taken, at the latest the one it let go, claimed again within a few rounds.
            const taken = yield* Queue.take(work).pipe(Effect.option)
            if (Option.isNone(taken)) pump.ended = true
            else start(taken.value)
          } else {
            yield* woken
          }
        }
      }).pipe(Effect.ensuring(Effect.sync(() => {
        pump.ended = true
        for (const abandon of pump.abandons) abandon()
      })))
    }).pipe(Effect.ensuring(Queue.end(finished)))
})
