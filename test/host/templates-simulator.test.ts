import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ChatappHost, startChatappHost } from "../support/ChatappHost.ts"
import { hostBackends } from "../support/HostBackends.ts"
import type { Message } from "../../src/messages/MessageService.ts"

// The template library end to end with the host's own simulator as the operator (no
// OMNI_CHATAPP_GRAPH_URL): what `npm start` shows someone trying the service without an account.

describe("the template library with the simulated operator (SQLite)", () => {
  let chatapp: ChatappHost
  let channelId: string

  beforeAll(async () => {
    chatapp = await startChatappHost(hostBackends.find((backend) => backend.name === "SQLite")!, {
      accessToken: "EAAGsimulatortokenabcdefghijklmnop",
      graph: false
    })
    channelId = (await chatapp.channel("106540352260001", "102290129360001")).channel_id
  })
  afterAll(() => chatapp?.close())

  const api = (method: string, path: string, body?: unknown) => chatapp.api(method, path, body)

  it("browses, adopts an entry unchanged (approved at once) and sends it", async () => {
    const browsed = await api("GET", `/chatapp-templates/library?channel_id=${channelId}&language=en_US`)
    expect(browsed.status).toBe(200)
    expect(browsed.body).toMatchObject({ language: "en_US", stale: false, warning: null })
    const items = browsed.body.items as Array<any>
    expect(items.length).toBeGreaterThan(3)
    expect(browsed.body.total).toBe(items.length)
    expect(items.every((item) => item.language === "en_US" && item.already_added === false)).toBe(true)
    expect(browsed.body.facets.languages).toEqual(["en_US"])
    for (const facet of ["topics", "usecases", "industries"]) expect(browsed.body.facets[facet].length).toBeGreaterThan(0)

    // An entry with a link to fill in: its destination given as a button input.
    const order = items.find((item) => item.name === "order_confirmation_1")
    expect(order.requires_input).toBe(true)
    const adopted = await api("POST", "/chatapp-templates/library/adopt", {
      channel_id: channelId,
      library_template_name: "order_confirmation_1",
      button_inputs: [{ type: "URL", url: { base_url: "https://shop.acme.com/orders/{{1}}", url_suffix_example: "https://shop.acme.com/orders/A-1" } }]
    })
    expect(adopted.status, JSON.stringify(adopted.body)).toBe(201)
    expect(adopted.body).toMatchObject({ success: true, status: "approved", name: "order_confirmation_1", language: "en_US", already_existed: false })
    const again = await api("GET", `/chatapp-templates/library?channel_id=${channelId}&language=en_US`)
    expect((again.body.items as Array<any>).find((item) => item.name === "order_confirmation_1").already_added).toBe(true)

    const template = await api("GET", `/chatapp-templates/${adopted.body.id}`)
    expect(template.body.status).toBe("approved")
    const values = (template.body.placeholders as Array<any>).map((p, i) => p.example ?? `value ${i + 1}`)
    expect(values.length).toBeGreaterThan(0)
    const contact = await api("POST", "/contacts", { name: "Maria", phone: "+447700900555" })
    expect(contact.status).toBe(201)
    const sent = await api("POST", `/chatapp-templates/${adopted.body.id}/send`, {
      contact_id: contact.body.id,
      channel_id: channelId,
      language: "en_US",
      variable_values: values
    })
    expect(sent.status, JSON.stringify(sent.body)).toBe(201)
    expect(sent.body).toMatchObject({ message_type: "template", status: "sent", direction: "outbound", contact_id: contact.body.id })
    expect((await api("GET", `/messages?conversation_id=${sent.body.conversation_id}`)).body.items.map((m: Message) => m.id)).toEqual([sent.body.id])

    const limit = await api("GET", `/chatapp/channels/${channelId}/sending-limit`)
    expect(limit.body).toMatchObject({ messaging_limit_tier: "TIER_1K", quality_rating: "GREEN", supported: true, stale: false })
  })
})
