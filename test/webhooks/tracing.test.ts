import { Effect, Layer, Tracer } from "effect"
import { afterEach, beforeAll, describe, expect, it } from "vitest"
import { makeEvent } from "../../src/kernel/EventEnvelope.ts"
import { WallClock } from "../../src/kernel/WallClock.ts"
import { OutboxStore } from "../../src/ports/OutboxStore.ts"
import { ATTEMPT_SPANS_PER_SECOND } from "../../src/webhooks/engine/AttemptSpans.ts"
import { type Certificate, hasOpenssl, makeCertificate } from "../outbound/LocalServers.ts"
import { startWebhookApp, type WebhookApp } from "./WebhookApp.ts"

let certificate: Certificate
beforeAll(() => {
  if (hasOpenssl) certificate = makeCertificate()
})

/** A tracer that keeps every span it makes, as an exporter would get them. */
const recordingTracer = () => {
  const spans: Array<Tracer.NativeSpan> = []
  const tracer = Tracer.make({
    span: (options) => {
      const span = new Tracer.NativeSpan(options)
      spans.push(span)
      return span
    }
  })
  return { spans, tracer }
}

describe.skipIf(!hasOpenssl)("delivery spans with tracing on (needs the openssl CLI)", () => {
  let world: WebhookApp
  afterEach(() => world?.close())

  it("makes a span for each attempt up to the budget of a second, and one per recorded batch counting every attempt", async () => {
    const { spans, tracer } = recordingTracer()
    // Real time stands still: every attempt falls in the same second of the budget.
    const telemetry = Layer.mergeAll(
      Layer.succeed(Tracer.Tracer, tracer),
      Layer.succeed(WallClock, { nowMillis: () => Date.parse("2026-11-22T12:00:00.000Z") })
    )
    world = await startWebhookApp(certificate, { telemetry })
    const tenant = await world.newTenant()
    const receiver = await world.startReceiver()
    await tenant.createEndpoint(receiver.url, { propagate_trace_context: true })
    const events = await world.test.app.run(Effect.all(Array.from({ length: 120 }, (_, n) =>
      makeEvent({ type: "contact.created", tenantId: tenant.tenant_id, data: { n } }))))
    // Appended inside a request's span, as a use case appends them.
    await world.test.app.run(OutboxStore.use((outbox) => outbox.append(events)).pipe(Effect.withSpan("POST /api/v1/contacts")))
    const appending = spans.find((span) => span.name === "POST /api/v1/contacts")!

    await world.drain()

    expect(new Set(receiver.deliveries().map((event) => event.id))).toEqual(new Set(events.map((event) => event.id)))
    const attempts = spans.filter((span) => span.name === "WebhookDelivery.attempt")
    expect(attempts).toHaveLength(ATTEMPT_SPANS_PER_SECOND)
    for (const attempt of attempts) {
      expect(attempt.kind).toBe("client")
      expect(attempt.traceId).toBe(appending.traceId)
      expect(attempt.attributes.get("webhook.outcome")).toBe("delivered")
    }
    // The receiver joins the request's trace either way: under its attempt's span, or past the budget
    // under the span that appended the event.
    const parents = receiver.requests.map((request) => String(request.headers.traceparent))
    const attemptIds = new Set(attempts.map((attempt) => `00-${appending.traceId}-${attempt.spanId}-01`))
    expect(parents.filter((parent) => attemptIds.has(parent))).toHaveLength(ATTEMPT_SPANS_PER_SECOND)
    expect(parents.filter((parent) => parent === `00-${appending.traceId}-${appending.spanId}-01`))
      .toHaveLength(events.length - ATTEMPT_SPANS_PER_SECOND)
    // Every attempt is counted in the span of the batch that recorded it.
    const recorded = spans.filter((span) => span.name === "WebhookDispatcher.record")
    const sum = (key: string) => recorded.reduce((total, span) => total + Number(span.attributes.get(key)), 0)
    expect({ deliveries: sum("webhook.deliveries"), delivered: sum("webhook.delivered"), failed: sum("webhook.failed") })
      .toEqual({ deliveries: events.length, delivered: events.length, failed: 0 })
    expect(recorded.every((span) => span.links.every((link) => link.span.traceId === appending.traceId))).toBe(true)
  })
})
