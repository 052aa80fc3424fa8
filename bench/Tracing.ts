/**
 * The tracing phase of the webhook benchmark: delivery throughput with tracing off (no telemetry
 * layer: Effect's native tracer, nothing exported) against tracing on (the reference host's OTLP
 * tracer, exporting every span to a local sink). Each run gets a fresh database and the library in
 * this process posting to the benchmark's receiver; the events are appended inside a span, as a
 * request appends them, so with tracing on each carries its trace context, delivery attempts are
 * spans under it up to the engine's budget per second (`ATTEMPT_SPANS_PER_SECOND`), and each fan-out
 * and each recorded batch is a span. The sink is a loopback HTTP server in a process
 * of its own that reads and discards what it is sent, counting requests and bytes, as a collector on
 * the same machine would.
 */
import { fork } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect } from "effect"
import { makeGuardedHttp } from "../adapters/http/GuardedHttp.ts"
import { type Dialect, layer, migrate } from "../adapters/kysely/KyselyStorage.ts"
import { nodeHmacSigner } from "../adapters/node/NodeHmacSigner.ts"
import { observabilityLayer, readObservability } from "../examples/server/Observability.ts"
import { make } from "../src/app/Omnichannel.ts"
import { Notifier } from "../src/ports/Notifier.ts"
import { OutboxStore } from "../src/ports/OutboxStore.ts"
import { openPhaseDatabase } from "./PhaseDatabase.ts"
import { contactEvents, subscribe } from "./Engine.ts"
import { burst, type BurstResult, warmUp } from "./Load.ts"
import type { Receiver } from "./Receiver.ts"

/** What the phase borrows from the benchmark's run. */
export interface TracingBench {
  readonly receiver: Receiver
  readonly ca: string
  readonly progress: (phase: string, message: string) => void
  readonly onCleanup: (step: () => Promise<void>) => () => Promise<void>
  readonly release: (step: () => Promise<void>) => Promise<void>
  /** A fresh PostgreSQL database, dropped at clean-up; undefined without a reachable server (or in a quick run). */
  readonly freshPostgres: (() => Promise<{ readonly url: string; readonly drop: () => Promise<void> }>) | undefined
  /** Events in each measured burst, and in the warm-up before it. */
  readonly events: number
  readonly warmUp: number
  readonly idleMs: number
  /** Runs of each kind per database (the better burst is kept): 1 in a quick run. */
  readonly rounds: number
}

/** One burst, and what the sink received during it. */
interface TracingRun {
  readonly burst: BurstResult
  readonly exports: number
  readonly exportedBytes: number
}

/** The figures of one database. */
export interface TracingFigures {
  readonly database: string
  readonly off: TracingRun
  readonly on: TracingRun
}

/** The local OTLP sink: a child process answering 200 to every POST, counting requests and bytes. */
interface Sink {
  readonly url: string
  readonly count: () => Promise<{ readonly requests: number; readonly bytes: number }>
  readonly close: () => Promise<void>
}

const SINK_SOURCE = `
const http = require("node:http")
let requests = 0, bytes = 0
const server = http.createServer((req, res) => {
  req.on("data", (chunk) => { bytes += chunk.length })
  req.on("end", () => { requests += 1; res.writeHead(200, { "content-type": "application/x-protobuf" }).end() })
})
server.listen(0, "127.0.0.1", () => process.send({ port: server.address().port }))
process.on("message", () => process.send({ requests, bytes }))
process.on("disconnect", () => process.exit(0))
`

const startSink = async (): Promise<Sink> => {
  const dir = mkdtempSync(join(tmpdir(), "bench-otlp-sink-"))
  const script = join(dir, "sink.cjs")
  writeFileSync(script, SINK_SOURCE)
  // Plain Node, without the loader this process runs under.
  const child = fork(script, [], { execArgv: [], stdio: ["ignore", "ignore", "inherit", "ipc"] })
  const next = () => new Promise<Record<string, number>>((resolve) => child.once("message", (m) => resolve(m as Record<string, number>)))
  const { port } = await next()
  return {
    url: `http://127.0.0.1:${port}`,
    count: async () => {
      const answer = next()
      child.send("count")
      const { requests, bytes } = await answer
      return { requests: requests!, bytes: bytes! }
    },
    close: async () => {
      const exited = new Promise((resolve) => child.once("exit", resolve))
      child.disconnect()
      await exited
      rmSync(dir, { recursive: true, force: true })
    }
  }
}

// Traces alone: logs and metrics stay off, so the figures are tracing's.
const tracingLayer = (sinkUrl: string) =>
  observabilityLayer(readObservability({
    OTEL_EXPORTER_OTLP_ENDPOINT: sinkUrl,
    OTEL_LOGS_EXPORTER: "none",
    OTEL_METRICS_EXPORTER: "none",
    OTEL_SERVICE_NAME: "bench-webhooks"
  }))

const runOnce = async (bench: TracingBench, dialect: Dialect, sink: Sink, tracing: boolean): Promise<TracingRun> => {
  const phase = `tracing, ${dialect === "sqlite" ? "SQLite" : "PostgreSQL"}, ${tracing ? "on" : "off"}`
  const { db, dispose } = await openPhaseDatabase(dialect, bench.freshPostgres, "bench-tracing-")
  const disposeDb = bench.onCleanup(dispose)
  await migrate(db, dialect)
  const outbound = makeGuardedHttp({ allow: ["127.0.0.1/32"], ca: bench.ca })
  const app = await make({
    storage: layer(db, dialect),
    outbound,
    signer: nodeHmacSigner,
    notifier: Notifier.of({ send: () => Effect.void }),
    ...(tracing ? { telemetry: tracingLayer(sink.url) } : {})
  })
  const closeApp = bench.onCleanup(async () => {
    await app.dispose()
    outbound.close()
  })
  const subscription = await subscribe(app, bench.receiver.url)
  // Appended inside a span, as a request's use case appends them.
  const produce = (count: number) =>
    app.run(Effect.gen(function*() {
      const events = yield* contactEvents(subscription.tenantId, count)
      yield* (yield* OutboxStore).append(events)
      return events.map((event) => event.id)
    }).pipe(Effect.withSpan("bench.append")))
  const workers = app.startWorkers({ idleMs: bench.idleMs, onError: (job, error) => bench.progress(phase, `${job} failed: ${error}`) })
  await warmUp(bench.receiver, produce, bench.warmUp)
  const before = await sink.count()
  const result = await burst(bench.receiver, produce, bench.events, () => undefined)
  const after = await sink.count()
  await workers.stop()
  await bench.release(closeApp)
  await bench.release(disposeDb)
  const run = { burst: result, exports: after.requests - before.requests, exportedBytes: after.bytes - before.bytes }
  bench.progress(
    phase,
    `${result.delivered}/${bench.events} in ${result.seconds.toFixed(1)} s = ${result.perSecond.toFixed(0)}/s; ` +
      `${run.exports} exports, ${(run.exportedBytes / 1024 / 1024).toFixed(1)} MB to the sink`
  )
  return run
}

const faster = (a: TracingRun | undefined, b: TracingRun): TracingRun =>
  a === undefined || b.burst.perSecond > a.burst.perSecond ? b : a

/**
 * Runs the phase on SQLite and, when given a server, PostgreSQL: bursts with tracing off and on,
 * alternating (off, on, then on, off in a second round), keeping each kind's better burst.
 */
export const tracingPhase = async (bench: TracingBench): Promise<ReadonlyArray<TracingFigures>> => {
  const sink = await startSink()
  const closeSink = bench.onCleanup(sink.close)
  const figures: Array<TracingFigures> = []
  const dialects: ReadonlyArray<Dialect> = bench.freshPostgres === undefined ? ["sqlite"] : ["sqlite", "postgres"]
  for (const dialect of dialects) {
    let off: TracingRun | undefined
    let on: TracingRun | undefined
    for (let round = 0; round < bench.rounds; round++) {
      for (const tracing of round % 2 === 0 ? [false, true] : [true, false]) {
        const run = await runOnce(bench, dialect, sink, tracing)
        if (tracing) on = faster(on, run)
        else off = faster(off, run)
      }
    }
    figures.push({ database: dialect === "sqlite" ? "SQLite, 1 process" : "PostgreSQL, 1 process", off: off!, on: on! })
  }
  await bench.release(closeSink)
  return figures
}

/** Prints the phase's figures: both rates, their ratio, and what tracing exported. */
export const printTracing = (bench: TracingBench, figures: ReadonlyArray<TracingFigures>): void => {
  console.log(
    `\nTracing — delivery throughput with tracing off and on (OTLP/HTTP protobuf to a local sink; burst of ${bench.events} events, ` +
      `in-process workers; attempt spans up to the budget a second, a span per fan-out and per recorded batch)`
  )
  for (const f of figures) {
    const ratio = f.on.burst.perSecond / f.off.burst.perSecond
    console.log(
      `  ${f.database.padEnd(22)}  off ${f.off.burst.perSecond.toFixed(0).padStart(6)}/s  on ${f.on.burst.perSecond.toFixed(0).padStart(6)}/s  ` +
        `ratio ${ratio.toFixed(2)}  exported ${f.on.exports} requests, ${(f.on.exportedBytes / 1024 / 1024).toFixed(1)} MB` +
        ` (${(f.on.exportedBytes / f.on.burst.delivered).toFixed(0)} bytes per delivery)`
    )
  }
}
