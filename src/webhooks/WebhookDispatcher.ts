import { Cause, Clock, Context, Deferred, Effect, Exit, Layer, Option, Queue } from "effect"
import { Conflict, NotFound } from "../kernel/ApiError.ts"
import { type BackgroundJob, idle, type Running } from "../kernel/BackgroundWork.ts"
import { type EventEnvelope, envelopeJson } from "../kernel/EventEnvelope.ts"
import { newId, newIdNow } from "../kernel/Id.ts"
import { OutboxSignal } from "../kernel/OutboxSignal.ts"
import { addSeconds, now } from "../kernel/Timestamp.ts"
import { WallClock } from "../kernel/WallClock.ts"
import { type Notification, Notifier } from "../ports/Notifier.ts"
import { type OutboundError, OutboundHttp, type OutboundRequest, type OutboundResponse } from "../ports/OutboundHttp.ts"
import { OutboxStore } from "../ports/OutboxStore.ts"
import type { StorageError } from "../ports/StorageError.ts"
import { TenantStore } from "../ports/TenantStore.ts"
import { Transactor } from "../ports/Transactor.ts"
import {
  type DeliveryKey,
  type FanOutHold,
  type WebhookDeliveryRecord,
  WebhookDeliveryStore
} from "../ports/WebhookDeliveryStore.ts"
import { type WebhookEndpointRecord, WebhookEndpointStore } from "../ports/WebhookEndpointStore.ts"
import * as DeliveryMachine from "./DeliveryMachine.ts"
import * as EndpointMachine from "./EndpointMachine.ts"
import { sign, type SignatureHeaders, signThen } from "./Signature.ts"

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
  readonly maxResponseBytes: number
}

/** The engine's settings; the defaults suit one or a few processes. */
export const DispatchSettings = Context.Reference<DispatchSettings>("omnichannel-core/webhooks/DispatchSettings", {
  defaultValue: () => ({
    fanOutBatch: 500,
    attemptBatch: 1000,
    attemptConcurrency: 64,
    checkBatch: 16,
    leaseSeconds: 120,
    maxResponseBytes: 64 * 1024
  })
})

/** What one request to an endpoint came to. */
interface Outcome {
  readonly ok: boolean
  readonly status_code: number | null
  readonly time_ms: number | null
  readonly error: string
}

/**
 * Seconds of lease a delivery must have left beyond its endpoint's timeout to be sent (or half the
 * lease, if that is less, so a short lease still lets fresh claims through).
 */
const LEASE_MARGIN_SECONDS = 10

/** A running worker whose claims find nothing still claims at least this often, in feed rounds. */
const CLAIM_AT_LEAST_EVERY_ROUNDS = 8

/**
 * A running worker's recorder, holding fewer than `RECORD_GATHER` outcomes while requests are still
 * in flight, waits `RECORD_GATHER_MS` of real time for more before it writes them.
 */
const RECORD_GATHER = 256
const RECORD_GATHER_MS = 50

/** How often (by the Clock) a running worker looks for deliveries whose worker died holding them. */
const EXPIRED_LOOK_SECONDS = 5

/**
 * A batch of outbox events this worker fanned out and holds through a fan-out lease, with the
 * number of its deliveries not yet stored: when none is left, the lease is let go.
 */
interface Batch {
  readonly hold: FanOutHold
  remaining: number
}

/**
 * A delivery this worker holds the lease of, with its endpoint as read in feed round `round` (none
 * if it was gone). A delivery claimed from the store has no `batch`; one this worker just fanned out
 * is not stored yet and has the batch whose lease holds it.
 */
interface Leased {
  readonly delivery: WebhookDeliveryRecord
  readonly endpoint: WebhookEndpointRecord | undefined
  readonly round: number
  /** When its lease runs out, in epoch milliseconds by the Clock. */
  readonly leaseUntil: number
  readonly batch: Batch | undefined
}

/**
 * A leased delivery and what its attempt came to (none when it was not attempted), with the batch
 * it came from when it is not stored yet.
 */
type Attempted = readonly [WebhookDeliveryRecord, Outcome | undefined, Batch | undefined]

/** What a fan-out that found no events comes to. */
const NOTHING_FANNED: { readonly events: number; readonly leased: ReadonlyArray<Leased> } = { events: 0, leased: [] }

/** The leases of these batches, each once. */
const holdsOf = (batches: Iterable<Batch | undefined>): Array<FanOutHold> => {
  const holds = new Set<FanOutHold>()
  for (const batch of batches) if (batch !== undefined) holds.add(batch.hold)
  return [...holds]
}

/** What `POST /webhook-endpoints/{id}/verify` reports. */
export interface VerifyResult {
  readonly endpoint: WebhookEndpointRecord
  readonly outcome: Outcome
}

// The ids that tie an event to a source, for `selected` endpoints.
const sourceOf = (event: EventEnvelope): { readonly channel?: string; readonly emailIntegration?: string } => {
  const data = event.data as {
    readonly channel?: { readonly id?: unknown }
    readonly channel_id?: unknown
    readonly email_integration_id?: unknown
  }
  const channel = typeof data.channel?.id === "string" ? data.channel.id : data.channel_id
  const emailIntegration = data.email_integration_id
  return {
    ...(typeof channel === "string" ? { channel } : {}),
    ...(typeof emailIntegration === "string" ? { emailIntegration } : {})
  }
}

/**
 * Whether `endpoint` wants `event`: it subscribes to the type, and in `selected` mode the event's
 * channel or email integration is one it lists. Events tied to no source (a contact's) pass.
 */
export const wants = (endpoint: WebhookEndpointRecord, event: EventEnvelope): boolean => {
  if (!endpoint.subscribed_events.includes(event.type)) return false
  if (endpoint.source_filter_mode === "all") return true
  const source = sourceOf(event)
  if (source.channel === undefined && source.emailIntegration === undefined) return true
  return (source.channel !== undefined && (endpoint.filtered_channel_ids ?? []).includes(source.channel)) ||
    (source.emailIntegration !== undefined &&
      (endpoint.filtered_email_integration_ids ?? []).includes(source.emailIntegration))
}

const NOTIFICATIONS: Readonly<Record<"NotifySuspended" | "NotifyReactivated" | "NotifyDisabled", (e: WebhookEndpointRecord) => { subject: string; text: string }>> = {
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

/** The webhook engine: fan-out from the outbox, signed attempts, retries, the circuit breaker and replay. */
export class WebhookDispatcher extends Context.Service<WebhookDispatcher, {
  /**
   * Turns outbox events into deliveries for every endpoint that wants them and attempts every
   * delivery due now, until neither is left; returns events fanned out plus attempts made.
   */
  readonly deliverDue: Effect.Effect<number, StorageError>
  /** Runs the re-verification checks due now; returns checks made. */
  readonly checkDue: Effect.Effect<number, StorageError>
  /** Sends a verification request now; success lifts a suspension and starts replay. */
  readonly verify: (tenantId: string, endpointId: string) => Effect.Effect<VerifyResult, NotFound | StorageError>
  /** A new delivery of a `failed` or `dead_letter` one's event; the original row stays as it was. */
  readonly retry: (
    tenantId: string,
    endpointId: string,
    deliveryId: string
  ) => Effect.Effect<WebhookDeliveryRecord, NotFound | Conflict | StorageError>
  /** The engine's work, for hosts' workers and the test clock's drain. */
  readonly jobs: ReadonlyArray<BackgroundJob>
}>()("omnichannel-core/webhooks/WebhookDispatcher") {
  static readonly layer = Layer.effect(
    WebhookDispatcher,
    Effect.gen(function*() {
      const outbox = yield* OutboxStore
      const endpoints = yield* WebhookEndpointStore
      const deliveries = yield* WebhookDeliveryStore
      const tenants = yield* TenantStore
      const outbound = yield* OutboundHttp
      const notifier = yield* Notifier
      const transactor = yield* Transactor
      const DISPATCH = yield* DispatchSettings
      const signal = yield* OutboxSignal

      // The POST delivering `body` to `endpoint`, with its signature headers.
      const requestOf = (endpoint: WebhookEndpointRecord, body: string, signature: SignatureHeaders): OutboundRequest => ({
        method: "POST",
        url: endpoint.url,
        headers: {
          "content-type": "application/json",
          "user-agent": "omnichannel-core-webhooks/1",
          ...signature,
          ...(endpoint.authorization_header === null ? {} : { authorization: endpoint.authorization_header })
        },
        body,
        timeoutMs: endpoint.timeout_seconds * 1000,
        maxResponseBytes: DISPATCH.maxResponseBytes
      })

      const answered = (response: OutboundResponse): Outcome =>
        response.status >= 200 && response.status < 300
          ? { ok: true, status_code: response.status, time_ms: Math.round(response.timeMs), error: "" }
          : {
            ok: false,
            status_code: response.status,
            time_ms: Math.round(response.timeMs),
            error: response.status >= 300 && response.status < 400
              ? `HTTP ${response.status}: redirects are not followed`
              : `HTTP ${response.status}`
          }

      const unanswered = (error: OutboundError): Outcome => ({
        ok: false,
        status_code: null,
        time_ms: error.timeMs === undefined ? null : Math.round(error.timeMs),
        error: `${error.reason}: ${error.message}`
      })

      const send = Effect.fnUntraced(function*(endpoint: WebhookEndpointRecord, envelope: EventEnvelope) {
        const body = envelopeJson(envelope)
        const wall = yield* WallClock
        const signature = yield* sign({
          secret: endpoint.secret,
          messageId: envelope.id,
          timestampSeconds: wall.nowMillis() / 1000,
          body
        })
        return yield* outbound.request(requestOf(endpoint, body, signature)).pipe(
          Effect.map(answered),
          Effect.catchTag("OutboundError", (e) => Effect.succeed(unanswered(e)))
        )
      })

      const verification = (endpoint: WebhookEndpointRecord, reason: "manual" | "re-verification") =>
        Effect.gen(function*() {
          const id = yield* newId
          return yield* send(endpoint, {
            id,
            type: "webhook.verification",
            event_id: id,
            created_at: yield* now,
            tenant_id: endpoint.tenant_id,
            data: { webhook_endpoint_id: endpoint.id, reason }
          })
        })

      // Performs the endpoint machine's intents inside the caller's transaction; mail goes after commit.
      const perform = Effect.fnUntraced(function*(
        endpoint: WebhookEndpointRecord,
        intents: ReadonlyArray<EndpointMachine.EndpointIntent>,
        at: string
      ) {
        const mail: Array<Omit<Notification, "to">> = []
        for (const intent of intents) {
          switch (intent._tag) {
            case "QueueOutstanding":
              yield* deliveries.parkOutstanding(endpoint.id)
              break
            case "ReplayQueued":
              yield* deliveries.replayQueued(endpoint.id)
              break
            case "DeadLetterOutstanding":
              yield* deliveries.deadLetterOutstanding(endpoint.id, intent.reason, at)
              break
            default:
              mail.push({ tenant_id: endpoint.tenant_id, ...NOTIFICATIONS[intent._tag](endpoint) })
          }
        }
        return mail
      })

      const sendMail = (mail: ReadonlyArray<Omit<Notification, "to">>) =>
        Effect.forEach(mail, (message) =>
          Effect.gen(function*() {
            const tenant = yield* tenants.get(message.tenant_id)
            const to = Option.isSome(tenant) ? tenant.value.support_email : null
            if (to !== null) yield* notifier.send({ ...message, to })
          }), { discard: true })

      // Applies an endpoint event under the row lock, persists it and performs its intents.
      const moveEndpoint = (tenantId: string, endpointId: string, event: EndpointMachine.EndpointEvent) =>
        Effect.gen(function*() {
          const found = yield* endpoints.getForUpdate(tenantId, endpointId)
          if (Option.isNone(found)) return { endpoint: Option.none<WebhookEndpointRecord>(), mail: [] }
          const at = yield* now
          const { intents, state } = EndpointMachine.transition(found.value, event, at)
          const next = { ...found.value, ...state }
          if (state !== found.value) yield* endpoints.update(tenantId, { ...next, updated_at: at })
          return { endpoint: Option.some(next), mail: yield* perform(next, intents, at) }
        })

      const transitionOf = (state: DeliveryMachine.DeliveryState, outcome: Outcome | undefined, at: string) =>
        outcome === undefined
          ? { state, intents: [] }
          : DeliveryMachine.transition(
            state,
            outcome.ok
              ? { _tag: "AttemptSucceeded", status_code: outcome.status_code ?? 200, time_ms: outcome.time_ms ?? 0 }
              : { _tag: "AttemptFailed", status_code: outcome.status_code, time_ms: outcome.time_ms, error: outcome.error },
            at
          )

      // What a delivery's intents tell its endpoint's circuit breaker.
      const healthOf = (intents: ReadonlyArray<DeliveryMachine.DeliveryIntent>): EndpointMachine.EndpointEvent | undefined => {
        for (const intent of intents) {
          if (intent._tag === "ResetFailures") return { _tag: "DeliverySucceeded" }
          if (intent._tag === "CountFailure") return { _tag: "DeliveryFailed", error: intent.error }
        }
        return undefined
      }

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

      /** A save that only lands if the row is still in the state the transition started from. */
      const saveOf = (key: DeliveryKey, from: DeliveryMachine.DeliveryState, state: DeliveryMachine.DeliveryState) => ({
        state: { ...state, id: key.id, tenant_id: key.tenant_id },
        expected: { status: from.status, attempt_number: from.attempt_number }
      })

      /**
       * Records one endpoint's outcomes the careful way, in one transaction under the endpoint's lock
       * (which the bulk moves take too): each delivery read as it is now, the outcomes applied in the
       * order they came back, the endpoint moved and written once. A suspension in the middle parks
       * the endpoint's unfinished rows at once, so the batch's later failures land on parked rows and
       * are dropped, as for any attempt in flight when the breaker trips. A row that another worker
       * took over and recorded meanwhile keeps that worker's outcome. Resolves to the endpoint as
       * left (none if it is gone) and the mail to send.
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
          const mail: Array<Omit<Notification, "to">> = []
          for (let i = 0; i < results.length; i++) {
            const [delivery, outcome] = results[i]!
            const found = current.get(delivery.id)
            if (found === undefined) continue
            const { intents, state } = transitionOf(found.state, outcome, at)
            current.set(delivery.id, { from: found.from, state })
            const health = healthOf(intents)
            if (health === undefined || endpoint === undefined) continue
            const moved = EndpointMachine.transition(endpoint, health, at)
            endpoint = moved.state
            if (moved.intents.length > 0) {
              // The bulk move sees what this batch recorded so far; the rest is read again after it.
              yield* save(current)
              mail.push(...yield* perform(endpoint, moved.intents, at))
              current = yield* read(i + 1)
            }
          }
          yield* save(current)
          if (endpoint !== undefined && before !== undefined && endpoint !== before) {
            yield* endpoints.update(tenantId, { ...endpoint, updated_at: at })
          }
          return { endpoint, mail }
        }))

      /**
       * Records attempts' outcomes; an outcome of `undefined` means the delivery was not attempted
       * (its lease is just freed). The common case costs one statement: when an endpoint's machine,
       * fed the batch's results, would change nothing worth storing (see `worthStoring`; a healthy
       * endpoint's successes), its deliveries' transitions are computed from the state they were
       * claimed in and written as compare-and-sets, the whole batch at once, with no lock. Endpoints
       * whose breaker moves, and rows that changed meanwhile, go through `recordLocked`.
       * Resolves to the endpoints that no longer take deliveries, so the worker stops sending to them.
       */
      const record = (results: ReadonlyArray<Attempted>) =>
        Effect.gen(function*() {
          const at = yield* now
          const byEndpoint = new Map<string, Array<Attempted>>()
          for (const result of results) {
            const group = byEndpoint.get(result[0].webhook_endpoint_id)
            if (group === undefined) byEndpoint.set(result[0].webhook_endpoint_id, [result])
            else group.push(result)
          }
          const careful = new Map<string, Array<Attempted>>()
          const fast: Array<{
            readonly delivery: WebhookDeliveryRecord
            readonly outcome: Outcome | undefined
            readonly batch: Batch | undefined
            readonly state: DeliveryMachine.DeliveryState
          }> = []
          const stopped: Array<string> = []
          for (const [endpointId, group] of byEndpoint) {
            const seen = yield* endpoints.get(group[0]![0].tenant_id, endpointId)
            if (Option.isNone(seen)) {
              // Deleted: its deliveries went with it.
              stopped.push(endpointId)
              continue
            }
            let endpoint = seen.value
            let quiet = true
            const transitions = group.map(([delivery, outcome, batch]) => ({
              delivery,
              outcome,
              batch,
              ...transitionOf(delivery, outcome, at)
            }))
            // A success right after a success changes nothing at one instant (the machine's model test
            // checks it): a batch of successes moves the endpoint once.
            let afterSuccess: WebhookEndpointRecord | undefined
            for (const { intents } of transitions) {
              const health = healthOf(intents)
              if (health === undefined || (health._tag === "DeliverySucceeded" && endpoint === afterSuccess)) continue
              const moved = EndpointMachine.transition(endpoint, health, at)
              endpoint = moved.state
              if (health._tag === "DeliverySucceeded") afterSuccess = endpoint
              if (moved.intents.length > 0) quiet = false
            }
            // A delivery stored only now goes the quick way when it was attempted and its endpoint still
            // takes deliveries; otherwise it is placed under the endpoint's lock.
            const freshNeedsLock = group.some(([, outcome, batch]) =>
              batch !== undefined && (outcome === undefined || EndpointMachine.routeEvent(seen.value) !== "deliver")
            )
            if (quiet && !freshNeedsLock && !EndpointMachine.worthStoring(seen.value, endpoint)) {
              fast.push(...transitions)
              if (EndpointMachine.routeEvent(seen.value) !== "deliver") stopped.push(endpointId)
            } else {
              careful.set(endpointId, group)
            }
          }
          // Claimed deliveries are saved as compare-and-sets; fresh ones are stored once, as their attempt
          // left them, if their fan-out lease is still this worker's.
          const stored = fast.filter(({ batch }) => batch === undefined)
          const fresh = fast.filter(({ batch }) => batch !== undefined)
          const save = deliveries.saveMany(stored.map(({ delivery, state }) => saveOf(delivery, delivery, state)))
          const written = fresh.length === 0 ? yield* save : yield* transactor.withTransaction(
            Effect.andThen(storeHeld(fresh, ({ batch }) => batch, ({ delivery, state }) => ({ ...delivery, ...state })), save)
          )
          for (const { delivery, outcome } of stored) {
            if (written.has(delivery.id)) continue
            const group = careful.get(delivery.webhook_endpoint_id) ?? []
            group.push([delivery, outcome, undefined])
            careful.set(delivery.webhook_endpoint_id, group)
          }
          const mail: Array<Omit<Notification, "to">> = []
          for (const [endpointId, group] of careful) {
            const recorded = yield* recordLocked(group[0]![0].tenant_id, endpointId, group)
            mail.push(...recorded.mail)
            if (recorded.endpoint === undefined || EndpointMachine.routeEvent(recorded.endpoint) !== "deliver") {
              stopped.push(endpointId)
            }
          }
          yield* sendMail(mail)
          // A batch whose every delivery is stored now (or was not this worker's to store any more) lets
          // its fan-out lease go.
          const done: Array<Batch> = []
          for (const [, , batch] of results) {
            if (batch !== undefined && --batch.remaining === 0) done.push(batch)
          }
          yield* deliveries.releaseFanOuts(holdsOf(done))
          return stopped
        })

      // The delivery of `event` (outbox `seq`) to `endpoint`, made at `at` and placed by `placement`.
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

      const DELIVER: DeliveryMachine.Placement = { _tag: "Deliver" }

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
        const count = queued.get(endpoint.id) ?? (yield* deliveries.countQueued(endpoint.id))
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

      // Turns a batch of outbox events into deliveries. Taking the events stores the batch's fan-out lease in
      // the same step, so a round that finds nothing costs one query. Deliveries to attempt now are not
      // stored: this worker sends them and stores each once, as its attempt left it, while the lease holds
      // the batch. Those queued behind a suspension are stored at once, and a batch that nobody wants lets
      // its lease go. If the worker dies first, whoever takes the lease over stores what the batch lacked.
      const fanOut = (round: number) => Effect.gen(function*() {
        const at = yield* now
        const leaseUntil = addSeconds(at, DISPATCH.leaseSeconds)
        const batch: Batch = { hold: { id: newIdNow(), holder: newIdNow() }, remaining: 0 }
        const claimed = yield* deliveries.takeFanOut(DISPATCH.fanOutBatch, { ...batch.hold, fanned_at: at, lease_until: leaseUntil })
        if (claimed.length === 0) return NOTHING_FANNED
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
        return { events: claimed.length, leased }
      })

      /**
       * Takes over the fan-out leases of workers that died (their time passed) and stores what their
       * batches still lack: each event for every endpoint that wants it and has no delivery of it from
       * that fan-out, due at once (or queued behind a suspension), created at the fan-out time so it
       * keeps its place. Resolves to the deliveries stored.
       */
      const recoverFanOuts = (at: string) => Effect.gen(function*() {
        const holder = yield* newId
        const leases = yield* deliveries.claimExpiredFanOuts(at, addSeconds(at, DISPATCH.leaseSeconds), holder, DISPATCH.checkBatch)
        let stored = 0
        for (const lease of leases) {
          const recovered = yield* underLease(lease, Effect.gen(function*() {
            const byTenant = new Map<string, ReadonlyArray<WebhookEndpointRecord>>()
            const wanted: Array<readonly [WebhookEndpointRecord, EventEnvelope, number]> = []
            for (const { event, seq } of yield* outbox.getBySeqs(lease.seqs)) {
              for (const endpoint of yield* endpointsOf(byTenant, event.tenant_id)) {
                // An endpoint made after the fan-out never wanted the event.
                if (endpoint.created_at > lease.fanned_at || !wants(endpoint, event)) continue
                if (EndpointMachine.routeEvent(endpoint) !== "drop") wanted.push([endpoint, event, seq])
              }
            }
            const existing = yield* deliveries.existingAt(
              [...new Set(wanted.map(([endpoint]) => endpoint.id))],
              lease.fanned_at,
              lease.seqs
            )
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

      /**
       * One run of delivery work: fan-out and claims feed a local queue while `attemptConcurrency`
       * senders drain it and a recorder writes outcomes back in group commits (whatever came back
       * while the previous transaction ran goes into the next). The next batch is fetched while the
       * current one is in flight, so the connection pool stays busy.
       *
       * Without `running` (a drain) the run ends once there is nothing new to fan out and nothing due;
       * with it (a worker) it goes on looking every `idleMs` until `stopping`. Either way it ends only
       * after everything it sent is recorded, and returns events fanned out plus attempts made. A
       * storage failure stops the feeding, lets what is in flight finish and be recorded, and then
       * fails the run; deliveries it held come back when their lease passes.
       */
      const deliveryRun = (running: Running | undefined) => Effect.gen(function*() {
        const work = yield* Queue.bounded<Leased, Cause.Done>(DISPATCH.attemptBatch)
        const finished = yield* Queue.unbounded<Attempted, Cause.Done>()
        // Feed rounds so far, and for each endpoint the recorder found stopped (suspended, switched off,
        // deleted) the round it was in then: deliveries read with their endpoint in that round or
        // before are not sent. Those read later carry the endpoint as it is now (it may be back).
        let rounds = 0
        const stoppedIn = new Map<string, number>()
        let done = 0
        // Requests the senders have in flight (outcome not yet handed to the recorder).
        let inFlight = 0
        let lastExpiredLook: string | undefined
        // While claims keep finding nothing, a running worker claims only every few rounds: new
        // deliveries come from the fan-out anyway, and each claim is a round trip that a new
        // event would otherwise wait behind. Retries and replays wait a few rounds at most.
        let claimsFound = true
        let claimsSkipped = 0
        const feed = Effect.gen(function*() {
          while (running === undefined || !(yield* Deferred.isDone(running.stopping))) {
            // Events this process commits from here on end the idle wait below.
            const mark = signal.mark()
            const at = yield* now
            const leaseUntil = addSeconds(at, DISPATCH.leaseSeconds)
            const claimed: Array<WebhookDeliveryRecord> = []
            if (running === undefined || claimsFound || claimsSkipped >= CLAIM_AT_LEAST_EVERY_ROUNDS) {
              claimsSkipped = 0
              // A dead worker's claims and fan-outs are looked for at the start of a run and then every few
              // seconds: they wait out a lease of minutes anyway. What its fan-outs lacked is stored first,
              // so this round's claim takes it.
              const lookForExpired = lastExpiredLook === undefined || at >= addSeconds(lastExpiredLook, EXPIRED_LOOK_SECONDS)
              if (lookForExpired) {
                lastExpiredLook = at
                yield* recoverFanOuts(at)
              }
              claimed.push(...yield* deliveries.claimDue(at, leaseUntil, DISPATCH.attemptBatch))
              if (lookForExpired) claimed.push(...yield* deliveries.claimExpired(at, leaseUntil, DISPATCH.attemptBatch))
              claimsFound = claimed.length > 0
            } else {
              claimsSkipped += 1
            }
            rounds += 1
            const due = yield* withEndpoints(claimed, rounds, Date.parse(leaseUntil))
            const fanned = yield* fanOut(rounds)
            done += fanned.events
            if (fanned.events === 0 && due.length === 0) {
              if (running === undefined) return
              yield* Effect.raceFirst(idle(running), signal.after(mark))
              continue
            }
            yield* Queue.offerAll(work, [...due, ...fanned.leased])
          }
        }).pipe(Effect.ensuring(Queue.end(work)), Effect.exit)
        // The senders: one pump keeping `attemptConcurrency` requests in flight. A finished request hands
        // its outcome to the recorder and starts the next delivery from the queue at once, so a delivery
        // costs no fiber of its own; the pump's fiber only waits while the queue is empty or every
        // request slot is taken. Interrupted, it abandons what is in flight.
        const clock = yield* Clock.Clock
        const wall = yield* WallClock
        const senders = Effect.suspend(() => {
          let ended = false
          let pumping = false
          let failure: unknown = undefined
          let wake: (() => void) | undefined
          const abandons = new Set<() => void>()
          // A request in flight came to `outcome` (none if it was never answered nor failed).
          const settle = (leased: Leased, outcome: Outcome | undefined) => {
            inFlight -= 1
            Queue.offerUnsafe(finished, [leased.delivery, outcome, leased.batch])
            pump()
          }
          // What a request came to. Neither an answer nor a failed request is a defect: it is kept to fail
          // the run, as it would have failed a fiber, and the delivery is let go.
          const outcomeOf = (exit: Exit.Exit<OutboundResponse, OutboundError>): Outcome | undefined => {
            if (Exit.isSuccess(exit)) return answered(exit.value)
            const error = Cause.findErrorOption(exit.cause)
            if (Option.isSome(error)) return unanswered(error.value)
            failure ??= Cause.squash(exit.cause)
            return undefined
          }
          const post = (leased: Leased, endpoint: WebhookEndpointRecord, body: string, signature: SignatureHeaders) => {
            // `send` may answer before it returns (a URL refused at once): then there is nothing to abandon.
            let settled = false
            let abandon: (() => void) | undefined
            abandon = outbound.send(requestOf(endpoint, body, signature), (exit) => {
              settled = true
              if (abandon !== undefined) abandons.delete(abandon)
              settle(leased, outcomeOf(exit))
            })
            if (!settled) abandons.add(abandon)
          }
          const start = (leased: Leased) => {
            const { delivery, endpoint, leaseUntil, round } = leased
            done += 1
            // Not sent: the endpoint is gone or stopped, or the lease would run out before the request
            // could time out (a slow receiver held the queue up), which would let another worker send
            // it too. It is let go (a fresh one stored due) and claimed again.
            const leaseLeft = (leaseUntil - clock.currentTimeMillisUnsafe()) / 1000
            if (
              endpoint === undefined || (stoppedIn.get(endpoint.id) ?? -1) >= round ||
              leaseLeft < Math.min(endpoint.timeout_seconds + LEASE_MARGIN_SECONDS, DISPATCH.leaseSeconds / 2)
            ) {
              return void Queue.offerUnsafe(finished, [delivery, undefined, leased.batch])
            }
            inFlight += 1
            const body = envelopeJson(delivery.envelope)
            const input = { secret: endpoint.secret, messageId: delivery.envelope.id, timestampSeconds: wall.nowMillis() / 1000, body }
            signThen(input, (signed) => {
              if (Exit.isSuccess(signed)) return post(leased, endpoint, body, signed.value)
              failure ??= Cause.squash(signed.cause)
              settle(leased, undefined)
            })
          }
          // Starts deliveries from the queue while slots are free; wakes the fiber when it has to act.
          const pump = () => {
            if (pumping) return
            pumping = true
            try {
              while (failure === undefined && !ended && inFlight < DISPATCH.attemptConcurrency) {
                const next = Queue.takeUnsafe(work)
                if (next === undefined) break
                if (Exit.isFailure(next)) ended = true
                else start(next.value)
              }
            } catch (error) {
              failure ??= error
            } finally {
              pumping = false
            }
            const act = failure !== undefined || (ended ? inFlight === 0 : inFlight < DISPATCH.attemptConcurrency)
            if (act && wake !== undefined) {
              const resume = wake
              wake = undefined
              resume()
            }
          }
          // The fiber waits for a free slot, or for the last answer once the queue ended.
          const woken = Effect.callback<void>((resume) => {
            wake = () => resume(Effect.void)
            return Effect.sync(() => {
              wake = undefined
            })
          })
          return Effect.gen(function*() {
            for (;;) {
              pump()
              if (failure !== undefined) return yield* Effect.die(failure)
              if (ended) {
                if (inFlight === 0) return
                yield* woken
              } else if (inFlight < DISPATCH.attemptConcurrency) {
                // The queue is empty: wait for the feed. A defect met meanwhile fails the run with the next
                // delivery taken, at the latest the one it let go, claimed again within a few rounds.
                const next = yield* Queue.take(work).pipe(Effect.option)
                if (Option.isNone(next)) ended = true
                else start(next.value)
              } else {
                yield* woken
              }
            }
          }).pipe(Effect.ensuring(Effect.sync(() => {
            ended = true
            for (const abandon of abandons) abandon()
          })))
        }).pipe(Effect.ensuring(Queue.end(finished)))
        const recorder = Effect.gen(function*() {
          for (;;) {
            const batch = yield* Queue.takeAll(finished).pipe(Effect.option)
            if (Option.isNone(batch)) return
            const results: Array<Attempted> = [...batch.value]
            // While more is on its way, a running worker lets a small batch gather for a moment: a group
            // commit's statements cost about the same for 20 outcomes as for 250, and receivers already
            // have what is recorded here. Once nothing is in flight, what came back is written at once.
            if (running !== undefined && results.length < RECORD_GATHER && inFlight > 0) {
              yield* idle(running, RECORD_GATHER_MS)
              results.push(...yield* Queue.clear(finished))
            }
            for (const endpointId of yield* record(results)) stoppedIn.set(endpointId, rounds)
          }
        }).pipe(Effect.exit)
        const [fed, , recorded] = yield* Effect.all([feed, senders, recorder], { concurrency: "unbounded" })
        if (Exit.isFailure(fed)) return yield* Effect.failCause(fed.cause)
        if (Exit.isFailure(recorded)) return yield* Effect.failCause(recorded.cause)
        return done
      })

      const deliverDue = deliveryRun(undefined)

      const check = (endpoint: WebhookEndpointRecord, reason: "manual" | "re-verification") =>
        Effect.gen(function*() {
          const outcome = yield* verification(endpoint, reason)
          const event: EndpointMachine.EndpointEvent = reason === "manual"
            ? outcome.ok ? { _tag: "ManualVerifySucceeded" } : { _tag: "ManualVerifyFailed", error: outcome.error }
            : outcome.ok
            ? { _tag: "ReverificationSucceeded" }
            : { _tag: "ReverificationFailed", error: outcome.error }
          const moved = yield* transactor.withTransaction(moveEndpoint(endpoint.tenant_id, endpoint.id, event))
          yield* sendMail(moved.mail)
          return { endpoint: Option.getOrElse(moved.endpoint, () => endpoint), outcome }
        })

      const checkDue = Effect.gen(function*() {
        const at = yield* now
        const claimed = yield* endpoints.claimDueChecks(at, addSeconds(at, DISPATCH.leaseSeconds), DISPATCH.checkBatch)
        yield* Effect.forEach(claimed, (endpoint) => check(endpoint, "re-verification"), {
          concurrency: DISPATCH.checkBatch,
          discard: true
        })
        return claimed.length
      })

      return WebhookDispatcher.of({
        deliverDue,
        checkDue,
        verify: Effect.fn("WebhookDispatcher.verify")(function*(tenantId, endpointId) {
          const endpoint = yield* endpoints.get(tenantId, endpointId)
          if (Option.isNone(endpoint)) return yield* new NotFound({ message: `Webhook endpoint ${endpointId} not found` })
          return yield* check(endpoint.value, "manual")
        }),
        retry: Effect.fn("WebhookDispatcher.retry")(function*(tenantId, endpointId, deliveryId) {
          return yield* transactor.withTransaction(Effect.gen(function*() {
            const endpoint = yield* endpoints.get(tenantId, endpointId)
            const original = yield* deliveries.get(tenantId, endpointId, deliveryId)
            if (Option.isNone(endpoint) || Option.isNone(original)) {
              return yield* new NotFound({ message: `Delivery ${deliveryId} not found` })
            }
            if (!DeliveryMachine.canRetry(original.value)) {
              return yield* new Conflict({
                message: `Delivery ${deliveryId} is ${original.value.status}; only failed or dead_letter deliveries can be retried`
              })
            }
            const at = yield* now
            const placement: DeliveryMachine.Placement = EndpointMachine.statusOf(endpoint.value) === "suspended"
              ? { _tag: "Queue", queued: yield* deliveries.countQueued(endpointId) }
              : { _tag: "Deliver" }
            const { state } = DeliveryMachine.make(endpoint.value, placement, at)
            const retried: WebhookDeliveryRecord = {
              ...original.value,
              ...state,
              id: yield* newId,
              previous_delivery_id: original.value.id,
              created_at: at
            }
            yield* deliveries.insertMany([retried])
            return retried
          }))
        }),
        jobs: [
          { name: "webhooks.deliveries", runDue: deliverDue, runUntil: (running) => Effect.asVoid(deliveryRun(running)) },
          // Checks are minutes apart: looking every second is plenty.
          { name: "webhooks.re-verification", runDue: checkDue, pollEveryMs: 1_000 }
        ]
      })
    })
  )
}
