/**
 * AI file summaries benchmark (issue 18, "Proof"): how many summaries a second the embedded
 * summarizer makes, and how much memory it takes, for a 10-page PDF and a 2-megapixel image; and how
 * fast `GET /api/v1/attachments/{id}/summary` answers stored summaries under a concurrent load. The
 * issue sets no numeric goal: the figures are printed, nothing is judged.
 *
 * Embedded summaries. Each run is a fresh child process forked from this file with `--expose-gc`, so
 * its peaks belong to it alone: it loads what it needs, collects twice, takes its baseline, then
 * summarizes the same file N times one after another (the first one, which starts pdf.js or the OCR
 * worker, timed apart; the rate is over the N that follow). Peaks are over the whole run, the first
 * summary included. RSS is the whole process (tesseract.js's worker thread and its WebAssembly memory
 * included), sampled every 10 ms by a thread of its own, started before the baseline (pdf.js reads a
 * whole PDF without giving the main thread's timers a turn); "max RSS" is the kernel's high-water mark of the process's life
 * (`process.resourceUsage().maxRSS`), which no sampling can miss. Heap is the main thread's V8 heap
 * (`heapUsed`), sampled every 10 ms and after each summary, and read before every collection
 * (`v8.GCProfiler`), where it is highest. CPU per summary is the process's, every thread included.
 * - PDF: a 10-page report written with the fixture PDF writer (`writePdf`, full pages of varied
 *   business prose with dates, amounts, names, emails and references), through
 *   `makeEmbeddedSummarizer().summarize` (pdf.js text of the pages, sentence ranking, key facts).
 *   Baseline in the same run: unpdf's own `extractText` of the same bytes (pdf.js with unpdf's
 *   defaults, every page, merged), the bare reading our code adds ranking and facts to.
 * - Image: `test/fixtures/summaries/photo-2mp.jpg` (1728 × 1152, words drawn on a gradient), through
 *   the embedded summarizer (format, size and EXIF facts, then OCR). Baseline: a bare tesseract.js
 *   worker with the same installed English data and engine (`createWorker("eng", LSTM_ONLY)`),
 *   `recognize` of the same bytes.
 * Full runs make every run twice (in order, then in reverse), each in its own process.
 *
 * GET under load. A server process forked from this file serves the library wired as the reference
 * host wires it (storage from the URL, files on disk, the host's summarizer choice, which is the
 * embedded one; Node's listener; no workers, no request log) on SQLite, and on PostgreSQL when PG_URL
 * is set (a database of its own, dropped at the end), plus the baseline. Set-up, not timed: a tenant
 * made as `admin bootstrap` does, AI features on and credits granted (`tenant set-ai`, `credits
 * grant`), then M inbound attachment records (chat-app media, half the PDF and half the image; not on
 * messages, which the GET does not read), two of them summarized for real by
 * `POST /api/v1/attachments/{id}/summary` (201, charged), the others given a copy of their kind's
 * summary through the `SummaryStore` (pending, then settled `ok`; the POST's request limits of 30 a
 * minute would make seeding them by POST take minutes). The baseline is a bare `node:http` server in
 * the same process that looks the id up in a `Map` and JSON-encodes the same summary object per
 * request: an answer of the same size. The client (this process, undici keep-alive, 16 in flight, as
 * the other benches') sends the same shuffled sequence of ids to each contender: a warm-up, then a
 * burst; requests per second from the first request to the last answer, latency of each request
 * within the burst, the server process's CPU per request from /proc. Every answer must be a 200 with
 * an `ok` summary. Full runs measure each contender twice (in order, then in reverse) and keep the
 * better figures.
 *
 *   npm run bench:summaries -- [--quick] [--only embedded|get] [--no-postgres]
 *
 * Full runs: 40 PDF and 10 image summaries per run after the first, 2,000 attachments per database,
 * bursts of 10,000 GETs after 2,000; `--quick`: 8 and 2 summaries, 400 attachments, bursts of 2,000
 * after 400, everything once. `--only` runs one half. PostgreSQL only when PG_URL is set and answers.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { availableParallelism, loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import { performance } from "node:perf_hooks"
import { GCProfiler } from "node:v8"
import { Worker } from "node:worker_threads"
import { parseArgs } from "node:util"
import type { Pool } from "undici"
import type { SummaryDraft } from "../src/ports/Summarizer.ts"
import type { AttachmentRecord } from "../src/ports/AttachmentStore.ts"
import type { SummaryRecord } from "../src/ports/SummaryStore.ts"
import { fixturePath, type PdfPage, writePdf } from "../test/support/SummaryFixtures.ts"
import { forkChild } from "./ChildProcess.ts"
import { startCpuMeter } from "./CpuMeter.ts"
import { quantile, stamp } from "./Load.ts"

// Only Node's modules and light helpers are imported statically: each role imports what it uses
// (below), so a summarizing child holds the summarizer or the bare library it measures, nothing more.

const ROLE_VARIABLE = "BENCH_SUMMARIES_ROLE"
const MB = 1024 * 1024
const SAMPLE_MS = 10
const CONCURRENCY = 16
const IMAGE_FILE = "photo-2mp.jpg"
/** Words drawn on `photo-2mp.jpg` (see the fixtures' README): how many the OCR found is printed. */
const IMAGE_WORDS = ["WAREHOUSE", "DOCK", "DELIVERY", "NOTE", "4821", "ACME", "WIDGETS"] as const
const SUMMARY_PATH = (id: string) => `/api/v1/attachments/${id}/summary`

// ---------------------------------------------------------------------------------------------------
// The 10-page PDF: full pages of a quarterly report, varied sentences, facts on every page.

const PEOPLE = ["Laura Chen", "Jonas Weber", "Maria Schmidt", "Peter Jansen", "Aisha Khan", "Tomas Novak", "Elena Rossi", "David Okafor"]
const CUSTOMERS = ["Contoso Ltd", "Northwind Traders", "Fabrikam Inc", "Tailspin Toys", "Litware Inc", "Adventure Works", "Wide World Importers"]
const CITIES = ["Rotterdam", "Hamburg", "Lyon", "Gdansk", "Porto", "Antwerp", "Milan"]
const MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"]

/** Page `n` (1-based) of the report: a heading and seven paragraphs, about 2,500 characters. */
const reportPage = (n: number): PdfPage => {
  const pick = <T>(list: ReadonlyArray<T>, k: number): T => list[(n * 7 + k * 3) % list.length]!
  const person = (k: number) => pick(PEOPLE, k)
  const customer = (k: number) => pick(CUSTOMERS, k)
  const date = (k: number) => `${1 + (n * 3 + k * 5) % 27} ${pick(MONTHS, k)} 2026`
  const amount = (k: number) => `EUR ${(12_000 + n * 1_375 + k * 610).toLocaleString("en-US")}.${String((n * 13 + k * 7) % 100).padStart(2, "0")}`
  return [
    `Section ${n}: ${["Summary of the quarter", "Customer accounts", "Deliveries and logistics", "Support operations", "Finance", "Contracts", "Product quality", "Staffing", "Risks", "Outlook"][n - 1]}.`,
    `This section of the quarterly operations report covers the period ending on ${date(0)}. It was prepared by ${person(0)} with figures supplied by the regional teams in ${pick(CITIES, 0)} and ${pick(CITIES, 1)}, and it was reviewed by ${person(1)} before publication.`,
    `Revenue from ${customer(0)} reached ${amount(0)} against a plan of ${amount(1)}, mainly because order ORD-${4_200 + n * 17} was delivered two weeks earlier than agreed. ${customer(1)} renewed its framework contract CT-${2026}-${String(n * 11).padStart(3, "0")} for another two years on ${date(1)}, at a discount of ${3 + n % 5}% on the list price.`,
    `The support team answered ${900 + n * 47} customer requests in the period, with a median first response time of ${8 + n % 6} minutes and ${97 - n % 4}% of the cases closed within two working days. Escalations rose slightly after the release on ${date(2)}; ${person(2)} reviewed every escalated case and wrote to the customers concerned.`,
    `Shipments to ${pick(CITIES, 2)} were handled by Blue Harbour Logistics under tracking references TRK-${558_200 + n * 31} to TRK-${558_260 + n * 31}. Freight costs came to ${amount(2)}, which is within the budget approved on ${date(3)}. No shipment was delayed by more than one day, and no goods were reported damaged.`,
    `Open invoices of ${customer(2)} amount to ${amount(3)}; invoice INV-2026-${String(40 + n).padStart(4, "0")} is overdue and a reminder was sent to accounts@${customer(2).toLowerCase().replace(/[^a-z]+/g, "")}.example on ${date(4)}. Questions about the figures in this section go to ${person(3).toLowerCase().replace(" ", ".")}@omnichannel.example.`,
    `The team recommends keeping the current stock levels for the next quarter, reviewing the service agreement with ${customer(3)} before ${date(5)}, and hiring ${1 + n % 3} additional support agents for the evening shift. The budget request for this, ${amount(4)} in total, will be presented to the board by ${person(4)}.`,
    `Next review: ${date(6)}. Reference of this section: QR-2026-Q${1 + n % 4}-${String(n).padStart(2, "0")}.`
  ]
}

/** The benchmark's PDF: ten full pages. */
const benchmarkPdf = (): Uint8Array =>
  writePdf(Array.from({ length: 10 }, (_, i) => reportPage(i + 1)), "Quarterly operations report")

// ---------------------------------------------------------------------------------------------------
// A summarizing child: one run (one subject, one mode), then it exits.

type Subject = "pdf" | "image"
type Mode = "embedded" | "bare"

/** What one run of summaries came to; bytes and milliseconds. */
interface RunFigures {
  readonly subject: Subject
  readonly mode: Mode
  readonly count: number
  readonly firstMs: number
  /** The N summaries after the first: their time in all, and each one's. */
  readonly totalMs: number
  readonly eachMs: ReadonlyArray<number>
  /** CPU of the whole process (every thread) per summary of the N. */
  readonly cpuMsEach: number
  readonly baselineRss: number
  readonly baselineHeap: number
  readonly peakRss: number
  readonly peakHeap: number
  /** The kernel's high-water mark of the process's resident set. */
  readonly maxRss: number
  /** RSS samples taken by the sampling thread, and the longest time between two. */
  readonly rssSamples: number
  readonly longestGapMs: number
  /** Heap samples of the main thread, and the collections whose heap before them was read. */
  readonly heapSamples: number
  readonly collections: number
  /** What the last summary held, to show it did its work. */
  readonly check: string
}

type SummarizeRequest = { readonly id: number } & (
  | { readonly type: "run"; readonly subject: Subject; readonly mode: Mode; readonly file: string; readonly count: number }
)
type SummarizeAsk = Omit<SummarizeRequest, "id">
type SummarizeReply = { readonly id: number } & (
  | { readonly type: "done"; readonly figures: RunFigures }
  | { readonly type: "failed"; readonly message: string }
)

/**
 * The RSS sampling thread: every `everyMs`, the process's resident set; in the shared buffer, the
 * highest seen, the number of samples and the longest time between two (ms).
 */
const RSS_SAMPLER = `
const { workerData } = require("node:worker_threads")
const figures = new Float64Array(workerData.buffer)
let last = performance.now()
setInterval(() => {
  const now = performance.now()
  figures[0] = Math.max(figures[0], process.memoryUsage.rss())
  figures[1] += 1
  if (figures[1] > 1) figures[2] = Math.max(figures[2], now - last)
  last = now
}, workerData.everyMs)
`

const wordsFound = (text: string) => IMAGE_WORDS.filter((word) => text.toUpperCase().includes(word)).length

/** One summary of the run's file, and what it held (for the check). */
type SummarizeOnce = () => Promise<string>

/**
 * Imports what a run uses (before the baseline is taken) and answers how to start it: starting (a
 * summarizer, or a tesseract.js worker) belongs to the first, cold summary.
 */
const prepareRun = async (subject: Subject, mode: Mode, bytes: Uint8Array): Promise<() => Promise<{ once: SummarizeOnce; close: () => Promise<void> }>> => {
  if (mode === "embedded") {
    const { Effect } = await import("effect")
    const { makeEmbeddedSummarizer } = await import("../adapters/summarizer/EmbeddedSummarizer.ts")
    const input = subject === "pdf"
      ? { kind: "pdf" as const, contentType: "application/pdf", filename: "report.pdf", bytes, maxPages: 10 }
      : { kind: "image" as const, contentType: "image/jpeg", filename: IMAGE_FILE, bytes, maxPages: 10 }
    const describe = (draft: SummaryDraft) => {
      const section = (key: string) => draft.sections.find((s) => s.key === key)?.text ?? ""
      return subject === "pdf"
        ? `pages ${draft.pagesRead}/${draft.pagesTotal}, summary ${section("summary").length} chars, key facts ${section("key_facts").split("\n").length} lines`
        : `OCR found ${wordsFound(section("text"))}/${IMAGE_WORDS.length} words; ${section("description").slice(0, 60)}`
    }
    return async () => {
      const summarizer = makeEmbeddedSummarizer()
      return { once: async () => describe(await Effect.runPromise(summarizer.summarize(input))), close: summarizer.close }
    }
  }
  if (subject === "pdf") {
    const { extractText } = await import("unpdf")
    return async () => ({
      // pdf.js may detach the buffer it is given: a copy each time, as the embedded reader makes.
      once: async () => {
        const { totalPages, text } = await extractText(new Uint8Array(bytes), { mergePages: true })
        return `pages ${totalPages}, ${text.length} chars of text`
      },
      close: async () => {}
    })
  }
  const { default: Tesseract } = await import("tesseract.js")
  const { installedEnglishData } = await import("../adapters/summarizer/Ocr.ts")
  return async () => {
    // The same data and engine as the embedded OCR (Ocr.ts), with tesseract.js's defaults otherwise.
    const worker = await Tesseract.createWorker("eng", Tesseract.OEM.LSTM_ONLY, { langPath: installedEnglishData(), gzip: true, cacheMethod: "none" })
    return {
      once: async () => `OCR found ${wordsFound((await worker.recognize(Buffer.from(bytes))).data.text)}/${IMAGE_WORDS.length} words`,
      close: async () => {
        await worker.terminate()
      }
    }
  }
}

const summarizeProcess = () => {
  const reply = (message: SummarizeReply) => process.send?.(message)
  process.on("message", async (message: SummarizeRequest) => {
    try {
      const bytes = new Uint8Array(readFileSync(message.file))
      const start = await prepareRun(message.subject, message.mode, bytes)
      // RSS sampled by a thread of its own, which a busy main thread does not hold up (pdf.js reads a
      // whole PDF without giving timers a turn); the main thread's heap sampled between summaries and
      // by a timer, and read before every collection (the heap is highest just before one).
      const rssFigures = new Float64Array(new SharedArrayBuffer(3 * Float64Array.BYTES_PER_ELEMENT))
      const rssSampler = new Worker(RSS_SAMPLER, { eval: true, workerData: { buffer: rssFigures.buffer, everyMs: SAMPLE_MS } })
      await new Promise<void>((resolve, reject) => (rssSampler.once("online", resolve), rssSampler.once("error", reject)))
      globalThis.gc?.()
      globalThis.gc?.()
      const baseline = process.memoryUsage()
      let peakHeap = baseline.heapUsed, heapSamples = 0
      const sample = () => {
        peakHeap = Math.max(peakHeap, process.memoryUsage().heapUsed)
        heapSamples += 1
      }
      const sampler = setInterval(sample, SAMPLE_MS)
      const gcProfiler = new GCProfiler()
      gcProfiler.start()
      // Everything from here counts: the summarizer's or the library's start too.
      let started = performance.now()
      const { once, close } = await start()
      let check = await once()
      const firstMs = performance.now() - started
      const eachMs: Array<number> = []
      const cpuBefore = process.cpuUsage()
      started = performance.now()
      for (let i = 0; i < message.count; i++) {
        const at = performance.now()
        check = await once()
        eachMs.push(performance.now() - at)
        sample()
      }
      const totalMs = performance.now() - started
      const cpu = process.cpuUsage(cpuBefore)
      clearInterval(sampler)
      sample()
      const collections = gcProfiler.stop()?.statistics ?? []
      for (const gc of collections) peakHeap = Math.max(peakHeap, gc.beforeGC.heapStatistics.usedHeapSize)
      await rssSampler.terminate()
      const [peakRss, rssSamples, longestGap] = [Math.max(baseline.rss, rssFigures[0]!), rssFigures[1]!, rssFigures[2]!]
      await close()
      reply({
        id: message.id,
        type: "done",
        figures: {
          subject: message.subject, mode: message.mode, count: message.count, firstMs, totalMs, eachMs,
          cpuMsEach: (cpu.user + cpu.system) / 1000 / Math.max(1, message.count),
          baselineRss: baseline.rss, baselineHeap: baseline.heapUsed, peakRss, peakHeap,
          maxRss: process.resourceUsage().maxRSS * 1024, rssSamples, longestGapMs: longestGap, heapSamples,
          collections: collections.length, check
        }
      })
    } catch (error) {
      reply({ id: message.id, type: "failed", message: error instanceof Error ? error.stack ?? error.message : String(error) })
    }
    process.disconnect()
  })
  process.on("disconnect", () => setTimeout(() => process.exit(0), 100).unref())
}

// ---------------------------------------------------------------------------------------------------
// The server process: the library on each database, the bare baseline.

interface BackendSpec {
  readonly name: string
  readonly databaseUrl: string
}
/** A library contender as set up: where it listens, its key, its attachments (ids in order, kinds alternating PDF, image). */
interface LibraryReady {
  readonly name: string
  readonly url: string
  readonly apiKey: string
  readonly ids: ReadonlyArray<string>
  /** What the two real POSTs answered (status, credits charged), and the bytes of a GET of each kind. */
  readonly posts: ReadonlyArray<string>
  readonly answerBytes: { readonly pdf: number; readonly image: number }
  readonly setupSeconds: number
}

type ServerRequest = { readonly id: number } & (
  | {
    readonly type: "start"
    readonly root: string
    readonly backends: ReadonlyArray<BackendSpec>
    readonly pdfFile: string
    readonly imageFile: string
    readonly attachments: number
  }
  | { readonly type: "stop" }
)
type ServerAsk = ServerRequest extends infer R ? R extends unknown ? Omit<R, "id"> : never : never
type ServerReply = { readonly id: number } & (
  | { readonly type: "ready"; readonly bareUrl: string; readonly libraries: ReadonlyArray<LibraryReady>; readonly bareBytes: { readonly pdf: number; readonly image: number } }
  | { readonly type: "ok" }
  | { readonly type: "failed"; readonly message: string }
)

const serverProcess = () => {
  const reply = (message: ServerReply) => process.send?.(message)
  const stops: Array<() => Promise<void>> = []
  // Registered at once, so a request sent while the modules load is not missed; it waits for them.
  const setUp = (async () => {
    const { Effect, Option } = await import("effect")
    const { makeGuardedHttp } = await import("../adapters/http/GuardedHttp.ts")
    const { makeFileBlobStore, nodeHmacSigner, serve } = await import("../adapters/node/index.ts")
    const { readConfig } = await import("../examples/server/Config.ts")
    const { fileOptions, operatorOptions } = await import("../examples/server/Operator.ts")
    const { storageFor } = await import("../examples/server/Storage.ts")
    const { hostSummarizer } = await import("../examples/server/Summarizer.ts")
    const { make } = await import("../src/app/Omnichannel.ts")
    const { Operator } = await import("../src/auth/Operator.ts")
    const { newIdNow } = await import("../src/kernel/Id.ts")
    const { addSeconds, fromMillis } = await import("../src/kernel/Timestamp.ts")
    const { AttachmentStore } = await import("../src/ports/AttachmentStore.ts")
    const { BlobStore } = await import("../src/ports/BlobStore.ts")
    const { SummaryStore } = await import("../src/ports/SummaryStore.ts")
    const { Transactor } = await import("../src/ports/Transactor.ts")
    const { SummaryService } = await import("../src/summaries/SummaryService.ts")
    const { hostEnvironment } = await import("./InboundDatabase.ts")

    // The baseline's answers: the same summary object per id, encoded per request.
    const bareSummaries = new Map<string, unknown>()

    const startLibrary = async (
      root: string,
      backend: BackendSpec,
      files: { readonly pdf: Uint8Array; readonly image: Uint8Array },
      count: number
    ): Promise<LibraryReady> => {
      const started = stamp()
      const dataDir = join(root, backend.name)
      mkdirSync(dataDir, { recursive: true })
      const env = hostEnvironment({ databaseUrl: backend.databaseUrl, dataDir, appSecret: "bench-app-secret" })
      const config = readConfig(env)
      const outbound = makeGuardedHttp({ allow: config.outboundAllow })
      const summaries = hostSummarizer(env, outbound)
      const fileSettings = fileOptions(config)
      const app = await make({
        storage: storageFor(config.databaseUrl),
        ...operatorOptions(config, outbound),
        blobStore: makeFileBlobStore(fileSettings.filesDir),
        summarizer: summaries.summarizer,
        downloads: fileSettings.downloads,
        outbound,
        signer: nodeHmacSigner,
        dispatch: { leaseSeconds: config.leaseSeconds }
      })
      stops.push(async () => {
        await app.dispose()
        await summaries.close()
        await outbound.close()
      })

      // A tenant with AI features on and credits; the attachments, alternating PDF and image; blobs for the two that are POSTed.
      const { apiKey, tenantId, ids } = await app.run(Effect.gen(function*() {
        const operator = yield* Operator
        const boot = yield* operator.bootstrap({ email: "bench@example.com", tenantName: "Summaries benchmark" })
        yield* operator.setAiFeaturesEnabled(boot.tenant_id, true)
        yield* (yield* SummaryService).grantCredits(boot.tenant_id, 100)
        const attachments = yield* AttachmentStore
        const blobs = yield* BlobStore
        const transactor = yield* Transactor
        const ids = Array.from({ length: count }, () => newIdNow())
        const keys = [`${boot.tenant_id}/${ids[0]}`, `${boot.tenant_id}/${ids[1]}`]
        yield* blobs.put(keys[0]!, files.pdf)
        yield* blobs.put(keys[1]!, files.image)
        const at = fromMillis(Date.now())
        for (let from = 0; from < count; from += 500) {
          yield* transactor.withTransaction(Effect.gen(function*() {
            for (let i = from; i < Math.min(count, from + 500); i++) {
              const pdf = i % 2 === 0
              const record: AttachmentRecord = {
                id: ids[i]!, tenant_id: boot.tenant_id, message_id: null, conversation_id: null, direction: "inbound", origin: "chatapp_media",
                filename: pdf ? "quarterly-report.pdf" : IMAGE_FILE, content_type: pdf ? "application/pdf" : "image/jpeg",
                file_size: pdf ? files.pdf.byteLength : files.image.byteLength, blob_key: keys[i % 2]!, external_id: null, created_at: at
              }
              yield* attachments.insert(record)
            }
          }))
        }
        return { apiKey: boot.api_key, tenantId: boot.tenant_id, ids }
      }))

      const server = await serve(app.handler, { port: 0, host: "127.0.0.1" })
      stops.push(() => server.close(2_000))
      const call = async (method: "GET" | "POST", id: string) => {
        const response = await fetch(`${server.url}${SUMMARY_PATH(id)}`, { method, headers: { authorization: `Bearer ${apiKey}` } })
        const text = await response.text()
        return { status: response.status, text, body: JSON.parse(text) as Record<string, unknown> }
      }
      // The real thing once per kind: the embedded summarizer in this process, the charge, the stored summary.
      const posts: Array<string> = []
      for (const id of ids.slice(0, 2)) {
        const at = stamp()
        const posted = await call("POST", id)
        if (posted.status !== 201) throw new Error(`${backend.name}: POST ${SUMMARY_PATH(id)} answered ${posted.status}: ${posted.text.slice(0, 300)}`)
        posts.push(`${posted.status}, ${String(posted.body.credits_charged)} credits, ${((stamp() - at) / 1000).toFixed(1)} s`)
      }

      // The others: a copy of their kind's summary, stored as a generation stores it (pending, then settled ok).
      await app.run(Effect.gen(function*() {
        const store = yield* SummaryStore
        const transactor = yield* Transactor
        const templates: Array<SummaryRecord> = []
        for (const id of ids.slice(0, 2)) templates.push(Option.getOrThrow(yield* store.get(tenantId, id)))
        const at = fromMillis(Date.now())
        for (let from = 2; from < count; from += 500) {
          yield* transactor.withTransaction(Effect.gen(function*() {
            for (let i = from; i < Math.min(count, from + 500); i++) {
              const template = templates[i % 2]!
              const pending: SummaryRecord = {
                ...template, id: newIdNow(), attachment_id: ids[i]!, status: "pending", text: "", sections: [], model: "",
                generation: 1, lease_until: addSeconds(at, 300), error: null, created_at: at, updated_at: at
              }
              if (!(yield* store.insertPending(pending))) throw new Error(`attachment ${ids[i]} had a summary already`)
              const { status, text, sections, pages_read, pages_total, truncated, model, error } = template
              yield* store.settle(tenantId, pending.id, 1, { status, text, sections, pages_read, pages_total, truncated, model, error, updated_at: at })
            }
          }))
        }
      }))

      // A GET of each kind: the answer sizes, and the summary objects the baseline answers with.
      const answerBytes = { pdf: 0, image: 0 }
      for (const [i, kind] of [[2, "pdf"], [3, "image"]] as const) {
        const got = await call("GET", ids[i]!)
        if (got.status !== 200 || got.body.status !== "ok") throw new Error(`${backend.name}: GET ${SUMMARY_PATH(ids[i]!)} answered ${got.status}: ${got.text.slice(0, 300)}`)
        answerBytes[kind] = Buffer.byteLength(got.text)
        if (!bareSummaries.has(`template-${kind}`)) bareSummaries.set(`template-${kind}`, got.body)
      }
      return { name: `library, ${backend.name}`, url: server.url, apiKey, ids, posts, answerBytes, setupSeconds: (stamp() - started) / 1000 }
    }

    const start = async (request: Extract<ServerRequest, { type: "start" }>) => {
      const files = { pdf: new Uint8Array(readFileSync(request.pdfFile)), image: new Uint8Array(readFileSync(request.imageFile)) }
      const libraries: Array<LibraryReady> = []
      for (const backend of request.backends) libraries.push(await startLibrary(request.root, backend, files, request.attachments))
      // The baseline answers every library's ids (and its own) with the summary of their kind.
      const byId = new Map<string, unknown>()
      for (const library of libraries) {
        library.ids.forEach((id, i) => byId.set(id, bareSummaries.get(`template-${i % 2 === 0 ? "pdf" : "image"}`)))
      }
      const route = /^\/api\/v1\/attachments\/([0-9a-f-]{36})\/summary$/
      const bare = http.createServer((req, res) => {
        const id = route.exec(req.url ?? "")?.[1]
        const summary = id === undefined ? undefined : byId.get(id)
        const body = summary === undefined ? JSON.stringify({ detail: { code: "summary_not_found", message: "not found" } }) : JSON.stringify(summary)
        res.writeHead(summary === undefined ? 404 : 200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) }).end(body)
      })
      await new Promise<void>((resolve) => bare.listen(0, "127.0.0.1", resolve))
      stops.push(() => new Promise<void>((resolve) => (bare.close(() => resolve()), bare.closeAllConnections())))
      const bareBytes = {
        pdf: Buffer.byteLength(JSON.stringify(bareSummaries.get("template-pdf"))),
        image: Buffer.byteLength(JSON.stringify(bareSummaries.get("template-image")))
      }
      return { bareUrl: `http://127.0.0.1:${(bare.address() as AddressInfo).port}`, libraries, bareBytes }
    }
    return start
  })()

  process.on("message", async (message: ServerRequest) => {
    try {
      switch (message.type) {
        case "start":
          return reply({ id: message.id, type: "ready", ...await (await setUp)(message) })
        case "stop":
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
// This process: the runs, the client, the report.

const mainProcess = async () => {
  const { values: flags } = parseArgs({
    options: {
      quick: { type: "boolean", default: false },
      only: { type: "string" },
      "no-postgres": { type: "boolean", default: false }
    }
  })
  const { Pool } = await import("undici")
  const { postgresReachable, startRun } = await import("./Run.ts")
  const { createPostgresDatabase } = await import("../test/support/Databases.ts")
  const quick = flags.quick === true
  const only = flags.only
  if (only !== undefined && only !== "embedded" && only !== "get") throw new Error(`--only takes embedded or get, not ${only}`)
  const PDF_COUNT = quick ? 8 : 40
  const IMAGE_COUNT = quick ? 2 : 10
  const ATTACHMENTS = quick ? 400 : 2_000
  const BURST = quick ? 2_000 : 10_000
  const WARM_UP = quick ? 400 : 2_000
  const HARD_LIMIT_MS = (quick ? 10 : 30) * 60_000
  const PG_URL = process.env.PG_URL

  const { loadAtStart, progress, onCleanup, cleanUp, cleaningUp, elapsedSeconds } = startRun(HARD_LIMIT_MS)
  const root = mkdtempSync(join(tmpdir(), "bench-summaries-"))
  onCleanup(async () => rmSync(root, { recursive: true, force: true }))
  const pdfFile = join(root, "quarterly-report.pdf")
  writeFileSync(pdfFile, benchmarkPdf())
  const imageFile = fixturePath(IMAGE_FILE)
  const fileBytes = { pdf: readFileSync(pdfFile).byteLength, image: readFileSync(imageFile).byteLength }

  const fmt = (value: number | undefined, digits = 1) => (value === undefined || Number.isNaN(value) ? "—" : value.toFixed(digits))
  const mb = (bytes: number) => (bytes / MB).toFixed(1)

  // Embedded summaries: one child process per run.
  const runOnce = async (subject: Subject, mode: Mode): Promise<RunFigures> => {
    process.env[ROLE_VARIABLE] = "summarize"
    const child = forkChild<SummarizeAsk, SummarizeReply>("./summaries.ts", ["--expose-gc"])
    delete process.env[ROLE_VARIABLE]
    onCleanup(child.kill)
    const count = subject === "pdf" ? PDF_COUNT : IMAGE_COUNT
    const answer = await child.request({ type: "run", subject, mode, file: subject === "pdf" ? pdfFile : imageFile, count })
    await child.exited
    if (answer.type === "failed") throw new Error(`${subject} ${mode} run: ${answer.message}`)
    return answer.figures
  }
  const perSummary = (run: RunFigures) => run.totalMs / run.count

  // GET under load: the client.
  interface Contender { readonly name: string; readonly url: string; readonly apiKey: string | undefined; readonly ids: ReadonlyArray<string> }
  interface BurstFigures { readonly perSecond: number; readonly p50: number; readonly p99: number; readonly max: number; readonly serverCpuUs: number | undefined }
  interface Row { readonly contender: Contender; readonly pool: Pool; readonly runs: Array<BurstFigures>; failed: number; firstFailure?: string }

  const burst = async (row: Row, order: ReadonlyArray<number>, count: number, serverPid: number): Promise<BurstFigures> => {
    const headers = row.contender.apiKey === undefined ? {} : { authorization: `Bearer ${row.contender.apiKey}` }
    const latencies: Array<number> = []
    let next = 0
    const cpu = startCpuMeter({ server: [serverPid] })
    const started = stamp()
    const lane = async () => {
      for (let i = next++; i < count; i = next++) {
        const path = SUMMARY_PATH(row.contender.ids[order[i % order.length]!]!)
        const at = stamp()
        try {
          const response = await row.pool.request({ method: "GET", path, headers })
          const text = await response.body.text()
          if (response.statusCode !== 200 || !text.includes("\"status\":\"ok\"")) {
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
    latencies.sort((a, b) => a - b)
    return { perSecond, p50: quantile(latencies, 0.5), p99: quantile(latencies, 0.99), max: latencies.at(-1) ?? Number.NaN, serverCpuUs: cpu.perEvent(count)?.server }
  }
  const best = (runs: ReadonlyArray<BurstFigures>): BurstFigures | undefined => runs.length === 0 ? undefined : {
    perSecond: Math.max(...runs.map((run) => run.perSecond)),
    p50: Math.min(...runs.map((run) => run.p50)),
    p99: Math.min(...runs.map((run) => run.p99)),
    max: Math.min(...runs.map((run) => run.max)),
    serverCpuUs: Math.min(...runs.map((run) => run.serverCpuUs ?? Number.NaN))
  }

  const printEmbedded = (runs: ReadonlyArray<RunFigures & { readonly round: number }>) => {
    console.log(`\nembedded summaries, each run a fresh child process (--expose-gc); the same file summarized one after another: the first (cold: ` +
      `the library's or OCR worker's start) timed apart, the rate over the ${PDF_COUNT} (PDF) or ${IMAGE_COUNT} (image) after it; memory over the whole run, growth over the ` +
      `process's baseline after loading and two full collections. RSS: the whole process (OCR thread and WebAssembly included), sampled every ` +
      `${SAMPLE_MS} ms by a thread of its own (RSS samples: their number and the longest gap, ms); max RSS: the kernel's high-water mark of the ` +
      `process's life; heap: the main thread's heapUsed, sampled every ${SAMPLE_MS} ms and after each summary, and read before each collection ` +
      "(heap / GCs: samples taken, collections read)")
    console.log(`PDF: 10 pages, ${fileBytes.pdf} bytes (fixture writer, full pages of report prose); image: ${IMAGE_FILE}, 1728 × 1152 (2.0 MP), ${fileBytes.image} bytes`)
    const header = `${"round".padEnd(5)}  ${"file".padEnd(5)}  ${"contender".padEnd(28)}  ${"first ms".padStart(8)}  ${"ms each".padStart(8)}  ${"p50–max ms".padStart(15)}  ${"per s".padStart(6)}  ` +
      `${"× bare".padStart(6)}  ${"CPU ms each".padStart(11)}  ${"CPU × bare".padStart(9)}  ${"peak RSS MB (growth)".padStart(20)}  ${"max RSS".padStart(7)}  ${"peak heap MB (growth)".padStart(21)}  ${"RSS samples".padStart(13)}  ${"heap / GCs".padStart(11)}  check`
    console.log(header)
    console.log("-".repeat(header.length))
    for (const run of runs) {
      const bare = runs.find((other) => other.subject === run.subject && other.mode === "bare" && other.round === run.round)
      const sorted = [...run.eachMs].sort((a, b) => a - b)
      const name = run.mode === "bare"
        ? run.subject === "pdf" ? "bare unpdf extractText" : "bare tesseract.js recognize"
        : "embedded summarizer"
      console.log(`${String(run.round).padEnd(5)}  ${run.subject.padEnd(5)}  ${name.padEnd(28)}  ${fmt(run.firstMs, 0).padStart(8)}  ${fmt(perSummary(run), 1).padStart(8)}  ` +
        `${`${fmt(quantile(sorted, 0.5), 0)}–${fmt(sorted.at(-1), 0)}`.padStart(15)}  ${fmt(1000 / perSummary(run), 2).padStart(6)}  ` +
        `${(run.mode === "bare" || bare === undefined ? "1" : (perSummary(run) / perSummary(bare)).toFixed(2)).padStart(6)}  ${fmt(run.cpuMsEach, 1).padStart(11)}  ` +
        `${(run.mode === "bare" || bare === undefined ? "1" : (run.cpuMsEach / bare.cpuMsEach).toFixed(2)).padStart(9)}  ` +
        `${`${mb(run.peakRss)} (+${mb(run.peakRss - run.baselineRss)})`.padStart(20)}  ${mb(run.maxRss).padStart(7)}  ` +
        `${`${mb(run.peakHeap)} (+${mb(run.peakHeap - run.baselineHeap)})`.padStart(21)}  ${`${run.rssSamples} (${run.longestGapMs.toFixed(0)})`.padStart(13)}  ` +
        `${`${run.heapSamples} / ${run.collections}`.padStart(11)}  ${run.check}`)
    }
    console.log("× bare: time per summary over the baseline's of the same round; CPU × bare: the same for CPU per summary, which other work on " +
      "the machine disturbs less (what our page reading, ranking and facts, or image facts and text tidying, add)")
  }

  const printGet = (rows: ReadonlyArray<Row>, ready: Extract<ServerReply, { type: "ready" }> | undefined, skipped: ReadonlyArray<string>) => {
    console.log(`\nGET ${SUMMARY_PATH("{id}")} under load: ${ATTACHMENTS} inbound attachments per database (half PDF, half image), each with an ok ` +
      `summary (two by POST, the rest copied through the store); bursts of ${BURST} GETs of a shuffled sequence of them, ${CONCURRENCY} in flight ` +
      `(undici keep-alive), after ${WARM_UP} to warm up; latency per request within the burst; server CPU per request from /proc` +
      (quick ? "" : "; each contender twice (in order, then in reverse), keeping the better figures"))
    for (const line of skipped) console.log(line)
    if (ready !== undefined) {
      for (const library of ready.libraries) {
        console.log(`${library.name}: set up in ${library.setupSeconds.toFixed(1)} s; POST of the PDF ${library.posts[0]}, of the image ${library.posts[1]}; ` +
          `answers ${library.answerBytes.pdf} bytes (PDF) and ${library.answerBytes.image} bytes (image)`)
      }
      console.log(`bare node:http: answers ${ready.bareBytes.pdf} and ${ready.bareBytes.image} bytes (the same summary objects, encoded per request)`)
    }
    const header = `${"server".padEnd(34)}  ${"req/s".padStart(7)}  ${"× bare".padStart(6)}  ${"runs".padStart(13)}  ${"p50 ms".padStart(6)}  ${"p99 ms".padStart(6)}  ` +
      `${"p99 × bare".padStart(10)}  ${"max ms".padStart(7)}  ${"server CPU µs".padStart(13)}  failed`
    console.log(header)
    console.log("-".repeat(header.length))
    const bareBest = best(rows[0]?.runs ?? [])
    for (const row of rows) {
      const figures = best(row.runs)
      const ratio = (f: (b: BurstFigures) => number) => figures === undefined || bareBest === undefined ? "—" : (f(figures) / f(bareBest)).toFixed(2)
      console.log(`${row.contender.name.padEnd(34)}  ${fmt(figures?.perSecond, 0).padStart(7)}  ${ratio((f) => f.perSecond).padStart(6)}  ` +
        `${row.runs.map((run) => run.perSecond.toFixed(0)).join(" / ").padStart(13)}  ${fmt(figures?.p50).padStart(6)}  ${fmt(figures?.p99).padStart(6)}  ` +
        `${ratio((f) => f.p99).padStart(10)}  ${fmt(figures?.max).padStart(7)}  ${fmt(figures?.serverCpuUs, 0).padStart(13)}  ` +
        `${row.failed}${row.firstFailure === undefined ? "" : ` (first: ${row.firstFailure})`}`)
    }
  }

  try {
    console.log(`AI file summaries benchmark${quick ? " (quick)" : ""}: node ${process.version}, ${availableParallelism()} CPUs, load average ${loadAtStart} at start (shared machine)`)
    const embeddedRuns: Array<RunFigures & { readonly round: number }> = []
    if (only !== "get") {
      const order: ReadonlyArray<readonly [Subject, Mode]> = [["pdf", "bare"], ["pdf", "embedded"], ["image", "bare"], ["image", "embedded"]]
      for (const [index, [subject, mode]] of (quick ? order : [...order, ...[...order].reverse()]).entries()) {
        progress(`${subject}, ${mode}`, `a fresh process, 1 + ${subject === "pdf" ? PDF_COUNT : IMAGE_COUNT} summaries`)
        const run = await runOnce(subject, mode)
        embeddedRuns.push({ ...run, round: index < order.length ? 1 : 2 })
        progress(`${subject}, ${mode}`, `first ${run.firstMs.toFixed(0)} ms, then ${perSummary(run).toFixed(1)} ms each; peak RSS ${mb(run.peakRss)} MB, ` +
          `max RSS ${mb(run.maxRss)} MB, peak heap ${mb(run.peakHeap)} MB; ${run.check}`)
      }
    }

    const rows: Array<Row> = []
    const skipped: Array<string> = []
    let ready: Extract<ServerReply, { type: "ready" }> | undefined
    if (only !== "embedded") {
      const backends: Array<BackendSpec> = [{ name: "SQLite", databaseUrl: `file:${join(root, "omnichannel.sqlite")}` }]
      if (flags["no-postgres"] === true) skipped.push("PostgreSQL: not run (--no-postgres)")
      else if (PG_URL === undefined) skipped.push("PostgreSQL: not run (PG_URL is not set)")
      else if (!await postgresReachable(PG_URL)) skipped.push(`PostgreSQL: not run (no server at ${PG_URL})`)
      else {
        const database = await createPostgresDatabase(PG_URL)
        onCleanup(database.drop)
        backends.push({ name: "PostgreSQL", databaseUrl: database.url })
      }
      process.env[ROLE_VARIABLE] = "server"
      const child = forkChild<ServerAsk, ServerReply>("./summaries.ts")
      delete process.env[ROLE_VARIABLE]
      onCleanup(child.kill)
      progress("setup", `server process ${child.pid}: ${backends.map((b) => b.name).join(" and ")}, ${ATTACHMENTS} attachments each, two POSTs each`)
      const answer = await child.request({ type: "start", root, backends, pdfFile, imageFile, attachments: ATTACHMENTS })
      if (answer.type !== "ready") throw new Error(`server process: ${answer.type === "failed" ? answer.message : answer.type}`)
      ready = answer
      for (const library of answer.libraries) progress("setup", `${library.name} on ${library.url}, set up in ${library.setupSeconds.toFixed(1)} s; POSTs: ${library.posts.join("; ")}`)

      const rowOf = (contender: Contender): Row => {
        const pool = new Pool(contender.url, { connections: CONCURRENCY, pipelining: 1 })
        onCleanup(async () => void pool.destroy())
        return { contender, pool, runs: [], failed: 0 }
      }
      rows.push(rowOf({ name: "bare node:http, same-size JSON", url: answer.bareUrl, apiKey: undefined, ids: answer.libraries[0]!.ids }))
      for (const library of answer.libraries) rows.push(rowOf({ name: library.name, url: library.url, apiKey: library.apiKey, ids: library.ids }))
      // The same shuffled sequence of attachment indexes for every contender.
      const order = Array.from({ length: ATTACHMENTS }, (_, i) => i)
      for (let i = order.length - 1; i > 0; i--) {
        const j = Math.floor(Math.random() * (i + 1))
        ;[order[i], order[j]] = [order[j]!, order[i]!]
      }
      for (const row of rows) {
        progress(`warm-up, ${row.contender.name}`, `${WARM_UP} GETs`)
        await burst(row, order, WARM_UP, child.pid)
      }
      for (const row of quick ? rows : [...rows, ...[...rows].reverse()]) {
        progress(row.contender.name, `${BURST} GETs, ${CONCURRENCY} in flight`)
        const figures = await burst(row, order, BURST, child.pid)
        row.runs.push(figures)
        progress(row.contender.name, `${figures.perSecond.toFixed(0)} GETs/s, p50 ${figures.p50.toFixed(1)} ms, p99 ${figures.p99.toFixed(1)} ms` +
          (row.failed > 0 ? `; ${row.failed} failed so far, first: ${row.firstFailure}` : ""))
      }
      const stopped = await child.request({ type: "stop" })
      if (stopped.type === "failed") throw new Error(`server process: ${stopped.message}`)
    }

    console.log(`\nAI file summaries benchmark${quick ? " (quick)" : ""}`)
    console.log(`node ${process.version}, ${availableParallelism()} CPUs, load average ${loadAtStart} at start and ${loadavg()[0]!.toFixed(1)} at end (shared machine)`)
    if (embeddedRuns.length > 0) printEmbedded(embeddedRuns)
    if (only !== "embedded") printGet(rows, ready, skipped)
    console.log("\nno goals: the issue sets none for these figures")
  } catch (error) {
    if (!cleaningUp()) console.error(error)
    process.exitCode = 1
  } finally {
    await cleanUp()
  }
  console.log(`[done] in ${elapsedSeconds()} s`)
}

const role = process.env[ROLE_VARIABLE]
if (role === "summarize") summarizeProcess()
else if (role === "server") serverProcess()
else await mainProcess()
