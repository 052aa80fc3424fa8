import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { VALID_INPUTS } from "../support/ConnectCustomer.ts"
import { admin, type HostProcess, http, startHost } from "../support/Host.ts"

// A customer's browser without the browser: fetch the form, keep its cookie, post it back.
const openForm = async (connectUrl: string, channelType: string) => {
  const form = await fetch(`${connectUrl}?type=${channelType}`)
  const html = await form.text()
  const cookie = (form.headers.get("set-cookie") ?? "").split(";")[0]!
  const csrf = /name="csrf" value="([^"]+)"/.exec(html)?.[1] ?? ""
  return (inputs: Readonly<Record<string, string>>) =>
    fetch(connectUrl, {
      method: "POST",
      redirect: "manual",
      headers: { "content-type": "application/x-www-form-urlencoded", cookie },
      body: new URLSearchParams({ csrf, channel_type: channelType, ...inputs }).toString()
    })
}

const connect = async (connectUrl: string, channelType: string, inputs: Readonly<Record<string, string>>) =>
  (await openForm(connectUrl, channelType))(inputs)

describe("connect links on the reference host", () => {
  let dir: string
  let env: Record<string, string>
  let host: HostProcess

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "omni-connect-"))
    env = { OMNI_DATA_DIR: dir, DATABASE_URL: `file:${join(dir, "omni.sqlite")}`, OMNI_TEST_CLOCK: "manual" }
    host = await startHost(env)
  })
  afterAll(async () => {
    await host.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  it("gates sms until the operator enables it for the tenant", async () => {
    const boot = await admin(env, "bootstrap")
    const body = { allowed_channel_types: ["sms"] }
    const refused = await http(host.url, "POST", "/api/v1/channel-connect-tokens", { token: boot.api_key, body })
    expect(refused.status).toBe(403)
    expect(refused.body.detail).toMatchObject({ code: "feature_disabled", feature: "sms" })
    expect(await admin(env, "tenant", "set-sms", "--tenant", boot.tenant_id, "--enabled", "true")).toEqual({
      tenant_id: boot.tenant_id,
      sms_enabled: true
    })
    expect((await http(host.url, "POST", "/api/v1/channel-connect-tokens", { token: boot.api_key, body })).status)
      .toBe(201)
  })

  it("connects through the link, counts the use, and exhausts a one-use link", async () => {
    const boot = await admin(env, "bootstrap")
    const auth = { token: boot.api_key }
    const link = (await http(host.url, "POST", "/api/v1/channel-connect-tokens", {
      ...auth,
      body: { allowed_channel_types: ["botchat"], max_uses: 1 }
    })).body
    expect(link.connect_url.startsWith(`${host.url}/connect/occ_`)).toBe(true)

    const submit = await openForm(link.connect_url, "botchat")
    const done = await submit(VALID_INPUTS.botchat)
    expect(done.status).toBe(200)
    expect(await done.text()).toContain("is now connected")

    const token = await http(host.url, "GET", `/api/v1/channel-connect-tokens/${link.id}`, auth)
    expect(token.body).toMatchObject({ uses_count: 1, status: "exhausted" })
    expect((await fetch(link.connect_url)).status).toBe(410)
    // The same form sent again finds the link used up.
    expect((await submit(VALID_INPUTS.botchat)).status).toBe(410)
    expect((await http(host.url, "GET", "/api/v1/channels", auth)).body.pagination.total).toBe(1)
  })

  it("expires a link when the test clock passes expires_in_hours", async () => {
    const boot = await admin(env, "bootstrap")
    const link = (await http(host.url, "POST", "/api/v1/channel-connect-tokens", {
      token: boot.api_key,
      body: { allowed_channel_types: ["botchat"], expires_in_hours: 1 }
    })).body
    expect((await fetch(link.connect_url)).status).toBe(200)
    await http(host.url, "POST", "/_test/clock/advance", { body: { seconds: 3600 } })
    expect((await fetch(link.connect_url)).status).toBe(410)
    expect((await http(host.url, "GET", `/api/v1/channel-connect-tokens/${link.id}`, { token: boot.api_key })).body.status)
      .toBe("expired")
  })

  it("disconnects a channel and announces it with channel.updated", async () => {
    const boot = await admin(env, "bootstrap")
    const auth = { token: boot.api_key }
    const link = (await http(host.url, "POST", "/api/v1/channel-connect-tokens", {
      ...auth,
      body: { allowed_channel_types: ["chatapp"] }
    })).body
    expect((await connect(link.connect_url, "chatapp", VALID_INPUTS.chatapp)).status).toBe(200)
    const channel = (await http(host.url, "GET", "/api/v1/channels", auth)).body.items[0]
    const disconnected = await http(host.url, "POST", `/api/v1/channels/${channel.id}/disconnect`, auth)
    expect(disconnected.body).toMatchObject({ id: channel.id, status: "disconnected" })
    const events = await http(host.url, "GET", "/api/v1/events", auth)
    expect(events.body.items.map((e: { type: string }) => e.type)).toEqual(["channel.created", "channel.updated"])
    expect(events.body.items[1].data.channel).toMatchObject({ id: channel.id, status: "disconnected" })
  })
})
