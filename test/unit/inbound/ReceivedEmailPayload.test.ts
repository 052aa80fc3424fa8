import { Effect, Option } from "effect"
import { afterEach, describe, expect, it } from "vitest"
import { makeMemoryBlobStore } from "../../../src/attachments/MemoryBlobStore.ts"
import { receivedEmailKey } from "../../../src/inbound/ReceivedEmailBlobs.ts"
import { InboundStore } from "../../../src/ports/InboundStore.ts"
import { testDatabases } from "../../support/Databases.ts"
import { rawEmail } from "../../support/EmailHost.ts"
import { bootstrap, startTestApp, type TestApp } from "../../support/TestApp.ts"

// Where a received email's bytes are kept: streamed into the blob store as they arrive, beside a
// payload row without a body; a payload stored before that (its bytes in its row) is still read.

describe("a received email's bytes", () => {
  let test: TestApp | undefined
  afterEach(async () => {
    await test?.close()
    test = undefined
  })

  const start = async () => {
    const blobs = makeMemoryBlobStore()
    test = await startTestApp(await testDatabases[0]!.open(), { blobStore: blobs })
    const app = test
    const { api_key } = await bootstrap(app)
    const integration = (await app.call("POST", "/email-integrations", { token: api_key, body: { address: "desk@example.org" } })).body
    const subjects = async () =>
      (await app.call("GET", `/conversations?channel_id=${integration.id}&page_size=100`, { token: api_key })).body.items
        .map((c: any) => c.subject)
    return { app, blobs, integration, subjects }
  }

  it("are kept in the blob store as received, the payload row holding no body", async () => {
    const { app, blobs, integration } = await start()
    const raw = await rawEmail({ from: "ana@example.org", subject: "Kept", messageId: "kept@example.org", text: "hello" })
    const answer = await app.app.handler(new Request(`http://test.local/webhooks/email/${integration.id}`, {
      method: "POST",
      headers: { "content-type": "message/rfc822", authorization: `Bearer ${integration.inbound_secret}` },
      body: new Uint8Array(raw)
    }))
    expect(answer.status).toBe(200)
    const { id } = await answer.json() as { id: string }
    const stored = await Effect.runPromise(Effect.flatMap(blobs.get(receivedEmailKey(id)), (found) =>
      Effect.promise(() => new Response(Option.getOrThrow(found)).arrayBuffer())))
    expect(Buffer.compare(Buffer.from(stored), raw)).toBe(0)
    const claims = await app.app.run(Effect.flatMap(InboundStore, (store) =>
      store.claim({ now: "9999-12-31T00:00:00.000Z", limit: 10, leaseUntil: "9999-12-31T00:00:00.000Z", holder: "look" })))
    expect(claims.map((claim) => [claim.payload.id, claim.payload.body.length])).toEqual([[id, 0]])
  })

  it("stored in the payload row, as before they went to the blob store, are still read", async () => {
    const { app, blobs, integration, subjects } = await start()
    const raw = await rawEmail({
      from: "old@example.org",
      subject: "Stored before",
      messageId: "before@example.org",
      text: "an email from before the upgrade",
      files: [{ filename: "old.pdf", contentType: "application/pdf", content: new TextEncoder().encode("%PDF-1.4 old") }]
    })
    await app.app.run(Effect.flatMap(InboundStore, (store) =>
      store.insert({
        id: "00000000-0000-4000-8000-000000000001",
        source: "email",
        route_key: integration.id,
        body: new Uint8Array(raw),
        content_type: "message/rfc822",
        received_at: "2026-11-22T12:00:00.000Z",
        status: "pending",
        attempts: 0,
        next_attempt_at: "2026-11-22T12:00:00.000Z",
        lease_until: null,
        processed_at: null,
        note: null
      })))
    await app.app.drainDueWork()
    expect(await subjects()).toEqual(["Stored before"])
    expect(Option.isNone(await Effect.runPromise(blobs.get(receivedEmailKey("00000000-0000-4000-8000-000000000001"))))).toBe(true)
  })
})
