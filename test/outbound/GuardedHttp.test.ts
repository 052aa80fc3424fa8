import { Effect } from "effect"
import { TestClock } from "effect/testing"
import { afterEach, beforeAll, describe, expect, it } from "vitest"
import type { Socket } from "node:net"
import {
  type GuardedHttp,
  type GuardedHttpOptions,
  layer,
  makeGuardedHttp,
  parseOutboundAllow,
  type ResolvedAddress
} from "../../adapters/http/GuardedHttp.ts"
import { OutboundHttp, type OutboundRequest } from "../../src/ports/OutboundHttp.ts"
import {
  type Certificate,
  freePort,
  type Handler,
  hasOpenssl,
  type LocalServer,
  makeCertificate,
  startServer
} from "./LocalServers.ts"

const cleanups: Array<() => unknown> = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

const client = (options: GuardedHttpOptions): GuardedHttp => {
  const made = makeGuardedHttp(options)
  cleanups.push(made.close)
  return made
}

const server = async (handler: Handler = (_req, res) => res.end("ok"), certificate?: Certificate): Promise<LocalServer> => {
  const started = await startServer(handler, certificate)
  cleanups.push(started.close)
  return started
}

const get = (url: string, extra: Partial<OutboundRequest> = {}): OutboundRequest => ({
  method: "GET",
  url,
  headers: {},
  timeoutMs: 5_000,
  ...extra
})

const send = (http: GuardedHttp, request: OutboundRequest) => Effect.runPromise(http.request(request))
const failure = (http: GuardedHttp, request: OutboundRequest) => Effect.runPromise(Effect.flip(http.request(request)))
const text = (body: Uint8Array) => new TextDecoder().decode(body)

describe("the guarded outbound client refuses what is not public", () => {
  it("refuses loopback without an allow entry, before any request reaches it", async () => {
    const receiver = await server()
    const error = await failure(client({ allow: [] }), get(`${receiver.origin}/hook`))
    expect(error.reason).toBe("UrlNotAllowed")
    expect(error.message).toContain("loopback")
    expect(receiver.connections()).toBe(0)
  })

  it("reaches loopback allowed by the CIDR 127.0.0.1/32", async () => {
    const receiver = await server((_req, res) => res.end("hello"))
    const response = await send(client({ allow: ["127.0.0.1/32"] }), get(`${receiver.origin}/hook?x=1`))
    expect(response.status).toBe(200)
    expect(text(response.body)).toBe("hello")
    expect(response.timeMs).toBeGreaterThanOrEqual(0)
    expect(receiver.requests.map((r) => r.url)).toEqual(["/hook?x=1"])
  })

  it("reaches loopback allowed as 127.0.0.1:<port>, and only on that port", async () => {
    const receiver = await server()
    const other = await server()
    const http = client({ allow: [`127.0.0.1:${receiver.port}`] })
    expect((await send(http, get(`${receiver.origin}/`))).status).toBe(200)
    expect((await failure(http, get(`${other.origin}/`))).reason).toBe("UrlNotAllowed")
    expect(other.connections()).toBe(0)
  })

  it("refuses the name localhost, which resolves to loopback, unless localhost:<port> is allowed", async () => {
    const receiver = await server()
    const url = `http://localhost:${receiver.port}/`
    const refused = await failure(client({ allow: [] }), get(url))
    expect(refused.reason).toBe("UrlNotAllowed")
    expect(refused.message).toBe("it resolves to a loopback address")
    expect(refused.detail).toMatch(/^localhost resolves to .*, loopback$/)
    expect(receiver.connections()).toBe(0)
    expect((await send(client({ allow: [`localhost:${receiver.port}`] }), get(url))).status).toBe(200)
  })

  it.each([
    "http://[::1]:8080/",
    "http://[::ffff:127.0.0.1]/",
    "http://[fd00::1]/",
    "http://0x7f.1/",
    "http://2130706433/",
    "http://169.254.169.254/latest/meta-data/",
    "http://10.0.0.1/",
    "https://192.168.0.1/",
    "http://0.0.0.0/",
    "http://[::]/"
  ])("refuses the literal address in %s without connecting", async (url) => {
    const error = await failure(client({ allow: [] }), get(url))
    expect(error.reason).toBe("UrlNotAllowed")
    expect(error.message).toMatch(/^it is an? [a-z ()-]+ address$/)
  })

  it.each([
    "ftp://example.com/file",
    "file:///etc/passwd",
    "ws://example.com/",
    "javascript:alert(1)",
    "data:text/plain,hi",
    "not a url"
  ])("refuses %s: http and https only", async (url) => {
    const error = await failure(client({ allow: [] }), get(url))
    expect(error.reason).toBe("UrlNotAllowed")
  })
})

describe("the guarded outbound client checks the address it connects to (DNS rebinding)", () => {
  it("refuses a name that resolves to a private address, at connect time", async () => {
    const receiver = await server()
    const asked: Array<string> = []
    const resolve = async (host: string): Promise<ReadonlyArray<ResolvedAddress>> => {
      asked.push(host)
      return [{ address: "127.0.0.1", family: 4 }]
    }
    const error = await failure(client({ allow: [], resolve }), get(`http://rebind.test:${receiver.port}/`))
    expect(error.reason).toBe("UrlNotAllowed")
    // The tenant is told the kind of address; the address itself is for the host's log.
    expect(error.message).toBe("it resolves to a loopback address")
    expect(error.detail).toBe("rebind.test resolves to 127.0.0.1, loopback")
    expect(asked).toEqual(["rebind.test"])
    expect(receiver.connections()).toBe(0)
  })

  it("refuses a name when any of its addresses is private", async () => {
    const resolve = async (): Promise<ReadonlyArray<ResolvedAddress>> => [
      { address: "93.184.215.14", family: 4 },
      { address: "10.0.0.5", family: 4 }
    ]
    const error = await failure(client({ allow: [], resolve }), get("http://mixed.test/"))
    expect(error.reason).toBe("UrlNotAllowed")
    expect(error.message).toBe("it resolves to a private address")
    expect(error.detail).toContain("10.0.0.5, private")
  })

  it("checks every new connection again, so a name rebound to another address is refused", async () => {
    const receiver = await server((_req, res) => {
      res.setHeader("connection", "close")
      res.end("ok")
    })
    const answers = ["127.0.0.1", "127.0.0.2"]
    const resolve = async (): Promise<ReadonlyArray<ResolvedAddress>> => [{ address: answers.shift() ?? "127.0.0.2", family: 4 }]
    const http = client({ allow: ["127.0.0.1/32"], resolve })
    const url = `http://rebind.test:${receiver.port}/`
    expect((await send(http, get(url))).status).toBe(200)
    const error = await failure(http, get(url))
    expect(error.reason).toBe("UrlNotAllowed")
    expect(error.message).toBe("it resolves to a loopback address")
    expect(error.detail).toBe("rebind.test resolves to 127.0.0.2, loopback")
    expect(receiver.connections()).toBe(1)
  })

  it("refuses a name that does not resolve", async () => {
    const resolve = async (): Promise<ReadonlyArray<ResolvedAddress>> => {
      throw Object.assign(new Error("getaddrinfo ENOTFOUND nowhere.test"), { code: "ENOTFOUND" })
    }
    const error = await failure(client({ allow: [], resolve }), get("https://nowhere.test/"))
    expect(error.reason).toBe("UrlNotAllowed")
    expect(error.message).toBe("nowhere.test does not resolve")
  })
})

describe("the guarded outbound client's exchange", () => {
  it("returns a 302 as it is and never requests its Location", async () => {
    const receiver = await server((req, res) => {
      if (req.url === "/start") {
        res.writeHead(302, { location: "/target" })
        res.end()
      } else res.end("followed")
    })
    const response = await send(client({ allow: ["127.0.0.1/32"] }), get(`${receiver.origin}/start`))
    expect(response.status).toBe(302)
    expect(response.headers["location"]).toBe("/target")
    expect(receiver.requests.map((r) => r.url)).toEqual(["/start"])
  })

  it("times out a server that never answers, in about timeoutMs", async () => {
    const receiver = await server(() => {})
    const started = performance.now()
    const error = await failure(client({ allow: ["127.0.0.1/32"] }), get(`${receiver.origin}/`, { timeoutMs: 300 }))
    const took = performance.now() - started
    expect(error.reason).toBe("Timeout")
    expect(took).toBeGreaterThanOrEqual(290)
    expect(took).toBeLessThan(1_500)
    expect(error.timeMs).toBeGreaterThanOrEqual(290)
  })

  it("bounds the whole exchange: a body that trickles forever times out", async () => {
    const receiver = await server((_req, res) => {
      res.writeHead(200, { "content-type": "text/plain" })
      const timer = setInterval(() => res.write("."), 50)
      res.on("close", () => clearInterval(timer))
    })
    const error = await failure(client({ allow: ["127.0.0.1/32"] }), get(`${receiver.origin}/`, { timeoutMs: 400 }))
    expect(error.reason).toBe("Timeout")
  })

  it("times out in real time even when the Effect clock stands still", async () => {
    const receiver = await server(() => {})
    const http = client({ allow: ["127.0.0.1/32"] })
    const error = await Effect.runPromise(
      Effect.flip(http.request(get(`${receiver.origin}/`, { timeoutMs: 200 }))).pipe(Effect.provide(TestClock.layer()))
    )
    expect(error.reason).toBe("Timeout")
  })

  it("fails with TooLarge past 1 MiB by default, and stops reading", async () => {
    let serverSawClose = false
    const receiver = await server((_req, res) => {
      res.on("close", () => {
        serverSawClose = !res.writableFinished
      })
      const chunk = Buffer.alloc(64 * 1024, 120)
      const pump = () => {
        while (!res.destroyed && res.write(chunk)) { /* fill the buffer */ }
        if (!res.destroyed) res.once("drain", pump)
      }
      pump()
    })
    const error = await failure(client({ allow: ["127.0.0.1/32"] }), get(`${receiver.origin}/`))
    expect(error.reason).toBe("TooLarge")
    await expect.poll(() => serverSawClose).toBe(true)
  })

  it("fails with TooLarge at once when Content-Length declares too much, and keeps a body of exactly the limit", async () => {
    const receiver = await server((req, res) => res.end("x".repeat(req.url === "/big" ? 101 : 100)))
    const http = client({ allow: ["127.0.0.1/32"] })
    expect((await failure(http, get(`${receiver.origin}/big`, { maxResponseBytes: 100 }))).reason).toBe("TooLarge")
    const response = await send(http, get(`${receiver.origin}/exact`, { maxResponseBytes: 100 }))
    expect(response.body.byteLength).toBe(100)
  })

  it("sends credentials written in the URL as Basic authentication", async () => {
    const receiver = await server()
    await send(client({ allow: ["127.0.0.1/32"] }), get(`http://hook%20user:s%3Acret@127.0.0.1:${receiver.port}/`))
    expect(receiver.requests[0]?.headers["authorization"]).toBe(`Basic ${Buffer.from("hook user:s:cret").toString("base64")}`)
  })

  it("reports a refused connection as Connection", async () => {
    const port = await freePort()
    const error = await failure(client({ allow: ["127.0.0.1/32"] }), get(`http://127.0.0.1:${port}/`))
    expect(error.reason).toBe("Connection")
    // What the connection was refused is said; to which address, only in the detail.
    expect(error.message).toBe(`http://127.0.0.1:${port}: connect ECONNREFUSED`)
    expect(error.detail).toContain(`ECONNREFUSED 127.0.0.1:${port}`)
  })

  it("reports a connection closed mid-response as Connection", async () => {
    const receiver = await server((_req, res) => {
      res.writeHead(200, { "content-length": "1000" })
      res.write("partial")
      setTimeout(() => res.socket?.destroy(), 20)
    })
    const error = await failure(client({ allow: ["127.0.0.1/32"] }), get(`${receiver.origin}/`))
    expect(error.reason).toBe("Connection")
  })

  it("aborts the request when the Effect is interrupted", async () => {
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
    const http = client({ allow: ["127.0.0.1/32"] })
    const abort = new AbortController()
    const running = Effect.runPromise(http.request(get(`${receiver.origin}/`)), { signal: abort.signal })
    await arrived
    abort.abort()
    await expect(running).rejects.toThrow()
    await expect.poll(() => closed).toBe(true)
  })

  it("sends again on a fresh connection when a kept-alive one turns out closed by the server", async () => {
    const served = new WeakMap<Socket, number>()
    let dropped = 0
    const receiver = await server((req, res) => {
      const count = (served.get(req.socket) ?? 0) + 1
      served.set(req.socket, count)
      // The server drops every connection as it is reused, as if it had closed it while idle.
      if (count > 1) {
        dropped += 1
        req.socket.destroy()
      } else res.end("ok")
    })
    const http = client({ allow: ["127.0.0.1/32"] })
    for (const method of ["GET", "POST", "GET", "POST"] as const) {
      const request = get(`${receiver.origin}/${method}`, { method, ...(method === "POST" ? { body: "{}" } : {}) })
      expect((await send(http, request)).status).toBe(200)
    }
    // Some requests met a dropped kept-alive connection, and each was still answered.
    expect(dropped).toBeGreaterThan(0)
  })

  it("reuses a few keep-alive connections for 50 sequential requests", async () => {
    const receiver = await server()
    const http = client({ allow: ["127.0.0.1/32"] })
    for (let i = 0; i < 50; i++) expect((await send(http, get(`${receiver.origin}/${i}`))).status).toBe(200)
    expect(receiver.requests).toHaveLength(50)
    expect(receiver.connections()).toBeLessThanOrEqual(2)
  })
})

describe("the guarded outbound client as a layer", () => {
  it("serves OutboundHttp from OMNI_OUTBOUND_ALLOW", async () => {
    const receiver = await server((_req, res) => res.end("via layer"))
    const response = await Effect.runPromise(
      Effect.gen(function*() {
        const http = yield* OutboundHttp
        return yield* http.request(get(`${receiver.origin}/`))
      }).pipe(Effect.provide(layer({ allow: parseOutboundAllow(`10.0.0.0/8, 127.0.0.1:${receiver.port}`) })))
    )
    expect(text(response.body)).toBe("via layer")
  })
})

describe.skipIf(!hasOpenssl)("the guarded outbound client over HTTPS (needs the openssl CLI)", () => {
  let certificate: Certificate
  beforeAll(() => {
    certificate = makeCertificate()
  })

  it("delivers a POST with its body and headers intact, naming the host by SNI", async () => {
    const receiver = await server((_req, res) => {
      res.writeHead(202, { "x-receiver": "yes" })
      res.end("accepted")
    }, certificate)
    const http = client({ allow: [`localhost:${receiver.port}`], ca: certificate.cert })
    const body = JSON.stringify({ event: "message.created", text: "héllo" })
    const response = await send(http, {
      method: "POST",
      url: `https://localhost:${receiver.port}/webhooks/in?tenant=t1`,
      headers: { "content-type": "application/json", "x-omni-signature": "t=1,v1=abc", host: "evil.test" },
      body,
      timeoutMs: 5_000
    })
    expect(response.status).toBe(202)
    expect(response.headers["x-receiver"]).toBe("yes")
    expect(text(response.body)).toBe("accepted")
    const [seen] = receiver.requests
    expect(seen?.method).toBe("POST")
    expect(seen?.url).toBe("/webhooks/in?tenant=t1")
    expect(seen?.body).toBe(body)
    expect(seen?.headers["content-type"]).toBe("application/json")
    expect(seen?.headers["x-omni-signature"]).toBe("t=1,v1=abc")
    expect(seen?.headers["content-length"]).toBe(String(Buffer.byteLength(body)))
    expect(seen?.headers["host"]).toBe(`localhost:${receiver.port}`)
    expect(seen?.servername).toBe("localhost")
  })

  it("sends the URL's host name as SNI when it connects to a resolved address", async () => {
    const receiver = await server(undefined, certificate)
    const resolve = async (): Promise<ReadonlyArray<ResolvedAddress>> => [{ address: "127.0.0.1", family: 4 }]
    const http = client({ allow: ["127.0.0.1/32"], ca: certificate.cert, resolve })
    expect((await send(http, get(`https://receiver.test:${receiver.port}/`))).status).toBe(200)
    expect(receiver.requests[0]?.servername).toBe("receiver.test")
  })

  it("reports an untrusted certificate as Connection", async () => {
    const receiver = await server(undefined, certificate)
    const error = await failure(client({ allow: [`localhost:${receiver.port}`] }), get(`https://localhost:${receiver.port}/`))
    expect(error.reason).toBe("Connection")
    expect(error.message).toMatch(/self.signed/)
    expect(receiver.requests).toHaveLength(0)
  })

  it("reports a certificate for another name as Connection", async () => {
    const receiver = await server(undefined, certificate)
    const resolve = async (): Promise<ReadonlyArray<ResolvedAddress>> => [{ address: "127.0.0.1", family: 4 }]
    const http = client({ allow: ["127.0.0.1/32"], ca: certificate.cert, resolve })
    const error = await failure(http, get(`https://other.test:${receiver.port}/`))
    expect(error.reason).toBe("Connection")
    expect(error.message).toContain("other.test")
  })

  it("reuses a few keep-alive TLS connections for 50 sequential POSTs", async () => {
    const receiver = await server(undefined, certificate)
    const http = client({ allow: ["127.0.0.1/32"], ca: certificate.cert })
    for (let i = 0; i < 50; i++) {
      const response = await send(http, { ...get(`${receiver.origin}/${i}`), method: "POST", body: `{"n":${i}}` })
      expect(response.status).toBe(200)
    }
    expect(receiver.requests.map((r) => r.body)).toContain(`{"n":49}`)
    expect(receiver.connections()).toBeLessThanOrEqual(2)
  })
})
