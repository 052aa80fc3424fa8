import { createHmac } from "node:crypto"
import { request as httpRequest } from "node:http"
import { Layer, Tracer } from "effect"
import { afterEach, describe, expect, it } from "vitest"
import { nodeHmacSigner } from "../../../adapters/node/NodeHmacSigner.ts"
import { type RunningServer, serve } from "../../../adapters/node/NodeServer.ts"
import type { ApiHandler } from "../../../src/http/ApiHandler.ts"
import { textMessagePayload } from "../../support/ChatappPayloads.ts"
import { testDatabases } from "../../support/Databases.ts"
import { startTestApp, type TestApp } from "../../support/TestApp.ts"

// `POST /webhooks/chatapp` is served on Node as a direct route: no web Request or Response, the body
// read whole by its declared length. It must answer exactly as the handler does, store the same rows
// and count the same metrics; whatever it does not take goes to the handler.

const APP_SECRET = "direct-route-secret"
const sign = (body: string) => `sha256=${createHmac("sha256", APP_SECRET).update(body).digest("hex")}`

let sent = 0
const payload = () =>
  textMessagePayload({ businessAccountId: "102290129340398", phoneNumberId: "106540352242922", from: "15550001111", wamid: `wamid.direct.${++sent}`, text: "hello" })

/** An answer as a client reads it: what the direct route and the handler must agree on. */
interface Answer {
  readonly status: number
  readonly contentType: string | null
  readonly requestId: string | null
  readonly body: string
}

const read = async (response: Response): Promise<Answer> => ({
  status: response.status,
  contentType: response.headers.get("content-type"),
  requestId: response.headers.get("x-request-id"),
  body: await response.text()
})

// A SQLite file and PostgreSQL (with PG_URL), as the host runs them.
const databases = testDatabases.filter((database) => database.name === "sqlite-file" || database.name === "postgres")

describe.each(databases)("the operator's webhook as a direct route on Node ($name)", (database) => {
  let test: TestApp | undefined
  let server: RunningServer | undefined
  /** Requests that reached the handler rather than the direct route. */
  let handled: Array<string>
  afterEach(async () => {
    await server?.close(0)
    await test?.close()
    server = undefined
    test = undefined
  })

  const start = async (options: Parameters<typeof startTestApp>[1] = {}) => {
    test = await startTestApp(await database.open(), {
      chatappWebhook: { appSecret: APP_SECRET, verifyToken: "verify" },
      signer: nodeHmacSigner,
      ...options
    })
    handled = []
    const handler: ApiHandler = (request) => {
      handled.push(`${request.method} ${new URL(request.url).pathname}`)
      return test!.app.handler(request)
    }
    server = await serve(handler, { port: 0, host: "127.0.0.1", direct: test.app.directRoutes })
    return test
  }

  const post = (path: string, body: string, headers: Record<string, string>) =>
    fetch(`${server!.url}${path}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body }).then(read)
  const postToHandler = (body: string, headers: Record<string, string>) =>
    test!.app.handler(new Request("http://test.local/webhooks/chatapp", {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body
    })).then(read)
  const storedBodies = async () =>
    new Set((await test!.database.db.selectFrom("inbound_payloads").select("body").execute()).map((row) => Buffer.from(row.body).toString("utf8")))

  it("answers signed, badly signed and unsigned payloads as the handler does, without the handler, storing the signed ones", async () => {
    const app = await start()
    expect(app.app.directRoutes.map((route) => `${route.method} ${route.path}`)).toEqual(["POST /webhooks/chatapp"])
    const signed = payload()
    const badlySigned = payload()
    const unsigned = payload()
    const direct = [
      await post("/webhooks/chatapp", signed, { "x-hub-signature-256": sign(signed), "x-request-id": "op-1" }),
      await post("/webhooks/chatapp", badlySigned, { "x-hub-signature-256": sign(`${badlySigned} `), "x-request-id": "op-2" }),
      await post("/webhooks/chatapp", unsigned, { "x-request-id": "op-3" })
    ]
    expect(handled).toEqual([])
    const other = payload()
    const throughHandler = [
      await postToHandler(other, { "x-hub-signature-256": sign(other), "x-request-id": "op-1" }),
      await postToHandler(badlySigned, { "x-hub-signature-256": sign(`${badlySigned} `), "x-request-id": "op-2" }),
      await postToHandler(unsigned, { "x-request-id": "op-3" })
    ]
    expect(direct).toEqual(throughHandler)
    expect(direct.map((a) => [a.status, a.body])).toEqual([
      [200, '{"received":true}'],
      [401, '{"detail":{"code":"invalid_signature","message":"Invalid signature"}}'],
      [401, '{"detail":{"code":"invalid_signature","message":"Invalid signature"}}']
    ])
    expect(await storedBodies()).toEqual(new Set([signed, other]))
    // A request id the caller did not send (or sent malformed) is made, as the handler makes it.
    const made = await post("/webhooks/chatapp", signed, { "x-hub-signature-256": sign(signed), "x-request-id": "has spaces" })
    expect(made.requestId).toMatch(/^[0-9a-f-]{36}$/)
  })

  it("counts what it answered in the same metrics as the handler", async () => {
    const app = await start()
    const count = async (outcome: string) => {
      const line = (await app.app.metrics()).split("\n")
        .find((l) => l.startsWith("omni_inbound_payloads_received_total{") && l.includes('source="chatapp"') && l.includes(`outcome="${outcome}"`))
      return line === undefined ? 0 : Number(line.split(" ").at(-1))
    }
    // The process's metrics are shared by every app in it: what this test adds is counted.
    const before = [await count("accepted"), await count("rejected")]
    const body = payload()
    await post("/webhooks/chatapp", body, { "x-hub-signature-256": sign(body) })
    await post("/webhooks/chatapp", body, { "x-hub-signature-256": sign(body) })
    await post("/webhooks/chatapp", body, { "x-hub-signature-256": "sha256=" + "0".repeat(64) })
    expect(handled).toEqual([])
    expect([await count("accepted") - before[0]!, await count("rejected") - before[1]!]).toEqual([2, 1])
  })

  it("leaves to the handler what it does not take: no declared length, a longer one, another method, another path", async () => {
    await start()
    const body = payload()
    // Chunked: no Content-Length.
    const chunked = await new Promise<number>((resolve, reject) => {
      const req = httpRequest(`${server!.url}/webhooks/chatapp`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-hub-signature-256": sign(body), "transfer-encoding": "chunked" }
      }, (res) => {
        res.resume()
        res.once("end", () => resolve(res.statusCode!))
      })
      req.once("error", reject)
      req.write(body.slice(0, 10))
      req.end(body.slice(10))
    })
    expect(chunked).toBe(200)
    expect(handled).toEqual(["POST /webhooks/chatapp"])
    // Declared longer than 3 MB: the handler's 413.
    const declaredTooLong = await new Promise<number>((resolve, reject) => {
      const req = httpRequest(`${server!.url}/webhooks/chatapp`, {
        method: "POST",
        headers: { "content-type": "application/json", "content-length": String(3 * 1024 * 1024 + 1) }
      }, (res) => {
        res.resume()
        resolve(res.statusCode!)
      })
      req.once("error", reject)
      req.flushHeaders()
    })
    expect(declaredTooLong).toBe(413)
    const challenge = await fetch(`${server!.url}/webhooks/chatapp?hub.mode=subscribe&hub.verify_token=verify&hub.challenge=c-1`)
    expect([challenge.status, await challenge.text()]).toEqual([200, "c-1"])
    expect((await post("/webhooks/chatappx", body, { "x-hub-signature-256": sign(body) })).status).toBe(404)
    expect(handled).toEqual(["POST /webhooks/chatapp", "POST /webhooks/chatapp", "GET /webhooks/chatapp", "POST /webhooks/chatappx"])
    // A query string after the path is still the route.
    expect((await post("/webhooks/chatapp?from=operator", payload(), { "x-hub-signature-256": "sha256=" + "0".repeat(64) })).status).toBe(401)
    expect(handled).toHaveLength(4)
  })

  it("is not offered with tracing on, where the handler's server span is wanted", async () => {
    const tracer = Tracer.make({ span: (options) => Tracer.nativeTracer.span(options) })
    const app = await start({ telemetry: Layer.succeed(Tracer.Tracer, tracer) })
    expect(app.app.directRoutes).toEqual([])
    const body = payload()
    expect((await post("/webhooks/chatapp", body, { "x-hub-signature-256": sign(body) })).status).toBe(200)
    expect(handled).toEqual(["POST /webhooks/chatapp"])
  })
})
