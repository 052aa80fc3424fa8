import { createHash } from "node:crypto"
import { crc32 } from "node:zlib"
import { Effect } from "effect"
import { describe, expect, it } from "vitest"
import { makeSimulatedChatPlatform } from "../../adapters/chatapp/SimulatedChatPlatform.ts"
import type { ChatappCredentials, ChatappLibraryTemplate } from "../../src/ports/ChatPlatform.ts"

const credentials: ChatappCredentials = {
  phoneNumberId: "1065550100",
  businessAccountId: "2065550100",
  accessToken: "EAAGsecretSystemUserToken0000000001"
}
const run = <A, E>(effect: Effect.Effect<A, E>) => Effect.runPromise(effect)
const failure = <A, E>(effect: Effect.Effect<A, E>) => Effect.runPromise(Effect.flip(effect))

const LANGUAGES = ["en_US", "es_ES", "pt_BR", "de_DE", "fr_FR", "it_IT"]
const placeholders = (text: string) => [...text.matchAll(/\{\{(\d+)\}\}/g)].map((m) => Number(m[1]))

describe("the simulated template library", () => {
  const simulator = makeSimulatedChatPlatform()
  const browse = (query: Parameters<typeof simulator.browseLibrary>[1]) => run(simulator.browseLibrary(credentials, query))

  it("holds about thirty entries: utility and authentication, in six languages, the same templates in several", async () => {
    const all = await browse({})
    expect(all.length).toBeGreaterThanOrEqual(25)
    expect(all.length).toBeLessThanOrEqual(40)
    expect(new Set(all.map((t) => t.language))).toEqual(new Set(LANGUAGES))
    expect(new Set(all.map((t) => t.category))).toEqual(new Set(["UTILITY", "AUTHENTICATION"]))
    expect(new Set(all.map((t) => t.topic))).toEqual(new Set([
      "ORDER_MANAGEMENT",
      "SHIPPING_UPDATES",
      "PAYMENTS",
      "ACCOUNT_UPDATES",
      "APPOINTMENT_REMINDERS",
      "CUSTOMER_FEEDBACK",
      "SECURITY"
    ]))
    expect(new Set(all.flatMap((t) => t.industry ?? []))).toEqual(new Set(["E_COMMERCE", "FINANCIAL_SERVICES", "HEALTHCARE", "TRAVEL"]))
    const languagesOf = (name: string) => all.filter((t) => t.name === name).map((t) => t.language).sort()
    expect(languagesOf("order_confirmation_1")).toEqual([...LANGUAGES].sort())
    expect(languagesOf("verification_code_1")).toEqual([...LANGUAGES].sort())
    expect(new Set(all.map((t) => t.id)).size).toBe(all.length)
    expect(all.every((t) => /^\d{16}$/.test(t.id ?? ""))).toBe(true)
    expect(new Set(all.map((t) => `${t.name}/${t.language}`)).size).toBe(all.length)
  })

  it("numbers each body's placeholders {{1}}…{{n}} with an example value for each", async () => {
    for (const entry of await browse({})) {
      const numbers = placeholders(entry.body)
      expect(numbers.length, entry.name).toBeGreaterThan(0)
      expect(numbers, `${entry.name} ${entry.language}`).toEqual(numbers.map((_, i) => i + 1))
      expect(entry.body_params, `${entry.name} ${entry.language}`).toHaveLength(numbers.length)
      expect(entry.body_param_types ?? [], entry.name).toHaveLength(numbers.length)
    }
  })

  it("has the operator's buttons: quick replies, URLs with a {{1}} and a suffix example, phone numbers, and OTP for authentication", async () => {
    const all = await browse({})
    const buttons = all.flatMap((t) => (t.buttons ?? []).map((button): Record<string, unknown> & { template: string } => ({ ...button, template: t.name })))
    expect(new Set(buttons.map((b) => b.type))).toEqual(new Set(["QUICK_REPLY", "URL", "PHONE_NUMBER", "OTP"]))
    for (const button of buttons) expect(typeof button.text === "string" && button.text !== "", button.template).toBe(true)
    for (const button of buttons.filter((b) => b.type === "URL")) {
      const url = button.url as string
      expect(url).toMatch(/^https:\/\/www\.example\.com\/.*\{\{1\}\}$/)
      const suffix = button.url_suffix_example as string
      expect(suffix.startsWith(url.replace("{{1}}", "")), suffix).toBe(true)
    }
    for (const button of buttons.filter((b) => b.type === "PHONE_NUMBER")) expect(button.phone_number).toMatch(/^\+[1-9]\d{6,14}$/)
    const authentication = all.filter((t) => t.category === "AUTHENTICATION")
    expect(authentication.length).toBeGreaterThan(0)
    for (const entry of authentication) expect(entry.buttons).toEqual([expect.objectContaining({ type: "OTP", otp_type: "COPY_CODE" })])
  })

  it("searches name and body in any case", async () => {
    const byName = await browse({ search: "VERIFICATION_code" })
    expect(byName.map((t) => t.name)).toEqual(Array(6).fill("verification_code_1"))
    const byBody = await browse({ search: "PEDIDO" })
    expect(byBody.length).toBeGreaterThan(0)
    expect(byBody.every((t) => t.body.toLowerCase().includes("pedido"))).toBe(true)
    expect(new Set(byBody.map((t) => t.language))).toEqual(new Set(["es_ES", "pt_BR"]))
    expect(await browse({ search: "no such words anywhere" })).toEqual([])
  })

  it("filters by topic, use case, industry, language and name, all at once when given together", async () => {
    const payments = await browse({ topic: "PAYMENTS" })
    expect(new Set(payments.map((t) => t.name))).toEqual(new Set(["payment_reminder_1", "payment_received_1"]))
    expect((await browse({ usecase: "APPOINTMENT_REMINDER" })).every((t) => t.name === "appointment_reminder_1")).toBe(true)
    const travel = await browse({ industry: "TRAVEL" })
    expect(travel.length).toBeGreaterThan(0)
    expect(travel.every((t) => t.industry?.includes("TRAVEL"))).toBe(true)
    const german = await browse({ language: "de_DE" })
    expect(german.length).toBeGreaterThan(2)
    expect(german.every((t) => t.language === "de_DE")).toBe(true)
    expect((await browse({ name: "shipment_update_1" })).map((t) => t.language).sort()).toEqual(["de_DE", "en_US", "es_ES", "pt_BR"])
    expect(await browse({ name: "shipment_update" })).toEqual([])
    expect((await browse({ topic: "PAYMENTS", language: "it_IT", industry: "FINANCIAL_SERVICES" })).map((t) => t.name)).toEqual(["payment_received_1"])
    expect(await browse({ topic: "PAYMENTS", language: "it_IT", usecase: "PAYMENT_DUE_REMINDER" })).toEqual([])
  })
})

describe("templates the simulator keeps per business account", () => {
  const library = async (name: string, language: string): Promise<ChatappLibraryTemplate> =>
    (await run(makeSimulatedChatPlatform().browseLibrary(credentials, { name, language })))[0]!

  it("approves at once a library template whose wording is unchanged, with the library's category", async () => {
    const simulator = makeSimulatedChatPlatform({ now: () => 1_764_000_000_000 })
    const created = await run(simulator.createTemplate(credentials, {
      name: "order_confirmation_1",
      language: "en_US",
      category: "MARKETING",
      library_template_name: "order_confirmation_1"
    }))
    expect(created).toEqual({ id: "1764000000000001", status: "APPROVED", category: "UTILITY" })

    const { items } = await run(simulator.listTemplates(credentials, { limit: 10 }))
    const entry = await library("order_confirmation_1", "en_US")
    expect(items).toEqual([{
      id: "1764000000000001",
      name: "order_confirmation_1",
      language: "en_US",
      status: "APPROVED",
      category: "UTILITY",
      library_template_name: "order_confirmation_1",
      components: [
        { type: "HEADER", format: "TEXT", text: entry.header },
        { type: "BODY", text: entry.body, example: { body_text: [entry.body_params] } },
        { type: "BUTTONS", buttons: entry.buttons }
      ]
    }])
  })

  it("still counts a renamed template with re-pointed buttons as unchanged, given as JSON or as an array", async () => {
    const simulator = makeSimulatedChatPlatform()
    const inputs = [
      { type: "URL", url: { base_url: "https://pay.example/{{1}}", url_suffix_example: "https://pay.example/INV-1" } },
      { type: "PHONE_NUMBER", phone_number: "+14155550100" }
    ]
    const entry = await library("payment_reminder_1", "es_ES")
    for (const [name, encoded] of [["recordatorio_pago", JSON.stringify(inputs)], ["recordatorio_pago_2", inputs]] as const) {
      const created = await run(simulator.createTemplate(credentials, {
        name,
        language: "es_ES",
        library_template_name: "payment_reminder_1",
        library_template_button_inputs: encoded,
        components: [{ type: "HEADER", format: "TEXT", text: entry.header }, { type: "BODY", text: entry.body }]
      }))
      expect(created.status).toBe("APPROVED")
    }
    const { items } = await run(simulator.listTemplates(credentials, { limit: 10 }))
    const buttons = (items[0]!.components.find((c) => c.type === "BUTTONS") as { buttons: Array<Record<string, unknown>> }).buttons
    expect(buttons).toEqual([
      expect.objectContaining({ type: "URL", text: "Pagar ahora", url: "https://pay.example/{{1}}" }),
      expect.objectContaining({ type: "PHONE_NUMBER", text: "Llámanos", phone_number: "+14155550100" })
    ])
  })

  it("leaves PENDING a library template whose body, header or footer changed, and any ordinary template", async () => {
    const simulator = makeSimulatedChatPlatform()
    const entry = await library("verification_code_1", "fr_FR")
    const changed = [
      [{ type: "BODY", text: `${entry.body} Merci !` }, { type: "FOOTER", text: entry.footer }],
      [{ type: "BODY", text: entry.body }],
      [{ type: "HEADER", format: "TEXT", text: "Code" }, { type: "BODY", text: entry.body }, { type: "FOOTER", text: entry.footer }],
      [{ type: "BODY", text: entry.body }, { type: "FOOTER", text: "Valable 5 minutes." }]
    ]
    for (const [i, components] of changed.entries()) {
      const created = await run(simulator.createTemplate(credentials, {
        name: `code_${i}`,
        language: "fr_FR",
        category: "AUTHENTICATION",
        library_template_name: "verification_code_1",
        components
      }))
      expect(created).toMatchObject({ status: "PENDING", category: "AUTHENTICATION" })
    }
    const ordinary = await run(simulator.createTemplate(credentials, {
      name: "spring_sale",
      language: "en_US",
      category: "MARKETING",
      components: [{ type: "BODY", text: "Our spring sale starts {{1}}!", example: { body_text: [["Monday"]] } }]
    }))
    expect(ordinary).toMatchObject({ status: "PENDING", category: "MARKETING" })
    expect((await run(simulator.listTemplates(credentials, { limit: 10 }))).items.map((t) => t.status)).toEqual(Array(5).fill("PENDING"))
  })

  it("refuses as the operator does: a name taken in that language, an unknown library entry, a bad name or category", async () => {
    const simulator = makeSimulatedChatPlatform()
    const adopt = { name: "welcome", language: "en_US", library_template_name: "account_update_1" }
    await run(simulator.createTemplate(credentials, adopt))
    expect(await failure(simulator.createTemplate(credentials, adopt))).toMatchObject({
      kind: "other",
      code: 100,
      subcode: 2388024,
      userTitle: "Content in This Language Already Exists"
    })
    expect((await run(simulator.createTemplate(credentials, { ...adopt, language: "es_ES" }))).status).toBe("APPROVED")
    expect(await failure(simulator.createTemplate(credentials, { ...adopt, language: "de_DE" }))).toMatchObject({ kind: "other", code: 100 })
    expect(await failure(simulator.createTemplate(credentials, { ...adopt, name: "Welcome Back" }))).toMatchObject({ kind: "other", code: 100 })
    expect(await failure(simulator.createTemplate(credentials, { name: "x", language: "en_US", category: "PROMO", components: [{ type: "BODY", text: "x" }] })))
      .toMatchObject({ kind: "other", code: 100 })
    expect(await failure(simulator.createTemplate(credentials, { ...adopt, name: "other", library_template_button_inputs: "[not json" })))
      .toMatchObject({ kind: "other", code: 100 })
  })

  it("pages the list with an after cursor, and keeps each business account's templates apart", async () => {
    const simulator = makeSimulatedChatPlatform()
    for (const name of ["a", "b", "c"]) {
      await run(simulator.createTemplate(credentials, { name, language: "en_US", category: "UTILITY", components: [{ type: "BODY", text: name }] }))
    }
    const first = await run(simulator.listTemplates(credentials, { limit: 2 }))
    expect(first.items.map((t) => t.name)).toEqual(["a", "b"])
    const second = await run(simulator.listTemplates(credentials, { limit: 2, after: first.after! }))
    expect(second.items.map((t) => t.name)).toEqual(["c"])
    expect(second.after).toBeNull()
    expect(await failure(simulator.listTemplates(credentials, { limit: 2, after: "garbage" }))).toMatchObject({ code: 100 })
    expect(await run(simulator.listTemplates({ ...credentials, businessAccountId: "3065550100" }, { limit: 10 }))).toEqual({ items: [], after: null })
  })
})

describe("the simulated number and sends", () => {
  it("describes the number as TIER_1K, GREEN and CONNECTED, with a display number made from its id", async () => {
    expect(await run(makeSimulatedChatPlatform().phoneNumber(credentials))).toEqual({
      id: "1065550100",
      displayPhoneNumber: "+1 555-555-0100",
      verifiedName: "Simulated Business",
      messagingLimitTier: "TIER_1K",
      qualityRating: "GREEN",
      status: "CONNECTED",
      throughputLevel: "STANDARD"
    })
  })

  it("accepts every send with a fresh wamid, the recipient's wa_id being the digits of to", async () => {
    const simulator = makeSimulatedChatPlatform()
    const message = { type: "text", text: { body: "Hi" } }
    const first = await run(simulator.sendMessage(credentials, "+1 (415) 555-0100", message))
    const second = await run(simulator.sendMessage(credentials, "14155550100", message))
    expect(first.recipientWaId).toBe("14155550100")
    expect(first.messageId).toMatch(/^wamid\.[A-Za-z0-9_-]{20,}$/)
    expect(second.messageId).not.toBe(first.messageId)
    expect(await failure(simulator.sendMessage(credentials, "nobody", message))).toMatchObject({ kind: "other", code: 100 })
  })

  it("refuses malformed credentials, and a token containing REJECT, with the operator's 190", async () => {
    const simulator = makeSimulatedChatPlatform()
    const bad: ReadonlyArray<ChatappCredentials> = [
      { ...credentials, phoneNumberId: "+1 555" },
      { ...credentials, businessAccountId: "" },
      { ...credentials, accessToken: "short" },
      { ...credentials, accessToken: "has spaces in the token 0000" },
      { ...credentials, accessToken: "EAAGsecretREJECTthisTokenPlease000001" }
    ]
    for (const given of bad) {
      const error = await failure(simulator.phoneNumber(given))
      expect(error).toMatchObject({ kind: "auth", code: 190, httpStatus: 401 })
      expect(error.retryable).toBe(false)
      expect(await failure(simulator.browseLibrary(given, {}))).toMatchObject({ kind: "auth" })
      expect(await failure(simulator.sendMessage(given, "14155550100", { type: "text", text: { body: "x" } }))).toMatchObject({ kind: "auth" })
    }
  })
})

describe("simulated media uploads", () => {
  it("answers an upload with a media id that the number's media messages may then name; an id it never gave is refused", async () => {
    const simulator = makeSimulatedChatPlatform()
    const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47])
    const { id } = await run(simulator.uploadMedia(credentials, { bytes: png, mimeType: "image/png", filename: "a.png" }))
    expect(id).toMatch(/^\d+$/)
    const sent = await run(simulator.sendMessage(credentials, "14155550100", { type: "image", image: { id, caption: "Look" } }))
    expect(sent.messageId).toMatch(/^wamid\./)
    expect(await failure(simulator.sendMessage(credentials, "14155550100", { type: "document", document: { id: "404" } }))).toMatchObject({ code: 100 })
    // Another number of the account cannot send this number's media.
    const other = { ...credentials, phoneNumberId: "1065550199" }
    expect(await failure(simulator.sendMessage(other, "14155550100", { type: "image", image: { id } }))).toMatchObject({ code: 100 })
    // Types the operator does not take, and empty files, are refused; credentials are checked first.
    expect(await failure(simulator.uploadMedia(credentials, { bytes: png, mimeType: "image/gif", filename: "a.gif" }))).toMatchObject({ code: 100 })
    expect(await failure(simulator.uploadMedia(credentials, { bytes: new Uint8Array(0), mimeType: "application/pdf", filename: "a.pdf" }))).toMatchObject({ code: 100 })
    expect(await failure(simulator.uploadMedia({ ...credentials, accessToken: "short" }, { bytes: png, mimeType: "image/png", filename: "a.png" }))).toMatchObject({ kind: "auth" })
  })
})

describe("simulated media", () => {
  const simulator = makeSimulatedChatPlatform()

  it("serves a real 1×1 PNG for ids starting sim-image: signature, chunks and CRCs right", async () => {
    const media = await run(simulator.fetchMedia(credentials, "sim-image-42", { maxBytes: 1024 }))
    expect(media.mimeType).toBe("image/png")
    expect(media.sha256).toBe(createHash("sha256").update(media.bytes).digest("hex"))
    const bytes = Buffer.from(media.bytes)
    expect([...bytes.subarray(0, 8)]).toEqual([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])
    const chunks: Array<string> = []
    for (let at = 8; at < bytes.length;) {
      const length = bytes.readUInt32BE(at)
      const type = bytes.subarray(at + 4, at + 8)
      const data = bytes.subarray(at + 8, at + 8 + length)
      expect(bytes.readUInt32BE(at + 8 + length)).toBe(crc32(Buffer.concat([type, data])))
      chunks.push(type.toString("latin1"))
      at += 12 + length
    }
    expect(chunks).toEqual(["IHDR", "IDAT", "IEND"])
    expect([bytes.readUInt32BE(16), bytes.readUInt32BE(20)]).toEqual([1, 1])
  })

  it("serves a real one-page PDF for ids starting sim-document, its xref pointing at its objects", async () => {
    const media = await run(simulator.fetchMedia(credentials, "sim-document-7", { maxBytes: 4096 }))
    expect(media.mimeType).toBe("application/pdf")
    const text = new TextDecoder().decode(media.bytes)
    expect(text.startsWith("%PDF-1.")).toBe(true)
    expect(text.trimEnd().endsWith("%%EOF")).toBe(true)
    const startxref = Number(/startxref\n(\d+)\n/.exec(text)![1])
    expect(text.slice(startxref).startsWith("xref\n")).toBe(true)
    const offsets = [...text.slice(startxref).matchAll(/^(\d{10}) 00000 n $/gm)].map((m) => Number(m[1]))
    expect(offsets).toHaveLength(5)
    offsets.forEach((offset, i) => expect(text.slice(offset).startsWith(`${i + 1} 0 obj`)).toBe(true))
    expect(text).toContain("/Type /Page ")
  })

  it("answers other ids as the operator answers an unknown object, and refuses what is over maxBytes", async () => {
    expect(await failure(simulator.fetchMedia(credentials, "1234567890", { maxBytes: 1024 }))).toMatchObject({
      kind: "other",
      code: 100,
      subcode: 33
    })
    expect((await failure(simulator.fetchMedia(credentials, "sim-image", { maxBytes: 10 }))).message).toContain("more than the 10")
  })
})
