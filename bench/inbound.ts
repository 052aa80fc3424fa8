/**
 * Inbound operator webhooks benchmark: how fast the reference host acknowledges signed
 * `POST /webhooks/chatapp` payloads; how fast worker processes turn stored payloads of the
 * operator's realistic mix into stored messages and moved statuses; and how long an acknowledgement
 * takes at a steady 1,000 payloads/s with processing on, and whether processing keeps up; on SQLite
 * and PostgreSQL.
 *
 * Acknowledgement is judged against a baseline measured in the same run with the same client
 * (undici, keep-alive, 64 in flight) and the same signed payloads (one message each): a bare
 * `node:http` server in a child process that reads the body, checks the HMAC with `timingSafeEqual`
 * and answers 200. The host runs as `npm start` runs it, in its own process, with `OMNI_WORKERS=0`
 * (the edge alone: verify, store, answer). The bare server and the hosts run alternately twice (bare,
 * SQLite, PostgreSQL, bare, PostgreSQL, SQLite); each keeps its better figure. A burst against a host
 * with its worker on (SQLite, full runs only) is printed for reference.
 *
 * Processing (`processing`): the operator's mix. For every contact's message, the three statuses
 * (sent, delivered, read) of a message the host sent that contact, in the operator's wire format
 * (`InboundPayloads.ts` `makeMix`): payloads of 1 to 10 items (seeded, the same mix every run), a
 * message's statuses in order but spread over payloads. The payloads, and before them the outbound
 * messages the statuses are about (`sent`, in their contacts' open conversations, so the contacts'
 * messages find both), are stored first (then, on PostgreSQL, `ANALYZE`, so plans do not change
 * midway when autovacuum gets to it); the worker processes, wired as the host wires them
 * (`OMNI_WORKERS=1` each), are then timed from their start to the last payload processed
 * (`processed_at`). Items (messages + statuses) per second is the
 * goal figure; messages/s and statuses/s are the same run's two parts. Every count is verified:
 * inbound messages and `message.received` events, every outbound message `read` with its delivered
 * and read times, three status rows for each, contacts, conversations, no payload pending, failed or
 * noted. One worker process on each backend; then two on the same PostgreSQL database. CPU per item
 * is read by process, PostgreSQL's as that of the backends serving the run's database; and from
 * `pg_stat_database` of that database, rows fetched (`tup_fetched`, the goal), rows returned
 * (`tup_returned`) and commits (`xact_commit`, read-only ones too) per item, counted from before the
 * workers open the database until their connections have closed (the benchmark's own polls, a row
 * each, included). A run that has not finished within its limit is stopped (the workers finish what
 * they hold) and reports the rate it had reached, as not finished. `processing-messages` (not run
 * unless named) is the earlier workload: payloads of one message (a tenth batched ten to a payload),
 * contacts and conversations made as they come.
 *
 * Latency: a steady 1,000 payloads/s of one message each, open loop, to a host with its worker on;
 * processing keeps up when the backlog is empty (the last payload processed) within 2 s of the last
 * payload sent, and that is part of the goal. Processing and latency runs are repeated in
 * reverse order too (not with `--quick`), keeping the better run (higher rate, lower p99).
 *
 *   npm run bench:inbound -- [--quick] [--payloads 20000] [--messages 10000]
 *                            [--only ack,processing,latency,processing-messages]
 *                            [--no-sqlite] [--no-postgres]     (for profiling one phase; goals need both)
 *
 * `--messages` is the contacts' messages of a processing run (the mix carries three statuses for each
 * besides). PostgreSQL comes from PG_URL (default postgres://postgres@127.0.0.1:5432/test); each
 * phase makes its own database and drops it. Without a reachable server the PostgreSQL phases are
 * skipped. `BENCH_CPU_PROF=dir` makes the processing phase's worker processes write V8 CPU profiles there.
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
import {
  type HostSettings,
  lastEventSeq,
  openReader,
  pendingPayloads,
  prepareDatabase,
  readCounts,
  readStatusCounts,
  waitUntilProcessed
} from "./InboundDatabase.ts"
import { type AckBurst, ackBurst, type AckLatency, ackSteady, makeOperatorClient, type OperatorClient } from "./InboundLoad.ts"
import { makeMix, makePayloads, type OutboundMessage, type SignedPayload } from "./InboundPayloads.ts"
import { busiestTables, countersBetween, type DatabaseCounters, openDatabaseCounters } from "./InboundPgStats.ts"
import { type InboundServer, type InboundWorker, startBareServer, startHostProcess, startInboundWorker } from "./InboundServers.ts"

const PHASES = ["ack", "processing", "latency", "processing-messages"] as const
type Phase = typeof PHASES[number]
/** What runs when `--only` is not given: the phases the goals are judged on. */
const DEFAULT_PHASES: ReadonlyArray<Phase> = ["ack", "processing", "latency"]

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
/** Contacts' messages of a processing run: the mix carries three statuses of an outbound message for each. */
const MESSAGES = Number(flags.messages ?? (quick ? 1_500 : 10_000))
/** Distinct contacts: ten messages each, so contacts and conversations are mostly found, not made. */
const CONTACTS = Math.max(1, Math.round(MESSAGES / 10))
/** The mix's payload sizes and status lags: fixed, so every run processes the same mix. */
const MIX_SEED = 29
/** `processing-messages`: a tenth of the messages arrive in batched payloads of this many (the rest one per payload). */
const BATCH_SIZE = 10
/** The steady load of the latency phase, payloads of one message each. */
const RATE = 1_000
const STEADY_SECONDS = quick ? 3 : 10
const LATENCY_WARM_UP = quick ? 200 : 500
/** The reference burst against a host with its worker on (full runs, SQLite): not a goal, so shorter. */
const ACK_REFERENCE_PAYLOADS = 5_000
/**
 * How long a processing run may take before it is stopped and its rate read from what it did by
 * then (reported as not finished); and how long the latency phase waits for its backlog to be
 * processed, to verify the counts (keeping up is judged at `KEEP_UP_MS`).
 */
const PROCESSING_LIMIT_SECONDS = quick ? 10 : 120
const DRAIN_LIMIT_SECONDS = quick ? 5 : 60

/** Goals, as the issue states them. */
const ACK_GOAL = 0.5
const ITEMS_GOAL: Readonly<Record<Backend, number>> = { SQLite: 4_000, PostgreSQL: 2_000 }
/** Two worker processes on one PostgreSQL database against one. */
const SCALING_GOAL = 1.6
/** PostgreSQL's CPU (its backends serving the run's database) per contact's message of the mix, µs. */
const SERVER_CPU_GOAL_US = 150
/** `tup_fetched` per item of the mix on PostgreSQL. */
const ROWS_FETCHED_GOAL = 10
const P99_GOAL_MS = 20
/** Processing keeps up when the backlog is empty this long after the last payload of the steady load. */
const KEEP_UP_MS = 2_000

const HARD_LIMIT_MS = (quick ? 6 : 30) * 60_000
const PG_URL = process.env.PG_URL ?? "postgres://postgres@127.0.0.1:5432/test"

const only = new Set<Phase>(
  flags.only === undefined
    ? DEFAULT_PHASES
    : flags.only.split(",").map((p) => p.trim()).filter((p): p is Phase => (PHASES as ReadonlyArray<string>).includes(p))
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
  ratio: (value: number) => (Number.isFinite(value) ? value.toFixed(2) : "—"),
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

/** What a processing run is fed: the operator's mix (the goal), or payloads of messages alone. */
type Workload = "mix" | "messages"

/** The payloads of a run and what they carry. */
interface Load {
  readonly payloads: ReadonlyArray<SignedPayload>
  /** Messages the host sent, stored before the workers start: what the statuses are about. */
  readonly outbound: ReadonlyArray<OutboundMessage>
  readonly messages: number
  readonly statuses: number
}

interface ProcessingRun {
  readonly workload: Workload
  readonly backend: Backend
  readonly processes: number
  readonly payloads: number
  /** What was done when the workers stopped: contacts' messages stored, statuses recorded. */
  readonly messages: number
  readonly statuses: number
  readonly items: number
  readonly expectedItems: number
  readonly seconds: number
  readonly perSecond: number
  /** CPU per item by process (PostgreSQL: the backends serving the run's database). */
  readonly cpu: CpuPerEvent | undefined
  /** PostgreSQL's CPU per contact's message (its statuses' share included), µs. */
  readonly serverPerMessage: number | undefined
  /** On PostgreSQL: what `pg_stat_database` counted for the run's database meanwhile. */
  readonly database: DatabaseCounters | undefined
  /** What does not add up: empty when every check passed. */
  readonly problems: ReadonlyArray<string>
}

const processingRuns: Array<ProcessingRun> = []

/** `MESSAGES` messages from `CONTACTS` senders: a tenth in payloads of `BATCH_SIZE`, spread among single ones. */
const messagesLoad = (): Load => {
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
  return { payloads: result, outbound: [], messages: MESSAGES, statuses: 0 }
}

const loadOf = (workload: Workload): Load =>
  workload === "mix"
    ? makeMix({ secret: appSecret, run: `${RUN}m${databases}`, contacts: CONTACTS, messages: MESSAGES, seed: MIX_SEED })
    : messagesLoad()

/** Each role's CPU divided by `by`. */
const cpuPer = (total: CpuPerEvent | undefined, by: number): CpuPerEvent | undefined =>
  total === undefined ? undefined : Object.fromEntries(Object.entries(total).map(([role, us]) => [role, us / by]))

const processingRun = async (workload: Workload, backend: Backend, processes: number): Promise<ProcessingRun> => {
  const phase = `processing ${workload === "mix" ? "(mix)" : "(messages only)"}, ${backend}, ${processes} worker process${processes === 1 ? "" : "es"}`
  const { settings, drop } = await freshHostSettings(backend)
  const load = loadOf(workload)
  const expectedItems = load.messages + load.statuses
  progress(
    phase,
    `storing ${load.outbound.length} outbound messages and ${load.payloads.length} payloads ` +
      `(${load.messages} messages from ${CONTACTS} contacts, ${load.statuses} statuses)`
  )
  await prepareDatabase(settings, load.payloads, load.outbound)
  const reader = openReader(settings.databaseUrl)
  const closeReader = onCleanup(() => reader.destroy())
  const database = databaseOf(settings.databaseUrl)
  const counters = database === undefined ? undefined : await openDatabaseCounters(settings.databaseUrl)
  const closeCounters = onCleanup(async () => counters?.close())
  // Counted from before the workers open the database (their start-up reads count too), once the
  // set-up's connections have gone and handed in their counts.
  await counters?.quiet()
  const before = await counters?.read()
  // Opened side by side (each checks the migrations, under the migrator's lock).
  const workers: ReadonlyArray<InboundWorker> = await Promise.all(Array.from({ length: processes }, () => startInboundWorker(settings)))
  const kills = workers.map((worker) => onCleanup(worker.kill))
  const roles: Record<string, ReadonlyArray<number>> = {}
  for (const [i, worker] of workers.entries()) roles[processes === 1 ? "worker" : `worker ${i + 1}`] = [worker.pid]
  roles["bench (polls)"] = [process.pid]
  const meter = startInboundCpuMeter(roles, database)
  const seqAtStart = await lastEventSeq(reader)
  progress(phase, `${processes === 1 ? "worker" : `${processes} workers`} started`)
  const startedAt = Math.min(...await Promise.all(workers.map((worker) => worker.start())))
  // Polls read a row at most, so they barely show in the database's counts.
  const finished = await waitUntilProcessed(
    reader,
    Date.now() + PROCESSING_LIMIT_SECONDS * 1000,
    async () => progress(phase, `${(await lastEventSeq(reader)) - seqAtStart} outbox events appended so far`),
    250
  )
  const stopped = await Promise.all(workers.map((worker) => worker.stop()))
  // Read while the workers and their database connections are still there, the work stopped.
  const cpuTotal = meter.perEvent(1)
  for (const worker of workers) await worker.close()
  for (const kill of kills) await release(kill)
  const quiet = await counters?.quiet()
  const after = await counters?.read()
  await release(closeCounters)
  const counts = await readCounts(reader)
  const statusCounts = load.outbound.length > 0 ? await readStatusCounts(reader) : undefined
  await release(closeReader)
  await release(drop)

  const errors = stopped.reduce((sum, stop) => sum + stop.errors, 0)
  const firstError = stopped.find((stop) => stop.firstError !== undefined)?.firstError
  if (firstError !== undefined) progress(phase, `${errors} errors, first: ${firstError}`)
  // From the workers' start to the last payload processed, the last ones a stopped run finished included.
  const seconds = ((counts.lastProcessedAt ?? startedAt) - startedAt) / 1000
  const messages = counts.messages
  const statuses = statusCounts?.handled ?? 0
  const items = messages + statuses
  const problems: Array<string> = []
  if (!finished) problems.push(`not finished within ${PROCESSING_LIMIT_SECONDS} s (${items} of ${expectedItems} items when stopped)`)
  const expect = (what: string, found: number | undefined, expected: number) => {
    if (found !== expected) problems.push(`${what} ${found ?? "none"}, expected ${expected}`)
  }
  expect("messages stored", counts.messages, load.messages)
  expect("message.received events", counts.received, load.messages)
  expect("payloads pending", counts.pending, 0)
  expect("payloads failed", counts.failed, 0)
  expect("payloads processed", counts.processed, load.payloads.length)
  expect("payloads with a note", counts.noted, 0)
  expect("contacts", counts.contacts, CONTACTS)
  expect("conversations", counts.conversations, CONTACTS)
  expect("worker errors", errors, 0)
  if (counts.firstNote !== null) problems.push(`first note: ${counts.firstNote}`)
  if (statusCounts !== undefined) {
    const outbound = load.outbound.length
    expect("outbound messages", statusCounts.outbound, outbound)
    expect("outbound messages read with delivered_at and read_at", statusCounts.readWithTimes, outbound)
    expect("statuses handled", statusCounts.handled, load.statuses)
    expect("statuses of sent messages kept apart", statusCounts.keptOfOutbound, 0)
  }
  if (quiet === false) problems.push("the workers' connections had not left the database 10 s after closing: its counts are short")
  const run: ProcessingRun = {
    workload,
    backend,
    processes,
    payloads: load.payloads.length,
    messages,
    statuses,
    items,
    expectedItems,
    seconds,
    perSecond: items / seconds,
    cpu: cpuPer(cpuTotal, Math.max(1, items)),
    serverPerMessage: cpuTotal?.PostgreSQL === undefined ? undefined : cpuTotal.PostgreSQL / Math.max(1, messages),
    database: before === undefined || after === undefined ? undefined : countersBetween(before, after),
    problems
  }
  progress(
    phase,
    `${items}/${expectedItems} items in ${seconds.toFixed(1)} s = ${format.rate(run.perSecond)} items/s ` +
      `(${format.rate(messages / seconds)} messages/s, ${format.rate(statuses / seconds)} statuses/s)` +
      (run.database === undefined ? "" : `; ${databaseText(run)}`) +
      `; ${problems.length === 0 ? "counts verified" : `CHECKS FAILED: ${problems.join("; ")}`}`
  )
  processingRuns.push(run)
  return run
}

/** PostgreSQL's side of a run, per item (and its CPU per message too). */
const databaseText = (run: ProcessingRun): string => {
  const per = (value: number, digits = 1) => (value / Math.max(1, run.items)).toFixed(digits)
  // Rows sequential scans read are named: a hot query that left its index shows here.
  const sequentialOf = (counters: DatabaseCounters, table: string) => {
    const rows = counters.sequentialByTable.get(table) ?? 0
    return rows === 0 ? "" : ` (${per(rows)} by sequential scans)`
  }
  const database = run.database!
  return `per item ${per(database.fetched)} rows fetched, ${per(database.returned)} returned, ${per(database.commits, 2)} commits ` +
    `(rows read per item most from ${busiestTables(database, 3).map(([table, rows]) => `${table} ${per(rows)}${sequentialOf(database, table)}`).join(", ")}); ` +
    `server CPU ${format.rate(run.cpu?.PostgreSQL)} µs per item, ${format.rate(run.serverPerMessage)} µs per message`
}

/** The first problem of a run, and how many more the tables above list. */
const problemsText = (problems: ReadonlyArray<string>): string =>
  problems.length <= 1 ? problems.join("") : `${problems[0]}; ${problems.length - 1} more (above)`

const runsOf = (workload: Workload, backend: Backend, processes: number) =>
  processingRuns.filter((run) => run.workload === workload && run.backend === backend && run.processes === processes)

/** The faster run whose checks passed, else the faster run. */
const bestProcessing = (workload: Workload, backend: Backend, processes: number): ProcessingRun | undefined => {
  const runs = runsOf(workload, backend, processes)
  const faster = (a: ProcessingRun | undefined, b: ProcessingRun) => (a === undefined || b.perSecond > a.perSecond ? b : a)
  return runs.filter((run) => run.problems.length === 0).reduce<ProcessingRun | undefined>(faster, undefined) ??
    runs.reduce<ProcessingRun | undefined>(faster, undefined)
}

// ---------------------------------------------------------------------------------------------------
// Acknowledgement latency at a steady rate, processing on.

interface LatencyRun {
  readonly backend: Backend
  readonly latency: AckLatency
  /** From the last payload of the steady load to the last payload processed; NaN when the backlog was not empty by the drain limit. */
  readonly lagMs: number
  /** Whether processing kept up: the backlog empty within `KEEP_UP_MS` of the load's end. */
  readonly keptUp: boolean
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
  const drained = await waitUntilProcessed(
    reader,
    Date.now() + DRAIN_LIMIT_SECONDS * 1000,
    async () => progress(phase, `${await pendingPayloads(reader)} payloads pending`)
  )
  const counts = await readCounts(reader)
  const lagMs = drained && counts.lastProcessedAt !== null ? Math.max(0, counts.lastProcessedAt - latency.lastSentAt) : Number.NaN
  const keptUp = lagMs <= KEEP_UP_MS
  const expected = LATENCY_WARM_UP + latency.sent
  const problems: Array<string> = []
  if (latency.acknowledged !== latency.sent) problems.push(`${latency.sent - latency.acknowledged} not answered 200 (${client.refused().first})`)
  if (counts.failed !== 0) problems.push(`${counts.failed} payloads failed`)
  if (drained && counts.received !== expected) problems.push(`message.received ${counts.received}, expected ${expected}`)
  const behind = drained ? undefined : `processing behind: ${counts.pending} payloads pending ${DRAIN_LIMIT_SECONDS} s after the last acknowledgement`
  progress(
    phase,
    `p50 ${format.ms(latency.p50)} ms, p95 ${format.ms(latency.p95)} ms, p99 ${format.ms(latency.p99)} ms, max ${format.ms(latency.max)} ms ` +
      `(${latency.acknowledged}/${latency.sent} acknowledged at ${latency.achievedRate.toFixed(0)}/s); ` +
      (behind ?? `backlog empty ${format.ms(lagMs)} ms after the last payload sent`) +
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
  const run: LatencyRun = { backend, latency, lagMs, keptUp, behind, problems }
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
  for (const workload of ["mix", "messages"] as const) {
    const shown = processingRuns.filter((run) => run.workload === workload)
    if (shown.length === 0) continue
    console.log(
      workload === "mix"
        ? `\nprocessing, the operator's mix: ${MESSAGES} contacts' messages from ${CONTACTS} contacts and 3 statuses (sent, delivered, read) ` +
          `of each of ${MESSAGES} outbound messages stored first, ${shown[0]!.payloads} payloads of 1 to 10 items (seed ${MIX_SEED}), ` +
          `stored before the worker processes start (the host's wiring, 1 worker each); timed from their start to the last payload processed; ` +
          `messages/s and statuses/s are the two parts of items/s${quick ? "" : "; each row ran twice, the faster run shown"}`
        : `\nprocessing, messages only: ${MESSAGES} messages from ${CONTACTS} contacts, a tenth in payloads of ${BATCH_SIZE}, stored before one ` +
          `worker process starts; timed from its start to the last payload processed${quick ? "" : "; each backend ran twice, the faster run shown"}`
    )
    const header = `${"backend".padEnd(10)}  ${"processes".padStart(9)}  ${"items".padStart(6)}  ${"seconds".padStart(7)}  ${"items/s".padStart(7)}  ` +
      `${"messages/s".padStart(10)}  ${"statuses/s".padStart(10)}  ${"items/s of runs".padStart(15)}  checks  CPU per item (µs, by process)`
    console.log(header)
    console.log("-".repeat(header.length + 20))
    for (const backend of backends) {
      for (const processes of [1, 2]) {
        const best = bestProcessing(workload, backend, processes)
        if (best === undefined) continue
        const runs = runsOf(workload, backend, processes).map((run) => format.rate(run.perSecond)).join(" / ")
        console.log(
          `${backend.padEnd(10)}  ${String(processes).padStart(9)}  ${String(best.items).padStart(6)}  ${best.seconds.toFixed(1).padStart(7)}  ` +
            `${format.rate(best.perSecond).padStart(7)}  ${format.rate(best.messages / best.seconds).padStart(10)}  ` +
            `${format.rate(best.statuses / best.seconds).padStart(10)}  ${runs.padStart(15)}  ` +
            `${(best.problems.length === 0 ? "ok" : "FAILED").padStart(6)}  ${format.cpu(best.cpu)}`
        )
        if (best.database !== undefined) console.log(`  PostgreSQL: ${databaseText(best)}`)
        if (best.problems.length > 0) console.log(`  ${best.problems.join("; ")}`)
      }
    }
  }
  if (latencyRuns.size > 0) {
    console.log(
      `\nacknowledgement latency: ${RATE} payloads/s of one message each for ${STEADY_SECONDS} s to the host with OMNI_WORKERS=1 (processing on), ` +
        `open loop, request to answer; processing keeps up when the last payload is processed within ${KEEP_UP_MS / 1000} s of the last one sent` +
        `${quick ? "" : "; each backend ran twice, the run with the lower p99 shown"}`
    )
    const header = `${"backend".padEnd(10)}  ${"sent".padStart(5)}  ${"200".padStart(5)}  ${"rate/s".padStart(6)}  ${"p50 ms".padStart(7)}  ${"p95 ms".padStart(7)}  ${"p99 ms".padStart(7)}  ${"max ms".padStart(7)}  ${"p99 of runs".padStart(15)}  backlog empty after the load`
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
          `${runs.padStart(15)}  ${best.behind ?? `${format.ms(best.lagMs)} ms${best.keptUp ? "" : " (not kept up)"}`}${best.problems.length === 0 ? "" : `  CHECKS FAILED: ${best.problems.join("; ")}`}`
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
    /** A processing goal over the best run of a kind; `judge` gives the figures and whether they meet it. */
    const processingGoal = (
      goal: string,
      run: ProcessingRun | undefined,
      judge: (run: ProcessingRun) => { readonly figures: string; readonly met: boolean } | undefined,
      backend: Backend
    ) => {
      if (run === undefined) {
        goals.push([goal, backend === "PostgreSQL" && !withPostgres ? "no PostgreSQL" : "not run", "SKIPPED"])
        return
      }
      const judged = judge(run)
      if (judged === undefined) {
        goals.push([goal, "not measured here (CPU and pg_stat_database are read on Linux)", "SKIPPED"])
        return
      }
      const checked = run.problems.length === 0
      goals.push([goal, `${judged.figures}${checked ? ", counts verified" : `; checks failed: ${problemsText(run.problems)}`}`, verdict(judged.met && checked)])
    }
    const rate = (run: ProcessingRun) =>
      `${format.rate(run.perSecond)} items/s (${format.rate(run.messages / run.seconds)} messages/s, ${format.rate(run.statuses / run.seconds)} statuses/s)`
    for (const backend of ["SQLite", "PostgreSQL"] as const) {
      processingGoal(
        `processing (mix), ${backend}, 1 process ≥ ${ITEMS_GOAL[backend].toLocaleString("en")} items/s`,
        bestProcessing("mix", backend, 1),
        (run) => ({ figures: rate(run), met: run.perSecond >= ITEMS_GOAL[backend] }),
        backend
      )
    }
    const one = bestProcessing("mix", "PostgreSQL", 1)
    processingGoal(
      `processing (mix), PostgreSQL, 2 processes ≥ ${SCALING_GOAL} × 1 process`,
      bestProcessing("mix", "PostgreSQL", 2),
      (two) =>
        one === undefined ? undefined : {
          figures: `${format.rate(two.perSecond)} items/s = ${format.ratio(two.perSecond / one.perSecond)} × ${format.rate(one.perSecond)} items/s` +
            (one.problems.length === 0 ? "" : " (the 1-process run's checks failed)"),
          met: two.perSecond >= SCALING_GOAL * one.perSecond && one.problems.length === 0
        },
      "PostgreSQL"
    )
    processingGoal(
      `PostgreSQL server CPU per message ≤ ${SERVER_CPU_GOAL_US} µs (mix, 1 process)`,
      one,
      (run) =>
        run.serverPerMessage === undefined ? undefined : {
          figures: `${format.rate(run.serverPerMessage)} µs per message with its 3 statuses' share (${format.rate(run.cpu?.PostgreSQL)} µs per item)`,
          met: run.serverPerMessage <= SERVER_CPU_GOAL_US
        },
      "PostgreSQL"
    )
    processingGoal(
      `rows fetched per item ≤ ${ROWS_FETCHED_GOAL} (PostgreSQL, mix, 1 process)`,
      one,
      (run) =>
        run.database === undefined ? undefined : {
          figures: `tup_fetched ${(run.database.fetched / run.items).toFixed(1)} per item ` +
            `(tup_returned ${(run.database.returned / run.items).toFixed(1)}, commits ${(run.database.commits / run.items).toFixed(2)})`,
          met: run.database.fetched / run.items <= ROWS_FETCHED_GOAL
        },
      "PostgreSQL"
    )
  }
  if (only.has("processing-messages")) {
    for (const backend of ["SQLite", "PostgreSQL"] as const) {
      const run = bestProcessing("messages", backend, 1)
      goals.push([
        `(reported, no goal) processing (messages only), ${backend}, 1 process`,
        run === undefined
          ? (backend === "PostgreSQL" && !withPostgres ? "no PostgreSQL" : "not run")
          : `${format.rate(run.perSecond)} messages/s${run.problems.length === 0 ? ", counts verified" : `; checks failed: ${problemsText(run.problems)}`}`,
        run === undefined ? "SKIPPED" : "INFO"
      ])
    }
  }
  if (only.has("latency")) {
    for (const backend of ["SQLite", "PostgreSQL"] as const) {
      const goal = `acknowledgement p99 < ${P99_GOAL_MS} ms at ${RATE} payloads/s, processing keeping up, ${backend}`
      const best = bestLatency(backend)
      if (best === undefined) {
        goals.push([goal, backend === "PostgreSQL" && !withPostgres ? "no PostgreSQL" : "not run", "SKIPPED"])
        continue
      }
      goals.push([
        goal,
        `p99 ${format.ms(best.latency.p99)} ms (p50 ${format.ms(best.latency.p50)}, p95 ${format.ms(best.latency.p95)}); ` +
          (best.behind ?? `backlog empty ${format.ms(best.lagMs)} ms after the load (goal ≤ ${KEEP_UP_MS})`) +
          (best.problems.length === 0 ? "" : `; checks failed: ${best.problems.join("; ")}`),
        verdict(best.latency.p99 < P99_GOAL_MS && best.keptUp && best.problems.length === 0)
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
  `${[...only].join(", ")}; ${ACK_PAYLOADS}-payload acknowledgement bursts, ${MESSAGES} messages (and ${3 * MESSAGES} statuses in the mix) to process, ` +
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
  if (only.has("processing")) {
    for (const round of rounds) for (const backend of round) await processingRun("mix", backend, 1)
    // Two worker processes share one database only on PostgreSQL.
    if (backends.includes("PostgreSQL")) for (let r = 0; r < rounds.length; r++) await processingRun("mix", "PostgreSQL", 2)
  }
  if (only.has("processing-messages")) for (const round of rounds) for (const backend of round) await processingRun("messages", backend, 1)
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
