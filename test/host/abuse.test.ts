import { existsSync, readdirSync, readFileSync } from "node:fs"
import { connect, type Socket } from "node:net"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { validInputs } from "../support/ConnectCustomer.ts"
import { openConnectForm } from "../support/ConnectPage.ts"
import { rawEmail } from "../support/EmailHost.ts"
import { admin, type HostProcess, http, startHost } from "../support/Host.ts"
import { hostBackends } from "../support/HostBackends.ts"
import { waitUntil } from "../support/Poll.ts"

// The reference host as an attacker holding a valid key meets it: oversized bodies sent as fast as
// loopback allows to every route that reads one, bodies that trickle in, more connections than the
// host takes. After each probe the host still serves, its memory stays bounded and nothing is stored.
// Then the report's other probes: large received emails at once, a second tenant connecting a number
// another holds, a verify that would name an internal address, an empty or mistyped upload.

const MB = 1024 * 1024
const PIECE = 64 * 1024
const FILLER = Buffer.alloc(PIECE, 0x61)
/** The request timeout the host runs with here, in seconds. */
const REQUEST_TIMEOUT_S = 5
/** The connection cap the host runs with here. */
const MAX_CONNECTIONS = 510
/** Sockets held open by slow senders in the slow-client probe. */
const SLOW_SOCKETS = 500

interface Answer {
  /** The answer's status, or undefined when the connection ended before one could be read. */
  readonly status: number | undefined
  readonly head: string
  readonly body: string
  /** Body bytes written before the answer came (or all of them, for a client that sends it whole). */
  readonly sent: number
}

/** The status, head and body of a raw HTTP/1.1 answer, once it is whole (by its Content-Length, or at close). */
const parseAnswer = (raw: Buffer, closed: boolean): Omit<Answer, "sent"> | undefined => {
  const text = raw.toString("latin1")
  // A 100 Continue comes before the final answer.
  const final = text.replace(/^HTTP\/1\.1 100 Continue\r\n\r\n/, "")
  const end = final.indexOf("\r\n\r\n")
  if (end < 0) return closed ? { status: undefined, head: final, body: "" } : undefined
  const head = final.slice(0, end)
  const length = /\r\ncontent-length: *(\d+)/i.exec(head)
  const body = final.slice(end + 4)
  if (length !== null && body.length < Number(length[1]) && !closed) return undefined
  if (length === null && !closed) return undefined
  return { status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1]), head, body: Buffer.from(body, "latin1").toString("utf8") }
}

/**
 * Sends one request from a raw socket: `headers`, then `size` bytes of body (framed as chunks when
 * `chunked`) as fast as the socket takes them, beginning with `opening`. A client that reads while
 * it sends stops at the first byte of the answer; a `whole` one sends everything, then reads.
 */
const probe = (
  base: string,
  request: {
    readonly method?: string
    readonly path: string
    readonly headers: Record<string, string>
    readonly size: number
    readonly opening?: string
    readonly chunked?: boolean
    readonly whole?: boolean
  }
): Promise<Answer> =>
  new Promise((resolve) => {
    const url = new URL(base)
    const socket = connect(Number(url.port), url.hostname)
    socket.on("error", () => undefined)
    const received: Array<Buffer> = []
    let sent = 0
    let answered = false
    let done = false
    const finish = (closed: boolean) => {
      if (done || (request.whole === true && sent < request.size && !closed)) return
      const answer = parseAnswer(Buffer.concat(received), closed)
      if (answer === undefined) return
      done = true
      socket.destroy()
      resolve({ ...answer, sent })
    }
    socket.on("data", (data: Buffer) => {
      received.push(data)
      if (!/^HTTP\/1\.1 100 /.test(Buffer.concat(received).toString("latin1")) || received.length > 1) answered = true
      finish(false)
    })
    socket.on("close", () => finish(true))
    const head = [
      `${request.method ?? "POST"} ${request.path} HTTP/1.1`,
      `host: ${url.host}`,
      ...Object.entries(request.headers).map(([name, value]) => `${name}: ${value}`),
      request.chunked === true ? "transfer-encoding: chunked" : `content-length: ${request.size}`
    ].join("\r\n")
    socket.write(`${head}\r\n\r\n`)
    const opening = Buffer.from(request.opening ?? "")
    const frame = (piece: Buffer) =>
      request.chunked === true ? Buffer.concat([Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from("\r\n")]) : piece
    const send = () => {
      while (sent < request.size && !socket.destroyed && (request.whole === true || !answered)) {
        const piece = sent === 0 && opening.length > 0 ? opening : FILLER.subarray(0, Math.min(PIECE, request.size - sent))
        sent += piece.length
        if (!socket.write(frame(piece))) return void socket.once("drain", send)
      }
      if (sent >= request.size && request.chunked === true && !socket.destroyed) socket.write("0\r\n\r\n")
      // Everything is sent: an answer that came meanwhile can be taken now.
      if (sent >= request.size) finish(false)
    }
    send()
  })

/** A multipart envelope's opening for a file part, so an upload route reads on into the file. */
const filePart = (type: string, filename: string) =>
  `--abuse\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\nContent-Type: ${type}\r\n\r\n%PDF-1.4\n`

/** Resident set size and its peak, in bytes, of a process on Linux. */
const memoryOf = (pid: number) => {
  const status = readFileSync(`/proc/${pid}/status`, "utf8")
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? "NaN") * 1024
  return { rss: kb("VmRSS"), peak: kb("VmHWM") }
}

/** Every file below `dir`, as paths relative to it. */
const filesBelow = (dir: string): Array<string> =>
  existsSync(dir) ? readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).map((e) => e.name) : []

describe.each(hostBackends)("the reference host under abuse ($name)", (backend) => {
  let env: Record<string, string>
  let tearDown: () => Promise<void>
  let host: HostProcess
  let key: string
  let userToken: string
  let email: { id: string; secret: string }
  let connectPath: string
  let connectUrl: string
  let baseline: number

  beforeAll(async () => {
    ;({ env, tearDown } = await backend.setUp())
    env = {
      ...env,
      OMNI_REQUEST_TIMEOUT_SECONDS: String(REQUEST_TIMEOUT_S),
      OMNI_MAX_CONNECTIONS: String(MAX_CONNECTIONS),
      // Nothing private is reachable, as in production.
      OMNI_OUTBOUND_ALLOW: ""
    }
    host = await startHost(env)
    const boot = await admin(env, "bootstrap", "--email", "owner@example.com")
    key = boot.api_key
    userToken = boot.user_token
    const integration = await admin(env, "email-integration", "create", "--tenant", boot.tenant_id, "--address", "in@example.com")
    email = { id: integration.email_integration_id, secret: integration.inbound_secret }
    const link = await http(host.url, "POST", "/api/v1/channel-connect-tokens", {
      token: key,
      body: { allowed_channel_types: ["chatapp"] }
    })
    expect(link.status).toBe(201)
    connectUrl = link.body.connect_url
    connectPath = new URL(connectUrl).pathname
    baseline = memoryOf(host.child.pid!).rss
  })
  afterAll(async () => {
    if (host?.child.exitCode === null) await host.stop()
    await tearDown?.()
  })

  const serving = async () => {
    expect(host.child.exitCode).toBe(null)
    expect((await fetch(`${host.url}/healthz`)).status).toBe(200)
  }

  /** Every route that reads a body, with the headers that get it read (credentials, content type). */
  const bodyRoutes = async (): Promise<Array<{ path: string; headers: Record<string, string>; opening?: string }>> => {
    const document = (await http(host.url, "GET", "/api/v1/openapi.json")).body
    const id = "00000000-0000-4000-8000-000000000000"
    const routes: Array<{ path: string; headers: Record<string, string>; opening?: string }> = []
    for (const [template, operations] of Object.entries<Record<string, { requestBody?: { content: object } }>>(document.paths)) {
      for (const [method, operation] of Object.entries(operations)) {
        if (operation.requestBody === undefined) continue
        expect(["post", "patch", "put"]).toContain(method)
        const multipart = Object.keys(operation.requestBody.content).includes("multipart/form-data")
        routes.push({
          path: `${method.toUpperCase()} ${template.replace(/\{[^}]+\}/g, id)}`,
          headers: {
            authorization: `Bearer ${template === "/api/v1/tenants" ? userToken : key}`,
            "content-type": multipart ? "multipart/form-data; boundary=abuse" : "application/json"
          },
          ...(multipart ? { opening: filePart("application/pdf", "big.pdf") } : {})
        })
      }
    }
    // Outside /api/v1: the operator's webhook (unauthenticated until its signature is read), received
    // email (its secret), the connect page's form.
    routes.push(
      { path: "POST /webhooks/chatapp", headers: { "content-type": "application/json", "x-hub-signature-256": "sha256=00" } },
      { path: `POST /webhooks/email/${email.id}`, headers: { "content-type": "message/rfc822", authorization: `Bearer ${email.secret}` } },
      { path: `POST ${connectPath}`, headers: { "content-type": "application/x-www-form-urlencoded" } }
    )
    return routes
  }

  it("answers 400 or 413 to 60, 100 and 200 MB bodies sent fast with a Content-Length to every route that reads one, and keeps serving", async () => {
    const routes = await bodyRoutes()
    expect(routes.length).toBeGreaterThanOrEqual(35)
    for (const size of [60 * MB, 100 * MB, 200 * MB]) {
      for (const route of routes) {
        const [method, path] = route.path.split(" ") as [string, string]
        const answer = await probe(host.url, { method, path, headers: route.headers, size, ...(route.opening ? { opening: route.opening } : {}) })
        expect({ route: route.path, size, status: answer.status }).toEqual({ route: route.path, size, status: expect.toBeOneOf([400, 413]) })
      }
      await serving()
    }
  }, 240_000)

  it("answers a chunked upload, email or payload that grows past its limit mid-body, readable by a client that sends it all first", async () => {
    const routes = (await bodyRoutes()).filter((route) => route.opening !== undefined || route.path.includes("/webhooks/"))
    expect(routes).toHaveLength(4)
    for (const route of routes) {
      const [method, path] = route.path.split(" ") as [string, string]
      const answer = await probe(host.url, {
        method,
        path,
        headers: route.headers,
        size: 60 * MB,
        chunked: true,
        whole: true,
        ...(route.opening ? { opening: route.opening } : {})
      })
      expect({ route: route.path, status: answer.status, sent: answer.sent }).toEqual({
        route: route.path,
        status: expect.toBeOneOf([400, 413]),
        sent: 60 * MB
      })
    }
    await serving()
  }, 120_000)

  it("lets a client that sends a whole oversized body with a Content-Length read the 413 afterwards (no broken pipe)", async () => {
    const routes = (await bodyRoutes()).filter((route) => route.opening === undefined)
    for (const route of routes) {
      const [method, path] = route.path.split(" ") as [string, string]
      // Past each route's limit: 40 MB for a received email, at most 3 MB elsewhere.
      const size = path.startsWith("/webhooks/email/") ? 41 * MB : 4 * MB
      const answer = await probe(host.url, { method, path, headers: route.headers, size, whole: true })
      expect({ route: route.path, status: answer.status }).toEqual({ route: route.path, status: 413 })
    }
    await serving()
  }, 120_000)

  it("stored nothing of the refused bodies, and its memory came back down", async () => {
    expect(filesBelow(join(env.OMNI_DATA_DIR!, "files"))).toEqual([])
    const contacts = await http(host.url, "GET", "/api/v1/contacts", { token: key })
    expect(contacts.status).toBe(200)
    expect(contacts.body.items).toEqual([])
    const memory = memoryOf(host.child.pid!)
    // Gigabytes went by; what stays is the host's own working set.
    expect(memory.rss - baseline).toBeLessThan(150 * MB)
    expect(memory.peak - baseline).toBeLessThan(400 * MB)
  })

  it("answers slow senders 408 within the request timeout, keeps /healthz quick meanwhile, and refuses connections past the cap with 503", async () => {
    const started = Date.now()
    /** A POST whose body trickles: proven accepted once the host asks for its body (100 Continue). */
    const slowSender = (path: string, authorization = "") =>
      new Promise<{ readonly socket: Socket; readonly answer: Promise<{ text: string; closedAfterMs: number }> }>((accepted, failed) => {
        const url = new URL(host.url)
        const socket = connect(Number(url.port), url.hostname)
        socket.on("error", () => undefined)
        let text = ""
        let trickle: NodeJS.Timeout | undefined
        const answer = new Promise<{ text: string; closedAfterMs: number }>((done) =>
          socket.on("close", () => {
            clearInterval(trickle)
            done({ text, closedAfterMs: Date.now() - started })
          })
        )
        socket.on("data", (data: Buffer) => {
          text += data.toString("latin1")
          if (trickle === undefined && text.startsWith("HTTP/1.1 100 Continue")) {
            trickle = setInterval(() => socket.write("{"), 2_000)
            accepted({ socket, answer })
          } else if (trickle === undefined) failed(new Error(`not accepted: ${text}`))
        })
        socket.write(
          `POST ${path} HTTP/1.1\r\nhost: ${url.host}\r\ncontent-type: application/json\r\n` +
            `${authorization === "" ? "" : `authorization: ${authorization}\r\n`}` +
            "content-length: 1000\r\nexpect: 100-continue\r\n\r\n"
        )
      })
    // Half of them on the unauthenticated operator webhook, half on an authenticated route.
    const slow = await Promise.all(
      Array.from({ length: SLOW_SOCKETS }, (_, i) =>
        i % 2 === 0 ? slowSender("/webhooks/chatapp") : slowSender("/api/v1/contacts", `Bearer ${key}`))
    )
    expect(slow).toHaveLength(SLOW_SOCKETS)

    const timings: Array<number> = []
    for (let i = 0; i < 5; i++) {
      const at = performance.now()
      const response = await fetch(`${host.url}/healthz`, { headers: { connection: "close" } })
      expect(response.status).toBe(200)
      await response.text()
      timings.push(performance.now() - at)
    }
    timings.sort((a, b) => a - b)
    expect(timings[2]).toBeLessThan(100)

    // Fill the cap, then one more: a 503 it can read, and the host keeps every held connection.
    const more = await Promise.all(Array.from({ length: MAX_CONNECTIONS - SLOW_SOCKETS }, () => slowSender("/webhooks/chatapp")))
    const refused = await probe(host.url, { method: "GET", path: "/healthz", headers: {}, size: 0 })
    expect(refused.status).toBe(503)
    expect(refused.head.toLowerCase()).toContain("retry-after:")

    const answers = await Promise.all([...slow, ...more].map((sender) => sender.answer))
    for (const answer of answers) {
      expect(answer.text).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 408 /)
      // The host checks timeouts every second at most; the rest is this machine's load.
      expect(answer.closedAfterMs).toBeLessThan((REQUEST_TIMEOUT_S + 5) * 1000)
    }
    await serving()
  }, 120_000)

  it("stores large received emails arriving at once with memory bounded well below their size, none lost", async () => {
    const FILE = 16 * MB
    const emails = await Promise.all(Array.from({ length: 6 }, async (_, i) => {
      const file = Buffer.alloc(FILE, 0x41 + i)
      file.write("%PDF-1.7\n", 0, "latin1")
      return rawEmail({
        from: `sender-${i}@customer.example`,
        to: "in@example.com",
        subject: `Scan ${i}`,
        messageId: `scan-${i}@customer.example`,
        text: `Scan ${i} attached.`,
        files: [{ filename: `scan-${i}.pdf`, contentType: "application/pdf", content: new Uint8Array(file) }]
      })
    }))
    const conversations = async (): Promise<Array<{ subject: string }>> =>
      (await http(host.url, "GET", `/api/v1/conversations?channel_id=${email.id}&page_size=100`, { token: key })).body.items
    const before = memoryOf(host.child.pid!).rss
    let peak = before
    const sampler = setInterval(() => {
      peak = Math.max(peak, memoryOf(host.child.pid!).rss)
    }, 5)
    try {
      const answers = await Promise.all(emails.map((raw) =>
        fetch(`${host.url}/webhooks/email/${email.id}`, {
          method: "POST",
          headers: { "content-type": "message/rfc822", authorization: `Bearer ${email.secret}` },
          body: new Uint8Array(raw)
        }).then((response) => response.status)
      ))
      expect(answers).toEqual(Array(6).fill(200))
      await waitUntil("the six emails are stored", async () => (await conversations()).length === 6, 120_000)
    } finally {
      clearInterval(sampler)
    }
    expect((await conversations()).map((c) => c.subject).sort()).toEqual([0, 1, 2, 3, 4, 5].map((i) => `Scan ${i}`))
    const stored = filesBelow(join(env.OMNI_DATA_DIR!, "files")).length
    expect(stored).toBeGreaterThanOrEqual(6)
    // Held whole and copied, one 39 MB email once raised the host's memory by 255 MB, six at once by 812 MB;
    // streamed and read two at a time, six together raise it by less than their own size (measured 70-95 MB
    // on a fresh host; the bench holds the tighter goal, npm run bench:attachments -- --only email-memory).
    const total = emails.reduce((sum, raw) => sum + raw.length, 0)
    expect(total).toBeGreaterThan(6 * FILE)
    expect(peak - before, `peak growth ${((peak - before) / MB).toFixed(1)} MB for ${(total / MB).toFixed(0)} MB of email`)
      .toBeLessThan(total)
    await serving()
  }, 180_000)

  it("refuses a number another tenant's channel holds on the connect page: 409, no channel created", async () => {
    const inputs = validInputs("chatapp")
    const held = await (await openConnectForm(connectUrl, "chatapp"))(inputs)
    expect(held.status).toBe(200)

    const created = await http(host.url, "POST", "/api/v1/tenants", { token: userToken, body: { name: "Second" } })
    expect(created.status).toBe(201)
    const inSecond = { token: key, headers: { "X-Tenant-ID": created.body.id as string } }
    const link = await http(host.url, "POST", "/api/v1/channel-connect-tokens", { ...inSecond, body: { allowed_channel_types: ["chatapp"] } })
    expect(link.status).toBe(201)
    const taken = await (await openConnectForm(link.body.connect_url, "chatapp"))(inputs)
    expect(taken.status).toBe(409)
    expect(await taken.text()).toContain("already connected to an active channel")
    expect((await http(host.url, "GET", "/api/v1/channels", inSecond)).body.items).toEqual([])
    const holders = (await http(host.url, "GET", "/api/v1/channels", { token: key })).body.items
    expect(holders).toMatchObject([{ external_id: inputs.phone_number_id, status: "active" }])
  })

  it("answers a verify of an internal name with the kind of address only, never what it resolves to", async () => {
    const created = await http(host.url, "POST", "/api/v1/webhook-endpoints", {
      token: key,
      body: { name: "internal", url: "https://localhost:8443/hook", subscribed_events: ["contact.created"] }
    })
    expect(created.status).toBe(201)
    const verified = await http(host.url, "POST", `/api/v1/webhook-endpoints/${created.body.webhook_id}/verify`, { token: key })
    expect(verified.status).toBe(200)
    expect(verified.body).toMatchObject({ success: false })
    expect(verified.body.error).toMatch(/loopback/)
    expect(JSON.stringify(verified.body)).not.toMatch(/127\.0\.0\.1|::1/)
  })

  it("answers an empty upload 'File is empty' and keeps no inline upload that is not an image", async () => {
    const upload = async (path: string, bytes: Uint8Array<ArrayBuffer>, name: string, type: string) => {
      const form = new FormData()
      form.append("file", new Blob([bytes], { type }), name)
      const response = await fetch(`${host.url}/api/v1${path}`, { method: "POST", headers: { authorization: `Bearer ${key}` }, body: form })
      return { status: response.status, body: await response.json() }
    }
    const filesBefore = filesBelow(join(env.OMNI_DATA_DIR!, "files")).length
    for (const path of ["/attachments/upload", "/email-integrations/inline-images/upload"]) {
      expect(await upload(path, new Uint8Array(0), "empty.pdf", "application/pdf")).toEqual({ status: 400, body: { detail: { code: "bad_request", message: "File is empty" } } })
    }
    const pdf = new TextEncoder().encode("%PDF-1.4\n% not an image\n")
    expect((await upload("/email-integrations/inline-images/upload", pdf, "doc.pdf", "application/pdf")).status).toBe(400)
    expect(filesBelow(join(env.OMNI_DATA_DIR!, "files")).length).toBe(filesBefore)
    await serving()
  })
})
