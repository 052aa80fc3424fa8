import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { validInputs } from "../support/ConnectCustomer.ts"
import { openConnectForm as openForm } from "../support/ConnectPage.ts"
import { admin, adminFailing, type HostProcess, http, startHost } from "../support/Host.ts"
import { hostBackends } from "../support/HostBackends.ts"

const connect = async (connectUrl: string, channelType: string, inputs: Readonly<Record<string, string>>) =>
  (await openForm(connectUrl, channelType))(inputs)

describe.each(hostBackends)("connect links on the reference host ($name)", (backend) => {
  let env: Record<string, string>
  let tearDown: (() => Promise<void>) | undefined
  let host: HostProcess

  beforeAll(async () => {
    const database = await backend.setUp()
    tearDown = database.tearDown
    env = { ...database.env, OMNI_TEST_CLOCK: "manual" }
    host = await startHost(env)
  })
  afterAll(async () => {
    await host?.stop()
    await tearDown?.()
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
    const inputs = validInputs("botchat")
    const done = await submit(inputs)
    expect(done.status).toBe(200)
    expect(await done.text()).toContain("is now connected")

    const token = await http(host.url, "GET", `/api/v1/channel-connect-tokens/${link.id}`, auth)
    expect(token.body).toMatchObject({ uses_count: 1, status: "exhausted" })
    expect((await fetch(link.connect_url)).status).toBe(410)
    // The same form sent again finds the link used up.
    expect((await submit(inputs)).status).toBe(410)
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
    expect((await connect(link.connect_url, "chatapp", validInputs("chatapp"))).status).toBe(200)
    const channel = (await http(host.url, "GET", "/api/v1/channels", auth)).body.items[0]
    const disconnected = await http(host.url, "POST", `/api/v1/channels/${channel.id}/disconnect`, auth)
    expect(disconnected.body).toMatchObject({ id: channel.id, status: "disconnected" })
    const events = await http(host.url, "GET", "/api/v1/events", auth)
    expect(events.body.items.map((e: { type: string }) => e.type)).toEqual(["channel.created", "channel.updated"])
    expect(events.body.items[1].data.channel).toMatchObject({ id: channel.id, status: "disconnected" })
  })

  // An active number belongs to one channel: whoever connects it second, by the CLI or a link, is refused.
  const TAKEN = /already connected to an active chatapp channel; it can be connected again once that channel is disconnected/
  const createChannel = (tenantId: string, inputs: Readonly<Record<string, string>>) => [
    "channel", "create", "--tenant", tenantId, "--type", "chatapp",
    "--phone-number-id", inputs.phone_number_id!, "--business-account-id", inputs.business_account_id!,
    "--access-token", inputs.access_token!
  ]
  const channelsOf = async (token: string) => (await http(host.url, "GET", "/api/v1/channels", { token })).body.items
  const linkOf = async (token: string) =>
    (await http(host.url, "POST", "/api/v1/channel-connect-tokens", { token, body: { allowed_channel_types: ["chatapp"] } })).body

  it("refuses a number an active channel holds, to any tenant, by the CLI and the connect page, and takes it again once disconnected", async () => {
    const [holder, other] = await Promise.all([admin(env, "bootstrap"), admin(env, "bootstrap")])
    const inputs = validInputs("chatapp")
    const held = await admin(env, ...createChannel(holder.tenant_id, inputs))
    expect(held).toMatchObject({ tenant_id: holder.tenant_id, external_id: inputs.phone_number_id, status: "active" })

    for (const tenant of [other, holder]) {
      const refused = await adminFailing(env, ...createChannel(tenant.tenant_id, inputs))
      expect(refused.code).not.toBe(0)
      expect(refused.stdout).toBe("")
      expect(refused.stderr).toMatch(TAKEN)
    }

    const link = await linkOf(other.api_key)
    const submit = await openForm(link.connect_url, "chatapp")
    const page = await submit(inputs)
    expect(page.status).toBe(409)
    expect(await page.text()).toContain("account is already connected to an active channel, so it was not connected again.")
    expect(await channelsOf(other.api_key)).toEqual([])
    expect((await http(host.url, "GET", `/api/v1/channel-connect-tokens/${link.id}`, { token: other.api_key })).body.uses_count).toBe(0)
    expect(await channelsOf(holder.api_key)).toMatchObject([{ id: held.channel_id, status: "active" }])

    expect((await http(host.url, "POST", `/api/v1/channels/${held.channel_id}/disconnect`, { token: holder.api_key })).status)
      .toBe(200)
    expect((await submit(inputs)).status).toBe(200)
    expect(await channelsOf(other.api_key)).toMatchObject([{ external_id: inputs.phone_number_id, status: "active" }])
    expect((await adminFailing(env, ...createChannel(holder.tenant_id, inputs))).stderr).toMatch(TAKEN)
  })

  it("connects one of two customers submitting the same number at once; the other sees 409 and why, and gets nothing", async () => {
    const tenants = await Promise.all([admin(env, "bootstrap"), admin(env, "bootstrap")])
    const forms = await Promise.all(tenants.map(async (tenant) => openForm((await linkOf(tenant.api_key)).connect_url, "chatapp")))
    const inputs = validInputs("chatapp")

    const answers = await Promise.all(forms.map((submit) => submit(inputs)))

    expect(answers.map((a) => a.status).sort()).toEqual([200, 409])
    const loser = answers.findIndex((a) => a.status === 409)
    expect(await answers[loser]!.text()).toContain("already connected to an active channel")
    const [lost, won] = [tenants[loser]!, tenants[1 - loser]!]
    expect(await channelsOf(lost.api_key)).toEqual([])
    expect(await channelsOf(won.api_key)).toMatchObject([{ external_id: inputs.phone_number_id, status: "active" }])
    const events = async (token: string) =>
      (await http(host.url, "GET", "/api/v1/events", { token })).body.items.map((e: { type: string }) => e.type)
    expect(await events(lost.api_key)).toEqual([])
    expect(await events(won.api_key)).toEqual(["channel.created"])
  })
})
