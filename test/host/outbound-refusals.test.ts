import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { admin, type HostProcess, http, startHost } from "../support/Host.ts"
import { hostBackends } from "../support/HostBackends.ts"
import { waitUntil } from "../support/Poll.ts"

// What a tenant learns of a URL the outbound guard refuses, on a host that may reach nothing
// private (no OMNI_OUTBOUND_ALLOW): the kind of address (loopback), never the address a name
// resolved to, wherever the refusal shows (the verify answer, the endpoint's last_error, a
// delivery's error_message); the host's own log keeps the address.

const REFUSED = "UrlNotAllowed: it resolves to a loopback address"
/** An IPv4 or IPv6 address anywhere in a text. */
const ADDRESS = /\b\d{1,3}(?:\.\d{1,3}){3}\b|::1\b|::ffff:/i

describe.each([hostBackends[0]!])("refused outbound URLs as a tenant sees them ($name)", (backend) => {
  let env: Record<string, string>
  let tearDown: () => Promise<void>
  let host: HostProcess
  let key: string

  beforeAll(async () => {
    ;({ env, tearDown } = await backend.setUp())
    host = await startHost({ ...env, OMNI_OUTBOUND_ALLOW: "" })
    key = (await admin(env, "bootstrap", "--email", "owner@example.com")).api_key
  })
  afterAll(async () => {
    if (host?.child.exitCode === null) await host.stop()
    await tearDown?.()
  })

  const api = (method: string, path: string, body?: unknown) => http(host.url, method, `/api/v1${path}`, { token: key, body })
  /** Host log lines telling which address a name resolved to. */
  const loggedRefusals = () => host.output().split("\n").filter((line) => /localhost resolves to (?:127\.0\.0\.1|::1), loopback/.test(line))

  it("answers verify with the kind of address only, and keeps it as the endpoint's last_error", async () => {
    // `localhost` is a name: the guard refuses it for what it resolves to, at connect time.
    const created = await api("POST", "/webhook-endpoints", {
      name: "internal",
      url: "https://localhost:8443/hook",
      subscribed_events: ["contact.created"]
    })
    expect(created.status).toBe(201)
    const id = created.body.webhook_id as string

    const verified = await api("POST", `/webhook-endpoints/${id}/verify`)
    expect(verified.status).toBe(200)
    expect(verified.body).toMatchObject({ success: false, error: REFUSED, message: `Verification failed: ${REFUSED}` })
    expect(JSON.stringify(verified.body)).not.toMatch(ADDRESS)

    const endpoint = await api("GET", `/webhook-endpoints/${id}`)
    expect(endpoint.body.last_error).toBe(REFUSED)
    expect(JSON.stringify(endpoint.body)).not.toMatch(ADDRESS)

    await waitUntil("the host logs the refused address", () => loggedRefusals().length >= 1)
  })

  it("records a delivery to such a URL with the kind of address only, the address in the host's log", async () => {
    const created = await api("POST", "/webhook-endpoints", {
      name: "internal deliveries",
      url: "https://localhost:9443/events",
      subscribed_events: ["contact.created"],
      retry_strategy: "none"
    })
    expect(created.status).toBe(201)
    const id = created.body.webhook_id as string
    const logged = loggedRefusals().length
    expect((await api("POST", "/contacts", { name: "Ada" })).status).toBe(201)

    let deliveries: any
    await waitUntil("the delivery is attempted", async () => {
      deliveries = await api("GET", `/webhook-endpoints/${id}/deliveries`)
      return deliveries.body.items?.[0]?.attempt_number >= 1
    })
    expect(deliveries.body.items).toMatchObject([{ status: "failed", response_status_code: null, error_message: REFUSED }])
    expect(JSON.stringify(deliveries.body)).not.toMatch(ADDRESS)
    expect(JSON.stringify((await api("GET", `/webhook-endpoints/${id}`)).body)).not.toMatch(ADDRESS)

    // The delivery engine logs its own refusal (it sends without a fiber per request).
    await waitUntil("the host logs the delivery's refused address", () => loggedRefusals().length > logged)
  })

  it("answers from-url with the spec's words only", async () => {
    const answer = await api("POST", "/attachments/from-url", { url: "http://localhost:8080/photo.png" })
    expect(answer).toEqual({ status: 400, body: { detail: "URL not allowed" } })
  })
})
