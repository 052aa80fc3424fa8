/**
 * Inbound operator webhooks benchmark: how fast the reference host acknowledges signed
 * `POST /webhooks/chatapp` payloads, how fast one worker process turns stored payloads into
 * messages (to `message.received`), and how long an acknowledgement takes at a steady 200
 * payloads/s with processing on, on SQLite and PostgreSQL.
 *
 * Acknowledgement is judged against a baseline measured in the same run with the same client
 * (undici, keep-alive, 64 in flight) and the same signed payloads: a bare `node:http` server in a
 * child process that reads the body, checks the HMAC with `timingSafeEqual` and answers 200. The host
 * runs as `npm start` runs it, in its own process, with `OMNI_WORKERS=0` (the edge alone: verify,
 * store, answer). The bare server and the hosts run alternately twice (bare, SQLite, PostgreSQL,
 * bare, PostgreSQL, SQLite); each keeps its better figure. A burst against a host with its worker
 * on (SQLite, full runs only) is printed for reference.
 *
 * Processing: payloads of one message each (a tenth batched ten to a payload) from a tenth as many
 * contacts are stored first; one worker process wired as the host wires it (`OMNI_WORKERS=1`) is then
 * timed from its start to the last `message.received` event, and every count is verified (messages,
 * events, contacts, conversations, no payload pending, failed or noted). A run that has not finished
 * within its limit reports the rate it had reached, as not finished. Latency: a steady 200 payloads/s,
 * open loop, to a host with its worker on; processing falling behind is reported beside it.
 * Processing and latency runs are repeated in reverse order too (not with `--quick`), keeping the
 * better run (higher rate, lower p99).
 *
 *   npm run bench:inbound -- [--quick] [--payloads 20000] [--messages 20000] [--only ack,processing,latency]
 *                            [--no-sqlite] [--no-postgres]     (for profiling one phase; goals need both)
 *
 * PostgreSQL comes from PG_URL (default postgres://postgres@127.0.0.1:5432/test); each phase makes
 * its own database and drops it. Without a reachable server the PostgreSQL phases are skipped.
 * `BENCH_CPU_PROF=dir` makes the processing phase's worker process write a V8 CPU profile there.
 */
import { randomBytes } from "node:crypto"
import { mkdirSync, mkdtempSync, rmSync } from "node:fs"
import { availableParallelism, loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import { parseArgs } from "node:util"
import { createPostgresDatabase } from "../test/support/Databases.ts"
import { postgresReachable, startRun } from "./Run.ts"
import type { CpuPerEvent, Roles } from "./CpuMeter.ts"
import { databaseOf, startInboundCpuMeter } from "./InboundCpu.ts"
import { type Counts, type HostSettings, openReader, prepareDatabase, readCounts, waitUntilProcessed } from "./InboundDatabase.ts"
import { type AckBurst, ackBurst, type AckLatency, ackSteady, makeOperatorClient, type OperatorClient } from "./InboundLoad.ts"
import { makePayloads, type SignedPayload } from "./InboundPayloads.ts"
import { type InboundServer, startBareServer, startHostProcess, startInboundWorker } from "./InboundServers.ts"
import { stamp } from "./Load.ts"

const PHASES = ["ack", "processing", "latency"] as const
type Phase = typeof PHASES[number]

const { values: flags } = parseArgs({
  options: {
    quick: { type: "boolean", default: false },
    payloads: { type: "string" },
    messages: { type: "string" },
    only: { type: "string" },
    "no-sqlite": { type: "boolean", default: false },
    "no-postgres": { type: "boolean", default: false }
  }
})
const quick = flags.quick === true
/** Signed payloads in each acknowledgement burst (one message each, every one distinct). */
const ACK_PAYLOADS = Number(flags.payloads ?? (quick ? 2_000 : 20_000))
/** Payloads posted to each server before its first measured burst (JIT, pools, caches). */
const ACK_WARM_UP = quick ? 300 : 2_000
/** Requests in flight: the undici pool's connections, as the webhook benchmark's fair client. */
const CONCURRENCY = 64
/** Messages stored before the processing phase's worker starts. */
const MESSAGES = Number(flags.messages ?? (quick ? 3_000 : 20_000))
/** Distinct senders: ten messages each, so contacts and conversations are mostly found, not made. */
const CONTACTS = Math.max(1, Math.round(MESSAGES / 10))
/** A tenth of the messages arrive in batched payloads of this many (the rest one per payload). */
const BATCH_SIZE = 10
/** The steady load of the latency phase. */
const RATE = 200
const STEADY_SECONDS = quick ? 5 : 10
const LATENCY_WARM_UP = quick ? 200 : 500
/** The reference burst against a host with its worker on (full runs, SQLite): not a goal, so shorter. */
const ACK_REFERENCE_PAYLOADS = 5_000
/**
 * How long a processing run may take before it is stopped and its rate read from what it did by
 * then (reported as not finished); and how long the latency phase waits for its payloads to be processed.
 */
const PROCESSING_LIMIT_SECONDS = quick ? 15 : 120
const DRAIN_LIMIT_SECONDS = quick ? 10 : 60

/** Goals, as the issue states them. */
const ACK_GOAL = 0.5
const PROCESSING_GOAL = 2_000
const P99_GOAL_MS = 20

const HARD_LIMIT_MS = (quick ? 6 : 20) * 60_000
const PG_URL = process.env.PG_URL ?? "postgres://postgres@127.0.0.1:5432/test"

const only = new Set<Phase>(
  flags.only === undefined ? PHASES : flags.only.split(",").map((p) => p.trim()).filter((p): p is Phase => (PHASES as ReadonlyArray<string>).includes(p))
)
if (!Number.isInteger(ACK_PAYLOADS) || ACK_PAYLOADS < 100) throw new Error("--payloads must be a whole number ≥ 100")
if (!Number.isInteger(MESSAGES) || MESSAGES < 100) throw new Error("--messages must be a whole number ≥ 100")
if (only.size === 0) throw new Error(`--only takes a comma-separated list of ${PHASES.join(", ")}`)

const { loadAtStart, progress, onCleanup, release, cleanUp, cleaningUp, elapsedSeconds } = startRun(HARD_LIMIT_MS)

// ---------------------------------------------------------------------------------------------------
// Databases: every phase gets its own, removed when the phase ends (or the run is cleaned up).

type Backend = "SQLite" | "PostgreSQL"

const root = mkdtempSync(join(tmpdir(), "bench-inbound-"))
onCleanup(async () => rmSync(root, { recursive: true, force: true }))
const appSecret = randomBytes(24).toString("base64url")
/** Tags every wamid of this run. */
const RUN = randomBytes(4).toString("hex")
let databases = 0

/** Settings of a host over a new database of `backend`, and how to remove it. */
const freshHostSettings = async (backend: Backend): Promise<{ readonly settings: HostSettings; readonly drop: () => Promise<void> }> => {
  const dataDir = join(root, `data-${++databases}`)
  mkdirSync(dataDir)
  const removeDir = async () => rmSync(dataDir, { recursive: true, force: true })
  if (backend === "SQLite") {
    return { settings: { databaseUrl: `file:${join(dataDir, "omnichannel.sqlite")}`, dataDir, appSecret }, drop: onCleanup(removeDir) }
  }
  const created = await createPostgresDatabase(PG_URL)
  return {
    settings: { databaseUrl: created.url, dataDir, appSecret },
    drop: onCleanup(async () => {
      await created.drop()
      await removeDir()
    })
  }
}

/** Who does what while a server acknowledges: this process posts, the server verifies and stores. */
const serverRoles = (server: InboundServer): Roles => ({ client: [process.pid], server: [server.pid] })

const format = {
  rate: (value: number | undefined) => (value === undefined || Number.isNaN(value) ? "—" : value.toFixed(0)),
  ms: (value: number | undefined) => (value === undefined || Number.isNaN(value) ? "—" : value.toFixed(1)),
  cpu: (cpu: CpuPerEvent | undefined) =>
    cpu === undefined
      ? "—"
      : `${Object.entries(cpu).map(([role, us]) => `${role} ${us.toFixed(0)}`).join(", ")}; total ${Object.values(cpu).reduce((a, b) => a + b, 0).toFixed(0)}`
}

// ---------------------------------------------------------------------------------------------------
// Acknowledgement throughput.

interface AckRow {
  readonly name: string
  readonly backend: Backend | undefined
  readonly runs: Array<AckBurst>
  /** CPU per payload of the faster run, by process. */
  cpu: CpuPerEvent | undefined
  best: AckBurst | undefined
  /** Payloads the host's database holds after its runs, and how many it should. */
  stored?: { readonly found: number; readonly expected: number }
}

const ackRows: Array<AckRow> = []
/** Acknowledgement with background processing on (full runs only): for reference. */
let ackWithProcessing: { readonly backend: Backend; readonly burst: AckBurst; readonly cpu: CpuPerEvent | undefined } | undefined

const ackPhase = async (backends: ReadonlyArray<Backend>) => {
  const payloads = makePayloads({ secret: appSecret, run: `${RUN}a`, contacts: 2_000 })
  interface Contender {
    readonly row: AckRow
    readonly server: InboundServer
    readonly client: OperatorClient
    readonly settings?: HostSettings
    posted: number
  }
  const contenders: Array<Contender> = []
  const bare = await startBareServer(appSecret)
  const closeBare = onCleanup(bare.close)
  contenders.push({
    row: { name: "bare node:http server (HMAC check, 200)", backend: undefined, runs: [], cpu: undefined, best: undefined },
    server: bare,
    client: makeOperatorClient(bare.url, CONCURRENCY),
    posted: 0
  })
  progress("ack", `bare node:http server on ${bare.url}`)
  const hostReleases: Array<() => Promise<void>> = []
  // The hosts start side by side (each stops before its database goes: releases run newest first).
  const started = await Promise.all(backends.map(async (backend) => {
    const { settings, drop } = await freshHostSettings(backend)
    hostReleases.push(drop)
    await prepareDatabase(settings)
    const host = await startHostProcess(settings, 0)
    hostReleases.push(onCleanup(host.close))
    progress("ack", `host on ${backend}, OMNI_WORKERS=0, on ${host.url}`)
    return { backend, settings, host }
  }))
  for (const { backend, settings, host } of started) {
    contenders.push({
      row: { name: `reference host, ${backend}, OMNI_WORKERS=0`, backend, runs: [], cpu: undefined, best: undefined },
      server: host,
      client: makeOperatorClient(host.url, CONCURRENCY),
      settings,
      posted: 0
    })
  }
  const closeClients = onCleanup(async () => {
    for (const contender of contenders) contender.client.close()
  })
  for (const contender of contenders) {
    progress(`ack, ${contender.row.name}`, `warm-up, ${ACK_WARM_UP} payloads`)
    const warm = await ackBurst(contender.client, payloads.many(ACK_WARM_UP), CONCURRENCY)
    contender.posted += ACK_WARM_UP
    if (warm.refused > 0) throw new Error(`${contender.row.name} refused ${warm.refused} warm-up payloads: ${contender.client.refused().first}`)
  }
  // Alternately twice: the bare server first, then the hosts; then again with the hosts reversed.
  const [bareContender, ...hosts] = contenders
  const order = [bareContender!, ...hosts, bareContender!, ...[...hosts].reverse()]
  for (const contender of order) {
    const phase = `ack, ${contender.row.name}`
    const batch = payloads.many(ACK_PAYLOADS)
    progress(phase, `${ACK_PAYLOADS} signed payloads, ${CONCURRENCY} in flight`)
    const meter = startInboundCpuMeter(serverRoles(contender.server), databaseOf(contender.settings?.databaseUrl ?? ""))
    const result = await ackBurst(contender.client, batch, CONCURRENCY)
    const cpu = meter.perEvent(ACK_PAYLOADS)
    contender.posted += ACK_PAYLOADS
    progress(phase, `${result.perSecond.toFixed(0)} payloads/s (${result.seconds.toFixed(1)} s)${result.refused > 0 ? `, ${result.refused} not answered 200` : ""}`)
    contender.row.runs.push(result)
    if (contender.row.best === undefined || result.perSecond > contender.row.best.perSecond) {
      contender.row.best = result
      contender.row.cpu = cpu
    }
  }
  // Every acknowledged payload must be in the host's database (nothing processes them here).
  for (const contender of hosts) {
    const reader = openReader(contender.settings!.databaseUrl)
    const counts = await readCounts(reader)
    await reader.destroy()
    contender.row.stored = { found: counts.pending + counts.processed + counts.failed, expected: contender.posted }
    progress(`ack, ${contender.row.name}`, `${contender.row.stored.found} payloads stored of ${contender.posted} acknowledged`)
  }
  for (const contender of contenders) ackRows.push(contender.row)
  await release(closeClients)
  for (const step of hostReleases.reverse()) await release(step)
  await release(closeBare)
}

// ---------------------------------------------------------------------------------------------------
// Processing throughput.

interface ProcessingRun {
  readonly backend: Backend
  readonly payloads: number
  readonly messages: number
  readonly seconds: number
  readonly perSecond: number
  readonly cpu: CpuPerEvent | undefined
  readonly counts: Counts
  /** What does not add up: empty when every check passed. */
  readonly problems: ReadonlyArray<string>
  readonly errors: number
}

const processingRuns = new Map<Backend, Array<ProcessingRun>>()

/** `MESSAGES` messages from `CONTACTS` senders: a tenth in payloads of `BATCH_SIZE`, spread among single ones. */
const processingPayloads = (): Array<SignedPayload> => {
  const payloads = makePayloads({ secret: appSecret, run: `${RUN}p${databases}`, contacts: CONTACTS })
  const batches = Math.floor(MESSAGES / 10 / BATCH_SIZE)
  const singles = MESSAGES - batches * BATCH_SIZE
  const every = batches === 0 ? Number.POSITIVE_INFINITY : Math.floor(singles / batches)
  const result: Array<SignedPayload> = []
  let batched = 0
  for (let i = 0; i < singles; i++) {
    if (batched < batches && i % every === 0) {
      result.push(payloads.payload(BATCH_SIZE))
      batched += 1
    }
    result.push(payloads.payload(1))
  }
  while (batched++ < batches) result.push(payloads.payload(BATCH_SIZE))
  return result
}

const processingRun = async (backend: Backend): Promise<ProcessingRun> => {
  const phase = `processing, ${backend}, 1 worker process`
  const { settings, drop } = await freshHostSettings(backend)
  const payloads = processingPayloads()
  progress(phase, `storing ${payloads.length} payloads (${MESSAGES} messages from ${CONTACTS} contacts)`)
  await prepareDatabase(settings, payloads)
  const reader = openReader(settings.databaseUrl)
  const closeReader = onCleanup(() => reader.destroy())
  const worker = await startInboundWorker(settings)
  const killWorker = onCleanup(worker.kill)
  const meter = startInboundCpuMeter({ worker: [worker.pid], "bench (polls)": [process.pid] }, databaseOf(settings.databaseUrl))
  progress(phase, "worker started")
  const startedAt = await worker.start()
  // The end is read from the last event's own timestamp, so the poll can be slow and cheap.
  const pending = await waitUntilProcessed(
    reader,
    Date.now() + PROCESSING_LIMIT_SECONDS * 1000,
    (left) => progress(phase, `${left} payloads pending`),
    250
  )
  const seenAt = stamp()
  const atEnd = await readCounts(reader)
  const cpu = meter.perEvent(Math.max(1, atEnd.received))
  const stopped = await worker.stop()
  await release(killWorker)
  if (stopped.firstError !== undefined) progress(phase, `${stopped.errors} errors, first: ${stopped.firstError}`)
  const counts = await readCounts(reader)
  await release(closeReader)
  await release(drop)
  // Until the last message.received event was appended (its own timestamp); when the run did not
  // finish in time, until the limit, with what was done by then.
  const finished = pending === 0
  const endedAt = finished && atEnd.lastReceivedAt !== null ? atEnd.lastReceivedAt : seenAt
  const seconds = (endedAt - startedAt) / 1000
  const problems: Array<string> = []
  if (!finished) problems.push(`not finished within ${PROCESSING_LIMIT_SECONDS} s (${atEnd.received} of ${MESSAGES} messages by then)`)
  const expect = (what: string, found: number, expected: number) => {
    if (found !== expected) problems.push(`${what} ${found}, expected ${expected}`)
  }
  expect("messages stored", counts.messages, MESSAGES)
  expect("message.received events", counts.received, MESSAGES)
  expect("payloads pending", counts.pending, 0)
  expect("payloads failed", counts.failed, 0)
  expect("payloads processed", counts.processed, payloads.length)
  expect("payloads with a note", counts.noted, 0)
  expect("contacts", counts.contacts, CONTACTS)
  expect("conversations", counts.conversations, CONTACTS)
  expect("worker errors", stopped.errors, 0)
  if (counts.firstNote !== null) problems.push(`first note: ${counts.firstNote}`)
  const run: ProcessingRun = {
    backend,
    payloads: payloads.length,
    messages: atEnd.received,
    seconds,
    perSecond: atEnd.received / seconds,
    cpu,
    counts,
    problems,
    errors: stopped.errors
  }
  progress(
    phase,
    `${atEnd.received}/${MESSAGES} message.received in ${seconds.toFixed(1)} s = ${run.perSecond.toFixed(0)} messages/s; ` +
      (problems.length === 0 ? "counts verified" : `CHECKS FAILED: ${problems.join("; ")}`)
  )
  processingRuns.set(backend, [...(processingRuns.get(backend) ?? []), run])
  return run
}

/** The faster run whose checks passed, else the faster run. */
const bestProcessing = (backend: Backend): ProcessingRun | undefined => {
  const runs = processingRuns.get(backend) ?? []
  const faster = (a: ProcessingRun | undefined, b: ProcessingRun) => (a === undefined || b.perSecond > a.perSecond ? b : a)
  return runs.filter((run) => run.problems.length === 0).reduce<ProcessingRun | undefined>(faster, undefined) ??
    runs.reduce<ProcessingRun | undefined>(faster, undefined)
}

// ---------------------------------------------------------------------------------------------------
// Acknowledgement latency at a steady rate, processing on.

interface LatencyRun {
  readonly backend: Backend
  readonly latency: AckLatency
  /** From the last acknowledgement of the steady run to the last `message.received` event. */
  readonly lagMs: number
  /** Set when processing had not caught up with the load by the drain limit. */
  readonly behind: string | undefined
  readonly problems: ReadonlyArray<string>
}

const latencyRuns = new Map<Backend, Array<LatencyRun>>()

const latencyRun = async (backend: Backend, withAckReference: boolean): Promise<LatencyRun> => {
  const phase = `latency, ${backend}, host with 1 worker`
  const { settings, drop } = await freshHostSettings(backend)
  await prepareDatabase(settings)
  const host = await startHostProcess(settings, 1)
  const closeHost = onCleanup(host.close)
  const client = makeOperatorClient(host.url, CONCURRENCY)
  const closeClient = onCleanup(async () => client.close())
  const reader = openReader(settings.databaseUrl)
  const closeReader = onCleanup(() => reader.destroy())
  const payloads = makePayloads({ secret: appSecret, run: `${RUN}l${databases}`, contacts: 1_000 })
  progress(phase, `warm-up, ${LATENCY_WARM_UP} payloads, processed before the steady load`)
  await ackBurst(client, payloads.many(LATENCY_WARM_UP), 16)
  await waitUntilProcessed(reader, Date.now() + 60_000)
  progress(phase, `steady ${RATE} payloads/s for ${STEADY_SECONDS} s`)
  const latency = await ackSteady(client, () => payloads.payload(1), RATE, STEADY_SECONDS)
  const lastAck = stamp()
  const pending = await waitUntilProcessed(reader, Date.now() + DRAIN_LIMIT_SECONDS * 1000, (left) => progress(phase, `${left} payloads pending`))
  const counts = await readCounts(reader)
  const lagMs = pending === 0 && counts.lastReceivedAt !== null ? Math.max(0, counts.lastReceivedAt - lastAck) : Number.NaN
  const expected = LATENCY_WARM_UP + latency.sent
  const problems: Array<string> = []
  if (latency.acknowledged !== latency.sent) problems.push(`${latency.sent - latency.acknowledged} not answered 200 (${client.refused().first})`)
  if (counts.failed !== 0) problems.push(`${counts.failed} payloads failed`)
  if (counts.pending === 0 && counts.received !== expected) problems.push(`message.received ${counts.received}, expected ${expected}`)
  // Processing that falls behind the load is reported, not counted against the acknowledgement goal.
  const behind = counts.pending === 0 ? undefined : `processing behind: ${counts.pending} payloads pending ${DRAIN_LIMIT_SECONDS} s after the last acknowledgement`
  progress(
    phase,
    `p50 ${format.ms(latency.p50)} ms, p95 ${format.ms(latency.p95)} ms, p99 ${format.ms(latency.p99)} ms, max ${format.ms(latency.max)} ms ` +
      `(${latency.acknowledged}/${latency.sent} acknowledged at ${latency.achievedRate.toFixed(0)}/s); ` +
      (behind ?? `last message.received ${format.ms(lagMs)} ms after the last acknowledgement`) +
      (problems.length === 0 ? "" : `; CHECKS FAILED: ${problems.join("; ")}`)
  )
  if (withAckReference) {
    // For reference: a burst against the host while its worker processes (not waited for).
    const reference = `ack, reference host, ${backend}, OMNI_WORKERS=1`
    const count = Math.min(ACK_PAYLOADS, ACK_REFERENCE_PAYLOADS)
    progress(reference, `${count} signed payloads, ${CONCURRENCY} in flight, background processing on`)
    const meter = startInboundCpuMeter(serverRoles(host), databaseOf(settings.databaseUrl))
    const burst = await ackBurst(client, payloads.many(count), CONCURRENCY)
    ackWithProcessing = { backend, burst, cpu: meter.perEvent(count) }
    progress(reference, `${burst.perSecond.toFixed(0)} payloads/s (${burst.seconds.toFixed(1)} s)${burst.refused > 0 ? `, ${burst.refused} not answered 200` : ""}`)
  }
  await release(closeClient)
  await release(closeReader)
  await release(closeHost)
  await release(drop)
  const run: LatencyRun = { backend, latency, lagMs, behind, problems }
  latencyRuns.set(backend, [...(latencyRuns.get(backend) ?? []), run])
  return run
}

/** The run with the lower p99 among those whose checks passed, else the lower p99. */
const bestLatency = (backend: Backend): LatencyRun | undefined => {
  const runs = latencyRuns.get(backend) ?? []
  const lower = (a: LatencyRun | undefined, b: LatencyRun) => (a === undefined || b.latency.p99 < a.latency.p99 ? b : a)
  return runs.filter((run) => run.problems.length === 0).reduce<LatencyRun | undefined>(lower, undefined) ??
    runs.reduce<LatencyRun | undefined>(lower, undefined)
}

// ---------------------------------------------------------------------------------------------------

const printReport = (withPostgres: boolean) => {
  const backends: ReadonlyArray<Backend> = withPostgres ? ["SQLite", "PostgreSQL"] : ["SQLite"]
  console.log(`\nInbound operator webhooks benchmark${quick ? " (quick)" : ""}`)
  console.log(`node ${process.version}, ${availableParallelism()} CPUs, load average ${loadAtStart} at start and ${loadavg()[0]!.toFixed(1)} at end (shared machine)`)
  if (!withPostgres) console.log(`no PostgreSQL at ${PG_URL}: its phases were skipped`)
  const bare = ackRows.find((row) => row.backend === undefined)?.best
  if (ackRows.length > 0) {
    console.log(
      `\nacknowledgement: ${ACK_PAYLOADS} distinct signed payloads per run (one message, about ${makePayloads({ secret: "x", run: RUN, contacts: 1 }).payload().body.length} bytes), ` +
        `undici keep-alive with ${CONCURRENCY} in flight; run alternately twice, each row keeps its faster run`
    )
    const name = Math.max(...ackRows.map((row) => row.name.length), 40)
    const header = `${"server".padEnd(name)}  ${"payloads/s".padStart(10)}  ${"× bare".padStart(6)}  ${"runs".padStart(13)}  stored  CPU per payload (µs, by process)`
    console.log(header)
    console.log("-".repeat(header.length + 20))
    for (const row of ackRows) {
      const rate = row.best?.perSecond
      const ratio = rate === undefined || bare === undefined ? "—" : (rate / bare.perSecond).toFixed(2)
      const runs = row.runs.map((run) => run.perSecond.toFixed(0)).join(" / ")
      const stored = row.stored === undefined ? "—" : row.stored.found === row.stored.expected ? "all" : `${row.stored.found}/${row.stored.expected}`
      const refused = row.runs.reduce((sum, run) => sum + run.refused, 0)
      console.log(
        `${row.name.padEnd(name)}  ${format.rate(rate).padStart(10)}  ${ratio.padStart(6)}  ${runs.padStart(13)}  ${stored.padStart(6)}  ${format.cpu(row.cpu)}` +
          (refused > 0 ? `  (${refused} not answered 200)` : "")
      )
    }
    if (ackWithProcessing !== undefined) {
      const { backend, burst, cpu } = ackWithProcessing
      const ratio = bare === undefined ? "—" : (burst.perSecond / bare.perSecond).toFixed(2)
      console.log(
        `${`(reference) host, ${backend}, OMNI_WORKERS=1`.padEnd(name)}  ${format.rate(burst.perSecond).padStart(10)}  ${ratio.padStart(6)}  ${`${burst.payloads}, once`.padStart(13)}  ${"—".padStart(6)}  ${format.cpu(cpu)}`
      )
    }
  }
  if (processingRuns.size > 0) {
    console.log(
      `\nprocessing: ${MESSAGES} messages from ${CONTACTS} contacts, a tenth in payloads of ${BATCH_SIZE}, stored before one worker process starts ` +
        `(the host's wiring, 1 worker); timed from its start to the last message.received event${quick ? "" : "; each backend ran twice, the faster run shown"}`
    )
    const header = `${"backend".padEnd(10)}  ${"payloads".padStart(8)}  ${"seconds".padStart(7)}  ${"messages/s".padStart(10)}  ${"runs".padStart(11)}  checks  CPU per message (µs, by process)`
    console.log(header)
    console.log("-".repeat(header.length + 20))
    for (const backend of backends) {
      const best = bestProcessing(backend)
      if (best === undefined) continue
      const runs = (processingRuns.get(backend) ?? []).map((run) => run.perSecond.toFixed(0)).join(" / ")
      console.log(
        `${backend.padEnd(10)}  ${String(best.payloads).padStart(8)}  ${best.seconds.toFixed(1).padStart(7)}  ${format.rate(best.perSecond).padStart(10)}  ${runs.padStart(11)}  ` +
          `${(best.problems.length === 0 ? "ok" : "FAILED").padStart(6)}  ${format.cpu(best.cpu)}`
      )
      if (best.problems.length > 0) console.log(`  ${best.problems.join("; ")}`)
    }
  }
  if (latencyRuns.size > 0) {
    console.log(
      `\nacknowledgement latency: ${RATE} payloads/s for ${STEADY_SECONDS} s to the host with OMNI_WORKERS=1 (processing on), open loop, ` +
        `request to answer${quick ? "" : "; each backend ran twice, the run with the lower p99 shown"}`
    )
    const header = `${"backend".padEnd(10)}  ${"sent".padStart(5)}  ${"200".padStart(5)}  ${"rate/s".padStart(6)}  ${"p50 ms".padStart(7)}  ${"p95 ms".padStart(7)}  ${"p99 ms".padStart(7)}  ${"max ms".padStart(7)}  ${"p99 of runs".padStart(15)}  last event after last ack`
    console.log(header)
    console.log("-".repeat(header.length))
    for (const backend of backends) {
      const best = bestLatency(backend)
      if (best === undefined) continue
      const { latency } = best
      const runs = (latencyRuns.get(backend) ?? []).map((run) => format.ms(run.latency.p99)).join(" / ")
      console.log(
        `${backend.padEnd(10)}  ${String(latency.sent).padStart(5)}  ${String(latency.acknowledged).padStart(5)}  ${latency.achievedRate.toFixed(0).padStart(6)}  ` +
          `${format.ms(latency.p50).padStart(7)}  ${format.ms(latency.p95).padStart(7)}  ${format.ms(latency.p99).padStart(7)}  ${format.ms(latency.max).padStart(7)}  ` +
          `${runs.padStart(15)}  ${best.behind ?? `${format.ms(best.lagMs)} ms`}${best.problems.length === 0 ? "" : `  CHECKS FAILED: ${best.problems.join("; ")}`}`
      )
    }
  }

  const goals: Array<[string, string, "met" | "MISSED" | "SKIPPED" | "INFO"]> = []
  const verdict = (met: boolean) => (met ? "met" : "MISSED") as "met" | "MISSED"
  if (only.has("ack")) {
    for (const backend of ["SQLite", "PostgreSQL"] as const) {
      const goal = `acknowledgement, ${backend} ≥ ${ACK_GOAL} × the bare server`
      const row = ackRows.find((r) => r.backend === backend)
      if (row?.best === undefined || bare === undefined) {
        goals.push([goal, backend === "PostgreSQL" && !withPostgres ? "no PostgreSQL" : "not run", "SKIPPED"])
        continue
      }
      const ratio = row.best.perSecond / bare.perSecond
      const refused = row.runs.some((run) => run.refused > 0)
      const lost = row.stored !== undefined && row.stored.found !== row.stored.expected
      goals.push([
        goal,
        `${format.rate(row.best.perSecond)}/s = ${ratio.toFixed(2)} × ${format.rate(bare.perSecond)}/s` +
          (refused ? " (some not answered 200)" : "") + (lost ? " (acknowledged payloads missing)" : ""),
        verdict(ratio >= ACK_GOAL && !refused && !lost)
      ])
    }
  }
  if (only.has("processing")) {
    const sqlite = bestProcessing("SQLite")
    goals.push([
      `processing, SQLite, 1 process ≥ ${PROCESSING_GOAL.toLocaleString("en")} messages/s`,
      sqlite === undefined
        ? "not run"
        : `${format.rate(sqlite.perSecond)} messages/s${sqlite.problems.length === 0 ? ", counts verified" : `; checks failed: ${sqlite.problems.join("; ")}`}`,
      sqlite === undefined ? "SKIPPED" : verdict(sqlite.perSecond >= PROCESSING_GOAL && sqlite.problems.length === 0)
    ])
    const postgres = bestProcessing("PostgreSQL")
    goals.push([
      "(reported, no goal) processing, PostgreSQL, 1 process",
      postgres === undefined
        ? (withPostgres ? "not run" : "no PostgreSQL")
        : `${format.rate(postgres.perSecond)} messages/s${postgres.problems.length === 0 ? ", counts verified" : `; checks failed: ${postgres.problems.join("; ")}`}`,
      postgres === undefined ? "SKIPPED" : "INFO"
    ])
  }
  if (only.has("latency")) {
    for (const backend of ["SQLite", "PostgreSQL"] as const) {
      const goal = `acknowledgement p99 < ${P99_GOAL_MS} ms at ${RATE} payloads/s, ${backend}`
      const best = bestLatency(backend)
      if (best === undefined) {
        goals.push([goal, backend === "PostgreSQL" && !withPostgres ? "no PostgreSQL" : "not run", "SKIPPED"])
        continue
      }
      goals.push([
        goal,
        `p99 ${format.ms(best.latency.p99)} ms (p50 ${format.ms(best.latency.p50)}, p95 ${format.ms(best.latency.p95)})` +
          (best.behind === undefined ? "" : `; ${best.behind}`) +
          (best.problems.length === 0 ? "" : `; checks failed: ${best.problems.join("; ")}`),
        verdict(best.latency.p99 < P99_GOAL_MS && best.problems.length === 0)
      ])
    }
  }
  console.log("\ngoals")
  const goalName = Math.max(...goals.map(([goal]) => goal.length))
  for (const [goal, figures, met] of goals) console.log(`  ${met.padEnd(7)}  ${goal.padEnd(goalName)}  ${figures}`)
}

// ---------------------------------------------------------------------------------------------------

progress(
  "setup",
  `${[...only].join(", ")}; ${ACK_PAYLOADS}-payload acknowledgement bursts, ${MESSAGES} messages to process, ` +
    `${RATE} payloads/s for ${STEADY_SECONDS} s${quick ? " (quick)" : ""}`
)
try {
  const withPostgres = await postgresReachable(PG_URL)
  if (!withPostgres) progress("setup", `no PostgreSQL at ${PG_URL}: the PostgreSQL phases are skipped`)
  const backends: ReadonlyArray<Backend> = [
    ...(flags["no-sqlite"] === true ? [] : ["SQLite" as const]),
    ...(withPostgres && flags["no-postgres"] !== true ? ["PostgreSQL" as const] : [])
  ]
  // Each contender twice outside --quick, the second time in reverse order.
  const rounds = quick ? [backends] : [backends, [...backends].reverse()]
  if (only.has("ack")) await ackPhase(backends)
  if (only.has("processing")) for (const round of rounds) for (const backend of round) await processingRun(backend)
  if (only.has("latency")) {
    for (const [r, round] of rounds.entries()) {
      for (const backend of round) await latencyRun(backend, !quick && r === 0 && backend === "SQLite")
    }
  }
  printReport(withPostgres)
} catch (error) {
  // After an interruption the phase in progress fails as its processes die; that is not news.
  if (!cleaningUp()) console.error(error)
  process.exitCode = 1
} finally {
  await cleanUp()
}
console.log(`[done] in ${elapsedSeconds()} s`)
