import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ChatappHost, startChatappHost } from "../support/ChatappHost.ts"
import { admin, adminFailing } from "../support/Host.ts"
import { hostBackends } from "../support/HostBackends.ts"

// A number's throughput seen from outside: the sending limit the API shows, the operator's
// THROUGHPUT_UPGRADE webhook, and the rate a host's operator sets with the CLI. The host runs as a
// child process on a manual test clock, pointed at a fake operator.

const APP_SECRET = "throughput-app-secret"
const TOKEN = "EAAGthroughputtokenabcdefghijklmnopqrs"

describe.each(hostBackends)("a number's throughput on the reference host ($name)", (backend) => {
  let chatapp: ChatappHost
  const NUMBERS = { upgraded: "106540352250001", set: "106540352250002" }
  const WABAS = { upgraded: "102290129350001", set: "102290129350002" }
  const channels: Record<keyof typeof NUMBERS, string> = { upgraded: "", set: "" }

  beforeAll(async () => {
    chatapp = await startChatappHost(backend, { accessToken: TOKEN, graph: {}, appSecret: APP_SECRET, verifyToken: "throughput-verify" })
    for (const which of ["upgraded", "set"] as const) channels[which] = (await chatapp.channel(NUMBERS[which], WABAS[which])).channel_id
  })
  afterAll(() => chatapp?.close())

  const limitOf = async (channelId: string) => {
    const got = await chatapp.api("GET", `/chatapp/channels/${channelId}/sending-limit`)
    expect(got.status).toBe(200)
    return got.body
  }

  it("shows 80 messages a second at STANDARD and 1,000 at HIGH, as the operator reads the number", async () => {
    chatapp.graph.number(NUMBERS.upgraded, { throughput_level: "STANDARD" })
    expect(await limitOf(channels.upgraded)).toMatchObject({ throughput_level: "STANDARD", throughput_per_second: 80, stale: false })
    chatapp.graph.number(NUMBERS.upgraded, { throughput_level: "HIGH" })
    expect(await limitOf(channels.upgraded)).toMatchObject({ throughput_level: "HIGH", throughput_per_second: 1_000, stale: false })
    chatapp.graph.number(NUMBERS.upgraded, { throughput_level: "STANDARD" })
    expect(await limitOf(channels.upgraded)).toMatchObject({ throughput_level: "STANDARD", throughput_per_second: 80 })
  })

  it("takes a THROUGHPUT_UPGRADE webhook to the HIGH level, 1,000 a second, kept while the operator cannot be read", async () => {
    const display = (await chatapp.api("GET", `/channels/${channels.upgraded}`)).body.config.display_phone_number as string
    const posted = await chatapp.post({
      object: "whatsapp_business_account",
      entry: [{
        id: WABAS.upgraded,
        time: 1_748_454_394,
        changes: [{
          field: "phone_number_quality_update",
          value: { display_phone_number: display.replace(/\D/g, ""), event: "THROUGHPUT_UPGRADE", current_limit: "TIER_UNLIMITED" }
        }]
      }]
    })
    expect(posted.status).toBe(200)
    await chatapp.drain()
    chatapp.graph.script("GET", `/${NUMBERS.upgraded}`, { status: 503, body: "Service Unavailable" })

    expect(await limitOf(channels.upgraded)).toEqual({
      channel_id: channels.upgraded,
      channel_type: "chatapp",
      messaging_limit_tier: "TIER_UNLIMITED",
      quality_rating: "GREEN",
      throughput_level: "HIGH",
      phone_status: "CONNECTED",
      throughput_per_second: 1_000,
      stale: true,
      supported: true
    })
  })

  it("lets the host's operator set a channel's rate with the CLI, shown whatever the level, and hand it back with auto", async () => {
    chatapp.graph.number(NUMBERS.set, { throughput_level: "HIGH" })
    const tenant = chatapp.tenant.id
    expect(await admin(chatapp.env, "channel", "set-throughput", "--tenant", tenant, "--channel", channels.set, "--per-second", "250"))
      .toEqual({ channel_id: channels.set, throughput_per_second: 250, set_by_host: true })
    expect(await limitOf(channels.set)).toMatchObject({ throughput_level: "HIGH", throughput_per_second: 250, stale: false })

    expect(await admin(chatapp.env, "channel", "set-throughput", "--tenant", tenant, "--channel", channels.set, "--per-second", "auto"))
      .toEqual({ channel_id: channels.set, throughput_per_second: 1_000, set_by_host: false })
    expect(await limitOf(channels.set)).toMatchObject({ throughput_level: "HIGH", throughput_per_second: 1_000 })
  })

  it("refuses a rate that is not a positive whole number (usage, 2), and another tenant's or an unknown channel (1)", async () => {
    const refused = await adminFailing(chatapp.env, "channel", "set-throughput", "--tenant", chatapp.tenant.id, "--channel", channels.set, "--per-second", "0")
    expect(refused.code).toBe(2)
    expect(refused.stderr).toMatch(/--per-second takes a positive whole number, or auto/)
    for (const [tenant, channel] of [[chatapp.other.id, channels.set], [chatapp.tenant.id, "no-such-channel"]] as const) {
      const failed = await adminFailing(chatapp.env, "channel", "set-throughput", "--tenant", tenant, "--channel", channel, "--per-second", "100")
      expect(failed.code).toBe(1)
      expect(failed.stderr).toMatch(/not found/)
    }
    // Nothing changed for the tenant's channel.
    expect(await limitOf(channels.set)).toMatchObject({ throughput_per_second: 1_000 })
  })
})
