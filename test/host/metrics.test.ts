import { createHmac } from "node:crypto"
import { readFileSync, writeFileSync } from "node:fs"
import type { ServerResponse } from "node:http"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { freePort, type LocalServer, makeCertificate, startServer } from "../outbound/LocalServers.ts"
import { admin, type HostProcess, http, ROOT, startHost } from "../support/Host.ts"
import { hostBackends } from "../support/HostBackends.ts"
import { waitUntil } from "../support/Poll.ts"
import { parsePrometheusText, type Scrape } from "../support/PrometheusText.ts"

// The host's metrics seen from outside: the real host (SQLite, manual test clock, no background
// workers, so work happens only when the clock is moved) with OMNI_METRICS=1, a real HTTPS receiver
// on 127.0.0.1, and `GET /metrics` read by a strict Prometheus text-format parser. A second host
// without OMNI_METRICS answers 404 there and pushes its metrics over OTLP/HTTP to a local collector.

const APP_SECRET = "metrics-test-app-secret"
const DASHBOARD = join(ROOT, "examples/grafana/omnichannel-dashboard.json")
const sqlite = hostBackends[0]!

/** The label names a scrape may carry by default: closed sets, never a tenant's or an endpoint's id. */
const BOUNDED_LABELS = new Set(["outcome", "state", "source", "operation", "kind", "reason", "le"])

/** Labels only OMNI_METRICS_TENANT_LABELS=1 adds: a query may group by them (a no-op without), never match on them. */
const TENANT_LABELS = new Set(["tenant_id", "endpoint_id"])

describe("metrics on the reference host (SQLite)", () => {
  let host: HostProcess
  let plain: HostProcess
  let receiver: LocalServer
  let collector: LocalServer
  let closedPort: number
  let boot: { user_token: string; api_key: string; tenant_id: string }
  const tearDowns: Array<() => Promise<void>> = []
  /** What the receiver answers, per request path; `hang` never answers. */
  const answers = new Map<string, number | "hang">()
  const hanging = new Set<ServerResponse>()
  /** Tenant and endpoint ids made here: none may appear in a scrape without tenant labels. */
  const ids: Array<string> = []

  beforeAll(async () => {
    const certificate = makeCertificate()
    receiver = await startServer((req, res) => {
      const answer = answers.get(req.url ?? "") ?? 204
      if (answer === "hang") hanging.add(res)
      else res.writeHead(answer).end()
    }, certificate)
    collector = await startServer((_req, res) => void res.writeHead(200, { "content-type": "application/json" }).end("{}"))
    closedPort = await freePort()
    const [a, b] = await Promise.all([sqlite.setUp(), sqlite.setUp()])
    tearDowns.push(a.tearDown, b.tearDown)
    const caFile = join(a.env.OMNI_DATA_DIR!, "receiver-ca.pem")
    writeFileSync(caFile, certificate.cert)
    const env = {
      ...a.env,
      OMNI_TEST_CLOCK: "manual",
      OMNI_WORKERS: "0",
      OMNI_OUTBOUND_ALLOW: "127.0.0.1/32",
      NODE_EXTRA_CA_CERTS: caFile,
      OMNI_CHATAPP_APP_SECRET: APP_SECRET,
      OMNI_METRICS: "1"
    }
    ;[host, plain] = await Promise.all([
      startHost(env),
      startHost({
        ...b.env,
        OMNI_TEST_CLOCK: "manual",
        OMNI_WORKERS: "0",
        OTEL_EXPORTER_OTLP_ENDPOINT: collector.origin,
        OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
        OTEL_METRIC_EXPORT_INTERVAL: "250",
        OTEL_TRACES_EXPORTER: "none",
        OTEL_LOGS_EXPORTER: "none"
      })
    ])
    boot = await admin(env, "bootstrap", "--email", "owner@example.com")
    ids.push(boot.tenant_id)
  })
  afterAll(async () => {
    for (const res of hanging) res.destroy()
    for (const started of [host, plain]) if (started?.child.exitCode === null) await started.stop()
    await receiver?.close()
    await collector?.close()
    for (const tearDown of tearDowns) await tearDown()
  })

  const scrape = async (): Promise<Scrape> => {
    const response = await fetch(`${host.url}/metrics`)
    expect(response.status).toBe(200)
    expect(response.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8")
    return parsePrometheusText(await response.text())
  }
  const advance = async (seconds: number) => {
    const moved = await http(host.url, "POST", "/_test/clock/advance", { body: { seconds } })
    expect(moved.status, host.output().slice(-3000)).toBe(200)
  }
  const newTenant = async (name: string) => {
    const created = await http(host.url, "POST", "/api/v1/tenants", { token: boot.user_token, body: { name } })
    expect(created.status).toBe(201)
    const tenantId = created.body.id as string
    ids.push(tenantId)
    return (method: string, path: string, body?: unknown) =>
      http(host.url, method, `/api/v1${path}`, { token: boot.api_key, headers: { "X-Tenant-ID": tenantId }, body })
  }
  type As = Awaited<ReturnType<typeof newTenant>>
  const endpoint = async (as: As, url: string, events: ReadonlyArray<string>, extra: Record<string, unknown> = {}) => {
    const created = await as("POST", "/webhook-endpoints", { name: url, url, subscribed_events: events, ...extra })
    expect(created.status, JSON.stringify(created.body)).toBe(201)
    ids.push(created.body.webhook_id)
    return created.body.webhook_id as string
  }
  const deliveriesOf = async (as: As, id: string) => (await as("GET", `/webhook-endpoints/${id}/deliveries?page_size=100`)).body.items as Array<any>
  /** The change of every sample between two scrapes, by series (`name{labels}`). */
  const delta = (before: Scrape, after: Scrape, name: string, labels: Record<string, string> = {}) =>
    after.value(name, labels) - before.value(name, labels)
  const queue = (s: Scrape) =>
    Object.fromEntries(["pending", "retrying", "queued", "dead_letter"].map((state) => [state, s.value("omni_webhook_deliveries", { state })]))
  const OUTCOMES = ["success", "timeout", "connection", "http_4xx", "http_5xx", "refused_address", "other"]
  const attempts = (before: Scrape, after: Scrape) =>
    Object.fromEntries(OUTCOMES.map((outcome) => [outcome, delta(before, after, "omni_webhook_delivery_attempts_total", { outcome })]))

  it("serves every family typed and documented, each closed series at 0 before any traffic", async () => {
    const s = await scrape()
    const types = Object.fromEntries([...s.families.values()].filter((f) => f.name.startsWith("omni_")).map((f) => [f.name, f.type]))
    expect(types).toEqual({
      omni_webhook_delivery_attempts_total: "counter",
      omni_webhook_delivery_attempt_duration_seconds: "histogram",
      omni_webhook_delivery_lag_seconds: "histogram",
      omni_webhook_deliveries: "gauge",
      omni_webhook_endpoints_suspended: "gauge",
      omni_inbound_payloads_received_total: "counter",
      omni_inbound_payloads_processed_total: "counter",
      omni_operator_errors_total: "counter",
      omni_campaign_recipients_total: "counter",
      omni_summaries_total: "counter",
      omni_credits_charged_total: "counter"
    })
    for (const family of s.families.values()) {
      expect(family.help, family.name).toBeTruthy()
      for (const sample of family.samples) expect(sample.value, `${sample.name} ${JSON.stringify(sample.labels)}`).toBe(0)
    }
    expect(queue(s)).toEqual({ pending: 0, retrying: 0, queued: 0, dead_letter: 0 })
  })

  it("answers only GET and HEAD at /metrics, without authentication and outside /api/v1", async () => {
    expect((await fetch(`${host.url}/metrics`, { method: "POST" })).status).toBe(405)
    const head = await fetch(`${host.url}/metrics`, { method: "HEAD" })
    expect(head.status).toBe(200)
    expect(await head.text()).toBe("")
    expect((await fetch(`${host.url}/api/v1/metrics`)).status).not.toBe(200)
  })

  it("counts every delivery attempt once by its outcome class, with durations, and the lag of each 2xx", async () => {
    const as = await newTenant("Metrics deliveries")
    const at = (path: string) => `${receiver.origin}${path}`
    answers.set("/ok", 204)
    answers.set("/fail", 500)
    answers.set("/missing", 404)
    answers.set("/hang", "hang")
    const ok = await endpoint(as, at("/ok"), ["contact.created"])
    const failing = [
      await endpoint(as, at("/fail"), ["contact.updated"]),
      await endpoint(as, at("/missing"), ["contact.updated"]),
      await endpoint(as, at("/hang"), ["contact.updated"], { timeout_seconds: 5 }),
      // A private address the outbound guard refuses, and a local port where nothing listens.
      await endpoint(as, "https://10.255.255.1/hook", ["contact.updated"]),
      await endpoint(as, `https://127.0.0.1:${closedPort}/hook`, ["contact.updated"])
    ]
    const before = await scrape()
    const contacts: Array<string> = []
    for (let i = 0; i < 5; i++) contacts.push((await as("POST", "/contacts", { name: `Contact ${i}` })).body.id)
    expect((await as("PATCH", `/contacts/${contacts[0]}`, { name: "Renamed" })).status).toBe(200)
    await advance(0)
    const after = await scrape()

    expect(attempts(before, after)).toEqual({
      success: 5,
      timeout: 1,
      connection: 1,
      http_4xx: 1,
      http_5xx: 1,
      refused_address: 1,
      other: 0
    })
    expect(receiver.requests.filter((r) => r.url === "/ok")).toHaveLength(5)
    for (const id of failing) expect((await deliveriesOf(as, id)).map((d) => d.status)).toEqual(["retrying"])
    expect((await deliveriesOf(as, ok)).map((d) => d.status)).toEqual(Array(5).fill("success"))
    // Every request that was sent has a duration (the refused address never was); every 2xx a lag.
    const durations = delta(before, after, "omni_webhook_delivery_attempt_duration_seconds_count")
    expect(durations).toBeGreaterThanOrEqual(8)
    expect(durations).toBeLessThanOrEqual(10)
    // The timeout waited its 5 s of real time.
    expect(delta(before, after, "omni_webhook_delivery_attempt_duration_seconds_sum")).toBeGreaterThanOrEqual(5)
    expect(delta(before, after, "omni_webhook_delivery_attempt_duration_seconds_bucket", { le: "2.5" })).toBe(durations - 1)
    // The test clock stood still between the events and their answers.
    expect(delta(before, after, "omni_webhook_delivery_lag_seconds_count")).toBe(5)
    expect(delta(before, after, "omni_webhook_delivery_lag_seconds_bucket", { le: "0.01" })).toBe(5)
    expect(queue(after)).toEqual({ pending: 0, retrying: 5, queued: 0, dead_letter: 0 })

    // Deactivating an endpoint dead-letters its unfinished delivery: the gauges follow the store.
    expect((await as("PATCH", `/webhook-endpoints/${failing[1]}`, { is_active: false })).status).toBe(200)
    expect(queue(await scrape())).toEqual({ pending: 0, retrying: 4, queued: 0, dead_letter: 1 })
  }, 60_000)

  it("shows a suspension as queued deliveries and a suspended endpoint, and the replay after verification as pending", async () => {
    const as = await newTenant("Metrics suspension")
    answers.set("/flaky", 500)
    const flaky = await endpoint(as, `${receiver.origin}/flaky`, ["contact.created"])
    const before = await scrape()
    for (let i = 0; i < 20; i++) expect((await as("POST", "/contacts", { name: `Flaky ${i}` })).status).toBe(201)
    await advance(0)
    const suspended = await scrape()
    // The 20th consecutive failure suspends the endpoint and parks all 20 deliveries.
    expect(attempts(before, suspended)).toMatchObject({ http_5xx: 20, success: 0 })
    expect((await as("GET", `/webhook-endpoints/${flaky}`)).body.status).toBe("suspended")
    expect(queue(suspended)).toEqual({ pending: 0, retrying: 4, queued: 20, dead_letter: 1 })
    expect(suspended.value("omni_webhook_endpoints_suspended")).toBe(1)

    // The receiver is back; a manual verification replays the backlog as due, not yet sent.
    answers.set("/flaky", 204)
    expect((await as("POST", `/webhook-endpoints/${flaky}/verify`)).status).toBe(200)
    const replayed = await scrape()
    expect(queue(replayed)).toEqual({ pending: 20, retrying: 4, queued: 0, dead_letter: 1 })
    expect(replayed.value("omni_webhook_endpoints_suspended")).toBe(0)
    // The verification request is no delivery attempt.
    expect(attempts(suspended, replayed)).toMatchObject({ success: 0, http_5xx: 0 })

    await advance(0)
    const delivered = await scrape()
    expect(attempts(replayed, delivered)).toEqual({ ...Object.fromEntries(OUTCOMES.map((o) => [o, 0])), success: 20 })
    expect(delta(replayed, delivered, "omni_webhook_delivery_lag_seconds_count")).toBe(20)
    expect(queue(delivered)).toEqual({ pending: 0, retrying: 4, queued: 0, dead_letter: 1 })
  }, 60_000)

  it("counts operator webhooks received by outcome, and their processing once the worker has run", async () => {
    const payload = JSON.stringify({
      object: "whatsapp_business_account",
      entry: [{
        id: "102290129340398",
        changes: [{
          field: "messages",
          value: {
            messaging_product: "whatsapp",
            metadata: { display_phone_number: "15550001111", phone_number_id: "106540352242922" },
            statuses: [{ id: "wamid.metrics", status: "delivered", timestamp: "1764158400", recipient_id: "15550002222" }]
          }
        }]
      }]
    })
    const post = (signature: string | null, body = payload) =>
      fetch(`${host.url}/webhooks/chatapp`, {
        method: "POST",
        headers: { "content-type": "application/json", ...(signature === null ? {} : { "x-hub-signature-256": signature }) },
        body
      })
    const sign = (body: string) => `sha256=${createHmac("sha256", APP_SECRET).update(body).digest("hex")}`
    const before = await scrape()
    expect((await post(sign(payload))).status).toBe(200)
    expect((await post(sign(payload))).status).toBe(200)
    expect((await post("sha256=" + "0".repeat(64))).status).toBe(401)
    expect((await post(null)).status).toBe(401)
    const received = await scrape()
    const inbound = (s: Scrape, name: string, outcome: string) => delta(before, s, name, { source: "chatapp", outcome })
    expect(inbound(received, "omni_inbound_payloads_received_total", "accepted")).toBe(2)
    expect(inbound(received, "omni_inbound_payloads_received_total", "rejected")).toBe(2)
    expect(received.sum("omni_inbound_payloads_received_total", { source: "email" })).toBe(0)
    expect(inbound(received, "omni_inbound_payloads_processed_total", "processed")).toBe(0)

    await advance(0)
    const processed = await scrape()
    expect(inbound(processed, "omni_inbound_payloads_processed_total", "processed")).toBe(2)
    expect(inbound(processed, "omni_inbound_payloads_processed_total", "retry")).toBe(0)
    expect(inbound(processed, "omni_inbound_payloads_processed_total", "failed")).toBe(0)
  })

  it("labels no series with a tenant's or an endpoint's id by default", async () => {
    const text = await (await fetch(`${host.url}/metrics`)).text()
    const s = parsePrometheusText(text)
    for (const family of s.families.values()) {
      for (const sample of family.samples) {
        for (const label of Object.keys(sample.labels)) expect(BOUNDED_LABELS, `${sample.name} ${label}`).toContain(label)
      }
    }
    expect(ids).toHaveLength(10)
    for (const id of ids) expect(text).not.toContain(id)
  })

  it("answers 404 at /metrics without OMNI_METRICS, and pushes the same metrics over OTLP when an endpoint is set", async () => {
    expect((await fetch(`${plain.url}/metrics`)).status).toBe(404)
    const pushed = () => collector.requests.filter((r) => r.method === "POST" && r.url === "/v1/metrics")
    await waitUntil("metrics reach the OTLP collector", () => pushed().length > 0)
    const names = new Set<string>()
    for (const request of pushed()) {
      const body = JSON.parse(request.body) as { resourceMetrics: Array<{ scopeMetrics: Array<{ metrics: Array<{ name: string }> }> }> }
      for (const resource of body.resourceMetrics) for (const scope of resource.scopeMetrics) for (const m of scope.metrics) names.add(m.name)
    }
    for (const name of ["omni_webhook_delivery_attempts_total", "omni_webhook_delivery_lag_seconds", "omni_webhook_deliveries", "omni_inbound_payloads_received_total"]) {
      expect([...names]).toContain(name)
    }
    expect(collector.requests.filter((r) => r.url !== "/v1/metrics")).toEqual([])
  })

  it("has a dashboard whose every query names only metrics and labels this host exposes, and charts every family", async () => {
    const dashboard = JSON.parse(readFileSync(DASHBOARD, "utf8")) as {
      __inputs: Array<{ name: string; type: string; pluginId: string }>
      panels: Array<{ type: string; title: string; datasource?: { uid: string }; targets?: Array<{ expr: string }> }>
    }
    expect(dashboard.__inputs).toContainEqual(expect.objectContaining({ name: "DS_PROMETHEUS", type: "datasource", pluginId: "prometheus" }))
    const s = await scrape()
    const charted = new Set<string>()
    const panels = dashboard.panels.filter((p) => p.type !== "row")
    expect(panels.length).toBeGreaterThanOrEqual(10)
    for (const panel of panels) {
      expect(panel.datasource?.uid, panel.title).toBe("${DS_PROMETHEUS}")
      expect(panel.targets?.length, panel.title).toBeGreaterThan(0)
      for (const { expr } of panel.targets!) {
        for (const { metric, labels } of promqlReferences(expr)) {
          const family = familyOfSample(s, metric)
          expect(family, `${panel.title}: ${metric} is not exposed`).toBeDefined()
          charted.add(family!.name)
          const known = new Set(family!.samples.flatMap((sample) => Object.keys(sample.labels)))
          for (const label of labels.matched) expect(known, `${panel.title}: ${metric} has no label ${label}`).toContain(label)
          for (const label of labels.grouped) {
            if (!TENANT_LABELS.has(label)) expect(known, `${panel.title}: ${metric} has no label ${label}`).toContain(label)
          }
        }
      }
    }
    expect([...charted].sort()).toEqual([...s.families.keys()].filter((name) => name.startsWith("omni_")).sort())
  })
})

/** The family a sample name belongs to: itself, or a histogram's `_bucket`, `_sum` or `_count`. */
const familyOfSample = (s: Scrape, name: string) => {
  const own = s.families.get(name)
  if (own !== undefined) return own
  const base = /^(.*)_(bucket|sum|count)$/.exec(name)
  const family = base === null ? undefined : s.families.get(base[1]!)
  return family?.type === "histogram" ? family : undefined
}

const PROMQL_WORDS = new Set([
  "sum", "avg", "min", "max", "count", "by", "without", "rate", "irate", "increase", "histogram_quantile",
  "clamp_min", "clamp_max", "abs", "and", "or", "unless", "on", "ignoring", "offset", "bool"
])

/**
 * The metrics a PromQL expression reads, each with the label names it matches on or groups by. A
 * reading good enough for the dashboard's own queries: selectors `name{…}[…]`, `by (…)` groupings
 * (which name the labels of the metric they aggregate), numbers and the functions above.
 */
const promqlReferences = (expr: string): Array<{ metric: string; labels: { matched: Array<string>; grouped: Array<string> } }> => {
  const found: Array<{ metric: string; labels: { matched: Array<string>; grouped: Array<string> } }> = []
  const grouping: Array<string> = []
  const text = expr.replace(/\[[^\]]*\]/g, "").replace(/\b(by|without)\s*\(([^)]*)\)/g, (_, _word, names: string) => {
    grouping.push(...names.split(",").map((n) => n.trim()).filter((n) => n !== ""))
    return " "
  })
  const selector = /([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(\{([^}]*)\})?/g
  for (const match of text.matchAll(selector)) {
    const name = match[1]!
    if (PROMQL_WORDS.has(name) || /^\d/.test(name)) continue
    const matchers = (match[3] ?? "").split(",").map((m) => m.trim()).filter((m) => m !== "")
    const matched = matchers.map((m) => /^([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!=|!~|=)/.exec(m)![1]!)
    // A grouping names labels of the metrics the expression reads.
    found.push({ metric: name, labels: { matched, grouped: grouping } })
  }
  expect(found.length, `no metric in ${expr}`).toBeGreaterThan(0)
  return found
}
