import { readdirSync, readFileSync, writeFileSync } from "node:fs"
import type { IncomingHttpHeaders } from "node:http"
import { join } from "node:path"
import { Webhook } from "standardwebhooks"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type LocalServer, makeCertificate, type SeenRequest, startServer } from "../outbound/LocalServers.ts"
import { hostBackends } from "../support/HostBackends.ts"
import { admin, type HostProcess, http, startHost } from "../support/Host.ts"

// The webhook engine seen from outside: the real host as a child process on a manual test clock,
// a real HTTPS receiver on 127.0.0.1 (trusted through NODE_EXTRA_CA_CERTS, reachable through
// OMNI_OUTBOUND_ALLOW), and nothing but HTTP in between.


/** The automatic re-verification checks, as offsets from suspended_at: 1m 5m 15m 30m 1h 2h 4h 8h 12h. */
const CHECK_OFFSETS_SECONDS = [60, 300, 900, 1800, 3600, 7200, 14_400, 28_800, 43_200] as const
const HOUR = 3600

const plus = (iso: string, seconds: number) => new Date(Date.parse(iso) + seconds * 1000).toISOString()

/** The Standard Webhooks headers as the receiver saw them. */
const signatureHeaders = (headers: IncomingHttpHeaders): Record<string, string> => ({
  "webhook-id": String(headers["webhook-id"]),
  "webhook-timestamp": String(headers["webhook-timestamp"]),
  "webhook-signature": String(headers["webhook-signature"])
})

interface Mail {
  readonly file: string
  readonly headers: Readonly<Record<string, string>>
  readonly body: string
}

/**
 * Parses an RFC 5322 message strictly enough to catch a broken writer: CRLF line ends only,
 * header fields `Name: value` (folded lines start with white space), one empty line, then the body.
 */
const parseMail = (file: string, raw: string): Mail => {
  expect(raw, `${file}: bare LF`).not.toMatch(/(?<!\r)\n/)
  const split = raw.indexOf("\r\n\r\n")
  expect(split, `${file}: no empty line after the header`).toBeGreaterThan(0)
  const headers: Record<string, string> = {}
  let last = ""
  for (const line of raw.slice(0, split).split("\r\n")) {
    expect(line.length, `${file}: header line over 998 characters`).toBeLessThanOrEqual(998)
    expect(line, `${file}: header line not ASCII`).toMatch(/^[\x20-\x7e\t]*$/)
    if (/^[ \t]/.test(line) && last !== "") {
      headers[last] += line
      continue
    }
    const field = /^([\x21-\x39\x3b-\x7e]+):[ \t]?(.*)$/.exec(line)
    expect(field, `${file}: not a header field: ${JSON.stringify(line)}`).not.toBeNull()
    last = field![1]!.toLowerCase()
    headers[last] = field![2]!
  }
  return { file, headers, body: raw.slice(split + 4) }
}

describe.each(hostBackends)(
  "webhook delivery, circuit breaker and re-verification on the reference host ($name)",
  (backend) => {
    let env: Record<string, string>
    let tearDown: () => Promise<void>
    let host: HostProcess
    let receiver: LocalServer
    let boot: { user_token: string; api_key: string; tenant_id: string }
    /** What the receiver answers, per request path (204 unless set). */
    const answers = new Map<string, number>()

    beforeAll(async () => {
      const certificate = makeCertificate()
      receiver = await startServer((req, res) => {
        res.writeHead(answers.get(req.url ?? "") ?? 204).end()
      }, certificate)
      ;({ env, tearDown } = await backend.setUp())
      const caFile = join(env.OMNI_DATA_DIR!, "receiver-ca.pem")
      writeFileSync(caFile, certificate.cert)
      env = {
        ...env,
        OMNI_TEST_CLOCK: "manual",
        OMNI_OUTBOUND_ALLOW: "127.0.0.1/32",
        NODE_EXTRA_CA_CERTS: caFile
      }
      host = await startHost(env)
      // The CLI takes about two seconds a call: one bootstrap per backend, a sub-account per scenario.
      boot = await admin(env, "bootstrap", "--email", "owner@example.com")
    })
    afterAll(async () => {
      if (host?.child.exitCode === null) await host.stop()
      await receiver?.close()
      await tearDown?.()
    })

    const clockNow = async (): Promise<string> => (await http(host.url, "GET", "/_test/clock")).body.now
    const advance = async (seconds: number) => {
      const moved = await http(host.url, "POST", "/_test/clock/advance", { body: { seconds } })
      expect(moved.status, `advance failed: ${JSON.stringify(moved.body)}\n${host.output().slice(-4000)}`).toBe(200)
      return moved.body.now as string
    }
    const advanceTo = async (iso: string) => advance((Date.parse(iso) - Date.parse(await clockNow())) / 1000)

    /** A fresh sub-account of the bootstrap owner, so each scenario has its own endpoints and mail. */
    const newTenant = async (name: string) => {
      const created = await http(host.url, "POST", "/api/v1/tenants", { token: boot.user_token, body: { name } })
      expect(created.status).toBe(201)
      const tenantId = created.body.id as string
      const as = async (method: string, path: string, body?: unknown) =>
        http(host.url, method, `/api/v1${path}`, { token: boot.api_key, headers: { "X-Tenant-ID": tenantId }, body })
      return { tenantId, as }
    }
    type Tenant = Awaited<ReturnType<typeof newTenant>>

    const createContacts = async (tenant: Tenant, names: ReadonlyArray<string>) => {
      const ids: Array<string> = []
      // One at a time, so the events' order is the order of `names`.
      for (const name of names) {
        const created = await tenant.as("POST", "/contacts", { name })
        expect(created.status).toBe(201)
        ids.push(created.body.id)
      }
      return ids
    }

    const endpointOf = async (tenant: Tenant, id: string) => {
      const got = await tenant.as("GET", `/webhook-endpoints/${id}`)
      expect(got.status).toBe(200)
      return got.body
    }

    /** Every delivery of the endpoint (all pages), oldest first. */
    const deliveriesOf = async (tenant: Tenant, id: string, status?: string) => {
      const items: Array<any> = []
      for (let page = 1;; page++) {
        const got = await tenant.as(
          "GET",
          `/webhook-endpoints/${id}/deliveries?page_size=100&page=${page}${status === undefined ? "" : `&status=${status}`}`
        )
        expect(got.status).toBe(200)
        items.push(...got.body.items)
        if (!got.body.has_more) break
      }
      return items.reverse()
    }

    const seenAt = (path: string) => receiver.requests.filter((r) => r.url === path)
    const parsed = (r: SeenRequest) => JSON.parse(r.body) as { id: string; event_id: string; type: string; data: any }
    const verificationsAt = (path: string) => seenAt(path).filter((r) => parsed(r).type === "webhook.verification")
    const deliveriesAt = (path: string) => seenAt(path).filter((r) => parsed(r).type !== "webhook.verification")

    /** The notification files written so far for `tenantId`, parsed. */
    const mailsFor = (tenantId: string): Array<Mail> => {
      const dir = join(env.OMNI_DATA_DIR!, "mail")
      let files: Array<string>
      try {
        files = readdirSync(dir).filter((f) => f.endsWith(".eml")).sort()
      } catch {
        return []
      }
      return files.map((f) => parseMail(f, readFileSync(join(dir, f), "utf8")))
        .filter((m) => m.headers["x-omni-tenant-id"] === tenantId)
    }

    /**
     * Creates an endpoint, proves a signed delivery reaches the receiver, then makes the receiver
     * answer 500 and walks the retry schedule until the 20th consecutive failed attempt suspends
     * it. Eight events fail together in each round (8, 16, then 24 attempts): the breaker trips in
     * the middle of the third round, so four failures land on deliveries already parked.
     */
    const suspendEndpoint = async (label: string) => {
      const tenant = await newTenant(`Webhooks ${label}`)
      const path = `/hooks/${label}`
      const name = `Receiver ${label}`
      answers.set(path, 204)
      const created = await tenant.as("POST", "/webhook-endpoints", {
        name,
        url: `${receiver.origin}${path}`,
        subscribed_events: ["contact.created"]
      })
      expect(created.status).toBe(201)
      const id = created.body.webhook_id as string
      const secret = created.body.secret_key as string
      const webhook = new Webhook(secret)

      // A healthy first delivery: signed so that the Standard Webhooks reference library accepts it.
      const [firstContact] = await createContacts(tenant, ["First"])
      await advance(0)
      const [first] = deliveriesAt(path)
      expect(deliveriesAt(path)).toHaveLength(1)
      expect(first!.method).toBe("POST")
      expect(first!.headers["content-type"]).toMatch(/^application\/json/)
      const payload = webhook.verify(first!.body, signatureHeaders(first!.headers)) as any
      expect(payload).toMatchObject({ type: "contact.created", tenant_id: tenant.tenantId, data: { contact: { id: firstContact } } })
      expect(first!.headers["webhook-id"]).toBe(payload.id)
      // A tampered body or another endpoint's secret is refused.
      expect(() => webhook.verify(first!.body.replace("First", "Forged"), signatureHeaders(first!.headers))).toThrow()
      expect(() => new Webhook(`whsec_${Buffer.alloc(24, 7).toString("base64")}`).verify(first!.body, signatureHeaders(first!.headers)))
        .toThrow()
      const delivered = await deliveriesOf(tenant, id)
      expect(delivered).toEqual([expect.objectContaining({
        event_type: "contact.created",
        event_id: payload.event_id,
        status: "success",
        attempt_number: 1,
        response_status_code: 204,
        can_retry: false
      })])

      // The receiver breaks. Eight events: attempts at +0, +5 s and +15 s (exponential 5 s, 10 s).
      answers.set(path, 500)
      const failing = await createContacts(tenant, Array.from({ length: 8 }, (_, i) => `Failing ${i}`))
      await advance(0)
      expect(deliveriesAt(path)).toHaveLength(1 + 8)
      let endpoint = await endpointOf(tenant, id)
      expect(endpoint).toMatchObject({ status: "active", is_active: true, consecutive_failures: 8, last_error: "HTTP 500" })
      const retrying = await deliveriesOf(tenant, id, "retrying")
      expect(retrying).toHaveLength(8)
      const now = await clockNow()
      for (const d of retrying) expect(d).toMatchObject({ attempt_number: 1, response_status_code: 500, next_retry_at: plus(now, 5) })

      // Nothing is retried before its time.
      await advance(4)
      expect(deliveriesAt(path)).toHaveLength(9)
      await advance(1)
      expect(deliveriesAt(path)).toHaveLength(1 + 16)
      expect((await endpointOf(tenant, id)).consecutive_failures).toBe(16)
      const suspendedAt = await advance(10)
      expect(deliveriesAt(path)).toHaveLength(1 + 24)

      endpoint = await endpointOf(tenant, id)
      expect(endpoint).toMatchObject({
        status: "suspended",
        is_active: false,
        consecutive_failures: 20,
        suspended_at: suspendedAt,
        next_reactivation_at: plus(suspendedAt, 60),
        reactivation_attempts: 0,
        last_error: "HTTP 500"
      })
      // Every unfinished delivery is parked with the backlog; none is lost.
      const parked = await deliveriesOf(tenant, id, "queued")
      expect(parked.map((d) => d.event_id).sort()).toEqual(
        (await deliveriesOf(tenant, id)).filter((d) => d.status !== "success").map((d) => d.event_id).sort()
      )
      expect(parked).toHaveLength(8)
      for (const d of parked) expect(d.next_retry_at).toBeNull()

      // The account is told, by an RFC 5322 message whose Subject says so.
      const suspendedMail = mailsFor(tenant.tenantId)
      expect(suspendedMail).toHaveLength(1)
      expect(suspendedMail[0]!.headers).toMatchObject({
        from: expect.stringContaining("@"),
        to: "owner@example.com",
        subject: expect.stringMatching(/suspended/i),
        "message-id": expect.stringMatching(/^<[^<>@\s]+@[^<>@\s]+>$/),
        "mime-version": "1.0"
      })
      // Dated by the host's (test) clock, to the second as RFC 5322 writes it.
      expect(new Date(suspendedMail[0]!.headers.date!).toISOString()).toBe(plus(suspendedAt, 0).replace(/\.\d{3}Z$/, ".000Z"))
      expect(suspendedMail[0]!.headers.subject).toContain(name)
      expect(suspendedMail[0]!.body).toContain(`${receiver.origin}${path}`)

      // New events while suspended are stored `queued`, and nothing is sent.
      const during = await createContacts(tenant, ["Queued 0", "Queued 1", "Queued 2"])
      await advance(0)
      expect(deliveriesAt(path)).toHaveLength(25)
      const queued = await deliveriesOf(tenant, id, "queued")
      expect(queued).toHaveLength(8 + 3)
      expect(verificationsAt(path)).toHaveLength(0)

      return { tenant, id, path, webhook, suspendedAt, contacts: [...failing, ...during] }
    }

    type Suspended = Awaited<ReturnType<typeof suspendEndpoint>>

    /**
     * Walks to check `index` of the schedule: one second before it nothing happens, at it exactly
     * one signed verification request reaches the receiver.
     */
    const walkToCheck = async (s: Suspended, index: number) => {
      const before = verificationsAt(s.path).length
      const at = plus(s.suspendedAt, CHECK_OFFSETS_SECONDS[index]!)
      await advanceTo(plus(at, -1))
      expect(verificationsAt(s.path), `check ${index} ran early`).toHaveLength(before)
      await advanceTo(at)
      const checks = verificationsAt(s.path)
      expect(checks, `check ${index} at +${CHECK_OFFSETS_SECONDS[index]} s`).toHaveLength(before + 1)
      const check = checks.at(-1)!
      expect(s.webhook.verify(check.body, signatureHeaders(check.headers))).toMatchObject({
        type: "webhook.verification",
        tenant_id: s.tenant.tenantId,
        data: { webhook_endpoint_id: s.id }
      })
      return endpointOf(s.tenant, s.id)
    }

    it("delivers signed events, suspends after 20 failures, and recovers at the 2 h check with the backlog replayed in order", async () => {
      const s = await suspendEndpoint("recovers")

      // Five failed checks: 1m, 5m, 15m, 30m, 1h.
      for (let i = 0; i < 5; i++) {
        const endpoint = await walkToCheck(s, i)
        expect(endpoint).toMatchObject({
          status: "suspended",
          is_active: false,
          suspended_at: s.suspendedAt,
          reactivation_attempts: i + 1,
          next_reactivation_at: plus(s.suspendedAt, CHECK_OFFSETS_SECONDS[i + 1]!)
        })
        expect(await deliveriesOf(s.tenant, s.id, "queued")).toHaveLength(11)
      }
      expect(deliveriesAt(s.path)).toHaveLength(25)

      // The receiver comes back before the 2 h check.
      answers.set(s.path, 204)
      const sentBefore = deliveriesAt(s.path).length
      const endpoint = await walkToCheck(s, 5)
      expect(endpoint).toMatchObject({
        status: "active",
        is_active: true,
        is_verified: true,
        suspended_at: null,
        next_reactivation_at: null,
        consecutive_failures: 0
      })

      // The whole backlog was replayed within that check's drain, each event once and signed.
      const replayed = deliveriesAt(s.path).slice(sentBefore)
      for (const r of replayed) s.webhook.verify(r.body, signatureHeaders(r.headers))
      const contactOf = new Map(replayed.map((r) => [parsed(r).event_id, parsed(r).data.contact.id as string]))
      expect(replayed.map((r) => parsed(r).data.contact.id).sort()).toEqual([...s.contacts].sort())
      // In created_at order: the order the host claims them in, which is what it can promise. The
      // requests go out concurrently, so their arrival order at the receiver is not guaranteed.
      const all = await deliveriesOf(s.tenant, s.id)
      expect(all).toHaveLength(12)
      expect(all.slice(1).map((d) => contactOf.get(d.event_id))).toEqual(s.contacts)
      expect(all.filter((d) => d.status !== "success")).toEqual([])

      const mails = mailsFor(s.tenant.tenantId)
      expect(mails.map((m) => m.headers.subject)).toEqual([
        expect.stringMatching(/suspended/i),
        expect.stringMatching(/active again/i)
      ])

      // Back to normal: a new event is delivered at once, and the remaining checks never run.
      const [late] = await createContacts(s.tenant, ["After recovery"])
      await advance(0)
      expect(parsed(deliveriesAt(s.path).at(-1)!).data.contact.id).toBe(late)
      const checks = verificationsAt(s.path).length
      await advance(12 * HOUR)
      expect(verificationsAt(s.path)).toHaveLength(checks)
      expect(checks).toBe(6)
    })

    it("checks at 1m, 5m, 15m, 30m, 1h, 2h, 4h, 8h and 12h, then deactivates for good and dead-letters the backlog", async () => {
      const s = await suspendEndpoint("never")

      for (let i = 0; i < 8; i++) {
        const endpoint = await walkToCheck(s, i)
        expect(endpoint).toMatchObject({
          status: "suspended",
          reactivation_attempts: i + 1,
          next_reactivation_at: plus(s.suspendedAt, CHECK_OFFSETS_SECONDS[i + 1]!)
        })
      }
      expect(await deliveriesOf(s.tenant, s.id, "queued")).toHaveLength(11)
      expect(mailsFor(s.tenant.tenantId)).toHaveLength(1)

      // The ninth and last check, at +12 h, fails too.
      const endpoint = await walkToCheck(s, 8)
      expect(endpoint).toMatchObject({
        status: "permanently_deactivated",
        is_active: false,
        suspended_at: null,
        next_reactivation_at: null,
        reactivation_attempts: 9
      })
      expect(verificationsAt(s.path)).toHaveLength(9)
      expect(await deliveriesOf(s.tenant, s.id, "queued")).toEqual([])
      const dead = await deliveriesOf(s.tenant, s.id, "dead_letter")
      expect(dead.map((d) => d.event_id).sort()).toEqual(
        (await deliveriesOf(s.tenant, s.id)).filter((d) => d.status !== "success").map((d) => d.event_id).sort()
      )
      expect(dead).toHaveLength(11)
      for (const d of dead) {
        expect(d).toMatchObject({ can_retry: true, completed_at: plus(s.suspendedAt, 12 * HOUR), next_retry_at: null })
        expect(d.error_message).toMatch(/deactivated/)
      }

      const mails = mailsFor(s.tenant.tenantId)
      expect(mails.map((m) => m.headers.subject)).toEqual([
        expect.stringMatching(/suspended/i),
        expect.stringMatching(/disabled/i)
      ])

      // Nothing more happens: no checks, no attempts, and new events create no delivery.
      const seen = seenAt(s.path).length
      await createContacts(s.tenant, ["Too late"])
      await advance(24 * HOUR)
      expect(seenAt(s.path)).toHaveLength(seen)
      expect(await deliveriesOf(s.tenant, s.id)).toHaveLength(12)
    })
  }
)
