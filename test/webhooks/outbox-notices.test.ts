import { Effect } from "effect"
import pg from "pg"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type GuardedHttp, makeGuardedHttp } from "../../adapters/http/GuardedHttp.ts"
import { layer as kyselyLayer, migrate, openPostgres } from "../../adapters/kysely/KyselyStorage.ts"
import { LISTENER_NAME } from "../../adapters/kysely/OutboxNotices.ts"
import { make, type Omnichannel, type Workers } from "../../src/app/Omnichannel.ts"
import { Operator } from "../../src/auth/Operator.ts"
import { type Certificate, hasOpenssl, makeCertificate } from "../outbound/LocalServers.ts"
import { createPostgresDatabase, PG_URL } from "../support/Databases.ts"
import { waitUntil } from "../support/Poll.ts"
import { type Receiver, startReceiver } from "./Receiver.ts"

// Two processes' worth of the library on one PostgreSQL database: one only serves the API, the
// other only runs workers that look for work once a minute. Its workers hear of the API's commits
// through LISTEN/NOTIFY and start on them at once.
describe.skipIf(PG_URL === undefined || !hasOpenssl)("workers told of other processes' events (needs PG_URL)", () => {
  let certificate: Certificate
  let outbound: GuardedHttp
  let receiver: Receiver
  let api: Omnichannel
  let worker: Omnichannel
  let workers: Workers | undefined
  let admin: pg.Client
  let close: () => Promise<void>
  let apiKey: string
  const errors: Array<unknown> = []

  const listeners = async (): Promise<ReadonlyArray<number>> =>
    (await admin.query(
      "SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND datname = current_database()",
      [LISTENER_NAME]
    )).rows.map((row: { pid: number }) => row.pid)

  const createContact = async (name: string) => {
    const response = await api.handler(new Request("http://api.local/api/v1/contacts", {
      method: "POST",
      headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ name })
    }))
    expect(response.status).toBe(201)
  }

  beforeAll(async () => {
    certificate = makeCertificate()
    outbound = makeGuardedHttp({ allow: ["127.0.0.1/32"], ca: certificate.cert })
    receiver = await startReceiver(certificate)
    const created = await createPostgresDatabase(PG_URL!)
    const apiDb = openPostgres(created.url)
    await migrate(apiDb, "postgres")
    const workerDb = openPostgres(created.url)
    api = await make({ storage: kyselyLayer(apiDb, "postgres"), outbound })
    worker = await make({ storage: kyselyLayer(workerDb, "postgres"), outbound })
    admin = new pg.Client({ connectionString: created.url })
    await admin.connect()
    close = async () => {
      await admin.end()
      await api.dispose()
      await worker.dispose()
      await apiDb.destroy()
      await workerDb.destroy()
      await created.drop()
    }
    const boot = await api.run(Effect.flatMap(Operator, (operator) => operator.bootstrap({})))
    apiKey = boot.api_key
    const endpoint = await api.handler(new Request("http://api.local/api/v1/webhook-endpoints", {
      method: "POST",
      headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ name: "Receiver", url: receiver.url, subscribed_events: ["contact.created"] })
    }))
    expect(endpoint.status).toBe(201)
  })
  afterAll(async () => {
    await workers?.stop()
    await close?.()
    await receiver?.close()
    outbound?.close()
    expect(errors).toEqual([])
  })

  it("starts on an event another process committed at once, and again after its listening connection was cut", async () => {
    // The API process listens for nothing: only a waiting worker opens the listening connection.
    await createContact("Before any worker")
    expect(await listeners()).toEqual([])

    workers = worker.startWorkers({ idleMs: 60_000, onError: (_job, error) => errors.push(error) })
    await waitUntil("the first event is delivered", () => receiver.deliveries().length === 1)
    await waitUntil("the worker listens", async () => (await listeners()).length === 1)

    const began = Date.now()
    await createContact("Told at once")
    await waitUntil("the second event is delivered", () => receiver.deliveries().length === 2, 5_000)
    expect(Date.now() - began).toBeLessThan(5_000)

    // The server cuts the listening connection; the worker opens another and goes on being told.
    const [cut] = await listeners()
    await admin.query("SELECT pg_terminate_backend($1)", [cut])
    await waitUntil("the worker listens again", async () => {
      const now = await listeners()
      return now.length === 1 && now[0] !== cut
    })
    await createContact("Told after the cut")
    await waitUntil("the third event is delivered", () => receiver.deliveries().length === 3, 5_000)
    expect(receiver.deliveries().map((event) => (event.data as { contact: { name: string } }).contact.name))
      .toEqual(["Before any worker", "Told at once", "Told after the cut"])
  })

  it("closes the listening connection with the library", async () => {
    await workers?.stop()
    workers = undefined
    await worker.dispose()
    await waitUntil("no connection listens", async () => (await listeners()).length === 0)
  })
})
