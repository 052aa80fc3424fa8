import { Cause, Clock, Effect, Option } from "effect"
import { ChannelService } from "../channels/ChannelService.ts"
import { inJobSpan, parseTraceparent } from "../kernel/TraceContext.ts"
import type { BackgroundJob } from "../kernel/BackgroundWork.ts"
import {
  CHATAPP_MEDIA_TYPES,
  type ChatappEvent,
  type ChatappFieldEvent,
  ChatappHandlers,
  type ChatappMessageEvent,
  type ChatappStatusEvent,
  type HandlerVerdict,
  type InboundChannel,
  type PreparedStep,
  RetryLater
} from "../kernel/ChatappEvents.ts"
import { EmailHandlers } from "../kernel/EmailEvents.ts"
import { countInboundProcessed } from "../kernel/Metrics.ts"
import { InboundSignal } from "../kernel/WorkSignal.ts"
import { newId } from "../kernel/Id.ts"
import { StorageError } from "../kernel/StorageError.ts"
import { fromMillis, now } from "../kernel/Timestamp.ts"
import { BlobStore } from "../ports/BlobStore.ts"
import { type InboundClaim, type InboundOutcome, type InboundSource, InboundStore } from "../ports/InboundStore.ts"
import { Transactor } from "../ports/Transactor.ts"
import { parseChatappPayload } from "./ChatappWebhook.ts"
import { openReceivedEmail } from "./ReceivedEmailBlobs.ts"

/** How the inbound processor works: batch size, lease, tries. */
export interface InboundSettings {
  /** Payloads one claim takes. */
  readonly batchSize: number
  /** How long a claim holds its payloads before another worker may take them. */
  readonly leaseSeconds: number
  /** Tries before a payload that keeps failing is given up on (`failed`, kept for a re-run). */
  readonly maxAttempts: number
}

/** The defaults: a claim of 50 payloads held for 2 minutes, 8 tries over about 4 hours. */
export const DEFAULT_INBOUND_SETTINGS: InboundSettings = { batchSize: 50, leaseSeconds: 120, maxAttempts: 8 }

/** Seconds before try `attempt + 1` after try `attempt` failed: 10 s, 1 min, 5 min, 15 min, 30 min, 1 h, 2 h. */
export const retryDelaySeconds = (attempt: number): number =>
  [10, 60, 300, 900, 1800, 3600, 7200][Math.min(Math.max(attempt, 1), 7) - 1]!

// A concurrent writer creating the same contact or conversation makes the loser's transaction fail
// on a unique index; the item is simply handled again, finding what the winner made.
const CONFLICT_RETRIES = 3

const NOTE_LIMIT = 2000

// Notes quote what arrived; PostgreSQL's text cannot hold U+0000.
const cleanNote = (outcome: InboundOutcome): InboundOutcome =>
  outcome.note === null ? outcome : { ...outcome, note: outcome.note.replaceAll("\0", "\uFFFD").slice(0, NOTE_LIMIT) }

/**
 * The background job that handles stored operator payloads: claims due ones with a lease (several
 * workers and processes share them), reads each into events, and runs every event through the
 * registered handlers in its own transaction together with its de-duplication key, so a redelivered
 * message or status has the effect of one and a crash loses nothing (the lease passes, the payload is
 * taken again, handled keys are skipped).
 */
export const makeInboundJob = (settings: InboundSettings = DEFAULT_INBOUND_SETTINGS) =>
  Effect.gen(function*() {
    const store = yield* InboundStore
    const channels = yield* ChannelService
    const handlers = yield* ChatappHandlers
    const email = yield* EmailHandlers
    const transactor = yield* Transactor
    const blobs = yield* BlobStore

    // Own properties only: a field named `constructor` or `__proto__` has no handler.
    const fieldHandlers = (field: string) => (Object.hasOwn(handlers.fields, field) ? handlers.fields[field]! : [])

    const withConflictRetry = <A, E>(effect: Effect.Effect<A, E | StorageError>): Effect.Effect<A, E | StorageError> =>
      Effect.gen(function*() {
        for (let i = 0;; i++) {
          const result = yield* Effect.result(effect)
          if (result._tag === "Success") return result.success
          const error = result.failure
          if (!(error instanceof StorageError && error.reason === "UniqueViolation") || i >= CONFLICT_RETRIES) {
            return yield* Effect.fail(error)
          }
        }
      })

    // Runs `work` in a transaction together with the item's de-duplication key, unless the key was
    // handled already; `false` then.
    const once = <E>(key: string, work: Effect.Effect<void, E | StorageError>, source: InboundSource = "chatapp") =>
      withConflictRetry(transactor.withTransaction(Effect.gen(function*() {
        if (!(yield* store.markHandled(source, key, yield* now))) return false
        yield* work
        return true
      })))

    // Runs `steps` in order until one stops the chain.
    const untilStop = <E>(steps: ReadonlyArray<Effect.Effect<HandlerVerdict, E>>) =>
      Effect.gen(function*() {
        for (const step of steps) {
          if ((yield* step) === "stop") break
        }
      })

    // Runs message steps in order: a `stop` ends the chain; after a `consumed` (a keyword acted on the
    // message) only the steps of handlers that record messages run. Resolves to the indexes that ran.
    const runMessageSteps = (
      steps: ReadonlyArray<PreparedStep>,
      records: ReadonlyArray<boolean>
    ) =>
      Effect.gen(function*() {
        const ran: Array<number> = []
        let consumed = false
        for (let i = 0; i < steps.length; i++) {
          if (consumed && !records[i]) continue
          ran.push(i)
          const verdict = yield* steps[i]!.run
          if (verdict === "stop") break
          if (verdict === "consumed") consumed = true
        }
        return ran
      })

    const handleMessage = Effect.fnUntraced(function*(
      channel: InboundChannel,
      event: ChatappMessageEvent,
      attempt: number
    ) {
      // A redelivery of a message with a file is skipped before the download; the key inside the
      // transaction settles every other case (and races) without a look of its own.
      if (CHATAPP_MEDIA_TYPES.has(event.type) && (yield* store.wasHandled("chatapp", event.key))) return
      const input = { channel, event, attempt, lastAttempt: attempt >= settings.maxAttempts }
      const steps: Array<PreparedStep> = []
      let ran: ReadonlyArray<number> = []
      const outcome = yield* Effect.exit(Effect.gen(function*() {
        for (const handler of handlers.messages) steps.push(yield* handler.prepare(input))
        const records = handlers.messages.map((handler) => handler.records === true)
        const done = yield* once(event.key, Effect.map(runMessageSteps(steps, records), (indexes) => {
          ran = indexes
        }))
        if (!done) ran = []
      }))
      const committed = outcome._tag === "Success" ? new Set(ran) : new Set<number>()
      // Files of steps whose work did not commit (a duplicate, a stop, a skip, a failure) are removed.
      yield* Effect.forEach(steps.filter((_, i) => !committed.has(i)), (step) => step.discard, { discard: true })
      if (outcome._tag === "Failure") return yield* Effect.failCause(outcome.cause)
      // What the committed steps do only once their work is stored (a reply to the contact).
      for (const i of committed) {
        const after = steps[i]!.committed
        if (after !== undefined) yield* after
      }
    })

    const handleStatus = (channel: InboundChannel, event: ChatappStatusEvent) =>
      once(event.key, untilStop(handlers.statuses.map((handler) => handler.handle({ channel, event }))))

    const handleField = (event: ChatappFieldEvent) =>
      once(event.key, untilStop(fieldHandlers(event.field).map((handler) => handler.handle(event))))

    const handleEvent = Effect.fnUntraced(function*(
      event: ChatappEvent,
      attempt: number,
      notes: Array<string>,
      routes: Map<string, Option.Option<InboundChannel>>
    ) {
      if (event.kind === "field") {
        if (fieldHandlers(event.field).length === 0) {
          notes.push(`field ${event.field}: stored, no handler`)
          return
        }
        return yield* handleField(event)
      }
      // One look per number and payload: a batch names the same number again and again.
      let channel = routes.get(event.phoneNumberId)
      if (channel === undefined) {
        channel = yield* channels.routeChatapp(event.phoneNumberId)
        routes.set(event.phoneNumberId, channel)
      }
      if (Option.isNone(channel)) {
        notes.push(`phone_number_id ${event.phoneNumberId}: no active chat-app channel`)
        return
      }
      if (event.kind === "message") return yield* handleMessage(channel.value, event, attempt)
      return yield* handleStatus(channel.value, event)
    })

    // How a try ended: processed (with its notes), or retried with backoff until the last try fails it.
    const outcomeOf = (attempts: number, nowMs: number, retry: string | null, notes: string): InboundOutcome =>
      retry === null
        ? { status: "processed", note: notes === "" ? null : notes }
        : attempts >= settings.maxAttempts
        ? { status: "failed", note: retry }
        : { status: "pending", note: retry, nextAttemptAt: fromMillis(nowMs + retryDelaySeconds(attempts) * 1000) }

    // A received email is one item: the mail area de-duplicates, threads and stores it.
    const tryEmail = Effect.fnUntraced(function*(claim: InboundClaim) {
      const { payload } = claim
      const exit = yield* Effect.exit(email.received({
        payloadId: payload.id,
        integrationId: payload.route_key ?? "",
        openRaw: openReceivedEmail(blobs, payload),
        attempt: payload.attempts,
        lastAttempt: payload.attempts >= settings.maxAttempts,
        once: (key, work) => once(key, work, "email"),
        wasHandled: (key) => store.wasHandled("email", key)
      }))
      if (exit._tag === "Success") return { retry: null, notes: exit.value ?? "" }
      const error = Cause.findErrorOption(exit.cause)
      const reason = Option.isSome(error) ? error.value.message : `processing failed: ${Cause.pretty(exit.cause).split("\n")[0]}`
      yield* Effect.logWarning(`inbound email ${payload.id} not handled: ${reason}`)
      return { retry: `email: ${reason}`, notes: "" }
    })

    // Every event of the payload; the first that was not handled is what the payload is retried for.
    const tryOnce = Effect.fnUntraced(function*(claim: InboundClaim) {
      const { payload } = claim
      if (payload.source === "email") return yield* tryEmail(claim)
      const notes: Array<string> = []
      let retry: string | null = null
      const parsed = yield* parseChatappPayload(payload.body)
      notes.push(...parsed.notes)
      const routes = new Map<string, Option.Option<InboundChannel>>()
      for (const event of parsed.events) {
        const exit = yield* Effect.exit(handleEvent(event, payload.attempts, notes, routes))
        if (exit._tag === "Success") continue
        const error = Cause.findErrorOption(exit.cause)
        const reason = Option.isSome(error) && (error.value instanceof RetryLater || error.value instanceof StorageError)
          ? error.value.message
          : `processing failed: ${Cause.pretty(exit.cause).split("\n")[0]}`
        // The other events go on; the payload is taken again for the ones that failed (handled ones are skipped).
        retry ??= `${event.kind} ${event.key}: ${reason}`
        yield* Effect.logWarning(`inbound payload ${payload.id}: ${event.kind} ${event.key} not handled: ${reason}`)
      }
      if (notes.length > 0 && retry === null) {
        yield* Effect.logInfo(`inbound payload ${payload.id}: ${notes.join("; ")}`)
      }
      return { retry, notes: notes.join("; ") }
    })

    /**
     * One payload, whatever it holds: what is not handled is retried later, and a defect (a bug, a
     * body nobody foresaw) ends this payload's try, never the round or the payloads claimed with it.
     */
    const processOne = (claim: InboundClaim) =>
      Effect.gen(function*() {
        const exit = yield* Effect.exit(tryOnce(claim))
        if (exit._tag === "Failure") {
          yield* Effect.logError(`inbound payload ${claim.payload.id}: processing failed`, exit.cause)
        }
        const tried = exit._tag === "Success"
          ? exit.value
          : { retry: `processing failed: ${Cause.pretty(exit.cause).split("\n")[0]}`, notes: "" }
        const nowMs = yield* Clock.currentTimeMillis
        const outcome = outcomeOf(claim.payload.attempts, nowMs, tried.retry, tried.notes)
        // Counted once recorded: a try whose lease another worker took is that worker's to count.
        if (yield* store.finish(claim.payload.id, claim.holder, cleanNote(outcome), fromMillis(nowMs))) {
          yield* countInboundProcessed(claim.payload.source, outcome.status)
        }
      })

    const runDue: Effect.Effect<number, StorageError> = Effect.gen(function*() {
      const nowMs = yield* Clock.currentTimeMillis
      const claims = yield* store.claim({
        now: fromMillis(nowMs),
        limit: settings.batchSize,
        leaseUntil: fromMillis(nowMs + settings.leaseSeconds * 1000),
        holder: yield* newId
      })
      for (const claim of claims) {
        // A child of the span that stored the payload: one trace reads request → processing → events → deliveries.
        yield* processOne(claim).pipe(inJobSpan("InboundProcessor.process", {
          parent: parseTraceparent(claim.trace_context),
          attributes: { "inbound.source": claim.payload.source, "inbound.payload_id": claim.payload.id }
        }))
      }
      return claims.length
    }).pipe(Effect.withSpan("InboundProcessor.runDue"))

    return { name: "inbound", runDue, pollEveryMs: 50, wake: yield* InboundSignal } satisfies BackgroundJob
  })

