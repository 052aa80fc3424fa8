import { Effect, Option } from "effect"
import type { EventEnvelope } from "../../kernel/EventEnvelope.ts"
import { newId, newIdNow } from "../../kernel/Id.ts"
import { inJobSpan, traceContextOf } from "../../kernel/TraceContext.ts"
import { addSeconds, now } from "../../kernel/Timestamp.ts"
import { OutboxStore } from "../../ports/OutboxStore.ts"
import type { StorageError } from "../../ports/StorageError.ts"
import { Transactor } from "../../ports/Transactor.ts"
import { type FanOutHold, type FanOutTaken, type WebhookDeliveryRecord, WebhookDeliveryStore } from "../../ports/WebhookDeliveryStore.ts"
import { type WebhookEndpointRecord, WebhookEndpointStore } from "../../ports/WebhookEndpointStore.ts"
import * as DeliveryMachine from "../DeliveryMachine.ts"
import * as EndpointMachine from "../EndpointMachine.ts"
import { wants } from "../SourceFilter.ts"
import { DispatchSettings } from "./DispatchSettings.ts"
import type { Batch, Leased } from "./Leased.ts"

/** What one fan-out came to: the events taken, and the deliveries to attempt now (not stored yet). */
export interface FannedOut {
  readonly events: number
  readonly leased: ReadonlyArray<Leased>
}

const NOTHING_FANNED: FannedOut = { events: 0, leased: [] }

const DELIVER: DeliveryMachine.Placement = { _tag: "Deliver" }

/** The delivery of `event` (outbox `seq`) to `endpoint`, made at `at` and placed by `placement`. */
const deliveryPlaced = (
  endpoint: WebhookEndpointRecord,
  event: EventEnvelope,
  seq: number,
  at: string,
  placement: DeliveryMachine.Placement
): WebhookDeliveryRecord => ({
  ...DeliveryMachine.make(endpoint, placement, at).state,
  id: newIdNow(),
  tenant_id: event.tenant_id,
  webhook_endpoint_id: endpoint.id,
  event_id: event.event_id,
  event_type: event.type,
  envelope: event,
  outbox_seq: seq,
  previous_delivery_id: null,
  created_at: at
})

/**
 * Resolves to the fan-out: `fanOut` turns outbox events into deliveries for every endpoint that
 * wants them, and `recoverFanOuts` takes over the batches of workers that died holding them.
 */
export const makeFanOut = Effect.gen(function*() {
  const outbox = yield* OutboxStore
  const endpoints = yield* WebhookEndpointStore
  const deliveries = yield* WebhookDeliveryStore
  const transactor = yield* Transactor
  const settings = yield* DispatchSettings

  // The delivery of `event` to `endpoint`: due at once, or queued behind a suspension (`queued`
  // counts each endpoint's queue as deliveries are made). Only a queued one needs the store.
  function* deliveryOf(
    endpoint: WebhookEndpointRecord,
    event: EventEnvelope,
    seq: number,
    at: string,
    queued: Map<string, number>
  ) {
    if (EndpointMachine.routeEvent(endpoint) !== "queue") return deliveryPlaced(endpoint, event, seq, at, DELIVER)
    const count = queued.get(endpoint.id) ?? (yield* deliveries.countQueued(endpoint.tenant_id, endpoint.id))
    queued.set(endpoint.id, count + 1)
    return deliveryPlaced(endpoint, event, seq, at, { _tag: "Queue", queued: count })
  }

  // The endpoints of each tenant, read once per batch.
  const endpointsOf = (byTenant: Map<string, ReadonlyArray<WebhookEndpointRecord>>, tenantId: string) => {
    const found = byTenant.get(tenantId)
    return found !== undefined
      ? Effect.succeed(found)
      : Effect.tap(endpoints.list(tenantId), (listed) => Effect.sync(() => byTenant.set(tenantId, listed)))
  }

  // Runs `store` in a transaction if this worker still holds the fan-out lease `hold` (none otherwise:
  // another worker took the batch over and stores it itself).
  const underLease = <A, E, R>(hold: FanOutHold, store: Effect.Effect<A, E, R>) =>
    transactor.withTransaction(Effect.gen(function*() {
      if (!(yield* deliveries.holdFanOuts([hold])).has(hold.id)) return Option.none<A>()
      return Option.some(yield* store)
    }))

  /**
   * Turns a batch of outbox events into deliveries, in feed round `round`. Unless events are
   * `expected` (a commit was signalled, or the last round took a full batch), it looks first, so a
   * round that finds nothing costs one quick query. Taking the events stores the batch's fan-out
   * lease in the same step, and events that no endpoint of their tenant can want are only marked,
   * under no lease. Deliveries to attempt now are not stored: the worker sends them and the recorder
   * stores each once, as its attempt left it, while the lease holds the batch. Those queued behind a
   * suspension are stored at once, and a batch that nobody wants lets its lease go. If the worker
   * dies first, whoever takes the lease over stores what the batch lacked.
   */
  const fanOut = (round: number, expected: boolean): Effect.Effect<FannedOut, StorageError> =>
    Effect.gen(function*() {
      if (!expected && !(yield* deliveries.anyToFanOut)) return NOTHING_FANNED
      const at = yield* now
      const leaseUntil = addSeconds(at, settings.leaseSeconds)
      const batch: Batch = { hold: { id: newIdNow(), holder: newIdNow() }, remaining: 0 }
      const taken = yield* deliveries.takeFanOut(settings.fanOutBatch, { ...batch.hold, fanned_at: at, lease_until: leaseUntil })
      if (taken.leased.length === 0) return taken.unwanted === 0 ? NOTHING_FANNED : { events: taken.unwanted, leased: [] }
      const leased = yield* fanOutClaimed(taken.leased, batch, round, at, leaseUntil).pipe(inJobSpan("WebhookDispatcher.fanOut", {
        causes: taken.leased.map(({ event }) => traceContextOf(event)),
        attributes: { "outbox.events": taken.leased.length }
      }))
      return { events: taken.leased.length + taken.unwanted, leased }
    })

  // The deliveries to attempt now of the events a fan-out took under its lease `batch` (see `fanOut`).
  const fanOutClaimed = (
    claimed: FanOutTaken["leased"],
    batch: Batch,
    round: number,
    at: string,
    leaseUntil: string
  ): Effect.Effect<ReadonlyArray<Leased>, StorageError> =>
    Effect.gen(function*() {
      const leaseUntilMs = Date.parse(leaseUntil)
      const byTenant = new Map<string, ReadonlyArray<WebhookEndpointRecord>>()
      const queued = new Map<string, number>()
      const leased: Array<Leased> = []
      const parked: Array<WebhookDeliveryRecord> = []
      for (const { event, seq } of claimed) {
        for (const endpoint of yield* endpointsOf(byTenant, event.tenant_id)) {
          if (!wants(endpoint, event)) continue
          const route = EndpointMachine.routeEvent(endpoint)
          if (route === "drop") continue
          const delivery = route === "deliver"
            ? deliveryPlaced(endpoint, event, seq, at, DELIVER)
            : yield* deliveryOf(endpoint, event, seq, at, queued)
          if (delivery.status === "pending") leased.push({ delivery, endpoint, round, leaseUntil: leaseUntilMs, batch })
          else parked.push(delivery)
        }
      }
      batch.remaining = leased.length
      if (parked.length > 0 || leased.length === 0) {
        yield* underLease(
          batch.hold,
          Effect.andThen(deliveries.insertMany(parked), leased.length === 0 ? deliveries.releaseFanOuts([batch.hold]) : Effect.void)
        )
      }
      return leased
    })

  /**
   * Takes over the fan-out leases of workers that died (their time passed) and stores what their
   * batches still lack: each event for every endpoint that wants it and has no delivery of it from
   * that fan-out, due at once (or queued behind a suspension), created at the fan-out time so it
   * keeps its place. Resolves to the deliveries stored.
   */
  const recoverFanOuts = (at: string): Effect.Effect<number, StorageError> =>
    Effect.gen(function*() {
      const holder = yield* newId
      const leases = yield* deliveries.claimExpiredFanOuts(at, addSeconds(at, settings.leaseSeconds), holder, settings.checkBatch)
      let stored = 0
      for (const lease of leases) {
        const recovered = yield* underLease(lease, Effect.gen(function*() {
          const byTenant = new Map<string, ReadonlyArray<WebhookEndpointRecord>>()
          const wanted: Array<readonly [WebhookEndpointRecord, EventEnvelope, number]> = []
          for (const { event, seq } of yield* outbox.getForFanOut(lease.seqs)) {
            for (const endpoint of yield* endpointsOf(byTenant, event.tenant_id)) {
              // An endpoint made after the fan-out never wanted the event.
              if (endpoint.created_at > lease.fanned_at || !wants(endpoint, event)) continue
              if (EndpointMachine.routeEvent(endpoint) !== "drop") wanted.push([endpoint, event, seq])
            }
          }
          const asked = new Map(wanted.map(([endpoint]) => [endpoint.id, endpoint]))
          const existing = yield* deliveries.existingAt([...asked.values()], lease.fanned_at, lease.seqs)
          const queued = new Map<string, number>()
          const missing: Array<WebhookDeliveryRecord> = []
          for (const [endpoint, event, seq] of wanted) {
            if (!existing.has(`${endpoint.id} ${seq}`)) missing.push(yield* deliveryOf(endpoint, event, seq, lease.fanned_at, queued))
          }
          yield* deliveries.insertMany(missing)
          yield* deliveries.releaseFanOuts([lease])
          return missing.length
        }))
        stored += Option.getOrElse(recovered, () => 0)
      }
      return stored
    })

  return { fanOut, recoverFanOuts }
})
