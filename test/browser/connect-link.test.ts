import { existsSync, mkdtempSync, rmSync } from "node:fs"
import { createServer, type IncomingHttpHeaders, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type Browser, chromium } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { admin, type HostProcess, http, startHost } from "../support/Host.ts"

// Debian's Chromium (apt-get install chromium); `.ci/run` installs it and sets OMNI_REQUIRE_BROWSER,
// so CI fails rather than skips when it is missing.
const CHROMIUM = process.env.OMNI_CHROMIUM ?? "/usr/bin/chromium"
const available = existsSync(CHROMIUM)
if (!available && process.env.OMNI_REQUIRE_BROWSER === "1") {
  throw new Error(`Chromium not found at ${CHROMIUM}: apt-get install chromium`)
}

// The flags that work on these machines: no sandbox as root, and no background network calls.
const CHROMIUM_ARGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync"
]

describe.skipIf(!available)("a customer connects a channel through a link in a browser (needs Chromium)", () => {
  let dir: string
  let env: Record<string, string>
  let host: HostProcess
  let browser: Browser
  let partner: Server
  let partnerUrl: string
  const partnerVisits: Array<{ readonly url: string; readonly headers: IncomingHttpHeaders }> = []

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "omni-browser-"))
    env = { OMNI_DATA_DIR: dir, DATABASE_URL: `file:${join(dir, "omni.sqlite")}` }
    host = await startHost(env)
    partner = createServer((req, res) => {
      partnerVisits.push({ url: req.url ?? "", headers: req.headers })
      res.writeHead(200, { "content-type": "text/html" }).end("<h1>Welcome back to Acme Partners</h1>")
    })
    await new Promise<void>((resolve) => partner.listen(0, "127.0.0.1", resolve))
    partnerUrl = `http://127.0.0.1:${(partner.address() as AddressInfo).port}`
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS })
  })

  afterAll(async () => {
    await browser?.close()
    partner?.close()
    await host?.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  it("opens the link, connects a chat-app number, lands on the partner's page, and the channel is in the sub-account", async () => {
    const boot = await admin(env, "bootstrap", "--email", "agency@example.com")
    const sub = (await http(host.url, "POST", "/api/v1/tenants", {
      token: boot.user_token,
      body: { name: "Client Shop" }
    })).body.id as string
    const inSub = { token: boot.api_key, headers: { "X-Tenant-ID": sub } }
    const created = await http(host.url, "POST", "/api/v1/channel-connect-tokens", {
      ...inSub,
      body: {
        allowed_channel_types: ["chatapp", "botchat"],
        partner_name: "Acme Partners",
        partner_redirect_url: `${partnerUrl}/done`
      }
    })
    expect(created.status).toBe(201)
    const link = created.body as { id: string; connect_url: string }

    const page = await browser.newPage()
    await page.goto(link.connect_url)
    expect(await page.locator("h1").innerText()).toBe("Connect a channel for Acme Partners")
    expect(await page.locator("a.choice").allInnerTexts()).toEqual(["Chat app (business platform)", "Bot chat app"])

    await page.getByText("Chat app (business platform)").click()
    await page.getByLabel("Phone number ID").fill("106540352242922")
    await page.getByLabel("Business account ID").fill("102290129340398")
    await page.getByLabel("Access token (system user)").fill("EAAGm0PX4ZCpsBA0ZBvQ2xyzexampletoken")
    await Promise.all([page.waitForURL(`${partnerUrl}/done`), page.getByRole("button", { name: "Connect" }).click()])
    expect(await page.locator("h1").innerText()).toBe("Welcome back to Acme Partners")
    await page.close()

    // The partner learns nothing of the link: no referrer carries the token.
    const landings = partnerVisits.filter((visit) => visit.url === "/done")
    expect(landings).toHaveLength(1)
    expect(landings[0]!.headers.referer).toBeUndefined()
    for (const visit of partnerVisits) expect(visit.headers.referer ?? "").not.toContain("/connect/")

    const channels = await http(host.url, "GET", "/api/v1/channels", inSub)
    expect(channels.body.items).toHaveLength(1)
    const channel = channels.body.items[0]
    expect(channel).toMatchObject({
      tenant_id: sub,
      platform: "chatapp",
      status: "active",
      external_id: "106540352242922",
      created_via_connect_token_id: link.id
    })
    expect(JSON.stringify(channel)).not.toContain("EAAGm0PX4ZCpsBA0ZBvQ2xyzexampletoken")

    const events = await http(host.url, "GET", "/api/v1/events?type=channel.created", inSub)
    expect(events.body.items).toHaveLength(1)
    expect(events.body.items[0]).toMatchObject({
      type: "channel.created",
      tenant_id: sub,
      data: { channel: { id: channel.id, platform: "chatapp", status: "active", created_via_connect_token_id: link.id } }
    })

    const token = await http(host.url, "GET", `/api/v1/channel-connect-tokens/${link.id}`, inSub)
    expect(token.body.uses_count).toBe(1)
    // The issuing parent tenant got nothing.
    expect((await http(host.url, "GET", "/api/v1/channels", { token: boot.api_key })).body.items).toEqual([])
  })

  it("shows a partner_name full of markup as the text it is, on the choice page and the form", async () => {
    const boot = await admin(env, "bootstrap")
    const partner = "<script>document.title=\"owned\"</script> & 'Co' `${1}` &amp; <b>bold</b>"
    const link = (await http(host.url, "POST", "/api/v1/channel-connect-tokens", {
      token: boot.api_key,
      body: { allowed_channel_types: ["chatapp", "botchat"], partner_name: partner }
    })).body as { connect_url: string }

    const page = await browser.newPage()
    await page.goto(link.connect_url)
    expect(await page.title()).toBe(`Connect a channel for ${partner}`)
    expect(await page.locator("h1").innerText()).toBe(`Connect a channel for ${partner}`)
    await page.getByText("Chat app (business platform)").click()
    expect(await page.locator("h1").innerText()).toBe(`Connect Chat app (business platform) for ${partner}`)
    expect(await page.locator("script, b").count()).toBe(0)
    await page.close()
  })

  it("shows a clear page for a revoked link and connects nothing", async () => {
    const boot = await admin(env, "bootstrap")
    const auth = { token: boot.api_key }
    const link = (await http(host.url, "POST", "/api/v1/channel-connect-tokens", {
      ...auth,
      body: { allowed_channel_types: ["botchat"] }
    })).body as { id: string; connect_url: string }
    expect((await http(host.url, "DELETE", `/api/v1/channel-connect-tokens/${link.id}`, auth)).body.status).toBe("revoked")

    const page = await browser.newPage()
    const response = await page.goto(link.connect_url)
    expect(response?.status()).toBe(410)
    expect(await page.locator("h1").innerText()).toBe("Link unavailable")
    expect(await page.locator("form").count()).toBe(0)
    await page.close()
    expect((await http(host.url, "GET", "/api/v1/channels", auth)).body.items).toEqual([])
  })
})
