import { connect, type Socket } from "node:net"
import { afterEach, describe, expect, it } from "vitest"
import { simulatedProviders } from "../../adapters/providers/SimulatedProviders.ts"
import { type RunningServer, serve } from "../../adapters/node/NodeServer.ts"
import { testDatabases } from "../support/Databases.ts"
import { startTestApp, type TestApp } from "../support/TestApp.ts"

const MB = 1024 * 1024
const CHUNK = 64 * 1024

/** A promise and the function that resolves it. */
const signal = () => {
  let resolve!: () => void
  const promise = new Promise<void>((done) => {
    resolve = done
  })
  return { promise, resolve }
}

/** Resolves after one turn of the event loop, so a poll lets I/O run between its looks. */
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve))

/** A body of `total` bytes, made only as it is pulled; `pulled` counts what was made. */
const lazyBody = (total: number) => {
  const cancelled = signal()
  const state = { pulled: 0, cancelled: cancelled.promise }
  const stream = new ReadableStream<Uint8Array>({
    pull: (controller) => {
      if (state.pulled >= total) return controller.close()
      state.pulled += CHUNK
      controller.enqueue(new Uint8Array(CHUNK))
    },
    cancel: () => cancelled.resolve()
  }, { highWaterMark: 0 })
  return { stream, state }
}

/** A raw client socket connected to `server`; writing on after the server closed fails, as it should. */
const rawClient = (server: RunningServer) => {
  const socket = connect(Number(new URL(server.url).port), "127.0.0.1")
  socket.on("error", () => {})
  return socket
}

/**
 * Writes `total` bytes to `socket` in pieces as fast as it takes them (`frame` wraps each piece,
 * for chunked encoding); resolves with how many were written before the socket closed, if it did.
 */
const sendAll = (socket: Socket, total: number, frame: (size: number) => string | Buffer = (size) => Buffer.alloc(size, 97)) =>
  new Promise<number>((done) => {
    let sent = 0
    const send = () => {
      while (sent < total && !socket.destroyed) {
        const size = Math.min(CHUNK, total - sent)
        sent += size
        if (!socket.write(frame(size))) return void socket.once("drain", send)
      }
      done(sent)
    }
    socket.once("close", () => done(sent))
    send()
  })

/** A raw POST of `size` bytes with a Content-Length, written whole before the answer is read; the answer and the bytes sent. */
const postRaw = async (server: RunningServer, path: string, size: number) => {
  const socket = rawClient(server)
  let answer = ""
  socket.on("data", (data: Buffer) => answer += data.toString("latin1"))
  const closed = signal()
  socket.on("close", closed.resolve)
  socket.write(`POST ${path} HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: ${size}\r\n\r\n`)
  const sent = await sendAll(socket, size)
  await closed.promise
  return { answer, sent }
}

describe("the Node listener", () => {
  let server: RunningServer | undefined
  let test: TestApp | undefined
  afterEach(async () => {
    await server?.close(0)
    await test?.close()
    server = undefined
    test = undefined
  })

  it("sends a 256 MB body no faster than a slow client reads it, and cancels it when the client leaves", async () => {
    const body = lazyBody(256 * MB)
    server = await serve(async () => new Response(body.stream), { port: 0, host: "127.0.0.1" })
    const connections: Array<Socket> = []
    server.server.on("connection", (socket: Socket) => connections.push(socket))
    const socket = rawClient(server)
    socket.write("GET / HTTP/1.1\r\nhost: test\r\n\r\n")

    // A slow reader: one read per turn of the event loop, until it has 32 MB.
    let consumed = 0
    let furthestAhead = 0
    const enough = signal()
    socket.on("data", (data: Buffer) => {
      consumed += data.length
      furthestAhead = Math.max(furthestAhead, body.state.pulled - consumed)
      socket.pause()
      if (consumed >= 32 * MB) enough.resolve()
      else setImmediate(() => socket.resume())
    })
    await enough.promise

    // Then it stops reading; once the server's socket waits for a drain, the server holds only what
    // the kernel's socket buffers hold (a few MB; on loopback they may grow to tens), not the rest.
    while (connections[0]?.writableNeedDrain !== true) await nextTurn()
    furthestAhead = Math.max(furthestAhead, body.state.pulled - consumed)
    expect(furthestAhead).toBeLessThan(48 * MB)

    socket.destroy()
    await body.state.cancelled
    expect(body.state.pulled).toBeLessThan(128 * MB)
  })

  it("answers 413 to a 100 MB chunked form sent to the connect page, reads the rest away so the client reads the answer, and closes", async () => {
    test = await startTestApp(await testDatabases.find((d) => d.name === "sqlite-memory")!.open(), {
      providers: simulatedProviders,
      publicUrl: "http://connect.test"
    })
    server = await serve(test.app.handler, { port: 0, host: "127.0.0.1" })
    const socket = rawClient(server)
    let answer = ""
    socket.on("data", (data: Buffer) => answer += data.toString("latin1"))
    const closed = signal()
    socket.on("close", closed.resolve)

    // Chunked, so no Content-Length gives the size away; written whole, as a client that reads the
    // answer only after sending does.
    socket.write(
      "POST /connect/occ_any HTTP/1.1\r\nhost: connect.test\r\n" +
        "content-type: application/x-www-form-urlencoded\r\ntransfer-encoding: chunked\r\n\r\n"
    )
    const sent = await sendAll(socket, 100 * MB, (size) => `${size.toString(16)}\r\n${"a".repeat(size)}\r\n`)
    if (!socket.destroyed) socket.end("0\r\n\r\n")
    await closed.promise

    expect(sent).toBe(100 * MB)
    expect(answer).toMatch(/^HTTP\/1\.1 413 /)
    expect(answer.toLowerCase()).toContain("\r\nconnection: close\r\n")
  })

  it("answers a declared length over the limit before 100 Continue, so the body is never sent", async () => {
    test = await startTestApp(await testDatabases.find((d) => d.name === "sqlite-memory")!.open())
    server = await serve(test.app.handler, { port: 0, host: "127.0.0.1" })
    const socket = rawClient(server)
    let answer = ""
    socket.on("data", (data: Buffer) => answer += data.toString("latin1"))
    const closed = signal()
    socket.on("close", closed.resolve)
    socket.write(
      "POST /webhooks/chatapp HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\n" +
        `content-length: ${60 * MB}\r\nexpect: 100-continue\r\n\r\n`
    )
    await closed.promise
    expect(answer).not.toContain("100 Continue")
    expect(answer).toMatch(/^HTTP\/1\.1 413 /)
  })

  it("sends 100 Continue once the handler reads the body, and serves the request", async () => {
    server = await serve(async (request) => new Response(`got ${(await request.arrayBuffer()).byteLength}`), {
      port: 0,
      host: "127.0.0.1"
    })
    const socket = rawClient(server)
    let answer = ""
    socket.on("data", (data: Buffer) => answer += data.toString("latin1"))
    socket.write("POST / HTTP/1.1\r\nhost: localhost\r\ncontent-length: 5\r\nexpect: 100-continue\r\n\r\n")
    while (!answer.includes("100 Continue\r\n\r\n")) await nextTurn()
    socket.write("hello")
    while (!answer.includes("got 5")) await nextTurn()
    expect(answer).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 /)
    socket.destroy()
  })

  it("keeps serving when a handler stops reading a fast body half-way, throws, or rejects", async () => {
    server = await serve(async (request) => {
      const path = new URL(request.url).pathname
      if (path === "/throw") throw new Error("boom")
      if (path === "/reject") return Promise.reject(new Error("boom"))
      // Reads 1 MB of the body, then gives up on the rest (as a refused upload does).
      const reader = request.body!.getReader()
      let read = 0
      while (read < MB) read += (await reader.read()).value?.byteLength ?? MB
      await reader.cancel()
      return Response.json({ detail: "too large" }, { status: 413 })
    }, { port: 0, host: "127.0.0.1" })
    for (let round = 0; round < 3; round++) {
      const refused = await postRaw(server, "/cancel", 64 * MB)
      expect(refused.answer).toMatch(/^HTTP\/1\.1 413 /)
      expect(refused.sent).toBe(64 * MB)
    }
    const thrown = await fetch(`${server.url}/throw`)
    expect({ status: thrown.status, body: await thrown.json() })
      .toEqual({ status: 500, body: { detail: { code: "internal_error", message: "Internal server error" } } })
    expect((await fetch(`${server.url}/reject`, { method: "POST", body: "x" })).status).toBe(500)
    expect((await fetch(`${server.url}/cancel`, { method: "POST", body: "small" })).status).toBe(413)
  })

  it("answers 408 to a body that trickles in past the request timeout and closes the connection", async () => {
    server = await serve(async (request) => new Response(await request.text()), {
      port: 0,
      host: "127.0.0.1",
      requestTimeoutMs: 1_000
    })
    const socket = rawClient(server)
    let answer = ""
    socket.on("data", (data: Buffer) => answer += data.toString("latin1"))
    const closed = signal()
    socket.on("close", closed.resolve)
    const started = Date.now()
    socket.write("POST / HTTP/1.1\r\nhost: localhost\r\ncontent-length: 1000\r\n\r\n")
    const trickle = setInterval(() => socket.write("x"), 200)
    await closed.promise
    clearInterval(trickle)
    expect(answer).toMatch(/^HTTP\/1\.1 408 /)
    // The timeout is checked every tenth of it; the answer comes within the timeout and one check.
    expect(Date.now() - started).toBeLessThan(5_000)
  })

  it("answers a connection past the cap 503 with Retry-After and closes it, and serves again once one closes", async () => {
    server = await serve(async () => new Response("ok"), { port: 0, host: "127.0.0.1", maxConnections: 3 })
    const held = [rawClient(server), rawClient(server), rawClient(server)]
    const running = server
    while (running.connections() < 3) await nextTurn()
    const refused = rawClient(server)
    let answer = ""
    refused.on("data", (data: Buffer) => answer += data.toString("latin1"))
    const closed = signal()
    refused.on("close", closed.resolve)
    refused.write("GET / HTTP/1.1\r\nhost: localhost\r\n\r\n")
    await closed.promise
    expect(answer).toMatch(/^HTTP\/1\.1 503 /)
    expect(answer.toLowerCase()).toContain("retry-after: 1")
    expect(answer).toContain(JSON.stringify({ detail: { code: "overloaded", message: "Too many open connections; retry shortly" } }))
    expect(running.connections()).toBe(3)

    held[0]!.destroy()
    while (running.connections() > 2) await nextTurn()
    const answered = await fetch(server.url, { headers: { connection: "close" } })
    expect(await answered.text()).toBe("ok")
    for (const socket of held) socket.destroy()
  })

  it("reads a small refused body to its end and keeps the connection for the next request", async () => {
    test = await startTestApp(await testDatabases.find((d) => d.name === "sqlite-memory")!.open())
    server = await serve(test.app.handler, { port: 0, host: "127.0.0.1" })
    const socket = rawClient(server)
    let answers = ""
    socket.on("data", (data: Buffer) => answers += data.toString("latin1"))
    const closed = signal()
    let ended = false
    socket.on("close", () => {
      ended = true
      closed.resolve()
    })
    const body = "x".repeat(200_000)
    // No credentials: refused before the body is read. The body follows the answer.
    socket.write(`POST /api/v1/contacts HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n`)
    while (!answers.includes("\r\n\r\n") && !ended) await nextTurn()
    socket.write(body)
    socket.write("GET /api/v1/openapi.json HTTP/1.1\r\nhost: localhost\r\n\r\n")
    while ((answers.match(/HTTP\/1\.1 /g) ?? []).length < 2 && !ended) await nextTurn()
    expect(answers).toMatch(/^HTTP\/1\.1 401 /)
    expect(answers).toMatch(/HTTP\/1\.1 200 [^\r]*\r\n[\s\S]*openapi/)
    expect(answers.toLowerCase()).not.toContain("connection: close")
    socket.end()
    await closed.promise
  })
})
