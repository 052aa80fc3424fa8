import { connect, type Socket } from "node:net"
import { afterEach, describe, expect, it } from "vitest"
import { simulatedProviders } from "../../adapters/providers/SimulatedProviders.ts"
import { type RunningServer, serve } from "../../adapters/node/NodeListener.ts"
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

  it("answers 413 to a 100 MB form sent to the connect page having read little of it, and closes the connection", async () => {
    test = await startTestApp(await testDatabases.find((d) => d.name === "sqlite-memory")!.open(), {
      providers: simulatedProviders,
      publicUrl: "http://connect.test"
    })
    server = await serve(test.app.handler, { port: 0, host: "127.0.0.1" })
    let received = 0
    server.server.on("connection", (socket: Socket) => socket.on("data", (data: Buffer) => received += data.length))
    const socket = rawClient(server)
    let answer = ""
    socket.on("data", (data: Buffer) => answer += data.toString("latin1"))
    const closed = signal()
    socket.on("close", closed.resolve)

    // Chunked, so no Content-Length gives the size away; written only as the server takes it.
    socket.write(
      "POST /connect/occ_any HTTP/1.1\r\nhost: connect.test\r\n" +
        "content-type: application/x-www-form-urlencoded\r\ntransfer-encoding: chunked\r\n\r\n"
    )
    const chunk = `${CHUNK.toString(16)}\r\n${"a".repeat(CHUNK)}\r\n`
    let sent = 0
    const send = () => {
      while (sent < 100 * MB && !socket.destroyed) {
        sent += CHUNK
        if (!socket.write(chunk)) return socket.once("drain", send)
      }
      if (!socket.destroyed) socket.end("0\r\n\r\n")
    }
    send()
    await closed.promise

    expect(answer).toMatch(/^HTTP\/1\.1 413 /)
    expect(answer.toLowerCase()).toContain("\r\nconnection: close\r\n")
    expect(received).toBeLessThan(1 * MB)
    expect(sent).toBeLessThan(100 * MB)
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
