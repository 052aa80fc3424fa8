import { Schema } from "effect"
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { ChatPlatformError } from "../../../src/ports/ChatPlatform.ts"
import {
  buttonInputIssues,
  buttonsWithInputs,
  componentsOf,
  contentChanged,
  type LibrarySnapshot,
  normalTemplateName
} from "../../../src/templates/Adoption.ts"
import { adoptFailure, statusOf } from "../../../src/templates/AdoptionFlow.ts"
import { entryFragments, facetsOf, type LibraryEntry, libraryEntryOf, LibraryTemplateEntry, libraryQueryKey, normalQuery } from "../../../src/templates/LibraryEntry.ts"
import { placeholdersOf, sendComponentsOf } from "../../../src/templates/TemplateParameters.ts"

const entry = (overrides: Partial<LibraryEntry> = {}): LibraryEntry => ({
  ...libraryEntryOf({
    name: "order_confirmation_1",
    language: "en_US",
    category: "UTILITY",
    topic: "ORDER_MANAGEMENT",
    usecase: "ORDER_CONFIRMATION",
    industry: ["E_COMMERCE"],
    header: "Order confirmed",
    body: "Hi {{1}}, thank you for your order {{2}}.",
    body_params: ["Maria", "#12345"],
    buttons: [
      { type: "URL", text: "View order", url: "https://www.example.com/{{1}}" },
      { type: "QUICK_REPLY", text: "Thanks" },
      { type: "PHONE_NUMBER", text: "Call us", phone_number: "+15555550100" }
    ]
  }),
  ...overrides
})

const snapshotOf = (e: LibraryEntry, changes: Partial<LibrarySnapshot> = {}): LibrarySnapshot => ({
  header: e.header,
  body: e.body,
  footer: e.footer,
  ...changes
})

describe("library entries", () => {
  it("take the operator's entry into the spec's shape, unused button fields null, nothing else kept", () => {
    const e = entry()
    // The browse answer is written without passing through its schema: an entry must be exactly the wire shape.
    const withExtras = libraryEntryOf({ ...e, header: "H", buttons: [], sample_header: "x", id: "7" })
    expect(Schema.decodeUnknownSync(LibraryTemplateEntry, { onExcessProperty: "error" })({ ...withExtras, already_added: false }))
      .toEqual({ ...withExtras, already_added: false })
    expect(e.buttons[1]).toEqual({ type: "QUICK_REPLY", text: "Thanks", url: null, phone_number: null, otp_type: null })
    expect(e).toMatchObject({ footer: null, body_param_types: [], requires_input: true, id: "order_confirmation_1:en_US" })
  })
  it("are written as JSON text around already_added, exactly as the whole entry would be", () => {
    for (const e of [entry(), libraryEntryOf({ name: "q\"uote", language: "en_US", category: "UTILITY", body: "\u2028 {{1}} 🚀", footer: "f" })]) {
      const [head, tail] = entryFragments(e)
      for (const added of [true, false]) {
        expect(`${head}${added}${tail}`).toBe(JSON.stringify(Schema.encodeSync(LibraryTemplateEntry)({ ...e, already_added: added })))
      }
    }
  })
  it("need input for every URL or phone button, whatever destination the catalog shows", () => {
    // The catalog ships placeholder destinations: a real-looking number or domain there is still not the caller's.
    const withButtons = (...buttons: ReadonlyArray<Record<string, unknown>>) =>
      libraryEntryOf({ name: "x", language: "en_US", category: "UTILITY", body: "b", buttons }).requires_input
    expect(withButtons({ type: "PHONE_NUMBER", text: "Call", phone_number: "+14155552671" })).toBe(true)
    expect(withButtons({ type: "PHONE_NUMBER", text: "Call", phone_number: "+1 555-555-0100" })).toBe(true)
    expect(withButtons({ type: "PHONE_NUMBER", text: "Call" })).toBe(true)
    expect(withButtons({ type: "URL", text: "Open", url: "https://shop.acme.io/orders/{{1}}" })).toBe(true)
    expect(withButtons({ type: "URL", text: "Open", url: "https://www.example.com/{{1}}" })).toBe(true)
    expect(withButtons({ type: "url", text: "Open", url: "https://acme.io/" })).toBe(true)
    expect(withButtons({ type: "QUICK_REPLY", text: "ok" }, { type: "phone_number", phone_number: "+442079460000" })).toBe(true)
    expect(withButtons({ type: "QUICK_REPLY", text: "ok" })).toBe(false)
    expect(withButtons({ type: "OTP", text: "Copy code", otp_type: "COPY_CODE" })).toBe(false)
    expect(withButtons()).toBe(false)
  })
  it("ask for every destination at adoption when the catalog shows a real-looking one", () => {
    const realLooking = libraryEntryOf({
      name: "support_contact_1",
      language: "en_US",
      category: "UTILITY",
      body: "b",
      buttons: [{ type: "PHONE_NUMBER", text: "Call us", phone_number: "+14155552671" }]
    })
    expect(buttonInputIssues(realLooking, undefined)).toEqual([
      expect.objectContaining({ loc: ["body", "button_inputs"], type: "missing" })
    ])
    expect(buttonInputIssues(realLooking, [{ type: "PHONE_NUMBER", phone_number: "+442079460000" }])).toEqual([])
  })
  it("facet the matched set: distinct values, sorted, industries flattened", () => {
    const facets = facetsOf([
      entry(),
      entry({ language: "es_ES", topic: "PAYMENTS", industry: ["FINANCIAL_SERVICES", "E_COMMERCE"] })
    ])
    expect(facets).toEqual({
      languages: ["en_US", "es_ES"],
      topics: ["ORDER_MANAGEMENT", "PAYMENTS"],
      usecases: ["ORDER_CONFIRMATION"],
      industries: ["E_COMMERCE", "FINANCIAL_SERVICES"]
    })
  })
  it("key queries by their trimmed filters, blanks dropped", () => {
    expect(normalQuery({ language: " en_US ", search: "  ", topic: "X" })).toEqual({ topic: "X", language: "en_US" })
    expect(libraryQueryKey(normalQuery({ language: "en_US" }))).toBe(libraryQueryKey({ language: "en_US", search: "" }))
    expect(libraryQueryKey({ search: "a" })).not.toBe(libraryQueryKey({ name: "a" }))
  })
})

describe("adoption", () => {
  it("normalises names to lower case with single underscores", () => {
    expect(normalTemplateName("Order Confirmation-1")).toBe("order_confirmation_1")
    expect(normalTemplateName("  Réservation   confirmée!! ")).toBe("reservation_confirmee")
    expect(normalTemplateName("__a__b__")).toBe("a_b")
    expect(normalTemplateName("!!!")).toBe("")
  })

  it("counts only header, body and footer as content: not the name, not the buttons", () => {
    const e = entry()
    expect(contentChanged(e, undefined)).toBe(false)
    expect(contentChanged(e, snapshotOf(e, { name: "renamed", buttons: [{ type: "URL", url: "https://acme.io/{{1}}" }] }))).toBe(false)
    expect(contentChanged(e, snapshotOf(e, { footer: "" }))).toBe(false)
    expect(contentChanged(e, snapshotOf(e, { body: `${e.body} ` }))).toBe(true)
    expect(contentChanged(e, snapshotOf(e, { header: null }))).toBe(true)
    expect(contentChanged(e, snapshotOf(e, { footer: "Reply STOP to opt out" }))).toBe(true)
  })

  it("any change of wording is a change, whatever the rest of the snapshot says (property)", () => {
    const e = entry()
    fc.assert(fc.property(
      fc.record({ header: fc.option(fc.string(), { nil: null }), body: fc.string(), footer: fc.option(fc.string(), { nil: null }) }),
      fc.string(),
      (wording, name) => {
        const blank = (v: string | null) => (v === null || v.trim() === "" ? null : v)
        const expected = blank(wording.header) !== e.header || wording.body !== e.body || blank(wording.footer) !== e.footer
        expect(contentChanged(e, { ...wording, name })).toBe(expected)
      }
    ))
  })

  const url = (base: string, example?: string) => ({ type: "URL" as const, url: { base_url: base, ...(example === undefined ? {} : { url_suffix_example: example }) } })
  const phone = (number: string) => ({ type: "PHONE_NUMBER" as const, phone_number: number })

  it("takes one input per URL or phone button, in order", () => {
    expect(buttonInputIssues(entry(), [url("https://acme.io/o/{{1}}", "https://acme.io/o/123"), phone("+14155552671")])).toEqual([])
    expect(buttonInputIssues(entry(), [url("https://acme.io/help")]).map((i) => i.loc)).toEqual([["body", "button_inputs"]])
    expect(buttonInputIssues(entry(), undefined).map((i) => i.type)).toEqual(["missing"])
    expect(buttonInputIssues(entry({ buttons: [], requires_input: false }), undefined)).toEqual([])
    expect(buttonInputIssues(entry(), [phone("+14155552671"), url("https://acme.io")]).map((i) => i.loc))
      .toEqual([["body", "button_inputs", 0, "type"], ["body", "button_inputs", 1, "type"]])
  })

  it("names the element and field of each bad input", () => {
    const locs = (inputs: Parameters<typeof buttonInputIssues>[1]) => buttonInputIssues(entry(), inputs).map((i) => i.loc.join("."))
    expect(locs([url("https://acme.io/{{1}}/{{2}}", "x"), phone("+14155552671")])).toEqual(["body.button_inputs.0.url.base_url"])
    expect(locs([url("https://acme.io/{{1}}"), phone("+14155552671")])).toEqual(["body.button_inputs.0.url.url_suffix_example"])
    expect(locs([url("https://acme.io/o/{{1}}", "https://other.io/o/1"), phone("+14155552671")])).toEqual(["body.button_inputs.0.url.url_suffix_example"])
    expect(locs([url("ftp://acme.io/{{1}}", "ftp://acme.io/1"), phone("+14155552671")])).toEqual(["body.button_inputs.0.url.base_url"])
    expect(locs([url("https://acme.io/o/{{1}}", "https://acme.io/o/1"), phone("4155552671")])).toEqual(["body.button_inputs.1.phone_number"])
    expect(locs([url("https://acme.io/o/{{1}}", "https://acme.io/o/1"), { type: "PHONE_NUMBER" }])).toEqual(["body.button_inputs.1.phone_number"])
  })

  it("checks an authentication button's otp_type, and refuses inputs for buttons the entry lacks", () => {
    const otp = libraryEntryOf({
      name: "verification_code_1",
      language: "en_US",
      category: "AUTHENTICATION",
      body: "{{1}} is your verification code.",
      buttons: [{ type: "OTP", text: "Copy code", otp_type: "COPY_CODE" }]
    })
    expect(buttonInputIssues(otp, [{ type: "OTP", otp_type: "ONE_TAP" }])).toEqual([])
    expect(buttonInputIssues(otp, [{ type: "OTP", otp_type: "TWO_TAP" }]).map((i) => i.loc)).toEqual([["body", "button_inputs", 0, "otp_type"]])
    expect(buttonInputIssues(otp, [{ type: "FLOW" }]).map((i) => i.loc)).toEqual([["body", "button_inputs", 0, "type"]])
  })

  it("applies inputs to the buttons and writes the operator's components", () => {
    const e = entry()
    const buttons = buttonsWithInputs(e.buttons, [url("https://acme.io/o/{{1}}", "https://acme.io/o/123"), phone("+14155552671")])
    const components = componentsOf(e, buttons)
    expect(components).toEqual([
      { type: "HEADER", format: "TEXT", text: "Order confirmed" },
      { type: "BODY", text: e.body, example: { body_text: [["Maria", "#12345"]] } },
      {
        type: "BUTTONS",
        buttons: [
          { type: "URL", text: "View order", url: "https://acme.io/o/{{1}}", example: ["https://acme.io/o/123"] },
          { type: "QUICK_REPLY", text: "Thanks" },
          { type: "PHONE_NUMBER", text: "Call us", phone_number: "+14155552671" }
        ]
      }
    ])
  })

  it("reads the operator's status in lower case, reinstated as approved", () => {
    expect(statusOf("APPROVED")).toBe("approved")
    expect(statusOf("REINSTATED")).toBe("approved")
    expect(statusOf("PENDING")).toBe("pending")
  })

  it("answers failures with a status that says whether a retry is worthwhile", () => {
    const failure = (kind: ChatPlatformError["kind"], extra: { code?: number; subcode?: number; httpStatus?: number } = {}) =>
      adoptFailure(
        new ChatPlatformError({
          kind,
          code: extra.code ?? 100,
          subcode: extra.subcode ?? null,
          message: "(#100) Invalid parameter",
          userTitle: "Title",
          userMessage: "What went wrong",
          fbtraceId: "AbC123",
          httpStatus: extra.httpStatus ?? 400
        }),
        { name: "n", language: "en_US", category: "UTILITY" }
      )
    expect(failure("rate_limited", { code: 80007 })).toMatchObject({ status: 429, headers: { "retry-after": "60" } })
    expect(failure("transient", { code: 2, httpStatus: 503 })).toMatchObject({ status: 503 })
    expect(failure("auth", { code: 190, httpStatus: 401 }).status).toBe(502)
    expect(failure("other", { subcode: 2388024 }).status).toBe(409)
    expect(failure("template", { code: 132000 }).status).toBe(422)
    expect(failure("other", { httpStatus: 500 }).status).toBe(502)
    expect(failure("rate_limited", { code: 80007 }).body).toEqual({
      success: false,
      id: null,
      template_id: null,
      name: "n",
      language: "en_US",
      status: null,
      category: "UTILITY",
      already_existed: false,
      error: "Title: What went wrong",
      error_code: 80007,
      error_subcode: null,
      error_is_retryable: true,
      fbtrace_id: "AbC123"
    })
  })
})

describe("template parameters", () => {
  const components = componentsOf(
    { header: "Order {{1}}", body: "Hi {{1}}, order {{2}} ships {{3}}.", footer: null, body_params: ["Maria", "#1", "today"] },
    [
      { type: "URL", text: "Track", url: "https://acme.io/t/{{1}}", phone_number: null, otp_type: null, example: ["https://acme.io/t/9"] },
      { type: "QUICK_REPLY", text: "Thanks", url: null, phone_number: null, otp_type: null }
    ]
  )
  it("lists the header's variables, the body's, then each URL variable, with examples", () => {
    expect(placeholdersOf(components)).toEqual([
      { component: "header", index: 1, example: null },
      { component: "body", index: 1, example: "Maria" },
      { component: "body", index: 2, example: "#1" },
      { component: "body", index: 3, example: "today" },
      { component: "button", index: 0, example: "https://acme.io/t/9" }
    ])
  })
  it("fills them in the operator's send shape, in order", () => {
    expect(sendComponentsOf(components, ["#7", "Ana", "#7", "Monday", "7"])).toEqual([
      { type: "header", parameters: [{ type: "text", text: "#7" }] },
      { type: "body", parameters: [{ type: "text", text: "Ana" }, { type: "text", text: "#7" }, { type: "text", text: "Monday" }] },
      { type: "button", sub_type: "url", index: "0", parameters: [{ type: "text", text: "7" }] }
    ])
  })
  it("repeats an authentication template's code on its code button", () => {
    const otp = componentsOf({ header: null, body: "{{1}} is your code.", footer: null, body_params: ["123456"] }, [
      { type: "OTP", text: "Copy code", url: null, phone_number: null, otp_type: "COPY_CODE" }
    ])
    expect(placeholdersOf(otp)).toHaveLength(1)
    expect(sendComponentsOf(otp, ["842913"])).toEqual([
      { type: "body", parameters: [{ type: "text", text: "842913" }] },
      { type: "button", sub_type: "url", index: "0", parameters: [{ type: "text", text: "842913" }] }
    ])
  })
})
