/**
 * Attachments: how much memory the serving process grows by while a 50 MB file is uploaded through
 * `POST /api/v1/attachments/upload` and while one is fetched through `POST /api/v1/attachments/from-url`,
 * and how many 100 KB uploads a second the library takes against a bare `node:http` server that pipes
 * the same multipart bytes to a file.
 *
 * The server process, forked from this file with `--expose-gc`, serves every contender: the library
 * wired as the reference host wires it (SQLite file database, `makeFileBlobStore` in a temp dir,
 * `busboyMultipart`, the guarded client allowing 127.0.0.1/32 as `outbound`; Node's listener; no
 * workers; a tenant and its API key made as `admin bootstrap` does) and the bare server, which parses
 * nothing: it pipes each request body to a new file and answers a small JSON (the judged baseline);
 * on a second route it writes the body as the file blob store writes (temporary file flushed to disk,
 * its size read, renamed into place), to tell the disk's share from the library's; on a third it
 * fetches a URL with undici and pipes the answer to a file. This process is the client (undici) and
 * the from-url source (a `node:http` server streaming a `%PDF-1.4` head and filler with
 * backpressure), so neither the 50 MB upload's buffers nor the source's count in the measured heap;
 * the upload is generated lazily from one 256 KB chunk anyway.
 *
 * Memory: the server process's `heapUsed + arrayBuffers`, its baseline after two full collections,
 * then sampled every 20 ms during the transfer; peak growth over the baseline. The library's transfers
 * are measured twice: with no collection forced while sampling (garbage not yet collected counts) and
 * with a full collection before each sample (what is live; each takes about 30 ms, so the transfer
 * crawls); the bare server's with no collection forced, for what the runtime alone leaves uncollected.
 * Each reading has its goal line. Uploads of 100 KB: bursts of `BURST`, `CONCURRENCY` in flight over
 * undici keep-alive connections, the same client and body for every contender; outside `--quick` each
 * contender twice, in order then in reverse, keeping the better figures.
 *
 *   npm run bench:attachments -- [--quick] [--only transfers,uploads,email-memory]
 *
 * SQLite only: an upload writes one attachment row, so the database is not what is measured.
 * `--only` runs the named phases alone: `transfers` (the 50 MB transfers), `uploads` (the 100 KB
 * uploads), `email-memory` (bench/EmailMemory.ts: the reference host's RSS while eight received
 * emails of 39 MB arrive at once, on SQLite and on PostgreSQL when PG_URL, default
 * postgres://postgres@127.0.0.1:5432/test, answers).
 * `BENCH_CPU_PROF=dir` adds a library burst after the measured ones, profiled in the server process
 * (the server's time only), writes the profile there and prints where its time went (the forked
 * server process also writes a profile of its whole life when it exits, as `ChildProcess.ts` does).
 */
import { randomUUID } from "node:crypto"
import { createWriteStream, mkdirSync, mkdtempSync, rmSync } from "node:fs"
import { mkdir, rename, stat } from "node:fs/promises"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { availableParallelism, loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import { performance } from "node:perf_hooks"
import { Readable } from "node:stream"
import { pipeline } from "node:stream/promises"
import { parseArgs } from "node:util"
import { Effect } from "effect"
import { Pool, request as undiciRequest } from "undici"
import { makeGuardedHttp, parseOutboundAllow } from "../adapters/http/GuardedHttp.ts"
import { layerFromUrl } from "../adapters/kysely/KyselyStorage.ts"
import { busboyMultipart, makeFileBlobStore, nodeHmacSigner, serve } from "../adapters/node/index.ts"
import { make } from "../src/app/Omnichannel.ts"
import { Operator } from "../src/auth/Operator.ts"
import { forkChild } from "./ChildProcess.ts"
import { startCpuMeter } from "./CpuMeter.ts"
import { type EmailMemoryFigures, emailMemoryPhase, printEmailMemory } from "./EmailMemory.ts"
import { quantile, stamp } from "./Load.ts"
import { postgresReachable, startRun } from "./Run.ts"
import { type RunningProfile, startProfile } from "./Profile.ts"

const ROLE_VARIABLE = "BENCH_ATTACHMENTS_ROLE"
const MB = 1024 * 1024
/** The largest file the library accepts (`MAX_UPLOAD_BYTES`): exactly 50 MB. */
const BIG_FILE = 50 * MB
const SMALL_FILE = 100 * 1024
const SAMPLE_MS = 20
const MEMORY_GOAL_MB = 10
const RATIO_GOAL = 0.5
const CONCURRENCY = 16
const PROFILE_DIR = process.env.BENCH_CPU_PROF
const UPLOAD_PATH = "/api/v1/attachments/upload"
const FROM_URL_PATH = "/api/v1/attachments/from-url"
/** The bare server's route writing as the file blob store does. */
const DURABLE_PATH = "/durable-upload"
const PDF_HEAD = Buffer.from("%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n", "latin1")
const BOUNDARY = "----omni-bench-boundary"

/** The opening and closing of a multipart body of one `file` part. */
const multipartFrame = (filename: string, type: string) => ({
  opening: Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\nContent-Type: ${type}\r\n\r\n`),
  closing: Buffer.from(`\r\n--${BOUNDARY}--\r\n`),
  contentType: `multipart/form-data; boundary=${BOUNDARY}`
})

/** `size` bytes of a file: the PDF head, then `filler` again and again (the same buffer, never copied). */
async function* lazyFile(size: number, filler: Buffer): AsyncGenerator<Buffer> {
  yield PDF_HEAD
  for (let sent = PDF_HEAD.length; sent < size; sent += filler.length) yield filler.subarray(0, Math.min(filler.length, size - sent))
}

// ---------------------------------------------------------------------------------------------------
// The server process: the library and the bare server, memory samples and profiles on request.

/** What the server process is asked; each carries the `id` its reply echoes. */
type ServerRequest = { readonly id: number } & (
  | { readonly type: "start"; readonly root: string }
  /** Starts sampling, a full collection before each sample when `collect`. */
  | { readonly type: "memory-start"; readonly collect: boolean }
  | { readonly type: "memory-stop" }
  | { readonly type: "profile-start" }
  | { readonly type: "profile-stop"; readonly label: string }
  | { readonly type: "stop" }
)

/** What a transfer did to the server process's memory, in bytes. */
interface MemoryFigures {
  readonly baseline: number
  /** Highest `heapUsed + arrayBuffers` sampled, less the baseline, and its two parts at that sample. */
  readonly peakGrowth: number
  readonly heapAtPeak: number
  readonly arrayBuffersAtPeak: number
  readonly rssGrowth: number
  /** After the transfer and two full collections, less the baseline. */
  readonly retained: number
  readonly samples: number
  /** The longest time between two samples (a busy event loop delays them), ms. */
  readonly longestGapMs: number
  /** Time spent in the forced collections while sampling, ms. */
  readonly forcedGcMs: number
}

/** A request as sent: `forkChild` adds the `id`. */
type ServerAsk = ServerRequest extends infer R ? R extends unknown ? Omit<R, "id"> : never : never

type ServerReply = { readonly id: number } & (
  | { readonly type: "ready"; readonly libraryUrl: string; readonly bareUrl: string; readonly apiKey: string }
  | { readonly type: "ok" }
  | { readonly type: "memory"; readonly figures: MemoryFigures }
  | { readonly type: "profile"; readonly file: string; readonly summary: ReadonlyArray<string> }
  | { readonly type: "failed"; readonly message: string }
)

const serverProcess = () => {
  const reply = (message: ServerReply) => process.send?.(message)
  const stops: Array<() => Promise<void>> = []
  const collect = () => {
    globalThis.gc?.()
    globalThis.gc?.()
  }
  const measured = () => {
    const usage = process.memoryUsage()
    return { total: usage.heapUsed + usage.arrayBuffers, heap: usage.heapUsed, arrayBuffers: usage.arrayBuffers, rss: usage.rss }
  }
  let sampler: NodeJS.Timeout | undefined
  let memory: { baseline: ReturnType<typeof measured>; peak: ReturnType<typeof measured>; peakRss: number; samples: number; last: number; longestGap: number; gcMs: number } | undefined
  const sample = (withCollection: boolean) => {
    if (memory === undefined) return
    if (withCollection) {
      const before = performance.now()
      globalThis.gc?.()
      memory.gcMs += performance.now() - before
    }
    const now = performance.now()
    const current = measured()
    if (current.total > memory.peak.total) memory.peak = current
    memory.peakRss = Math.max(memory.peakRss, current.rss)
    memory.samples += 1
    memory.longestGap = Math.max(memory.longestGap, now - memory.last)
    memory.last = now
  }
  let profiler: RunningProfile | undefined

  const start = async (root: string) => {
    const dataDir = join(root, "library")
    const bareDir = join(root, "bare")
    mkdirSync(join(dataDir, "files"), { recursive: true })
    mkdirSync(bareDir, { recursive: true })
    const outbound = makeGuardedHttp({ allow: parseOutboundAllow("127.0.0.1/32") })
    const app = await make({
      storage: layerFromUrl(`file:${join(dataDir, "omnichannel.sqlite")}`),
      blobStore: makeFileBlobStore(join(dataDir, "files")),
      multipart: busboyMultipart,
      downloads: { secret: "bench-download-secret" },
      outbound,
      signer: nodeHmacSigner
    })
    stops.push(() => app.dispose().then(() => outbound.close()))
    const apiKey = await app.run(Effect.gen(function*() {
      const operator = yield* Operator
      return (yield* operator.bootstrap({ email: "bench@example.com", tenantName: "Attachments benchmark" })).api_key
    }))
    const library = await serve(app.handler, { port: 0, host: "127.0.0.1" })
    stops.push(() => library.close(2_000))

    // The baselines, parsing nothing: the request body, multipart and all, piped to a new file (the
    // judged one); the same written as the file blob store writes (a temporary file flushed to disk,
    // its size read, renamed into place); a source's body piped to a new file.
    const answer = (res: http.ServerResponse, body: Record<string, unknown>) => {
      const text = JSON.stringify(body)
      res.writeHead(201, { "content-type": "application/json", "content-length": Buffer.byteLength(text) }).end(text)
    }
    const bare = http.createServer((req, res) => {
      const id = randomUUID()
      const target = join(bareDir, id)
      const done = (work: Promise<Record<string, unknown>>) =>
        void work.then((body) => answer(res, { id, ...body }), (error: unknown) => void res.writeHead(500).end(String(error)))
      if (req.method === "POST" && req.url === UPLOAD_PATH) {
        const file = createWriteStream(target)
        return done(pipeline(req, file).then(() => ({ file_size: file.bytesWritten })))
      }
      if (req.method === "POST" && req.url === DURABLE_PATH) {
        return done((async () => {
          await mkdir(bareDir, { recursive: true })
          const temporary = join(bareDir, `.${id}.partial`)
          await pipeline(req, createWriteStream(temporary, { flags: "wx", flush: true }))
          const { size } = await stat(temporary)
          await rename(temporary, target)
          return { file_size: size }
        })())
      }
      if (req.method === "POST" && req.url === FROM_URL_PATH) {
        return done((async () => {
          const { url } = JSON.parse(Buffer.concat(await req.toArray()).toString()) as { url: string }
          const response = await undiciRequest(url)
          const file = createWriteStream(target)
          await pipeline(response.body, file)
          return { file_size: file.bytesWritten, content_type: response.headers["content-type"] }
        })())
      }
      res.writeHead(404).end()
    })
    await new Promise<void>((resolve) => bare.listen(0, "127.0.0.1", resolve))
    stops.push(() => new Promise<void>((resolve) => (bare.close(() => resolve()), bare.closeAllConnections())))
    return { libraryUrl: library.url, bareUrl: `http://127.0.0.1:${(bare.address() as AddressInfo).port}`, apiKey }
  }

  process.on("message", async (message: ServerRequest) => {
    try {
      switch (message.type) {
        case "start":
          return reply({ id: message.id, type: "ready", ...await start(message.root) })
        case "memory-start": {
          clearInterval(sampler)
          collect()
          const baseline = measured()
          memory = { baseline, peak: baseline, peakRss: baseline.rss, samples: 0, last: performance.now(), longestGap: 0, gcMs: 0 }
          sampler = setInterval(() => sample(message.collect), SAMPLE_MS)
          return reply({ id: message.id, type: "ok" })
        }
        case "memory-stop": {
          clearInterval(sampler)
          sample(false)
          const { baseline, peak, peakRss, samples, longestGap, gcMs } = memory!
          memory = undefined
          collect()
          const after = measured()
          return reply({
            id: message.id,
            type: "memory",
            figures: {
              baseline: baseline.total, peakGrowth: peak.total - baseline.total, heapAtPeak: peak.heap - baseline.heap,
              arrayBuffersAtPeak: peak.arrayBuffers - baseline.arrayBuffers, rssGrowth: peakRss - baseline.rss,
              retained: after.total - baseline.total, samples, longestGapMs: longestGap, forcedGcMs: gcMs
            }
          })
        }
        case "profile-start":
          profiler = await startProfile()
          return reply({ id: message.id, type: "ok" })
        case "profile-stop": {
          const { file, summary } = await profiler!.stop(PROFILE_DIR, "attachments", message.label, SUBSYSTEMS)
          profiler = undefined
          return reply({ id: message.id, type: "profile", file: file!, summary })
        }
        case "stop":
          clearInterval(sampler)
          for (const stop of stops.splice(0).reverse()) await stop().catch((error) => console.error("server process stop:", error))
          reply({ id: message.id, type: "ok" })
          return process.disconnect()
      }
    } catch (error) {
      reply({ id: message.id, type: "failed", message: error instanceof Error ? error.stack ?? error.message : String(error) })
    }
  })
  process.on("disconnect", () => setTimeout(() => process.exit(0), 100).unref())
}

// ---------------------------------------------------------------------------------------------------
// CPU profile of a burst (BENCH_CPU_PROF), summed by bench/Profile.ts, with these subsystems.

/** Where an upload's time goes: each sample counts for the first of these met from the running function outwards. */
const SUBSYSTEMS: ReadonlyArray<readonly [string, RegExp]> = [
  ["busboy (multipart parsing)", /@fastify\/busboy|BusboyMultipart/],
  ["SQLite and Kysely (API key lookup, insert)", /kysely|better-sqlite3|adapters\/kysely/],
  ["API key SHA-256 (Secret.ts, WebCrypto)", /Secret\.ts|webcrypto|internal\/crypto/],
  ["file I/O calls (blob store: mkdir, open, write, fsync, stat, rename)", /FileBlobStore|node:fs|internal\/fs/],
  ["content check (file-type)", /ContentCheck|file-type|token-types|strtok3/],
  ["web streams (toWeb, fromWeb, ReadableStream)", /webstreams/],
  ["Node streams", /internal\/streams/],
  ["HTTP and sockets", /_http_|node:net|internal\/net|stream_base_commons|undici/],
  ["Effect's runtime", /effect\/dist/],
  ["the library's own code (routes, handler, flows)", /\/(src|adapters)\//]
]

// ---------------------------------------------------------------------------------------------------
// This process: the client, the from-url source, the report.

const clientProcess = async () => {
  const { values: flags } = parseArgs({ options: { quick: { type: "boolean", default: false }, only: { type: "string" } } })
  const quick = flags.quick === true
  const PHASES = ["transfers", "uploads", "email-memory"] as const
  type Phase = (typeof PHASES)[number]
  const only = flags.only === undefined ? [...PHASES] : flags.only.split(",").map((phase) => phase.trim())
  const unknown = only.filter((phase) => !(PHASES as ReadonlyArray<string>).includes(phase))
  if (unknown.length > 0) throw new Error(`--only takes: ${PHASES.join(", ")}; got ${unknown.join(", ")}`)
  const runs = (phase: Phase) => only.includes(phase)
  const PG_URL = process.env.PG_URL ?? "postgres://postgres@127.0.0.1:5432/test"
  /** 50 MB transfers of each kind, for each way of sampling. */
  const BIG_REPEATS = quick ? 1 : 3
  const BURST = quick ? 800 : 3_000
  const WARM_UP = quick ? 200 : 500
  const HARD_LIMIT_MS = (quick ? 12 : 25) * 60_000

  const { loadAtStart, progress, onCleanup, release, cleanUp, cleaningUp, elapsedSeconds } = startRun(HARD_LIMIT_MS)
  const root = mkdtempSync(join(tmpdir(), "bench-attachments-"))
  onCleanup(async () => rmSync(root, { recursive: true, force: true }))

  // The server process, forked from this file; the role travels in the environment it inherits.
  process.env[ROLE_VARIABLE] = "server"
  const child = forkChild<ServerAsk, ServerReply>("./attachments.ts", ["--expose-gc"])
  delete process.env[ROLE_VARIABLE]
  onCleanup(child.kill)
  const ask = async <T extends ServerReply["type"]>(message: ServerAsk, type: T) => {
    const answer = await child.request(message)
    if (answer.type === "failed") throw new Error(`server process: ${answer.message}`)
    if (answer.type !== type) throw new Error(`server process answered ${answer.type} to ${message.type}`)
    return answer as Extract<ServerReply, { type: T }>
  }

  // The from-url source: `%PDF-1.4` and filler, written as the reader takes it.
  const sourceFiller = Buffer.alloc(256 * 1024, 0x20)
  const source = http.createServer((req, res) => {
    if (req.url !== "/big.pdf") return void res.writeHead(404).end()
    res.writeHead(200, { "content-type": "application/pdf", "content-length": BIG_FILE })
    void pipeline(lazyFile(BIG_FILE, sourceFiller), res).catch(() => undefined)
  })
  await new Promise<void>((resolve) => source.listen(0, "127.0.0.1", resolve))
  onCleanup(() => new Promise<void>((resolve) => (source.close(() => resolve()), source.closeAllConnections())))
  const sourceUrl = `http://127.0.0.1:${(source.address() as AddressInfo).port}/big.pdf`

  type Transfer = "upload" | "from-url"
  type Target = "library" | "bare"
  interface BigRun {
    readonly target: Target
    readonly transfer: Transfer
    readonly collect: boolean
    readonly figures: MemoryFigures
    readonly seconds: number
    readonly problem?: string
  }
  /**
   * Each round of 50 MB transfers: the library sampled both ways, the bare server with no forced GC
   * (what the runtime alone leaves uncollected; its live memory is a few buffers).
   */
  const BIG_TRANSFERS: ReadonlyArray<readonly [Target, Transfer, boolean]> = (["upload", "from-url"] as const).flatMap((transfer) => [
    ["library", transfer, false] as const,
    ["library", transfer, true] as const,
    ["bare", transfer, false] as const
  ])
  const uploadFrame = multipartFrame("big.pdf", "application/pdf")
  const uploadLength = uploadFrame.opening.length + BIG_FILE + uploadFrame.closing.length

  /** One 50 MB transfer to `target` while the server process samples its memory. */
  const bigTransfer = async (
    server: { libraryUrl: string; bareUrl: string; apiKey: string },
    target: Target,
    transfer: Transfer,
    collect: boolean
  ): Promise<BigRun> => {
    const authorization = `Bearer ${server.apiKey}`
    const base = target === "library" ? server.libraryUrl : server.bareUrl
    await ask({ type: "memory-start", collect }, "ok")
    const started = stamp()
    let answer: { statusCode: number; body: any }
    let seconds = 0
    let figures: MemoryFigures
    try {
      if (transfer === "upload") {
        const frame = uploadFrame
        const filler = Buffer.alloc(256 * 1024, 0x41)
        const body = async function*() {
          yield frame.opening
          yield* lazyFile(BIG_FILE, filler)
          yield frame.closing
        }
        const response = await undiciRequest(`${base}${UPLOAD_PATH}`, {
          method: "POST",
          headers: { authorization, "content-type": frame.contentType, "content-length": String(uploadLength) },
          body: Readable.from(body(), { objectMode: false })
        })
        answer = { statusCode: response.statusCode, body: await response.body.json() }
      } else {
        const response = await undiciRequest(`${base}${FROM_URL_PATH}`, {
          method: "POST",
          headers: { authorization, "content-type": "application/json" },
          body: JSON.stringify({ url: sourceUrl, filename: "fetched.pdf" })
        })
        answer = { statusCode: response.statusCode, body: await response.body.json() }
      }
    } finally {
      seconds = (stamp() - started) / 1000
      figures = (await ask({ type: "memory-stop" }, "memory")).figures
    }
    // The bare server keeps the whole multipart body of an upload.
    const size = target === "bare" && transfer === "upload" ? uploadLength : BIG_FILE
    const fine = answer.statusCode === 201 && answer.body?.file_size === size && (target === "bare" && transfer === "upload" || answer.body?.content_type === "application/pdf")
    return { target, transfer, collect, figures, seconds, ...(fine ? {} : { problem: `answered ${answer.statusCode} ${JSON.stringify(answer.body).slice(0, 200)}` }) }
  }

  /** A contender of the 100 KB uploads. */
  interface Contender {
    readonly name: string
    readonly url: string
    readonly path: string
    readonly headers: Readonly<Record<string, string>>
    /** The `file_size` its answer gives: the file's (library) or the whole body's (bare). */
    readonly answersSize: number
  }
  interface BurstFigures { readonly perSecond: number; readonly p50: number; readonly p99: number; readonly serverCpuUs: number | undefined; readonly clientCpuUs: number | undefined }
  interface Row { readonly contender: Contender; readonly pool: Pool; readonly runs: Array<BurstFigures>; failed: number; firstFailure?: string }

  const small = (() => {
    const frame = multipartFrame("document.pdf", "application/pdf")
    const file = Buffer.alloc(SMALL_FILE, 0x41)
    PDF_HEAD.copy(file)
    return { body: Buffer.concat([frame.opening, file, frame.closing]), contentType: frame.contentType }
  })()

  const rowOf = (contender: Contender): Row => {
    const pool = new Pool(contender.url, { connections: CONCURRENCY, pipelining: 1 })
    onCleanup(async () => void pool.destroy())
    return { contender, pool, runs: [], failed: 0 }
  }

  /** `count` uploads, `CONCURRENCY` in flight; the rate from the first request to the last answer, latency per upload. */
  const burst = async (row: Row, count: number) => {
    const latencies: Array<number> = []
    const headers = { ...row.contender.headers, "content-type": small.contentType }
    let next = 0
    const cpu = startCpuMeter({ server: [child.pid], client: [process.pid] })
    const started = stamp()
    const lane = async () => {
      for (let i = next++; i < count; i = next++) {
        const at = stamp()
        try {
          const response = await row.pool.request({ method: "POST", path: row.contender.path, headers, body: small.body })
          const text = await response.body.text()
          if (response.statusCode !== 201 || !text.includes(`"file_size":${row.contender.answersSize}`)) {
            row.failed += 1
            row.firstFailure ??= `${response.statusCode} ${text.slice(0, 200)}`
          }
        } catch (error) {
          row.failed += 1
          row.firstFailure ??= error instanceof Error ? error.message : String(error)
        }
        latencies.push(stamp() - at)
      }
    }
    await Promise.all(Array.from({ length: CONCURRENCY }, lane))
    const perSecond = count / ((stamp() - started) / 1000)
    const perUpload = cpu.perEvent(count)
    latencies.sort((a, b) => a - b)
    return { perSecond, p50: quantile(latencies, 0.5), p99: quantile(latencies, 0.99), serverCpuUs: perUpload?.server, clientCpuUs: perUpload?.client }
  }

  const mb = (bytes: number) => (bytes / MB).toFixed(1)
  const fmt = (value: number | undefined, digits = 1) => (value === undefined || Number.isNaN(value) ? "—" : value.toFixed(digits))
  const best = (runs: ReadonlyArray<BurstFigures>): BurstFigures | undefined => runs.length === 0 ? undefined : {
    perSecond: Math.max(...runs.map((run) => run.perSecond)),
    p50: Math.min(...runs.map((run) => run.p50)),
    p99: Math.min(...runs.map((run) => run.p99)),
    serverCpuUs: Math.min(...runs.map((run) => run.serverCpuUs ?? Number.NaN)),
    clientCpuUs: Math.min(...runs.map((run) => run.clientCpuUs ?? Number.NaN))
  }

  const printReport = (bigRuns: ReadonlyArray<BigRun>, rows: ReadonlyArray<Row>, profile: { file: string; summary: ReadonlyArray<string> } | undefined) => {
    console.log(`\nAttachments benchmark${quick ? " (quick)" : ""}`)
    console.log(`node ${process.version}, ${availableParallelism()} CPUs, load average ${loadAtStart} at start and ${loadavg()[0]!.toFixed(1)} at end (shared machine)`)
    console.log("library on SQLite only (an upload writes one attachment row; PostgreSQL not measured); server process (library and bare server) " +
      "forked with --expose-gc; client and from-url source in this process")
    console.log(`\nmemory of the server process, heapUsed + arrayBuffers, during one ${BIG_FILE / MB} MB file (${BIG_FILE} bytes, %PDF-1.4 head and filler); ` +
      `baseline after full collections; sampled every ${SAMPLE_MS} ms, with no forced GC or each after a full GC (which slows the transfer); ` +
      "growth over the baseline in MB; the bare server pipes the upload's body, or the source's answer fetched with undici, to a file")
    if (bigRuns.length === 0) console.log("  (not run)")
    const header = `${"server".padEnd(7)}  ${"transfer".padEnd(9)}  ${"sampling".padEnd(22)}  ${"peak growth".padStart(11)}  ${"heap / arrayBuffers at peak".padStart(27)}  ` +
      `${"rss growth".padStart(10)}  ${"retained".padStart(8)}  ${"samples (longest gap)".padStart(21)}  ${"MB/s".padStart(5)}`
    console.log(header)
    console.log("-".repeat(header.length))
    for (const run of bigRuns) {
      const f = run.figures
      console.log(`${run.target.padEnd(7)}  ${run.transfer.padEnd(9)}  ${(run.collect ? "full GC before each" : "no forced GC").padEnd(22)}  ${mb(f.peakGrowth).padStart(11)}  ` +
        `${`${mb(f.heapAtPeak)} / ${mb(f.arrayBuffersAtPeak)}`.padStart(27)}  ${mb(f.rssGrowth).padStart(10)}  ${mb(f.retained).padStart(8)}  ` +
        `${`${f.samples} (${f.longestGapMs.toFixed(0)} ms)`.padStart(21)}  ${(BIG_FILE / MB / run.seconds).toFixed(0).padStart(5)}` +
        (run.problem === undefined ? "" : `  FAILED: ${run.problem}`))
    }
    const [bare] = rows
    const bareBest = bare === undefined ? undefined : best(bare.runs)
    console.log(`\n${SMALL_FILE / 1024} KB uploads (multipart body ${small.body.length} bytes, %PDF-1.4 head), bursts of ${BURST} with ${CONCURRENCY} in flight ` +
      `(undici keep-alive, the same client and body for all)${quick ? "" : "; each contender twice, in order then in reverse, keeping the better figures"}; ` +
      "latency per upload within the burst; CPU per upload read from /proc (server: the server process, its fs threads included)")
    const header2 = `${"server".padEnd(38)}  ${"uploads/s".padStart(9)}  ${"× bare".padStart(6)}  ${"runs".padStart(11)}  ${"p50 ms".padStart(6)}  ${"p99 ms".padStart(6)}  ` +
      `${"server CPU µs".padStart(13)}  ${"client CPU µs".padStart(13)}  failed`
    console.log(rows.length === 0 ? "  (not run)" : header2)
    console.log("-".repeat(header2.length))
    for (const row of rows) {
      const figures = best(row.runs)
      const ratio = figures === undefined || bareBest === undefined ? "—" : (figures.perSecond / bareBest.perSecond).toFixed(2)
      console.log(`${row.contender.name.padEnd(38)}  ${fmt(figures?.perSecond, 0).padStart(9)}  ${ratio.padStart(6)}  ` +
        `${row.runs.map((run) => run.perSecond.toFixed(0)).join(" / ").padStart(11)}  ${fmt(figures?.p50).padStart(6)}  ${fmt(figures?.p99).padStart(6)}  ` +
        `${fmt(figures?.serverCpuUs, 0).padStart(13)}  ${fmt(figures?.clientCpuUs, 0).padStart(13)}  ${row.failed}${row.firstFailure === undefined ? "" : ` (first: ${row.firstFailure})`}`)
    }
    if (profile !== undefined) console.log(`\nCPU profile of a library burst in the server process (${profile.file}):\n  ${profile.summary.join("\n  ")}`)

    console.log("\ngoals")
    for (const transfer of ["upload", "from-url"] as const) {
      const raw = bigRuns.filter((run) => run.target === "library" && run.transfer === transfer && !run.collect)
      const live = bigRuns.filter((run) => run.target === "library" && run.transfer === transfer && run.collect)
      const bareRaw = bigRuns.filter((run) => run.target === "bare" && run.transfer === transfer && !run.collect)
      const goal = `${transfer === "upload" ? `upload of a 50 MB file (${UPLOAD_PATH})` : `fetch of a 50 MB file from a local source (${FROM_URL_PATH})`}: heap growth < ${MEMORY_GOAL_MB} MB`
      if (raw.length === 0) {
        console.log(`  SKIPPED  ${goal}  (not run)`)
        continue
      }
      const failed = [...raw, ...live].some((run) => run.problem !== undefined) ? "; a transfer failed" : ""
      const worstOf = (runs: ReadonlyArray<BigRun>) => Math.max(...runs.map((run) => run.figures.peakGrowth))
      const verdict = (runs: ReadonlyArray<BigRun>) => (worstOf(runs) < MEMORY_GOAL_MB * MB && failed === "" ? "met" : "MISSED").padEnd(7)
      const worst = (runs: ReadonlyArray<BigRun>) => `${mb(worstOf(runs))} MB${runs.length > 1 ? ` (worst of ${runs.length})` : ""}`
      console.log(`  ${verdict(raw)}  ${goal}, as sampled (no forced GC)  ${worst(raw)}; the bare server ${worst(bareRaw)}${failed}`)
      console.log(`  ${verdict(live)}  ${goal}, live (a full GC before each sample)  ${worst(live)}${failed}`)
    }
    const library = rows.find((row) => row.contender.name.startsWith("library"))
    const libraryBest = library === undefined ? undefined : best(library.runs)
    const goal = `100 KB uploads ≥ ${RATIO_GOAL} × the bare server`
    if (libraryBest === undefined || bareBest === undefined) console.log(`  SKIPPED  ${goal}  (not run)`)
    else {
      const ratio = libraryBest.perSecond / bareBest.perSecond
      const clean = rows.every((row) => row.failed === 0)
      console.log(`  ${(ratio >= RATIO_GOAL && clean ? "met" : "MISSED").padEnd(7)}  ${goal}  ${ratio.toFixed(2)} × (${libraryBest.perSecond.toFixed(0)}/s against ` +
        `${bareBest.perSecond.toFixed(0)}/s), p99 ${libraryBest.p99.toFixed(1)} ms against ${bareBest.p99.toFixed(1)} ms${clean ? "" : "; some uploads failed"}`)
    }
  }

  progress("setup", `server process ${child.pid}, files in ${root}${quick ? " (quick)" : ""}; phases: ${only.join(", ")}`)
  try {
    const server = await ask({ type: "start", root }, "ready")
    progress("setup", `library on ${server.libraryUrl} (SQLite), bare server on ${server.bareUrl}, source on ${sourceUrl}`)

    const bigRuns: Array<BigRun> = []
    for (let round = 0; round < (runs("transfers") ? BIG_REPEATS : 0); round++) {
      for (const [target, transfer, collect] of BIG_TRANSFERS) {
        const phase = `${transfer} 50 MB, ${target}`
        progress(phase, `${collect ? "full GC before each sample" : "no forced GC"}${BIG_REPEATS > 1 ? `, ${round + 1} of ${BIG_REPEATS}` : ""}`)
        const run = await bigTransfer(server, target, transfer, collect)
        bigRuns.push(run)
        progress(phase, `peak growth ${mb(run.figures.peakGrowth)} MB, retained ${mb(run.figures.retained)} MB, ${run.seconds.toFixed(2)} s, ` +
          `${run.figures.samples} samples${collect ? `, forced GC ${(run.figures.forcedGcMs / Math.max(1, run.figures.samples - 1)).toFixed(1)} ms each` : ""}` +
          (run.problem === undefined ? "" : `; FAILED: ${run.problem}`))
      }
    }

    const bare = rowOf({ name: "bare node:http, body piped to a file", url: server.bareUrl, path: UPLOAD_PATH, headers: {}, answersSize: small.body.length })
    const durable = rowOf({
      name: "bare, written as the blob store does",
      url: server.bareUrl,
      path: DURABLE_PATH,
      headers: {},
      answersSize: small.body.length
    })
    const library = rowOf({
      name: "library, SQLite",
      url: server.libraryUrl,
      path: UPLOAD_PATH,
      headers: { authorization: `Bearer ${server.apiKey}` },
      answersSize: SMALL_FILE
    })
    const rows = runs("uploads") ? [bare, durable, library] : []
    for (const row of rows) {
      progress(`warm-up, ${row.contender.name}`, `${WARM_UP} uploads`)
      await burst(row, WARM_UP)
    }
    for (const row of quick ? rows : [...rows, ...[...rows].reverse()]) {
      progress(row.contender.name, `${BURST} uploads, ${CONCURRENCY} in flight`)
      const figures = await burst(row, BURST)
      row.runs.push(figures)
      progress(row.contender.name, `${figures.perSecond.toFixed(0)} uploads/s, p50 ${figures.p50.toFixed(1)} ms, p99 ${figures.p99.toFixed(1)} ms` +
        (row.failed > 0 ? `; ${row.failed} failed so far, first: ${row.firstFailure}` : ""))
    }

    let profile: { file: string; summary: ReadonlyArray<string> } | undefined
    if (PROFILE_DIR !== undefined && runs("uploads")) {
      progress("profile, library", `${BURST} uploads, ${CONCURRENCY} in flight, profiled in the server process`)
      await ask({ type: "profile-start" }, "ok")
      await burst({ ...library, runs: [] }, BURST)
      profile = await ask({ type: "profile-stop", label: "library-upload" }, "profile")
    }
    await ask({ type: "stop" }, "ok")
    let emails: ReadonlyArray<EmailMemoryFigures> = []
    const postgresUrl = runs("email-memory") && await postgresReachable(PG_URL) ? PG_URL : undefined
    if (runs("email-memory")) {
      if (postgresUrl === undefined) progress("email memory", `no PostgreSQL at ${PG_URL}: SQLite only`)
      emails = await emailMemoryPhase({ quick, root, progress, onCleanup, release, postgresUrl })
    }
    if (runs("transfers") || runs("uploads")) printReport(bigRuns, rows, profile)
    if (runs("email-memory")) {
      if (!runs("transfers") && !runs("uploads")) {
        console.log(`\nAttachments benchmark${quick ? " (quick)" : ""}, email memory only`)
        console.log(`node ${process.version}, ${availableParallelism()} CPUs, load average ${loadAtStart} at start and ${loadavg()[0]!.toFixed(1)} at end (shared machine)`)
      }
      printEmailMemory(emails, postgresUrl)
    }
  } catch (error) {
    if (!cleaningUp()) console.error(error)
    process.exitCode = 1
  } finally {
    await cleanUp()
  }
  console.log(`[done] in ${elapsedSeconds()} s`)
}


if (process.env[ROLE_VARIABLE] === "server") serverProcess()
else await clientProcess()
