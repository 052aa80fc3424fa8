/**
 * How fast the library answers cached `GET /api/v1/chatapp-templates/library` browses of a 5,000-entry catalog, on SQLite and PostgreSQL.
 *
 * The operator is the tests' fake Graph server serving `makeLibraryCatalog(5000)` 500 entries a
 * page. The library is wired in this process as the reference host wires it (storage from the URL;
 * the Graph adapter through the guarded client, loopback allowed; Node's listener; no workers), with
 * a tenant, its API key and a chat-app channel made as `admin bootstrap` and `admin channel create` do. Each query shape is browsed once to fill the cache; measured browses must not
 * reach the operator, and each shape's answer must match the baseline's counts and facets.
 *
 * Baseline, in the same process and run, through the same client: a bare `node:http` server that per
 * request filters the same entries in an array (the fake operator's filtering), counts them, makes the
 * four facets, slices to `limit`, adds `already_added` and `requires_input` and JSON-encodes the same
 * response shape. Each contender answers a burst of the query mix (undici keep-alive, `CONCURRENCY`
 * in flight), then the mix one request at a time for latency (GC pauses counted meanwhile); outside
 * `--quick` all twice (bare, SQLite, PostgreSQL, bare, PostgreSQL, SQLite), keeping the better figures.
 *
 *   npm run bench:templates -- [--quick] [--no-sqlite] [--no-postgres]
 *
 * PostgreSQL comes from PG_URL (default postgres://postgres@127.0.0.1:5432/test), a database of its
 * own, dropped at the end; without a reachable server it is skipped. `BENCH_CPU_PROF=dir` adds a burst
 * per library contender after the measured ones, writes its V8 CPU profile there (the whole process:
 * the client too) and prints where its time went.
 */
import { mkdirSync, mkdtempSync, rmSync } from "node:fs"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { availableParallelism, loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import { PerformanceObserver } from "node:perf_hooks"
import { parseArgs } from "node:util"
import { Effect } from "effect"
import { Pool } from "undici"
import { makeGuardedHttp } from "../adapters/http/GuardedHttp.ts"
import { makeFileBlobStore, nodeHmacSigner, serve } from "../adapters/node/index.ts"
import { readConfig } from "../examples/server/Config.ts"
import { fileOptions, operatorOptions } from "../examples/server/Operator.ts"
import { storageFor } from "../examples/server/Storage.ts"
import { make } from "../src/app/Omnichannel.ts"
import { Operator } from "../src/auth/Operator.ts"
import { createPostgresDatabase } from "../test/support/Databases.ts"
import { libraryEntryMatches, startFakeGraph } from "../test/support/FakeGraph.ts"
import { makeLibraryCatalog } from "../test/support/LibraryCatalog.ts"
import { hostEnvironment } from "./InboundDatabase.ts"
import { quantile, stamp } from "./Load.ts"
import { postgresReachable, startRun } from "./Run.ts"
import { startProfile } from "./Profile.ts"

const { values: flags } = parseArgs({
  options: {
    quick: { type: "boolean", default: false },
    "no-sqlite": { type: "boolean", default: false },
    "no-postgres": { type: "boolean", default: false }
  }
})
const quick = flags.quick === true
const CATALOG_SIZE = 5_000
const PAGE_SIZE = 500
/** Browses in each burst, and in each one-at-a-time latency run; warm-up browses per contender. */
const BURST = quick ? 700 : 3_500
const SEQUENTIAL = quick ? 350 : 1_400
const WARM_UP = quick ? 140 : 700
/** Browses in flight during a burst (undici connections, no pipelining). */
const CONCURRENCY = 16
const RATIO_GOAL = 0.5
const P99_GOAL_MS = 10
const HARD_LIMIT_MS = (quick ? 6 : 20) * 60_000
const PG_URL = process.env.PG_URL ?? "postgres://postgres@127.0.0.1:5432/test"
const PROFILE_DIR = process.env.BENCH_CPU_PROF
const PATH = "/api/v1/chatapp-templates/library"
const [PHONE_NUMBER_ID, BUSINESS_ACCOUNT_ID] = ["106540352242922", "102290129340398"]

const { loadAtStart, progress, onCleanup, cleanUp, cleaningUp, elapsedSeconds } = startRun(HARD_LIMIT_MS)
const root = mkdtempSync(join(tmpdir(), "bench-templates-"))
onCleanup(async () => rmSync(root, { recursive: true, force: true }))

const catalog = makeLibraryCatalog(CATALOG_SIZE)
/** The measured mix: each shape's query parameters (`channel_id` is added per contender). */
const SHAPES: ReadonlyArray<readonly [string, Readonly<Record<string, string>>]> = [
  ["no filter, limit=100", { limit: "100" }],
  ["language=en_US", { language: "en_US" }],
  ["language+topic", { language: "es_ES", topic: "PAYMENTS" }],
  ["search=order", { search: "order" }],
  ["industry=HEALTHCARE", { industry: "HEALTHCARE" }],
  ["name=<one entry>", { name: String(catalog[1234]!.name) }],
  ["no filter, limit=500", { limit: "500" }]
]
const pathOf = (channelId: string, shape: number) => `${PATH}?${new URLSearchParams({ channel_id: channelId, ...SHAPES[shape]![1] })}`

// ---------------------------------------------------------------------------------------------------
// The baseline: the same browse over a plain array, in a bare node:http server.

const FILTERS = ["search", "topic", "usecase", "industry", "language", "name"] as const
const asStrings = (value: unknown): Array<string> => (Array.isArray(value) ? value.map(String) : [])
const bareBrowse = (params: URLSearchParams): { status: number; body: string } => {
  const limit = Number(params.get("limit") ?? "100")
  if (!Number.isInteger(limit) || limit < 1 || limit > 500) return { status: 400, body: JSON.stringify({ error: "limit must be 1 to 500" }) }
  const query = Object.fromEntries(FILTERS.flatMap((filter) => params.get(filter) ? [[filter, params.get(filter)!]] : []))
  const matched = catalog.filter((entry) => libraryEntryMatches(entry, query))
  const languages = new Set<string>(), topics = new Set<string>(), usecases = new Set<string>(), industries = new Set<string>()
  for (const entry of matched) {
    languages.add(String(entry.language))
    if (typeof entry.topic === "string") topics.add(entry.topic)
    if (typeof entry.usecase === "string") usecases.add(entry.usecase)
    for (const industry of asStrings(entry.industry)) industries.add(industry)
  }
  // Each entry in the spec's shape: absent fields null, every button with its five fields.
  const items = matched.slice(0, limit).map((e) => {
    const buttons = (e.buttons as Array<Record<string, unknown>> | undefined ?? []).map((b) => ({
      type: b.type, text: b.text ?? null, url: b.url ?? null, phone_number: b.phone_number ?? null, otp_type: b.otp_type ?? null
    }))
    return {
      id: e.id, name: e.name, language: e.language, category: e.category, topic: e.topic ?? null, usecase: e.usecase ?? null,
      industry: asStrings(e.industry), header: e.header ?? null, body: e.body, footer: e.footer ?? null,
      body_params: asStrings(e.body_params), body_param_types: asStrings(e.body_param_types), buttons, already_added: false,
      requires_input: buttons.some((b) => b.type === "URL" || b.type === "PHONE_NUMBER")
    }
  })
  const sorted = (values: Set<string>) => [...values].sort()
  return {
    status: 200,
    body: JSON.stringify({
      items,
      total: matched.length,
      facets: { languages: sorted(languages), topics: sorted(topics), usecases: sorted(usecases), industries: sorted(industries) },
      language: query.language ?? null,
      stale: false,
      warning: null
    })
  }
}

/** A server browsed: the channel id its browses carry, the API key they send, operator library requests so far (the library's). */
interface Contender { readonly name: string; readonly url: string; readonly channelId: string; readonly apiKey: string; readonly operatorCalls?: () => number }

const startBare = async (): Promise<Contender> => {
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://bare")
    const { status, body } = url.pathname === PATH ? bareBrowse(url.searchParams) : { status: 404, body: "{}" }
    res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body) })
    res.end(body)
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  onCleanup(() => new Promise<void>((resolve) => (server.close(() => resolve()), server.closeAllConnections())))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return { name: "bare node:http, array filter", url, channelId: "bare", apiKey: "bare" }
}

// ---------------------------------------------------------------------------------------------------
// The library, wired as the reference host wires it, over a database of its own.

type Backend = "SQLite" | "PostgreSQL"

const startLibrary = async (backend: Backend, graphUrl: string, operatorCalls: () => number): Promise<Contender> => {
  const dataDir = join(root, backend)
  mkdirSync(dataDir)
  const database = backend === "SQLite" ? { url: `file:${join(dataDir, "omnichannel.sqlite")}` } : await createPostgresDatabase(PG_URL)
  if ("drop" in database) onCleanup(database.drop)
  const settings = { databaseUrl: database.url, dataDir, appSecret: "bench-app-secret" }
  const config = readConfig(hostEnvironment(settings, { OMNI_CHATAPP_GRAPH_URL: graphUrl, OMNI_OUTBOUND_ALLOW: "127.0.0.1/32" }))
  const outbound = makeGuardedHttp({ allow: config.outboundAllow })
  const files = fileOptions(config)
  const app = await make({
    storage: storageFor(config.databaseUrl), ...operatorOptions(config, outbound), blobStore: makeFileBlobStore(files.filesDir),
    downloads: files.downloads, outbound, signer: nodeHmacSigner, dispatch: { leaseSeconds: config.leaseSeconds }
  })
  onCleanup(() => app.dispose().then(() => outbound.close()))
  const { apiKey, channelId } = await app.run(Effect.gen(function*() {
    const operator = yield* Operator
    const boot = yield* operator.bootstrap({ email: "bench@example.com", tenantName: "Template library benchmark" })
    const inputs = { phone_number_id: PHONE_NUMBER_ID, business_account_id: BUSINESS_ACCOUNT_ID, access_token: "EAAGbenchmarkaccesstoken0000000001" }
    const channel = yield* operator.createChannel({ tenantId: boot.tenant_id, type: "chatapp", inputs })
    return { apiKey: boot.api_key, channelId: channel.channel_id }
  }))
  const server = await serve(app.handler, { port: 0, host: "127.0.0.1" })
  onCleanup(() => server.close(2_000))
  return { name: `library, ${backend}`, url: server.url, channelId, apiKey, operatorCalls }
}

// ---------------------------------------------------------------------------------------------------
// The client, bursts and one-at-a-time latency.

type Client = ReturnType<typeof makeClient>
const makeClient = (contender: Contender) => {
  const pool = new Pool(contender.url, { connections: CONCURRENCY, pipelining: 1 })
  const headers = { authorization: `Bearer ${contender.apiKey}`, accept: "application/json" }
  let failed = 0, first: string | undefined
  const fail = (what: string) => void (failed += 1, first ??= what)
  return {
    get: async (path: string): Promise<number> => {
      try {
        const response = await pool.request({ method: "GET", path, headers })
        await response.body.dump({ limit: Number.POSITIVE_INFINITY })
        if (response.statusCode !== 200) fail(`${path} answered ${response.statusCode}`)
        return response.statusCode
      } catch (error) {
        fail(error instanceof Error ? error.message : String(error))
        return 0
      }
    },
    getJson: async (path: string): Promise<{ readonly status: number; readonly body: any; readonly bytes: number }> => {
      const response = await pool.request({ method: "GET", path, headers })
      const text = await response.body.text()
      let body: unknown = text
      try { body = JSON.parse(text) } catch { /* not JSON: kept as text */ }
      return { status: response.statusCode, body, bytes: Buffer.byteLength(text) }
    },
    failures: () => ({ count: failed, first }),
    close: () => void pool.destroy()
  }
}

/** A run's figures; `shapes`: the p50 and p99 of each shape, in `SHAPES` order. */
interface Figures {
  readonly perSecond: number; readonly p50: number; readonly p99: number; readonly shapes: ReadonlyArray<readonly [number, number]>
  /** GC pauses while browsing one at a time: their sum and the longest, ms. */
  readonly gcMs: number; readonly gcMax: number
}

/** `count` browses of the mix, `inFlight` at a time; browses per second from the first request to the last answer. */
const burst = async (client: Client, channelId: string, count: number, inFlight: number): Promise<number> => {
  let next = 0
  const started = stamp()
  const lane = async () => {
    for (let i = next++; i < count; i = next++) await client.get(pathOf(channelId, i % SHAPES.length))
  }
  await Promise.all(Array.from({ length: inFlight }, lane))
  return count / ((stamp() - started) / 1000)
}

/** The mix one browse at a time: latency from request to the answer's end, in ms. */
const sequential = async (client: Client, channelId: string, count: number): Promise<Omit<Figures, "perSecond">> => {
  const byShape = SHAPES.map((): Array<number> => [])
  const gc: Array<number> = []
  const observer = new PerformanceObserver((list) => void gc.push(...list.getEntries().map((entry) => entry.duration)))
  observer.observe({ entryTypes: ["gc"] })
  for (let i = 0; i < count; i++) {
    const at = stamp()
    await client.get(pathOf(channelId, i % SHAPES.length))
    byShape[i % SHAPES.length]!.push(stamp() - at)
  }
  gc.push(...observer.takeRecords().map((entry) => entry.duration))
  observer.disconnect()
  const sorted = (values: Array<number>) => values.sort((a, b) => a - b)
  const all = sorted(byShape.flat())
  return { p50: quantile(all, 0.5), p99: quantile(all, 0.99), gcMs: gc.reduce((a, b) => a + b, 0), gcMax: Math.max(0, ...gc), shapes: byShape.map((values) => [quantile(sorted(values), 0.5), quantile(values, 0.99)] as const) }
}

// ---------------------------------------------------------------------------------------------------
// CPU profile of a library burst (BENCH_CPU_PROF): written out, and summed by where the code lives.

const profiled = async <A>(label: string, run: () => Promise<A>): Promise<A> => {
  if (PROFILE_DIR === undefined) return run()
  const running = await startProfile()
  try {
    return await run()
  } finally {
    const { file, summary } = await running.stop(PROFILE_DIR, "templates", label)
    profileSummaries.push([label, file!, summary])
  }
}
const profileSummaries: Array<readonly [string, string, ReadonlyArray<string>]> = []

// ---------------------------------------------------------------------------------------------------

/** A contender's runs; its differences from the baseline's answers; its answers' sizes by shape; operator requests while measuring (none: cached). */
interface Row {
  readonly contender: Contender; readonly client: Client; readonly runs: Array<Figures>; readonly problems: Array<string>; readonly bytes: Array<number>
  operatorCallsMeasured: number
}

/** The better of the runs: highest rate, lowest latencies. */
const best = (runs: ReadonlyArray<Figures>): Figures | undefined => runs.length === 0 ? undefined : {
  perSecond: Math.max(...runs.map((run) => run.perSecond)),
  p50: Math.min(...runs.map((run) => run.p50)),
  p99: Math.min(...runs.map((run) => run.p99)),
  gcMs: Math.min(...runs.map((run) => run.gcMs)),
  gcMax: Math.min(...runs.map((run) => run.gcMax)),
  shapes: SHAPES.map((_, i) => [Math.min(...runs.map((run) => run.shapes[i]![0])), Math.min(...runs.map((run) => run.shapes[i]![1]))] as const)
}

/** Each shape once from both: what the library answers must match the baseline's counts and facets. */
const compare = async (row: Row, bare: Row) => {
  for (const [i, [shape]] of SHAPES.entries()) {
    const ours = await row.client.getJson(pathOf(row.contender.channelId, i))
    const theirs = await bare.client.getJson(pathOf("bare", i))
    row.bytes.push(ours.bytes)
    if (bare.bytes.length < SHAPES.length) bare.bytes.push(theirs.bytes)
    if (ours.status !== 200) {
      row.problems.push(`${shape}: ${ours.status} ${JSON.stringify(ours.body).slice(0, 200)}`)
      continue
    }
    const names = (body: any) => body.items?.map((item: any) => `${item.name}/${item.language}`)
    for (const [what, a, b] of [["total", ours.body.total, theirs.body.total], ["items", names(ours.body), names(theirs.body)], ["facets", ours.body.facets, theirs.body.facets], ["stale", ours.body.stale, false]]) {
      if (JSON.stringify(a) !== JSON.stringify(b)) row.problems.push(`${shape}: ${what} ${JSON.stringify(a).slice(0, 120)} ≠ baseline ${JSON.stringify(b).slice(0, 120)}`)
    }
  }
}

const fmt = (value: number | undefined, digits = 1) => (value === undefined || Number.isNaN(value) ? "—" : value.toFixed(digits))

const printReport = (rows: ReadonlyArray<Row>, withPostgres: boolean, skipped: ReadonlyArray<string>) => {
  const [bare, ...ours] = rows
  const bareBest = best(bare!.runs)
  console.log(`\nTemplate library browse benchmark${quick ? " (quick)" : ""}`)
  console.log(`node ${process.version}, ${availableParallelism()} CPUs, load average ${loadAtStart} at start and ${loadavg()[0]!.toFixed(1)} at end (shared machine)`)
  if (!withPostgres && flags["no-postgres"] !== true) console.log(`no PostgreSQL at ${PG_URL}: skipped`)
  for (const line of skipped) console.log(line)
  console.log(`\n${CATALOG_SIZE} catalog entries; the mix of ${SHAPES.length} query shapes in turn; bursts of ${BURST} browses with ${CONCURRENCY} in flight ` +
    `(undici keep-alive), then ${SEQUENTIAL} one at a time for latency; server, client and fake operator in one process` +
    (quick ? "" : "; everything twice, each row keeping its better figures"))
  const header = `${"server".padEnd(30)}  ${"browses/s".padStart(9)}  ${"× bare".padStart(6)}  ${"runs".padStart(13)}  ${"p50 ms".padStart(6)}  ${"p99 ms".padStart(6)}  ${"GC ms (longest)".padStart(15)}  operator calls while measuring`
  console.log(header)
  console.log("-".repeat(header.length))
  for (const row of rows) {
    const figures = best(row.runs)
    const ratio = figures === undefined || bareBest === undefined ? "—" : (figures.perSecond / bareBest.perSecond).toFixed(2)
    console.log(`${row.contender.name.padEnd(30)}  ${fmt(figures?.perSecond, 0).padStart(9)}  ${ratio.padStart(6)}  ` +
      `${row.runs.map((run) => run.perSecond.toFixed(0)).join(" / ").padStart(13)}  ${fmt(figures?.p50).padStart(6)}  ${fmt(figures?.p99).padStart(6)}  ` +
      `${(figures === undefined ? "—" : `${figures.gcMs.toFixed(0)} (${figures.gcMax.toFixed(1)})`).padStart(15)}  ` +
      `${row === bare ? "—" : row.operatorCallsMeasured}`)
  }
  console.log(`\np50 / p99 by query shape, one at a time (ms; answer size of the library's first contender)`)
  console.log(`${"shape".padEnd(24)}  ${rows.map((row) => row.contender.name.slice(0, 22).padStart(22)).join("  ")}  ${"bytes".padStart(8)}`)
  for (const [i, [shape]] of SHAPES.entries()) {
    console.log(`${shape.padEnd(24)}  ${rows.map((row) => best(row.runs)?.shapes[i]?.map((ms) => fmt(ms)).join(" / ").padStart(22) ?? "—".padStart(22)).join("  ")}  ${String(ours[0]?.bytes[i] ?? bare!.bytes[i] ?? "—").padStart(8)}`)
  }
  for (const row of ours) if (row.problems.length > 0) console.log(`\n${row.contender.name} differs from the baseline:\n  ${row.problems.join("\n  ")}`)
  for (const [label, file, lines] of profileSummaries) console.log(`\nCPU profile of the ${label} burst (${file}):\n  ${lines.join("\n  ")}`)
  console.log("\ngoals")
  for (const backend of ["SQLite", "PostgreSQL"] as const) {
    const row = ours.find((r) => r.contender.name.endsWith(backend))
    const figures = row === undefined ? undefined : best(row.runs)
    const goal = `${backend}: cached browses ≥ ${RATIO_GOAL} × the bare server, p99 < ${P99_GOAL_MS} ms`
    if (figures === undefined || bareBest === undefined) {
      console.log(`  SKIPPED  ${goal}  (${row === undefined ? "not run" : "route not answering"})`)
      continue
    }
    const ratio = figures.perSecond / bareBest.perSecond
    const clean = row!.problems.length === 0 && row!.operatorCallsMeasured === 0 && row!.client.failures().count === 0
    const met = ratio >= RATIO_GOAL && figures.p99 < P99_GOAL_MS && clean
    console.log(`  ${(met ? "met" : "MISSED").padEnd(7)}  ${goal}  ${ratio.toFixed(2)} × (${figures.perSecond.toFixed(0)}/s against ` +
      `${bareBest.perSecond.toFixed(0)}/s), p99 ${figures.p99.toFixed(1)} ms${clean ? "" : "; answers differ from the baseline, failed or reached the operator"}`)
  }
}

// ---------------------------------------------------------------------------------------------------

progress("setup", `${CATALOG_SIZE} entries, ${PAGE_SIZE} a page from the fake operator${quick ? " (quick)" : ""}`)
try {
  const fake = await startFakeGraph({ library: catalog, libraryPageSize: PAGE_SIZE })
  onCleanup(fake.close)
  const withPostgres = flags["no-postgres"] !== true && await postgresReachable(PG_URL)
  const backends: ReadonlyArray<Backend> = [...(flags["no-sqlite"] === true ? [] : ["SQLite" as const]), ...(withPostgres ? ["PostgreSQL" as const] : [])]
  const rowOf = (contender: Contender): Row => {
    const client = makeClient(contender)
    onCleanup(async () => client.close())
    return { contender, client, runs: [], problems: [], bytes: [], operatorCallsMeasured: 0 }
  }
  const bare = rowOf(await startBare())
  const rows: Array<Row> = [bare], skipped: Array<string> = []
  for (const backend of backends) {
    const contender = await startLibrary(backend, fake.url, fake.libraryCalls)
    progress("setup", `${contender.name} on ${contender.url}, channel ${contender.channelId}`)
    const row = rowOf(contender)
    const before = fake.libraryCalls()
    const first = await row.client.getJson(pathOf(contender.channelId, 0))
    if (first.status !== 200) {
      skipped.push(`${contender.name}: GET ${PATH} answered ${first.status} ${JSON.stringify(first.body).slice(0, 200)}; not measured`)
      progress("setup", skipped.at(-1)!)
      continue
    }
    for (let i = 1; i < SHAPES.length; i++) await row.client.get(pathOf(contender.channelId, i))
    progress("setup", `${contender.name}: cache filled, ${fake.libraryCalls() - before} operator requests`)
    await compare(row, bare)
    if (row.problems.length > 0) progress("setup", `${contender.name}: ${row.problems.length} differences from the baseline (see the report)`)
    rows.push(row)
  }
  for (const row of rows) {
    progress(`warm-up, ${row.contender.name}`, `${WARM_UP} browses`)
    await burst(row.client, row.contender.channelId, WARM_UP, CONCURRENCY)
  }
  const [, ...ours] = rows
  const rounds = quick ? [[bare, ...ours]] : [[bare, ...ours], [bare, ...[...ours].reverse()]]
  for (const round of rounds) {
    for (const row of round) {
      const phase = row.contender.name
      const calls = row.contender.operatorCalls?.() ?? 0
      progress(phase, `${BURST} browses, ${CONCURRENCY} in flight`)
      const perSecond = await burst(row.client, row.contender.channelId, BURST, CONCURRENCY)
      progress(phase, `${perSecond.toFixed(0)} browses/s; ${SEQUENTIAL} one at a time`)
      const latency = await sequential(row.client, row.contender.channelId, SEQUENTIAL)
      row.runs.push({ perSecond, ...latency })
      row.operatorCallsMeasured += (row.contender.operatorCalls?.() ?? 0) - calls
      const failures = row.client.failures()
      progress(phase, `p50 ${latency.p50.toFixed(2)} ms, p99 ${latency.p99.toFixed(2)} ms${failures.count > 0 ? `; ${failures.count} failed so far, first: ${failures.first}` : ""}`)
    }
  }
  // Profiled apart from the measured runs, which the profiler would slow.
  for (const row of PROFILE_DIR === undefined ? [] : ours) {
    progress(`profile, ${row.contender.name}`, `${BURST} browses, ${CONCURRENCY} in flight`)
    await profiled(row.contender.name, () => burst(row.client, row.contender.channelId, BURST, CONCURRENCY))
  }
  printReport(rows, withPostgres, skipped)
} catch (error) {
  if (!cleaningUp()) console.error(error)
  process.exitCode = 1
} finally {
  await cleanUp()
}
console.log(`[done] in ${elapsedSeconds()} s`)
