import { Effect } from "effect"
import { afterEach, describe, expect, it } from "vitest"
import { makeMemoryBlobStore } from "../../../src/attachments/MemoryBlobStore.ts"
import { BlobStore } from "../../../src/ports/BlobStore.ts"
import { testDatabases } from "../../support/Databases.ts"
import { rawEmail } from "../../support/EmailHost.ts"
import { bootstrap, startTestApp, type TestApp } from "../../support/TestApp.ts"

// emailParseConcurrency bounds how many received emails are read at once: four background rounds
// each take one email (a claim of one payload) at the same time, and a blob store that counts the
// received emails' streams open at once shows how many are being read.

const EMAILS = 4

/**
 * A memory blob store whose received-email streams are counted while open. They hold their bytes
 * back until `bound` are open at once (then flow), so the bound is reached whenever it can be; and
 * they flow slowly, 256 bytes a turn of the event loop, so reads that were let through at once
 * would overlap and be counted.
 */
const countingBlobStore = (bound: number) => {
  const inner = makeMemoryBlobStore()
  let open = 0
  let most = 0
  let reached = false
  const waiters: Array<() => void> = []
  const opened = () => {
    open += 1
    most = Math.max(most, open)
    if (open >= bound) reached = true
    if (reached) for (const wake of waiters.splice(0)) wake()
  }
  const store = BlobStore.of({
    ...inner,
    get: (key) =>
      Effect.map(inner.get(key), (found) => {
        if (!key.startsWith("inbound/email/") || found._tag === "None") return found
        const reader = found.value.getReader()
        let pending: Uint8Array = new Uint8Array(0)
        let closed = false
        const close = () => {
          if (!closed) open -= 1
          closed = true
        }
        opened()
        return { ...found, value: new ReadableStream<Uint8Array>({
          pull: async (controller) => {
            if (!reached) await new Promise<void>((resolve) => waiters.push(resolve))
            await new Promise((resolve) => setImmediate(resolve))
            if (pending.length === 0) {
              const next = await reader.read()
              if (next.done) {
                close()
                return controller.close()
              }
              pending = next.value
            }
            controller.enqueue(pending.slice(0, 256))
            pending = pending.subarray(256)
          },
          cancel: async (reason) => {
            close()
            await reader.cancel(reason)
          }
        }) }
      })
  })
  return { store, most: () => most, open: () => open }
}

describe.each([1, 2])("received emails read at once with emailParseConcurrency %i", (bound) => {
  let test: TestApp | undefined
  afterEach(async () => {
    await test?.close()
    test = undefined
  })

  it(`reads at most ${bound} at once while ${EMAILS} workers take one each, and stores every email`, async () => {
    const blobs = countingBlobStore(bound)
    test = await startTestApp(await testDatabases[0]!.open(), {
      blobStore: blobs.store,
      emailParseConcurrency: bound,
      inbound: { batchSize: 1 }
    })
    const app = test
    const { api_key } = await bootstrap(app)
    const integration = await app.call("POST", "/email-integrations", { token: api_key, body: { address: "desk@example.org" } })
    expect(integration.status).toBe(201)
    for (let i = 0; i < EMAILS; i++) {
      const raw = await rawEmail({
        from: `sender-${i}@example.org`,
        subject: `Email ${i}`,
        messageId: `concurrency-${bound}-${i}@example.org`,
        text: `email ${i}`,
        files: [{ filename: `file-${i}.pdf`, contentType: "application/pdf", content: new TextEncoder().encode(`%PDF-1.4 ${i}`.padEnd(16_000, "x")) }]
      })
      const answer = await app.app.handler(new Request(`http://test.local/webhooks/email/${integration.body.id}`, {
        method: "POST",
        headers: { "content-type": "message/rfc822", authorization: `Bearer ${integration.body.inbound_secret}` },
        body: new Uint8Array(raw)
      }))
      expect(answer.status).toBe(200)
    }

    await Promise.all(Array.from({ length: EMAILS }, () => app.app.drainDueWork()))

    expect(blobs.most()).toBe(bound)
    expect(blobs.open()).toBe(0)
    const conversations = await app.call("GET", `/conversations?channel_id=${integration.body.id}&page_size=100`, { token: api_key })
    expect(conversations.body.items.map((c: any) => c.subject).sort()).toEqual(Array.from({ length: EMAILS }, (_, i) => `Email ${i}`))
  })
})

describe("emailParseConcurrency", () => {
  it("takes a whole number from 1 to 1024; anything else makes make throw", async () => {
    for (const value of [0, -1, 1.5, 1025, Number.NaN]) {
      const database = await testDatabases[0]!.open()
      await expect(startTestApp(database, { emailParseConcurrency: value }), String(value)).rejects.toThrow(/emailParseConcurrency/)
      await database.close()
    }
  })
})
