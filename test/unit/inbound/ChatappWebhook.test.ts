import { Effect } from "effect"
import { describe, expect, it } from "vitest"
import { MAX_PAYLOAD_DEPTH, parseChatappPayload } from "../../../src/inbound/ChatappWebhook.ts"
import { chatappContentOf } from "../../../src/messages/ChatappContent.ts"

const bytes = (value: unknown) => new TextEncoder().encode(typeof value === "string" ? value : JSON.stringify(value))
const parse = (value: unknown) => Effect.runPromise(parseChatappPayload(bytes(value)))

const change = (phone: string, value: Record<string, unknown>, field = "messages") => ({
  field,
  value: { messaging_product: "whatsapp", metadata: { display_phone_number: "15550001111", phone_number_id: phone }, ...value }
})

describe("reading operator payloads", () => {
  it("reads every entry and every change, not only the first", async () => {
    const payload = {
      object: "whatsapp_business_account",
      entry: [
        {
          id: "111",
          changes: [
            change("p1", {
              contacts: [{ profile: { name: "Ana" }, wa_id: "34600000001" }],
              messages: [
                { from: "34600000001", id: "wamid.A", timestamp: "1764150000", type: "text", text: { body: "hola" } },
                { from: "34600000001", id: "wamid.B", timestamp: "1764150001", type: "text", text: { body: "¿hay alguien?" } }
              ]
            }),
            change("p1", { statuses: [{ id: "wamid.OUT", status: "read", timestamp: "1764150002", recipient_id: "34600000001" }] })
          ]
        },
        { id: "222", changes: [change("p2", { messages: [{ from: "4915100000002", id: "wamid.C", type: "reaction", reaction: { message_id: "wamid.OUT", emoji: "👍" } }] })] },
        { id: "333", changes: [{ field: "phone_number_quality_update", value: { display_phone_number: "1555", event: "FLAGGED", current_limit: "TIER_1K" } }] }
      ]
    }
    const { events, notes } = await parse(payload)
    expect(notes).toEqual([])
    expect(events.map((e) => e.key)).toEqual([
      "message:wamid.A",
      "message:wamid.B",
      "status:wamid.OUT:read",
      "message:wamid.C",
      expect.stringMatching(/^field:[0-9a-f]{64}$/)
    ])
    expect(events[0]).toMatchObject({ kind: "message", phoneNumberId: "p1", profileName: "Ana", from: "34600000001", sentAt: "2025-11-26T09:40:00.000Z" })
    expect(events[3]).toMatchObject({ kind: "message", phoneNumberId: "p2", entryId: "222", profileName: null })
    expect(events[4]).toMatchObject({ kind: "field", field: "phone_number_quality_update", entryId: "333" })
  })

  it("gives a redelivered field change the same key, a different one a different key", async () => {
    const payload = (event: string) => ({ object: "whatsapp_business_account", entry: [{ id: "1", changes: [{ field: "flows", value: { event } }] }] })
    const [a, b, c] = await Promise.all([parse(payload("FLOW_STATUS_CHANGE")), parse(payload("FLOW_STATUS_CHANGE")), parse(payload("ENDPOINT_ERROR_RATE"))])
    expect(a.events[0]!.key).toBe(b.events[0]!.key)
    expect(a.events[0]!.key).not.toBe(c.events[0]!.key)
  })

  it("keeps whole numbers past 2^53 exactly, as their digits (a template id), and smaller ones as numbers", async () => {
    const raw = `{"object":"whatsapp_business_account","entry":[{"id":"1","changes":[{"field":"message_template_status_update",
      "value":{"event":"APPROVED","message_template_id":9123456789012345678,"other_id":1234567890123456,"name":"a\\u0000b"}}]}]}`
    const { events } = await parse(raw)
    expect(events[0]).toMatchObject({
      kind: "field",
      value: { message_template_id: "9123456789012345678", other_id: 1234567890123456, name: "a\uFFFDb" }
    })
  })

  it("reads the callback data the operator echoes in a status, and none when it is missing or not text", async () => {
    const status = (n: number, extra: Record<string, unknown>) => ({ id: `wamid.Y${n}`, status: "sent", timestamp: "1764150001", recipient_id: "1", ...extra })
    const { events } = await parse({
      object: "whatsapp_business_account",
      entry: [{ id: "1", changes: [change("p1", { statuses: [status(1, { biz_opaque_callback_data: "ref-1" }), status(2, {}), status(3, { biz_opaque_callback_data: 7 })] })] }]
    })
    expect(events.map((event) => (event.kind === "status" ? event.callbackData : "not a status"))).toEqual(["ref-1", null, null])
  })

  it("reads a failed status with the operator's error", async () => {
    const { events } = await parse({
      object: "whatsapp_business_account",
      entry: [{ id: "1", changes: [change("p1", { statuses: [{ id: "wamid.X", status: "failed", timestamp: "1764150002", recipient_id: "1", errors: [{ code: 131047, title: "Re-engagement message", message: "Re-engagement message", error_data: { details: "More than 24 hours have passed" } }] }] })] }]
    })
    expect(events[0]).toMatchObject({ kind: "status", status: "failed", error: { code: 131047, title: "Re-engagement message", details: "More than 24 hours have passed" } })
  })

  it("finds a long whole number wherever JSON puts one: after blanks, in an array, negative; and never inside a string", async () => {
    // Each alone: the whole body is read one way or the other.
    const valueOf = async (json: string) => {
      const raw = `{"object":"whatsapp_business_account","entry":[{"id":"1","changes":[{"field":"account_update","value":${json}}]}]}`
      const { events } = await parse(raw)
      return events[0]?.kind === "field" ? events[0].value : undefined
    }
    expect(await valueOf(`{"a": \n\t 9123456789012345678}`)).toEqual({ a: "9123456789012345678" })
    expect(await valueOf(`[1,\r\n-9123456789012345679]`)).toEqual([1, "-9123456789012345679"])
    expect(await valueOf(`[ 9123456789012345678]`)).toEqual(["9123456789012345678"])
    const strings = { conversation: "00000000000000000000000000001f4", text: "ref:9123456789012345678 [9123456789012345678" }
    expect(await valueOf(JSON.stringify(strings))).toEqual(strings)
  })

  it("counts nesting by the text's brackets, never those inside strings", async () => {
    // The root and MAX_PAYLOAD_DEPTH - 1 levels below it: read; strings full of brackets and escaped quotes do not count.
    let deep: unknown = "bottom"
    for (let level = 0; level < MAX_PAYLOAD_DEPTH - 1; level++) deep = { deeper: deep }
    const brackets = `"[{\\"${"{[".repeat(200)}`
    const { events, notes } = await parse({
      object: "whatsapp_business_account",
      deep,
      entry: [{ id: "1", changes: [change("p1", { statuses: [{ id: "wamid.OUT", status: "read", timestamp: "1764150002", recipient_id: brackets }] })] }]
    })
    expect(notes).toEqual([])
    expect(events).toMatchObject([{ kind: "status", externalId: "wamid.OUT", recipientId: brackets }])
  })

  it("never fails: garbage becomes notes", async () => {
    const account = "whatsapp_business_account"
    let deep: unknown = "bottom"
    for (let level = 0; level < MAX_PAYLOAD_DEPTH; level++) deep = { deeper: deep }
    const garbage: ReadonlyArray<readonly [body: unknown, notes: ReadonlyArray<string>]> = [
      ["not json", ["body is not JSON text"]],
      ["[]", ["body is not a JSON object"]],
      ["null", ["body is not a JSON object"]],
      [{ object: account, entry: [{ id: "1", changes: [] }], deep }, [`body nests deeper than ${MAX_PAYLOAD_DEPTH} levels`]],
      [{ object: "page" }, [`object "page" is not a chat-app business account payload`, "no entries"]],
      [{ entry: [] }, ["object null is not a chat-app business account payload", "no entries"]],
      [{ object: account, entry: [{ changes: [{ value: {} }] }] }, ["entry 0 change 0: no field, or not a field name"]],
      [
        { object: account, entry: [{ id: "1", changes: [{ field: "messages", value: { messages: [{ id: "wamid.1", from: "34600000001", type: "text" }] } }] }] },
        ["entry 0 change 0: messages without a readable metadata.phone_number_id"]
      ],
      [
        { object: account, entry: [{ id: "1", changes: [change("p", { messages: [{ type: "text" }], statuses: [{ id: "w", status: "exploded" }] })] }] },
        [
          "entry 0 change 0 message 0: id, sender number or type missing or unreadable",
          `entry 0 change 0 status 0: id missing or unreadable, or status "exploded" unknown`
        ]
      ],
      [
        { object: account, entry: [{ id: "1", changes: [change("p", { messages: [{ id: "wamid.2", from: "12", type: "text" }] })] }] },
        ["entry 0 change 0 message 0: id, sender number or type missing or unreadable"]
      ],
      [
        { object: account, entry: [{ id: "1", changes: [change("p", { errors: [{ code: 131000, title: "Something went wrong" }] })] }] },
        ["entry 0 change 0: operator error 131000 Something went wrong"]
      ]
    ]
    for (const [body, notes] of garbage) {
      expect(await parse(body), `the notes of ${JSON.stringify(body).slice(0, 200)}`).toEqual({ events: [], notes })
    }
    const invalidUtf8 = await Effect.runPromise(parseChatappPayload(new Uint8Array([0x7b, 0xff, 0xfe, 0x7d])))
    expect(invalidUtf8).toEqual({ events: [], notes: ["body is not JSON text"] })
  })
})

describe("what a message object becomes", () => {
  const of = (message: Record<string, unknown>) => chatappContentOf({ from: "1", id: "wamid.1", timestamp: "1", ...message })
  it("text, media with caption, location, contacts, button, replies, reaction, unknown", () => {
    expect(of({ type: "text", text: { body: "hi" } })).toMatchObject({ messageType: "text", text: "hi", media: null })
    expect(of({ type: "image", image: { id: "m1", mime_type: "image/jpeg", sha256: "x", caption: "look" } })).toMatchObject({
      messageType: "image",
      text: "look",
      media: { id: "m1", mimeType: "image/jpeg", filename: null }
    })
    expect(of({ type: "document", document: { id: "d1", mime_type: "application/pdf", filename: "invoice.pdf" } }).media).toEqual({
      id: "d1",
      mimeType: "application/pdf",
      filename: "invoice.pdf"
    })
    for (const type of ["audio", "video", "sticker"]) expect(of({ type, [type]: { id: "x", mime_type: "a/b" } }).media?.id).toBe("x")
    expect(of({ type: "location", location: { latitude: 1.5, longitude: 2.5, name: "Office" } })).toMatchObject({
      messageType: "location",
      text: "Office",
      content: { location: { latitude: 1.5, longitude: 2.5, name: "Office" } }
    })
    expect(of({ type: "contacts", contacts: [{ name: { formatted_name: "Bo" } }] }).content.contacts).toEqual([{ name: { formatted_name: "Bo" } }])
    expect(of({ type: "button", button: { text: "STOP", payload: "stop" } })).toMatchObject({ messageType: "button", text: "STOP" })
    expect(of({ type: "interactive", interactive: { type: "button_reply", button_reply: { id: "b1", title: "Yes" } } })).toMatchObject({
      messageType: "interactive",
      text: "Yes",
      content: { interactive: { type: "button_reply", id: "b1", title: "Yes" } }
    })
    expect(of({ type: "interactive", interactive: { type: "list_reply", list_reply: { id: "r1", title: "Row", description: "d" } } }).text).toBe("Row")
    expect(of({ type: "interactive", interactive: { type: "nfm_reply", nfm_reply: { name: "flow", body: "Sent", response_json: "{\"flow_token\":\"t\"}" } } })).toMatchObject({
      text: "Sent",
      content: { interactive: { type: "nfm_reply", name: "flow", body: "Sent" } }
    })
    // The flow's response (its token and possibly sensitive answers) is never kept on the message.
    expect(JSON.stringify(of({ type: "interactive", interactive: { type: "nfm_reply", nfm_reply: { name: "flow", body: "Sent", response_json: "{\"flow_token\":\"t\"}" } } })))
      .not.toContain("flow_token")
    expect(of({ type: "reaction", reaction: { message_id: "wamid.0", emoji: "❤️" } })).toMatchObject({ messageType: "reaction", text: "❤️" })
    expect(of({ type: "order", order: {}, errors: [{ code: 131051, title: "Unsupported message type" }] })).toMatchObject({
      messageType: "unsupported",
      content: { original_type: "order", errors: [{ code: 131051 }] }
    })
    expect(of({ type: "text", text: { body: "re" }, context: { from: "1", id: "wamid.0" } }).content).toEqual({ context: { from: "1", id: "wamid.0" } })
  })
})
