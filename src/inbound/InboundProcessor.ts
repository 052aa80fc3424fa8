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
  type ChatappMessageInput,
  type ChatappStatusEvent,
  type ChatappStatusInput,
  type HandlerVerdict,
  type InboundChannel,
  type PreparedStep,
  repeatableStatus,
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
// on a unique index, and PostgreSQL ends one of two transactions that wait for each other (a deadlock,
// `Unavailable` like a lost connection); the work is simply done again, finding what the winner made.
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
 * taken again, handled keys are skipped). A status every status handler handles again to the effect
 * of once (`repeatable`: forward-only moves) is handled without a key of its own.
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
          if (!(error instanceof StorageError && (error.reason === "UniqueViolation" || error.isRetryable)) || i >= CONFLICT_RETRIES) {
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

    // A status every handler handles again to the effect of once needs no key: a redelivery changes nothing.
    const handleStatus = (channel: InboundChannel, event: ChatappStatusEvent) => {
      const work = untilStop(handlers.statuses.map((handler) => handler.handle({ channel, event })))
      return repeatableStatus(handlers.statuses, { channel, event })
        ? withConflictRetry(transactor.withTransaction(Effect.as(work, true)))
        : once(event.key, work)
    }

    const handleField = (event: ChatappFieldEvent) =>
      once(event.key, untilStop(fieldHandlers(event.field).map((handler) => handler.handle(event))))

    // The channel of a number, looked up once per claim (a claim names the same number again and again).
    const routeOf = Effect.fnUntraced(function*(phoneNumberId: string, routes: Map<string, Option.Option<InboundChannel>>) {
      let channel = routes.get(phoneNumberId)
      if (channel === undefined) {
        channel = yield* channels.routeChatapp(phoneNumberId)
        routes.set(phoneNumberId, channel)
      }
      return channel
    })

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
      const channel = yield* routeOf(event.phoneNumberId, routes)
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

    // What became of one claimed payload's try so far: the first item not handled (what it is retried
    // for), and notes on what it held.
    interface Try {
      readonly claim: InboundClaim
      retry: string | null
      readonly notes: Array<string>
    }

    const reasonOf = (cause: Cause.Cause<unknown>) => {
      const error = Cause.findErrorOption(cause)
      return Option.isSome(error) && (error.value instanceof RetryLater || error.value instanceof StorageError)
        ? error.value.message
        : `processing failed: ${Cause.pretty(cause).split("\n")[0]}`
    }

    // A received email is one item: the mail area de-duplicates, threads and stores it.
    const tryEmail = Effect.fnUntraced(function*(t: Try) {
      const { payload } = t.claim
      const exit = yield* Effect.exit(email.received({
        payloadId: payload.id,
        integrationId: payload.route_key ?? "",
        openRaw: openReceivedEmail(blobs, payload),
        attempt: payload.attempts,
        lastAttempt: payload.attempts >= settings.maxAttempts,
        once: (key, work) => once(key, work, "email"),
        wasHandled: (key) => store.wasHandled("email", key)
      }))
      if (exit._tag === "Success") {
        if (exit.value) t.notes.push(exit.value)
        return
      }
      const error = Cause.findErrorOption(exit.cause)
      const reason = Option.isSome(error) ? error.value.message : `processing failed: ${Cause.pretty(exit.cause).split("\n")[0]}`
      yield* Effect.logWarning(`inbound email ${payload.id} not handled: ${reason}`)
      t.retry = `email: ${reason}`
    })

    // Statuses and messages the batch path takes: a message no handler but the recording ones wants,
    // with no file to fetch, when every recording handler has a batch form; a status when every status
    // handler has one. Anything else goes through the handlers one item at a time.
    const statusesInBatches = handlers.statuses.every((handler) => handler.handleMany !== undefined)
    const batchable = (event: ChatappMessageEvent | ChatappStatusEvent): boolean =>
      event.kind === "status"
        ? statusesInBatches
        : !CHATAPP_MEDIA_TYPES.has(event.type) &&
          handlers.messages.every((handler) =>
            handler.records === true ? handler.recordMany !== undefined : handler.wants !== undefined && !handler.wants(event)
          )

    // An item of the batch path, with the try of the payload it came in.
    interface Item {
      readonly t: Try
      readonly channel: InboundChannel
      readonly event: ChatappMessageEvent | ChatappStatusEvent
    }

    // A status every status handler handles again to the effect of once keeps no key of its own.
    const keyless = ({ channel, event }: Item): boolean => event.kind === "status" && repeatableStatus(handlers.statuses, { channel, event })

    // Stores a batch of items in one transaction: the first item of each key only, the keys of those
    // that need one in one statement (one handled before is skipped), then every status handler's
    // and recording handler's batch form over what is left, in the items' order.
    const storeBatch = (items: ReadonlyArray<Item>) =>
      transactor.withTransaction(Effect.gen(function*() {
        const firsts = new Map<string, Item>()
        for (const item of items) if (!firsts.has(item.event.key)) firsts.set(item.event.key, item)
        const free = new Set([...firsts.values()].filter(keyless))
        const keyed = [...firsts.values()].filter((item) => !free.has(item)).map(({ event }) => event.key)
        const fresh = keyed.length === 0 ? new Set<string>() : new Set(yield* store.markHandledMany("chatapp", keyed, yield* now))
        const todo = [...firsts.values()].filter((item) => free.has(item) || fresh.has(item.event.key))
        const messages: Array<ChatappMessageInput> = []
        const statuses: Array<ChatappStatusInput> = []
        for (const { channel, event, t } of todo) {
          if (event.kind === "status") statuses.push({ channel, event })
          else {
            const attempt = t.claim.payload.attempts
            messages.push({ channel, event, attempt, lastAttempt: attempt >= settings.maxAttempts })
          }
        }
        // Statuses last: they hold the messages they move (`findByExternalIds` with `hold`), the rows
        // another worker's batch waits for most (a message's statuses come in neighbouring payloads), so
        // those are held for the shortest time; the messages' part ends with the conversations' times,
        // the rows waited for next.
        if (messages.length > 0) {
          for (const handler of handlers.messages) if (handler.records === true) yield* handler.recordMany!(messages)
        }
        if (statuses.length > 0) for (const handler of handlers.statuses) yield* handler.handleMany!(statuses)
      }))

    // One item through its handlers on its own (its own transaction); what fails is its payload's retry.
    const handleAlone = Effect.fnUntraced(function*(t: Try, event: ChatappEvent, routes: Map<string, Option.Option<InboundChannel>>) {
      const exit = yield* Effect.exit(handleEvent(event, t.claim.payload.attempts, t.notes, routes))
      if (exit._tag === "Success") return
      const reason = reasonOf(exit.cause)
      // The other items go on; the payload is taken again for the ones that failed (handled ones are skipped).
      t.retry ??= `${event.kind} ${event.key}: ${reason}`
      yield* Effect.logWarning(`inbound payload ${t.claim.payload.id}: ${event.kind} ${event.key} not handled: ${reason}`)
    })

    // The batch in one transaction; if it fails (a payload nobody foresaw, a bug), each item alone, so
    // one that keeps failing holds none of the others back.
    const flush = Effect.fnUntraced(function*(items: Array<Item>, routes: Map<string, Option.Option<InboundChannel>>) {
      if (items.length === 0) return
      const batch = items.splice(0)
      const exit = yield* Effect.exit(withConflictRetry(storeBatch(batch)))
      if (exit._tag === "Success") return
      yield* Effect.logWarning(`inbound batch of ${batch.length} items not stored (${reasonOf(exit.cause)}): each item on its own`)
      for (const { event, t } of batch) yield* handleAlone(t, event, routes)
    })

    // The chat-app payloads' items in order: runs of batchable ones stored together, any other item
    // (a keyword, a flow's answer, a file, a field change) on its own between them.
    const tryChatapp = Effect.fnUntraced(function*(tries: ReadonlyArray<Try>) {
      // One look per number and claim: a claim names the same number again and again.
      const routes = new Map<string, Option.Option<InboundChannel>>()
      const pending: Array<Item> = []
      for (const t of tries) {
        // A defect reading one payload ends that payload's try, never the claim's.
        const read = yield* Effect.exit(parseChatappPayload(t.claim.payload.body))
        if (read._tag === "Failure") {
          yield* Effect.logError(`inbound payload ${t.claim.payload.id}: processing failed`, read.cause)
          t.retry = reasonOf(read.cause)
          continue
        }
        const parsed = read.value
        t.notes.push(...parsed.notes)
        for (const event of parsed.events) {
          if (event.kind !== "field") {
            const channel = yield* Effect.exit(routeOf(event.phoneNumberId, routes))
            if (channel._tag === "Failure") {
              t.retry ??= `${event.kind} ${event.key}: ${reasonOf(channel.cause)}`
              continue
            }
            if (Option.isNone(channel.value)) {
              t.notes.push(`phone_number_id ${event.phoneNumberId}: no active chat-app channel`)
              continue
            }
            if (batchable(event)) {
              pending.push({ t, channel: channel.value.value, event })
              continue
            }
          }
          yield* flush(pending, routes)
          yield* handleAlone(t, event, routes)
        }
      }
      yield* flush(pending, routes)
    })

    // Every claimed payload tried, then every try recorded in one statement.
    const processClaims = Effect.fnUntraced(function*(claims: ReadonlyArray<InboundClaim>) {
      const tries: Array<Try> = claims.map((claim) => ({ claim, retry: null, notes: [] }))
      const chatapp = tries.filter((t) => t.claim.payload.source !== "email")
      // A defect (a bug, a body nobody foresaw) ends the claim's processing, never the loop: each
      // payload not finished is retried for it.
      const exit = yield* Effect.exit(Effect.andThen(
        Effect.forEach(tries.filter((t) => t.claim.payload.source === "email"), tryEmail, { discard: true }),
        tryChatapp(chatapp)
      ))
      if (exit._tag === "Failure") {
        yield* Effect.logError("inbound processing failed", exit.cause)
        for (const t of tries) t.retry ??= `processing failed: ${Cause.pretty(exit.cause).split("\n")[0]}`
      }
      const nowMs = yield* Clock.currentTimeMillis
      for (const t of tries) {
        if (t.notes.length > 0 && t.retry === null) yield* Effect.logInfo(`inbound payload ${t.claim.payload.id}: ${t.notes.join("; ")}`)
      }
      const outcomes = tries.map((t) => ({
        t,
        outcome: cleanNote(outcomeOf(t.claim.payload.attempts, nowMs, t.retry, t.notes.join("; ")))
      }))
      const finished = yield* store.finishMany(
        outcomes.map(({ outcome, t }) => ({ id: t.claim.payload.id, holder: t.claim.holder, outcome })),
        fromMillis(nowMs)
      )
      // Counted once recorded: a try whose lease another worker took is that worker's to count.
      for (const { outcome, t } of outcomes) {
        if (finished.has(t.claim.payload.id)) yield* countInboundProcessed(t.claim.payload.source, outcome.status)
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
      if (claims.length === 0) return 0
      // One span per claim: a child of the span that stored its first payload (one trace reads request
      // → processing → events → deliveries), linked to those of the others.
      yield* processClaims(claims).pipe(inJobSpan("InboundProcessor.process", {
        parent: parseTraceparent(claims[0]!.trace_context),
        causes: claims.slice(1).map((claim) => parseTraceparent(claim.trace_context)),
        attributes: {
          "inbound.source": [...new Set(claims.map((claim) => claim.payload.source))].join(","),
          "inbound.payloads": claims.length,
          ...(claims.length === 1 ? { "inbound.payload_id": claims[0]!.payload.id } : {})
        }
      }))
      return claims.length
    }).pipe(Effect.withSpan("InboundProcessor.runDue"))

    return { name: "inbound", runDue, pollEveryMs: 50, wake: yield* InboundSignal } satisfies BackgroundJob
  })

