import { Clock, Context, Effect, Metric } from "effect"
import { OperatorErrorKind } from "./OperatorErrorKind.ts"

/**
 * The service's operational metrics, as Effect `Metric`s in the process's registry: the host serves
 * them in the Prometheus text format (`GET /metrics`) or exports them over OTLP. Labels are closed
 * sets (outcome classes, states, kinds); a tenant's or an endpoint's id is a label only when the host
 * turns `tenantLabels` on, since one series per tenant is a cardinality it must choose.
 */

/** How metrics are labelled: `tenantLabels` adds `tenant_id` (and `endpoint_id` on delivery attempts). */
export const MetricsSettings = Context.Reference<{ readonly tenantLabels: boolean }>(
  "omnichannel-core/kernel/MetricsSettings",
  { defaultValue: () => ({ tenantLabels: false }) }
)

type Labels = Readonly<Record<string, string>>

/** `metric` with labels, one labelled metric kept per label set (a metric's key is computed once). */
const labelled = <In, State>(metric: Metric.Metric<In, State>) => {
  const made = new Map<string, Metric.Metric<In, State>>()
  return (labels: Labels): Metric.Metric<In, State> => {
    let key = ""
    for (const name in labels) key += `${name}=${labels[name]}\u0000`
    let found = made.get(key)
    if (found === undefined) {
      found = Metric.withAttributes(metric, labels)
      made.set(key, found)
    }
    return found
  }
}

const counter = (name: string, description: string) => labelled(Metric.counter(name, { description, incremental: true }))
const gauge = (name: string, description: string) => labelled(Metric.gauge(name, { description }))

// ---------------------------------------------------------------------------------------------------
// Webhook deliveries

/** What one delivery attempt came to: a 2xx, or the class of its failure. */
export const DELIVERY_OUTCOMES = [
  "success",
  "timeout",
  "connection",
  "http_4xx",
  "http_5xx",
  "refused_address",
  "other"
] as const
/** What one delivery attempt came to. */
export type DeliveryOutcome = typeof DELIVERY_OUTCOMES[number]

/** An attempt's result as the webhook engine records it (its `Outcome`). */
export interface AttemptResult {
  readonly ok: boolean
  readonly status_code: number | null
  readonly time_ms: number | null
  readonly error: string
}

/** The delivery an attempt was for: whose it is and when its event happened. */
export interface AttemptedDelivery {
  readonly tenant_id: string
  readonly webhook_endpoint_id: string
  readonly envelope: { readonly created_at: string }
}

/**
 * The class of an attempt: a 2xx is `success`, another answer its status class (`other` for 1xx and
 * 3xx, which are not followed); a request that got no answer is classed by the outbound error's
 * reason, which its message starts with (`Timeout: …`, `Connection: …`, `UrlNotAllowed: …`).
 */
export const deliveryOutcomeOf = (result: AttemptResult): DeliveryOutcome => {
  if (result.ok) return "success"
  const status = result.status_code
  if (status !== null) return status >= 500 && status <= 599 ? "http_5xx" : status >= 400 && status <= 499 ? "http_4xx" : "other"
  const reason = result.error.slice(0, result.error.indexOf(":"))
  return reason === "Timeout"
    ? "timeout"
    : reason === "Connection"
    ? "connection"
    : reason === "UrlNotAllowed"
    ? "refused_address"
    : "other"
}

const deliveryAttempts = counter(
  "omni_webhook_delivery_attempts_total",
  "Webhook delivery attempts by outcome: success, or the class of the failure"
)
const attemptDuration = Metric.histogram("omni_webhook_delivery_attempt_duration_seconds", {
  description: "Seconds from sending a webhook delivery to the end of the receiver's answer (or the failure)",
  boundaries: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60]
})
const deliveryLag = Metric.histogram("omni_webhook_delivery_lag_seconds", {
  description: "Seconds from an event's creation to a receiver's 2xx answer for it, retries included",
  boundaries: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 14_400, 86_400]
})

/**
 * Resolves to the webhook engine's attempt observer: called once per request made, it counts the
 * attempt by outcome and records its duration and, for a 2xx, the lag since the event by the Clock.
 * Synchronous and allocation-light, for the delivery pump's callbacks.
 */
export const makeAttemptObserver = Effect.gen(function*() {
  const context = yield* Effect.context<never>()
  const clock = yield* Clock.Clock
  const { tenantLabels } = yield* MetricsSettings
  return (delivery: AttemptedDelivery, result: AttemptResult): void => {
    const outcome = deliveryOutcomeOf(result)
    const labels: Labels = tenantLabels
      ? { outcome, tenant_id: delivery.tenant_id, endpoint_id: delivery.webhook_endpoint_id }
      : { outcome }
    deliveryAttempts(labels).updateUnsafe(1, context)
    if (result.time_ms !== null) attemptDuration.updateUnsafe(result.time_ms / 1000, context)
    if (result.ok) {
      const lagMs = clock.currentTimeMillisUnsafe() - Date.parse(delivery.envelope.created_at)
      deliveryLag.updateUnsafe(Math.max(0, lagMs) / 1000, context)
    }
  }
})

/** The delivery states whose size is a gauge: the work waiting, and what was given up on. */
export const GAUGED_DELIVERY_STATES = ["pending", "retrying", "queued", "dead_letter"] as const
/** A delivery state whose size is a gauge. */
export type GaugedDeliveryState = typeof GAUGED_DELIVERY_STATES[number]

const deliveriesByState = gauge(
  "omni_webhook_deliveries",
  "Stored webhook deliveries in state pending, retrying, queued (behind a suspension) and dead_letter"
)
const endpointsSuspended = gauge("omni_webhook_endpoints_suspended", "Webhook endpoints suspended by the circuit breaker")

/** A count read from the store: per tenant when tenant labels are on (`tenant_id` null otherwise). */
export interface CountOf {
  readonly tenant_id: string | null
  readonly count: number
}

/**
 * Resolves to the setter of the queue gauges from counts read in the store. A series set before and
 * missing from the new counts (a state or tenant that emptied) is set to 0, never left stale.
 */
export const makeQueueGauges = Effect.sync(() => {
  let previous = new Map<string, Metric.Metric<number, unknown>>()
  return (
    deliveries: ReadonlyArray<CountOf & { readonly status: GaugedDeliveryState }>,
    suspended: ReadonlyArray<CountOf>
  ): Effect.Effect<void> =>
    Effect.gen(function*() {
      const context = yield* Effect.context<never>()
      const { tenantLabels } = yield* MetricsSettings
      const next = new Map<string, Metric.Metric<number, unknown>>()
      const set = (family: "deliveries" | "suspended", labels: Labels, value: number) => {
        const metric = family === "deliveries" ? deliveriesByState(labels) : endpointsSuspended(labels)
        metric.updateUnsafe(value, context)
        next.set(`${family} ${JSON.stringify(labels)}`, metric)
      }
      const tenant = (row: CountOf): Labels => tenantLabels && row.tenant_id !== null ? { tenant_id: row.tenant_id } : {}
      // Without tenant labels every state is a series, 0 when none is stored.
      if (!tenantLabels) {
        for (const state of GAUGED_DELIVERY_STATES) set("deliveries", { state }, 0)
        set("suspended", {}, 0)
      }
      for (const row of deliveries) set("deliveries", { state: row.status, ...tenant(row) }, row.count)
      for (const row of suspended) set("suspended", tenant(row), row.count)
      for (const [key, metric] of previous) if (!next.has(key)) metric.updateUnsafe(0, context)
      previous = next
    })
})

// ---------------------------------------------------------------------------------------------------
// Inbound traffic

/** Where an inbound payload came from. */
export type InboundSourceLabel = "chatapp" | "email"

const inboundReceived = counter(
  "omni_inbound_payloads_received_total",
  "Inbound payloads received by source and outcome: accepted (stored), rejected (signature or secret), invalid, too_large, unavailable"
)
const inboundProcessed = counter(
  "omni_inbound_payloads_processed_total",
  "Tries at processing stored inbound payloads by source and outcome: processed, retry (tried again later), failed (given up)"
)

const RECEIVED_OUTCOMES = ["accepted", "rejected", "invalid", "too_large", "unavailable"] as const
const PROCESSED_OUTCOMES = ["processed", "retry", "failed"] as const
const INBOUND_SOURCES: ReadonlyArray<InboundSourceLabel> = ["chatapp", "email"]

/** The receipt outcome an inbound route's answer tells; none for what was no payload (a 404 or 405). */
const receivedOutcomeOf = (status: number): typeof RECEIVED_OUTCOMES[number] | undefined =>
  status === 200
    ? "accepted"
    : status === 401
    ? "rejected"
    : status === 400 || status === 415
    ? "invalid"
    : status === 413
    ? "too_large"
    : status === 503
    ? "unavailable"
    : undefined

/** Counts a payload an inbound route answered with `response` (an operator webhook, a received email). */
export const countInboundReceived = (source: InboundSourceLabel) => (response: Response): Effect.Effect<void> =>
  countInboundAnswered(source, response.status)

/** Counts a payload an inbound route answered with `status`. */
export const countInboundAnswered = (source: InboundSourceLabel, status: number): Effect.Effect<void> => {
  const outcome = receivedOutcomeOf(status)
  return outcome === undefined ? Effect.void : Metric.update(inboundReceived({ source, outcome }), 1)
}

/** Counts one try at processing a stored payload, by the status it left the payload in. */
export const countInboundProcessed = (
  source: InboundSourceLabel,
  status: "processed" | "pending" | "failed"
): Effect.Effect<void> =>
  Metric.update(inboundProcessed({ source, outcome: status === "pending" ? "retry" : status }), 1)

// ---------------------------------------------------------------------------------------------------
// The chat-app operator

/** The operator's calls, as the `operation` label names them. */
export const OPERATOR_OPERATIONS = [
  "send_message",
  "list_templates",
  "create_template",
  "browse_library",
  "phone_number",
  "fetch_media",
  "upload_media"
] as const

/** The operator's error kinds (`OperatorErrorKind`). */
const OPERATOR_ERROR_KINDS = OperatorErrorKind.literals

const operatorErrors = counter(
  "omni_operator_errors_total",
  "Failed calls to the chat-app operator by operation and error kind"
)

/** Counts one failed operator call. */
export const countOperatorError = (
  operation: typeof OPERATOR_OPERATIONS[number],
  kind: typeof OPERATOR_ERROR_KINDS[number]
): Effect.Effect<void> => Metric.update(operatorErrors({ operation, kind }), 1)

// ---------------------------------------------------------------------------------------------------
// Campaigns, summaries and credits

const CAMPAIGN_RECIPIENT_STATES = ["pending", "sending", "sent", "delivered", "read", "failed", "skipped"] as const

const campaignRecipients = counter(
  "omni_campaign_recipients_total",
  "Campaign recipients written into each state (planned as pending or skipped, then sending, sent, delivered, read, failed)"
)

/** Counts recipients written into their `state`. */
export const countCampaignRecipients = (
  recipients: ReadonlyArray<{ readonly tenant_id: string; readonly state: typeof CAMPAIGN_RECIPIENT_STATES[number] }>
): Effect.Effect<void> =>
  Effect.gen(function*() {
    if (recipients.length === 0) return
    const context = yield* Effect.context<never>()
    const { tenantLabels } = yield* MetricsSettings
    for (const { tenant_id, state } of recipients) {
      campaignRecipients(tenantLabels ? { state, tenant_id } : { state }).updateUnsafe(1, context)
    }
  })

const SUMMARY_OUTCOMES = ["ok", "failed"] as const
const SUMMARY_KINDS = ["image", "pdf"] as const

const summaries = counter("omni_summaries_total", "AI summary generations by outcome (ok, failed) and file kind (image, pdf)")
const creditsCharged = counter("omni_credits_charged_total", "AI credits charged to tenants' ledgers, by reason")

/**
 * Counts one summary generation that ended `outcome`, and the `credits` charged for it (0 for none),
 * once its outcome and charge are committed, so a generation taken over or charged before counts
 * nothing twice.
 */
export const countSummarySettled = (
  tenantId: string,
  outcome: typeof SUMMARY_OUTCOMES[number],
  kind: typeof SUMMARY_KINDS[number],
  credits: number
): Effect.Effect<void> =>
  Effect.gen(function*() {
    const { tenantLabels } = yield* MetricsSettings
    const tenant: Labels = tenantLabels ? { tenant_id: tenantId } : {}
    yield* Metric.update(summaries({ outcome, kind, ...tenant }), 1)
    if (credits > 0) yield* Metric.update(creditsCharged({ reason: "summary", ...tenant }), credits)
  })

// ---------------------------------------------------------------------------------------------------

/**
 * Registers every series with a closed label set at 0, so a scrape shows each metric (and `rate`
 * sees each series) before the first event. Series labelled by tenant appear when first written.
 */
export const registerMetrics: Effect.Effect<void> = Effect.gen(function*() {
  const context = yield* Effect.context<never>()
  const { tenantLabels } = yield* MetricsSettings
  const touch = (metric: Metric.Metric<never, unknown>) => void metric.valueUnsafe(context)
  for (const source of INBOUND_SOURCES) {
    for (const outcome of RECEIVED_OUTCOMES) touch(inboundReceived({ source, outcome }))
    for (const outcome of PROCESSED_OUTCOMES) touch(inboundProcessed({ source, outcome }))
  }
  for (const operation of OPERATOR_OPERATIONS) {
    for (const kind of OPERATOR_ERROR_KINDS) touch(operatorErrors({ operation, kind }))
  }
  touch(attemptDuration)
  touch(deliveryLag)
  if (tenantLabels) return
  for (const outcome of DELIVERY_OUTCOMES) touch(deliveryAttempts({ outcome }))
  for (const state of GAUGED_DELIVERY_STATES) touch(deliveriesByState({ state }))
  touch(endpointsSuspended({}))
  for (const state of CAMPAIGN_RECIPIENT_STATES) touch(campaignRecipients({ state }))
  for (const outcome of SUMMARY_OUTCOMES) for (const kind of SUMMARY_KINDS) touch(summaries({ outcome, kind }))
  touch(creditsCharged({ reason: "summary" }))
})
