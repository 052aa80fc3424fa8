import { Effect, Option } from "effect"
import { now } from "../../kernel/Timestamp.ts"
import { inJobSpan, traceContextOf, tracingOn } from "../../kernel/TraceContext.ts"
import type { StorageError } from "../../ports/StorageError.ts"
import { Transactor } from "../../ports/Transactor.ts"
import { type DeliveryKey, type WebhookDeliveryRecord, WebhookDeliveryStore } from "../../ports/WebhookDeliveryStore.ts"
import { type WebhookEndpointRecord, WebhookEndpointStore } from "../../ports/WebhookEndpointStore.ts"
import * as DeliveryMachine from "../DeliveryMachine.ts"
import { makeEndpointIntents } from "../EndpointIntents.ts"
import * as EndpointMachine from "../EndpointMachine.ts"
import { makeNoticeSender, type Notice } from "../EndpointNotices.ts"
import { type Attempted, type Batch, holdsOf } from "./Leased.ts"
import { healthOf, recordPath, transitionOf } from "./RecordPlan.ts"

/** A save that only lands if the row is still in the state the transition started from. */
const saveOf = (key: DeliveryKey, from: DeliveryMachine.DeliveryState, state: DeliveryMachine.DeliveryState) => ({
  state: { ...state, id: key.id, tenant_id: key.tenant_id },
  expected: { status: from.status, attempt_number: from.attempt_number }
})

/** An attempt on the fast path, with the state its transition gives. */
interface FastWrite {
  readonly delivery: WebhookDeliveryRecord
  readonly outcome: Attempted[1]
  readonly batch: Batch | undefined
  readonly state: DeliveryMachine.DeliveryState
}

/**
 * Resolves to the recorder: it writes attempts' outcomes back (an outcome of `undefined` means the
 * delivery was not attempted, and its lease is just freed), moves the endpoints' circuit breakers,
 * stores the deliveries a worker fanned out once their attempt is made, and lets a fan-out lease go
 * once its batch is all stored. It resolves to the endpoints that no longer take deliveries, so the
 * worker stops sending to them. With tracing on, each batch it records is a span
 * `WebhookDispatcher.record` counting what the attempts came to.
 */
export const makeOutcomeRecorder = Effect.gen(function*() {
  const endpoints = yield* WebhookEndpointStore
  const deliveries = yield* WebhookDeliveryStore
  const transactor = yield* Transactor
  const intents = yield* makeEndpointIntents
  const sendNotices = yield* makeNoticeSender

  /**
   * Stores deliveries not stored yet, as `row` makes each, leaving out those whose fan-out lease is
   * no longer this worker's (another worker took the batch over and stores them itself). Call
   * inside the storing transaction.
   */
  const storeHeld = <T>(items: ReadonlyArray<T>, batchOf: (item: T) => Batch | undefined, row: (item: T) => WebhookDeliveryRecord) =>
    Effect.gen(function*() {
      const held = yield* deliveries.holdFanOuts(holdsOf(items.map(batchOf)))
      yield* deliveries.insertMany(items.filter((item) => held.has(batchOf(item)!.hold.id)).map(row))
    })

  /**
   * Records one endpoint's outcomes the careful way, in one transaction under the endpoint's lock
   * (which the bulk moves take too): each delivery read as it is now, the outcomes applied in the
   * order they came back, the endpoint moved and written once. A suspension in the middle parks
   * the endpoint's unfinished rows at once, so the batch's later failures land on parked rows and
   * are dropped, as for any attempt in flight when the breaker trips. A row that another worker
   * took over and recorded meanwhile keeps that worker's outcome. Resolves to the endpoint as
   * left (none if it is gone) and the notices to send.
   */
  const recordLocked = (tenantId: string, endpointId: string, results: ReadonlyArray<Attempted>) =>
    transactor.withTransaction(Effect.gen(function*() {
      const locked = yield* endpoints.getForUpdate(tenantId, endpointId)
      const at = yield* now
      // Deliveries stored only now are stored first as they would be had they been stored at fan-out:
      // pending, or moved as the endpoint's other unfinished deliveries were when it stopped taking
      // them. Those whose fan-out lease another worker took over are that worker's to store.
      const fresh = results.filter(([, , batch]) => batch !== undefined)
      if (fresh.length > 0 && Option.isSome(locked)) {
        const move = EndpointMachine.outstandingMove(locked.value)
        yield* storeHeld(fresh, ([, , batch]) => batch, ([delivery]) =>
          move === undefined ? delivery : DeliveryMachine.transition(delivery, move, at).state)
      }
      type Row = { readonly from: DeliveryMachine.DeliveryState; readonly state: DeliveryMachine.DeliveryState }
      const read = (from: number) =>
        Effect.map(
          deliveries.getStates(results.slice(from).map(([delivery]) => delivery)),
          (rows) => new Map<string, Row>(rows.map((row) => [row.id, { from: row, state: row }]))
        )
      const save = (rows: Map<string, Row>) =>
        deliveries.saveMany([...rows].map(([id, { from, state }]) => saveOf({ id, tenant_id: tenantId }, from, state)))
      let current = yield* read(0)
      let endpoint = Option.getOrUndefined(locked)
      const before = endpoint
      const notices: Array<Notice> = []
      for (let i = 0; i < results.length; i++) {
        const [delivery, outcome] = results[i]!
        const found = current.get(delivery.id)
        if (found === undefined) continue
        const { intents: deliveryIntents, state } = transitionOf(found.state, outcome, at)
        current.set(delivery.id, { from: found.from, state })
        const health = healthOf(deliveryIntents)
        if (health === undefined || endpoint === undefined) continue
        const moved = EndpointMachine.transition(endpoint, health, at)
        endpoint = moved.state
        if (moved.intents.length > 0) {
          // The bulk move sees what this batch recorded so far; the rest is read again after it.
          yield* save(current)
          notices.push(...yield* intents.perform(endpoint, moved.intents, at))
          current = yield* read(i + 1)
        }
      }
      yield* save(current)
      if (endpoint !== undefined && before !== undefined && endpoint !== before) {
        yield* endpoints.update(tenantId, { ...endpoint, updated_at: at })
      }
      return { endpoint, notices }
    }))

  /**
   * The common case costs one statement: endpoints whose batch takes the fast path (`recordPath`)
   * have their deliveries' transitions written as compare-and-sets, the whole batch at once, with no
   * lock. The other endpoints, and rows that changed meanwhile, go through `recordLocked`.
   */
  const recordBatch = (results: ReadonlyArray<Attempted>): Effect.Effect<ReadonlyArray<string>, StorageError> =>
    Effect.gen(function*() {
      const at = yield* now
      const byEndpoint = new Map<string, Array<Attempted>>()
      for (const result of results) {
        const group = byEndpoint.get(result[0].webhook_endpoint_id)
        if (group === undefined) byEndpoint.set(result[0].webhook_endpoint_id, [result])
        else group.push(result)
      }
      const careful = new Map<string, Array<Attempted>>()
      const fast: Array<FastWrite> = []
      const stopped: Array<string> = []
      for (const [endpointId, group] of byEndpoint) {
        const seen: Option.Option<WebhookEndpointRecord> = yield* endpoints.get(group[0]![0].tenant_id, endpointId)
        if (Option.isNone(seen)) {
          // Deleted: its deliveries went with it.
          stopped.push(endpointId)
          continue
        }
        const path = recordPath(
          seen.value,
          group.map(([delivery, outcome, batch]) => ({ delivery, outcome, fresh: batch !== undefined })),
          at
        )
        if (path._tag === "locked") {
          careful.set(endpointId, group)
          continue
        }
        group.forEach(([delivery, outcome, batch], i) => fast.push({ delivery, outcome, batch, state: path.transitions[i]!.state }))
        if (EndpointMachine.routeEvent(seen.value) !== "deliver") stopped.push(endpointId)
      }
      // Claimed deliveries are saved as compare-and-sets; fresh ones are stored once, as their attempt
      // left them, if their fan-out lease is still this worker's.
      const stored = fast.filter(({ batch }) => batch === undefined)
      const fresh = fast.filter(({ batch }) => batch !== undefined)
      const save = deliveries.saveMany(stored.map(({ delivery, state }) => saveOf(delivery, delivery, state)))
      const written = fresh.length === 0 ? yield* save : yield* transactor.withTransaction(
        Effect.andThen(storeHeld(fresh, ({ batch }) => batch, ({ delivery, state }) => ({ ...delivery, ...state })), save)
      )
      // A compare-and-set that missed found the row changed meanwhile: it is recorded the careful way.
      for (const { delivery, outcome } of stored) {
        if (written.has(delivery.id)) continue
        const group = careful.get(delivery.webhook_endpoint_id) ?? []
        group.push([delivery, outcome, undefined])
        careful.set(delivery.webhook_endpoint_id, group)
      }
      const notices: Array<Notice> = []
      for (const [endpointId, group] of careful) {
        const recorded = yield* recordLocked(group[0]![0].tenant_id, endpointId, group)
        notices.push(...recorded.notices)
        if (recorded.endpoint === undefined || EndpointMachine.routeEvent(recorded.endpoint) !== "deliver") {
          stopped.push(endpointId)
        }
      }
      yield* sendNotices(notices)
      // A batch whose every delivery is stored now (or was not this worker's to store any more) lets
      // its fan-out lease go.
      const done: Array<Batch> = []
      for (const [, , batch] of results) {
        if (batch !== undefined && --batch.remaining === 0) done.push(batch)
      }
      yield* deliveries.releaseFanOuts(holdsOf(done))
      return stopped
    })

  // With tracing on, a batch is one span, linked to its events' spans, that counts what its attempts
  // came to: most attempts make no span of their own (`ATTEMPT_SPANS_PER_SECOND`).
  return (results: ReadonlyArray<Attempted>): Effect.Effect<ReadonlyArray<string>, StorageError> =>
    Effect.flatMap(tracingOn, (on) =>
      on
        ? recordBatch(results).pipe(inJobSpan("WebhookDispatcher.record", {
          causes: results.map(([delivery]) => traceContextOf(delivery.envelope)),
          attributes: outcomeCounts(results)
        }))
        : recordBatch(results))
})

/** What a batch's attempts came to, as its span's attributes: not sent means let go unattempted. */
const outcomeCounts = (results: ReadonlyArray<Attempted>) => {
  let delivered = 0
  let failed = 0
  for (const [, outcome] of results) {
    if (outcome?.ok === true) delivered += 1
    else if (outcome !== undefined) failed += 1
  }
  return {
    "webhook.deliveries": results.length,
    "webhook.delivered": delivered,
    "webhook.failed": failed,
    "webhook.not_sent": results.length - delivered - failed
  }
}
