import { Cause, ConfigProvider, Context, Layer, Logger, References, Tracer } from "effect"
import { FetchHttpClient } from "effect/http"
import { OtlpLogger, OtlpSerialization, OtlpTracer } from "effect/observability"

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
  const wants = (signal: "TRACES" | "LOGS") => {
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
  if (!set(env.OTEL_SERVICE_NAME) && !/(^|,)\s*service\.name\s*=/.test(env.OTEL_RESOURCE_ATTRIBUTES ?? "")) {
    values.OTEL_SERVICE_NAME = DEFAULT_SERVICE_NAME
  }
  return { traces: wants("TRACES"), logs: wants("LOGS"), protocol, env: values }
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
  process.stdout.write(`${JSON.stringify(fields)}\n`)
}

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
  // Metrics (Prometheus text at GET /metrics with OMNI_METRICS=1, OTLP metrics when exporting) join here.
  return Layer.mergeAll(tracing, logging)
}
