import { join } from "node:path"
import { make } from "omnichannel-core"
import { makeManualClock } from "omnichannel-core/clock"
import { makeGuardedHttp, parseOutboundAllow } from "omnichannel-core/http"
import { makeFileMailer, makeSmtpMailer } from "omnichannel-core/mail"
import { busboyMultipart, makeFileBlobStore, nodeHmacSigner, serve } from "omnichannel-core/node"
import { Effect, Option } from "effect"
import { checkStorageReadiness, KyselyConnection } from "omnichannel-core/kysely"
import { publicUrlOf, readConfig } from "./Config.ts"
import { withHealthRoutes } from "./Health.ts"
import {
  observabilityLayer,
  readObservability,
  refreshGaugesWhileExporting,
  withMetricsRoute,
  writeLogLine
} from "./Observability.ts"
import { mailFileNotifier } from "./MailFiles.ts"
import { fileOptions, operatorOptions } from "./Operator.ts"
import { ownerOnlyDirectory, storageFor } from "./Storage.ts"
import { withTestClockRoutes } from "./TestClockRoutes.ts"
import { hostSummarizer } from "./Summarizer.ts"
import { startWorkers } from "./Workers.ts"

/** `run`, but never two calls at once: each waits for the one before to settle. */
const oneAtATime = (run: () => Promise<number>) => {
  let last: Promise<unknown> = Promise.resolve()
  return (): Promise<number> => {
    const next = last.then(run)
    last = next.catch(() => undefined)
    return next
  }
}

/** One JSON log line for background work that failed outside the library's own logging. */
const logJobFailure = (job: string, error: unknown) =>
  writeLogLine({
    time: new Date().toISOString(),
    level: "error",
    msg: "background job failed",
    job,
    cause: error instanceof Error ? error.stack ?? error.message : String(error)
  })

/** The reference host: migrate, serve `/api/v1`, run background workers, stop cleanly on SIGTERM. */
const main = async () => {
  const config = readConfig(process.env)
  const observability = readObservability(process.env)
  // The data dir and what the host creates in it are owner-only (0700 folders, a 0600 database file).
  ownerOnlyDirectory(config.dataDir)
  const clock = config.testClock === "manual" ? makeManualClock(Date.now()) : undefined
  // The public URL defaults to HOST:PORT; with PORT=0, to the port actually bound, known once the server listens.
  let boundPort: number | undefined
  const outbound = makeGuardedHttp({ allow: config.outboundAllow })
  const files = fileOptions(config)
  ownerOnlyDirectory(files.filesDir)
  ownerOnlyDirectory(join(config.dataDir, "mail"))
  // Outbound email: SMTP when OMNI_SMTP_URL is set, else one RFC 5322 file per email.
  const smtp = config.smtpUrl === undefined ? undefined : makeSmtpMailer(config.smtpUrl)
  const mailer = smtp?.mailer ?? makeFileMailer(join(config.dataDir, "mail", "outbound"))
  // AI file summaries: an OpenAI-compatible API when OMNI_SUMMARIZER_URL is set, else the embedded one (no network).
  const summaries = hostSummarizer(process.env, outbound)
  const app = await make({
    storage: storageFor(config.databaseUrl),
    clock: clock?.clock,
    ...operatorOptions(config, outbound),
    blobStore: makeFileBlobStore(files.filesDir),
    multipart: busboyMultipart,
    mailer,
    summarizer: summaries.summarizer,
    downloads: files.downloads,
    outbound,
    signer: nodeHmacSigner,
    // Mail is dated by the host's clock, like everything background work does.
    notifier: mailFileNotifier(
      join(config.dataDir, "mail"),
      "notifications@omnichannel-core.local",
      clock === undefined ? undefined : () => new Date(clock.nowMillis())
    ),
    // One lease for all background work: a crashed process's claims are taken over once it lapses.
    dispatch: { leaseSeconds: config.leaseSeconds },
    inbound: { leaseSeconds: config.leaseSeconds },
    campaigns: { leaseSeconds: config.leaseSeconds },
    retentionDays: config.retentionDays,
    emailParseConcurrency: config.emailParseConcurrency,
    // JSON log lines on stdout, one per request too; traces and logs over OTLP when OTEL_* ask for it.
    telemetry: observabilityLayer(observability),
    logRequests: true,
    metricsTenantLabels: config.metricsTenantLabels,
    publicUrl: () => publicUrlOf(config, boundPort)
  })
  // With the test clock, the workers' rounds and the `/_test` drains take turns: an advance then
  // answers only after work a worker had already claimed is finished too, as HOST.md promises.
  const drain = clock === undefined ? app.drainDueWork : oneAtATime(app.drainDueWork)
  const handler = clock === undefined ? app.handler : withTestClockRoutes(clock, () =>
    drain().catch((error: unknown) => {
      logJobFailure("drain", error)
      throw error
    }), app.handler)
  // GET /metrics (outside /api/v1, no auth) only with OMNI_METRICS=1: a 404 like any unknown path otherwise.
  const served = withMetricsRoute(config.metrics ? app.metrics : undefined, handler)
  const stopGaugeRefresh = refreshGaugesWhileExporting(observability, app.refreshGauges)
  // Real time: continuous workers (delivery as a pipeline). Test clock: rounds that take turns with
  // the drains, so work happens when the clock is moved.
  const workers = clock === undefined
    // A failed job is logged by the library as one JSON line naming the job, with its cause.
    ? app.startWorkers({ count: config.workers, idleMs: 50 })
    : startWorkers(config.workers, drain, { idleMs: 250, onError: (error) => logJobFailure("drain", error) })
  // Everything is closed before the process exits, when it could not listen too: ended while the
  // database's checkpoint thread is starting, the process would abort.
  const release = async () => {
    stopGaugeRefresh()
    await workers.stop()
    await app.dispose()
    await summaries.close()
    await outbound.close()
    await smtp?.close()
  }
  // GET /healthz and /readyz (outside /api/v1, no auth): the database and its migrations, the workers' heartbeats.
  const connection = Option.getOrUndefined(await app.run(Effect.serviceOption(KyselyConnection)))
  const checked = withHealthRoutes({
    storage: () =>
      connection === undefined
        ? Promise.resolve({ database: "fail", migrations: "unknown", problem: "no database connection" })
        : checkStorageReadiness(connection),
    heartbeats: () => workers.heartbeats?.() ?? new Map()
  }, served)
  const server = await serve(checked, {
    port: config.port,
    host: config.host,
    requestTimeoutMs: config.requestTimeoutSeconds * 1000,
    maxConnections: config.maxConnections,
    // POST /webhooks/chatapp without a web Request and Response: the same answers, at the operator's rate.
    direct: app.directRoutes
  }).catch(async (error: unknown) => {
    await release()
    throw error
  })
  boundPort = Number(new URL(server.url).port)
  console.log(`listening on ${server.url}`)

  let stopping = false
  const stop = async (signal: string) => {
    if (stopping) return
    stopping = true
    console.log(`${signal} received: finishing in-flight requests`)
    await server.close()
    await release()
    console.log("stopped cleanly")
    process.exit(0)
  }
  process.on("SIGTERM", () => void stop("SIGTERM"))
  process.on("SIGINT", () => void stop("SIGINT"))
}

main().catch((error: unknown) => {
  console.error(`could not start: ${error instanceof Error ? error.message : String(error)}`)
  process.exit(1)
})
