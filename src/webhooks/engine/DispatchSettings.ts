import { Context } from "effect"

/** How the engine batches its work and how long a claim's lease lasts. */
export interface DispatchSettings {
  /** Outbox events turned into deliveries per transaction. */
  readonly fanOutBatch: number
  /**
   * Due deliveries claimed per query, and the most a worker holds claimed but not yet sent: the
   * next batch is fetched while the current one is being sent, so keep it at least twice
   * `fanOutBatch`. A delivery that waited so long its lease would run out before its request could
   * time out is not sent but let go, to be claimed again.
   */
  readonly attemptBatch: number
  /** Requests a worker keeps in flight at once. */
  readonly attemptConcurrency: number
  /** Re-verification checks claimed and run at once. */
  readonly checkBatch: number
  /**
   * How long a claimed delivery or check, or a batch of events fanned out, stays with its worker; a
   * crashed worker's claims come back after it. Keep it above the endpoints' `timeout_seconds` (at most 60).
   */
  readonly leaseSeconds: number
}

/** The engine's settings; the defaults suit one or a few processes. */
export const DispatchSettings = Context.Reference<DispatchSettings>("omnichannel-core/webhooks/DispatchSettings", {
  defaultValue: () => ({
    fanOutBatch: 500,
    attemptBatch: 1000,
    attemptConcurrency: 64,
    checkBatch: 16,
    leaseSeconds: 120
  })
})
