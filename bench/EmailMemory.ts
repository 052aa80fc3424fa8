/**
 * The email-memory phase of `bench:attachments` (`--only email-memory`): how much the reference
 * host's resident memory grows while received emails of 39 MB arrive at `POST /webhooks/email/{id}`
 * and are stored, one alone and then eight at once, and how far it comes back down afterwards.
 *
 * The host is `examples/server/main.ts` as `npm start` runs it (tsx, its default
 * `OMNI_EMAIL_PARSE_CONCURRENCY` of 2, file blobs and a fresh database in a temporary folder) with
 * one background worker (the default: one email read at a time) and with four (several taken at
 * once, two read at once), on SQLite and, when PostgreSQL answers at PG_URL, on PostgreSQL. This process is the client: it
 * builds each email once (a multipart/mixed message with text and HTML bodies, an inline image and
 * three base64 files, 39 MiB in all), sends eight at once over separate connections, polls the API
 * until every email is stored, then checks the stored files' sizes.
 *
 * Memory is the host's VmRSS read from /proc every 20 ms (so sampling costs the host nothing): the
 * baseline after one small email (so lazily loaded code counts in the baseline), a full collection
 * and a settle period;
 * the peak growth while emails arrive and are processed; and what is left after a settle period,
 * first as is, then after a full collection forced through the inspector (the host is started with
 * `--inspect=127.0.0.1:0` in NODE_OPTIONS for this, and nothing else changes).
 */
import { randomBytes } from "node:crypto"
import { mkdirSync, readFileSync, rmSync } from "node:fs"
import { join } from "node:path"
import { Readable } from "node:stream"
import { request as undiciRequest } from "undici"
import { createPostgresDatabase } from "../test/support/Databases.ts"
import { admin, startHost } from "../test/support/Host.ts"

const MB = 1024 * 1024
/** One received email: 39 MiB, a little under the route's 40 MiB limit. */
export const EMAIL_BYTES = 39 * MB
/** Emails sent at once in the burst. */
export const BURST = 8
const SAMPLE_MS = 20
const INSIDE_SAMPLE_MS = 100
/** The goals: peak growth at most three emails' size; after it, back within 20 MB of the baseline. */
const PEAK_GOAL = 3 * EMAIL_BYTES
const AFTER_GOAL = 20 * MB

/** What the phase borrows from the benchmark's run. */
export interface EmailMemoryBench {
  readonly quick: boolean
  readonly root: string
  readonly progress: (phase: string, message: string) => void
  readonly onCleanup: (step: () => Promise<void>) => () => Promise<void>
  readonly release: (step: () => Promise<void>) => Promise<void>
  /** Where a fresh PostgreSQL database is made; undefined without a reachable server. */
  readonly postgresUrl: string | undefined
}

/** The files of the big email, decoded sizes; their base64 and the bodies make up the rest. */
const FILES = [
  { filename: "quarterly-report.pdf", contentType: "application/pdf", head: Buffer.from("%PDF-1.7\n%\xe2\xe3\xcf\xd3\n", "latin1"), size: 14 * MB },
  { filename: "scanned-contract.pdf", contentType: "application/pdf", head: Buffer.from("%PDF-1.4\n%\xe2\xe3\xcf\xd3\n", "latin1"), size: 10 * MB },
  { filename: "site-photo.jpg", contentType: "image/jpeg", head: Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0x00, 0x01]), size: 0 }
] as const
const LOGO = Buffer.from(
  "89504e470d0a1a0a0000000d4948445200000001000000010806000000" +
    "1f15c4890000000d4944415478da63f8cfc0f01f0005000201e221bc330000000049454e44ae426082",
  "hex"
)

const base64Lines = (bytes: Buffer): string => {
  const text = bytes.toString("base64")
  const lines: Array<string> = []
  for (let i = 0; i < text.length; i += 76) lines.push(text.slice(i, i + 76))
  return lines.join("\r\n")
}

const fileBytes = (head: Buffer, size: number) => {
  const bytes = randomBytes(size)
  head.copy(bytes)
  return bytes
}

/**
 * The shared body of every big email (everything after its own headers), padded with text so the
 * whole email is `EMAIL_BYTES`, and the decoded sizes of its files as they should be stored.
 */
const bigEmailBody = (headerBytes: number): { readonly body: Buffer; readonly sizes: ReadonlyArray<number> } => {
  // Base64 in lines of 76 characters and a CRLF: 4/3 × 78/76 bytes per byte of a file.
  const encodedSize = (size: number) => Math.ceil(size / 3) * 4 * 78 / 76
  const fixed = FILES.slice(0, 2).reduce((sum, file) => sum + encodedSize(file.size), 0)
  // The photo takes what is left of the budget, less room for the bodies and the MIME framing.
  const photoSize = Math.floor((EMAIL_BYTES - headerBytes - fixed - 16 * 1024) / encodedSize(3) * 3)
  const files = FILES.map((file) => ({ ...file, size: file.size === 0 ? photoSize : file.size }))
  const text = "Hello,\r\n\r\nplease find the quarterly report, the scanned contract and the site photo attached.\r\n\r\nBest regards\r\nAlex"
  const html = "<p>Hello,</p><p>please find the quarterly report, the scanned contract and the site photo attached.</p>" +
    "<p><img src=\"cid:logo@customer.example\"></p><p>Best regards<br>Alex</p>"
  const parts: Array<string | Buffer> = [
    "--mixed\r\nContent-Type: multipart/related; boundary=\"related\"\r\n\r\n",
    "--related\r\nContent-Type: multipart/alternative; boundary=\"alternative\"\r\n\r\n",
    `--alternative\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: 7bit\r\n\r\n${text}\r\n`,
    `--alternative\r\nContent-Type: text/html; charset=utf-8\r\nContent-Transfer-Encoding: 7bit\r\n\r\n${html}\r\n`,
    "--alternative--\r\n",
    "--related\r\nContent-Type: image/png; name=\"logo.png\"\r\nContent-ID: <logo@customer.example>\r\n" +
    `Content-Disposition: inline; filename="logo.png"\r\nContent-Transfer-Encoding: base64\r\n\r\n${base64Lines(LOGO)}\r\n`,
    "--related--\r\n"
  ]
  for (const file of files) {
    parts.push(
      `--mixed\r\nContent-Type: ${file.contentType}; name="${file.filename}"\r\n` +
        `Content-Disposition: attachment; filename="${file.filename}"\r\nContent-Transfer-Encoding: base64\r\n\r\n`,
      Buffer.from(base64Lines(fileBytes(file.head, file.size)), "latin1"),
      "\r\n"
    )
  }
  parts.push("--mixed--\r\n")
  const framed = Buffer.concat(parts.map((part) => (typeof part === "string" ? Buffer.from(part, "utf8") : part)))
  // A text epilogue after the closing boundary brings the email to exactly EMAIL_BYTES.
  const padding = EMAIL_BYTES - headerBytes - framed.length
  if (padding < 0) throw new Error(`the email came out ${-padding} bytes too large`)
  return { body: Buffer.concat([framed, Buffer.alloc(padding, 0x20)]), sizes: [LOGO.length, ...files.map((file) => file.size)] }
}

/** The headers of big email `n` of this run, all the same length. */
const headersOf = (run: string, n: number) =>
  Buffer.from(
    `From: Alex Example <alex-${String(n).padStart(3, "0")}@customer.example>\r\nTo: support@desk.example\r\n` +
      `Subject: Quarterly documents ${String(n).padStart(3, "0")}\r\nMessage-ID: <big-${run}-${String(n).padStart(3, "0")}@customer.example>\r\n` +
      "Date: Mon, 02 Mar 2026 09:30:00 +0000\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=\"mixed\"\r\n\r\n",
    "utf8"
  )

/** A small email for the warm-up: the same shape with small files. */
const smallEmail = (run: string) =>
  Buffer.from(
    `From: warm@customer.example\r\nTo: support@desk.example\r\nSubject: Warm-up\r\nMessage-ID: <warm-${run}@customer.example>\r\n` +
      "MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=\"mixed\"\r\n\r\n" +
      "--mixed\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nwarming up\r\n" +
      `--mixed\r\nContent-Type: application/pdf; name="small.pdf"\r\nContent-Disposition: attachment; filename="small.pdf"\r\n` +
      `Content-Transfer-Encoding: base64\r\n\r\n${base64Lines(fileBytes(FILES[0].head, 200_000))}\r\n` +
      `--mixed\r\nContent-Type: image/png; name="logo.png"\r\nContent-Disposition: inline; filename="logo.png"\r\n` +
      `Content-ID: <warm-logo@customer.example>\r\nContent-Transfer-Encoding: base64\r\n\r\n${base64Lines(LOGO)}\r\n--mixed--\r\n`,
    "utf8"
  )

/** The host's resident memory now, in bytes. */
const rssOf = (pid: number): number => {
  const match = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))
  if (match === null) throw new Error(`no VmRSS for process ${pid}`)
  return Number(match[1]) * 1024
}

/** What `process.memoryUsage()` says inside the host. */
interface InsideUsage {
  readonly heapUsed: number
  readonly external: number
  readonly arrayBuffers: number
}

/**
 * Samples a process's RSS every `SAMPLE_MS` until stopped, and its heap and array buffers (read
 * through the inspector, which costs the host a little) every `INSIDE_SAMPLE_MS`.
 */
const startSampling = (pid: number, inside: () => Promise<InsideUsage>) => {
  let peak = rssOf(pid)
  let samples = 1
  let heapPeak = 0
  let arrayBuffersPeak = 0
  let reading = false
  const timer = setInterval(() => {
    try {
      peak = Math.max(peak, rssOf(pid))
      samples += 1
    } catch {
      // The process is gone; the run fails elsewhere.
    }
  }, SAMPLE_MS)
  const insideTimer = setInterval(() => {
    if (reading) return
    reading = true
    inside().then((usage) => {
      heapPeak = Math.max(heapPeak, usage.heapUsed)
      arrayBuffersPeak = Math.max(arrayBuffersPeak, usage.arrayBuffers)
    }, () => undefined).finally(() => (reading = false))
  }, INSIDE_SAMPLE_MS)
  // A run that fails mid-sample must not be kept alive by the samplers.
  timer.unref()
  insideTimer.unref()
  return {
    peak: () => peak,
    heapPeak: () => heapPeak,
    arrayBuffersPeak: () => arrayBuffersPeak,
    samples: () => samples,
    stop: () => {
      clearInterval(timer)
      clearInterval(insideTimer)
    }
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** The lowest RSS seen over `ms` (sampled every 100 ms): what the process holds once it has settled. */
const settledRss = async (pid: number, ms: number) => {
  let low = rssOf(pid)
  for (let waited = 0; waited < ms; waited += 100) {
    await sleep(100)
    low = Math.min(low, rssOf(pid))
  }
  return low
}

/** The host's inspector (ws://…): full collections on request, and `process.memoryUsage()` read from inside. */
const connectInspector = async (url: string) => {
  const socket = new WebSocket(url)
  await new Promise<void>((resolve, reject) => {
    socket.addEventListener("open", () => resolve())
    socket.addEventListener("error", () => reject(new Error(`could not reach the inspector at ${url}`)))
  })
  let nextId = 0
  const waiting = new Map<number, (result: any) => void>()
  socket.addEventListener("message", (event) => {
    const message = JSON.parse(String(event.data))
    waiting.get(message.id)?.(message.result)
    waiting.delete(message.id)
  })
  const call = (method: string, params: Record<string, unknown> = {}): Promise<any> =>
    new Promise((resolve, reject) => {
      const id = ++nextId
      const timer = setTimeout(() => reject(new Error(`the inspector did not answer ${method} within 30 s`)), 30_000)
      waiting.set(id, (result) => {
        clearTimeout(timer)
        resolve(result)
      })
      socket.send(JSON.stringify({ id, method, params }))
    })
  return {
    collectGarbage: async () => void await call("HeapProfiler.collectGarbage"),
    /** heapUsed, external and arrayBuffers of the host, in bytes. */
    memoryUsage: async (): Promise<{ heapUsed: number; external: number; arrayBuffers: number }> =>
      JSON.parse((await call("Runtime.evaluate", { expression: "JSON.stringify(process.memoryUsage())", returnByValue: true })).result.value),
    close: () => socket.close()
  }
}

/** The figures of one database. */
export interface EmailMemoryFigures {
  readonly database: string
  /** `OMNI_WORKERS`: with more than one, several emails are taken at once and the parse bound (2) applies. */
  readonly workers: number
  readonly emailBytes: number
  readonly baseline: number
  readonly one: { readonly peakGrowth: number; readonly heapPeakGrowth: number; readonly arrayBuffersPeakGrowth: number; readonly seconds: number }
  readonly burst: {
    readonly peakGrowth: number
    /** The highest heapUsed and arrayBuffers seen inside the host (every 100 ms), over their baselines. */
    readonly heapPeakGrowth: number
    readonly arrayBuffersPeakGrowth: number
    /** The peak while the emails were still arriving (until the last 200). */
    readonly arrivalPeakGrowth: number
    readonly answeredSeconds: number
    readonly storedSeconds: number
    readonly samples: number
  }
  /** Growth over the baseline after the settle period, as is and after a forced full collection. */
  readonly settledGrowth: number
  readonly collectedGrowth: number
  readonly settleSeconds: number
  readonly problems: ReadonlyArray<string>
}

const runOn = async (bench: EmailMemoryBench, database: "SQLite" | "PostgreSQL", workers: number): Promise<EmailMemoryFigures> => {
  const phase = `email memory, ${database}, ${workers} worker${workers === 1 ? "" : "s"}`
  const dataDir = join(bench.root, `email-memory-${database.toLowerCase()}-${workers}`)
  mkdirSync(dataDir, { recursive: true })
  const removeDir = bench.onCleanup(async () => rmSync(dataDir, { recursive: true, force: true }))
  const created = database === "PostgreSQL" ? await createPostgresDatabase(bench.postgresUrl!) : undefined
  const dropDatabase = created === undefined ? undefined : bench.onCleanup(created.drop)
  const env: Record<string, string> = {
    DATABASE_URL: created?.url ?? `file:${join(dataDir, "omnichannel.sqlite")}`,
    OMNI_DATA_DIR: dataDir,
    HOST: "127.0.0.1",
    OMNI_WORKERS: String(workers),
    OMNI_TEST_CLOCK: "",
    OMNI_METRICS: "",
    OTEL_EXPORTER_OTLP_ENDPOINT: "",
    OMNI_CHATAPP_GRAPH_URL: ""
  }
  // Migrated and bootstrapped by the CLI before the host starts, so the host's memory is its own.
  const boot = await admin(env, "bootstrap", "--email", "bench@example.com")
  const integration = await admin(env, "email-integration", "create", "--tenant", boot.tenant_id, "--address", "support@desk.example")
  const host = await startHost({ ...env, NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ""} --inspect=127.0.0.1:0`.trim() })
  const stopHost = bench.onCleanup(async () => {
    if (host.child.exitCode === null && host.child.signalCode === null) await host.stop()
  })
  const pid = host.child.pid!
  const inspectorUrl = /Debugger listening on (ws:\/\/\S+)/.exec(host.output())?.[1]
  if (inspectorUrl === undefined) throw new Error(`the host printed no inspector address:\n${host.output().slice(0, 2000)}`)
  const inspector = await connectInspector(inspectorUrl)
  // Closed before the host is stopped: a process exiting with a debugger attached waits for it to leave.
  const closeInspector = bench.onCleanup(async () => inspector.close())
  const problems: Array<string> = []
  const run = randomBytes(4).toString("hex")

  const post = async (parts: ReadonlyArray<Buffer>) => {
    const length = parts.reduce((sum, part) => sum + part.length, 0)
    const response = await undiciRequest(`${host.url}/webhooks/email/${integration.email_integration_id}`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${integration.inbound_secret}`,
        "content-type": "message/rfc822",
        "content-length": String(length)
      },
      // Sent from the shared buffers in slices, never copied whole.
      body: Readable.from((function*() {
        for (const part of parts) for (let i = 0; i < part.length; i += 256 * 1024) yield part.subarray(i, i + 256 * 1024)
      })(), { objectMode: false })
    })
    const text = await response.body.text()
    if (response.statusCode !== 200) problems.push(`an email was answered ${response.statusCode}: ${text.slice(0, 200)}`)
  }
  const api = async (path: string): Promise<any> => {
    // A connection of its own each time; a busy host may still drop one (ECONNRESET): asked again.
    let response: Awaited<ReturnType<typeof undiciRequest>>
    for (let attempt = 1;; attempt++) {
      try {
        response = await undiciRequest(`${host.url}/api/v1${path}`, { headers: { authorization: `Bearer ${boot.api_key}` }, reset: true })
        break
      } catch (error) {
        if (attempt >= 5) throw error
        await sleep(200)
      }
    }
    const body = await response.body.json() as any
    if (response.statusCode !== 200) throw new Error(`GET ${path} answered ${response.statusCode}: ${JSON.stringify(body)}`)
    return body
  }
  const conversations = async (): Promise<Array<any>> =>
    (await api(`/conversations?channel_id=${integration.email_integration_id}&page_size=100`)).items
  /** Polls until the mailbox holds `count` conversations (one per email), for at most 5 minutes. */
  const storedCount = async (count: number) => {
    const deadline = Date.now() + 5 * 60_000
    for (;;) {
      const found = (await conversations()).length
      if (found >= count) return
      if (Date.now() > deadline) throw new Error(`only ${found} of ${count} emails stored after 5 minutes:\n${host.output().slice(-3000)}`)
      await sleep(200)
    }
  }

  try {
    bench.progress(phase, `host ${pid} on ${host.url}; building the ${(EMAIL_BYTES / MB).toFixed(0)} MiB email`)
    const headerBytes = headersOf(run, 0).length
    const { body, sizes } = bigEmailBody(headerBytes)
    await post([smallEmail(run)])
    await storedCount(1)
    const settleMs = bench.quick ? 4_000 : 10_000
    await settledRss(pid, 2_000)
    await inspector.collectGarbage()
    const baseline = await settledRss(pid, 2_000)
    const inside = await inspector.memoryUsage()
    bench.progress(phase, `baseline RSS ${(baseline / MB).toFixed(1)} MB after a small email and a full collection`)

    // One email alone.
    let sampler = startSampling(pid, inspector.memoryUsage)
    let started = Date.now()
    await post([headersOf(run, 1), body])
    await storedCount(2)
    sampler.stop()
    const one = {
      peakGrowth: sampler.peak() - baseline,
      heapPeakGrowth: sampler.heapPeak() - inside.heapUsed,
      arrayBuffersPeakGrowth: sampler.arrayBuffersPeak() - inside.arrayBuffers,
      seconds: (Date.now() - started) / 1000
    }
    bench.progress(phase, `one email: peak growth ${(one.peakGrowth / MB).toFixed(1)} MB (heap ${(one.heapPeakGrowth / MB).toFixed(1)}, ` +
      `array buffers ${(one.arrayBuffersPeakGrowth / MB).toFixed(1)}), stored in ${one.seconds.toFixed(1)} s`)
    await settledRss(pid, settleMs)
    await inspector.collectGarbage()
    const between = await settledRss(pid, 1_000)
    bench.progress(phase, `after one email and a full collection: ${((between - baseline) / MB).toFixed(1)} MB over the baseline`)

    // Eight at once.
    sampler = startSampling(pid, inspector.memoryUsage)
    started = Date.now()
    await Promise.all(Array.from({ length: BURST }, (_, i) => post([headersOf(run, 2 + i), body])))
    const arrivalPeak = sampler.peak()
    const answeredSeconds = (Date.now() - started) / 1000
    bench.progress(phase, `${BURST} emails answered in ${answeredSeconds.toFixed(1)} s; peak growth so far ${((arrivalPeak - baseline) / MB).toFixed(1)} MB`)
    await storedCount(2 + BURST)
    sampler.stop()
    const storedSeconds = (Date.now() - started) / 1000
    const burst = {
      peakGrowth: sampler.peak() - baseline,
      heapPeakGrowth: sampler.heapPeak() - inside.heapUsed,
      arrayBuffersPeakGrowth: sampler.arrayBuffersPeak() - inside.arrayBuffers,
      arrivalPeakGrowth: arrivalPeak - baseline,
      answeredSeconds,
      storedSeconds,
      samples: sampler.samples()
    }
    bench.progress(phase, `${BURST} emails stored in ${storedSeconds.toFixed(1)} s; peak growth ${(burst.peakGrowth / MB).toFixed(1)} MB ` +
      `(heap ${(burst.heapPeakGrowth / MB).toFixed(1)}, array buffers ${(burst.arrayBuffersPeakGrowth / MB).toFixed(1)})`)
    const settled = await settledRss(pid, settleMs)
    await inspector.collectGarbage()
    const collected = await settledRss(pid, 1_000)

    // Every big email stored with its files whole.
    const expected = [...sizes].sort((a, b) => a - b)
    for (const conversation of await conversations()) {
      if (!conversation.subject?.startsWith("Quarterly documents")) continue
      const thread = await api(`/email-integrations/conversations/${conversation.id}/email-thread`)
      const got = thread.items[0].attachments.map((file: any) => file.file_size).sort((a: number, b: number) => a - b)
      if (JSON.stringify(got) !== JSON.stringify(expected)) {
        problems.push(`${conversation.subject}: files of ${got.join(", ")} bytes, expected ${expected.join(", ")}`)
      }
    }
    return {
      database,
      workers,
      emailBytes: EMAIL_BYTES,
      baseline,
      one,
      burst,
      settledGrowth: settled - baseline,
      collectedGrowth: collected - baseline,
      settleSeconds: settleMs / 1000,
      problems
    }
  } catch (error) {
    const exited = host.child.exitCode ?? host.child.signalCode
    throw new Error(`${error instanceof Error ? error.message : String(error)}; the host ${exited === null ? "is running" : `exited (${exited})`}, ` +
      `its last output:\n${host.output().slice(-4000)}`)
  } finally {
    await bench.release(closeInspector)
    await bench.release(stopHost)
    if (dropDatabase !== undefined) await bench.release(dropDatabase)
    await bench.release(removeDir)
  }
}

/**
 * Runs the phase on SQLite and, when it answers, PostgreSQL, each with the host's one worker and
 * with four (then up to four emails are taken at once and OMNI_EMAIL_PARSE_CONCURRENCY's 2 bounds them).
 */
export const emailMemoryPhase = async (bench: EmailMemoryBench): Promise<ReadonlyArray<EmailMemoryFigures>> => {
  const figures: Array<EmailMemoryFigures> = []
  for (const database of ["SQLite", "PostgreSQL"] as const) {
    if (database === "PostgreSQL" && bench.postgresUrl === undefined) continue
    for (const workers of [1, 4]) figures.push(await runOn(bench, database, workers))
  }
  return figures
}

/** Prints the phase's table and goal lines. */
export const printEmailMemory = (figures: ReadonlyArray<EmailMemoryFigures>, postgresUrl: string | undefined) => {
  const mb = (bytes: number) => (bytes / MB).toFixed(1)
  console.log(`\nreceived email memory: the reference host's RSS (VmRSS, sampled every ${SAMPLE_MS} ms from /proc) while emails of ` +
    `${EMAIL_BYTES} bytes (${mb(EMAIL_BYTES)} MiB: text, HTML, an inline image and three base64 files) arrive at ` +
    "POST /webhooks/email/{id} and are stored (OMNI_WORKERS 1 or 4, default OMNI_EMAIL_PARSE_CONCURRENCY 2); growth over the baseline " +
    `taken after a small email and a full collection; heapUsed and arrayBuffers read inside the host every ${INSIDE_SAMPLE_MS} ms ` +
    "through the inspector; MB = MiB" + (postgresUrl === undefined ? "; no PostgreSQL reachable: SQLite only" : ""))
  const header = `${"database, workers".padEnd(20)}  ${"baseline".padStart(8)}  ${"one: peak".padStart(9)}  ${`${BURST} at once: peak`.padStart(15)}  ` +
    `${"(arriving)".padStart(10)}  ${"heap / arrayBuffers peak".padStart(24)}  ${"answered s".padStart(10)}  ${"stored s".padStart(8)}  ${"settled".padStart(7)}  ${"after full GC".padStart(13)}`
  console.log(header)
  console.log("-".repeat(header.length))
  for (const f of figures) {
    console.log(`${`${f.database}, ${f.workers}`.padEnd(20)}  ${mb(f.baseline).padStart(8)}  ${mb(f.one.peakGrowth).padStart(9)}  ${mb(f.burst.peakGrowth).padStart(15)}  ` +
      `${mb(f.burst.arrivalPeakGrowth).padStart(10)}  ${`${mb(f.burst.heapPeakGrowth)} / ${mb(f.burst.arrayBuffersPeakGrowth)}`.padStart(24)}  ${f.burst.answeredSeconds.toFixed(1).padStart(10)}  ${f.burst.storedSeconds.toFixed(1).padStart(8)}  ` +
      `${mb(f.settledGrowth).padStart(7)}  ${mb(f.collectedGrowth).padStart(13)}` +
      (f.problems.length === 0 ? "" : `  PROBLEMS: ${f.problems.join("; ")}`))
  }
  console.log("\ngoals (received email memory)")
  for (const f of figures) {
    const clean = f.problems.length === 0 ? "" : "; some emails were not stored as sent"
    const verdict = (met: boolean) => (met && clean === "" ? "met" : "MISSED").padEnd(7)
    console.log(`  ${verdict(f.burst.peakGrowth <= PEAK_GOAL)}  ${f.database}, ${f.workers} worker${f.workers === 1 ? "" : "s"}: peak RSS growth while ${BURST} emails arrive at once ≤ ` +
      `3 × one email (${mb(PEAK_GOAL)} MB)  ${mb(f.burst.peakGrowth)} MB${clean}`)
    console.log(`  ${verdict(f.collectedGrowth <= AFTER_GOAL)}  ${f.database}, ${f.workers} worker${f.workers === 1 ? "" : "s"}: back within ${mb(AFTER_GOAL)} MB of the baseline after, ` +
      `with a full GC (forced through the inspector, as --expose-gc would)  ${mb(f.collectedGrowth)} MB; ` +
      `${f.settleSeconds} s after with no forced GC: ${mb(f.settledGrowth)} MB${f.settledGrowth <= AFTER_GOAL ? "" : " (over, until V8 collects)"}`)
  }
}
