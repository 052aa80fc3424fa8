import { Clock, Deferred, Effect } from "effect"
import { AttachmentService } from "../attachments/AttachmentService.ts"
import { InboundRetentionService } from "../inbound/InboundRetentionService.ts"
import { type BackgroundJob, idle, type Running } from "../kernel/BackgroundWork.ts"
import type { StorageError } from "../kernel/StorageError.ts"
import { fromMillis, type Timestamp } from "../kernel/Timestamp.ts"
import { WallClock } from "../kernel/WallClock.ts"
import { type OutboxPruneCursor, OutboxStore } from "../ports/OutboxStore.ts"
import { WebhookRetentionService } from "../webhooks/WebhookRetentionService.ts"
import { cutoffOf, RetentionSettings, UNSENT_UPLOAD_MS } from "./Retention.ts"

/** One pass of the prune: what is left to do under one cut-off, and what it deleted so far. */
interface Pass {
  readonly cutoff: Timestamp
  /** Uploads never sent made strictly before it go (a day before the pass began). */
  readonly uploadsBefore: Timestamp
  /** Finished deliveries go first, so an event whose last delivery goes in this pass goes too. */
  deliveriesDone: boolean
  eventsDone: boolean
  payloadsDone: boolean
  uploadsDone: boolean
  /** Where the outbox's keyset walk goes on. */
  cursor: OutboxPruneCursor | null
  deliveries: number
  events: number
  payloads: number
  uploads: number
}

const newPass = (cutoff: Timestamp, uploadsBefore: Timestamp): Pass => ({
  cutoff,
  uploadsBefore,
  deliveriesDone: false,
  eventsDone: false,
  payloadsDone: false,
  uploadsDone: false,
  cursor: null,
  deliveries: 0,
  events: 0,
  payloads: 0,
  uploads: 0
})

const finished = (pass: Pass) => pass.deliveriesDone && pass.eventsDone && pass.payloadsDone && pass.uploadsDone

/**
 * The background job `retention`: deletes finished deliveries, then the outbox events none refers
 * to any more, and handled or failed raw inbound payloads, once they finished `days` days before
 * the Clock's now, and uploads never sent (no message carried them) a day after they were made,
 * records and bytes. Other customer data (contacts, conversations, messages, the files they carry,
 * email) and unfinished work are never touched. Each round deletes at most one batch of each kind, each in its
 * own short statement. `runDue` (the test clock's drain) runs rounds back to back; a worker rests
 * after each round `restFactor` times as long as the round took (at least `pauseMs`, real time), so
 * the prune keeps to a share of its time, and `pollEveryMs` once a pass is over. A pass ends with
 * one log line of counts when it deleted anything; the next starts only once the cut-off has moved,
 * so a drain with the clock standing still costs nothing, and a pass finding nothing counts no work.
 */
export const makeRetentionJob = Effect.gen(function*() {
  const settings = yield* RetentionSettings
  const wall = yield* WallClock
  const webhooks = yield* WebhookRetentionService
  const inbound = yield* InboundRetentionService
  const attachments = yield* AttachmentService
  const outbox = yield* OutboxStore
  const limit = settings.batchSize

  let pass: Pass | undefined
  /** The cut-off of the last pass that ended: nothing it could delete is left. */
  let lastCutoff: Timestamp | undefined
  /** Several workers of one process share the job; one round runs at a time. */
  let busy = false

  const report = (done: Pass) =>
    done.deliveries + done.events + done.payloads + done.uploads === 0 ? Effect.void : Effect.logInfo(
      `retention: deleted ${done.deliveries} finished deliveries, ${done.events} outbox events and ` +
        `${done.payloads} inbound payloads that finished before ${done.cutoff} (kept ${settings.days} days), ` +
        `and ${done.uploads} uploads never sent made before ${done.uploadsBefore}`
    ).pipe(Effect.annotateLogs({
      job: "retention",
      cutoff: done.cutoff,
      deliveries: done.deliveries,
      events: done.events,
      payloads: done.payloads,
      uploads: done.uploads
    }))

  /**
   * One round: a batch of each kind still to do, and more batches at once while they delete
   * nothing, so a pass that finds nothing (or only rows to keep) ends within one call. Resolves to
   * the rows deleted; 0 once the pass is over and nothing was deleted.
   */
  const step: Effect.Effect<number, StorageError> = Effect.gen(function*() {
    if (pass === undefined) {
      const nowMillis = yield* Clock.currentTimeMillis
      const cutoff = cutoffOf(nowMillis, settings.days)
      if (lastCutoff !== undefined && cutoff <= lastCutoff) return 0
      pass = newPass(cutoff, fromMillis(nowMillis - UNSENT_UPLOAD_MS))
    }
    const current = pass
    let deleted = 0
    while (deleted === 0 && !finished(current)) {
      if (!current.deliveriesDone) {
        const n = yield* webhooks.pruneDeliveries(current.cutoff, limit)
        current.deliveries += n
        deleted += n
        current.deliveriesDone = n < limit
      } else if (!current.eventsDone) {
        const { deleted: n, next } = yield* outbox.pruneFannedOut({ before: current.cutoff, after: current.cursor, limit })
        current.events += n
        deleted += n
        current.cursor = next
        current.eventsDone = next === null
      }
      if (!current.payloadsDone) {
        const n = yield* inbound.prunePayloads(current.cutoff, limit)
        current.payloads += n
        deleted += n
        current.payloadsDone = n < limit
      }
      if (!current.uploadsDone) {
        const n = yield* attachments.pruneUnsent(current.uploadsBefore, limit)
        current.uploads += n
        deleted += n
        current.uploadsDone = n < limit
      }
    }
    if (!finished(current)) return deleted
    pass = undefined
    lastCutoff = current.cutoff
    yield* report(current)
    return deleted
  })

  const runDue: Effect.Effect<number, StorageError> = Effect.suspend(() => {
    if (busy) return Effect.succeed(0)
    busy = true
    return Effect.ensuring(step, Effect.sync(() => {
      busy = false
    }))
  })

  const runUntil = (running: Running): Effect.Effect<void, StorageError> =>
    Effect.gen(function*() {
      while (!(yield* Deferred.isDone(running.stopping))) {
        running.beat?.()
        const began = wall.nowMillis()
        const done = yield* runDue
        const took = wall.nowMillis() - began
        // Never longer than a poll: the worker's heartbeat must not fall silent behind one slow batch.
        const rest = Math.min(Math.max(settings.pauseMs, took * settings.restFactor), settings.pollEveryMs)
        yield* idle(running, done > 0 ? rest : settings.pollEveryMs)
      }
    })

  return { name: "retention", runDue, runUntil, pollEveryMs: settings.pollEveryMs } satisfies BackgroundJob
})
