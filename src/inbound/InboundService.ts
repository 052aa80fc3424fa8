import { Cause, Context, Effect, Exit, Layer, Option } from "effect"
import type { LimitedBody, PayloadTooLarge } from "../http/RequestBody.ts"
import { BadRequest } from "../kernel/ApiError.ts"
import { newTimeOrderedId, timeOrderedIdAt } from "../kernel/Id.ts"
import { constantTimeEqual } from "../kernel/Secret.ts"
import { InboundSignal } from "../kernel/WorkSignal.ts"
import type { StorageError } from "../kernel/StorageError.ts"
import { fromMillis, now } from "../kernel/Timestamp.ts"
import { currentTraceparent } from "../kernel/TraceContext.ts"
import { EmailService } from "../email/EmailService.ts"
import { BlobStore, type BlobStoreError } from "../ports/BlobStore.ts"
import { HmacSigner } from "../ports/HmacSigner.ts"
import { InboundStore, type PayloadToStore } from "../ports/InboundStore.ts"
import { ChatappWebhookSettings } from "./ChatappWebhookSettings.ts"
import { verifyHubSignature, verifyHubSignatureNow } from "./HubSignature.ts"
import { receivedEmailKey } from "./ReceivedEmailBlobs.ts"

/** Most payloads one gathered write stores. */
const GATHER_MAX_ROWS = 128

/** About the most body bytes one gathered write stores (a single larger payload still goes, alone). */
const GATHER_MAX_BYTES = 8 * 1024 * 1024

/**
 * Runs `f` once the requests whose bytes came in the same turn of the event loop had their turn:
 * `setImmediate` where the runtime has it (Node, Bun, Deno), a zero timeout elsewhere.
 */
const afterThisTurn: (f: () => void) => void = typeof globalThis.setImmediate === "function"
  ? (f) => void globalThis.setImmediate(f)
  : (f) => void setTimeout(f, 0)

/**
 * Group commit of payload rows. The payloads that arrive in one turn of the event loop go in one
 * write at its end, and those arriving while a write is under way go together in the next (up to
 * `GATHER_MAX_ROWS` rows and `GATHER_MAX_BYTES` of bodies each). A burst so pays one durable commit
 * per write rather than one per payload, and does not queue a statement per payload behind a
 * worker's transaction; a lone payload waits for nothing but the end of its turn. Without that wait
 * SQLite would gather nothing: its writes finish before the event loop reads the next request. Up to
 * `atOnce` writes may be under way (the store's `insertsAtOnce`): on PostgreSQL a second one goes in
 * while the first waits on its commit, instead of after it.
 * `write` stores its rows all or none, so each caller resumes with the outcome of the write that
 * held its row: done once the row is committed, failed when it was not.
 */
const gatherWrites = (write: (rows: ReadonlyArray<PayloadToStore>) => Effect.Effect<void, StorageError>, atOnce = 1) => {
  const waiting: Array<{ readonly row: PayloadToStore; readonly resume: (exit: Exit.Exit<void, StorageError>) => void }> = []
  // Writes under way; while `atOnce` are, a payload arriving waits for one of them to end.
  let writing = 0
  // Whether a write is due at the end of this turn.
  let due = false
  const writeNext = (): void => {
    if (waiting.length === 0) return
    writing += 1
    let rows = 0
    let bytes = 0
    for (; rows < waiting.length && rows < GATHER_MAX_ROWS; rows++) {
      bytes += waiting[rows]!.row.payload.body.byteLength
      if (rows > 0 && bytes > GATHER_MAX_BYTES) break
    }
    const batch = waiting.splice(0, rows)
    Effect.runCallback(Effect.suspend(() => write(batch.map((waiter) => waiter.row))), {
      onExit: (exit) => {
        writing -= 1
        // The next write starts before these callers are answered: its commit overlaps their answers.
        writeNext()
        for (const waiter of batch) waiter.resume(exit)
      }
    })
  }
  // At the end of the turn, the rows gathered go in a write if fewer than `atOnce` are under way;
  // otherwise they wait for the first to end.
  const endOfTurn = (): void => {
    due = false
    if (writing < atOnce) writeNext()
  }
  /** Queues `row` for the next write; `resume` is called once with that write's outcome. */
  const push = (row: PayloadToStore, resume: (exit: Exit.Exit<void, StorageError>) => void): void => {
    waiting.push({ row, resume })
    if (!due && writing < atOnce) {
      due = true
      afterThisTurn(endOfTurn)
    }
  }
  return {
    push,
    insert: (row: PayloadToStore): Effect.Effect<void, StorageError> => Effect.callback<void, StorageError>((resume) => push(row, resume))
  }
}

/** A payload row as the edge stores it: pending, due at once (the benchmarks seed rows with it too). */
export const pendingRow = (
  id: string,
  source: "chatapp" | "email",
  routeKey: string | null,
  body: Uint8Array,
  contentType: string | null,
  at: string,
  traceContext: string | null
): PayloadToStore => ({
  payload: {
    id,
    source,
    route_key: routeKey,
    body,
    content_type: contentType,
    received_at: at,
    status: "pending",
    attempts: 0,
    next_attempt_at: at,
    lease_until: null,
    processed_at: null,
    note: null
  },
  traceContext
})

/** How a `POST /webhooks/chatapp` ended: stored (answer 200) or refused for its signature (401). */
export type ReceiveOutcome = { readonly stored: true; readonly id: string } | { readonly stored: false }

/** The edge of inbound traffic: checks what arrives and keeps it, durably, before it is answered. */
export class InboundService extends Context.Service<InboundService, {
  /**
   * Checks the signature over `body` exactly as received and stores the payload for background
   * processing. A bad or missing signature stores nothing.
   */
  readonly receiveChatapp: (
    body: Uint8Array<ArrayBuffer>,
    signature: string | null,
    contentType: string | null
  ) => Effect.Effect<ReceiveOutcome, StorageError>
  /**
   * `receiveChatapp` without the Effect runtime, for a server's direct route (`DirectRoute`): the
   * signature checked on the calling thread, the row queued for the same gathered write, received at
   * `atMillis` (the caller's clock) with no trace context (direct routes serve only with tracing
   * off). Resolves once the row is committed; rejects with the `StorageError` when it was not.
   * Undefined when the signer cannot verify on the calling thread (no `verifyNow`).
   */
  readonly receiveChatappNow:
    | ((body: Uint8Array, signature: string | null, contentType: string | null, atMillis: number) => Promise<ReceiveOutcome>)
    | undefined
  /** Whether `authorization` opens the inbound route of email integration `integrationId` (checked before a body is read). */
  readonly authenticateEmail: (integrationId: string, authorization: string | null) => Effect.Effect<boolean, StorageError>
  /**
   * Checks the inbound secret of email integration `integrationId` (`Authorization: Bearer …`) and
   * stores the received email for background processing: its bytes streamed into the blob store as
   * they arrive (`receivedEmailKey`), then its payload row. A wrong secret, or an unknown or
   * disabled integration, stores nothing (and says no more than that); so does a body past its
   * limit, one that broke off, or an empty one (`BadRequest`).
   */
  readonly receiveEmail: (
    integrationId: string,
    authorization: string | null,
    body: LimitedBody,
    contentType: string | null
  ) => Effect.Effect<ReceiveOutcome, StorageError | BlobStoreError | PayloadTooLarge | BadRequest>
  /** The answer to the operator's subscription handshake: the challenge when mode and token match. */
  readonly handshake: (query: URLSearchParams) => Option.Option<string>
}>()("omnichannel-core/inbound/InboundService") {
  static readonly layer = Layer.effect(
    InboundService,
    Effect.gen(function*() {
      const store = yield* InboundStore
      const settings = yield* ChatappWebhookSettings
      const email = yield* EmailService
      const signal = yield* InboundSignal
      const blobs = yield* BlobStore
      const signer = yield* HmacSigner
      // Payloads arriving together are stored together (see `gatherWrites`).
      const writes = gatherWrites(store.insertMany, store.insertsAtOnce)
      const keep = Effect.fnUntraced(function*(
        id: string,
        source: "chatapp" | "email",
        routeKey: string | null,
        body: Uint8Array,
        contentType: string | null
      ) {
        const at = yield* now
        // Each payload keeps the trace context of its own request, whichever write stores it.
        const trace = yield* currentTraceparent
        yield* writes.insert(pendingRow(id, source, routeKey, body, contentType, at, trace ?? null))
        // A worker of this process waiting for work starts on it now.
        signal.notify()
        return { stored: true, id } as const
      })
      const verifyNow = signer.verifyNow
      const receiveChatappNow = verifyNow === undefined ? undefined : (
        body: Uint8Array,
        signature: string | null,
        contentType: string | null,
        atMillis: number
      ): Promise<ReceiveOutcome> => {
        if (!verifyHubSignatureNow(settings.appSecret, signature, body, verifyNow)) return Promise.resolve({ stored: false })
        const id = timeOrderedIdAt(atMillis)
        return new Promise((resolve, reject) =>
          writes.push(pendingRow(id, "chatapp", null, body, contentType, fromMillis(atMillis), null), (exit) => {
            if (Exit.isFailure(exit)) return reject(Cause.squash(exit.cause))
            signal.notify()
            resolve({ stored: true, id })
          })
        )
      }
      return InboundService.of({
        // Every operator webhook passes here: its span takes no stack trace (`Effect.fn` takes one per call).
        receiveChatapp: Effect.fnUntraced(function*(body, signature, contentType) {
          if (!(yield* verifyHubSignature(settings.appSecret, signature, body, signer))) return { stored: false } as const
          return yield* keep(yield* newTimeOrderedId, "chatapp", null, body, contentType)
        }, Effect.withSpan("InboundService.receiveChatapp", undefined, { captureStackTrace: false })),
        authenticateEmail: (integrationId, authorization) => email.authenticateInbound(integrationId, authorization),
        receiveEmail: Effect.fn("InboundService.receiveEmail")(function*(integrationId, authorization, body, contentType) {
          if (!(yield* email.authenticateInbound(integrationId, authorization))) {
            yield* Effect.promise(() => body.stream.cancel().catch(() => undefined))
            return { stored: false } as const
          }
          const id = yield* newTimeOrderedId
          const key = receivedEmailKey(id)
          const remove = blobs.delete(key).pipe(Effect.ignore)
          // A put is atomic: a body cut off or past its limit leaves nothing behind.
          const written = yield* Effect.result(blobs.put(key, body.stream))
          if (written._tag === "Failure") return yield* Effect.fail(body.failure() ?? written.failure)
          if (written.success.size === 0) {
            yield* remove
            return yield* new BadRequest({ message: "The email is empty" })
          }
          // The row holds no body: the processor reads the bytes from the blob store.
          return yield* keep(id, "email", integrationId.toLowerCase(), new Uint8Array(0), contentType).pipe(
            Effect.tapError(() => remove)
          )
        }),
        receiveChatappNow,
        handshake: (query) => {
          const token = query.get("hub.verify_token") ?? ""
          const challenge = query.get("hub.challenge")
          return query.get("hub.mode") === "subscribe" && challenge !== null &&
              constantTimeEqual(token, settings.verifyToken)
            ? Option.some(challenge)
            : Option.none()
        }
      })
    })
  )
}
