import { Context, type Effect } from "effect"
import type { RetryLater } from "./ChatappEvents.ts"
import type { StorageError } from "./StorageError.ts"

/** A received email as the inbound pipeline stored it, handed to the area that handles mail. */
export interface ReceivedEmailInput {
  /** The stored payload's id. */
  readonly payloadId: string
  /** The integration (mailbox) it was posted to. */
  readonly integrationId: string
  /**
   * Opens the RFC 5322 bytes exactly as received, as a stream, anew at each call (they are read
   * more than once); fails with `RetryLater` when they cannot be read now.
   */
  readonly openRaw: Effect.Effect<ReadableStream<Uint8Array>, RetryLater>
  /** Tries so far, this one included. */
  readonly attempt: number
  /** This is the last try: whatever cannot be had now is given up on (and noted). */
  readonly lastAttempt: boolean
  /**
   * Runs `work` in one transaction together with the de-duplication key `key`, unless that key was
   * handled already (then `false`): a redelivered email has the effect of one.
   */
  readonly once: <E>(key: string, work: Effect.Effect<void, E | StorageError>) => Effect.Effect<boolean, E | StorageError>
  /** Whether `key` was handled already: a look before costly work (writing files). */
  readonly wasHandled: (key: string) => Effect.Effect<boolean, StorageError>
}

/**
 * The handler of received email, registered by the area that stores mail: the inbound pipeline
 * knows no area. It de-duplicates, threads and stores in its own transactions; it resolves to a
 * note on what it did not store (an unknown mailbox, a file it had to drop), or null.
 */
export class EmailHandlers extends Context.Service<EmailHandlers, {
  readonly received: (input: ReceivedEmailInput) => Effect.Effect<string | null, RetryLater | StorageError>
}>()("omnichannel-core/kernel/EmailHandlers") {}
