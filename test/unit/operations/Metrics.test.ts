import { Effect, Layer, Metric } from "effect"
import { PrometheusMetrics } from "effect/observability"
import { TestClock } from "effect/testing"
import { describe, expect, it } from "vitest"
import { countingOperatorErrors } from "../../../src/app/OperationsMetrics.ts"
import {
  type AttemptResult,
  deliveryOutcomeOf,
  makeAttemptObserver,
  countSummarySettled,
  makeQueueGauges,
  MetricsSettings,
  registerMetrics
} from "../../../src/kernel/Metrics.ts"
import { ChatPlatform, ChatPlatformError, type ChatPlatformErrorKind } from "../../../src/ports/ChatPlatform.ts"
import { OutboundError } from "../../../src/ports/OutboundHttp.ts"
import { answered, unanswered } from "../../../src/webhooks/DeliveryAttempt.ts"
import { parsePrometheusText, type Scrape } from "../../support/PrometheusText.ts"

const T0 = Date.parse("2026-11-22T12:00:00.000Z")

/** Runs `effect` against a fresh metric registry and a test clock at T0, and scrapes what it recorded. */
const scrapeAfter = <E>(effect: Effect.Effect<void, E>, tenantLabels = false): Promise<Scrape> =>
  Effect.runPromise(
    Effect.gen(function*() {
      yield* TestClock.setTime(T0)
      yield* effect
      return parsePrometheusText(yield* PrometheusMetrics.format())
    }).pipe(
      Effect.provide(Layer.mergeAll(TestClock.layer(), Layer.succeed(MetricsSettings, { tenantLabels }))),
      Effect.provideService(Metric.MetricRegistry, new Map())
    )
  )

const response = (status: number, timeMs = 12) => answered({ status, headers: {}, body: new Uint8Array(), timeMs })
const failure = (reason: OutboundError["reason"], timeMs?: number) =>
  unanswered(new OutboundError({ reason, message: "what the client said", ...(timeMs === undefined ? {} : { timeMs }) }))

const delivery = (createdAt: string) => ({
  tenant_id: "tenant-1",
  webhook_endpoint_id: "endpoint-1",
  envelope: { created_at: createdAt }
})

describe("the class of a delivery attempt", () => {
  it.each([
    [200, "success"],
    [204, "success"],
    [299, "success"],
    [400, "http_4xx"],
    [404, "http_4xx"],
    [410, "http_4xx"],
    [429, "http_4xx"],
    [499, "http_4xx"],
    [500, "http_5xx"],
    [503, "http_5xx"],
    [599, "http_5xx"],
    [101, "other"],
    [301, "other"],
    [302, "other"],
    [304, "other"]
  ] as const)("an answer %i is %s", (status, outcome) => {
    expect(deliveryOutcomeOf(response(status))).toBe(outcome)
  })

  it.each([
    ["Timeout", "timeout"],
    ["Connection", "connection"],
    ["UrlNotAllowed", "refused_address"],
    ["TooLarge", "other"]
  ] as const)("a request that got no answer for %s is %s", (reason, outcome) => {
    expect(deliveryOutcomeOf(failure(reason, 5000))).toBe(outcome)
    expect(deliveryOutcomeOf(failure(reason))).toBe(outcome)
  })

  it("reads the reason, not words of the message that look like one", () => {
    const result: AttemptResult = { ok: false, status_code: null, time_ms: null, error: "Connection: Timeout: UrlNotAllowed" }
    expect(deliveryOutcomeOf(result)).toBe("connection")
    expect(deliveryOutcomeOf({ ...result, error: "something else entirely" })).toBe("other")
  })
})

describe("the attempt observer", () => {
  it("counts each attempt by outcome, records its duration, and the lag since the event for a 2xx only", async () => {
    const scrape = await scrapeAfter(Effect.gen(function*() {
      const observe = yield* makeAttemptObserver
      // The event happened 90 s before the first answer.
      observe(delivery("2026-11-22T11:58:30.000Z"), response(204, 40))
      yield* TestClock.adjust("30 seconds")
      observe(delivery("2026-11-22T11:58:30.000Z"), response(200, 2000))
      observe(delivery("2026-11-22T11:58:30.000Z"), response(503, 7))
      observe(delivery("2026-11-22T11:58:30.000Z"), failure("Timeout", 5000))
      observe(delivery("2026-11-22T11:58:30.000Z"), failure("UrlNotAllowed"))
    }))
    const attempts = "omni_webhook_delivery_attempts_total"
    expect(scrape.families.get(attempts)?.type).toBe("counter")
    expect(scrape.value(attempts, { outcome: "success" })).toBe(2)
    expect(scrape.value(attempts, { outcome: "http_5xx" })).toBe(1)
    expect(scrape.value(attempts, { outcome: "timeout" })).toBe(1)
    expect(scrape.value(attempts, { outcome: "refused_address" })).toBe(1)
    // A refusal before any request has no duration.
    expect(scrape.value("omni_webhook_delivery_attempt_duration_seconds_count")).toBe(4)
    expect(scrape.value("omni_webhook_delivery_attempt_duration_seconds_sum")).toBeCloseTo(0.04 + 2 + 0.007 + 5, 9)
    expect(scrape.value("omni_webhook_delivery_attempt_duration_seconds_bucket", { le: "0.05" })).toBe(2)
    // Lag: 90 s and 120 s, by the Clock.
    expect(scrape.value("omni_webhook_delivery_lag_seconds_count")).toBe(2)
    expect(scrape.value("omni_webhook_delivery_lag_seconds_sum")).toBe(210)
    expect(scrape.value("omni_webhook_delivery_lag_seconds_bucket", { le: "60" })).toBe(0)
    expect(scrape.value("omni_webhook_delivery_lag_seconds_bucket", { le: "300" })).toBe(2)
  })

  it("labels attempts with tenant and endpoint only when tenant labels are on", async () => {
    const observe = Effect.map(makeAttemptObserver, (f) => f(delivery("2026-11-22T12:00:00.000Z"), response(204)))
    const plain = await scrapeAfter(observe)
    expect(plain.families.get("omni_webhook_delivery_attempts_total")?.samples).toEqual([
      { name: "omni_webhook_delivery_attempts_total", labels: { outcome: "success" }, value: 1 }
    ])
    const labelled = await scrapeAfter(observe, true)
    expect(labelled.families.get("omni_webhook_delivery_attempts_total")?.samples).toEqual([
      {
        name: "omni_webhook_delivery_attempts_total",
        labels: { outcome: "success", tenant_id: "tenant-1", endpoint_id: "endpoint-1" },
        value: 1
      }
    ])
  })
})

describe("the queue gauges", () => {
  it("show each state, 0 when none is stored, and go back to 0 when a state empties", async () => {
    const scrapes: Array<Scrape> = []
    await scrapeAfter(Effect.gen(function*() {
      const set = yield* makeQueueGauges
      yield* set([{ status: "retrying", tenant_id: null, count: 4 }, { status: "queued", tenant_id: null, count: 20 }], [
        { tenant_id: null, count: 1 }
      ])
      scrapes.push(parsePrometheusText(yield* PrometheusMetrics.format()))
      yield* set([{ status: "pending", tenant_id: null, count: 20 }], [])
      scrapes.push(parsePrometheusText(yield* PrometheusMetrics.format()))
    }))
    const states = (scrape: Scrape) =>
      Object.fromEntries(["pending", "retrying", "queued", "dead_letter"].map((state) => [state, scrape.value("omni_webhook_deliveries", { state })]))
    expect(scrapes[0]!.families.get("omni_webhook_deliveries")?.type).toBe("gauge")
    expect(states(scrapes[0]!)).toEqual({ pending: 0, retrying: 4, queued: 20, dead_letter: 0 })
    expect(scrapes[0]!.value("omni_webhook_endpoints_suspended")).toBe(1)
    expect(states(scrapes[1]!)).toEqual({ pending: 20, retrying: 0, queued: 0, dead_letter: 0 })
    expect(scrapes[1]!.value("omni_webhook_endpoints_suspended")).toBe(0)
  })

  it("per tenant when tenant labels are on: a tenant whose queue emptied reads 0, not its last count", async () => {
    const scrape = await scrapeAfter(Effect.gen(function*() {
      const set = yield* makeQueueGauges
      yield* set([{ status: "queued", tenant_id: "a", count: 3 }, { status: "queued", tenant_id: "b", count: 5 }], [
        { tenant_id: "a", count: 1 }
      ])
      yield* set([{ status: "queued", tenant_id: "b", count: 6 }], [])
    }), true)
    expect(scrape.families.get("omni_webhook_deliveries")?.samples.map((s) => [s.labels, s.value])).toEqual([
      [{ state: "queued", tenant_id: "a" }, 0],
      [{ state: "queued", tenant_id: "b" }, 6]
    ])
    expect(scrape.value("omni_webhook_endpoints_suspended", { tenant_id: "a" })).toBe(0)
  })
})

describe("operator errors", () => {
  const refusing = (kind: ChatPlatformErrorKind) => {
    const error = new ChatPlatformError({
      kind,
      code: null,
      subcode: null,
      message: "refused",
      userTitle: null,
      userMessage: null,
      fbtraceId: null,
      httpStatus: null
    })
    return ChatPlatform.of({
      name: "refusing",
      sendMessage: () => Effect.fail(error),
      listTemplates: () => Effect.succeed({ items: [], after: null }),
      createTemplate: () => Effect.fail(error),
      browseLibrary: () => Effect.fail(error),
      phoneNumber: () => Effect.fail(error),
      fetchMedia: () => Effect.fail(error),
      uploadMedia: () => Effect.fail(error)
    })
  }
  const credentials = { phoneNumberId: "1", businessAccountId: "2", accessToken: "token" }

  it("are counted by operation and kind as they pass through the port; successes are not", async () => {
    const scrape = await scrapeAfter(Effect.gen(function*() {
      yield* registerMetrics
      const rateLimited = countingOperatorErrors(refusing("rate_limited"))
      const auth = countingOperatorErrors(refusing("auth"))
      for (let i = 0; i < 3; i++) yield* Effect.ignore(rateLimited.sendMessage(credentials, "15550001", { type: "text" }))
      yield* Effect.ignore(auth.fetchMedia(credentials, "media", { maxBytes: 10 }))
      yield* rateLimited.listTemplates(credentials, { limit: 10 })
    }))
    const errors = "omni_operator_errors_total"
    expect(scrape.value(errors, { operation: "send_message", kind: "rate_limited" })).toBe(3)
    expect(scrape.value(errors, { operation: "fetch_media", kind: "auth" })).toBe(1)
    expect(scrape.sum(errors)).toBe(4)
    expect(scrape.sum(errors, { operation: "list_templates" })).toBe(0)
  })

  it("keep the error the caller sees", async () => {
    const exit = await Effect.runPromise(
      Effect.exit(countingOperatorErrors(refusing("policy")).phoneNumber(credentials)).pipe(
        Effect.provideService(Metric.MetricRegistry, new Map())
      )
    )
    expect(exit._tag === "Failure" && JSON.stringify(exit.cause)).toContain("policy")
  })
})

describe("summaries and credits", () => {
  it("count each settled generation by outcome and kind, and the credits charged for it", async () => {
    const settle = Effect.all([
      countSummarySettled("tenant-1", "ok", "pdf", 3),
      countSummarySettled("tenant-1", "ok", "image", 1),
      countSummarySettled("tenant-2", "failed", "pdf", 0),
      countSummarySettled("tenant-2", "ok", "pdf", 0)
    ])
    const scrape = await scrapeAfter(settle)
    expect(scrape.value("omni_summaries_total", { outcome: "ok", kind: "pdf" })).toBe(2)
    expect(scrape.value("omni_summaries_total", { outcome: "ok", kind: "image" })).toBe(1)
    expect(scrape.value("omni_summaries_total", { outcome: "failed", kind: "pdf" })).toBe(1)
    expect(scrape.families.get("omni_credits_charged_total")?.samples).toEqual([
      { name: "omni_credits_charged_total", labels: { reason: "summary" }, value: 4 }
    ])
    const labelled = await scrapeAfter(settle, true)
    expect(labelled.value("omni_credits_charged_total", { reason: "summary", tenant_id: "tenant-1" })).toBe(4)
    expect(labelled.sum("omni_summaries_total", { tenant_id: "tenant-2" })).toBe(2)
  })
})

describe("the series registered at start", () => {
  it("are every closed label set at 0, and none labelled by tenant", async () => {
    const scrape = await scrapeAfter(registerMetrics)
    const total = (name: string) => scrape.families.get(name)?.samples.length ?? 0
    expect(total("omni_webhook_delivery_attempts_total")).toBe(7)
    expect(total("omni_webhook_deliveries")).toBe(4)
    expect(total("omni_webhook_endpoints_suspended")).toBe(1)
    expect(total("omni_inbound_payloads_received_total")).toBe(10)
    expect(total("omni_inbound_payloads_processed_total")).toBe(6)
    // 7 operations × 9 error kinds.
    expect(total("omni_operator_errors_total")).toBe(63)
    expect(total("omni_campaign_recipients_total")).toBe(7)
    expect(total("omni_summaries_total")).toBe(4)
    expect(total("omni_credits_charged_total")).toBe(1)
    for (const family of scrape.families.values()) {
      for (const sample of family.samples) {
        expect(sample.value).toBe(0)
        expect(Object.keys(sample.labels)).not.toContain("tenant_id")
      }
    }
  })
})
