import { createHmac } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { admin, type HostProcess, http, startHost } from "../support/Host.ts"
import { hostBackends } from "../support/HostBackends.ts"
import { waitUntil } from "../support/Poll.ts"

// Inbound payloads are stored before they are answered and processed by background workers with
// leases: a host killed after answering loses nothing, and several processes on one PostgreSQL
// share the work, each message handled exactly once.

const APP_SECRET = "workers-app-secret"
const PHONE_NUMBER_ID = "106540352242923"

const payloadOf = (n: number) => {
  const from = `4477009${String(n % 40).padStart(5, "0")}`
  return JSON.stringify({
    object: "whatsapp_business_account",
    entry: [{
      id: "102290129340399",
      changes: [{
        field: "messages",
        value: {
          messaging_product: "whatsapp",
          metadata: { display_phone_number: "15551234567", phone_number_id: PHONE_NUMBER_ID },
          contacts: [{ profile: { name: `Sender ${n % 40}` }, wa_id: from }],
          messages: [{ from, id: `wamid.WORKERS${String(n).padStart(6, "0")}`, timestamp: "1764150000", type: "text", text: { body: `message ${n}` } }]
        }
      }]
    }]
  })
}

const post = async (host: HostProcess, raw: string) => {
  const response = await fetch(`${host.url}/webhooks/chatapp`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-hub-signature-256": `sha256=${createHmac("sha256", APP_SECRET).update(raw).digest("hex")}` },
    body: raw
  })
  await response.arrayBuffer()
  return response.status
}

describe.each(hostBackends)("inbound processing across crashes and processes ($name)", (backend) => {
  let env: Record<string, string>
  let tearDown: () => Promise<void>
  const hosts: Array<HostProcess> = []
  let boot: { tenant_id: string; api_key: string }

  beforeAll(async () => {
    ;({ env, tearDown } = await backend.setUp())
    env = { ...env, OMNI_CHATAPP_APP_SECRET: APP_SECRET }
    boot = await admin(env, "bootstrap", "--email", "owner@example.com")
    await admin(
      env,
      "channel", "create", "--tenant", boot.tenant_id, "--type", "chatapp",
      "--phone-number-id", PHONE_NUMBER_ID, "--business-account-id", "102290129340399", "--access-token", "EAAGworkerstokenabcdefghijklmnop"
    )
  })
  afterAll(async () => {
    for (const host of hosts) if (host.child.exitCode === null && host.child.signalCode === null) await host.stop()
    await tearDown?.()
  })

  const start = async (extra: Record<string, string>) => {
    const host = await startHost({ ...env, ...extra })
    hosts.push(host)
    return host
  }
  /** Every `message.received` event of the tenant (all pages), read through `host`. */
  const received = async (host: HostProcess) => {
    const items: Array<any> = []
    for (let page = 1;; page++) {
      const got = await http(host.url, "GET", `/api/v1/events?type=message.received&page_size=100&page=${page}`, { token: boot.api_key })
      expect(got.status).toBe(200)
      items.push(...got.body.items)
      if (!got.body.has_more) return items
    }
  }

  it("a host killed right after answering loses nothing: the next one processes what it stored", async () => {
    const edge = await start({ OMNI_WORKERS: "0" })
    const statuses = await Promise.all(Array.from({ length: 60 }, (_, n) => post(edge, payloadOf(n))))
    expect(statuses.every((s) => s === 200)).toBe(true)
    expect(await received(edge)).toEqual([])
    await edge.kill()
    const next = await start({ OMNI_WORKERS: "1" })
    await waitUntil("every stored payload is processed", async () => (await received(next)).length >= 60, 30_000)
    const events = await received(next)
    expect(events).toHaveLength(60)
    expect(new Set(events.map((e) => e.data.message.external_id)).size).toBe(60)
  }, 120_000)

  it.runIf(backend.name === "PostgreSQL")("two processes share the work: each message is handled exactly once", async () => {
    const [a, b] = await Promise.all([start({ OMNI_WORKERS: "2" }), start({ OMNI_WORKERS: "2" })])
    const before = (await received(a!)).length
    // Every payload is posted twice, once to each process: redeliveries racing each other.
    const statuses = await Promise.all(
      Array.from({ length: 150 }, (_, i) => i + 1000).flatMap((n) => [post(a!, payloadOf(n)), post(b!, payloadOf(n))])
    )
    expect(statuses.every((s) => s === 200)).toBe(true)
    await waitUntil("both processes handled every payload", async () => (await received(a!)).length - before >= 150, 30_000)
    const events = (await received(b!)).slice(before)
    expect(events).toHaveLength(150)
    expect(new Set(events.map((e) => e.data.message.external_id)).size).toBe(150)
    // Forty senders: forty contacts and forty conversations, never two open ones for a sender.
    const conversations = await http(a!.url, "GET", "/api/v1/conversations?page_size=100&status=open", { token: boot.api_key })
    const contacts = conversations.body.items.map((c: any) => c.contact_id)
    expect(new Set(contacts).size).toBe(contacts.length)
  }, 120_000)
})
