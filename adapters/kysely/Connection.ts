import { Context, Effect, Exit, Layer } from "effect"
import { type ControlledTransaction, type RawBuilder, sql } from "kysely"
import { StorageError } from "../../src/ports/StorageError.ts"
import { Transactor } from "../../src/ports/Transactor.ts"
import { type Database, type Db, UNIQUE_INDEXES } from "./Database.ts"
import type { Dialect } from "./Migrations.ts"

/** The Kysely instance the stores use, and which dialect it speaks. */
export class KyselyConnection extends Context.Service<KyselyConnection, {
  readonly db: Db
  readonly dialect: Dialect
}>()("omnichannel-core/adapters/kysely/KyselyConnection") {}

// The open transaction of the running use case, if any; stores use it instead of the root handle.
const CurrentTransaction = Context.Reference<ControlledTransaction<Database> | undefined>(
  "omnichannel-core/adapters/kysely/CurrentTransaction",
  { defaultValue: () => undefined }
)

/** A driver error as a `StorageError`: unique violations named alike on both dialects. */
export const toStorageError = (error: unknown): StorageError => {
  const e = error as { code?: unknown; constraint?: unknown; message?: unknown }
  const message = typeof e?.message === "string" ? e.message : String(error)
  // PostgreSQL: SQLSTATE 23505 with the index name; SQLite: a message naming the columns.
  if (e?.code === "23505") {
    return new StorageError({
      reason: "UniqueViolation",
      message,
      constraint: typeof e.constraint === "string" ? e.constraint : undefined,
      cause: error
    })
  }
  if (e?.code === "SQLITE_CONSTRAINT_UNIQUE" || e?.code === "SQLITE_CONSTRAINT_PRIMARYKEY") {
    const columns = /constraint failed: (.*)$/.exec(message)?.[1]?.split(",").map((c) => c.trim()) ?? []
    const table = columns[0]?.split(".")[0]
    const names = columns.map((c) => c.split(".")[1])
    const index = UNIQUE_INDEXES.find((i) => i.table === table && i.columns.join(",") === names.join(","))
    return new StorageError({ reason: "UniqueViolation", message, constraint: index?.name, cause: error })
  }
  // Connection-level failures (refused, reset, pool timeouts, SQLite busy) may pass on a retry.
  const unavailable = typeof e?.code === "string" &&
    (/^(ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|SQLITE_BUSY|SQLITE_LOCKED)/.test(e.code) || /^08/.test(e.code) ||
      e.code === "57P01" || e.code === "40001" || e.code === "40P01")
  return new StorageError({ reason: unavailable ? "Unavailable" : "Unknown", message, cause: error })
}

/**
 * The claim condition of an UPDATE that leases rows: `column` is one of the keys `keys` selects (a
 * subquery picking the rows and, with `skipLocked`, locking them; raw SQL, which is not put in
 * parentheses). PostgreSQL gets `= ANY(ARRAY(…))`, which it always answers through the key's index; with
 * `IN (…)` its planner may hash the picked keys and scan the whole table instead, so every claim would
 * cost more as the table grows (the outbox keeps every event).
 */
export const amongKeys = (dialect: Dialect, column: string, keys: RawBuilder<unknown>) =>
  dialect === "postgres" ? sql<boolean>`${sql.ref(column)} = ANY(ARRAY(${keys}))` : sql<boolean>`${sql.ref(column)} IN (${keys})`

/**
 * The end of a claim's picking subquery: on PostgreSQL concurrent claimers skip each other's rows
 * instead of waiting or doubling up; SQLite has one writer at a time anyway.
 */
export const skipLocked = (dialect: Dialect) => (dialect === "postgres" ? sql` FOR UPDATE SKIP LOCKED` : sql``)

/**
 * The order rows of `inbound_payloads` and `messages` were stored in: their `seq` column on PostgreSQL,
 * the implicit `rowid` on SQLite (see migration 0008). Timestamps alone tie when the clock stands still.
 */
export const insertionOrder = (dialect: Dialect) => (dialect === "postgres" ? sql.ref("seq") : sql`rowid`)

/** Runs one query on the current transaction, or on the root handle outside one. */
export const query = <A>(
  connection: KyselyConnection["Service"],
  run: (db: Db) => Promise<A>
): Effect.Effect<A, StorageError> =>
  Effect.flatMap(CurrentTransaction, (trx) =>
    Effect.tryPromise({ try: () => run(trx ?? connection.db), catch: toStorageError }))

/**
 * Runs `run` as one atomic unit: on the current transaction if there is one (it commits or rolls back
 * with it), in a transaction of its own otherwise.
 */
export const atomically = <A>(
  connection: KyselyConnection["Service"],
  run: (db: Db) => Promise<A>
): Effect.Effect<A, StorageError> =>
  Effect.flatMap(CurrentTransaction, (trx) =>
    Effect.tryPromise({
      try: () => trx !== undefined ? run(trx) : connection.db.transaction().execute(run),
      catch: toStorageError
    }))

/** The `Transactor` port over Kysely's controlled transactions; nested calls join the outer one. */
export const transactorLayer: Layer.Layer<Transactor, never, KyselyConnection> = Layer.effect(
  Transactor,
  Effect.gen(function*() {
    const connection = yield* KyselyConnection
    return Transactor.of({
      withTransaction: (effect) =>
        Effect.flatMap(CurrentTransaction, (outer) =>
          outer !== undefined
            ? effect
            : Effect.acquireUseRelease(
              Effect.tryPromise({ try: () => connection.db.startTransaction().execute(), catch: toStorageError }),
              (trx) => Effect.provideService(effect, CurrentTransaction, trx),
              (trx, exit) =>
                Effect.tryPromise({
                  try: () => Exit.isSuccess(exit) ? trx.commit().execute() : trx.rollback().execute(),
                  catch: toStorageError
                }).pipe(Effect.orDie)
            ))
    })
  })
)
