/**
 * The retention phase of the webhook benchmark: delivery throughput while the background job
 * `retention` prunes a large history, against the same run without a prune. Each run gets a fresh
 * database holding `rows` outbox events fanned out 60 days ago, each with one delivery that succeeded
 * then (seeded with batched inserts), and the library in this process posting to the benchmark's
 * receiver. With a 30-day retention the prune starts as the workers do and deletes every seeded row
 * (twice `rows`: deliveries, then events) while a burst is delivered; with 36,500 days it finds
 * nothing to delete, and the burst runs over the same tables alone.
 */
import { Effect } from "effect"
import { type Kysely, sql } from "kysely"
import { makeGuardedHttp } from "../adapters/http/GuardedHttp.ts"
import { type Database, type Dialect, layer, migrate } from "../adapters/kysely/KyselyStorage.ts"
import { nodeHmacSigner } from "../adapters/node/NodeHmacSigner.ts"
import { make } from "../src/app/Omnichannel.ts"
import { Notifier } from "../src/ports/Notifier.ts"
import { appendEvents, contactEvents, subscribe } from "./Engine.ts"
import { openPhaseDatabase } from "./PhaseDatabase.ts"
import { burst, type BurstResult, stamp, warmUp } from "./Load.ts"
import type { Receiver } from "./Receiver.ts"

/** What the phase borrows from the benchmark's run. */
export interface RetentionBench {
  readonly receiver: Receiver
  readonly ca: string
  readonly progress: (phase: string, message: string) => void
  readonly onCleanup: (step: () => Promise<void>) => () => Promise<void>
  readonly release: (step: () => Promise<void>) => Promise<void>
  /** A fresh PostgreSQL database, dropped at clean-up; undefined without a reachable server. */
  readonly freshPostgres: (() => Promise<{ readonly url: string; readonly drop: () => Promise<void> }>) | undefined
  /** Events in each measured burst, and in the warm-up before it. */
  readonly events: number
  readonly warmUp: number
  readonly idleMs: number
  /** Seeded old events (each with one old delivery). */
  readonly rows: number
  /** Runs of each kind per database (the better burst is kept): 1 in a quick run. */
  readonly rounds: number
}

/** One burst with or without the prune, and how far the prune had got. */
interface RetentionRun {
  readonly burst: BurstResult
  /** Seeded rows (deliveries plus events) left when the burst started and when it ended. */
  readonly leftAtStart: number
  readonly leftAtEnd: number
}

/** The figures of one database. */
export interface RetentionFigures {
  readonly database: string
  readonly without: RetentionRun
  readonly with: RetentionRun
}

const DAY_MS = 86_400_000
const SEED_BATCH = 1_000

/** The seeded history: `rows` events fanned out at `at`, each delivered (200) at the same instant. */
const seed = async (db: Kysely<Database>, dialect: Dialect, tenantId: string, endpointId: string, rows: number, at: string) => {
  const envelopes = Effect.runSync(contactEvents(tenantId, Math.min(rows, SEED_BATCH)))
  for (let done = 0; done < rows; done += SEED_BATCH) {
    const count = Math.min(SEED_BATCH, rows - done)
    await db.insertInto("outbox_events").values(envelopes.slice(0, count).map((e, i) => ({
      id: `${e.id.slice(0, 24)}${String(done + i).padStart(12, "0")}`,
      tenant_id: tenantId,
      type: e.type,
      event_id: `seed_${done + i}`,
      created_at: at,
      data: JSON.stringify(e.data),
      fanned_out_at: at
    }))).execute()
  }
  // One statement makes every event's delivery from the events themselves.
  const newId = dialect === "postgres" ? sql`gen_random_uuid()::text` : sql`lower(hex(randomblob(16)))`
  const envelope = JSON.stringify(envelopes[0])
  await sql`INSERT INTO webhook_deliveries (id, tenant_id, webhook_endpoint_id, event_id, event_type, envelope, outbox_seq,
      status, attempt_number, max_retries, retry_strategy, next_retry_at, completed_at, response_status_code,
      response_time_ms, error_message, previous_delivery_id, lease_expires_at, created_at)
    SELECT ${newId}, tenant_id, ${endpointId}, event_id, type, ${envelope}, seq,
      'success', 1, 8, 'exponential', NULL, ${at}, 200, 12, NULL, NULL, NULL, ${at}
    FROM outbox_events WHERE tenant_id = ${tenantId} AND fanned_out_at = ${at}`.execute(db)
  if (dialect === "postgres") await sql`ANALYZE`.execute(db)
}

/** Seeded rows still stored: deliveries completed and events fanned out at `at`. */
const leftOf = async (db: Kysely<Database>, at: string): Promise<number> => {
  const { rows } = await sql<{ n: number | string }>`SELECT
      (SELECT count(*) FROM webhook_deliveries WHERE completed_at IS NOT NULL AND completed_at = ${at})
    + (SELECT count(*) FROM outbox_events WHERE fanned_out_at IS NOT NULL AND fanned_out_at = ${at}) AS n`.execute(db)
  return Number(rows[0]!.n)
}

const runOnce = async (bench: RetentionBench, dialect: Dialect, prune: boolean): Promise<RetentionRun> => {
  const phase = `retention, ${dialect === "sqlite" ? "SQLite" : "PostgreSQL"}, ${prune ? "with" : "without"} a prune`
  const { db, dispose } = await openPhaseDatabase(dialect, bench.freshPostgres, "bench-retention-")
  const disposeDb = bench.onCleanup(dispose)
  await migrate(db, dialect)
  const outbound = makeGuardedHttp({ allow: ["127.0.0.1/32"], ca: bench.ca })
  const app = await make({
    storage: layer(db, dialect),
    outbound,
    signer: nodeHmacSigner,
    notifier: Notifier.of({ send: () => Effect.void }),
    // 30 days prunes the seeded 60-day-old history; 36,500 days keeps it, so the job finds nothing.
    retentionDays: prune ? 30 : 36_500
  })
  const closeApp = bench.onCleanup(async () => {
    await app.dispose()
    outbound.close()
  })
  const subscription = await subscribe(app, bench.receiver.url)
  const seededAt = new Date(Date.now() - 60 * DAY_MS).toISOString()
  const seedStarted = stamp()
  await seed(db, dialect, subscription.tenantId, subscription.endpointId, bench.rows, seededAt)
  bench.progress(phase, `seeded ${bench.rows} events and ${bench.rows} deliveries in ${((stamp() - seedStarted) / 1000).toFixed(1)} s`)

  const workers = app.startWorkers({ idleMs: bench.idleMs, onError: (job, error) => bench.progress(phase, `${job} failed: ${error}`) })
  const produce = (count: number) => appendEvents(app, subscription.tenantId, count)
  await warmUp(bench.receiver, produce, bench.warmUp)
  const leftAtStart = await leftOf(db, seededAt)
  const result = await burst(bench.receiver, produce, bench.events, () => undefined)
  const leftAtEnd = await leftOf(db, seededAt)
  bench.progress(
    phase,
    `${result.delivered}/${bench.events} in ${result.seconds.toFixed(1)} s = ${result.perSecond.toFixed(0)}/s; ` +
      `seeded rows left ${leftAtStart} → ${leftAtEnd}`
  )
  await workers.stop()
  await bench.release(closeApp)
  await bench.release(disposeDb)
  return { burst: result, leftAtStart, leftAtEnd }
}

const faster = (a: RetentionRun | undefined, b: RetentionRun): RetentionRun =>
  a === undefined || b.burst.perSecond > a.burst.perSecond ? b : a

/**
 * Runs the phase on SQLite and, when a server is reachable, PostgreSQL: bursts without and with the
 * prune, alternating (without, with, then with, without in a second round), keeping each kind's better burst.
 */
export const retentionPhase = async (bench: RetentionBench): Promise<ReadonlyArray<RetentionFigures>> => {
  const figures: Array<RetentionFigures> = []
  const dialects: ReadonlyArray<Dialect> = bench.freshPostgres === undefined ? ["sqlite"] : ["sqlite", "postgres"]
  for (const dialect of dialects) {
    let without: RetentionRun | undefined
    let withPrune: RetentionRun | undefined
    for (let round = 0; round < bench.rounds; round++) {
      for (const prune of round % 2 === 0 ? [false, true] : [true, false]) {
        const run = await runOnce(bench, dialect, prune)
        if (prune) withPrune = faster(withPrune, run)
        else without = faster(without, run)
      }
    }
    figures.push({ database: dialect === "sqlite" ? "SQLite, 1 process" : "PostgreSQL, 1 process", without: without!, with: withPrune! })
  }
  return figures
}

/** Prints the phase's figures: both rates, their ratio, and how far the prune got during the burst. */
export const printRetention = (bench: RetentionBench, figures: ReadonlyArray<RetentionFigures>): void => {
  console.log(
    `\nRetention — delivery throughput while the prune deletes ${bench.rows} old deliveries and their ${bench.rows} events ` +
      `(burst of ${bench.events} events, in-process workers; batches of 500, each followed by a rest of 9 × its own time)`
  )
  for (const f of figures) {
    const ratio = f.with.burst.perSecond / f.without.burst.perSecond
    console.log(
      `  ${f.database.padEnd(22)}  without ${f.without.burst.perSecond.toFixed(0).padStart(6)}/s  ` +
        `with ${f.with.burst.perSecond.toFixed(0).padStart(6)}/s  ratio ${ratio.toFixed(2)}  ` +
        `pruned during the burst ${f.with.leftAtStart - f.with.leftAtEnd} rows ` +
        `(${((f.with.leftAtStart - f.with.leftAtEnd) / f.with.burst.seconds).toFixed(0)}/s; ${f.with.leftAtEnd} of ${2 * bench.rows} left)`
    )
  }
}
