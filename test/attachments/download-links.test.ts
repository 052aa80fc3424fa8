import { Context, Effect, Layer, Option } from "effect"
import { TestClock } from "effect/testing"
import { describe, expect, it } from "vitest"
import { AttachmentService } from "../../src/attachments/AttachmentService.ts"
import { DownloadLinks, makeDownloadLinks } from "../../src/attachments/DownloadLinks.ts"
import { makeFileDownloadHandler } from "../../src/attachments/FileDownload.ts"
import { makeMemoryBlobStore } from "../../src/attachments/MemoryBlobStore.ts"
import { type AttachmentRecord, AttachmentStore } from "../../src/ports/AttachmentStore.ts"
import { BlobStore } from "../../src/ports/BlobStore.ts"
import { MultipartReader } from "../../src/ports/MultipartReader.ts"
import { OutboundHttp, outboundHttpOf } from "../../src/ports/OutboundHttp.ts"

const SECRET = "test-secret-0123456789abcdefghijklmnopqrstuvwxyz"
const TENANT = "11111111-1111-4111-8111-111111111111"
const OTHER_TENANT = "22222222-2222-4222-8222-222222222222"
const ATTACHMENT = "33333333-3333-4333-8333-333333333333"

const links = makeDownloadLinks({ secret: SECRET, publicUrl: () => "https://app.example.com" })

// Effects run on a test clock that starts at 0 and moves only when told.
const onTestClock = <A, E>(effect: Effect.Effect<A, E>) => Effect.runPromise(Effect.provide(effect, TestClock.layer()))

const verify = (url: string, using: DownloadLinks["Service"] = links) =>
  onTestClock(using.verify(new URL(url)))

const withParam = (url: string, name: string, value: string) => {
  const changed = new URL(url)
  changed.searchParams.set(name, value)
  return changed.toString()
}

describe("download links", () => {
  it("signs an absolute URL under the public URL and /files, with tenant, expiry and signature", async () => {
    const url = new URL(await onTestClock(links.sign(TENANT, ATTACHMENT)))
    expect(`${url.origin}${url.pathname}`).toBe(`https://app.example.com/files/${ATTACHMENT}`)
    expect(url.searchParams.get("t")).toBe(TENANT)
    expect(url.searchParams.get("exp")).toBe("3600")
    expect(url.searchParams.get("sig")).toMatch(/^[A-Za-z0-9_-]{43}$/)
  })

  it("verifies what it signed", async () => {
    const url = await onTestClock(links.sign(TENANT, ATTACHMENT))
    expect(await verify(url)).toEqual(Option.some({ tenantId: TENANT, attachmentId: ATTACHMENT, expiresAt: 3600 }))
  })

  it("takes another path and time to live, and a public URL with a trailing slash", async () => {
    const custom = makeDownloadLinks({
      secret: SECRET,
      publicUrl: () => "https://files.example.com/",
      path: "/dl/",
      ttlSeconds: 60
    })
    const url = await onTestClock(custom.sign(TENANT, ATTACHMENT))
    expect(url.startsWith(`https://files.example.com/dl/${ATTACHMENT}?`)).toBe(true)
    expect(new URL(url).searchParams.get("exp")).toBe("60")
    expect(Option.isSome(await verify(url, custom))).toBe(true)
    expect(Option.isNone(await verify(url))).toBe(true)
  })

  it("reads the public URL each time it signs", async () => {
    let base = "https://one.example.com"
    const moving = makeDownloadLinks({ secret: SECRET, publicUrl: () => base })
    expect(await onTestClock(moving.sign(TENANT, ATTACHMENT))).toMatch(/^https:\/\/one\.example\.com\//)
    base = "https://two.example.com"
    expect(await onTestClock(moving.sign(TENANT, ATTACHMENT))).toMatch(/^https:\/\/two\.example\.com\//)
  })

  describe("refuses a link that was changed or not signed here", () => {
    const signed = () => onTestClock(links.sign(TENANT, ATTACHMENT))

    it("with another signature", async () => {
      const url = await signed()
      const sig = new URL(url).searchParams.get("sig")!
      const flipped = `${sig[0] === "A" ? "B" : "A"}${sig.slice(1)}`
      expect(await verify(withParam(url, "sig", flipped))).toEqual(Option.none())
      expect(await verify(withParam(url, "sig", "not base64!"))).toEqual(Option.none())
      expect(await verify(withParam(url, "sig", ""))).toEqual(Option.none())
    })

    it("with another tenant", async () => {
      expect(await verify(withParam(await signed(), "t", OTHER_TENANT))).toEqual(Option.none())
    })

    it("with another attachment id", async () => {
      const url = (await signed()).replace(ATTACHMENT, "44444444-4444-4444-8444-444444444444")
      expect(await verify(url)).toEqual(Option.none())
    })

    it("with a later expiry, or an expiry written otherwise", async () => {
      const url = await signed()
      expect(await verify(withParam(url, "exp", "999999999"))).toEqual(Option.none())
      expect(await verify(withParam(url, "exp", "03600"))).toEqual(Option.none())
      expect(await verify(withParam(url, "exp", "3600.0"))).toEqual(Option.none())
    })

    it("with a part missing, or under another path", async () => {
      const url = await signed()
      for (const name of ["t", "exp", "sig"]) {
        const without = new URL(url)
        without.searchParams.delete(name)
        expect(await verify(without.toString())).toEqual(Option.none())
      }
      expect(await verify(url.replace("/files/", "/other/"))).toEqual(Option.none())
      expect(await verify(url.replace(`/files/${ATTACHMENT}`, `/files/${ATTACHMENT}/more`))).toEqual(Option.none())
      expect(await verify(url.replace(`/files/${ATTACHMENT}`, "/files/"))).toEqual(Option.none())
    })

    it("signed with another secret", async () => {
      const other = makeDownloadLinks({ secret: "another-secret", publicUrl: () => "https://app.example.com" })
      expect(await verify(await onTestClock(other.sign(TENANT, ATTACHMENT)))).toEqual(Option.none())
    })
  })

  it("expires after its time to live, by Effect's clock", async () => {
    await onTestClock(Effect.gen(function*() {
      const url = new URL(yield* links.sign(TENANT, ATTACHMENT))
      yield* TestClock.adjust("3599 seconds")
      expect(Option.isSome(yield* links.verify(url))).toBe(true)
      yield* TestClock.adjust("1 second")
      expect(yield* links.verify(url)).toEqual(Option.none())
    }))
  })

  it("refuses an empty secret", () => {
    expect(() => makeDownloadLinks({ secret: "", publicUrl: () => "https://app.example.com" })).toThrow()
  })
})

/** Attachment records in a Map, scoped by tenant like the real stores. */
const memoryAttachmentStore = (): AttachmentStore["Service"] => {
  const rows: Array<AttachmentRecord> = []
  return AttachmentStore.of({
    insert: (attachment) => Effect.sync(() => void rows.push(attachment)),
    get: (tenantId, id) => Effect.sync(() => Option.fromUndefinedOr(rows.find((r) => r.tenant_id === tenantId && r.id === id))),
    listByMessages: (tenantId, messageIds) =>
      Effect.sync(() => rows.filter((r) => r.tenant_id === tenantId && r.message_id !== null && messageIds.includes(r.message_id))),
    attach: (tenantId, attachmentIds, messageId, conversationId) =>
      Effect.sync(() => {
        for (const [i, row] of rows.entries()) {
          if (row.tenant_id === tenantId && attachmentIds.includes(row.id)) {
            rows[i] = { ...row, message_id: messageId, conversation_id: conversationId }
          }
        }
      }),
    deleteUnsent: () => Effect.die("no deletes in these tests"),
    pruneUnsent: () => Effect.die("no prunes in these tests")
  })
}

// A real PNG's first bytes: what a chat-app image starts with.
const PNG_BYTES = Uint8Array.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d, 0x49, 0x48, 0x44, 0x52])

/** The attachment service over a Map of records and the memory blob store, on a test clock, plus the download handler. */
const setUp = async () => {
  const blobs = makeMemoryBlobStore()
  const layer = AttachmentService.layer.pipe(
    Layer.provideMerge(Layer.mergeAll(
      Layer.succeed(AttachmentStore, memoryAttachmentStore()),
      Layer.succeed(BlobStore, blobs),
      Layer.succeed(DownloadLinks, links),
      Layer.succeed(MultipartReader, MultipartReader.of({ file: () => Effect.die("no uploads in these tests") })),
      Layer.succeed(OutboundHttp, outboundHttpOf({ request: () => Effect.die("no fetches in these tests") }))
    )),
    Layer.provideMerge(TestClock.layer())
  )
  const context = await Effect.runPromise(Layer.build(layer).pipe(Effect.scoped))
  const run = <A, E>(effect: Effect.Effect<A, E, AttachmentService | DownloadLinks | BlobStore | TestClock.TestClock>) =>
    Effect.runPromiseWith(context)(effect)
  const service = Context.get(context, AttachmentService)
  const handler = await run(makeFileDownloadHandler)
  const store = async (input: { readonly filename: string | null; readonly declaredType: string | null; readonly bytes?: Uint8Array }) => {
    const prepared = await run(service.prepareInbound({
      tenantId: TENANT,
      bytes: input.bytes ?? PNG_BYTES,
      declaredType: input.declaredType,
      filename: input.filename,
      externalId: "wamid.media.1",
      origin: "chatapp_media",
      direction: "inbound"
    }))
    return run(service.record(prepared, { messageId: "message-1", conversationId: "conversation-1" }))
  }
  const get = (url: string, method = "GET") => handler(new Request(url, { method }))
  return { run, service, blobs, handler, store, get }
}

const DENIED = { detail: "This download link is invalid or has expired" }

describe("the download handler", () => {
  it("answers the bytes as a download, with the checked type, size, name and safety headers", async () => {
    const { run, service, store, get } = await setUp()
    const record = await store({ filename: "photo.png", declaredType: "image/jpg" })
    const wire = await run(service.toWire(record))
    const response = await get(wire.url)
    expect(response.status).toBe(200)
    expect(new Uint8Array(await response.arrayBuffer())).toEqual(PNG_BYTES)
    expect(Object.fromEntries(response.headers)).toEqual({
      "content-type": "image/png",
      "content-length": String(PNG_BYTES.length),
      "content-disposition": "attachment; filename=\"photo.png\"; filename*=UTF-8''photo.png",
      "x-content-type-options": "nosniff",
      "cache-control": "private, max-age=3600",
      "content-security-policy": "default-src 'none'; sandbox",
      "referrer-policy": "no-referrer",
      // Every answer names its request (one is made when the caller sent none).
      "x-request-id": expect.stringMatching(/^[0-9a-f-]{36}$/)
    })
  })

  it("lets the link be cached only for the time it has left", async () => {
    const { run, service, store, get } = await setUp()
    const url = (await run(service.toWire(await store({ filename: "a.png", declaredType: "image/png" })))).url
    await run(TestClock.adjust("3000 seconds"))
    expect((await get(url)).headers.get("cache-control")).toBe("private, max-age=600")
  })

  it("names a file with a plain-ASCII fallback and the exact UTF-8 name", async () => {
    const { run, service, store, get } = await setUp()
    const record = await store({ filename: "Zoë's \"résumé\" ✓ (1).png", declaredType: "image/png" })
    const response = await get((await run(service.toWire(record))).url)
    expect(response.headers.get("content-disposition")).toBe(
      "attachment; filename=\"Zoe's _resume_ _ (1).png\"; filename*=UTF-8''Zo%C3%AB%27s%20%22r%C3%A9sum%C3%A9%22%20%E2%9C%93%20%281%29.png"
    )
    await response.body?.cancel()
  })

  it("answers HEAD with the headers and no body", async () => {
    const { run, service, store, get } = await setUp()
    const url = (await run(service.toWire(await store({ filename: "a.png", declaredType: "image/png" })))).url
    const response = await get(url, "HEAD")
    expect(response.status).toBe(200)
    expect(response.headers.get("content-length")).toBe(String(PNG_BYTES.length))
    expect(response.body).toBeNull()
  })

  it("answers 405 with Allow to other methods", async () => {
    const { run, service, store, get } = await setUp()
    const url = (await run(service.toWire(await store({ filename: "a.png", declaredType: "image/png" })))).url
    for (const method of ["POST", "PUT", "DELETE"]) {
      const response = await get(url, method)
      expect(response.status).toBe(405)
      expect(response.headers.get("allow")).toBe("GET, HEAD")
    }
  })

  it("answers 403 to a changed link and to an expired one", async () => {
    const { run, service, store, get } = await setUp()
    const url = (await run(service.toWire(await store({ filename: "a.png", declaredType: "image/png" })))).url
    const tampered = await get(withParam(url, "t", OTHER_TENANT))
    expect(tampered.status).toBe(403)
    expect(tampered.headers.get("content-type")).toBe("application/json")
    expect(await tampered.json()).toEqual(DENIED)

    await run(TestClock.adjust("3600 seconds"))
    const expired = await get(url)
    expect(expired.status).toBe(403)
    expect(await expired.json()).toEqual(DENIED)
  })

  it("answers 404 for an attachment that is unknown, another tenant's, or whose bytes are gone", async () => {
    const { run, service, blobs, store, get } = await setUp()
    const record = await store({ filename: "a.png", declaredType: "image/png" })
    expect((await get(await run(links.sign(TENANT, ATTACHMENT)))).status).toBe(404)
    expect((await get(await run(links.sign(OTHER_TENANT, record.id)))).status).toBe(404)
    const url = (await run(service.toWire(record))).url
    await run(blobs.delete(record.blob_key))
    const gone = await get(url)
    expect(gone.status).toBe(404)
    expect(await gone.json()).toEqual({ detail: "This file no longer exists" })
  })
})

describe("the attachment service", () => {
  it("writes the bytes under <tenant>/<id> before any record, and records them for the message", async () => {
    const { run, service, blobs } = await setUp()
    const prepared = await run(service.prepareInbound({
      tenantId: TENANT,
      bytes: PNG_BYTES,
      declaredType: "image/jpeg",
      filename: null,
      externalId: "wamid.media.1",
      origin: "chatapp_media",
      direction: "inbound"
    }))
    expect(prepared).toMatchObject({
      tenant_id: TENANT,
      direction: "inbound",
      origin: "chatapp_media",
      filename: `image-${prepared.id.slice(0, 8)}.png`,
      content_type: "image/png",
      file_size: PNG_BYTES.length,
      blob_key: `${TENANT}/${prepared.id}`,
      external_id: "wamid.media.1",
      created_at: "1970-01-01T00:00:00.000Z"
    })
    expect(Option.isSome(await run(blobs.get(prepared.blob_key)))).toBe(true)
    await expect(run(service.get(TENANT, prepared.id))).rejects.toThrow(`Attachment ${prepared.id} not found`)

    const record = await run(service.record(prepared, { messageId: "message-1", conversationId: "conversation-1" }))
    expect(record).toEqual({ ...prepared, message_id: "message-1", conversation_id: "conversation-1" })
    expect(await run(service.get(TENANT, prepared.id))).toEqual(record)
    expect(await run(service.listByMessages(TENANT, ["message-1"]))).toEqual([record])
    expect(await run(service.listByMessages(OTHER_TENANT, ["message-1"]))).toEqual([])
  })

  it("names a file safely, falling back to <kind>-<id>.<ext> when nothing of its name is left", async () => {
    const { store } = await setUp()
    expect((await store({ filename: "../../etc/passwd", declaredType: "text/plain", bytes: new TextEncoder().encode("x") })).filename)
      .toBe("etcpasswd")
    const pdf = await store({ filename: "...", declaredType: "application/pdf", bytes: new TextEncoder().encode("%PDF-1.4\n") })
    expect(pdf.filename).toBe(`file-${pdf.id.slice(0, 8)}.pdf`)
  })

  it("discards the bytes of an attachment never recorded, and discarding twice is quiet", async () => {
    const { run, service, blobs } = await setUp()
    const prepared = await run(service.prepareInbound({
      tenantId: TENANT,
      bytes: PNG_BYTES,
      declaredType: "image/png",
      filename: "a.png",
      externalId: null,
      origin: "upload",
      direction: "outbound"
    }))
    await run(service.discard(prepared))
    expect(Option.isNone(await run(blobs.get(prepared.blob_key)))).toBe(true)
    await run(service.discard(prepared))
  })

  it("gives the wire form with a link that the handler serves", async () => {
    const { run, service, store } = await setUp()
    const record = await store({ filename: "photo.png", declaredType: "image/png" })
    const wire = await run(service.toWire(record))
    expect(wire).toEqual({
      id: record.id,
      filename: "photo.png",
      content_type: "image/png",
      file_size: PNG_BYTES.length,
      url: expect.stringMatching(new RegExp(`^https://app\\.example\\.com/files/${record.id}\\?t=${TENANT}&exp=3600&sig=`))
    })
    expect(await run(links.verify(new URL(wire.url)))).toEqual(
      Option.some({ tenantId: TENANT, attachmentId: record.id, expiresAt: 3600 })
    )
  })

  it("opens the record and its bytes, or none", async () => {
    const { run, service, store } = await setUp()
    const record = await store({ filename: "a.png", declaredType: "image/png" })
    const opened = Option.getOrThrow(await run(service.open(TENANT, record.id)))
    expect(opened.record).toEqual(record)
    expect(new Uint8Array(await new Response(opened.stream).arrayBuffer())).toEqual(PNG_BYTES)
    expect(await run(service.open(OTHER_TENANT, record.id))).toEqual(Option.none())
    expect(await run(service.open(TENANT, ATTACHMENT))).toEqual(Option.none())
  })
})
