import { randomBytes } from "node:crypto"
import type { ServerResponse } from "node:http"
import * as net from "node:net"
import { setFlagsFromString } from "node:v8"
import { runInNewContext } from "node:vm"
import { Effect } from "effect"
import { afterEach, describe, expect, it } from "vitest"
import { type GuardedHttp, makeGuardedHttp } from "../../adapters/http/GuardedHttp.ts"
import { OutboundError, type OutboundRequest, type OutboundStreamed } from "../../src/ports/OutboundHttp.ts"
import { type Handler, type LocalServer, startServer } from "./LocalServers.ts"

const cleanups: Array<() => unknown> = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

const client = (allow: ReadonlyArray<string> = ["127.0.0.1/32"]): GuardedHttp => {
  const made = makeGuardedHttp({ allow })
  cleanups.push(made.close)
  return made
}

const server = async (handler: Handler): Promise<LocalServer> => {
  const started = await startServer(handler)
  cleanups.push(started.close)
  return started
}

/** A bare TCP server on 127.0.0.1 that answers each connection as `answer` writes, for answers Node's HTTP server would not send. */
const rawServer = async (answer: (socket: net.Socket) => void): Promise<{ readonly origin: string }> => {
  const sockets = new Set<net.Socket>()
  const listener = net.createServer((socket) => {
    sockets.add(socket)
    socket.on("close", () => sockets.delete(socket))
    socket.on("error", () => {})
    socket.once("data", () => answer(socket))
  })
  await new Promise<void>((resolve) => listener.listen(0, "127.0.0.1", resolve))
  cleanups.push(() =>
    new Promise<void>((resolve) => {
      for (const socket of sockets) socket.destroy()
      listener.close(() => resolve())
    })
  )
  return { origin: `http://127.0.0.1:${(listener.address() as net.AddressInfo).port}` }
}

const get = (url: string, extra: Partial<OutboundRequest> = {}): OutboundRequest => ({
  method: "GET",
  url,
  headers: {},
  timeoutMs: 5_000,
  ...extra
})

const open = (http: GuardedHttp, request: OutboundRequest) => Effect.runPromise(http.stream(request))
const refusal = (http: GuardedHttp, request: OutboundRequest) => Effect.runPromise(Effect.flip(http.stream(request)))

/** Reads `body` to its end or its error, counting what arrived. */
const drain = async (body: ReadableStream<Uint8Array>) => {
  const reader = body.getReader()
  const chunks: Array<Uint8Array> = []
  let bytes = 0
  try {
    for (;;) {
      const next = await reader.read()
      if (next.done) return { bytes, chunks, error: undefined }
      chunks.push(next.value)
      bytes += next.value.byteLength
    }
  } catch (error) {
    return { bytes, chunks, error }
  }
}

const concat = (chunks: ReadonlyArray<Uint8Array>) => Buffer.concat(chunks.map((chunk) => Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)))

const expectOutboundError = (error: unknown, reason: OutboundError["reason"]) => {
  expect(error).toBeInstanceOf(OutboundError)
  expect((error as OutboundError).reason).toBe(reason)
}

/** Writes `chunk` forever, as fast as the connection takes it, until the response closes; counts what it wrote. */
const pumpForever = (res: ServerResponse, chunk: Buffer, state: { written: number; closed: boolean }) => {
  res.on("close", () => {
    state.closed = true
  })
  const pump = () => {
    while (!res.destroyed) {
      state.written += chunk.length
      if (!res.write(chunk)) break
    }
    if (!res.destroyed) res.once("drain", pump)
  }
  pump()
}

const waitFor = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * Resolves once `bytes` have come in over another loopback connection, read as fast as they come:
 * I/O this process's event loop did, in which a connection that is not paused would have been read too.
 */
const elsewhere = async (bytes: number) => {
  const source = await server((_req, res) => pumpForever(res, Buffer.alloc(64 * 1024, 120), { written: 0, closed: false }))
  const reader = (await fetch(source.origin)).body!.getReader()
  for (let read = 0; read < bytes;) {
    const next = await reader.read()
    if (next.done) throw new Error(`the other connection ended after ${read} bytes`)
    read += next.value.byteLength
  }
  await reader.cancel()
}

describe("the guarded outbound client's stream", () => {
  it("answers at the head and streams the body byte-exact", async () => {
    const payload = randomBytes(3 * 1024 * 1024 + 17)
    let sendBody = () => {}
    const receiver = await server((req, res) => {
      if (req.url === "/again") return res.end("ok")
      res.writeHead(200, { "content-type": "application/octet-stream", "content-length": String(payload.length) })
      res.flushHeaders()
      // The body only follows once the client has the head.
      sendBody = () => res.end(payload)
    })
    const http = client()
    const streamed = await open(http, get(`${receiver.origin}/file`, { maxResponseBytes: 4 * 1024 * 1024 }))
    expect(streamed.status).toBe(200)
    expect(streamed.headers["content-type"]).toBe("application/octet-stream")
    sendBody()
    const { chunks, error } = await drain(streamed.body)
    expect(error).toBeUndefined()
    expect(concat(chunks).equals(payload)).toBe(true)
    // The connection was left clean and is kept: more requests open no more connections (undici's
    // pool opens a second one for a request sent just as an answer ends, with `request` too).
    for (let i = 0; i < 5; i++) expect((await drain((await open(http, get(`${receiver.origin}/again`))).body)).bytes).toBe(2)
    expect(receiver.connections()).toBeLessThanOrEqual(2)
  })

  it("streams a body of exactly maxResponseBytes, and an empty one", async () => {
    const receiver = await server((req, res) => res.end(req.url === "/empty" ? "" : "x".repeat(100)))
    const http = client()
    const exact = await drain((await open(http, get(`${receiver.origin}/exact`, { maxResponseBytes: 100 }))).body)
    expect(exact).toMatchObject({ bytes: 100, error: undefined })
    const empty = await drain((await open(http, get(`${receiver.origin}/empty`))).body)
    expect(empty).toMatchObject({ bytes: 0, error: undefined })
  })

  it("fails with TooLarge at the head when Content-Length declares more than maxResponseBytes", async () => {
    let closed = false
    const receiver = await server((_req, res) => {
      res.on("close", () => {
        closed = true
      })
      // Declares 2 MB and sends nothing of it: the refusal cannot wait for the body.
      res.writeHead(200, { "content-length": String(2 * 1024 * 1024) })
      res.flushHeaders()
    })
    const started = performance.now()
    const error = await refusal(client(), get(`${receiver.origin}/big`, { maxResponseBytes: 1024 * 1024 }))
    expect(error.reason).toBe("TooLarge")
    expect(error.message).toContain("2097152 bytes")
    expect(performance.now() - started).toBeLessThan(2_000)
    await expect.poll(() => closed).toBe(true)
  })

  it("errors the body with TooLarge past the cap when a chunked answer declares no length, and stops reading", async () => {
    const state = { written: 0, closed: false }
    const receiver = await server((_req, res) => pumpForever(res, Buffer.alloc(64 * 1024, 120), state))
    const cap = 1024 * 1024
    const streamed = await open(client(), get(`${receiver.origin}/`, { maxResponseBytes: cap }))
    expect(streamed.headers["transfer-encoding"]).toBe("chunked")
    const { bytes, error } = await drain(streamed.body)
    expectOutboundError(error, "TooLarge")
    expect(bytes).toBeLessThanOrEqual(cap)
    expect(bytes).toBeGreaterThan(cap - 64 * 1024)
    await expect.poll(() => state.closed).toBe(true)
    // What the server got out before it saw the close: the cap plus what sockets buffer, no more.
    expect(state.written).toBeLessThan(cap + 16 * 1024 * 1024)
  })

  it("errors the body with TooLarge past the cap when the answer runs until the connection closes", async () => {
    let written = 0
    let closed = false
    const receiver = await rawServer((socket) => {
      socket.on("close", () => {
        closed = true
      })
      socket.write("HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-type: text/plain\r\n\r\n")
      const chunk = Buffer.alloc(64 * 1024, 121)
      const pump = () => {
        while (!socket.destroyed) {
          written += chunk.length
          if (!socket.write(chunk)) break
        }
        if (!socket.destroyed) socket.once("drain", pump)
      }
      pump()
    })
    const cap = 512 * 1024
    const streamed = await open(client(), get(`${receiver.origin}/`, { maxResponseBytes: cap }))
    const { bytes, error } = await drain(streamed.body)
    expectOutboundError(error, "TooLarge")
    expect(bytes).toBeLessThanOrEqual(cap)
    await expect.poll(() => closed).toBe(true)
    expect(written).toBeLessThan(cap + 16 * 1024 * 1024)
  })

  it("never streams past a Content-Length smaller than what the server sends", async () => {
    const receiver = await rawServer((socket) => {
      socket.write("HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\n")
      socket.write(Buffer.alloc(100, 97))
      // The rest, past the declared length, is no part of this answer.
      socket.write(Buffer.alloc(200_000, 98))
    })
    const streamed = await open(client(), get(`${receiver.origin}/`, { maxResponseBytes: 1_000 }))
    const { chunks, error } = await drain(streamed.body)
    expect(error).toBeUndefined()
    expect(concat(chunks).equals(Buffer.alloc(100, 97))).toBe(true)
  })

  it("errors the body with Timeout when it is still arriving at timeoutMs", async () => {
    const receiver = await server((_req, res) => {
      res.writeHead(200, { "content-type": "text/plain" })
      const timer = setInterval(() => res.write("."), 50)
      res.on("close", () => clearInterval(timer))
    })
    const started = performance.now()
    const streamed = await open(client(), get(`${receiver.origin}/`, { timeoutMs: 400 }))
    expect(streamed.status).toBe(200)
    const { bytes, error } = await drain(streamed.body)
    const took = performance.now() - started
    expectOutboundError(error, "Timeout")
    expect(bytes).toBeGreaterThan(0)
    expect(took).toBeGreaterThanOrEqual(390)
    expect(took).toBeLessThan(2_000)
  })

  it("fails with Timeout when the head does not come within timeoutMs", async () => {
    const receiver = await server(() => {})
    const error = await refusal(client(), get(`${receiver.origin}/`, { timeoutMs: 200 }))
    expect(error.reason).toBe("Timeout")
  })

  it("errors the body with Connection when the server resets it midway", async () => {
    const receiver = await server((_req, res) => {
      res.writeHead(200, { "content-length": "100000" })
      res.write("x".repeat(1000))
      setTimeout(() => res.socket?.resetAndDestroy(), 30)
    })
    const streamed = await open(client(), get(`${receiver.origin}/`))
    const { bytes, error } = await drain(streamed.body)
    expectOutboundError(error, "Connection")
    expect(bytes).toBe(1000)
  })

  it("returns a 302 as it is, with its Location, and never requests it", async () => {
    const receiver = await server((req, res) => {
      if (req.url === "/start") {
        res.writeHead(302, { location: "/target" })
        res.end("moved")
      } else res.end("followed")
    })
    const streamed = await open(client(), get(`${receiver.origin}/start`))
    expect(streamed.status).toBe(302)
    expect(streamed.headers["location"]).toBe("/target")
    expect(Buffer.from(concat((await drain(streamed.body)).chunks)).toString()).toBe("moved")
    expect(receiver.requests.map((r) => r.url)).toEqual(["/start"])
  })

  it("aborts the exchange when the body is cancelled after its first chunk", async () => {
    let closed = false
    let laterWrites = 0
    const receiver = await server((_req, res) => {
      res.on("close", () => {
        closed = true
      })
      res.writeHead(200, { "content-length": String(1024 * 1024) })
      res.write(Buffer.alloc(16 * 1024, 122))
      // Nothing more for a while, so only the cancellation can end the exchange before its timeout.
      const timer = setInterval(() => {
        if (!res.destroyed) {
          laterWrites += 1
          res.write(Buffer.alloc(16 * 1024, 122))
        }
      }, 1_500)
      res.on("close", () => clearInterval(timer))
    })
    const streamed = await open(client(), get(`${receiver.origin}/`, { timeoutMs: 10_000 }))
    const reader = streamed.body.getReader()
    const first = await reader.read()
    expect(first.value?.byteLength).toBe(16 * 1024)
    await reader.cancel()
    expect((await reader.read()).done).toBe(true)
    await expect.poll(() => closed, { timeout: 1_000 }).toBe(true)
    expect(laterWrites).toBe(0)
  })

  it("stops reading a fast body once it is cancelled", async () => {
    const state = { written: 0, closed: false }
    const receiver = await server((_req, res) => pumpForever(res, Buffer.alloc(16 * 1024, 122), state))
    const streamed = await open(client(), get(`${receiver.origin}/`, { maxResponseBytes: 1024 * 1024 * 1024, timeoutMs: 10_000 }))
    const reader = streamed.body.getReader()
    expect((await reader.read()).done).toBe(false)
    await reader.cancel()
    await expect.poll(() => state.closed).toBe(true)
    // It wrote what the sockets and the stream's small queue took, and nothing once the connection closed.
    expect(state.written).toBeLessThan(16 * 1024 * 1024)
  })

  it("pauses the connection while nobody reads the body", async () => {
    const state = { written: 0, closed: false }
    const receiver = await server((_req, res) => pumpForever(res, Buffer.alloc(64 * 1024, 122), state))
    const streamed = await open(client(), get(`${receiver.origin}/`, { maxResponseBytes: 1024 * 1024 * 1024, timeoutMs: 10_000 }))
    // Not a time but work: while the loop carries 16 MiB over another connection, this one fills up.
    await elsewhere(16 * 1024 * 1024)
    const stalled = state.written
    await elsewhere(16 * 1024 * 1024)
    // The server is stuck on a full connection: it wrote no more and far less than it would.
    expect(state.written).toBe(stalled)
    expect(stalled).toBeLessThan(16 * 1024 * 1024)
    // Reading resumes it.
    const reader = streamed.body.getReader()
    let read = 0
    while (read < stalled + 4 * 1024 * 1024) read += (await reader.read()).value?.byteLength ?? 0
    expect(state.written).toBeGreaterThan(stalled)
    await reader.cancel()
    await expect.poll(() => state.closed).toBe(true)
  })

  it("aborts the request when the Effect is interrupted before the head", async () => {
    let closed = false
    let arrive = () => {}
    const arrived = new Promise<void>((resolve) => {
      arrive = resolve
    })
    const receiver = await server((_req, res) => {
      res.on("close", () => {
        closed = true
      })
      arrive()
    })
    const abort = new AbortController()
    const running = Effect.runPromise(client().stream(get(`${receiver.origin}/`)), { signal: abort.signal })
    await arrived
    abort.abort()
    await expect(running).rejects.toThrow()
    await expect.poll(() => closed).toBe(true)
  })

  it("refuses a private address as request does, before connecting", async () => {
    const receiver = await server((_req, res) => res.end("ok"))
    const http = client([])
    const error = await refusal(http, get(`${receiver.origin}/`))
    expect(error.reason).toBe("UrlNotAllowed")
    expect(error.message).toContain("loopback")
    expect(error.message).toBe((await Effect.runPromise(Effect.flip(http.request(get(`${receiver.origin}/`))))).message)
    expect(receiver.connections()).toBe(0)
  })

  it("sends again on a fresh connection when a kept-alive one turns out closed by the server", async () => {
    const served = new WeakMap<net.Socket, number>()
    let dropped = 0
    const receiver = await server((req, res) => {
      const count = (served.get(req.socket) ?? 0) + 1
      served.set(req.socket, count)
      if (count > 1) {
        dropped += 1
        req.socket.destroy()
      } else res.end("ok")
    })
    const http = client()
    for (let i = 0; i < 4; i++) {
      const streamed: OutboundStreamed = await open(http, get(`${receiver.origin}/${i}`))
      expect(streamed.status).toBe(200)
      expect((await drain(streamed.body)).bytes).toBe(2)
    }
    expect(dropped).toBeGreaterThan(0)
  })

  it("streams 60 MB without holding it in memory", async () => {
    setFlagsFromString("--expose-gc")
    const gc = runInNewContext("gc") as () => void
    const measure = () => {
      gc()
      const usage = process.memoryUsage()
      return usage.heapUsed + usage.arrayBuffers
    }
    const total = 60 * 1024 * 1024
    const chunk = Buffer.alloc(64 * 1024, 55)
    const receiver = await server((_req, res) => {
      res.writeHead(200, { "content-length": String(total) })
      let sent = 0
      const pump = () => {
        while (sent < total) {
          sent += chunk.length
          if (!res.write(chunk)) return void res.once("drain", pump)
        }
        res.end()
      }
      pump()
    })
    const http = client()
    const before = measure()
    const streamed = await open(http, get(`${receiver.origin}/large`, { maxResponseBytes: total, timeoutMs: 30_000 }))
    const reader = streamed.body.getReader()
    let count = 0
    let reads = 0
    let peak = 0
    for (;;) {
      const next = await reader.read()
      if (next.done) break
      count += next.value.byteLength
      if (++reads % 64 === 0) peak = Math.max(peak, measure() - before)
      // A reader slower than loopback, as a real consumer writing to disk or to a provider is:
      // without backpressure the whole body would pile up in the stream's queue.
      if (reads % 4 === 0) await waitFor(1)
    }
    expect(count).toBe(total)
    expect(reads).toBeGreaterThan(64)
    expect(peak).toBeLessThan(20 * 1024 * 1024)
  })
})
