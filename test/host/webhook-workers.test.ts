import { existsSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type LocalServer, makeCertificate, startServer } from "../outbound/LocalServers.ts"
import { createPostgresDatabase, PG_URL } from "../support/Databases.ts"
import { admin, type HostProcess, http, startHost } from "../support/Host.ts"
import { eventually } from "../support/Poll.ts"
import { seededRandom } from "../support/Random.ts"

// Several real host processes on one PostgreSQL database, on the real clock, sharing the webhook
// work (OMNI_WORKERS=2 each) toward one HTTPS receiver. Delivery is at-least-once: a host killed
// with deliveries in flight leaves claims that the others take over once the lease (10 s) runs out.

const random = seededRandom()

const LEASE_SECONDS = 10
const BURST = 600
const API_CONCURRENCY = 16

/** Runs `task` over `items` with at most `limit` running at once. */
const pool = async <A, B>(items: ReadonlyArray<A>, limit: number, task: (item: A, index: number) => Promise<B>) => {
  const results: Array<B> = new Array(items.length)
  let next = 0
  await Promise.all(Array.from({ length: limit }, async () => {
    while (next < items.length) {
      const index = next++
      results[index] = await task(items[index]!, index)
    }
  }))
  return results
}

/**
 * The local ports of process `pid`'s TCP connections to 127.0.0.1:`remotePort` (Linux /proc): which
 * host a request at the receiver came from, told by its remote port. Empty where /proc is not there.
 */
const clientPortsOf = (pid: number, remotePort: number): Set<number> => {
  const inodes = new Set<string>()
  const ports = new Set<number>()
  try {
    for (const fd of readdirSync(`/proc/${pid}/fd`)) {
      const socket = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`, { encoding: "utf8" }))
      if (socket !== null) inodes.add(socket[1]!)
    }
    // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode …, addresses as HEX:PORT
    for (const line of readFileSync("/proc/net/tcp", "utf8").split("\n").slice(1)) {
      const columns = line.trim().split(/\s+/)
      if (columns.length < 10 || !inodes.has(columns[9]!)) continue
      if (columns[2]!.toUpperCase() !== `0100007F:${remotePort.toString(16).toUpperCase().padStart(4, "0")}`) continue
      ports.add(Number.parseInt(columns[1]!.split(":")[1]!, 16))
    }
  } catch {
    // A descriptor closed while we looked: what was found so far.
  }
  return ports
}
const CAN_TELL_HOSTS_APART = existsSync("/proc/net/tcp")

/** A request the receiver has not answered yet. */
interface Pending {
  readonly path: string
  readonly eventId: string
  /** The sender's local port. */
  readonly port: number
  /** Never answer it: its sender is about to die. */
  held: boolean
}

describe.skipIf(PG_URL === undefined)("webhook deliveries shared by several hosts on one PostgreSQL (needs PG_URL)", () => {
  let dir: string
  let env: Record<string, string>
  let drop: () => Promise<void>
  let receiver: LocalServer
  let boot: { user_token: string; api_key: string }
  const hosts: Array<HostProcess> = []
  /** Per request path: event ids whose 204 the receiver finished sending, in order (repeats kept). */
  const acknowledged = new Map<string, Array<string>>()
  /** Requests received and not answered yet. */
  const pending = new Set<Pending>()

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "omni-webhook-workers-"))
    const certificate = makeCertificate()
    writeFileSync(join(dir, "receiver-ca.pem"), certificate.cert)
    receiver = await startServer((req, res, body) => {
      const path = req.url ?? ""
      const request: Pending = {
        path,
        eventId: (JSON.parse(body) as { data: { contact: { id: string } } }).data.contact.id,
        port: req.socket.remotePort ?? 0,
        held: false
      }
      pending.add(request)
      res.on("close", () => {
        pending.delete(request)
        if (!res.writableFinished) return
        if (acknowledged.has(path)) acknowledged.get(path)!.push(request.eventId)
        else acknowledged.set(path, [request.eventId])
      })
      // A receiver with some latency, so that a batch is still in flight when a host dies.
      setTimeout(() => {
        if (!request.held && !res.destroyed) res.writeHead(204).end()
      }, random.int(20, 150))
    }, certificate)
    const database = await createPostgresDatabase(PG_URL!)
    drop = database.drop
    env = {
      DATABASE_URL: database.url,
      OMNI_DATA_DIR: dir,
      OMNI_OUTBOUND_ALLOW: "127.0.0.1/32",
      NODE_EXTRA_CA_CERTS: join(dir, "receiver-ca.pem"),
      OMNI_WORKERS: "2",
      OMNI_LEASE_SECONDS: String(LEASE_SECONDS)
    }
    boot = await admin(env, "bootstrap")
  })

  afterAll(async () => {
    await Promise.all(hosts.map((h) => (h.child.exitCode === null && h.child.signalCode === null ? h.stop() : undefined)))
    await receiver?.close()
    await drop?.()
    rmSync(dir, { recursive: true, force: true })
  })

  const start = async (count: number) => {
    const started = await Promise.all(Array.from({ length: count }, () => startHost(env)))
    hosts.push(...started)
    return started
  }

  /** A sub-account with one endpoint at `path`, reached through `via`. */
  const setUp = async (via: HostProcess, path: string) => {
    const tenant = await http(via.url, "POST", "/api/v1/tenants", { token: boot.user_token, body: { name: `Burst ${path}` } })
    expect(tenant.status).toBe(201)
    const as = (host: HostProcess, method: string, p: string, body?: unknown) =>
      http(host.url, method, `/api/v1${p}`, { token: boot.api_key, headers: { "X-Tenant-ID": tenant.body.id }, body })
    const endpoint = await as(via, "POST", "/webhook-endpoints", {
      name: `Burst ${path}`,
      url: `${receiver.origin}${path}`,
      subscribed_events: ["contact.created"],
      timeout_seconds: 5
    })
    expect(endpoint.status).toBe(201)
    return { as, id: endpoint.body.webhook_id as string }
  }

  type Api = Awaited<ReturnType<typeof setUp>>["as"]

  /** Creates `count` contacts through the `via` hosts in turn, `API_CONCURRENCY` at a time; returns their ids. */
  const burst = (via: ReadonlyArray<HostProcess>, as: Api, count: number) =>
    pool(Array.from({ length: count }, (_, i) => i), API_CONCURRENCY, async (i) => {
      const created = await as(via[i % via.length]!, "POST", "/contacts", { name: `Contact ${i}` })
      expect(created.status).toBe(201)
      return created.body.id as string
    })

  /**
   * How many of the endpoint's deliveries have each status (from the list's totals). The counts are
   * read one after the other while rows move on: use them to report, `allSucceeded` to decide.
   */
  const statusCounts = async (via: HostProcess, as: Api, id: string): Promise<Record<string, number>> => {
    const counts: Record<string, number> = {}
    for (const status of ["pending", "retrying", "success", "failed", "dead_letter", "queued"]) {
      const page = await as(via, "GET", `/webhook-endpoints/${id}/deliveries?page_size=1&status=${status}`)
      expect(page.status).toBe(200)
      if (page.body.total > 0) counts[status] = page.body.total
    }
    return counts
  }

  /**
   * Whether the endpoint has exactly `count` deliveries, all `success`. Successes are counted
   * first: they only grow and rows are never deleted, so the two reads cannot pass out of step.
   */
  const allSucceeded = async (via: HostProcess, as: Api, id: string, count: number) => {
    const total = async (filter: string) =>
      (await as(via, "GET", `/webhook-endpoints/${id}/deliveries?page_size=1${filter}`)).body.total as number
    return (await total("&status=success")) === count && (await total("")) === count
  }

  const summary = (expected: ReadonlyArray<string>, path: string) => {
    const seen = acknowledged.get(path) ?? []
    const times = new Map<string, number>()
    for (const id of seen) times.set(id, (times.get(id) ?? 0) + 1)
    return {
      missing: expected.filter((id) => !times.has(id)),
      unexpected: [...times.keys()].filter((id) => !expected.includes(id)),
      duplicated: [...times.values()].filter((n) => n > 1).length,
      extraRequests: seen.length - times.size
    }
  }

  it(`delivers every one of ${BURST} events at least once when a host is SIGKILLed with deliveries in flight`, async () => {
    const [a, b, victim] = await start(3)
    const path = "/killed"
    const { as, id } = await setUp(a!, path)
    const began = Date.now()

    // The burst goes through the two hosts that survive; all three dispatch.
    const creating = burst([a!, b!], as, BURST)
    // Kill it once a good part of the burst went through and the receiver holds requests *it* sent.
    // Those are never answered: the dead host cannot have recorded them, so the others must
    // deliver them again once its lease runs out.
    let cut: Array<Pending> = []
    const victimBusy = () => {
      if ((acknowledged.get(path)?.length ?? 0) < BURST / 5) return false
      if (!CAN_TELL_HOSTS_APART) return [...pending].filter((r) => r.path === path).length >= 10
      const ports = clientPortsOf(victim!.child.pid!, receiver.port)
      cut = [...pending].filter((r) => r.path === path && ports.has(r.port))
      return cut.length > 0
    }
    const busy = await eventually(30_000, victimBusy, 10)
    expect(busy, "the host to kill never had a delivery in flight").toBe(true)
    for (const request of cut) request.held = true
    const inFlightAtKill = [...pending].filter((r) => r.path === path).length
    const exit = await victim!.kill()
    const killedAt = Date.now() - began
    expect(exit).toBeNull()
    expect(victim!.child.signalCode).toBe("SIGKILL")
    const contacts = await creating

    // The survivors finish the burst and, once the lease is over, what the dead host had claimed.
    const complete = await eventually(60_000, () => summary(contacts, path).missing.length === 0)
    const deliveredAt = Date.now() - began
    const result = summary(contacts, path)
    const settled = await eventually(30_000, () => allSucceeded(a!, as, id, BURST))
    const counts = await statusCounts(a!, as, id)
    console.log(
      `${BURST} events, host killed at ${killedAt} ms with ${inFlightAtKill} requests in flight, ` +
        `${cut.length} of them its own (never answered); all received by ${deliveredAt} ms; ` +
        `events received more than once: ${result.duplicated} (${result.extraRequests} extra requests); ` +
        `delivery rows: ${JSON.stringify(counts)}`
    )
    expect(complete, `missing after 60 s: ${result.missing.length}`).toBe(true)
    expect(result.missing).toEqual([])
    expect(result.unexpected).toEqual([])
    // The deliveries the dead host had in flight were taken over and acknowledged.
    if (CAN_TELL_HOSTS_APART) expect(cut.length).toBeGreaterThan(0)
    const acked = new Set(acknowledged.get(path))
    expect(cut.filter((r) => !acked.has(r.eventId))).toEqual([])
    expect(settled, `delivery rows: ${JSON.stringify(counts)}`).toBe(true)
    expect(counts).toEqual({ success: BURST })
    const endpoint = await as(a!, "GET", `/webhook-endpoints/${id}`)
    expect(endpoint.body).toMatchObject({ status: "active", consecutive_failures: 0 })
  }, 180_000)

  it(`delivers each of ${BURST} events exactly once with two processes sharing the work`, async () => {
    // Hosts of the first test that are still running would share this work too: stop them.
    await Promise.all(hosts.splice(0).map((h) => (h.child.exitCode === null && h.child.signalCode === null ? h.stop() : undefined)))
    const [a, b] = await start(2)
    const path = "/shared"
    const { as, id } = await setUp(a!, path)
    const began = Date.now()
    const contacts = await burst([a!, b!], as, BURST)
    const complete = await eventually(60_000, () => summary(contacts, path).missing.length === 0)
    const deliveredAt = Date.now() - began
    const settled = await eventually(30_000, () => allSucceeded(a!, as, id, BURST))
    const counts = await statusCounts(a!, as, id)
    // Late duplicates would come from a claim taken twice: a host exits only once every request it
    // sent was answered and recorded, so once both are stopped the receiver has all there will be.
    const exits = await Promise.all([a!.stop(), b!.stop()])
    const result = summary(contacts, path)
    console.log(
      `${BURST} events over two hosts: all received by ${deliveredAt} ms; ` +
        `events received more than once: ${result.duplicated}; delivery rows: ${JSON.stringify(counts)}`
    )
    expect(complete).toBe(true)
    expect(result).toEqual({ missing: [], unexpected: [], duplicated: 0, extraRequests: 0 })
    expect(settled).toBe(true)
    expect(counts).toEqual({ success: BURST })
    expect(exits).toEqual([0, 0])
  }, 180_000)
})
