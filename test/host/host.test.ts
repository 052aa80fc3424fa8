import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from "node:fs"
import { createServer, request } from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createPostgresDatabase, PG_URL } from "../support/Databases.ts"
import { hostBackends } from "../support/HostBackends.ts"
import { runAdmin } from "../../examples/server/AdminCli.ts"
import { admin, adminFailing, type HostProcess, http, startHost } from "../support/Host.ts"
import { waitUntil } from "../support/Poll.ts"


describe.each(hostBackends)("the reference host on $name", (backend) => {
  let env: Record<string, string>
  let tearDown: () => Promise<void>
  let host: HostProcess

  beforeAll(async () => {
    const backendEnv = await backend.setUp()
    env = { ...backendEnv.env, OMNI_TEST_CLOCK: "manual" }
    tearDown = backendEnv.tearDown
    host = await startHost(env)
  })
  afterAll(async () => {
    if (host.child.exitCode === null) await host.stop()
    await tearDown()
  })

  it("walks the README tour: bootstrap, a sub-account, contacts in it through X-Tenant-ID", async () => {
    const boot = await admin(env, "bootstrap", "--email", "owner@example.com", "--tenant-name", "Acme")
    expect(Object.keys(boot).sort()).toEqual(["api_key", "billing_account_id", "tenant_id", "user_id", "user_token"])

    const created = await http(host.url, "POST", "/api/v1/tenants", {
      token: boot.user_token,
      body: { name: "Acme Brazil" }
    })
    expect(created.status).toBe(201)
    expect(created.body).toMatchObject({
      name: "Acme Brazil",
      slug: "acme-brazil",
      billing_account_id: boot.billing_account_id,
      pricing_model_id: null,
      is_active: true
    })
    const sub = created.body.id as string

    const inSub = { token: boot.api_key, headers: { "X-Tenant-ID": sub } }
    const contact = await http(host.url, "POST", "/api/v1/contacts", {
      ...inSub,
      body: { name: "Ana", phone: "+55 11 91234-5678", language: "pt_BR" }
    })
    expect(contact.status).toBe(201)
    expect(contact.body).toMatchObject({ tenant_id: sub, phone: "+5511912345678" })

    const listed = await http(host.url, "GET", "/api/v1/contacts", inSub)
    expect(listed.body.items.map((c: { id: string }) => c.id)).toEqual([contact.body.id])
    const parentList = await http(host.url, "GET", "/api/v1/contacts", { token: boot.api_key })
    expect(parentList.body.pagination.total).toBe(0)
  })

  it("prints one JSON object per CLI command and fails with a message on stderr", async () => {
    const user = await admin(env, "user", "create", "--email", "second@example.com")
    const account = await admin(env, "billing-account", "create", "--user", user.user_id)
    expect(account.billing_account_id).toMatch(/^[0-9a-f-]{36}$/)
    const failed = await adminFailing(env, "api-key", "create", "--tenant", "missing", "--scopes", "contacts:read")
    expect(failed.code).not.toBe(0)
    expect(failed.stdout).toBe("")
    expect(failed.stderr).toContain("Tenant missing not found")
  })

  it("prints the CLI's usage on stdout when asked, and names a flag a command does not take", async () => {
    const help = await adminFailing(env, "--help")
    expect(help).toMatchObject({ code: 0, stderr: "" })
    expect(help.stdout).toMatch(/^usage: npm run --silent admin -- <command>/)
    expect(help.stdout).toContain("api-key create --tenant ID --scopes a,b,c")
    const mistyped = await adminFailing(env, "api-key", "create", "--tennant", "t", "--scopes", "contacts:read")
    expect(mistyped.code).toBe(2)
    expect(mistyped.stdout).toBe("")
    expect(mistyped.stderr).toMatch(/^admin: unknown flag --tennant for api-key create \(it takes --tenant, --scopes, /)
    expect(mistyped.stderr).not.toContain("is required")
    const two = await adminFailing(env, "credits", "show", "--tenant", "t", "--amount", "5", "--verbose")
    expect(two.stderr).toContain("unknown flags --amount, --verbose for credits show (it takes --tenant)")
    // The same code in this process (quicker than a process each): channel create's flags past --tenant
    // and --type are the provider's, and a mistyped --tenant is named there too.
    const inProcess = (...args: Array<string>) => runAdmin(args, { ...process.env, ...env })
    const channel = await inProcess("channel", "create", "--tennant", "t", "--type", "chatapp", "--phone-number-id", "1")
    expect(channel.code).toBe(2)
    expect(channel.stderr).toMatch(/^admin: unknown flag --tennant for channel create \(it takes --tenant, --type, --phone-number-id, /)
    expect((await inProcess("tenant", "list", "--all")).stderr).toMatch(/^admin: unknown flag --all for tenant list \(it takes no flags\)/)
    const unknown = await inProcess("tenant", "lst")
    expect(unknown).toMatchObject({ code: 2, stdout: "" })
    expect(unknown.stderr).toMatch(/^admin: unknown command: tenant lst\nusage: /)
  })

  it("lists tenants, channels and API keys for the operator, never a raw key, a hash or a channel secret", async () => {
    const boot = await admin(env, "bootstrap", "--email", "lister@example.com", "--tenant-name", "Listed")
    const other = await admin(env, "bootstrap", "--email", "other-lister@example.com")
    const reader = await admin(env, "api-key", "create", "--tenant", boot.tenant_id, "--scopes", "contacts:read",
      "--name", "reader", "--expires-in-seconds", "3600")
    const revoked = await admin(env, "api-key", "create", "--tenant", boot.tenant_id, "--scopes", "contacts:read,contacts:create")
    await admin(env, "api-key", "revoke", "--id", revoked.id)
    const token = "EAAG-listing-access-token-0001"
    const channel = await admin(env, "channel", "create", "--tenant", boot.tenant_id, "--type", "chatapp",
      "--phone-number-id", "5550001001", "--business-account-id", "7770001001", "--access-token", token)

    const tenants = await admin(env, "tenant", "list")
    const ids = tenants.items.map((t: { id: string }) => t.id)
    expect(ids.indexOf(boot.tenant_id)).toBeGreaterThanOrEqual(0)
    expect(ids.indexOf(other.tenant_id)).toBeGreaterThan(ids.indexOf(boot.tenant_id))
    expect(tenants.items.find((t: { id: string }) => t.id === boot.tenant_id)).toMatchObject({
      name: "Listed",
      billing_account_id: boot.billing_account_id,
      is_active: true
    })

    const keys = await runAdmin(["api-key", "list", "--tenant", boot.tenant_id], { ...process.env, ...env })
    expect(keys.code).toBe(0)
    for (const raw of [boot.api_key, reader.api_key, revoked.api_key, boot.user_token]) expect(keys.stdout).not.toContain(raw)
    const listed = JSON.parse(keys.stdout).items as Array<Record<string, unknown>>
    expect(listed.map((k) => k.id)).toEqual([expect.any(String), reader.id, revoked.id])
    expect(listed.map((k) => k.status)).toEqual(["active", "active", "revoked"])
    expect(listed[1]).toEqual({
      id: reader.id,
      tenant_id: boot.tenant_id,
      name: "reader",
      prefix: expect.any(String),
      scopes: ["contacts:read"],
      is_parent: false,
      user_id: null,
      status: "active",
      expires_at: reader.expires_at,
      revoked_at: null,
      created_at: expect.any(String)
    })
    expect(reader.api_key.startsWith(listed[1]!.prefix as string)).toBe(true)
    expect(listed[0]).toMatchObject({ name: "bootstrap", is_parent: true })
    expect((await admin(env, "api-key", "list", "--tenant", other.tenant_id)).items).toHaveLength(1)

    const channels = await runAdmin(["channel", "list", "--tenant", boot.tenant_id], { ...process.env, ...env })
    expect(channels.stdout).not.toContain(token)
    expect(JSON.parse(channels.stdout).items).toEqual([{ ...channel, created_at: expect.any(String), disconnected_at: null }])
    expect((await admin(env, "channel", "list", "--tenant", other.tenant_id)).items).toEqual([])
    const everywhere = await admin(env, "channel", "list")
    expect(everywhere.items.map((c: { channel_id: string }) => c.channel_id)).toContain(channel.channel_id)

    for (const command of [["api-key", "list"], ["channel", "list"]]) {
      const missing = await runAdmin([...command, "--tenant", "00000000-0000-4000-8000-000000000000"], { ...process.env, ...env })
      expect(missing).toMatchObject({ code: 1, stdout: "" })
      expect(missing.stderr).toContain("Tenant 00000000-0000-4000-8000-000000000000 not found")
    }
  })

  it("refuses revoked keys, and expired ones once the test clock passes their expiry", async () => {
    const boot = await admin(env, "bootstrap")
    const key = await admin(env, "api-key", "create", "--tenant", boot.tenant_id, "--scopes", "contacts:read",
      "--expires-in-seconds", "120")
    expect(key.scopes).toEqual(["contacts:read"])
    expect((await http(host.url, "GET", "/api/v1/contacts", { token: key.api_key })).status).toBe(200)

    // The CLI stamps with the wall clock while the host's test clock stood still since start-up:
    // move the host just past the key's expiry.
    const hostNow = Date.parse((await http(host.url, "GET", "/_test/clock")).body.now)
    const toExpiry = (Date.parse(key.expires_at) - hostNow) / 1000
    await http(host.url, "POST", "/_test/clock/advance", { body: { seconds: toExpiry - 1 } })
    expect((await http(host.url, "GET", "/api/v1/contacts", { token: key.api_key })).status).toBe(200)
    const clock = await http(host.url, "POST", "/_test/clock/advance", { body: { seconds: 1 } })
    expect(clock.status).toBe(200)
    expect(clock.body.now).toBe(key.expires_at)
    expect((await http(host.url, "GET", "/api/v1/contacts", { token: key.api_key })).status).toBe(401)

    const doomed = await admin(env, "api-key", "create", "--tenant", boot.tenant_id, "--scopes", "contacts:read")
    expect((await http(host.url, "GET", "/api/v1/contacts", { token: doomed.api_key })).status).toBe(200)
    expect(await admin(env, "api-key", "revoke", "--id", doomed.id)).toEqual({ id: doomed.id, revoked: true })
    const refused = await http(host.url, "GET", "/api/v1/contacts", { token: doomed.api_key })
    expect(refused.status).toBe(401)
    expect(refused.body).toEqual({ detail: { code: "unauthenticated", message: "Invalid or missing API key" } })
    // Other keys of the tenant are unaffected.
    expect((await http(host.url, "GET", "/api/v1/contacts", { token: boot.api_key })).status).toBe(200)
  })

  it("serves the test clock routes", async () => {
    const before = await http(host.url, "GET", "/_test/clock")
    const drained = await http(host.url, "POST", "/_test/drain")
    expect(drained.status).toBe(200)
    expect(drained.body.now).toBe(before.body.now)
    const bad = await http(host.url, "POST", "/_test/clock/advance", { body: { seconds: -5 } })
    expect(bad.status).toBe(422)
  })

  it("serves the OpenAPI document", async () => {
    const doc = await http(host.url, "GET", "/api/v1/openapi.json")
    expect(doc.body.openapi).toBe("3.1.0")
    expect(Object.keys(doc.body.paths)).toContain("/api/v1/contacts")
  })

  it("finishes an in-flight request on SIGTERM, then exits 0", async () => {
    const boot = await admin(env, "bootstrap")
    const url = new URL("/api/v1/contacts", host.url)
    const body = JSON.stringify({ name: "Late arrival" })
    const req = request(url, {
      method: "POST",
      headers: {
        authorization: `Bearer ${boot.api_key}`,
        "content-type": "application/json",
        "content-length": body.length,
        expect: "100-continue"
      }
    })
    const response = new Promise<{ status: number; text: string }>((resolve, reject) => {
      req.on("response", (res) => {
        let text = ""
        res.on("data", (c: Buffer) => (text += c.toString()))
        res.on("end", () => resolve({ status: res.statusCode ?? 0, text }))
      })
      req.on("error", reject)
    })
    // Node's server answers 100 Continue as it hands the request to the host: it is in flight from then.
    const inFlight = new Promise<void>((resolve) => req.once("continue", () => resolve()))
    req.flushHeaders()
    await inFlight
    // Half the body now; the rest once the host says it is stopping.
    req.write(body.slice(0, 5))
    const exited = host.stop()
    await waitUntil("the host is stopping", () => host.output().includes("SIGTERM received"))
    req.end(body.slice(5))
    const answer = await response
    expect(answer.status).toBe(201)
    expect(JSON.parse(answer.text)).toMatchObject({ name: "Late arrival", tenant_id: boot.tenant_id })
    expect(await exited).toBe(0)
    expect(host.output()).toContain("stopped cleanly")

    // The data survived the shutdown: a new process sees the contact.
    host = await startHost(env)
    const listed = await http(host.url, "GET", "/api/v1/contacts", { token: boot.api_key })
    expect(listed.body.items.map((c: { name: string }) => c.name)).toEqual(["Late arrival"])
  })
})

/** A port nothing listens on just now. */
const freePort = async (): Promise<number> => {
  const probe = createServer()
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve))
  const { port } = probe.address() as AddressInfo
  await new Promise<void>((resolve) => probe.close(() => resolve()))
  return port
}

describe("the reference host's defaults", () => {
  it("keeps SQLite data in OMNI_DATA_DIR when DATABASE_URL is unset, owner-only", async () => {
    const dir = mkdtempSync(join(tmpdir(), "omni-defaults-"))
    const data = join(dir, "data")
    // A port of its own (not 0), so that the CLI, given the host's environment, knows it too.
    const port = await freePort()
    const env = { OMNI_DATA_DIR: data, DATABASE_URL: "", PORT: String(port) }
    const host = await startHost(env)
    try {
      expect(existsSync(join(data, "omnichannel.sqlite"))).toBe(true)
      expect(host.url).toBe(`http://127.0.0.1:${port}`)
      // What the host creates is no other local user's to read: folders 0700, the database 0600 (as secrets/).
      const mode = (path: string) => (statSync(path).mode & 0o777).toString(8)
      for (const folder of ["", "secrets", "files", "mail"]) expect(mode(join(data, folder)), folder).toBe("700")
      expect(mode(join(data, "omnichannel.sqlite"))).toBe("600")
      for (const file of readdirSync(data).filter((name) => name.startsWith("omnichannel.sqlite-"))) {
        expect(mode(join(data, file)), file).toBe("600")
      }

      // The CLI hands out the URLs the host serves: built from PORT and HOST as the host builds them,
      // else from OMNI_PUBLIC_URL.
      const boot = await admin(env, "bootstrap")
      const integration = await admin(env, "email-integration", "create", "--tenant", boot.tenant_id, "--address", "in@desk.example")
      expect(integration.inbound_url).toBe(`${host.url}/webhooks/email/${integration.email_integration_id}`)
      const served = await http(host.url, "GET", `/api/v1/email-integrations/${integration.email_integration_id}`, { token: boot.api_key })
      expect(served.body.inbound_url).toBe(integration.inbound_url)
      const posted = await fetch(integration.inbound_url, {
        method: "POST",
        headers: { authorization: `Bearer ${integration.inbound_secret}`, "content-type": "message/rfc822" },
        body: "From: a@b.example\r\nTo: in@desk.example\r\nSubject: hi\r\nMessage-ID: <1@b.example>\r\n\r\nhello\r\n"
      })
      expect(posted.status).toBeLessThan(300)
      const elsewhere = await admin({ ...env, OMNI_PUBLIC_URL: "https://desk.example/omni/" }, "email-integration", "create",
        "--tenant", boot.tenant_id, "--address", "other@desk.example")
      expect(elsewhere.inbound_url).toBe(`https://desk.example/omni/webhooks/email/${elsewhere.email_integration_id}`)
    } finally {
      await host.stop()
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it("refuses to start with a bad setting, naming it", async () => {
    await expect(startHost({ OMNI_WORKERS: "many" })).rejects.toThrow(/OMNI_WORKERS must be a whole number/)
  })

  it("exits 1 with a message when its port is taken, having closed its database", async () => {
    const dir = mkdtempSync(join(tmpdir(), "omni-port-taken-"))
    const taken = createServer()
    await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve))
    try {
      const port = String((taken.address() as AddressInfo).port)
      await expect(startHost({ OMNI_DATA_DIR: dir, DATABASE_URL: "", PORT: port }))
        .rejects.toThrow(/host exited with 1 before listening:\s*could not start: .*EADDRINUSE/)
      // The last connection to close removes the write-ahead log.
      expect(existsSync(join(dir, "omnichannel.sqlite-wal"))).toBe(false)
    } finally {
      taken.close()
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe.skipIf(PG_URL === undefined)("several hosts on one PostgreSQL (needs PG_URL)", () => {
  it("start together without corrupting the schema, and share the data", async () => {
    const database = await createPostgresDatabase(PG_URL!)
    const env = { DATABASE_URL: database.url, OMNI_DATA_DIR: mkdtempSync(join(tmpdir(), "omni-pg-")) }
    const hosts = await Promise.all([startHost(env), startHost(env), startHost({ ...env, OMNI_WORKERS: "0" })])
    try {
      const boot = await admin(env, "bootstrap")
      const created = await http(hosts[0]!.url, "POST", "/api/v1/contacts", { token: boot.api_key, body: { name: "Shared" } })
      const seen = await http(hosts[2]!.url, "GET", `/api/v1/contacts/${created.body.id}`, { token: boot.api_key })
      expect(seen.body.name).toBe("Shared")
    } finally {
      expect(await Promise.all(hosts.map((h) => h.stop()))).toEqual([0, 0, 0])
      await database.drop()
    }
  })
})
