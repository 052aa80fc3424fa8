import { Effect } from "effect"
import { PrometheusMetrics } from "effect/observability"
import { countOperatorError, makeQueueGauges, MetricsSettings, type OPERATOR_OPERATIONS } from "../kernel/Metrics.ts"
import { ChatPlatform, type ChatPlatformError } from "../ports/ChatPlatform.ts"
import { WebhookDeliveryStore } from "../ports/WebhookDeliveryStore.ts"
import { WebhookEndpointStore } from "../ports/WebhookEndpointStore.ts"

type Operation = typeof OPERATOR_OPERATIONS[number]

/** Fails as `effect` does, counting the failure by operation and the operator's error kind. */
const counted = <A, R>(operation: Operation, effect: Effect.Effect<A, ChatPlatformError, R>) =>
  Effect.tapError(effect, (error) => countOperatorError(operation, error.kind))

/**
 * `platform` with every failed call counted by operation and kind (`omni_operator_errors_total`):
 * every area reaches the operator through this port, so one wrapper sees every error it returns.
 */
export const countingOperatorErrors = (platform: ChatPlatform["Service"]): ChatPlatform["Service"] =>
  ChatPlatform.of({
    name: platform.name,
    sendMessage: (credentials, to, message) => counted("send_message", platform.sendMessage(credentials, to, message)),
    listTemplates: (credentials, page) => counted("list_templates", platform.listTemplates(credentials, page)),
    createTemplate: (credentials, body) => counted("create_template", platform.createTemplate(credentials, body)),
    browseLibrary: (credentials, query) => counted("browse_library", platform.browseLibrary(credentials, query)),
    phoneNumber: (credentials) => counted("phone_number", platform.phoneNumber(credentials)),
    fetchMedia: (credentials, mediaId, options) => counted("fetch_media", platform.fetchMedia(credentials, mediaId, options)),
    uploadMedia: (credentials, file) => counted("upload_media", platform.uploadMedia(credentials, file))
  })

/**
 * Resolves to the effect that reads the queue gauges from storage: deliveries by state and
 * suspended endpoints, two grouped counts, per tenant when tenant labels are on. Run on each scrape
 * and before each push, so the gauges are as fresh as the reader asks for and cost nothing between.
 */
export const makeGaugeRefresh = Effect.gen(function*() {
  const setGauges = yield* makeQueueGauges
  return Effect.gen(function*() {
    const { tenantLabels } = yield* MetricsSettings
    const deliveries = yield* Effect.flatMap(WebhookDeliveryStore, (store) => store.countByStatus(tenantLabels))
    const suspended = yield* Effect.flatMap(WebhookEndpointStore, (store) => store.countSuspended(tenantLabels))
    yield* setGauges(deliveries, suspended)
  })
})

/** Every metric of the process in the Prometheus text format (version 0.0.4). */
export const prometheusText: Effect.Effect<string> = PrometheusMetrics.format()
