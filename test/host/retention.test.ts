import Database from "better-sqlite3"
import { createHmac } from "node:crypto"
import { existsSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import pg from "pg"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type LocalServer, makeCertificate, startServer } from "../outbound/LocalServers.ts"
import { rawEmail } from "../support/EmailHost.ts"
import { admin, type HostProcess, http, startHost } from "../support/Host.ts"
import { hostBackends } from "../support/HostBackends.ts"

// Retention seen from outside: the host on a manual clock with OMNI_RETENTION_DAYS=1, a real HTTPS
// webhook receiver, signed operator webhooks and received email in; the clock walked past the day,
// then the stored rows read straight from the database (the SQLite file, the PostgreSQL database)
// and through the API.

const APP_SECRET = "retention-app-secret-for-tests"
const TOKEN = "EAAGretentiontokenabcdefghijklmnopqrstuvwx"
const PHONE_NUMBER_ID = "106540352280001"
const WABA_ID = "102290129380001"
const HOUR = 3600
const DAY_MS = 86_400_000

const sign = (raw: string) => `sha256=${createHmac("sha256", APP_SECRET).update(raw).digest("hex")}`

let wamids = 0
/** A signed-payload body with one text message from `from` to the channel's number. */
const textPayload = (from: string, name: string, body: string) => ({
  object: "whatsapp_business_account",
  entry: [{
    id: WABA_ID,
    changes: [{
      field: "messages",
      value: {
        messaging_product: "whatsapp",
        metadata: { display_phone_number: "15551234567", phone_number_id: PHONE_NUMBER_ID },
        contacts: [{ profile: { name }, wa_id: from }],
        messages: [{ from, id: `wamid.RETENTION${String(++wamids).padStart(6, "0")}`, timestamp: "1764150000", type: "text", text: { body } }]
      }
    }]
  }]
})

/** Reads the host's database directly: the SQLite file read-only, or a PostgreSQL connection of its own. */
interface Reader {
  readonly all: <T = Record<string, unknown>>(query: string) => Promise<Array<T>>
  readonly close: () => Promise<void>
}
const openReader = async (databaseUrl: string): Promise<Reader> => {
  if (databaseUrl.startsWith("file:")) {
    const db = new Database(databaseUrl.slice("file:".length), { readonly: true, fileMustExist: true })
    return { all: async <T>(query: string) => db.prepare(query).all() as Array<T>, close: async () => void db.close() }
  }
  const client = new pg.Client({ connectionString: databaseUrl })
  await client.connect()
  return { all: async <T>(query: string) => (await client.query(query)).rows as Array<T>, close: () => client.end() }
}

/** What retention may touch, and the customer data it must not, as stored. */
interface Snapshot {
  readonly deliveries: ReadonlyArray<{ readonly id: string; readonly status: string; readonly completed_at: string | null }>
  readonly events: ReadonlyArray<{ readonly id: string; readonly fanned_out_at: string | null }>
  readonly payloads: ReadonlyArray<{ readonly id: string; readonly source: string; readonly status: string; readonly processed_at: string | null }>
  readonly customerData: Readonly<Record<string, number>>
}

const CUSTOMER_TABLES = ["contacts", "conversations", "messages", "attachments", "email_messages", "email_attachments"] as const

describe.each(hostBackends)("retention on the reference host ($name)", (backend) => {
  let env: Record<string, string>
  let tearDown: () => Promise<void>
  let host: HostProcess
  let receiver: LocalServer
  let reader: Reader
  let boot: { user_token: string; api_key: string; tenant_id: string }
  let integration: { email_integration_id: string; address: string; inbound_secret: string }
  /** What the receiver answers, per path (204 unless set). */
  const answers = new Map<string, number>([["/fail", 500], ["/dead", 500], ["/retry", 500], ["/suspend", 500]])

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
      NODE_EXTRA_CA_CERTS: caFile,
      OMNI_CHATAPP_APP_SECRET: APP_SECRET,
      OMNI_RETENTION_DAYS: "1"
    }
    host = await startHost(env)
    boot = await admin(env, "bootstrap", "--email", "owner@example.com")
    await admin(
      env,
      "channel", "create", "--tenant", boot.tenant_id, "--type", "chatapp",
      "--phone-number-id", PHONE_NUMBER_ID, "--business-account-id", WABA_ID, "--access-token", TOKEN
    )
    integration = await admin(env, "email-integration", "create", "--tenant", boot.tenant_id, "--address", "desk@retention.example")
    reader = await openReader(env.DATABASE_URL!)
  })
  afterAll(async () => {
    await reader?.close()
    if (host?.child.exitCode === null) await host.stop()
    await receiver?.close()
    await tearDown?.()
  })

  const api = (method: string, path: string, body?: unknown, tenantId = boot.tenant_id) =>
    http(host.url, method, `/api/v1${path}`, {
      token: boot.api_key,
      headers: tenantId === boot.tenant_id ? {} : { "X-Tenant-ID": tenantId },
      body
    })
  const ok = async (method: string, path: string, body: unknown, status: number, tenantId = boot.tenant_id) => {
    const answer = await api(method, path, body, tenantId)
    expect(answer.status, JSON.stringify(answer.body)).toBe(status)
    return answer.body
  }
  const clockNow = async (): Promise<string> => (await http(host.url, "GET", "/_test/clock")).body.now
  const advance = async (seconds: number) => {
    const moved = await http(host.url, "POST", "/_test/clock/advance", { body: { seconds } })
    expect(moved.status, host.output().slice(-3000)).toBe(200)
  }
  const drain = async () => {
    const drained = await http(host.url, "POST", "/_test/drain")
    expect(drained.status, host.output().slice(-3000)).toBe(200)
  }
  const newTenant = async (name: string): Promise<string> => {
    const created = await http(host.url, "POST", "/api/v1/tenants", { token: boot.user_token, body: { name } })
    expect(created.status, JSON.stringify(created.body)).toBe(201)
    return created.body.id
  }
  const endpoint = async (path: string, events: ReadonlyArray<string>, extra: Record<string, unknown> = {}, tenantId = boot.tenant_id) =>
    (await ok("POST", "/webhook-endpoints", { name: `Receiver ${path}`, url: `${receiver.origin}${path}`, subscribed_events: events, ...extra }, 201, tenantId))
      .webhook_id as string
  const contact = async (name: string, tenantId = boot.tenant_id) => (await ok("POST", "/contacts", { name }, 201, tenantId)).id as string
  const postChatapp = async (from: string, name: string, text: string) => {
    const raw = JSON.stringify(textPayload(from, name, text))
    const response = await fetch(`${host.url}/webhooks/chatapp`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-hub-signature-256": sign(raw) },
      body: raw
    })
    expect(response.status).toBe(200)
  }
  const postEmail = async (messageId: string) => {
    const raw = await rawEmail({
      from: { name: "Ana Lima", address: "ana@customer.example" },
      to: integration.address,
      subject: "Invoice question",
      messageId,
      text: "Could you resend the invoice?",
      files: [{ filename: "invoice.txt", contentType: "text/plain", content: new TextEncoder().encode("INV-2026-0042") }]
    })
    const response = await fetch(`${host.url}/webhooks/email/${integration.email_integration_id}`, {
      method: "POST",
      headers: { "content-type": "message/rfc822", authorization: `Bearer ${integration.inbound_secret}` },
      body: new Uint8Array(raw)
    })
    expect(response.status).toBe(200)
  }
  /** Every delivery of the endpoint through the API, all pages. */
  const listed = async (endpointId: string, tenantId = boot.tenant_id) => {
    const items: Array<any> = []
    for (let page = 1;; page++) {
      const got = await ok("GET", `/webhook-endpoints/${endpointId}/deliveries?page_size=100&page=${page}`, undefined, 200, tenantId)
      items.push(...got.items)
      if (!got.has_more) return { items, total: got.total as number }
    }
  }
  const snapshot = async (): Promise<Snapshot> => {
    const customerData: Record<string, number> = {}
    for (const table of CUSTOMER_TABLES) customerData[table] = Number((await reader.all<{ n: number | string }>(`SELECT count(*) AS n FROM ${table}`))[0]!.n)
    return {
      deliveries: await reader.all<Snapshot["deliveries"][number]>("SELECT id, status, completed_at FROM webhook_deliveries ORDER BY id"),
      events: await reader.all<Snapshot["events"][number]>("SELECT id, fanned_out_at FROM outbox_events ORDER BY id"),
      payloads: await reader.all<Snapshot["payloads"][number]>("SELECT id, source, status, processed_at FROM inbound_payloads ORDER BY id"),
      customerData
    }
  }
  /** Whether the received email of payload `id` still has its bytes in the host's blob store. */
  const emailBytesKept = (id: string) => existsSync(join(env.OMNI_DATA_DIR!, "files", "inbound", "email", id))
  const pruneLines = () =>
    [...host.output().matchAll(/retention: deleted (\d+) finished deliveries, (\d+) outbox events and (\d+) inbound payloads/g)]
      .map((m) => ({ deliveries: Number(m[1]), events: Number(m[2]), payloads: Number(m[3]) }))

  // The scenario's own state, carried from one step to the next.
  let okEndpoint: string
  let failEndpoint: string
  let retryTenant: string
  let retryEndpoint: string
  let suspendTenant: string
  let suspendEndpoint: string
  let start: string
  let old: Snapshot
  let recentAttachmentId: string
  let oldFailedDeliveryId: string

  it("keeps finished deliveries, their events and raw payloads while they are younger than OMNI_RETENTION_DAYS", async () => {
    start = await clockNow()
    okEndpoint = await endpoint("/ok", ["contact.created"])
    failEndpoint = await endpoint("/fail", ["contact.created"], { retry_strategy: "none", max_retries: 0 })
    const deadEndpoint = await endpoint("/dead", ["contact.updated"])
    retryTenant = await newTenant("Retention retries")
    suspendTenant = await newTenant("Retention suspension")
    const first = await contact("Bea")
    await contact("Caio")
    await postChatapp("5511988880001", "Dora", "Hello, is my order on its way?")
    await postEmail("invoice-1@customer.example")
    await drain()
    // A delivery retrying when its endpoint is switched off is dead-lettered.
    await ok("PATCH", `/contacts/${first}`, { name: "Bea Souza" }, 200)
    await drain()
    await ok("PATCH", `/webhook-endpoints/${deadEndpoint}`, { is_active: false }, 200)
    await drain()

    old = await snapshot()
    const statuses = new Set(old.deliveries.map((d) => d.status))
    expect([...statuses].sort()).toEqual(["dead_letter", "failed", "success"])
    expect(old.payloads.map((p) => [p.source, p.status]).sort()).toEqual([["chatapp", "processed"], ["email", "processed"]])
    expect(old.events.every((e) => e.fanned_out_at !== null)).toBe(true)
    expect(old.customerData).toMatchObject({ contacts: 4, conversations: 2, messages: 2, email_messages: 1, email_attachments: 1 })
    // A received email's bytes are kept in the blob store beside its payload row.
    expect(emailBytesKept(old.payloads.find((p) => p.source === "email")!.id)).toBe(true)
    oldFailedDeliveryId = (await listed(failEndpoint)).items.find((d) => d.status === "failed").id

    // 23 hours on: nothing is a day old yet.
    await advance(23 * HOUR)
    expect(await snapshot()).toEqual(old)
    expect(pruneLines()).toEqual([])
  })

  it("deletes exactly the finished rows older than a day once the clock passes it; recent and unfinished ones stay", async () => {
    // Recent work, 23 hours after the old: finished, retrying (other tenant) and queued behind a suspension.
    await contact("Eli")
    await postChatapp("5511988880002", "Fabi", "Thanks!")
    retryEndpoint = await endpoint("/retry", ["contact.created"], { retry_strategy: "exponential", max_retries: 15 }, retryTenant)
    await contact("Gus", retryTenant)
    suspendEndpoint = await endpoint("/suspend", ["contact.updated"], { retry_strategy: "none", max_retries: 0 }, suspendTenant)
    const changing = await contact("Hana", suspendTenant)
    for (let i = 0; i < 20; i++) await ok("PATCH", `/contacts/${changing}`, { name: `Hana ${i}` }, 200, suspendTenant)
    await drain()
    expect((await ok("GET", `/webhook-endpoints/${suspendEndpoint}`, undefined, 200, suspendTenant)).status).toBe("suspended")
    await ok("PATCH", `/contacts/${changing}`, { name: "Hana Queued" }, 200, suspendTenant)
    await drain()
    const upload = new FormData()
    upload.set("file", new Blob([new TextEncoder().encode("kept forever")], { type: "text/plain" }), "kept.txt")
    const uploaded = await fetch(`${host.url}/api/v1/attachments/upload`, {
      method: "POST",
      headers: { authorization: `Bearer ${boot.api_key}` },
      body: upload
    })
    expect(uploaded.status).toBe(201)
    recentAttachmentId = ((await uploaded.json()) as { id: string }).id

    const before = await snapshot()
    const okBefore = await listed(okEndpoint)

    // Two more hours: the old rows are 25 hours old, the recent ones 2.
    await advance(2 * HOUR)
    const cutoff = new Date(Date.parse(await clockNow()) - DAY_MS).toISOString()
    expect(cutoff > start).toBe(true)
    const after = await snapshot()

    const oldIds = new Set([...old.deliveries.map((d) => d.id), ...old.events.map((e) => e.id), ...old.payloads.map((p) => p.id)])
    // Every old row went, and nothing else.
    expect(after.deliveries.filter((d) => oldIds.has(d.id))).toEqual([])
    expect(after.events.filter((e) => oldIds.has(e.id))).toEqual([])
    expect(after.payloads.filter((p) => oldIds.has(p.id))).toEqual([])
    const recentOf = <T extends { readonly id: string }>(rows: ReadonlyArray<T>) => rows.filter((row) => !oldIds.has(row.id)).map((row) => row.id)
    expect(after.deliveries.map((d) => d.id)).toEqual(expect.arrayContaining(recentOf(before.deliveries)))
    expect(after.events.map((e) => e.id)).toEqual(expect.arrayContaining(recentOf(before.events)))
    expect(after.payloads.map((p) => p.id)).toEqual(recentOf(before.payloads))
    // What stays: finished recent rows, unfinished ones (retrying, queued), and every row of customer data.
    expect(new Set(after.deliveries.map((d) => d.status))).toEqual(new Set(["success", "failed", "retrying", "queued"]))
    for (const d of after.deliveries) if (d.completed_at !== null) expect(d.completed_at >= cutoff).toBe(true)
    for (const e of after.events) expect(e.fanned_out_at! >= cutoff).toBe(true)
    expect(after.payloads.map((p) => [p.source, p.status])).toEqual([["chatapp", "processed"]])
    // The pruned email payload's bytes went with it.
    expect(emailBytesKept(old.payloads.find((p) => p.source === "email")!.id)).toBe(false)
    expect(after.customerData).toEqual(before.customerData)

    // One log line for the pass, with its counts.
    expect(pruneLines()).toEqual([{ deliveries: old.deliveries.length, events: old.events.length, payloads: old.payloads.length }])

    // The API sees the same: the endpoint's history lost its old deliveries only.
    const okAfter = await listed(okEndpoint)
    expect(okAfter.total).toBe(okAfter.items.length)
    expect(okAfter.items.map((d) => d.id).sort()).toEqual(
      okBefore.items.filter((d) => !oldIds.has(d.id)).map((d) => d.id).sort()
    )
    expect(okAfter.total).toBeLessThan(okBefore.total)
    expect((await listed(retryEndpoint, retryTenant)).items.map((d) => d.status)).toEqual(["retrying"])
    expect((await listed(suspendEndpoint, suspendTenant)).items.filter((d) => d.status === "queued")).toHaveLength(1)
    const events = await ok("GET", "/events?page_size=100", undefined, 200)
    expect(events.items.filter((e: { id: string }) => oldIds.has(e.id))).toEqual([])
    expect(events.items.length).toBeGreaterThan(0)
  })

  it("leaves customer data readable through the API", async () => {
    const contacts = await ok("GET", "/contacts?page_size=100", undefined, 200)
    expect(contacts.items).toHaveLength(6)
    expect(contacts.items.map((c: { name: string }) => c.name)).toEqual(expect.arrayContaining(["Bea Souza", "Caio", "Dora", "Eli", "Fabi"]))
    const conversations = await ok("GET", "/conversations?page_size=100", undefined, 200)
    expect(conversations.items).toHaveLength(3)
    for (const conversation of conversations.items) {
      const messages = await ok("GET", `/messages?conversation_id=${conversation.id}&page_size=100`, undefined, 200)
      expect(messages.items.length).toBeGreaterThan(0)
    }
    const attachment = await ok("GET", `/attachments/${recentAttachmentId}`, undefined, 200)
    expect(new TextDecoder().decode(await (await fetch(attachment.url)).arrayBuffer())).toBe("kept forever")
  })

  it("answers a retry of a pruned delivery 404, as for any unknown one; a kept failed one can still be retried", async () => {
    const unknownId = globalThis.crypto.randomUUID()
    const pruned = await api("POST", `/webhook-endpoints/${failEndpoint}/deliveries/${oldFailedDeliveryId}/retry`)
    const unknown = await api("POST", `/webhook-endpoints/${failEndpoint}/deliveries/${unknownId}/retry`)
    expect(pruned.status).toBe(404)
    expect(unknown.status).toBe(404)
    expect(JSON.stringify(pruned.body).replace(oldFailedDeliveryId, "ID")).toBe(JSON.stringify(unknown.body).replace(unknownId, "ID"))
    const kept = (await listed(failEndpoint)).items.find((d) => d.status === "failed")
    expect((await api("POST", `/webhook-endpoints/${failEndpoint}/deliveries/${kept.id}/retry`)).status).toBe(201)
  })
})

describe("retention settings of the reference host", () => {
  it("refuses to start with OMNI_RETENTION_DAYS=0, naming the variable", async () => {
    const [backend] = hostBackends
    const { env, tearDown } = await backend!.setUp()
    try {
      await expect(startHost({ ...env, OMNI_RETENTION_DAYS: "0" })).rejects.toThrow(
        /could not start: OMNI_RETENTION_DAYS must be a whole number from 1 to 36500, got "0"/
      )
    } finally {
      await tearDown()
    }
  })
})
