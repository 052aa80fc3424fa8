import { createHmac } from "node:crypto"
import { Layer, Tracer } from "effect"
import { sql } from "kysely"
import { afterEach, describe, expect, it } from "vitest"
import { nodeHmacSigner } from "../../../adapters/node/NodeHmacSigner.ts"
import { serve } from "../../../adapters/node/NodeServer.ts"
import { textMessagePayload } from "../../support/ChatappPayloads.ts"
import { type TestDatabase, testDatabases } from "../../support/Databases.ts"
import { startTestApp, type TestApp } from "../../support/TestApp.ts"

// Operator payloads that arrive together are stored together, in one write: each is answered 200
// only once its row is committed, and 503 when the write holding it failed, so the operator
// retries exactly the payloads that were not kept.

const APP_SECRET = "app-secret-for-tests"
const REFUSED = "refused-by-the-database"

/** A trigger that fails the write of any payload whose body holds `REFUSED`, as a failing database would. */
const refuseMarkedPayloads = async (database: TestDatabase) => {
  if (database.dialect === "sqlite") {
    await sql`CREATE TRIGGER refuse_marked BEFORE INSERT ON inbound_payloads
      WHEN instr(CAST(NEW.body AS TEXT), ${sql.lit(REFUSED)}) > 0
      BEGIN SELECT RAISE(ABORT, 'refused by the test'); END`.execute(database.db)
    return
  }
  await sql`CREATE FUNCTION refuse_marked() RETURNS trigger AS $$
    BEGIN
      IF position(${sql.lit(REFUSED)} in convert_from(NEW.body, 'UTF8')) > 0 THEN RAISE EXCEPTION 'refused by the test'; END IF;
      RETURN NEW;
    END $$ LANGUAGE plpgsql`.execute(database.db)
  await sql`CREATE TRIGGER refuse_marked BEFORE INSERT ON inbound_payloads FOR EACH ROW EXECUTE FUNCTION refuse_marked()`
    .execute(database.db)
}

let payloads = 0
/** A distinct operator payload (one text message); `refused` marks it for the trigger. */
const payload = (refused = false) =>
  textMessagePayload({
    businessAccountId: "102290129340398",
    phoneNumberId: "106540352242922",
    from: "15550001111",
    wamid: `wamid.${++payloads}`,
    text: refused ? REFUSED : "hello"
  })

// A SQLite file and PostgreSQL (with PG_URL); the conformance suite checks the write itself everywhere.
const databases = testDatabases.filter((database) => database.name === "sqlite-file" || database.name === "postgres")

describe.each(databases)("operator payloads arriving together ($name)", (database) => {
  let test: TestApp | undefined
  afterEach(async () => {
    await test?.close()
    test = undefined
  })

  const post = async (body: string, headers: Record<string, string> = {}) =>
    (await test!.app.handler(new Request("http://test.local/webhooks/chatapp", {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-hub-signature-256": `sha256=${createHmac("sha256", APP_SECRET).update(body).digest("hex")}`,
        ...headers
      },
      body
    }))).status

  /** Posts `bodies` all at once and pairs each with its answer's status. */
  const postTogether = async (bodies: ReadonlyArray<string>) =>
    (await Promise.all(bodies.map((body) => post(body)))).map((status, i) => ({ body: bodies[i]!, status }))

  const storedBodies = async () =>
    new Set((await test!.database.db.selectFrom("inbound_payloads").select("body").execute())
      .map((row) => Buffer.from(row.body).toString("utf8")))

  it("answers 200 to each payload once stored and 503 to each one whose write failed, storing none of those", async () => {
    // Node's signer, as the host has: signatures are checked at once, so payloads posted together reach storage together.
    test = await startTestApp(await database.open(), {
      chatappWebhook: { appSecret: APP_SECRET, verifyToken: "verify" },
      signer: nodeHmacSigner
    })
    await refuseMarkedPayloads(test.database)

    const kept = await postTogether(Array.from({ length: 20 }, () => payload()))
    // One refused payload among others posted with it: their write is one, and it fails whole.
    const failed = await postTogether([...Array.from({ length: 10 }, () => payload()), payload(true), ...Array.from({ length: 9 }, () => payload())])
    const after = await postTogether([payload(), payload()])

    expect(kept.map((p) => p.status)).toEqual(Array(20).fill(200))
    expect(failed.map((p) => p.status)).toEqual(Array(20).fill(503))
    expect(after.map((p) => p.status)).toEqual([200, 200])
    const stored = await storedBodies()
    for (const { body, status } of [...kept, ...failed, ...after]) expect(stored.has(body)).toBe(status === 200)
    expect(stored.size).toBe(22)
  })

  it("answers the same through the direct route a Node server serves (no web Request): 200 once stored, 503 when its write failed", async () => {
    test = await startTestApp(await database.open(), {
      chatappWebhook: { appSecret: APP_SECRET, verifyToken: "verify" },
      signer: nodeHmacSigner
    })
    await refuseMarkedPayloads(test.database)
    const server = await serve(() => Promise.reject(new Error("the handler is not used")), { port: 0, host: "127.0.0.1", direct: test.app.directRoutes })
    try {
      const postDirect = async (body: string) =>
        (await fetch(`${server.url}/webhooks/chatapp`, {
          method: "POST",
          headers: { "content-type": "application/json", "x-hub-signature-256": `sha256=${createHmac("sha256", APP_SECRET).update(body).digest("hex")}` },
          body
        })).status
      const bodies = [...Array.from({ length: 5 }, () => payload()), payload(true), ...Array.from({ length: 4 }, () => payload())]
      const statuses = await Promise.all(bodies.map(postDirect))
      const after = await postDirect(payload())
      // Whether the refused one shared its write with others depends on when each body arrived: each
      // answer says whether its own row was kept, and the refused one never is.
      expect(statuses[5]).toBe(503)
      expect(after).toBe(200)
      const stored = await storedBodies()
      bodies.forEach((body, i) => expect(stored.has(body), `payload ${i}`).toBe(statuses[i] === 200))
      expect(statuses.every((status) => status === 200 || status === 503)).toBe(true)
    } finally {
      await server.close(0)
    }
  })

  // PostgreSQL takes a second write while the first waits on its commit: a slow write (here one held
  // by a lock its trigger waits for) does not hold back the payloads that arrive after it.
  it.runIf(database.name === "postgres")("stores a payload arriving while a write waits beside it, not after it", async () => {
    test = await startTestApp(await database.open(), {
      chatappWebhook: { appSecret: APP_SECRET, verifyToken: "verify" },
      signer: nodeHmacSigner
    })
    const db = test.database.db
    await sql`CREATE FUNCTION wait_for_marked() RETURNS trigger AS $$
      BEGIN
        IF position('held-by-the-test' in convert_from(NEW.body, 'UTF8')) > 0 THEN PERFORM pg_advisory_xact_lock(4242); END IF;
        RETURN NEW;
      END $$ LANGUAGE plpgsql`.execute(db)
    await sql`CREATE TRIGGER wait_for_marked BEFORE INSERT ON inbound_payloads FOR EACH ROW EXECUTE FUNCTION wait_for_marked()`.execute(db)
    let release!: () => void
    const released = new Promise<void>((resolve) => (release = resolve))
    let locked!: () => void
    const isLocked = new Promise<void>((resolve) => (locked = resolve))
    const holder = db.connection().execute(async (connection) => {
      await sql`SELECT pg_advisory_lock(4242)`.execute(connection)
      locked()
      await released
      await sql`SELECT pg_advisory_unlock(4242)`.execute(connection)
    })
    try {
      await isLocked
      const held = textMessagePayload({ businessAccountId: "102290129340398", phoneNumberId: "106540352242922", from: "15550001111", wamid: `wamid.${++payloads}`, text: "held-by-the-test" })
      let heldStatus: number | undefined
      const heldAnswer = post(held).then((status) => (heldStatus = status))
      // Its write is under way once its trigger waits for the lock.
      for (;;) {
        const { rows } = await sql<{ n: string }>`SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted`.execute(db)
        if (Number(rows[0]!.n) > 0) break
        await new Promise((resolve) => setImmediate(resolve))
      }
      const next = payload()
      // Bounded: stored after the held one, it would wait as long as the lock is held.
      const nextStatus = await Promise.race([post(next), new Promise<string>((resolve) => setTimeout(() => resolve("still waiting after 5 s"), 5_000))])
      expect(nextStatus).toBe(200)
      expect(heldStatus).toBeUndefined()
      expect(await storedBodies()).toEqual(new Set([next]))
      release()
      await heldAnswer
      expect(heldStatus).toBe(200)
      expect(await storedBodies()).toEqual(new Set([next, held]))
    } finally {
      release()
      await holder
    }
  })

  it("keeps with each payload the trace of its own request, though they were written together", async () => {
    // Any tracer other than Effect's native one turns tracing on.
    const tracer = Tracer.make({ span: (options) => Tracer.nativeTracer.span(options) })
    test = await startTestApp(await database.open(), {
      chatappWebhook: { appSecret: APP_SECRET, verifyToken: "verify" },
      signer: nodeHmacSigner,
      telemetry: Layer.succeed(Tracer.Tracer, tracer)
    })
    const traceIds = Array.from({ length: 8 }, () => globalThis.crypto.randomUUID().replaceAll("-", ""))
    const bodies = traceIds.map(() => payload())

    const statuses = await Promise.all(bodies.map((body, i) => post(body, { traceparent: `00-${traceIds[i]}-${"ab".repeat(8)}-01` })))

    expect(statuses).toEqual(Array(8).fill(200))
    const rows = await test.database.db.selectFrom("inbound_payloads").select(["body", "trace_context"]).execute()
    const traceOf = new Map(rows.map((row) => [Buffer.from(row.body).toString("utf8"), row.trace_context?.split("-")[1]]))
    expect(bodies.map((body) => traceOf.get(body))).toEqual(traceIds)
  })
})
