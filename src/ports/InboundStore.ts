import { Context, type Effect } from "effect"
import type { StorageError } from "./StorageError.ts"

/** Where an inbound payload came from. */
export type InboundSource = "chatapp" | "email"

/** Where a stored payload stands: waiting (or retrying), handled, or given up on after its last try. */
export type InboundPayloadStatus = "pending" | "processed" | "failed"

/**
 * One request from outside as received, kept with its raw bytes before it is answered, so nothing
 * is lost on a crash and a parser fix can re-run it. Payloads carry no tenant until they are parsed,
 * so the claim is a named cross-tenant read, like the webhook engine's claims.
 */
export interface InboundPayloadRecord {
  readonly id: string
  readonly source: InboundSource
  /** For `email`: the integration it was posted to; null for `chatapp`. */
  readonly route_key: string | null
  /**
   * The body exactly as received; empty for a received email, whose bytes are streamed into the
   * blob store under a key made from the payload's id (an email stored before that keeps them here).
   */
  readonly body: Uint8Array
  readonly content_type: string | null
  readonly received_at: string
  readonly status: InboundPayloadStatus
  /** Processing tries so far. */
  readonly attempts: number
  /** When a pending payload may next be taken. */
  readonly next_attempt_at: string
  /** Until when the worker that took it holds it; null when nobody does. */
  readonly lease_until: string | null
  readonly processed_at: string | null
  /** What went wrong on the last try, or what the processor noted (an unknown number, an odd field). */
  readonly note: string | null
}

/**
 * A claimed payload: the record, the holder token that must be shown to finish it, and the W3C
 * `traceparent` of the span that stored it (null when tracing was off), which its processing continues.
 */
export interface InboundClaim {
  readonly payload: InboundPayloadRecord
  readonly holder: string
  readonly trace_context: string | null
}

/** A payload to store, with the W3C `traceparent` of the span that received it (null when tracing was off). */
export interface PayloadToStore {
  readonly payload: InboundPayloadRecord
  readonly traceContext: string | null
}

/** A payload the retention prune deleted. */
export interface PrunedPayload {
  readonly id: string
  readonly source: InboundSource
}

/** How a try on a payload ended. */
export type InboundOutcome =
  | { readonly status: "processed"; readonly note: string | null }
  | { readonly status: "failed"; readonly note: string }
  | { readonly status: "pending"; readonly note: string; readonly nextAttemptAt: string }

/** Raw inbound payloads, their processing leases, and the keys of what was already handled. */
export class InboundStore extends Context.Service<InboundStore, {
  /**
   * Stores a payload as received (status `pending`, due at `next_attempt_at`), with the trace context
   * of the current span when a tracer is installed (`currentTraceparent`).
   */
  readonly insert: (payload: InboundPayloadRecord) => Effect.Effect<void, StorageError>
  /**
   * Stores several payloads as `insert` does, all or none, in one commit: the edge gathers the
   * payloads that arrive together, so a burst pays for one durable write rather than one each. Each
   * keeps the trace context given with it (its request's, not the one of the fiber that writes).
   */
  readonly insertMany: (payloads: ReadonlyArray<PayloadToStore>) => Effect.Effect<void, StorageError>
  /**
   * How many `insertMany` calls the edge may have under way at once (default 1). More than one pays
   * where a write waits on a durable commit while other connections could write meanwhile
   * (PostgreSQL); where writers take turns anyway (SQLite), one gathers the most into each write.
   */
  readonly insertsAtOnce?: number
  /**
   * Leases up to `limit` pending payloads due at `now` whose lease (if any) has passed, oldest first,
   * until `leaseUntil`, counting the try. Concurrent claimers never take the same payload.
   */
  readonly claim: (input: {
    readonly now: string
    readonly limit: number
    readonly leaseUntil: string
    readonly holder: string
  }) => Effect.Effect<ReadonlyArray<InboundClaim>, StorageError>
  /** Records how a try ended and drops the lease; `false` when `holder` no longer held it. */
  readonly finish: (
    id: string,
    holder: string,
    outcome: InboundOutcome,
    at: string
  ) => Effect.Effect<boolean, StorageError>
  /**
   * Records that the inbound item `key` of `source` (a message id, a message id and status, …) was
   * handled; `false` when it already was. Called in the transaction that handles the item, so
   * the item's effects and its key commit together: a redelivered item has the effect of one.
   */
  readonly markHandled: (source: InboundSource, key: string, at: string) => Effect.Effect<boolean, StorageError>
  /**
   * The batch form of `markHandled`: records every key of `keys` not handled yet, and resolves to
   * those (a key given twice counts once; one another transaction recorded first is not among them).
   */
  readonly markHandledMany: (
    source: InboundSource,
    keys: ReadonlyArray<string>,
    at: string
  ) => Effect.Effect<ReadonlySet<string>, StorageError>
  /**
   * The batch form of `finish`: records how each try ended, in one statement, and resolves to the ids
   * whose holder still held them (the others are another worker's now, and unchanged).
   */
  readonly finishMany: (
    tries: ReadonlyArray<{ readonly id: string; readonly holder: string; readonly outcome: InboundOutcome }>,
    at: string
  ) => Effect.Effect<ReadonlySet<string>, StorageError>
  /** Whether `key` of `source` was handled already (a look before costly work such as a media download). */
  readonly wasHandled: (source: InboundSource, key: string) => Effect.Effect<boolean, StorageError>
  /**
   * Retention, a named maintenance step across payloads like `claim`: deletes up to `limit` payloads
   * `processed` or `failed` before `before` (by `processed_at`), oldest first, and resolves to the
   * ones it deleted (so what is kept beside them, a received email's bytes, can go too). Pending
   * payloads and leased ones are never deleted; the keys of handled items stay. Several pruners at
   * once take disjoint rows (PostgreSQL skips rows another holds).
   */
  readonly pruneFinished: (before: string, limit: number) => Effect.Effect<ReadonlyArray<PrunedPayload>, StorageError>
}>()("omnichannel-core/ports/InboundStore") {}
