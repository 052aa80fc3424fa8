import { readdirSync } from "node:fs"
import { request as httpRequest } from "node:http"
import { connect } from "node:net"
import { Readable } from "node:stream"
import type { ReadableStream as NodeReadableStream } from "node:stream/web"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { openDatabaseReader } from "../support/DatabaseReader.ts"
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
/** Both routes that take an upload. */
const UPLOAD_PATHS = ["/attachments/upload", "/email-integrations/inline-images/upload"] as const

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

  const upload = async (
    form: FormData | { body: ReadableStream<Uint8Array>; contentType: string },
    key = tenant.key,
    path: typeof UPLOAD_PATHS[number] = "/attachments/upload"
  ) => {
    const init: RequestInit & { duplex?: "half" } = form instanceof FormData
      ? { method: "POST", body: form }
      : { method: "POST", body: form.body, headers: { "content-type": form.contentType }, duplex: "half" }
    const response = await fetch(`${host.url}/api/v1${path}`, {
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
  /** The tenant's attachment records, as stored. */
  const storedRecords = async () => {
    const reader = await openDatabaseReader(env.DATABASE_URL!)
    try {
      return await reader.all("SELECT id, filename FROM attachments WHERE tenant_id = $1", [tenant.id])
    } finally {
      await reader.close()
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

  it.each(UPLOAD_PATHS)("refuses an empty file on %s as empty, keeping nothing", async (path) => {
    const [files, records] = [keptFiles().length, (await storedRecords()).length]
    expect(await upload(fileForm(new Uint8Array(0), "empty.png", "image/png"), tenant.key, path))
      .toEqual({ status: 400, body: { detail: { code: "bad_request", message: "File is empty" } } })
    expect(await upload(fileForm(new Uint8Array(0), "empty.pdf", "application/pdf"), tenant.key, path))
      .toEqual({ status: 400, body: { detail: { code: "bad_request", message: "File is empty" } } })
    expect(keptFiles().length).toBe(files)
    expect((await storedRecords()).length).toBe(records)
  })

  it("refuses an inline image that is not an image, keeping neither its bytes nor its record", async () => {
    const [files, records] = [keptFiles().length, await storedRecords()]
    const refused = await upload(fileForm(PDF, "kein Bild.pdf", "application/pdf"), tenant.key, "/email-integrations/inline-images/upload")
    expect(refused).toEqual({ status: 400, body: { detail: { code: "bad_request", message: "Inline images must be images; this file is 'application/pdf'" } } })
    expect(keptFiles().length).toBe(files)
    expect(await storedRecords()).toEqual(records)
    // An image is taken, and kept.
    const image = await upload(fileForm(PNG, "logo.png", "image/png"), tenant.key, "/email-integrations/inline-images/upload")
    expect(image.status).toBe(201)
    expect(keptFiles()).toContain(image.body.attachment_id)
    expect(await storedRecords()).toEqual([...records, { id: image.body.attachment_id, filename: "logo.png" }])
  })

  /**
   * Sends only the head of an upload declaring `length` bytes and `Expect: 100-continue` from a raw
   * socket, never a byte of body, and resolves with all the host wrote until the connection closed
   * (or until it asked for the body: `100 Continue`).
   */
  const declareOnly = (path: string, length: number) =>
    new Promise<string>((resolve, reject) => {
      const url = new URL(host.url)
      const socket = connect(Number(url.port), url.hostname)
      let text = ""
      socket.on("error", reject)
      socket.on("data", (data: Buffer) => {
        text += data.toString("utf8")
        if (text.startsWith("HTTP/1.1 100 ")) socket.destroy()
      })
      socket.on("close", () => resolve(text))
      socket.write(
        `POST /api/v1${path} HTTP/1.1\r\nhost: ${url.host}\r\nauthorization: Bearer ${tenant.key}\r\n` +
          `content-type: multipart/form-data; boundary=declared\r\ncontent-length: ${length}\r\nexpect: 100-continue\r\n\r\n`
      )
    })

  /** The body of a raw HTTP/1.1 answer, its chunks joined when it is chunked. */
  const bodyOf = (answer: string) => {
    const split = answer.indexOf("\r\n\r\n")
    let rest = answer.slice(split + 4)
    if (!/\r\ntransfer-encoding: *chunked/i.test(answer.slice(0, split))) return rest
    let body = ""
    for (;;) {
      const line = rest.indexOf("\r\n")
      const size = parseInt(rest.slice(0, line), 16)
      if (!(size > 0)) return body
      body += rest.slice(line + 2, line + 2 + size)
      rest = rest.slice(line + 2 + size + 2)
    }
  }

  it.each(UPLOAD_PATHS)("refuses a declared Content-Length past 50 MB and 1 MiB of envelope on %s before a byte of body is sent", async (path) => {
    const answer = await declareOnly(path, 60 * MB)
    // No `100 Continue`: the client was never asked for the body, and sent none.
    expect(answer).toMatch(/^HTTP\/1\.1 400 /)
    expect(JSON.parse(bodyOf(answer))).toEqual({ detail: "File too large. Maximum size is 50.0MB" })
    // At the limit the host asks for the body.
    expect(await declareOnly(path, 51 * MB)).toMatch(/^HTTP\/1\.1 100 Continue\r\n/)
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
