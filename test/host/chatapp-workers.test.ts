import { createHmac } from "node:crypto"
import pg from "pg"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type DatabaseReader, openDatabaseReader } from "../support/DatabaseReader.ts"
import { admin, type HostProcess, http, startHost } from "../support/Host.ts"
import { hostBackends } from "../support/HostBackends.ts"
import { waitUntil } from "../support/Poll.ts"
import { parsePrometheusText } from "../support/PrometheusText.ts"
import { seededRandom } from "../support/Random.ts"

// Inbound payloads are stored before they are answered and processed by background workers with
// leases, a claim of payloads stored in one transaction: a host killed after answering, or in the
// middle of a claim, loses nothing and stores nothing twice, and several processes on one
// PostgreSQL share the work, each message handled exactly once.

const random = seededRandom()

const APP_SECRET = "workers-app-secret"
const PHONE_NUMBER_ID = "106540352242923"
const BUSINESS_ACCOUNT_ID = "102290129340399"

const payloadOf = (n: number) => {
  const from = `4477009${String(n % 40).padStart(5, "0")}`
  return JSON.stringify({
    object: "whatsapp_business_account",
    entry: [{
      id: BUSINESS_ACCOUNT_ID,
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

// ---------------------------------------------------------------------------------------------
// A stored backlog in the operator's wire format: contacts' messages (senders repeated) and the
// statuses of messages the host sent, in payloads of 1 to 10 items, some items delivered twice.

type StatusName = "sent" | "delivered" | "read" | "failed"

/** One message or status of a payload. */
type Item = MessageItem | StatusItem
type MessageItem = { readonly kind: "message"; readonly from: string; readonly id: string; readonly text: string }
type StatusItem = { readonly kind: "status"; readonly id: string; readonly status: StatusName; readonly at: number; readonly recipient: string }

/** Where a message the host sent ends, whatever order its statuses arrive in. */
type Ending = "delivered" | "read" | "failed"
const STATUSES_OF: Record<Ending, ReadonlyArray<StatusName>> = {
  delivered: ["sent", "delivered"],
  read: ["sent", "delivered", "read"],
  failed: ["sent", "failed"]
}
/** Seconds after its message's base time each status is dated. */
const STATUS_OFFSET: Record<StatusName, number> = { sent: 1, delivered: 2, read: 3, failed: 2 }

/** A message the host sent (through the API), and the wa_id it went to. */
interface Sent {
  readonly externalId: string
  readonly recipient: string
}

/** A sent message of the backlog: its statuses' base time and where they take it. */
interface Planned extends Sent {
  readonly base: number
  readonly ending: Ending
}

const statusWire = (s: StatusItem) => ({
  id: s.id,
  status: s.status,
  timestamp: String(s.at),
  recipient_id: s.recipient,
  ...(s.status === "failed"
    ? { errors: [{ code: 131026, title: "Message undeliverable", message: "Message undeliverable", error_data: { details: "Message could not be delivered" } }] }
    : { conversation: { id: `CONVERSATION${s.recipient}`, origin: { type: "service" } }, pricing: { billable: true, pricing_model: "CBP", category: "service" } })
})

/** A payload as the operator POSTs it: one entry, one `messages` change with the senders' profiles. */
const wireOf = (items: ReadonlyArray<Item>): string => {
  const messages = items.filter((item) => item.kind === "message")
  const statuses = items.filter((item) => item.kind === "status")
  const senders = [...new Set(messages.map((m) => m.from))]
  return JSON.stringify({
    object: "whatsapp_business_account",
    entry: [{
      id: BUSINESS_ACCOUNT_ID,
      changes: [{
        field: "messages",
        value: {
          messaging_product: "whatsapp",
          metadata: { display_phone_number: "15551234567", phone_number_id: PHONE_NUMBER_ID },
          ...(senders.length === 0 ? {} : { contacts: senders.map((wa_id) => ({ profile: { name: `Sender ${wa_id.slice(-4)}` }, wa_id })) }),
          ...(messages.length === 0 ? {} : {
            messages: messages.map((m) => ({ from: m.from, id: m.id, timestamp: "1764150000", type: "text", text: { body: m.text } }))
          }),
          ...(statuses.length === 0 ? {} : { statuses: statuses.map(statusWire) })
        }
      }]
    }]
  })
}

const pick = <A>(items: ReadonlyArray<A>): A => items[random.int(0, items.length - 1)]!

const shuffled = <A>(items: ReadonlyArray<A>): Array<A> => {
  const out = [...items]
  for (let i = out.length - 1; i > 0; i--) {
    const j = random.int(0, i)
    ;[out[i], out[j]] = [out[j]!, out[i]!]
  }
  return out
}

/** `count` wa_ids `prefix` + 5 digits, from `from` on. */
const waIds = (prefix: string, from: number, count: number) =>
  Array.from({ length: count }, (_, i) => `${prefix}${String(from + i).padStart(5, "0")}`)

/** What a backlog holds, and what processing it must leave behind. */
interface Backlog {
  readonly bodies: ReadonlyArray<string>
  /** The contacts' messages by wamid (each once, however often delivered), and who sent each. */
  readonly messages: ReadonlyMap<string, string>
  readonly sent: ReadonlyArray<Planned>
  /** Items delivered a second time, in another payload or the same one. */
  readonly redelivered: number
}

/** Items a payload holds at most. */
const PAYLOAD_ITEMS = 10

/**
 * `messages` contacts' messages (wamids `wamid.HBgL<tag>M<n>`) from senders picked at random among
 * `senders`, shuffled into payloads of 1 to 7; the statuses of each of `sent` (ending read, delivered
 * or failed) in random order, each in a payload picked at random or, with `statusSpacing`, that many
 * payloads after the previous one; then `redeliveries` items delivered again in the payload
 * `distance` (one of `distances`) after or before theirs. A full payload passes an item on to the next.
 */
const backlogOf = (options: {
  readonly tag: string
  readonly senders: ReadonlyArray<string>
  readonly messages: number
  readonly sent: ReadonlyArray<Sent>
  readonly statusSpacing?: number
  readonly redeliveries: number
  readonly distances: ReadonlyArray<number>
}): Backlog => {
  const messages = new Map<string, string>()
  const items: Array<Item> = []
  for (let n = 0; n < options.messages; n++) {
    const from = pick(options.senders)
    const id = `wamid.HBgL${options.tag}M${String(n).padStart(6, "0")}`
    messages.set(id, from)
    items.push({ kind: "message", from, id, text: `message ${n} from ${from}` })
  }
  const payloads: Array<Array<Item>> = []
  const queue = shuffled(items)
  while (queue.length > 0) payloads.push(queue.splice(0, random.int(1, 7)))
  const place = (at: number, item: Item) => {
    for (let i = 0; i < payloads.length; i++) {
      const payload = payloads[(at + i) % payloads.length]!
      if (payload.length < PAYLOAD_ITEMS) return void payload.push(item)
    }
    throw new Error("the backlog's payloads are full")
  }
  const sent = options.sent.map((s, i): Planned => ({ ...s, base: 1764160000 + 10 * i, ending: pick<Ending>(["read", "read", "delivered", "failed"]) }))
  for (const s of sent) {
    const statuses = shuffled(STATUSES_OF[s.ending])
    const spacing = options.statusSpacing
    const first = random.int(0, payloads.length - 1 - (spacing ?? 0) * (statuses.length - 1))
    statuses.forEach((status, k) =>
      place(spacing === undefined ? random.int(0, payloads.length - 1) : first + k * spacing, {
        kind: "status",
        id: s.externalId,
        status,
        at: s.base + STATUS_OFFSET[status],
        recipient: s.recipient
      })
    )
  }
  let redelivered = 0
  for (let r = 0; r < options.redeliveries; r++) {
    const from = random.int(0, payloads.length - 1)
    const distance = pick(options.distances)
    const to = from + distance < payloads.length ? from + distance : from - distance
    if (to < 0 || payloads[to]!.length >= PAYLOAD_ITEMS) continue
    payloads[to]!.push(pick(payloads[from]!))
    redelivered++
  }
  return { bodies: payloads.map(wireOf), messages, sent, redelivered }
}

/**
 * PostgreSQL: a transaction of the test's own holding rows a batch writes (FOR UPDATE): the messages
 * sent with `externalIds` (their statuses, its first write after the handled keys) and the open
 * conversations of the contacts with `phones` (their times, its last). It never waits for a lock (a
 * batch holding one makes it try again), so a batch waiting for it can never be waited for in turn.
 * Resolves with its backend's `pid` (what a waiting transaction names in `pg_blocking_pids`) and
 * `release`, which rolls it back.
 */
const holdRows = async (databaseUrl: string, phones: ReadonlyArray<string>, externalIds: ReadonlyArray<string>) => {
  const client = new pg.Client({ connectionString: databaseUrl })
  await client.connect()
  const release = async () => {
    try {
      await client.query("ROLLBACK")
    } finally {
      await client.end()
    }
  }
  try {
    await waitUntil("no batch holds the rows the test holds", async () => {
      await client.query("BEGIN")
      try {
        const messages = await client.query("SELECT id FROM messages WHERE external_id = ANY($1) FOR UPDATE NOWAIT", [externalIds])
        const conversations = await client.query(
          "SELECT c.id FROM conversations c JOIN contacts k ON k.id = c.contact_id WHERE c.status = 'open' AND k.phone = ANY($1) FOR UPDATE OF c NOWAIT",
          [phones]
        )
        expect([messages.rowCount, conversations.rowCount]).toEqual([externalIds.length, phones.length])
        return true
      } catch (error) {
        await client.query("ROLLBACK")
        // 55P03, lock_not_available: a batch holds one of them now.
        if ((error as { readonly code?: unknown }).code === "55P03") return false
        throw error
      }
    })
    const pid = (await client.query("SELECT pg_backend_pid() AS pid")).rows[0].pid as number
    return { pid, release }
  } catch (error) {
    await release()
    throw error
  }
}

/** Each of `expected` among `got`: what is missing, there twice or more, or there unasked; all empty when each is there once. */
const tally = (got: ReadonlyArray<string>, expected: Iterable<string>) => {
  const counts = new Map<string, number>()
  for (const item of got) counts.set(item, (counts.get(item) ?? 0) + 1)
  const wanted = new Set(expected)
  return {
    missing: [...wanted].filter((item) => !counts.has(item)),
    twice: [...counts].filter(([, n]) => n > 1).map(([item]) => item),
    unexpected: [...counts.keys()].filter((item) => !wanted.has(item))
  }
}
const ONCE_EACH = { missing: [], twice: [], unexpected: [] }

/** A stored timestamp as ISO 8601 (how either database hands it back aside), or null. */
const isoOrNull = (value: unknown) => (value === null ? null : new Date(value as string).toISOString())

/** What a sent message looks like once all its statuses are applied. */
const endStateOf = (s: Planned) => ({
  status: s.ending,
  delivered_at: s.ending === "failed" ? null : isoOrNull((s.base + STATUS_OFFSET.delivered) * 1000),
  read_at: s.ending === "read" ? isoOrNull((s.base + STATUS_OFFSET.read) * 1000) : null,
  failed_at: s.ending === "failed" ? isoOrNull((s.base + STATUS_OFFSET.failed) * 1000) : null,
  has_error: s.ending === "failed"
})

/** The inbound payloads as stored: their processing state. */
interface PayloadRow {
  readonly id: string
  readonly status: string
  readonly holder: string | null
  readonly attempts: number
}

const PAYLOAD_ROWS = "SELECT id, status, holder, attempts FROM inbound_payloads"

const payloadRows = async (db: DatabaseReader): Promise<Array<PayloadRow>> =>
  (await db.all(PAYLOAD_ROWS)).map((row) => ({ ...row, attempts: Number(row.attempts) }) as PayloadRow)

/** The backlog's payloads (those not in `before`) by state; `held`: pending ones a claim holds. */
const backlogState = (rows: ReadonlyArray<PayloadRow>, before: ReadonlySet<string>) => {
  const mine = rows.filter((row) => !before.has(row.id))
  return {
    total: mine.length,
    processed: mine.filter((row) => row.status === "processed").length,
    pending: mine.filter((row) => row.status === "pending").length,
    held: mine.filter((row) => row.status === "pending" && row.holder !== null).map((row) => row.id)
  }
}

describe.each(hostBackends)("inbound processing across crashes and processes ($name)", (backend) => {
  let env: Record<string, string>
  let tearDown: () => Promise<void>
  const hosts: Array<HostProcess> = []
  let boot: { tenant_id: string; api_key: string }
  let channelId: string

  beforeAll(async () => {
    ;({ env, tearDown } = await backend.setUp())
    env = { ...env, OMNI_CHATAPP_APP_SECRET: APP_SECRET }
    boot = await admin(env, "bootstrap", "--email", "owner@example.com")
    ;({ channel_id: channelId } = await admin(
      env,
      "channel", "create", "--tenant", boot.tenant_id, "--type", "chatapp",
      "--phone-number-id", PHONE_NUMBER_ID, "--business-account-id", BUSINESS_ACCOUNT_ID, "--access-token", "EAAGworkerstokenabcdefghijklmnop"
    ))
  })
  /** Stops every host still running: a test that starts its own work leaves none of another's workers on it. */
  const stopRunning = async () => {
    await Promise.all(hosts.filter((host) => host.child.exitCode === null && host.child.signalCode === null).map((host) => host.stop()))
  }
  afterAll(async () => {
    await stopRunning()
    await tearDown?.()
  })

  const start = async (extra: Record<string, string>) => {
    const host = await startHost({ ...env, ...extra })
    hosts.push(host)
    return host
  }
  /** Every event of the tenant of `type` (all pages), read through `host`. */
  const events = async (host: HostProcess, type: string) => {
    const items: Array<any> = []
    for (let page = 1;; page++) {
      const got = await http(host.url, "GET", `/api/v1/events?type=${type}&page_size=100&page=${page}`, { token: boot.api_key })
      expect(got.status).toBe(200)
      items.push(...got.body.items)
      if (!got.body.has_more) return items
    }
  }
  /** Every `message.received` event of the tenant, read through `host`. */
  const received = (host: HostProcess) => events(host, "message.received")
  /** Runs `host`'s due work to the end (a host on the test clock); fails unless it answers 200. */
  const drain = async (host: HostProcess) => {
    const drained = await http(host.url, "POST", "/_test/drain")
    expect(drained.status, host.output().slice(-3000)).toBe(200)
  }
  /** Moves `host`'s test clock by `seconds`, then drains. */
  const advance = async (host: HostProcess, seconds: number) => {
    const moved = await http(host.url, "POST", "/_test/clock/advance", { body: { seconds } })
    expect(moved.status, host.output().slice(-3000)).toBe(200)
  }
  /** POSTs every body, `hosts` taking turns; resolves with the answers' statuses. */
  const postAll = (to: ReadonlyArray<HostProcess>, bodies: ReadonlyArray<string>) =>
    Promise.all(bodies.map((body, i) => post(to[i % to.length]!, body)))
  /** Payloads `host` finished as processed, retried and failed so far (its `GET /metrics`, OMNI_METRICS=1). */
  const finishedBy = async (host: HostProcess) => {
    const response = await fetch(`${host.url}/metrics`)
    expect(response.status).toBe(200)
    const scrape = parsePrometheusText(await response.text())
    const count = (outcome: string) => scrape.value("omni_inbound_payloads_processed_total", { source: "chatapp", outcome })
    return { processed: count("processed"), retry: count("retry"), failed: count("failed") }
  }

  /**
   * Makes each of `senders` a contact with an open conversation (a message of theirs, stored and
   * processed through `host`, wamid `wamid.HBgL<tag>HELLO<n>`) and sends each `perSender` replies
   * through the API (the host's operator simulator): the messages a backlog's statuses are about.
   */
  const sendReplies = async (host: HostProcess, db: DatabaseReader, tag: string, senders: ReadonlyArray<string>, perSender: number) => {
    const hellos = senders.map((from, n): MessageItem => ({ kind: "message", from, id: `wamid.HBgL${tag}HELLO${n}`, text: "hello" }))
    expect(await postAll([host], hellos.map((hello) => wireOf([hello])))).toEqual(hellos.map(() => 200))
    await drain(host)
    const stored = await db.all("SELECT external_id, conversation_id FROM messages WHERE tenant_id = $1 AND external_id LIKE $2", [
      boot.tenant_id,
      `wamid.HBgL${tag}HELLO%`
    ])
    const conversationOf = new Map(stored.map((m) => [m.external_id as string, m.conversation_id as string]))
    return Promise.all(hellos.flatMap((hello) =>
      Array.from({ length: perSender }, async (_, k): Promise<Sent> => {
        const reply = await http(host.url, "POST", "/api/v1/messages", {
          token: boot.api_key,
          body: { conversation_id: conversationOf.get(hello.id), text: `reply ${k}` }
        })
        expect(reply.status, JSON.stringify(reply.body)).toBe(201)
        return { externalId: reply.body.external_id, recipient: hello.from }
      })
    ))
  }

  /**
   * What processing `backlog` must leave, read from the database and through `host`'s API: every
   * contact's message (wamids `wamid.HBgL<tag>M…`) stored once, in its sender's one open
   * conversation of the channel, with one `message.received` event; one contact (and one
   * `contact.created` event) for each sender (wa_ids `<pool>…`: `known` ones and the backlog's),
   * whose conversation's last inbound time is its newest message's;
   * every sent message at the end its statuses take it to, none of them kept apart or keyed; no payload left
   * pending or failed.
   */
  const expectBacklogDone = async (
    db: DatabaseReader,
    host: HostProcess,
    world: { readonly tag: string; readonly pool: string; readonly known: ReadonlyArray<string> },
    backlog: Backlog
  ) => {
    const { known, pool, tag } = world
    const stored = await db.all(
      `SELECT m.external_id, k.phone, c.status AS conversation_status, c.channel_id
       FROM messages m JOIN contacts k ON k.id = m.contact_id JOIN conversations c ON c.id = m.conversation_id
       WHERE m.tenant_id = $1 AND m.direction = 'inbound' AND m.external_id LIKE $2`,
      [boot.tenant_id, `wamid.HBgL${tag}M%`]
    )
    expect(tally(stored.map((m) => m.external_id), backlog.messages.keys())).toEqual(ONCE_EACH)
    expect(stored.filter((m) => m.phone !== `+${backlog.messages.get(m.external_id)}` || m.conversation_status !== "open" || m.channel_id !== channelId))
      .toEqual([])
    const announced = (await received(host)).map((e) => e.data.message.external_id).filter((id: string) => id.startsWith(`wamid.HBgL${tag}M`))
    expect(tally(announced, backlog.messages.keys())).toEqual(ONCE_EACH)

    const phones = [...new Set([...known, ...backlog.messages.values()])].map((s) => `+${s}`)
    const contacts = await db.all("SELECT phone FROM contacts WHERE tenant_id = $1 AND phone LIKE $2", [boot.tenant_id, `+${pool}%`])
    expect(tally(contacts.map((c) => c.phone), phones)).toEqual(ONCE_EACH)
    const created = (await events(host, "contact.created")).map((e) => e.data.contact.phone).filter((phone: string) => phone.startsWith(`+${pool}`))
    expect(tally(created, phones)).toEqual(ONCE_EACH)
    const open = await db.all(
      `SELECT k.phone, c.channel_id FROM conversations c JOIN contacts k ON k.id = c.contact_id
       WHERE c.tenant_id = $1 AND c.status = 'open' AND k.phone LIKE $2`,
      [boot.tenant_id, `+${pool}%`]
    )
    expect(tally(open.map((c) => `${c.phone} ${c.channel_id}`), phones.map((phone) => `${phone} ${channelId}`))).toEqual(ONCE_EACH)
    // Each conversation's time of its contact's last message is its newest stored message's.
    const times = await db.all(
      `SELECT k.phone, c.last_inbound_at, max(m.created_at) AS newest
       FROM conversations c JOIN contacts k ON k.id = c.contact_id JOIN messages m ON m.conversation_id = c.id AND m.direction = 'inbound'
       WHERE c.tenant_id = $1 AND c.status = 'open' AND k.phone LIKE $2 GROUP BY k.phone, c.last_inbound_at`,
      [boot.tenant_id, `+${pool}%`]
    )
    expect(times.filter((c) => isoOrNull(c.last_inbound_at) !== isoOrNull(c.newest))).toEqual([])

    const outbound = new Map((await db.all(
      "SELECT external_id, status, delivered_at, read_at, failed_at, error FROM messages WHERE tenant_id = $1 AND direction = 'outbound'",
      [boot.tenant_id]
    )).map((m) => [m.external_id, m]))
    const ended = backlog.sent.map((s) => {
      const m = outbound.get(s.externalId)
      return {
        id: s.externalId,
        ...(m === undefined ? {} : {
          status: m.status,
          delivered_at: isoOrNull(m.delivered_at),
          read_at: isoOrNull(m.read_at),
          failed_at: isoOrNull(m.failed_at),
          has_error: m.error !== null
        })
      }
    })
    expect(ended).toEqual(backlog.sent.map((s) => ({ id: s.externalId, ...endStateOf(s) })))
    const ids = new Set(backlog.sent.map((s) => s.externalId))
    // A settled message's row is its statuses' only record: none is kept apart for later.
    const kept = (await db.all("SELECT external_id, status FROM message_statuses WHERE tenant_id = $1", [boot.tenant_id]))
      .filter((row) => ids.has(row.external_id)).map((row) => `${row.external_id} ${row.status}`)
    expect(kept).toEqual([])
    // Nor a de-duplication key: a status handled again moves nothing.
    const keys = (await db.all("SELECT key FROM inbound_handled WHERE source = 'chatapp' AND key LIKE 'status:%'"))
      .filter((row) => ids.has(String(row.key).slice("status:".length, String(row.key).lastIndexOf(":"))))
    expect(keys).toEqual([])

    expect((await payloadRows(db)).filter((row) => row.status !== "processed")).toEqual([])
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

  it("a host killed mid-batch loses no payload and stores nothing twice: the next one takes over its claim", async () => {
    // The edge stores the backlog without processing it (no workers, a test clock nobody moves).
    const [edge] = await Promise.all([start({ OMNI_TEST_CLOCK: "manual", OMNI_WORKERS: "0" }), stopRunning()])
    const db = await openDatabaseReader(env.DATABASE_URL!)
    try {
      const world = { tag: "KILL", pool: "4477010", known: waIds("4477010", 0, 20) }
      const sent = await sendReplies(edge, db, world.tag, world.known, 2)
      const senders = [...world.known, ...waIds(world.pool, 20, 40)]
      const backlog = backlogOf({ tag: world.tag, senders, messages: 1_200, sent, redeliveries: 150, distances: [0, 1, 7, 50, 120] })
      const before = new Set((await payloadRows(db)).map((row) => row.id))
      expect(backlog.redelivered).toBeGreaterThan(0)
      expect(await postAll([edge], backlog.bodies)).toEqual(backlog.bodies.map(() => 200))
      expect(backlogState(await payloadRows(db), before)).toMatchObject({ total: backlog.bodies.length, pending: backlog.bodies.length })

      // The edge works through the backlog (a drain: a worker's rounds, started when the test says)
      // and is killed in the middle of a claim once one or two claims of 50 are done.
      const killAfter = 50 * random.int(1, 2)
      const progress = async () => {
        const state = backlogState(await payloadRows(db), before)
        if (state.pending === 0) throw new Error(`no kill in the middle of a claim: the edge got through all ${state.total} payloads first`)
        return state
      }
      const draining = http(edge.url, "POST", "/_test/drain").then(() => "finished", () => "killed")
      await waitUntil(`${killAfter} payloads of the backlog are processed`, async () => (await progress()).processed >= killAfter, 60_000)
      if (backend.name === "PostgreSQL") {
        // Inside a claim's transaction: rows its batch writes held, the edge is killed while the batch,
        // some of its writes done, waits for them.
        const hold = await holdRows(env.DATABASE_URL!, world.known.map((s) => `+${s}`), sent.map((s) => s.externalId))
        try {
          await waitUntil("a batch of the edge waits for the held rows", async () => {
            await progress()
            const waiting = await db.all("SELECT pid FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))", [hold.pid])
            return waiting.length > 0
          })
          await edge.kill()
        } finally {
          await hold.release()
        }
      } else {
        // SQLite shows nothing of a transaction before it commits: a claim seen held has its batch
        // still to commit, and the edge is killed at once. A kill that came just after the batch
        // committed (no claim held once it is dead) is made again on another edge, with what is left.
        let current = { host: edge, draining }
        for (let attempt = 1;; attempt++) {
          await waitUntil("the edge holds a claim", async () => (await progress()).held.length > 0, 60_000)
          await current.host.kill()
          expect(await current.draining).toBe("killed")
          if (backlogState(await payloadRows(db), before).held.length > 0) break
          if (attempt === 3) throw new Error("three kills in a row came between two claims")
          const host = await start({ OMNI_TEST_CLOCK: "manual", OMNI_WORKERS: "0" })
          current = { host, draining: http(host.url, "POST", "/_test/drain").then(() => "finished", () => "killed") }
        }
      }
      expect(await draining).toBe("killed")
      // Not vacuous: the kill left payloads to do, a claim among them (checked last, after what was stored).
      const atKill = backlogState(await payloadRows(db), before)
      expect(atKill.processed).toBeGreaterThanOrEqual(killAfter)
      expect(atKill.pending).toBeGreaterThan(0)

      // The next host processes what is waiting at once, and the killed claim once its lease
      // (2 minutes) has passed on its clock.
      const next = await start({ OMNI_TEST_CLOCK: "manual", OMNI_WORKERS: "1" })
      await advance(next, 121)
      await expectBacklogDone(db, next, world, backlog)
      // Tried twice: the killed claim's payloads, and no other.
      expect(atKill.held.length).toBeGreaterThan(0)
      const rows = (await payloadRows(db)).filter((row) => !before.has(row.id))
      expect(rows.filter((row) => row.attempts !== 1).map((row) => `${row.id} ${row.attempts}`).sort())
        .toEqual(atKill.held.map((id) => `${id} 2`).sort())
    } finally {
      await db.close()
    }
  }, 120_000)

  it.runIf(backend.name === "PostgreSQL")(
    "two processes on one backlog, its redeliveries and statuses spread across their claims: each item handled once",
    async () => {
      const settings = { OMNI_TEST_CLOCK: "manual", OMNI_WORKERS: "0", OMNI_METRICS: "1" }
      const [a, b] = await Promise.all([start(settings), start(settings), stopRunning()])
      const db = await openDatabaseReader(env.DATABASE_URL!)
      try {
        const world = { tag: "PAIR", pool: "4477011", known: waIds("4477011", 0, 20) }
        const sent = await sendReplies(a, db, world.tag, world.known, 2)
        const senders = [...world.known, ...waIds(world.pool, 20, 40)]
        // A claim (50 payloads) between a message's statuses and between most copies: in claims the two
        // processes hold at the same time.
        const backlog = backlogOf({
          tag: world.tag,
          senders,
          messages: 1_200,
          sent,
          statusSpacing: 50,
          redeliveries: 250,
          distances: [0, 49, 50, 51, 100]
        })
        expect(backlog.redelivered).toBeGreaterThan(0)
        expect(await postAll([a, b], backlog.bodies)).toEqual(backlog.bodies.map(() => 200))
        const before = await Promise.all([finishedBy(a), finishedBy(b)])
        // Both processes work through the backlog at once, one worker each. Each test clock stands where
        // its host started and the payloads are due from the time of the host that took them: both
        // clocks are moved past either's first.
        await Promise.all([advance(a, 60), advance(b, 60)])
        const after = await Promise.all([finishedBy(a), finishedBy(b)])
        const [byA, byB] = after.map((counts, i) => counts.processed - before[i]!.processed)
        expect(byA).toBeGreaterThan(0)
        expect(byB).toBeGreaterThan(0)
        expect(byA! + byB!).toBe(backlog.bodies.length)
        expect(after.map((counts, i) => counts.retry - before[i]!.retry + counts.failed - before[i]!.failed)).toEqual([0, 0])
        await expectBacklogDone(db, b, world, backlog)
      } finally {
        await db.close()
      }
    },
    120_000
  )
})
