import { Context, type Effect } from "effect"
import type { StorageError } from "./StorageError.ts"

/**
 * Runs a use case in one storage transaction: its rows and its outbox events commit together,
 * or neither does. A failure or interruption rolls back; nested calls join the outer transaction.
 */
export class Transactor extends Context.Service<Transactor, {
  readonly withTransaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | StorageError, R>
}>()("omnichannel-core/ports/Transactor") {}
