import { createHmac, randomBytes } from "node:crypto"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import pg from "pg"
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from "vitest"
import { type LocalServer, makeCertificate, startServer } from "../outbound/LocalServers.ts"
import { PG_URL } from "../support/Databases.ts"
import { rawEmail } from "../support/EmailHost.ts"
import { admin, type HostProcess, http, startHost } from "../support/Host.ts"
import { waitUntil } from "../support/Poll.ts"

// Traces, logs and health seen from outside: the reference host exports to a real OTLP/HTTP
// receiver on loopback (JSON bodies, as OTEL_EXPORTER_OTLP_PROTOCOL=http/json asks), delivers to a
// real HTTPS webhook receiver, and everything it prints is captured and searched for secrets.

/** An OTLP attribute value as OTLP/JSON writes it. */
type AnyValue = { stringValue?: string; intValue?: string | number; boolValue?: boolean; doubleValue?: number }
interface KeyValue {
  readonly key: string
  readonly value: AnyValue
}
interface OtlpSpan {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId?: string
  readonly name: string
  readonly kind: number
  readonly attributes: ReadonlyArray<KeyValue>
  readonly links: ReadonlyArray<{ readonly traceId: string; readonly spanId: string }>
}

const attribute = (span: OtlpSpan, key: string): string | number | boolean | undefined => {
  const value = span.attributes.find((a) => a.key === key)?.value
  if (value === undefined) return undefined
  if (value.intValue !== undefined) return Number(value.intValue)
  return value.stringValue ?? value.boolValue ?? value.doubleValue
}

/** Every span in the bodies the OTLP receiver got at `/v1/traces`. */
const spansIn = (collector: LocalServer): Array<OtlpSpan> =>
  collector.requests.filter((r) => r.url === "/v1/traces" && r.headers["content-type"]?.includes("json")).flatMap((r) =>
    (JSON.parse(r.body).resourceSpans as Array<{ scopeSpans: Array<{ spans: Array<OtlpSpan> }> }>)
      .flatMap((rs) => rs.scopeSpans.flatMap((ss) => ss.spans))
  )

/** The JSON lines the host printed (other lines, such as "listening on …", left out). */
const jsonLines = (output: string): Array<Record<string, unknown>> =>
  output.split("\n").flatMap((line) => {
    if (!line.startsWith("{")) return []
    try {
      return [JSON.parse(line) as Record<string, unknown>]
    } catch {
      return []
    }
  })

const hex = (bytes: number) => randomBytes(bytes).toString("hex")

/** A distinctive value that must never be printed or exported. */
const secret = (label: string) => `${label}${hex(12)}`

describe("traces, logs and health on the reference host (SQLite)", () => {
  let dir: string
  let env: Record<string, string>
  let host: HostProcess
  let collector: LocalServer
  let receiver: LocalServer
  let boot: { user_token: string; api_key: string; tenant_id: string }
  const appSecret = secret("appsecret")
  const verifyToken = secret("verifytoken")
  const api = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
    http(host.url, method, `/api/v1${path}`, { token: boot.api_key, body, headers })

  beforeAll(async () => {
    const certificate = makeCertificate()
    collector = await startServer((_, res) => {
      res.writeHead(200, { "content-type": "application/json" }).end("{}")
    })
    receiver = await startServer((_, res) => {
      res.writeHead(204).end()
    }, certificate)
    dir = mkdtempSync(join(tmpdir(), "omni-observability-"))
    const caFile = join(dir, "receiver-ca.pem")
    writeFileSync(caFile, certificate.cert)
    env = {
      OMNI_DATA_DIR: dir,
      DATABASE_URL: `file:${join(dir, "db", "omni.sqlite")}`,
      OMNI_TEST_CLOCK: "manual",
      OMNI_OUTBOUND_ALLOW: "127.0.0.1/32",
      NODE_EXTRA_CA_CERTS: caFile,
      OMNI_CHATAPP_APP_SECRET: appSecret,
      OMNI_CHATAPP_VERIFY_TOKEN: verifyToken,
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.origin,
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
      OTEL_EXPORTER_OTLP_HEADERS: "x-collector-key=collector-key-1",
      OTEL_SERVICE_NAME: "omni-under-test",
      OTEL_RESOURCE_ATTRIBUTES: "deployment.environment=test",
      // Export every 100 ms, so the test waits little.
      OTEL_BSP_SCHEDULE_DELAY: "100",
      OTEL_BLRP_SCHEDULE_DELAY: "100"
    }
    host = await startHost(env)
    boot = await admin(env, "bootstrap", "--email", "owner@example.com")
  }, 120_000)

  afterAll(async () => {
    if (host?.child.exitCode === null) await host.stop()
    await receiver?.close()
    await collector?.close()
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
  })

  const drain = async () => expect((await http(host.url, "POST", "/_test/drain")).status).toBe(200)

  const createEndpoint = async (path: string, extra: Record<string, unknown> = {}) => {
    const created = await api("POST", "/webhook-endpoints", {
      name: `receiver ${path}`,
      url: `${receiver.origin}${path}`,
      subscribed_events: ["contact.created"],
      ...extra
    })
    expect(created.status).toBe(201)
    return created.body as { webhook_id: string; secret_key: string }
  }

  it("continues the caller's trace from the request through the event to each delivery, and sends traceparent only where opted in", async () => {
    const opted = await createEndpoint("/opted", { propagate_trace_context: true })
    const plain = await createEndpoint("/plain")
    expect((await api("GET", `/webhook-endpoints/${opted.webhook_id}`)).body.propagate_trace_context).toBe(true)
    expect((await api("GET", `/webhook-endpoints/${plain.webhook_id}`)).body.propagate_trace_context).toBe(false)

    const traceId = hex(16)
    const callerSpanId = hex(8)
    const created = await fetch(`${host.url}/api/v1/contacts`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${boot.api_key}`,
        "content-type": "application/json",
        traceparent: `00-${traceId}-${callerSpanId}-01`,
        "x-request-id": "obs-request-1"
      },
      body: JSON.stringify({ name: "Traced Contact" })
    })
    expect(created.status).toBe(201)
    expect(created.headers.get("x-request-id")).toBe("obs-request-1")
    const contactId = ((await created.json()) as { id: string }).id
    await drain()

    const delivered = (path: string) => receiver.requests.filter((r) => r.url === path)
    await waitUntil("both receivers got the contact", () => delivered("/opted").length === 1 && delivered("/plain").length === 1)

    // The request span, a child of the caller's; the use case beneath it; a delivery span per endpoint.
    const inTrace = () => spansIn(collector).filter((s) => s.traceId === traceId)
    const attemptTo = (endpointId: string) =>
      inTrace().find((s) => s.name === "WebhookDelivery.attempt" && attribute(s, "webhook.endpoint_id") === endpointId)
    await waitUntil("the spans reached the collector", () =>
      inTrace().some((s) => s.name === "POST /api/v1/contacts") &&
      attemptTo(opted.webhook_id) !== undefined && attemptTo(plain.webhook_id) !== undefined)
    const requestSpan = inTrace().find((s) => s.name === "POST /api/v1/contacts")!
    expect(requestSpan.parentSpanId).toBe(callerSpanId)
    expect(requestSpan.kind).toBe(2) // server
    expect(attribute(requestSpan, "http.response.status_code")).toBe(201)
    expect(attribute(requestSpan, "http.route")).toBe("/api/v1/contacts")
    expect(attribute(requestSpan, "tenant.id")).toBe(boot.tenant_id)
    expect(attribute(requestSpan, "request.id")).toBe("obs-request-1")
    const useCase = inTrace().find((s) => s.name === "ContactService.create")!
    expect(useCase.parentSpanId).toBe(requestSpan.spanId)

    const toOpted = attemptTo(opted.webhook_id)!
    const toPlain = attemptTo(plain.webhook_id)!
    for (const attempt of [toOpted, toPlain]) {
      expect(attempt.kind).toBe(3) // client
      expect(attribute(attempt, "http.response.status_code")).toBe(204)
      expect(attribute(attempt, "webhook.event_type")).toBe("contact.created")
      expect(attribute(attempt, "tenant.id")).toBe(boot.tenant_id)
      // A child of the span that appended the event: inside the request's trace.
      expect(inTrace().some((s) => s.spanId === attempt.parentSpanId)).toBe(true)
    }
    // Background polling that finds nothing makes no spans; work found does.
    expect(spansIn(collector).filter((s) => s.name.endsWith(".runDue"))).toEqual([])
    // The fan-out is background work of its own, linked to the request's trace.
    expect(spansIn(collector).some((s) => s.name === "WebhookDispatcher.fanOut" && s.links.some((l) => l.traceId === traceId)))
      .toBe(true)

    // Only the endpoint that opted in hears the trace, and it hears its own attempt's span.
    expect(delivered("/opted")[0]!.headers.traceparent).toBe(`00-${traceId}-${toOpted.spanId}-01`)
    expect(delivered("/plain")[0]!.headers.traceparent).toBeUndefined()

    // A span is named by its route template, never by the path with the id in it.
    expect((await api("GET", `/contacts/${contactId}`)).status).toBe(200)
    await waitUntil("the read's span reached the collector", () =>
      spansIn(collector).some((s) => s.name === "GET /api/v1/contacts/{contact_id}"))
    expect(spansIn(collector).filter((s) => s.name.includes(contactId))).toEqual([])

    // The exporter sent the configured headers and resource.
    const traces = collector.requests.find((r) => r.url === "/v1/traces")!
    expect(traces.headers["x-collector-key"]).toBe("collector-key-1")
    const resource = JSON.parse(traces.body).resourceSpans[0].resource.attributes as Array<KeyValue>
    expect(resource).toContainEqual({ key: "service.name", value: { stringValue: "omni-under-test" } })
    expect(resource).toContainEqual({ key: "deployment.environment", value: { stringValue: "test" } })

    // One JSON log line per request, with the template, status, duration, tenant and the trace.
    const line = jsonLines(host.output()).find((l) => l.msg === "request" && l.request_id === "obs-request-1")
    expect(line).toMatchObject({
      level: "info",
      method: "POST",
      route: "/api/v1/contacts",
      status: 201,
      tenant_id: boot.tenant_id,
      trace_id: traceId
    })
    expect(Date.parse(line!.time as string)).not.toBeNaN()
    expect(typeof line!.duration_ms).toBe("number")
    // Log records are exported too.
    await waitUntil("log records reached the collector", () =>
      collector.requests.some((r) => r.url === "/v1/logs" && r.body.includes("obs-request-1")))
  })

  it("processes an operator's payload in the trace of the request that stored it", async () => {
    const traceId = hex(16)
    const payload = JSON.stringify({
      object: "whatsapp_business_account",
      entry: [{
        id: "2065550199",
        changes: [{
          field: "messages",
          value: {
            messaging_product: "whatsapp",
            metadata: { display_phone_number: "15550199", phone_number_id: `9065${hex(4)}` },
            messages: [{ from: "15550000001", id: `wamid.${hex(8)}`, timestamp: "1764150000", type: "text", text: { body: "hi" } }]
          }
        }]
      }]
    })
    const signed = await fetch(`${host.url}/webhooks/chatapp`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        traceparent: `00-${traceId}-${hex(8)}-01`,
        "x-hub-signature-256": `sha256=${createHmac("sha256", appSecret).update(payload).digest("hex")}`
      },
      body: payload
    })
    expect(signed.status).toBe(200)
    await drain()

    const inTrace = () => spansIn(collector).filter((s) => s.traceId === traceId)
    await waitUntil("the inbound spans reached the collector", () =>
      inTrace().some((s) => s.name === "POST /webhooks/chatapp") && inTrace().some((s) => s.name === "InboundProcessor.process"))
    const requestSpan = inTrace().find((s) => s.name === "POST /webhooks/chatapp")!
    const processing = inTrace().find((s) => s.name === "InboundProcessor.process")!
    expect(attribute(processing, "inbound.source")).toBe("chatapp")
    // A child of the span that stored the payload, beneath the request's span.
    const storing = inTrace().find((s) => s.spanId === processing.parentSpanId)
    expect(storing?.name).toBe("InboundService.receiveChatapp")
    expect(storing?.parentSpanId).toBe(requestSpan.spanId)
  })

  it("echoes a plain X-Request-Id, replaces a malformed one, and logs every route by its template", async () => {
    const answered = async (path: string, requestId?: string) => {
      const response = await fetch(`${host.url}${path}`, {
        headers: { authorization: `Bearer ${boot.api_key}`, ...(requestId === undefined ? {} : { "x-request-id": requestId }) }
      })
      await response.arrayBuffer()
      return response.headers.get("x-request-id")!
    }
    expect(await answered("/api/v1/contacts", "plain.id_42:a-b")).toBe("plain.id_42:a-b")
    for (const bad of ["has spaces", "x".repeat(129), "quote\"d", "semi;colon", "slash/es", "<script>"]) {
      const given = await answered("/api/v1/contacts", bad)
      expect(given).not.toBe(bad)
      expect(given).toMatch(/^[0-9a-f-]{36}$/)
    }
    const generated = await answered("/api/v1/contacts")
    expect(generated).toMatch(/^[0-9a-f-]{36}$/)

    await answered("/connect/occ_notarealtoken0000")
    await answered("/webhooks/chatapp")
    await answered("/api/v1/no-such-thing")
    // A request's line is written at the end of the host's turn, after its answer: waited for, every one.
    const routes = () => jsonLines(host.output()).filter((l) => l.msg === "request").map((l) => l.route)
    await waitUntil("the request lines were printed", () =>
      ["/api/v1/contacts", "/connect/{token}", "/webhooks/chatapp", null].every((route) => routes().includes(route)))
    expect(routes().filter((r) => typeof r === "string" && r.includes("occ_"))).toEqual([])
    expect(jsonLines(host.output()).find((l) => l.request_id === generated)).toMatchObject({ status: 200, route: "/api/v1/contacts" })
  })

  it("answers /healthz and /readyz without credentials", async () => {
    const health = await fetch(`${host.url}/healthz`)
    expect(health.status).toBe(200)
    expect(await health.json()).toEqual({ status: "ok" })
    const ready = await fetch(`${host.url}/readyz`)
    expect(ready.status).toBe(200)
    expect(await ready.json()).toEqual({ status: "ok", checks: { database: "ok", migrations: "ok", workers: "ok" } })
    expect((await fetch(`${host.url}/readyz`, { method: "POST" })).status).toBe(405)
  })

  it("never prints or exports a secret, a token, a message body or personal data", { timeout: 120_000 }, async () => {
    const secrets: Record<string, string> = {
      "user token": boot.user_token,
      "API key": boot.api_key,
      "chat-app app secret": appSecret,
      "chat-app verify token": verifyToken
    }
    // A wrong credential is refused, and not printed either.
    secrets["wrong bearer"] = secret("wrongbearer")
    expect((await http(host.url, "GET", "/api/v1/contacts", { token: secrets["wrong bearer"] })).status).toBe(401)

    // Personal data of a contact.
    secrets["contact name"] = `Xavier Privatename${hex(3)}`
    secrets["contact email"] = `xavier.${hex(4)}@example.net`
    expect((await api("POST", "/contacts", { name: secrets["contact name"], email: secrets["contact email"] })).status).toBe(201)

    // Webhook signing secrets (created and regenerated) and a receiver's authorization header.
    secrets["receiver authorization"] = `Bearer ${secret("receiverauth")}`
    const endpoint = await createEndpoint("/secrets", { authorization_header: secrets["receiver authorization"] })
    secrets["signing secret"] = endpoint.secret_key
    const regenerated = await api("POST", `/webhook-endpoints/${endpoint.webhook_id}/regenerate-secret`)
    expect(regenerated.status).toBe(200)
    secrets["regenerated signing secret"] = regenerated.body.secret_key

    // A connect link (its token is in the path) and channels' credentials posted through it: a
    // bot's token and a chat-app number's access token.
    const link = await api("POST", "/channel-connect-tokens", { allowed_channel_types: ["botchat", "chatapp"], max_uses: 2 })
    expect(link.status).toBe(201)
    secrets["connect token"] = new URL(link.body.connect_url).pathname.split("/").at(-1)!
    const connect = async (type: string, inputs: Record<string, string>) => {
      const form = await fetch(`${link.body.connect_url}?type=${type}`)
      const page = await form.text()
      const posted = await fetch(link.body.connect_url, {
        method: "POST",
        redirect: "manual",
        headers: { "content-type": "application/x-www-form-urlencoded", cookie: (form.headers.get("set-cookie") ?? "").split(";")[0]! },
        body: new URLSearchParams({ csrf: /name="csrf" value="([^"]+)"/.exec(page)?.[1] ?? "", channel_type: type, ...inputs })
          .toString()
      })
      expect(posted.status, await posted.text()).toBe(200)
    }
    secrets["bot token"] = `123456789:AAbot${hex(16)}`
    await connect("botchat", { bot_token: secrets["bot token"] })
    secrets["channel access token"] = `EAAG${secret("access")}`
    const phoneNumberId = `1065${Date.now() % 1_000_000}`
    await connect("chatapp", {
      phone_number_id: phoneNumberId,
      business_account_id: "2065550100",
      access_token: secrets["channel access token"]
    })

    // The operator's handshake and a signed payload carrying a customer's message, name and number,
    // and a flow answer's token.
    const handshake = await fetch(
      `${host.url}/webhooks/chatapp?hub.mode=subscribe&hub.verify_token=${verifyToken}&hub.challenge=challenge-1`
    )
    expect(await handshake.text()).toBe("challenge-1")
    secrets["chat message body"] = `hello, my code is ${secret("chatbody")}`
    secrets["customer name"] = `Zelda Privatename${hex(3)}`
    secrets["customer number"] = `1555${String(Date.now()).slice(-7)}`
    secrets["flow token"] = secret("flowtoken")
    const message = (id: string, extra: Record<string, unknown>) => ({
      from: secrets["customer number"],
      id,
      timestamp: String(Math.floor(Date.now() / 1000)),
      ...extra
    })
    const payload = JSON.stringify({
      object: "whatsapp_business_account",
      entry: [{
        id: "2065550100",
        changes: [{
          field: "messages",
          value: {
            messaging_product: "whatsapp",
            metadata: { display_phone_number: "15550100", phone_number_id: phoneNumberId },
            contacts: [{ profile: { name: secrets["customer name"] }, wa_id: secrets["customer number"] }],
            messages: [
              message(`wamid.${hex(8)}`, { type: "text", text: { body: secrets["chat message body"] } }),
              message(`wamid.${hex(8)}`, {
                type: "interactive",
                interactive: {
                  type: "nfm_reply",
                  nfm_reply: { name: "flow", body: "Sent", response_json: JSON.stringify({ flow_token: secrets["flow token"], pin: "1234" }) }
                }
              })
            ]
          }
        }]
      }]
    })
    const signed = await fetch(`${host.url}/webhooks/chatapp`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-hub-signature-256": `sha256=${createHmac("sha256", appSecret).update(payload).digest("hex")}`
      },
      body: payload
    })
    expect(signed.status).toBe(200)
    await drain()

    // The reply sent back carries a body too.
    const conversations = await api("GET", "/conversations")
    expect(conversations.status).toBe(200)
    const conversation = (conversations.body.items as Array<{ id: string; channel_type?: string }>)[0]!
    secrets["outbound message body"] = `your code is ${secret("outbody")}`
    const sent = await api("POST", "/messages", { conversation_id: conversation.id, text: secrets["outbound message body"] })
    expect(sent.status, JSON.stringify(sent.body)).toBeLessThan(300)

    // A received email with its integration's secret, a sender's address and a body.
    const created = await api("POST", "/email-integrations", { address: "support@acme.test" })
    expect(created.status).toBe(201)
    const integration = created.body as { id: string; inbound_secret: string }
    secrets["inbound email secret"] = integration.inbound_secret
    secrets["email sender"] = `private.sender.${hex(4)}@example.org`
    secrets["email body"] = `the account number is ${secret("emailbody")}`
    const email = await rawEmail({
      from: { name: "Private Sender", address: secrets["email sender"] },
      to: "support@acme.test",
      subject: "A private question",
      text: secrets["email body"]
    })
    const received = await fetch(`${host.url}/webhooks/email/${integration.id}`, {
      method: "POST",
      headers: { "content-type": "message/rfc822", authorization: `Bearer ${integration.inbound_secret}` },
      body: new Uint8Array(email)
    })
    expect(received.status).toBe(200)
    await drain()
    await waitUntil("the receiver got the contact", () => receiver.requests.some((r) => r.url === "/secrets"))

    // Once the exporters sent the last request's span and log record, everything is searched.
    await waitUntil("the last request was exported", () =>
      spansIn(collector).some((s) => s.name === "POST /webhooks/email/{email_integration_id}") &&
      collector.requests.some((r) => r.url === "/v1/logs" && r.body.includes("/webhooks/email/{email_integration_id}")))
    const printed = host.output()
    const exported = collector.requests.map((r) => r.body).join("\n")
    for (const [what, value] of Object.entries(secrets)) {
      expect(printed.includes(value), `the host printed the ${what}`).toBe(false)
      expect(exported.includes(value), `the host exported the ${what}`).toBe(false)
    }
    // The searched output is the real one: it holds the request lines of what was done above.
    expect(jsonLines(printed).some((l) => l.route === "/webhooks/email/{email_integration_id}" && l.status === 200)).toBe(true)
  })
})

// /readyz turns 503 while the host's own PostgreSQL database refuses it, and 200 once it is back.
// The host connects as a role of its own that is not a superuser, so revoking CONNECT stops it.
describe.skipIf(PG_URL === undefined)("readiness on PostgreSQL when the database goes away (needs PG_URL)", () => {
  let admin_: pg.Client
  let host: HostProcess
  let collector: LocalServer
  let dir: string
  const role = `omni_ready_${process.pid}_${hex(3)}`
  const database = `omni_ready_db_${process.pid}_${hex(3)}`

  const sessionsKilled = async () => {
    await admin_.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()", [
      database
    ])
  }

  beforeAll(async () => {
    admin_ = new pg.Client({ connectionString: PG_URL })
    await admin_.connect()
    await admin_.query(`CREATE ROLE ${role} LOGIN NOSUPERUSER`)
    await admin_.query(`CREATE DATABASE ${database} OWNER ${role}`)
    collector = await startServer((_, res) => {
      res.writeHead(200).end()
    })
    dir = mkdtempSync(join(tmpdir(), "omni-ready-"))
    const url = new URL(PG_URL!)
    url.username = role
    url.password = ""
    url.pathname = `/${database}`
    // Real time (workers run on their own) and the default OTLP protocol (protobuf).
    host = await startHost({
      OMNI_DATA_DIR: dir,
      DATABASE_URL: url.toString(),
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.origin,
      OTEL_BSP_SCHEDULE_DELAY: "100"
    })
  }, 120_000)

  afterAll(async () => {
    if (host?.child.exitCode === null) await host.stop()
    await collector?.close()
    if (admin_ !== undefined) {
      await admin_.query(`GRANT CONNECT ON DATABASE ${database} TO PUBLIC`).catch(() => undefined)
      await admin_.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`)
      await admin_.query(`DROP ROLE IF EXISTS ${role}`)
      await admin_.end()
    }
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
  })

  const readiness = async () => {
    const answer = await fetch(`${host.url}/readyz`)
    return { status: answer.status, body: await answer.json() as { status: string; checks: Record<string, string> } }
  }

  it("answers 503 naming the database while CONNECT is revoked, 200 once it is granted again", async () => {
    onTestFailed(() => console.log(host.output().slice(-6000)))
    expect(await readiness()).toEqual({ status: 200, body: { status: "ok", checks: { database: "ok", migrations: "ok", workers: "ok" } } })
    // Traffic so the exporter has spans to send, in OTLP's default protobuf.
    expect((await http(host.url, "GET", "/api/v1/contacts")).status).toBe(401)
    await waitUntil("protobuf spans reached the collector", () =>
      collector.requests.some((r) => r.url === "/v1/traces" && r.headers["content-type"] === "application/x-protobuf"))

    await admin_.query(`REVOKE CONNECT ON DATABASE ${database} FROM PUBLIC`)
    await admin_.query(`REVOKE CONNECT ON DATABASE ${database} FROM ${role}`)
    await sessionsKilled()
    let down = await readiness()
    await waitUntil("readyz answers 503", async () => {
      down = await readiness()
      return down.status === 503
    }, 30_000)
    expect(down.body).toMatchObject({ status: "fail", checks: { database: "fail" } })
    expect((await fetch(`${host.url}/healthz`)).status).toBe(200)
    // A failed background job is one JSON line naming the job, with its cause.
    await waitUntil("a failed job was logged", () =>
      jsonLines(host.output()).some((l) => l.msg === "background job failed" && typeof l.job === "string" && typeof l.cause === "string"))

    await admin_.query(`GRANT CONNECT ON DATABASE ${database} TO PUBLIC`)
    await admin_.query(`GRANT CONNECT ON DATABASE ${database} TO ${role}`)
    await waitUntil("readyz answers 200 again", async () => (await readiness()).status === 200, 30_000)
    expect(host.child.exitCode).toBeNull()
  })
})
