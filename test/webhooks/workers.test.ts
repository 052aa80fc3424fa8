import { Effect } from "effect"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import type { Workers } from "../../src/app/Omnichannel.ts"
import { makeEvent } from "../../src/kernel/EventEnvelope.ts"
import { OutboxSignal } from "../../src/events/OutboxSignal.ts"
import { OutboxStore } from "../../src/ports/OutboxStore.ts"
import { Transactor } from "../../src/ports/Transactor.ts"
import { type Certificate, hasOpenssl, makeCertificate } from "../outbound/LocalServers.ts"
import { waitUntil } from "../support/Poll.ts"
import { startWebhookApp, type WebhookApp } from "./WebhookApp.ts"

// `startWorkers`: the delivery pipeline running without drains, as hosts run it.
describe.skipIf(!hasOpenssl)("background workers (needs the openssl CLI)", () => {
  let certificate: Certificate
  let hooks: WebhookApp
  let workers: Workers | undefined
  const errors: Array<unknown> = []

  beforeAll(async () => {
    certificate = makeCertificate()
    hooks = await startWebhookApp(certificate, { database: "sqlite-file" })
  })
  afterEach(async () => {
    await workers?.stop()
    workers = undefined
    expect(errors).toEqual([])
  })
  afterAll(async () => {
    await hooks?.close()
  })

  const start = (idleMs = 5, on = hooks) => {
    workers = on.test.app.startWorkers({ idleMs, onError: (_job, error) => errors.push(error) })
    return workers
  }

  it("delivers events as they happen, with no drain, and records each as a success", async () => {
    const receiver = await hooks.startReceiver()
    const tenant = await hooks.newTenant()
    const { id } = await tenant.createEndpoint(receiver.url)
    start()
    const contacts = []
    for (let i = 0; i < 25; i++) contacts.push(await tenant.createContact(`Contact ${i}`))

    await waitUntil("25 deliveries arrived", () => receiver.deliveries().length >= 25)
    expect(receiver.deliveries().map((event) => (event.data as { contact: { id: string } }).contact.id).sort())
      .toEqual([...contacts].sort())
    await waitUntil("25 deliveries are recorded", async () => (await tenant.deliveries(id, "status=success")).total === 25)
  })

  it("replays a suspended endpoint's backlog after a verify while it runs", async () => {
    const receiver = await hooks.startReceiver(503)
    const tenant = await hooks.newTenant()
    const { id } = await tenant.createEndpoint(receiver.url)
    start()
    const events = await hooks.test.app.run(Effect.all(Array.from({ length: 50 }, (_, n) =>
      makeEvent({ type: "contact.created", tenantId: tenant.tenant_id, data: { n } }))))
    // Twenty first attempts fail (their retries are not due while the test clock stands still)…
    await tenant.emit(events.slice(0, 20))
    await waitUntil("the endpoint is suspended", async () => (await tenant.endpoint(id)).status === "suspended")
    // …then thirty more queue behind the suspension.
    await tenant.emit(events.slice(20))
    await waitUntil("50 deliveries are queued", async () => (await tenant.deliveries(id, "status=queued")).total === 50)
    expect(receiver.deliveries().length).toBe(20)

    receiver.answerWith(200)
    expect((await tenant.as("POST", `/webhook-endpoints/${id}/verify`)).status).toBe(200)
    await waitUntil("the backlog is replayed", () => new Set(receiver.deliveries().slice(20).map((e) => e.id)).size === 50)
    await waitUntil("all 50 are recorded as successes", async () => (await tenant.deliveries(id, "status=success")).total === 50)
    expect((await tenant.endpoint(id)).status).toBe("active")
  })

  it("stops only after recording what it held: nothing is lost or sent twice across a stop and a restart", async () => {
    const receiver = await hooks.startReceiver()
    const tenant = await hooks.newTenant()
    const { id } = await tenant.createEndpoint(receiver.url)
    const events = await hooks.test.app.run(Effect.all(Array.from({ length: 2_000 }, (_, n) =>
      makeEvent({ type: "contact.created", tenantId: tenant.tenant_id, data: { n } }))))
    await tenant.emit(events)
    const running = start()
    await waitUntil("the first deliveries arrived", () => receiver.deliveries().length > 0)
    await running.stop()
    workers = undefined

    // Every delivery the workers sent is recorded; none is left claimed, so the rest go out at once.
    const sent = receiver.deliveries().length
    expect((await tenant.deliveries(id, "status=success")).total).toBe(sent)
    start()
    await waitUntil("all 2,000 arrived", () => receiver.deliveries().length >= 2_000)
    await waitUntil("all 2,000 are recorded", async () => (await tenant.deliveries(id, "status=success")).total === 2_000)
    const ids = receiver.deliveries().map((event) => event.id)
    expect(new Set(ids).size).toBe(ids.length)
    expect(new Set(ids)).toEqual(new Set(events.map((event) => event.id)))
  })

  it("starts at once on events this process commits, whatever idleMs says", async () => {
    // A worker listens for other processes' commits from its first wait on: its first look is over then.
    let waiting = () => {}
    const firstWait = new Promise<void>((resolve) => (waiting = resolve))
    const own = await startWebhookApp(certificate, {
      database: "sqlite-file",
      outboxNotices: {
        subscribe: () => {
          waiting()
          return () => {}
        }
      }
    })
    try {
      const receiver = await own.startReceiver()
      const tenant = await own.newTenant()
      await tenant.createEndpoint(receiver.url)
      // A look every minute: only the signal of the commit can get the event out within seconds.
      start(60_000, own)
      await firstWait
      const began = Date.now()
      await tenant.createContact("Prompt")
      await waitUntil("the delivery arrived", () => receiver.deliveries().length === 1, 5_000)
      expect(Date.now() - began).toBeLessThan(5_000)
    } finally {
      await workers?.stop()
      workers = undefined
      await own.close()
    }
  })

  it("signals commits that appended events, not rolled-back ones", async () => {
    const tenant = await hooks.newTenant()
    // The mark counts the signals: a worker waiting since `mark` is woken exactly when it moved on.
    const woke = (mark: number) => Effect.map(OutboxSignal, (signal) => signal.mark() !== mark)
    const [afterRollback, afterCommit, afterNothing] = await hooks.test.app.run(Effect.gen(function*() {
      const signal = yield* OutboxSignal
      const transactor = yield* Transactor
      const outbox = yield* OutboxStore
      const event = () => makeEvent({ type: "contact.created", tenantId: tenant.tenant_id, data: {} })
      const first = signal.mark()
      yield* transactor.withTransaction(Effect.andThen(outbox.append([yield* event()]), Effect.fail("rolled back")))
        .pipe(Effect.ignore)
      const rolledBack = yield* woke(first)
      yield* transactor.withTransaction(outbox.append([yield* event()]))
      const committed = yield* woke(first)
      const second = signal.mark()
      yield* transactor.withTransaction(outbox.append([]))
      return [rolledBack, committed, yield* woke(second)]
    }))
    expect({ afterRollback, afterCommit, afterNothing }).toEqual({ afterRollback: false, afterCommit: true, afterNothing: false })
  })
})
