import { Effect } from "effect"
import { sql } from "kysely"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { KyselyConnection, query } from "../../adapters/kysely/Connection.ts"
import { layer, migrate, openPostgres } from "../../adapters/kysely/KyselyStorage.ts"
import { ConversationStore } from "../../src/ports/ConversationStore.ts"
import { type MessageRecord, MessageStore } from "../../src/ports/MessageStore.ts"
import type { StoragePorts } from "../../src/ports/StoragePorts.ts"
import { Transactor } from "../../src/ports/Transactor.ts"
import { createPostgresDatabase, PG_URL } from "../support/Databases.ts"
import { conversationRecord, messageRecord, seedTenant } from "./Fixtures.ts"

// PostgreSQL writes a new entry in every index of a row when an indexed column, or one an index's
// predicate names, changes; otherwise it may update the row in place on its page (a heap-only
// update), leaving the indexes alone. A message takes three status moves after its send settles:
// they must be heap-only. PostgreSQL's per-transaction statistics count both kinds of update.
describe.skipIf(PG_URL === undefined)("PostgreSQL moves a message's status in place (needs PG_URL)", () => {
  let close: () => Promise<void>
  let run: <A, E>(effect: Effect.Effect<A, E, StoragePorts>) => Promise<A>
  let connection: KyselyConnection["Service"]
  let tenantId: string
  const AT = "2026-12-08T01:00:00.000Z"

  beforeAll(async () => {
    const created = await createPostgresDatabase(PG_URL!)
    const db = openPostgres(created.url, { max: 1 })
    await migrate(db, "postgres")
    const storage = layer(db, "postgres")
    connection = KyselyConnection.of({ db, dialect: "postgres" })
    run = (effect) => Effect.runPromise(Effect.provide(effect, storage))
    close = async () => {
      await db.destroy()
      await created.drop()
    }
    tenantId = (await run(seedTenant)).tenant.id
  })
  afterAll(() => close?.())

  /** Runs `work` in a transaction and counts its updates of `messages`: all of them, and the heap-only ones. */
  const updatesOf = <A, E>(work: Effect.Effect<A, E, StoragePorts>) => {
    const counts = Effect.map(
      query(connection, (trx) =>
        sql<{ updates: string; in_place: string }>`SELECT n_tup_upd AS updates, n_tup_hot_upd AS in_place
          FROM pg_stat_xact_user_tables WHERE relname = 'messages'`.execute(trx)),
      ({ rows }) => ({ updates: Number(rows[0]!.updates), inPlace: Number(rows[0]!.in_place) })
    )
    return run(Transactor.use((transactor) =>
      transactor.withTransaction(Effect.gen(function*() {
        const before = yield* counts
        const result = yield* work
        const after = yield* counts
        return { result, updates: after.updates - before.updates, inPlace: after.inPlace - before.inPlace }
      }))
    ))
  }

  it("settling a send changes its index entries; each status after it moves the row in place", async () => {
    const conversation = conversationRecord(tenantId, { channel_id: "channel_1" })
    await run(ConversationStore.use((s) => s.insert(conversation)))
    const sends: ReadonlyArray<MessageRecord> = Array.from({ length: 12 }, (_, n) =>
      messageRecord(conversation, { direction: "outbound", status: "pending", external_id: null, created_at: AT, text: `send ${n}` }))
    await run(MessageStore.use((s) => s.insertMany(sends)))
    const DELIVERED = "2026-12-08T01:00:05.000Z"
    const READ = "2026-12-08T01:00:09.000Z"
    const to = (status: "sent" | "delivered" | "read", at: string) => ({
      status,
      error: null,
      sent_at: AT,
      delivered_at: status === "sent" ? null : DELIVERED,
      read_at: status === "read" ? READ : null,
      failed_at: null,
      updated_at: at
    })
    // Each message's moves in transactions of their own, as its statuses come: a page always has room
    // for the next version once the one before it is no longer seen by anyone.
    for (const [n, send] of sends.entries()) {
      const settled = await updatesOf(MessageStore.use((s) =>
        s.settlePending(tenantId, [{ id: send.id, external_id: `wamid.settled.${n}`, ...to("sent", AT) }])))
      const delivered = await updatesOf(MessageStore.use((s) =>
        s.moveStatuses(tenantId, [{ id: send.id, expected: { status: "sent", updated_at: AT }, to: to("delivered", DELIVERED) }])))
      const read = await updatesOf(MessageStore.use((s) =>
        s.moveStatuses(tenantId, [{ id: send.id, expected: { status: "delivered", updated_at: DELIVERED }, to: to("read", READ) }])))
      // Settling takes the message out of the pending ones' index: a key changes.
      expect([settled.result.size, settled.updates, settled.inPlace], `message ${n} settled`).toEqual([1, 1, 0])
      expect([delivered.result.size, delivered.updates, delivered.inPlace], `message ${n} delivered`).toEqual([1, 1, 1])
      expect([read.result.size, read.updates, read.inPlace], `message ${n} read`).toEqual([1, 1, 1])
    }
    // And the sweep of unanswered sends, which reads that index, finds none of them any more.
    expect(await run(MessageStore.use((s) => s.pendingAcrossTenants("2026-12-09T00:00:00.000Z", null, 100)))).toEqual([])
  })
})
