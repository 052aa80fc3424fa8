import { readdirSync } from "node:fs"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { admin, type HostProcess, http, startHost } from "../support/Host.ts"
import { hostBackends } from "../support/HostBackends.ts"

// The public SSRF payload forms against `POST /attachments/from-url` on a host that may reach
// nothing private (no OMNI_OUTBOUND_ALLOW): each answers 400 at once, and a server on loopback that
// every loopback form points at counts every connection made to it: none, over the whole file.
// (Redirects to private addresses need a reachable source: attachments-from-url.test.ts has them.)

const PNG = Uint8Array.from(Buffer.from(
  "89504e470d0a1a0a0000000d4948445200000001000000010806000000" +
    "1f15c4890000000d4944415478da63f8cfc0f01f0005000201e221bc330000000049454e44ae426082",
  "hex"
))
/** Well under the spec's 30 s fetch limit: a refusal, not a timeout. */
const QUICK_MS = 5_000

/** Every payload: a name, and its URL (PORT: the loopback server's port). */
const PAYLOADS: ReadonlyArray<readonly [string, string]> = [
  ["loopback", "http://127.0.0.1:PORT/"],
  ["loopback over https", "https://127.0.0.1:PORT/"],
  ["a name resolving to loopback", "http://localhost:PORT/"],
  ["a name resolving to loopback, upper case", "http://LOCALHOST:PORT/photo.png"],
  ["decimal IPv4", "http://2130706433:PORT/"],
  ["octal IPv4", "http://0177.0.0.1:PORT/"],
  ["hex IPv4", "http://0x7f000001:PORT/"],
  ["dotted hex IPv4", "http://0x7f.0x0.0x0.0x1:PORT/"],
  ["short IPv4", "http://127.1:PORT/"],
  ["zero-padded IPv4", "http://127.000.000.001:PORT/"],
  ["IPv4 with a trailing dot", "http://127.0.0.1.:PORT/"],
  ["fullwidth digits", "http://\uff11\uff12\uff17.\uff10.\uff10.\uff11:PORT/"],
  ["a name with a trailing dot", "http://localhost.:PORT/"],
  ["zero", "http://0:PORT/"],
  ["0.0.0.0", "http://0.0.0.0:PORT/"],
  ["IPv6 unspecified", "http://[::]:PORT/"],
  ["IPv6 loopback", "http://[::1]:PORT/"],
  ["IPv4-mapped IPv6, dotted", "http://[::ffff:127.0.0.1]:PORT/"],
  ["IPv4-mapped IPv6, hex", "http://[::ffff:7f00:1]:PORT/"],
  ["IPv4-compatible IPv6", "http://[::127.0.0.1]:PORT/"],
  ["NAT64 of loopback", "http://[64:ff9b::7f00:1]:PORT/"],
  ["unique-local IPv6", "http://[fd00::1]/"],
  ["link-local metadata", "http://169.254.169.254/latest/meta-data/"],
  ["link-local IPv6", "http://[fe80::1]/"],
  ["GCP metadata name", "http://metadata.google.internal/computeMetadata/v1/"],
  ["Alibaba metadata", "http://100.100.100.200/latest/meta-data/"],
  ["AWS IPv6 metadata", "http://[fd00:ec2::254]/latest/meta-data/"],
  ["private 10/8", "http://10.0.0.1/"],
  ["private 192.168/16", "http://192.168.1.1/"],
  ["private 172.16/12", "http://172.16.0.1/"],
  ["userinfo before loopback", "http://example.com@127.0.0.1:PORT/"],
  ["userinfo with password before loopback", "http://user:pass@127.0.0.1:PORT/"],
  ["fragment hiding a public host", "http://127.0.0.1:PORT#@example.com/"],
  ["file scheme", "file:///etc/passwd"],
  ["gopher scheme", "gopher://127.0.0.1:PORT/_GET%20/"],
  ["ftp scheme", "ftp://127.0.0.1/"],
  ["data scheme", "data:text/plain,hi"],
  ["javascript scheme", "javascript:alert(1)"],
  ["a name that does not resolve", "http://no-such-host.invalid/"]
]

/**
 * Forms that are not URLs at all (WHATWG URL refuses them) answer `URL not allowed` too: the host
 * refuses what it cannot parse before anything else. Every form above parses (`0177.0.0.1`,
 * `0x7f000001`, `2130706433`, `127.1` and `0` are read as IPv4 numbers by the URL parser), so none
 * is answered `Failed to fetch URL`.
 */
const unparsable: ReadonlyArray<readonly [string, string]> = [
  ["no scheme", "127.0.0.1/"],
  ["an IPv4 number out of range", "http://4294967296/"],
  ["an unclosed IPv6 literal", "http://[::1/"],
  ["an IPv6 zone id", "http://[fe80::1%25eth0]/"],
  ["spaces in the host", "http://127.0.0 .1/"]
]

const listen = (server: Server) =>
  new Promise<number>((resolve) => server.listen(0, "127.0.0.1", () => resolve((server.address() as AddressInfo).port)))

describe.each([hostBackends[0]!])("SSRF payloads against from-url ($name, nothing private allowed)", (backend) => {
  let env: Record<string, string>
  let tearDown: () => Promise<void>
  let host: HostProcess
  let tenant: { id: string; key: string }
  let loopback: Server
  let port: number
  const seen = { connections: 0, requests: 0 }

  beforeAll(async () => {
    loopback = createServer((_request, response) => {
      seen.requests += 1
      response.writeHead(200, { "content-type": "image/png" }).end(PNG)
    })
    loopback.on("connection", () => {
      seen.connections += 1
    })
    port = await listen(loopback)
    ;({ env, tearDown } = await backend.setUp())
    // Empty, whatever the environment running the tests says: nothing private may be reached.
    host = await startHost({ ...env, OMNI_OUTBOUND_ALLOW: "" })
    const boot = await admin(env, "bootstrap", "--email", "owner@example.com")
    tenant = { id: boot.tenant_id, key: boot.api_key }
  })
  afterAll(async () => {
    if (host?.child.exitCode === null) await host.stop()
    loopback?.closeAllConnections()
    await new Promise<void>((resolve) => (loopback === undefined ? resolve() : loopback.close(() => resolve())))
    await tearDown?.()
  })

  const fromUrl = async (url: string) => {
    const started = performance.now()
    const answer = await http(host.url, "POST", "/api/v1/attachments/from-url", { token: tenant.key, body: { url } })
    return { ...answer, ms: performance.now() - started }
  }
  const keptFiles = () => {
    try {
      return readdirSync(join(env.OMNI_DATA_DIR!, "files", tenant.id))
    } catch {
      return []
    }
  }

  it("the loopback server is there to be reached: a direct request gets through", async () => {
    const direct = await fetch(`http://127.0.0.1:${port}/`)
    expect(direct.status).toBe(200)
    await direct.arrayBuffer()
    // That one is the test's own; the count starts over for the host's attempts.
    seen.connections = 0
    seen.requests = 0
  })

  it.each(PAYLOADS)("refuses %s (%s) with URL not allowed, quickly, reaching no socket", async (_name, template) => {
    const url = template.replace("PORT", String(port))
    const answer = await fromUrl(url)
    expect({ url, status: answer.status, body: answer.body }).toEqual({ url, status: 400, body: { detail: "URL not allowed" } })
    expect(answer.ms).toBeLessThan(QUICK_MS)
    expect(seen).toEqual({ connections: 0, requests: 0 })
  })

  it.each(unparsable)("refuses %s (not a URL at all) with URL not allowed", async (_name, url) => {
    const answer = await fromUrl(url)
    expect({ url, status: answer.status, body: answer.body }).toEqual({ url, status: 400, body: { detail: "URL not allowed" } })
    expect(answer.ms).toBeLessThan(QUICK_MS)
  })

  it("with a filename given too, the address still decides", async () => {
    const named = await http(host.url, "POST", "/api/v1/attachments/from-url", {
      token: tenant.key,
      body: { url: `http://[::ffff:127.0.0.1]:${port}/x`, filename: "photo.png" }
    })
    expect(named).toEqual({ status: 400, body: { detail: "URL not allowed" } })
  })

  it("kept no file and reached no socket over all of them", () => {
    expect(keptFiles()).toEqual([])
    expect(seen).toEqual({ connections: 0, requests: 0 })
  })
})
