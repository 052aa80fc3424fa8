import { Cause, ConfigProvider, Context, Layer, Logger, References, Tracer } from "effect"
import { FetchHttpClient } from "effect/http"
import { OtlpLogger, OtlpMetrics, OtlpSerialization, OtlpTracer } from "effect/observability"

/**
 * The host's telemetry: JSON log lines on stdout always; traces and logs over OTLP/HTTP when
 * `OTEL_EXPORTER_OTLP_ENDPOINT` (or a per-signal `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` /
 * `…_LOGS_ENDPOINT`) is set, configured by the standard `OTEL_*` variables as Effect's
 * `effect/observability` modules read them (`OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`,
 * `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_EXPORTER_OTLP_PROTOCOL`, `OTEL_BSP_SCHEDULE_DELAY`, …).
 * Unset, no tracer is installed: spans go nowhere and cost nothing.
 */

/** What the environment asks of telemetry. */
export interface ObservabilitySettings {
  /** Whether spans are exported (an endpoint is set, and neither `OTEL_SDK_DISABLED` nor `OTEL_TRACES_EXPORTER=none`). */
  readonly traces: boolean
  /** Whether log records are exported over OTLP too (besides stdout). */
  readonly logs: boolean
  /** Whether metrics are pushed over OTLP (an endpoint is set, and `OTEL_METRICS_EXPORTER` is not `none`). */
  readonly metrics: boolean
  /** `OTEL_METRIC_EXPORT_INTERVAL`: milliseconds between metric pushes (Effect's default, 10 s, when unset). */
  readonly metricsIntervalMs: number
  /** `OTEL_EXPORTER_OTLP_PROTOCOL`: `http/protobuf` (the OpenTelemetry default) or `http/json`. */
  readonly protocol: "http/protobuf" | "http/json"
  /** The environment Effect's OTLP modules read, with this host's defaults filled in. */
  readonly env: Readonly<Record<string, string>>
}

const DEFAULT_SERVICE_NAME = "omnichannel-core"

const set = (value: string | undefined): value is string => value !== undefined && value.trim() !== ""

/** Reads the `OTEL_*` variables; throws naming a variable whose value this host cannot honour. */
export const readObservability = (env: Readonly<Record<string, string | undefined>>): ObservabilitySettings => {
  const values: Record<string, string> = {}
  for (const [name, value] of Object.entries(env)) if (value !== undefined) values[name] = value
  const disabled = (env.OTEL_SDK_DISABLED ?? "").trim().toLowerCase() === "true"
  const wants = (signal: "TRACES" | "LOGS" | "METRICS") => {
    const exporters = (env[`OTEL_${signal}_EXPORTER`] ?? "otlp").split(",").map((e) => e.trim().toLowerCase())
    return !disabled && exporters.includes("otlp") &&
      (set(env.OTEL_EXPORTER_OTLP_ENDPOINT) || set(env[`OTEL_EXPORTER_OTLP_${signal}_ENDPOINT`]))
  }
  const protocol = (env.OTEL_EXPORTER_OTLP_PROTOCOL ?? "").trim() || "http/protobuf"
  if (protocol !== "http/protobuf" && protocol !== "http/json") {
    throw new Error(`OTEL_EXPORTER_OTLP_PROTOCOL must be http/protobuf or http/json, got ${JSON.stringify(protocol)}`)
  }
  // The OpenTelemetry default exporter is otlp; Effect's modules want it said.
  values.OTEL_TRACES_EXPORTER = env.OTEL_TRACES_EXPORTER ?? "otlp"
  values.OTEL_LOGS_EXPORTER = env.OTEL_LOGS_EXPORTER ?? "otlp"
  values.OTEL_METRICS_EXPORTER = env.OTEL_METRICS_EXPORTER ?? "otlp"
  const interval = (env.OTEL_METRIC_EXPORT_INTERVAL ?? "").trim()
  if (interval !== "" && !/^[1-9]\d{0,8}$/.test(interval)) {
    throw new Error(`OTEL_METRIC_EXPORT_INTERVAL must be a positive whole number of milliseconds, got ${JSON.stringify(interval)}`)
  }
  if (!set(env.OTEL_SERVICE_NAME) && !/(^|,)\s*service\.name\s*=/.test(env.OTEL_RESOURCE_ATTRIBUTES ?? "")) {
    values.OTEL_SERVICE_NAME = DEFAULT_SERVICE_NAME
  }
  return {
    traces: wants("TRACES"),
    logs: wants("LOGS"),
    metrics: wants("METRICS"),
    metricsIntervalMs: interval === "" ? 10_000 : Number(interval),
    protocol,
    env: values
  }
}

// A log line's field: plain values as they are, anything else as text.
const fieldValue = (value: unknown): unknown =>
  value === null || typeof value === "string" || typeof value === "number" || typeof value === "boolean"
    ? value
    : value instanceof Error
    ? value.message
    : String(value)

const messageText = (message: unknown): string => {
  const parts = Array.isArray(message) ? message : [message]
  return parts.map((part) => typeof part === "string" ? part : JSON.stringify(part) ?? String(part)).join(" ")
}

/**
 * Writes one JSON object per line to stdout: `time`, `level`, `msg`, the record's annotations
 * (`request_id`, `route`, `tenant_id`, `job`, …), `trace_id` and `span_id` when a span is exported,
 * and `cause` for a failure.
 */
export const writeLogLine = (fields: Readonly<Record<string, unknown>>): void => {
  if (pendingLines.length === 0) setImmediate(flushLogLines)
  pendingLines.push(`${JSON.stringify(fields)}\n`)
}

// The lines of one turn of the event loop go out in one write at its end: a busy host logs a line per
// request, and a write each cost about an eighth of a request's CPU. Whatever is left is written as
// the process exits.
let pendingLines: Array<string> = []
const flushLogLines = (): void => {
  if (pendingLines.length === 0) return
  const text = pendingLines.join("")
  pendingLines = []
  process.stdout.write(text)
}
process.once("exit", flushLogLines)

/** The stdout logger; `withTraceIds` adds the current span's ids (only meaningful when spans are exported). */
export const jsonLineLogger = (withTraceIds: boolean) =>
  Logger.make(({ cause, date, fiber, logLevel, message }) => {
    const line: Record<string, unknown> = { time: date.toISOString(), level: logLevel.toLowerCase(), msg: messageText(message) }
    for (const [key, value] of Object.entries(fiber.getRef(References.CurrentLogAnnotations))) line[key] = fieldValue(value)
    if (withTraceIds) {
      const span = Context.getOption(fiber.context, Tracer.ParentSpan)
      if (span._tag === "Some") {
        line.trace_id = span.value.traceId
        line.span_id = span.value.spanId
      }
    }
    if (cause.reasons.length > 0) line.cause = Cause.pretty(cause)
    writeLogLine(line)
  })

/**
 * The telemetry layer for `make({ telemetry })`: the stdout JSON logger (with span events from log
 * calls), and the OTLP tracer and logger when `settings` ask for them.
 */
export const observabilityLayer = (settings: ObservabilitySettings): Layer.Layer<never> => {
  const stdout = Logger.layer([jsonLineLogger(settings.traces), Logger.tracerLogger])
  const exporterNeeds = Layer.mergeAll(
    settings.protocol === "http/json" ? OtlpSerialization.layerJson : OtlpSerialization.layerProtobuf,
    FetchHttpClient.layer,
    ConfigProvider.layer(ConfigProvider.fromEnv({ env: { ...settings.env } }))
  )
  const tracing = settings.traces ? OtlpTracer.layerFromConfig().pipe(Layer.provide(exporterNeeds)) : Layer.empty
  // The OTLP logger joins the stdout one: it merges with the loggers it finds where it is built.
  const logging = settings.logs
    ? OtlpLogger.layerFromConfig().pipe(Layer.provide(exporterNeeds), Layer.provide(stdout))
    : stdout
  // Metrics are pushed from the process's metric registry, which every runtime of it shares; the
  // queue gauges are read from storage before each push (`refreshGaugesWhileExporting`).
  const metrics = settings.metrics ? OtlpMetrics.layerFromConfig().pipe(Layer.provide(exporterNeeds)) : Layer.empty
  return Layer.mergeAll(tracing, logging, metrics)
}

/**
 * Reads the queue gauges from storage every export interval while metrics are pushed over OTLP (a
 * scrape of `GET /metrics` reads them itself), so a push is at most one interval behind the store;
 * the returned function stops it. A failed read is logged and tried again at the next interval.
 */
export const refreshGaugesWhileExporting = (
  settings: ObservabilitySettings,
  refresh: () => Promise<void>
): (() => void) => {
  if (!settings.metrics) return () => undefined
  const timer = setInterval(() => {
    refresh().catch((error: unknown) =>
      writeLogLine({
        time: new Date().toISOString(),
        level: "warn",
        msg: "metrics: queue gauges not read",
        cause: error instanceof Error ? error.message : String(error)
      }))
  }, Math.max(1_000, settings.metricsIntervalMs))
  timer.unref()
  return () => clearInterval(timer)
}

/**
 * `handler` with `GET /metrics` answered from `metrics` in the Prometheus text format, outside
 * `/api/v1` and without authentication, when the host serves metrics (`OMNI_METRICS=1`); otherwise
 * `/metrics` is left to `handler`, which answers 404 as for any unknown path.
 */
export const withMetricsRoute = (
  metrics: (() => Promise<string>) | undefined,
  handler: (request: Request) => Promise<Response>
): ((request: Request) => Promise<Response>) =>
  metrics === undefined ? handler : async (request) => {
    if (new URL(request.url).pathname !== "/metrics") return handler(request)
    if (request.method !== "GET" && request.method !== "HEAD") {
      return new Response(null, { status: 405, headers: { allow: "GET, HEAD" } })
    }
    const text = await metrics()
    return new Response(request.method === "HEAD" ? null : text, {
      status: 200,
      headers: { "content-type": "text/plain; version=0.0.4; charset=utf-8", "cache-control": "no-store" }
    })
  }
