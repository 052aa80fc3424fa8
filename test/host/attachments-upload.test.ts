import { readdirSync } from "node:fs"
import { request as httpRequest } from "node:http"
import { Readable } from "node:stream"
import type { ReadableStream as NodeReadableStream } from "node:stream/web"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { admin, type HostProcess, startHost } from "../support/Host.ts"
import { hostBackends } from "../support/HostBackends.ts"

// Uploads seen from outside: the host as a child process, multipart bodies over real HTTP, the
// records and the bytes as a user gets them back, and the files directory for what was kept.

const PNG = Uint8Array.from(Buffer.from(
  "89504e470d0a1a0a0000000d4948445200000001000000010806000000" +
    "1f15c4890000000d4944415478da63f8cfc0f01f0005000201e221bc330000000049454e44ae426082",
  "hex"
))
const PDF = new TextEncoder().encode("%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n")
const MB = 1024 * 1024

/** A multipart body of one file part, generated lazily: `size` bytes of `fill` after `head`, never held whole. */
const lazyUpload = (filename: string, type: string, head: Uint8Array, size: number) => {
  const boundary = "----omni-test-boundary"
  const encoder = new TextEncoder()
  const opening = encoder.encode(
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\nContent-Type: ${type}\r\n\r\n`
  )
  const closing = encoder.encode(`\r\n--${boundary}--\r\n`)
  let sent = 0
  let pulled = 0
  const chunk = new Uint8Array(256 * 1024).fill(0x41)
  const body = new ReadableStream<Uint8Array>({
    start: (controller) => controller.enqueue(opening),
    pull: (controller) => {
      pulled += 1
      if (sent === 0) {
        controller.enqueue(head)
        sent = head.length
        return
      }
      if (sent >= size) {
        controller.enqueue(closing)
        controller.close()
        return
      }
      const next = chunk.subarray(0, Math.min(chunk.length, size - sent))
      sent += next.length
      controller.enqueue(next)
    }
  })
  return { body, contentType: `multipart/form-data; boundary=${boundary}`, sentBytes: () => sent, pulls: () => pulled }
}

describe.each(hostBackends)("uploads on the reference host ($name)", (backend) => {
  let env: Record<string, string>
  let tearDown: () => Promise<void>
  let host: HostProcess
  let tenant: { id: string; key: string }
  let other: { id: string; key: string }

  beforeAll(async () => {
    ;({ env, tearDown } = await backend.setUp())
    host = await startHost(env)
    const boot = await admin(env, "bootstrap", "--email", "owner@example.com")
    tenant = { id: boot.tenant_id, key: boot.api_key }
    const second = await admin(env, "bootstrap", "--email", "other@example.com")
    other = { id: second.tenant_id, key: second.api_key }
  })
  afterAll(async () => {
    if (host?.child.exitCode === null) await host.stop()
    await tearDown?.()
  })

  const upload = async (form: FormData | { body: ReadableStream<Uint8Array>; contentType: string }, key = tenant.key) => {
    const init: RequestInit & { duplex?: "half" } = form instanceof FormData
      ? { method: "POST", body: form }
      : { method: "POST", body: form.body, headers: { "content-type": form.contentType }, duplex: "half" }
    const response = await fetch(`${host.url}/api/v1/attachments/upload`, {
      ...init,
      headers: { ...(init.headers as Record<string, string> | undefined), authorization: `Bearer ${key}` }
    })
    return { status: response.status, body: await response.json() as any }
  }
  const fileForm = (bytes: Uint8Array, filename: string, type: string) => {
    const form = new FormData()
    form.set("note", "a field before the file is skipped")
    form.set("file", new Blob([bytes as Uint8Array<ArrayBuffer>], { type }), filename)
    return form
  }
  /** The files the host keeps for the tenant. */
  const keptFiles = () => {
    try {
      return readdirSync(join(env.OMNI_DATA_DIR!, "files", tenant.id))
    } catch {
      return []
    }
  }
  const get = (path: string, key = tenant.key) =>
    fetch(`${host.url}/api/v1${path}`, { headers: { authorization: `Bearer ${key}` } }).then(async (r) => ({ status: r.status, body: await r.json() as any }))

  it("stores a file and answers its record; GET gives it back with a link that serves the same bytes", async () => {
    const created = await upload(fileForm(PNG, "Receipt März.png", "image/png"))
    expect(created.status).toBe(201)
    expect(created.body).toEqual({ id: expect.stringMatching(/^[0-9a-f-]{36}$/), filename: "Receipt März.png", content_type: "image/png", file_size: PNG.length })

    const read = await get(`/attachments/${created.body.id}`)
    expect(read.status).toBe(200)
    expect(read.body).toMatchObject({ ...created.body, direction: "outbound", message_id: null, conversation_id: null })
    const bytes = new Uint8Array(await (await fetch(read.body.url)).arrayBuffer())
    expect(bytes).toEqual(PNG)

    expect((await get(`/attachments/${created.body.id}`, other.key)).body).toEqual({ detail: `Attachment ${created.body.id} not found` })
    expect((await get("/attachments/6a1f0c2e-0000-4000-8000-000000000000")).status).toBe(404)
  })

  it("refuses with the spec's words, keeping nothing", async () => {
    const before = keptFiles().length
    // FormData names every file part ("blob" when none is given): a part without one is written by hand.
    const noName = new TextEncoder().encode(
      "--b0undary\r\nContent-Disposition: form-data; name=\"file\"\r\nContent-Type: image/png\r\n\r\nabc\r\n--b0undary--\r\n"
    )
    const unnamed = { body: new Blob([noName]).stream(), contentType: "multipart/form-data; boundary=b0undary" }
    expect(await upload(unnamed)).toEqual({ status: 400, body: { detail: "No filename provided" } })
    expect(await upload(fileForm(PDF, "invoice.pdf.exe", "application/pdf")))
      .toEqual({ status: 400, body: { detail: "File extension '.exe' is not allowed" } })
    expect(await upload(fileForm(PDF, "deploy.SH", "text/plain")))
      .toEqual({ status: 400, body: { detail: "File extension '.SH' is not allowed" } })
    expect(await upload(fileForm(PDF, "photo.png", "image/png")))
      .toEqual({ status: 400, body: { detail: "File content doesn't match claimed type 'image/png'" } })
    const noFile = new FormData()
    noFile.set("other", new Blob([PNG as Uint8Array<ArrayBuffer>]), "x.png")
    expect(await upload(noFile)).toEqual({ status: 422, body: { detail: [{ loc: ["body", "file"], msg: "Field required", type: "missing" }] } })
    const json = await fetch(`${host.url}/api/v1/attachments/upload`, {
      method: "POST",
      headers: { authorization: `Bearer ${tenant.key}`, "content-type": "application/json" },
      body: "{}"
    })
    expect(json.status).toBe(400)
    expect(keptFiles().length).toBe(before)
  })

  it("stops reading a file at the byte past 50 MB and keeps nothing of it", async () => {
    const before = keptFiles().length
    // A client that reads the answer while it is still sending (as curl does), over node:http: the
    // host answers early and closes, so writes after that fail, which such a client ignores.
    const big = lazyUpload("video.mp4", "video/mp4", PDF, 200 * MB)
    const answer = await new Promise<{ status: number; body: any }>((resolve, reject) => {
      const request = httpRequest(`${host.url}/api/v1/attachments/upload`, {
        method: "POST",
        headers: { authorization: `Bearer ${tenant.key}`, "content-type": big.contentType }
      }, (response) => {
        const chunks: Array<Buffer> = []
        response.on("data", (chunk: Buffer) => chunks.push(chunk))
        response.on("end", () => resolve({ status: response.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString("utf8")) }))
        response.on("error", reject)
      })
      request.on("error", () => undefined)
      Readable.fromWeb(big.body as NodeReadableStream<Uint8Array>).on("error", () => undefined).pipe(request)
    })
    expect(answer).toEqual({ status: 400, body: { detail: "File too large. Maximum size is 50.0MB" } })
    // The host stopped reading: far less than the 200 MB offered was taken from the client.
    expect(big.sentBytes()).toBeLessThan(120 * MB)
    expect(keptFiles().length).toBe(before)
  })

  it("takes a file of several megabytes streamed in pieces, byte-counted exactly", async () => {
    const pdf = lazyUpload("manual.pdf", "application/pdf", PDF, 12 * MB)
    const created = await upload(pdf)
    expect(created.status).toBe(201)
    expect(created.body).toMatchObject({ filename: "manual.pdf", content_type: "application/pdf", file_size: 12 * MB })
  })

  it("needs messages:create to upload", async () => {
    const limited = await admin(env, "api-key", "create", "--tenant", tenant.id, "--scopes", "messages:read")
    const refused = await upload(fileForm(PNG, "a.png", "image/png"), limited.api_key)
    expect(refused).toEqual({ status: 403, body: { detail: "Missing required permission(s): messages:create" } })
  })
})
