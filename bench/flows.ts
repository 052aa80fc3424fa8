/**
 * Chat-app flow answers benchmark (issue 17, "Proof"): how many flow sessions a second the reference
 * wiring completes on SQLite (a signed `POST /webhooks/chatapp` carrying an `nfm_reply` answer in, its
 * `chatapp_flow.completed` event stored in the outbox), and how long an answer takes at a steady 100
 * answers/s from the request's start to its `chatapp_flow.completed` arriving at a real webhook
 * receiver (goal: p99 under 50 ms).
 *
 * The library runs in a process of its own, forked from this file and wired as
 * `examples/server/main.ts` wires it: storage from the URL (a SQLite file in a temp dir, background
 * checkpoints), the operator simulator, files on disk, Node's signer, `serve` on 127.0.0.1 and one
 * background worker (`startWorkers({ count: 1, idleMs: 50 })`, as `OMNI_WORKERS=1`). Its guarded client
 * allows 127.0.0.1/32 and trusts the receiver's self-signed certificate (the reference host reads the
 * same from `OMNI_OUTBOUND_ALLOW` and `NODE_EXTRA_CA_CERTS`). The receiver is the webhook benchmarks'
 * HTTPS receiver (`receiver-process.ts`), in its own process; this process posts the operator's signed
 * payloads (undici keep-alive, as `bench:inbound`'s client) and times them.
 *
 * Set-up, in the library's process, not timed: a tenant and a connected chat-app channel (as `admin
 * bootstrap` and `admin channel create` do); a tag and a flow (`POST /tags`, `POST /chatapp-flows`: one
 * screen of four inputs, `national_id` sensitive, `full_name` written back to the contact's name and
 * `newsletter` to the tag); a webhook endpoint subscribed to `chatapp_flow.completed` at the receiver
 * (`POST /webhook-endpoints`); then N contacts, each with an open conversation whose 24-hour window is
 * open and one `sent` session of the flow, inserted through the storage ports (`ContactStore`,
 * `ConversationStore`, `FlowStore`) in transactions of 1,000. Session `i`'s flow token is derived from a
 * key of the run, so this process knows every token and the sessions keep only their SHA-256, as
 * `FlowService.send` stores them.
 *
 * Measured, in order:
 * - warm-up: answers posted 16 at a time, waited for until delivered;
 * - throughput: M answers (one per session, each a distinct payload) posted with 64 in flight, timed from
 *   the first request to the last `chatapp_flow.completed` stored in the outbox (its `created_at`), and
 *   to the last one delivered to the receiver;
 * - latency: a steady 100 answers/s, open loop, for 30 s (twice in full runs, the run with the lower p99
 *   judged): per answer, from the request's start to its answer (200), to its event's `created_at` in
 *   the outbox (millisecond precision), and to its first arrival at the receiver, matched through the
 *   delivery's `webhook-id` (the envelope id) to the event's `event_id`, the session id;
 * - baseline: plain text messages at 100/s for as long, timed to their `message.received` at the
 *   receiver (a second endpoint, subscribed to `message.received` only, created just before).
 * Afterwards every count is verified: answers acknowledged, no payload pending or failed, each session
 * completed once, one event per session, names and tags written back, the sensitive value nowhere in
 * sessions, events or messages.
 *
 *   npm run bench:flows -- [--quick] [--wake-inbound]
 *
 * `--quick`: 1,000 answers in the throughput burst, 10 s steady runs (one), 10 s of baseline.
 * `--wake-inbound` (a diagnostic, not a measurement of the library as it is): the library's process
 * starts a round of the inbound job as soon as it has acknowledged an operator webhook, beside its
 * worker, which otherwise looks for stored payloads only every 50 ms when it found none; it shows
 * what an edge that woke the worker would give. Its goals are printed as DIAG, not judged.
 * `BENCH_CPU_PROF=dir` profiles the library's process during the (first) steady run, writes the
 * profile there and prints where the time went; the forked process also writes a profile of its whole
 * life when it exits (as `ChildProcess.ts` does), so such a run's figures are slower than unprofiled ones.
 */
import { createHmac, randomBytes } from "node:crypto"
import { mkdirSync, mkdtempSync, rmSync } from "node:fs"
import { availableParallelism, loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import { setTimeout as sleep } from "node:timers/promises"
import { parseArgs } from "node:util"
import { Effect } from "effect"
import { sql } from "kysely"
import { makeGuardedHttp } from "../adapters/http/GuardedHttp.ts"
import { makeFileBlobStore, nodeHmacSigner, serve } from "../adapters/node/index.ts"
import { readConfig } from "../examples/server/Config.ts"
import { fileOptions, operatorOptions } from "../examples/server/Operator.ts"
import { storageFor } from "../examples/server/Storage.ts"
import { make, type Omnichannel } from "../src/app/Omnichannel.ts"
import { Operator } from "../src/auth/Operator.ts"
import { BackgroundWork } from "../src/kernel/BackgroundWork.ts"
import { MASK } from "../src/flows/FlowSession.ts"
import { FLOW_SESSION_TTL_SECONDS } from "../src/flows/FlowService.ts"
import { newIdNow } from "../src/kernel/Id.ts"
import { addSeconds, fromMillis } from "../src/kernel/Timestamp.ts"
import { ContactStore } from "../src/ports/ContactStore.ts"
import { ConversationStore } from "../src/ports/ConversationStore.ts"
import { FlowStore } from "../src/ports/FlowStore.ts"
import { Transactor } from "../src/ports/Transactor.ts"
import { makeCertificate } from "../test/outbound/LocalServers.ts"
import { forkChild } from "./ChildProcess.ts"
import { type CpuPerEvent, startCpuMeter } from "./CpuMeter.ts"
import { hostEnvironment, openReader } from "./InboundDatabase.ts"
import { makeOperatorClient, type OperatorClient } from "./InboundLoad.ts"
import { BUSINESS_ACCOUNT_ID, PHONE_NUMBER_ID, type SignedPayload } from "./InboundPayloads.ts"
import { quantile, stamp } from "./Load.ts"
import { type RunningProfile, startProfile } from "./Profile.ts"
import { startReceiver } from "./Receiver.ts"
import { startRun } from "./Run.ts"

const ROLE_VARIABLE = "BENCH_FLOWS_ROLE"
const PROFILE_DIR = process.env.BENCH_CPU_PROF

/** What the parent asks the library's process, and what it answers. */
type ChildRequest = { readonly id: number } & (
  | {
    readonly type: "start"
    readonly databaseUrl: string
    readonly dataDir: string
    readonly appSecret: string
    /** The receiver's certificate, trusted by the guarded client. */
    readonly ca: string
    readonly receiverUrl: string
    readonly sessions: number
    /** Session `i`'s flow token is `tokenOf(runKey, i)`. */
    readonly runKey: string
    /** The `--wake-inbound` diagnostic: each acknowledged webhook starts an inbound round at once. */
    readonly wakeInbound: boolean
  }
  | { readonly type: "subscribe"; readonly name: string; readonly events: ReadonlyArray<string> }
  | { readonly type: "profile-start" }
  | { readonly type: "profile-stop"; readonly label: string }
  | { readonly type: "stop" }
)
type ChildReply = { readonly id: number } & (
  | { readonly type: "ready"; readonly port: number; readonly sessionIds: ReadonlyArray<string>; readonly setupSeconds: number }
  | { readonly type: "ok" }
  | { readonly type: "profiled"; readonly file: string | undefined; readonly summary: ReadonlyArray<string> }
  | { readonly type: "stopped"; readonly errors: number; readonly firstError: string | undefined }
  | { readonly type: "failed"; readonly message: string }
)
type ChildAsk = ChildRequest extends infer R ? R extends unknown ? Omit<R, "id"> : never : never

/** Session `i`'s flow token: 40 characters only this run can make. */
const tokenOf = (runKey: string, i: number): string => createHmac("sha256", runKey).update(String(i)).digest("base64url").slice(0, 40)
/** The digits of contact `i` (`wa_id`, `from`), as `bench:inbound` writes them. */
const waIdOf = (i: number) => `1555${String(i).padStart(7, "0")}`
/** What the sensitive input is answered with: it must be found nowhere after the run. */
const SENSITIVE_PREFIX = "NID-SECRET-"

/** The flow: one screen, one sensitive input, the name and a tag written back. */
const flowRequest = (channelId: string, tagId: string) => ({
  name: "Sign-up",
  channel_id: channelId,
  meta_flow_id: "1187654321098765",
  screens: [{
    id: "DETAILS",
    inputs: [
      { name: "full_name", type: "TextInput" },
      { name: "email", type: "TextInput" },
      { name: "national_id", type: "TextInput" },
      { name: "newsletter", type: "OptIn" }
    ],
    sensitive_fields: ["national_id"]
  }],
  writeback: [
    { input: "full_name", target: "contact_field", field: "name" },
    { input: "newsletter", target: "tag", tag_id: tagId }
  ]
})

/** Where the library's time goes: each sample counts for the first of these met from the running function outwards. */
const SUBSYSTEMS: ReadonlyArray<readonly [string, RegExp]> = [
  ["SQLite statements (better-sqlite3, native, under Kysely's SQLite driver)", /better-sqlite3|kysely\/dist\/dialect\/sqlite\/sqlite-driver/],
  ["Kysely (query building, compiling, executing)", /node_modules\/kysely\//],
  ["the storage adapters (adapters/kysely)", /adapters\/kysely/],
  ["undici (webhook deliveries' HTTP client)", /node_modules\/undici\//],
  ["the guarded client", /adapters\/http/],
  ["Node's HTTP server and listener (adapters/node)", /adapters\/node/],
  ["Node's HTTP, TLS, sockets and streams", /_http_|node:net|internal\/net|node:tls|_tls_|internal\/tls|stream_base_commons|internal\/streams|internal\/webstreams/],
  ["Effect Schema (decoding, encoding)", /effect\/dist\/(Schema|SchemaAST|SchemaParser|SchemaIssue|internal\/schema)/],
  ["Effect's runtime", /effect\/dist/],
  ["flows (src/flows)", /src\/flows\//],
  ["inbound edge and processor (src/inbound)", /src\/inbound\//],
  ["messages, conversations, contacts", /src\/(messages|conversations|contacts)\//],
  ["webhook dispatch and the outbox (src/webhooks, src/events)", /src\/(webhooks|events)\//],
  ["the library's other code", /\/(src|adapters)\//]
]

// ---------------------------------------------------------------------------------------------------
// The library's process: the reference host's wiring, the set-up, one worker, the HTTP server.

const childProcess = () => {
  const reply = (message: ChildReply) => process.send?.(message)
  const stops: Array<() => Promise<void>> = []
  let app: Omnichannel | undefined
  let apiKey = ""
  let receiverUrl = ""
  let errors = 0
  let firstError: string | undefined
  let profiler: RunningProfile | undefined

  const api = async (method: string, path: string, body?: unknown): Promise<any> => {
    const response = await app!.handler(new Request(`http://localhost/api/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) })
    }))
    const text = await response.text()
    if (response.status !== 201 && response.status !== 200) throw new Error(`${method} ${path} answered ${response.status}: ${text.slice(0, 400)}`)
    return text === "" ? undefined : JSON.parse(text)
  }

  const start = async (request: Extract<ChildRequest, { type: "start" }>) => {
    const started = stamp()
    receiverUrl = request.receiverUrl
    const settings = { databaseUrl: request.databaseUrl, dataDir: request.dataDir, appSecret: request.appSecret }
    const config = readConfig(hostEnvironment(settings, { OMNI_OUTBOUND_ALLOW: "127.0.0.1/32" }))
    const outbound = makeGuardedHttp({ allow: config.outboundAllow, ca: request.ca })
    const files = fileOptions(config)
    app = await make({
      storage: storageFor(config.databaseUrl),
      ...operatorOptions(config, outbound),
      blobStore: makeFileBlobStore(files.filesDir),
      downloads: files.downloads,
      outbound,
      signer: nodeHmacSigner,
      dispatch: { leaseSeconds: config.leaseSeconds }
    })
    stops.push(async () => {
      await app!.dispose()
      await outbound.close()
    })
    const { tenantId, channelId } = await app.run(Effect.gen(function*() {
      const operator = yield* Operator
      const boot = yield* operator.bootstrap({ email: "bench@example.com", tenantName: "Flows benchmark" })
      apiKey = boot.api_key
      const channel = yield* operator.createChannel({
        tenantId: boot.tenant_id,
        type: "chatapp",
        inputs: { phone_number_id: PHONE_NUMBER_ID, business_account_id: BUSINESS_ACCOUNT_ID, access_token: "abcdefghijklmnopqrstuvwxyz" }
      })
      return { tenantId: boot.tenant_id, channelId: channel.channel_id }
    }))
    const tag = await api("POST", "/tags", { name: "Newsletter" })
    const flow = await api("POST", "/chatapp-flows", flowRequest(channelId, tag.id))
    await api("POST", "/webhook-endpoints", { name: "Flow completions", url: request.receiverUrl, subscribed_events: ["chatapp_flow.completed"] })
    const version = flow.latest_version as { id: string; number: number }

    // Contacts, their open conversations and one sent session each, a thousand a transaction.
    const sessionIds: Array<string> = []
    for (let from = 0; from < request.sessions; from += 1_000) {
      const to = Math.min(request.sessions, from + 1_000)
      await app.run(Effect.gen(function*() {
        const contacts = yield* ContactStore
        const conversations = yield* ConversationStore
        const flows = yield* FlowStore
        const transactor = yield* Transactor
        const at = fromMillis(Date.now())
        const hashes = yield* Effect.promise(() =>
          Promise.all(Array.from({ length: to - from }, async (_, k) => {
            const digest = await globalThis.crypto.subtle.digest("SHA-256", new TextEncoder().encode(tokenOf(request.runKey, from + k)))
            return Buffer.from(digest).toString("hex")
          }))
        )
        yield* transactor.withTransaction(Effect.gen(function*() {
          for (let i = from; i < to; i++) {
            const contactId = newIdNow(), conversationId = newIdNow(), sessionId = newIdNow()
            yield* contacts.insert({
              id: contactId, tenant_id: tenantId, name: `Contact ${i}`, phone: `+${waIdOf(i)}`, email: null, language: null,
              custom_fields: {}, created_at: at, updated_at: null
            })
            yield* conversations.insert({
              id: conversationId, tenant_id: tenantId, channel_id: channelId, contact_id: contactId, status: "open", kind: "chat",
              subject: null, created_at: at, updated_at: null, closed_at: null, last_message_at: at, last_inbound_at: at
            })
            yield* flows.insertSession({
              id: sessionId, tenant_id: tenantId, definition_id: flow.id, version_id: version.id, version_number: version.number,
              contact_id: contactId, conversation_id: conversationId, channel_id: channelId, sender_type: "api", status: "sent",
              flow_token_hash: hashes[i - from]!, last_screen: null, answers: null, writeback_result: null, last_error: null,
              message_id: null, answer_message_id: null, created_at: at, opened_at: null, completed_at: null,
              expires_at: addSeconds(at, FLOW_SESSION_TTL_SECONDS)
            })
            sessionIds.push(sessionId)
          }
        }))
      }))
    }
    const workers = app.startWorkers({
      count: 1,
      idleMs: 50,
      onError: (job, error) => {
        errors += 1
        firstError ??= `${job}: ${error instanceof Error ? error.message : String(error)}`
      }
    })
    stops.push(() => workers.stop())
    // The diagnostic: what an edge that woke the inbound worker would give. Each acknowledged operator
    // webhook starts a round of the inbound job at once (one at a time, another after it when more came
    // meanwhile), beside the worker's own loop, which still looks every 50 ms; claims are leased, so
    // nothing is processed twice.
    let handler = app.handler
    if (request.wakeInbound) {
      const round = await app.run(Effect.map(BackgroundWork, (work) => work.jobs.find((job) => job.name === "inbound")!.runDue))
      let running = false
      let again = false
      const wake = () => {
        if (running) {
          again = true
          return
        }
        running = true
        void (async () => {
          try {
            do {
              again = false
              await app!.run(round)
            } while (again)
          } catch (error) {
            errors += 1
            firstError ??= `woken inbound round: ${error instanceof Error ? error.message : String(error)}`
          } finally {
            running = false
          }
        })()
      }
      handler = async (incoming) => {
        const response = await app!.handler(incoming)
        if (response.status === 200 && incoming.method === "POST" && new URL(incoming.url).pathname === "/webhooks/chatapp") wake()
        return response
      }
    }
    const server = await serve(handler, { port: 0, host: "127.0.0.1" })
    stops.push(() => server.close())
    return { port: Number(new URL(server.url).port), sessionIds, setupSeconds: (stamp() - started) / 1000 }
  }

  process.on("message", async (message: ChildRequest) => {
    try {
      switch (message.type) {
        case "start":
          return reply({ id: message.id, type: "ready", ...(await start(message)) })
        case "subscribe":
          await api("POST", "/webhook-endpoints", { name: message.name, url: receiverUrl, subscribed_events: message.events })
          return reply({ id: message.id, type: "ok" })
        case "profile-start":
          profiler = await startProfile()
          return reply({ id: message.id, type: "ok" })
        case "profile-stop": {
          const { file, summary } = await profiler!.stop(PROFILE_DIR, "flows", message.label, SUBSYSTEMS)
          profiler = undefined
          return reply({ id: message.id, type: "profiled", file, summary })
        }
        case "stop":
          for (const stop of stops.splice(0).reverse()) await stop().catch((error) => console.error("library process stop:", error))
          reply({ id: message.id, type: "stopped", errors, firstError })
          return process.disconnect()
      }
    } catch (error) {
      reply({ id: message.id, type: "failed", message: error instanceof Error ? error.stack ?? error.message : String(error) })
    }
  })
  process.on("disconnect", () => setTimeout(() => process.exit(0), 100).unref())
}

// ---------------------------------------------------------------------------------------------------
// The parent: the operator's side, the receiver, the measurements.

interface Percentiles {
  readonly count: number
  readonly p50: number
  readonly p90: number
  readonly p99: number
  readonly max: number
}

const percentiles = (values: Array<number>): Percentiles => {
  values.sort((a, b) => a - b)
  return {
    count: values.length,
    p50: quantile(values, 0.5),
    p90: quantile(values, 0.9),
    p99: quantile(values, 0.99),
    max: values.at(-1) ?? Number.NaN
  }
}

interface SteadyRun {
  readonly label: string
  readonly sent: number
  readonly achievedRate: number
  readonly refused: number
  readonly ack: Percentiles
  /** To the event's `created_at` in the outbox (millisecond precision). */
  readonly stored: Percentiles | undefined
  readonly delivered: Percentiles
  /** The parts: from the answer (200) to the event's `created_at`, and from that to its arrival. */
  readonly ackToStored: Percentiles | undefined
  readonly storedToDelivered: Percentiles | undefined
  /** Answers whose event never reached the receiver within the wait. */
  readonly missing: number
  readonly duplicates: number
  readonly cpu: CpuPerEvent | undefined
}

interface BurstRun {
  readonly answers: number
  readonly refused: number
  readonly ackSeconds: number
  readonly storedSeconds: number
  readonly storedPerSecond: number
  readonly deliveredSeconds: number
  readonly deliveredPerSecond: number
  readonly delivered: number
  readonly cpu: CpuPerEvent | undefined
}

const parentProcess = async () => {
  const { values: flags } = parseArgs({
    options: { quick: { type: "boolean", default: false }, "wake-inbound": { type: "boolean", default: false } }
  })
  const quick = flags.quick === true
  const wakeInbound = flags["wake-inbound"] === true
  const WARM_UP = quick ? 100 : 300
  const BURST = quick ? 1_000 : 5_000
  const RATE = 100
  const STEADY_SECONDS = quick ? 10 : 30
  const STEADY_RUNS = quick ? 1 : 2
  const BASELINE_WARM_UP = quick ? 100 : 200
  const BASELINE_SECONDS = quick ? 10 : 30
  const CONCURRENCY = 64
  const P99_GOAL_MS = 50
  const SESSIONS = WARM_UP + BURST + STEADY_RUNS * RATE * (STEADY_SECONDS + 2)
  const HARD_LIMIT_MS = (quick ? 4 : 9) * 60_000

  const { loadAtStart, progress, onCleanup, release, cleanUp, cleaningUp, elapsedSeconds } = startRun(HARD_LIMIT_MS)
  const root = mkdtempSync(join(tmpdir(), "bench-flows-"))
  onCleanup(async () => rmSync(root, { recursive: true, force: true }))
  const RUN = randomBytes(4).toString("hex")
  const runKey = randomBytes(24).toString("base64url")
  const appSecret = randomBytes(24).toString("base64url")
  const signingKey = Buffer.from(appSecret, "utf8")
  const timestamp = String(Math.floor(Date.now() / 1000))

  /** One operator payload carrying `message` from contact `i`, signed as the operator signs. */
  const signed = (i: number, message: Record<string, unknown>): SignedPayload => {
    const body = JSON.stringify({
      object: "whatsapp_business_account",
      entry: [{
        id: BUSINESS_ACCOUNT_ID,
        changes: [{
          field: "messages",
          value: {
            messaging_product: "whatsapp",
            metadata: { display_phone_number: "15551234567", phone_number_id: PHONE_NUMBER_ID },
            contacts: [{ profile: { name: `Contact ${i}` }, wa_id: waIdOf(i) }],
            messages: [{ from: waIdOf(i), timestamp, ...message }]
          }
        }]
      }]
    })
    return { body, signature: `sha256=${createHmac("sha256", signingKey).update(body).digest("hex")}`, messages: 1 }
  }
  /** Contact `i`'s answer to its session: the platform's `nfm_reply`, the flow token inside `response_json`. */
  const answerOf = (i: number): SignedPayload =>
    signed(i, {
      id: `wamid.${RUN}.f${i}`,
      context: { from: "15551234567", id: `wamid.${RUN}.sent${i}` },
      type: "interactive",
      interactive: {
        type: "nfm_reply",
        nfm_reply: {
          name: "flow",
          body: "Sent",
          response_json: JSON.stringify({
            flow_token: tokenOf(runKey, i),
            full_name: `Answered ${i}`,
            email: `contact${i}@example.com`,
            national_id: `${SENSITIVE_PREFIX}${i}`,
            newsletter: true
          })
        }
      }
    })
  const textOf = (i: number, n: number): SignedPayload =>
    signed(i, { id: `wamid.${RUN}.t${n}`, type: "text", text: { body: `hola ${n}` } })

  const format = (value: number | undefined, digits = 1) => (value === undefined || Number.isNaN(value) ? "—" : value.toFixed(digits))
  const cpuText = (cpu: CpuPerEvent | undefined) =>
    cpu === undefined
      ? "—"
      : `${Object.entries(cpu).map(([role, us]) => `${role} ${us.toFixed(0)}`).join(", ")}; total ${Object.values(cpu).reduce((a, b) => a + b, 0).toFixed(0)}`

  let child: ReturnType<typeof forkChild<ChildAsk, ChildReply>> | undefined
  const ask = async <T extends ChildReply["type"]>(message: ChildAsk, type: T) => {
    const answer = await child!.request(message)
    if (answer.type === "failed") throw new Error(`library process: ${answer.message}`)
    if (answer.type !== type) throw new Error(`library process answered ${answer.type} to ${message.type}`)
    return answer as Extract<ChildReply, { type: T }>
  }

  progress(
    "setup",
    `${SESSIONS} sessions; warm-up ${WARM_UP}, burst of ${BURST} answers, ${STEADY_RUNS} × ${STEADY_SECONDS} s at ${RATE}/s, ` +
      `baseline ${BASELINE_SECONDS} s of text messages${quick ? " (quick)" : ""}` +
      (wakeInbound ? "; DIAGNOSTIC --wake-inbound: each acknowledged webhook starts an inbound round at once" : "")
  )
  const steadyRuns: Array<SteadyRun> = []
  let burstRun: BurstRun | undefined
  let baseline: SteadyRun | undefined
  let profileSummary: { readonly file: string | undefined; readonly summary: ReadonlyArray<string> } | undefined
  const problems: Array<string> = []
  let setupSeconds = 0
  try {
    const certificate = makeCertificate()
    const receiver = await startReceiver(certificate)
    onCleanup(receiver.close)
    const dataDir = join(root, "data")
    mkdirSync(dataDir)
    const databaseUrl = `file:${join(dataDir, "omnichannel.sqlite")}`
    process.env[ROLE_VARIABLE] = "child"
    child = forkChild<ChildAsk, ChildReply>("./flows.ts")
    delete process.env[ROLE_VARIABLE]
    const killChild = onCleanup(child.kill)
    const ready = await ask({
      type: "start",
      databaseUrl,
      dataDir,
      appSecret,
      ca: certificate.cert,
      receiverUrl: receiver.url,
      sessions: SESSIONS,
      runKey,
      wakeInbound
    }, "ready")
    setupSeconds = ready.setupSeconds
    const sessionIds = ready.sessionIds
    progress("setup", `library process ${child.pid} on port ${ready.port}: ${sessionIds.length} sessions set up in ${setupSeconds.toFixed(1)} s`)
    const client: OperatorClient = makeOperatorClient(`http://127.0.0.1:${ready.port}/webhooks/chatapp`, CONCURRENCY)
    const closeClient = onCleanup(async () => client.close())
    const reader = openReader(databaseUrl)
    const closeReader = onCleanup(() => reader.destroy())
    const roles = { library: [child.pid], receiver: [receiver.pid], "bench client": [process.pid] }

    const eventsOf = async (type: string) =>
      reader.selectFrom("outbox_events").select(["id", "event_id", "created_at", "data"]).where("type", "=", type).execute()
    const countOf = async (type: string) =>
      Number((await reader.selectFrom("outbox_events").select(sql<number>`count(*)`.as("n")).where("type", "=", type).executeTakeFirst())?.n ?? 0)

    let next = 0
    /** Posts `payloads` with `inFlight` at a time; answers other than 200 are counted by the client. */
    const postAllOf = async (payloads: ReadonlyArray<SignedPayload>, inFlight: number) => {
      let at = 0
      const lane = async () => {
        for (let k = at++; k < payloads.length; k = at++) await client.post(payloads[k]!.signature, payloads[k]!.body)
      }
      await Promise.all(Array.from({ length: inFlight }, lane))
    }

    // Warm-up: JIT, pools, the TLS session to the receiver.
    progress("warm-up", `${WARM_UP} answers, 16 in flight`)
    await receiver.reset()
    await postAllOf(Array.from({ length: WARM_UP }, () => answerOf(next++)), 16)
    const warm = await receiver.waitFor(WARM_UP, Date.now() + 60_000)
    if (warm.unique < WARM_UP) throw new Error(`warm-up: ${warm.unique}/${WARM_UP} completions delivered: ${client.refused().first ?? "no refusal"}`)

    // (a) Throughput.
    {
      const phase = "throughput"
      const payloads = Array.from({ length: BURST }, () => answerOf(next++))
      const completedBefore = await countOf("chatapp_flow.completed")
      await receiver.reset()
      const refusedBefore = client.refused().count
      progress(phase, `${BURST} answers, ${CONCURRENCY} in flight`)
      const meter = startCpuMeter(roles)
      const started = stamp()
      await postAllOf(payloads, CONCURRENCY)
      const ackSeconds = (stamp() - started) / 1000
      progress(phase, `all answered in ${ackSeconds.toFixed(1)} s (${(BURST / ackSeconds).toFixed(0)}/s); waiting for the completions`)
      const deadline = Date.now() + (quick ? 60_000 : 180_000)
      let lastProgress = Date.now()
      while ((await countOf("chatapp_flow.completed")) - completedBefore < BURST && Date.now() < deadline) {
        if (Date.now() - lastProgress >= 5_000) {
          lastProgress = Date.now()
          progress(phase, `${(await countOf("chatapp_flow.completed")) - completedBefore}/${BURST} completions stored`)
        }
        await sleep(100)
      }
      const reached = await receiver.waitFor(BURST, deadline, (count) => progress(phase, `${count.unique}/${BURST} delivered`))
      const cpu = meter.perEvent(BURST)
      const stored = (await countOf("chatapp_flow.completed")) - completedBefore
      const last = await reader.selectFrom("outbox_events").select(sql<string>`max(created_at)`.as("last"))
        .where("type", "=", "chatapp_flow.completed").executeTakeFirst()
      const storedSeconds = (Date.parse(last!.last) - started) / 1000
      const deliveredSeconds = ((reached.unique >= BURST ? reached.lastAt : stamp()) - started) / 1000
      burstRun = {
        answers: BURST,
        refused: client.refused().count - refusedBefore,
        ackSeconds,
        storedSeconds,
        storedPerSecond: stored / storedSeconds,
        deliveredSeconds,
        deliveredPerSecond: reached.unique / deliveredSeconds,
        delivered: reached.unique,
        cpu
      }
      if (stored < BURST) problems.push(`throughput: ${stored}/${BURST} completions stored by the deadline`)
      progress(
        phase,
        `${stored} completions stored in ${storedSeconds.toFixed(1)} s = ${burstRun.storedPerSecond.toFixed(0)}/s; ` +
          `${reached.unique} delivered in ${deliveredSeconds.toFixed(1)} s = ${burstRun.deliveredPerSecond.toFixed(0)}/s`
      )
    }

    /** A steady open-loop run of `payload(k)` at RATE for `seconds`; latency keys are what `keyOf` names. */
    const steadyRun = async (
      label: string,
      seconds: number,
      produce: () => { readonly key: string; readonly payload: SignedPayload },
      match: () => Promise<{ readonly byWebhookId: ReadonlyMap<string, string>; readonly storedAt: ReadonlyMap<string, number> | undefined }>
    ): Promise<SteadyRun> => {
      await receiver.reset()
      const refusedBefore = client.refused().count
      const startedAt = new Map<string, number>()
      const answeredAt = new Map<string, number>()
      const ack: Array<number> = []
      const inFlight = new Set<Promise<void>>()
      const meter = startCpuMeter(roles)
      const started = stamp()
      let sent = 0
      while (stamp() - started < seconds * 1000) {
        const due = Math.floor(((stamp() - started) / 1000) * RATE) - sent
        for (let k = 0; k < due; k++) {
          const { key, payload } = produce()
          const at = stamp()
          startedAt.set(key, at)
          const request = client.post(payload.signature, payload.body).then(() => {
            const done = stamp()
            ack.push(done - at)
            answeredAt.set(key, done)
          })
          inFlight.add(request)
          void request.finally(() => inFlight.delete(request))
        }
        sent += Math.max(0, due)
        await sleep(Math.max(0, started + ((sent + 1) / RATE) * 1000 - stamp()))
      }
      const achievedRate = sent / ((stamp() - started) / 1000)
      await Promise.all(inFlight)
      const reached = await receiver.waitFor(sent, Date.now() + 60_000)
      const cpu = meter.perEvent(sent)
      const arrivals = await receiver.arrivals()
      const { byWebhookId, storedAt } = await match()
      const delivered: Array<number> = []
      const stored: Array<number> = []
      const ackToStored: Array<number> = []
      const storedToDelivered: Array<number> = []
      for (const [webhookId, arrivedAt] of arrivals) {
        const key = byWebhookId.get(webhookId)
        const at = key === undefined ? undefined : startedAt.get(key)
        if (at === undefined) continue
        delivered.push(arrivedAt - at)
        const createdAt = storedAt?.get(key!)
        if (createdAt !== undefined) storedToDelivered.push(arrivedAt - createdAt)
      }
      if (storedAt !== undefined) {
        for (const [key, at] of startedAt) {
          const createdAt = storedAt.get(key)
          if (createdAt === undefined) continue
          stored.push(createdAt - at)
          const answered = answeredAt.get(key)
          if (answered !== undefined) ackToStored.push(createdAt - answered)
        }
      }
      const run: SteadyRun = {
        label,
        sent,
        achievedRate,
        refused: client.refused().count - refusedBefore,
        ack: percentiles(ack),
        stored: storedAt === undefined ? undefined : percentiles(stored),
        delivered: percentiles(delivered),
        ackToStored: storedAt === undefined ? undefined : percentiles(ackToStored),
        storedToDelivered: storedAt === undefined ? undefined : percentiles(storedToDelivered),
        missing: sent - delivered.length,
        duplicates: reached.duplicates,
        cpu
      }
      progress(
        label,
        `delivered p50 ${format(run.delivered.p50)} ms, p90 ${format(run.delivered.p90)} ms, p99 ${format(run.delivered.p99)} ms, max ${format(run.delivered.max)} ms ` +
          `(${run.delivered.count}/${sent} matched at ${achievedRate.toFixed(0)}/s)` +
          (run.stored === undefined ? "" : `; in the outbox p50 ${format(run.stored.p50)}, p99 ${format(run.stored.p99)} ms`) +
          `; answered p99 ${format(run.ack.p99)} ms`
      )
      return run
    }

    // Completions: the envelope id (webhook-id) → the session id; when each was stored.
    const matchCompletions = async () => {
      const rows = await eventsOf("chatapp_flow.completed")
      return {
        byWebhookId: new Map(rows.map((row) => [row.id, row.event_id])),
        storedAt: new Map(rows.map((row) => [row.event_id, Date.parse(row.created_at)]))
      }
    }

    // (b) Latency at a steady 100 answers/s.
    for (let r = 1; r <= STEADY_RUNS; r++) {
      const label = `latency${STEADY_RUNS > 1 ? ` run ${r}` : ""}`
      progress(label, `steady ${RATE} answers/s for ${STEADY_SECONDS} s${r === 1 && PROFILE_DIR !== undefined ? " (library process profiled)" : ""}`)
      const profiled = r === 1 && PROFILE_DIR !== undefined
      if (profiled) await ask({ type: "profile-start" }, "ok")
      steadyRuns.push(await steadyRun(label, STEADY_SECONDS, () => {
        const i = next++
        if (i >= sessionIds.length) throw new Error("more answers than sessions")
        return { key: sessionIds[i]!, payload: answerOf(i) }
      }, matchCompletions))
      if (profiled) {
        const { file, summary } = await ask({ type: "profile-stop", label: `steady-${RATE}` }, "profiled")
        profileSummary = { file, summary }
      }
    }

    // Baseline: plain text messages to their message.received, on a second endpoint.
    {
      const label = "baseline"
      await ask({ type: "subscribe", name: "Received messages", events: ["message.received"] }, "ok")
      let n = 0
      progress(label, `warm-up, ${BASELINE_WARM_UP} text messages`)
      await receiver.reset()
      await postAllOf(Array.from({ length: BASELINE_WARM_UP }, () => textOf(n % sessionIds.length, n++)), 16)
      await receiver.waitFor(BASELINE_WARM_UP, Date.now() + 60_000)
      progress(label, `steady ${RATE} text messages/s for ${BASELINE_SECONDS} s, timed to message.received at the receiver`)
      baseline = await steadyRun(label, BASELINE_SECONDS, () => {
        const k = n++
        return { key: `wamid.${RUN}.t${k}`, payload: textOf(k % sessionIds.length, k) }
      }, async () => {
        const rows = await eventsOf("message.received")
        const byWebhookId = new Map<string, string>()
        const storedAt = new Map<string, number>()
        for (const row of rows) {
          const wamid = (JSON.parse(row.data) as { message?: { external_id?: string } }).message?.external_id
          if (wamid === undefined) continue
          byWebhookId.set(row.id, wamid)
          storedAt.set(wamid, Date.parse(row.created_at))
        }
        return { byWebhookId, storedAt }
      })
    }

    // Every count.
    {
      const answered = next
      const one = async (query: Promise<{ readonly n: unknown } | undefined>) => Number((await query)?.n ?? 0)
      const pending = await one(reader.selectFrom("inbound_payloads").select(sql<number>`count(*)`.as("n")).where("status", "=", "pending").executeTakeFirst())
      const failed = await one(reader.selectFrom("inbound_payloads").select(sql<number>`count(*)`.as("n")).where("status", "=", "failed").executeTakeFirst())
      const completed = await one(reader.selectFrom("flow_sessions").select(sql<number>`count(*)`.as("n")).where("status", "=", "completed").executeTakeFirst())
      const adopted = await one(reader.selectFrom("flow_sessions").select(sql<number>`count(*)`.as("n")).where("sender_type", "=", "adopted").executeTakeFirst())
      const events = await countOf("chatapp_flow.completed")
      const distinctEvents = await one(reader.selectFrom("outbox_events").select(sql<number>`count(distinct event_id)`.as("n")).where("type", "=", "chatapp_flow.completed").executeTakeFirst())
      const named = await one(reader.selectFrom("contacts").select(sql<number>`count(*)`.as("n")).where("name", "like", "Answered %").executeTakeFirst())
      const tagged = await one(reader.selectFrom("contact_tags").select(sql<number>`count(*)`.as("n")).executeTakeFirst())
      const masked = await one(reader.selectFrom("flow_sessions").select(sql<number>`count(*)`.as("n")).where("answers", "like", `%${MASK}%`).executeTakeFirst())
      const leaked = await one(reader.selectFrom("flow_sessions").select(sql<number>`count(*)`.as("n")).where("answers", "like", `%${SENSITIVE_PREFIX}%`).executeTakeFirst()) +
        await one(reader.selectFrom("outbox_events").select(sql<number>`count(*)`.as("n")).where("data", "like", `%${SENSITIVE_PREFIX}%`).executeTakeFirst()) +
        await one(reader.selectFrom("messages").select(sql<number>`count(*)`.as("n")).where(sql<boolean>`cast(content as text) like ${`%${SENSITIVE_PREFIX}%`}`).executeTakeFirst())
      const refused = client.refused()
      if (refused.count > 0) problems.push(`${refused.count} requests not answered 200 (${refused.first})`)
      if (pending > 0) problems.push(`${pending} payloads still pending`)
      if (failed > 0) problems.push(`${failed} payloads failed`)
      if (completed !== answered) problems.push(`${completed} sessions completed of ${answered} answered`)
      if (adopted > 0) problems.push(`${adopted} answers adopted (token not matched)`)
      if (events !== answered || distinctEvents !== answered) problems.push(`${events} chatapp_flow.completed events (${distinctEvents} distinct) for ${answered} answers`)
      if (named !== answered) problems.push(`${named} contacts renamed of ${answered}`)
      if (tagged !== answered) problems.push(`${tagged} contacts tagged of ${answered}`)
      if (masked !== answered) problems.push(`${masked} sessions with the sensitive input masked of ${answered}`)
      if (leaked > 0) problems.push(`the sensitive value found in ${leaked} rows`)
      progress("checks", problems.length === 0 ? `all ${answered} answers: completed once, one event each, written back, masked` : `FAILED: ${problems.join("; ")}`)
    }

    await release(closeClient)
    await release(closeReader)
    const stopped = await ask({ type: "stop" }, "stopped")
    if (stopped.errors > 0) problems.push(`${stopped.errors} background errors (${stopped.firstError})`)
    await Promise.race([child.exited, sleep(10_000)])
    await release(killChild)
  } catch (error) {
    if (!cleaningUp()) console.error(error)
    process.exitCode = 1
  }

  // The report.
  console.log(`\nChat-app flow answers benchmark${quick ? " (quick)" : ""}, SQLite`)
  if (wakeInbound) {
    console.log("DIAGNOSTIC --wake-inbound: each acknowledged webhook started an inbound round at once (not the library as it is; goals not judged)")
  }
  console.log(`node ${process.version}, ${availableParallelism()} CPUs, load average ${loadAtStart} at start and ${loadavg()[0]!.toFixed(1)} at end (shared machine)`)
  console.log(`set-up (not timed): ${SESSIONS} contacts, conversations and sent sessions in ${setupSeconds.toFixed(1)} s`)
  if (burstRun !== undefined) {
    console.log(`\nthroughput: ${burstRun.answers} answers, ${CONCURRENCY} in flight, one worker; from the first request`)
    console.log(`  all answered 200 after ${burstRun.ackSeconds.toFixed(1)} s (${(burstRun.answers / burstRun.ackSeconds).toFixed(0)}/s)${burstRun.refused > 0 ? `, ${burstRun.refused} refused` : ""}`)
    console.log(`  last chatapp_flow.completed stored after ${burstRun.storedSeconds.toFixed(1)} s: ${burstRun.storedPerSecond.toFixed(0)} completed sessions/s`)
    console.log(`  last delivered after ${burstRun.deliveredSeconds.toFixed(1)} s: ${burstRun.deliveredPerSecond.toFixed(0)}/s (${burstRun.delivered}/${burstRun.answers})`)
    console.log(`  CPU per answer (µs, by process): ${cpuText(burstRun.cpu)}`)
  }
  const row = (name: string, p: Percentiles | undefined) =>
    p === undefined ? "  —" : `  ${name.padEnd(40)} ${format(p.p50).padStart(7)} ${format(p.p90).padStart(7)} ${format(p.p99).padStart(7)} ${format(p.max).padStart(7)}  (${p.count})`
  for (const run of [...steadyRuns, ...(baseline === undefined ? [] : [baseline])]) {
    const what = run.label === "baseline" ? "message.received" : "chatapp_flow.completed"
    console.log(`\n${run.label}: ${run.sent} sent at ${run.achievedRate.toFixed(1)}/s`)
    console.log(`  ${"ms from the request's start".padEnd(40)} ${"p50".padStart(7)} ${"p90".padStart(7)} ${"p99".padStart(7)} ${"max".padStart(7)}`)
    console.log(row("answered 200", run.ack))
    console.log(row(`${what} in the outbox`, run.stored))
    console.log(row(`${what} at the receiver`, run.delivered))
    console.log(`  parts, ms`)
    console.log(row("answered 200 → in the outbox", run.ackToStored))
    console.log(row("in the outbox → at the receiver", run.storedToDelivered))
    console.log(`  CPU per answer (µs, by process): ${cpuText(run.cpu)}${run.missing > 0 ? `; ${run.missing} not delivered` : ""}${run.duplicates > 0 ? `; ${run.duplicates} delivered twice` : ""}`)
  }
  if (profileSummary !== undefined) {
    console.log(`\nCPU profile of the library's process during ${steadyRuns[0]?.label ?? "the steady run"} (${profileSummary.file ?? "not written"}):`)
    for (const line of profileSummary.summary) console.log(`  ${line}`)
  }
  const best = steadyRuns.reduce<SteadyRun | undefined>((a, b) => (a === undefined || b.delivered.p99 < a.delivered.p99 ? b : a), undefined)
  console.log("\ngoals")
  console.log(`  ${"INFO".padEnd(7)}  completed flow sessions/s, SQLite  ${burstRun === undefined ? "not run" : `${burstRun.storedPerSecond.toFixed(0)}/s stored (${burstRun.deliveredPerSecond.toFixed(0)}/s delivered)`}`)
  const verdict = best === undefined
    ? "SKIPPED"
    : wakeInbound
    ? "DIAG"
    : best.delivered.p99 < P99_GOAL_MS && best.missing === 0 && problems.length === 0
    ? "met"
    : "MISSED"
  console.log(
    `  ${verdict.padEnd(7)}  ` +
      `answer → chatapp_flow.completed delivered, p99 < ${P99_GOAL_MS} ms at ${RATE}/s  ` +
      (best === undefined ? "not run" : `p99 ${format(best.delivered.p99)} ms (runs: ${steadyRuns.map((run) => format(run.delivered.p99)).join(" / ")})`) +
      (problems.length === 0 ? "" : `; checks failed: ${problems.join("; ")}`)
  )
  if (baseline !== undefined) console.log(`  ${"INFO".padEnd(7)}  baseline: text → message.received delivered at ${RATE}/s  p99 ${format(baseline.delivered.p99)} ms (p50 ${format(baseline.delivered.p50)})`)
  if (problems.length > 0) process.exitCode = 1
  await cleanUp()
  console.log(`[done] in ${elapsedSeconds()} s`)
}

if (process.env[ROLE_VARIABLE] === "child") childProcess()
else await parentProcess()
