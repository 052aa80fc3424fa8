import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { MASK } from "../../../src/flows/FlowSession.ts"
import { planWriteback, type WritebackInput, type WritebackResult, withFailures } from "../../../src/flows/Writeback.ts"
import type { ContactRecord } from "../../../src/ports/ContactStore.ts"
import type { CustomFieldRecord, WritebackMapping } from "../../../src/ports/FlowStore.ts"

const SELF = "contact-self"
const OTHER = "contact-other"
const AT = "2026-03-01T10:00:00.000Z"

const CONTACT: ContactRecord = {
  id: SELF,
  tenant_id: "tenant-1",
  name: "Old Name",
  phone: "+14155550100",
  email: "self@example.com",
  language: "en",
  custom_fields: {},
  created_at: AT,
  updated_at: null
}

const field = (id: string, key: string, type: CustomFieldRecord["type"], editable = true): CustomFieldRecord => ({
  id,
  tenant_id: "tenant-1",
  key,
  type,
  editable,
  created_at: AT
})
const CUSTOM_FIELDS = new Map([
  ["cf-city", field("cf-city", "city", "text")],
  ["cf-size", field("cf-size", "shoe_size", "number")],
  ["cf-vip", field("cf-vip", "is_vip", "boolean")],
  ["cf-birthday", field("cf-birthday", "birthday", "date")],
  ["cf-score", field("cf-score", "score", "number", false)]
])
const LISTS = new Map<string, { readonly type: "static" | "dynamic" }>([
  ["list-news", { type: "static" }],
  ["list-promo", { type: "static" }],
  ["list-active", { type: "dynamic" }]
])
const OWNERS = new Map([
  ["self@example.com", SELF],
  ["taken@example.com", OTHER],
  ["+14155550100", SELF],
  ["+14155550199", OTHER]
])

const input = (
  mappings: ReadonlyArray<WritebackMapping>,
  answers: Readonly<Record<string, unknown>>,
  overrides: Partial<WritebackInput> = {}
): WritebackInput => ({
  contact: CONTACT,
  mappings,
  answers,
  sensitive: new Set(),
  inputTypes: new Map(),
  customFields: CUSTOM_FIELDS,
  tags: new Set(["tag-vip", "tag-lead"]),
  lists: LISTS,
  emailOwner: (email) => OWNERS.get(email) ?? null,
  phoneOwner: (phone) => OWNERS.get(phone) ?? null,
  ...overrides
})
const plan = (
  mappings: ReadonlyArray<WritebackMapping>,
  answers: Readonly<Record<string, unknown>>,
  overrides: Partial<WritebackInput> = {}
) => planWriteback(input(mappings, answers, overrides))

const toField = (name: string, target: string): WritebackMapping => ({ input: name, target: "contact_field", field: target })
const toCustom = (name: string, id: string): WritebackMapping => ({ input: name, target: "custom_field", custom_field_id: id })
const toTag = (name: string, id: string): WritebackMapping => ({ input: name, target: "tag", tag_id: id })
const toSubscription = (name: string, id: string): WritebackMapping => ({ input: name, target: "subscription", list_id: id })
const toUnsubscription = (name: string, id: string): WritebackMapping => ({ input: name, target: "unsubscription", list_id: id })

const EMPTY: Omit<WritebackResult, "state"> = {
  contact_fields: {},
  custom_fields: [],
  tags: [],
  subscriptions: [],
  unsubscriptions: [],
  skipped: [],
  media: {}
}

describe("planWriteback: contact fields", () => {
  it("writes name (trimmed), email (lower-cased), phone (E.164) and language to the session's contact", () => {
    const result = plan(
      [toField("n", "name"), toField("e", "email"), toField("p", "phone"), toField("l", "language")],
      { n: "  Ada Lovelace ", e: " Ada@Example.COM", p: "+44 (7700) 900-123", l: "pt_BR" }
    )
    const written = { name: "Ada Lovelace", email: "ada@example.com", phone: "+447700900123", language: "pt_BR" }
    expect(result.contactId).toBe(SELF)
    expect(result.contactFields).toEqual(written)
    expect(result.result).toEqual({ ...EMPTY, state: "done", contact_fields: written })
  })

  it("the contact's own email and phone may be written again", () => {
    const result = plan([toField("e", "email"), toField("p", "phone")], { e: "SELF@example.com", p: "+1 415 555 0100" })
    expect(result.contactFields).toEqual({ email: "self@example.com", phone: "+14155550100" })
    expect(result.result.state).toBe("done")
  })

  it.each<[string, string, unknown, string]>([
    ["email held by another contact", "email", "Taken@example.com", "owned_by_other_contact"],
    ["phone held by another contact", "phone", "+1 415 555 0199", "owned_by_other_contact"],
    ["email without a domain dot", "email", "ada@example", "invalid_email"],
    ["email with a space", "email", "ada lovelace@example.com", "invalid_email"],
    ["email not a string", "email", true, "invalid_email"],
    ["phone without a plus", "phone", "004477009001", "invalid_phone"],
    ["phone with letters", "phone", "+44 77OO 900123", "invalid_phone"],
    ["phone too long", "phone", "+1234567890123456", "invalid_phone"],
    ["language in prose", "language", "English!", "invalid_language"],
    ["language an array", "language", ["en"], "invalid_language"],
    ["blank name", "name", "   ", "invalid_name"],
    ["name too long", "name", "x".repeat(256), "invalid_name"],
    ["name a boolean", "name", false, "invalid_name"],
    ["a field contacts do not have", "nickname", "Ada", "unknown_field"]
  ])("%s: skipped (%s, %j → %s)", (_, target, value, reason) => {
    const result = plan([toField("answer", target)], { answer: value })
    expect(result.contactFields).toEqual({})
    expect(result.result).toEqual({
      ...EMPTY,
      state: "partial",
      skipped: [{ input: "answer", target: "contact_field", field: target, reason }]
    })
  })

  it("a media input is never a field's value", () => {
    const result = plan([toField("photo", "name")], { photo: [{ id: "m1" }] }, { inputTypes: new Map([["photo", "PhotoPicker"]]) })
    expect(result.result.skipped).toEqual([{ input: "photo", target: "contact_field", field: "name", reason: "media_input" }])
  })

  it("the first mapping of a field wins; a later one is skipped as duplicate_field", () => {
    const result = plan([toField("a", "name"), toField("b", "name"), toField("c", "name")], { a: "  ", b: "Ada", c: "Grace" })
    expect(result.contactFields).toEqual({ name: "Ada" })
    expect(result.result.skipped).toEqual([
      { input: "a", target: "contact_field", field: "name", reason: "invalid_name" },
      { input: "c", target: "contact_field", field: "name", reason: "duplicate_field" }
    ])
  })

  it("a sensitive input's value is written but shown masked", () => {
    const result = plan([toField("secret_mail", "email"), toField("n", "name")], { secret_mail: "Hidden@Example.org", n: "Ada" }, {
      sensitive: new Set(["secret_mail"])
    })
    expect(result.contactFields).toEqual({ email: "hidden@example.org", name: "Ada" })
    expect(result.result.contact_fields).toEqual({ email: MASK, name: "Ada" })
    expect(JSON.stringify(result.result)).not.toContain("hidden")
  })
})

describe("planWriteback: custom fields", () => {
  it.each<[string, string, unknown, string | number | boolean]>([
    ["text", "cf-city", "Lisbon", "Lisbon"],
    ["text from option ids", "cf-city", ["opt_1", "opt_2"], "opt_1, opt_2"],
    ["text from a number", "cf-city", 12, "12"],
    ["number", "cf-size", 42.5, 42.5],
    ["number from text", "cf-size", " 43 ", 43],
    ["number from text with an exponent", "cf-size", "4.5e1", 45],
    ["boolean", "cf-vip", false, false],
    ["boolean from text", "cf-vip", "TRUE", true],
    ["date", "cf-birthday", "2024-02-29", "2024-02-29"]
  ])("%s: ok", (_, id, value, written) => {
    const result = plan([toCustom("answer", id)], { answer: value })
    const key = CUSTOM_FIELDS.get(id)!.key
    expect(result.customFields).toEqual({ [key]: written })
    expect(result.result).toEqual({ ...EMPTY, state: "done", custom_fields: [{ custom_field_id: id, key, status: "ok" }] })
  })

  it.each<[string, string, unknown, string]>([
    ["text from an object", "cf-city", { a: 1 }, "expected_text"],
    ["text from null", "cf-city", null, "expected_text"],
    ["number from words", "cf-size", "forty", "expected_number"],
    ["number from a boolean", "cf-size", true, "expected_number"],
    ["number from an empty string", "cf-size", "", "expected_number"],
    ["boolean from yes", "cf-vip", "yes", "expected_boolean"],
    ["boolean from an array", "cf-vip", ["true"], "expected_boolean"]
  ])("%s: invalid (%s)", (_, id, value, reason) => {
    const result = plan([toCustom("answer", id)], { answer: value })
    expect(result.customFields).toEqual({})
    expect(result.result).toEqual({
      ...EMPTY,
      state: "partial",
      custom_fields: [{ custom_field_id: id, key: CUSTOM_FIELDS.get(id)!.key, status: "invalid", reason }]
    })
  })

  it.each(["2023-02-29", "2024-13-01", "2024-04-31", "29/02/2024", "2024-2-9", "1717200000000", ""])(
    "date %j: invalid, and skipped as invalid_date",
    (value) => {
      const result = plan([toCustom("answer", "cf-birthday")], { answer: value })
      expect(result.customFields).toEqual({})
      expect(result.result).toEqual({
        ...EMPTY,
        state: "partial",
        custom_fields: [{ custom_field_id: "cf-birthday", key: "birthday", status: "invalid", reason: "invalid_date" }],
        skipped: [{ input: "answer", target: "custom_field", field: "birthday", reason: "invalid_date" }]
      })
    }
  )

  it("unknown id: not_found (no key); not editable: not_editable", () => {
    const result = plan([toCustom("a", "cf-nosuch"), toCustom("b", "cf-score")], { a: "x", b: 3 })
    expect(result.customFields).toEqual({})
    expect(result.result.custom_fields).toEqual([
      { custom_field_id: "cf-nosuch", key: null, status: "not_found" },
      { custom_field_id: "cf-score", key: "score", status: "not_editable" }
    ])
    expect(result.result.state).toBe("partial")
  })

  it("a media input: invalid (media_input)", () => {
    const result = plan([toCustom("doc", "cf-city")], { doc: [{ id: "m1" }] }, { inputTypes: new Map([["doc", "DocumentPicker"]]) })
    expect(result.result.custom_fields).toEqual([{ custom_field_id: "cf-city", key: "city", status: "invalid", reason: "media_input" }])
  })

  it("a second mapping to the same field: duplicate_field", () => {
    const result = plan([toCustom("a", "cf-city"), toCustom("b", "cf-city")], { a: "Lisbon", b: "Porto" })
    expect(result.customFields).toEqual({ city: "Lisbon" })
    expect(result.result.custom_fields).toEqual([{ custom_field_id: "cf-city", key: "city", status: "ok" }])
    expect(result.result.skipped).toEqual([{ input: "b", target: "custom_field", field: "city", reason: "duplicate_field" }])
  })
})

describe("planWriteback: tags", () => {
  it.each<[string, unknown]>([["true", true], ["a string", "yes"], ["option ids", ["opt_1"]]])("applied when the answer is %s", (_, value) => {
    const result = plan([toTag("t", "tag-vip")], { t: value })
    expect(result.tagIds).toEqual(["tag-vip"])
    expect(result.result).toEqual({ ...EMPTY, state: "done", tags: [{ tag_id: "tag-vip", status: "ok" }] })
  })

  it.each<[string, unknown]>([["false", false], ["empty", ""], ["blank", "  "], ["no option", []], ["null", null], ["a number", 1]])(
    "not applied when the answer is %s: skipped as not_selected",
    (_, value) => {
      const result = plan([toTag("t", "tag-vip")], { t: value })
      expect(result.tagIds).toEqual([])
      expect(result.result).toEqual({
        ...EMPTY,
        state: "partial",
        skipped: [{ input: "t", target: "tag", field: "tag-vip", reason: "not_selected" }]
      })
    }
  )

  it("an unknown tag: not_found", () => {
    const result = plan([toTag("t", "tag-nosuch")], { t: true })
    expect(result.tagIds).toEqual([])
    expect(result.result.tags).toEqual([{ tag_id: "tag-nosuch", status: "not_found" }])
  })

  it("two inputs tagging alike: applied once, both reported ok", () => {
    const result = plan([toTag("a", "tag-vip"), toTag("b", "tag-vip")], { a: true, b: ["x"] })
    expect(result.tagIds).toEqual(["tag-vip"])
    expect(result.result.tags).toEqual([{ tag_id: "tag-vip", status: "ok" }, { tag_id: "tag-vip", status: "ok" }])
    expect(result.result.state).toBe("done")
  })
})

describe("planWriteback: subscriptions", () => {
  it("a ticked opt-in subscribes", () => {
    const result = plan([toSubscription("optin", "list-news")], { optin: true })
    expect(result.subscribe).toEqual(["list-news"])
    expect(result.result).toEqual({ ...EMPTY, state: "done", subscriptions: [{ list_id: "list-news", status: "ok" }] })
  })

  it.each<[string, unknown]>([["unticked", false], ["a string", "true"], ["option ids", ["yes"]]])(
    "an opt-in %s: skipped as consent_required, no subscriptions entry",
    (_, value) => {
      const result = plan([toSubscription("optin", "list-news")], { optin: value })
      expect(result.subscribe).toEqual([])
      expect(result.result).toEqual({
        ...EMPTY,
        state: "partial",
        skipped: [{ input: "optin", target: "subscription", field: "list-news", reason: "consent_required" }]
      })
    }
  )

  it("an opt-in not in the answers: not_offered", () => {
    const result = plan([toSubscription("optin", "list-news")], { other: true })
    expect(result.subscribe).toEqual([])
    expect(result.result).toEqual({ ...EMPTY, state: "partial", subscriptions: [{ list_id: "list-news", status: "not_offered" }] })
  })

  it("unknown list: not_found; dynamic list: list_type_not_allowed", () => {
    const result = plan([toSubscription("a", "list-nosuch"), toSubscription("b", "list-active")], { a: true, b: true })
    expect(result.subscribe).toEqual([])
    expect(result.result.subscriptions).toEqual([
      { list_id: "list-nosuch", status: "not_found" },
      { list_id: "list-active", status: "list_type_not_allowed" }
    ])
  })
})

describe("planWriteback: unsubscriptions", () => {
  it("a request unsubscribes", () => {
    const result = plan([toUnsubscription("leave", "list-promo")], { leave: true })
    expect(result.unsubscribe).toEqual(["list-promo"])
    expect(result.result).toEqual({ ...EMPTY, state: "done", unsubscriptions: [{ list_id: "list-promo", status: "ok" }] })
  })

  it.each<[string, string, unknown, string]>([
    ["not requested", "list-promo", false, "not_requested"],
    ["no option picked", "list-promo", [], "not_requested"],
    ["an unknown list", "list-nosuch", true, "list_not_found"],
    ["a dynamic list", "list-active", true, "list_type_not_allowed"]
  ])("%s: skipped (%s)", (_, listId, value, reason) => {
    const result = plan([toUnsubscription("leave", listId)], { leave: value })
    expect(result.unsubscribe).toEqual([])
    expect(result.result).toEqual({ ...EMPTY, state: "partial", unsubscriptions: [{ list_id: listId, status: "skipped", reason }] })
  })

  it("not in the answers: nothing recorded", () => {
    expect(plan([toUnsubscription("leave", "list-promo")], {}).result).toEqual({ ...EMPTY, state: "done" })
  })

  it("a list both subscribed and unsubscribed: the later mapping is skipped as conflicting_mapping", () => {
    const first = plan([toSubscription("in", "list-news"), toUnsubscription("out", "list-news")], { in: true, out: true })
    expect(first.subscribe).toEqual(["list-news"])
    expect(first.unsubscribe).toEqual([])
    expect(first.result.skipped).toEqual([{ input: "out", target: "unsubscription", field: "list-news", reason: "conflicting_mapping" }])
    const second = plan([toUnsubscription("out", "list-news"), toSubscription("in", "list-news")], { in: true, out: true })
    expect(second.subscribe).toEqual([])
    expect(second.unsubscribe).toEqual(["list-news"])
    expect(second.result.skipped).toEqual([{ input: "in", target: "subscription", field: "list-news", reason: "conflicting_mapping" }])
  })
})

describe("planWriteback: the whole", () => {
  it("an adopted session (no contact) writes nothing: skipped", () => {
    const result = plan([toField("n", "name"), toTag("t", "tag-vip"), toSubscription("o", "list-news")], { n: "Ada", t: true, o: true }, {
      contact: null
    })
    expect(result).toEqual({
      contactId: null,
      contactFields: {},
      customFields: {},
      tagIds: [],
      subscribe: [],
      unsubscribe: [],
      result: { ...EMPTY, state: "skipped" }
    })
  })

  it("inputs not answered record nothing for contact fields, custom fields and tags", () => {
    const result = plan([toField("n", "name"), toCustom("c", "cf-city"), toTag("t", "tag-vip")], {})
    expect(result.result).toEqual({ ...EMPTY, state: "done" })
  })

  it("no mappings: done, nothing to write", () => {
    expect(plan([], { anything: "x" }).result).toEqual({ ...EMPTY, state: "done" })
  })

  it("an input named like an Object property is not answered unless it is", () => {
    const result = plan([toField("constructor", "name"), toTag("toString", "tag-vip")], {})
    expect(result.result).toEqual({ ...EMPTY, state: "done" })
  })

  it("every target together, in mapping order", () => {
    const result = plan(
      [
        toField("name", "name"),
        toField("mail", "email"),
        toCustom("size", "cf-size"),
        toCustom("birthday", "cf-birthday"),
        toTag("vip", "tag-vip"),
        toTag("lead", "tag-lead"),
        toSubscription("news", "list-news"),
        toSubscription("promo", "list-promo"),
        toUnsubscription("stop_promo", "list-promo")
      ],
      { name: "Ada", mail: "taken@example.com", size: "41", birthday: "1990-12-10", vip: true, lead: false, news: true, stop_promo: true }
    )
    expect(result).toEqual({
      contactId: SELF,
      contactFields: { name: "Ada" },
      customFields: { shoe_size: 41, birthday: "1990-12-10" },
      tagIds: ["tag-vip"],
      subscribe: ["list-news"],
      unsubscribe: ["list-promo"],
      result: {
        state: "partial",
        contact_fields: { name: "Ada" },
        custom_fields: [
          { custom_field_id: "cf-size", key: "shoe_size", status: "ok" },
          { custom_field_id: "cf-birthday", key: "birthday", status: "ok" }
        ],
        tags: [{ tag_id: "tag-vip", status: "ok" }],
        subscriptions: [{ list_id: "list-news", status: "ok" }, { list_id: "list-promo", status: "not_offered" }],
        unsubscriptions: [{ list_id: "list-promo", status: "ok" }],
        skipped: [
          { input: "mail", target: "contact_field", field: "email", reason: "owned_by_other_contact" },
          { input: "lead", target: "tag", field: "tag-lead", reason: "not_selected" }
        ],
        media: {}
      }
    })
  })
})

describe("withFailures", () => {
  const planned = plan(
    [toTag("a", "tag-vip"), toTag("b", "tag-nosuch"), toSubscription("c", "list-news"), toUnsubscription("d", "list-promo")],
    { a: true, b: true, c: true, d: true }
  ).result
  const allOk = plan([toTag("a", "tag-vip"), toSubscription("c", "list-news")], { a: true, c: true }).result

  it("no failures: the result as planned", () => {
    expect(withFailures(allOk, {})).toEqual(allOk)
    expect(withFailures(planned, {})).toEqual(planned)
  })

  it("a failed write becomes error and the state partial", () => {
    expect(withFailures(allOk, { subscriptions: ["list-news"] })).toEqual({
      ...allOk,
      state: "partial",
      subscriptions: [{ list_id: "list-news", status: "error" }]
    })
    const failed = withFailures(planned, { tags: ["tag-vip", "tag-nosuch"], unsubscriptions: ["list-promo"] })
    expect(failed.tags).toEqual([{ tag_id: "tag-vip", status: "error" }, { tag_id: "tag-nosuch", status: "not_found" }])
    expect(failed.unsubscriptions).toEqual([{ list_id: "list-promo", status: "error" }])
    expect(failed.subscriptions).toEqual(planned.subscriptions)
    expect(failed.state).toBe("partial")
  })

  it("all: error, every planned write becomes error", () => {
    expect(withFailures(allOk, { all: true })).toEqual({
      ...allOk,
      state: "error",
      tags: [{ tag_id: "tag-vip", status: "error" }],
      subscriptions: [{ list_id: "list-news", status: "error" }]
    })
    expect(withFailures(withFailures(allOk, { all: true }), {}).state).toBe("error")
  })

  it("a skipped result (no contact) stays skipped", () => {
    const skipped = plan([toTag("a", "tag-vip")], { a: true }, { contact: null }).result
    expect(withFailures(skipped, { all: true })).toEqual(skipped)
  })
})

// ---------------------------------------------------------------------------------------------
// The property: generated contacts (or none), mappings to all five targets (unknown ids included),
// answers of every platform type (and missing inputs), sensitive inputs and who holds which email
// and phone. Sensitive answers come from their own pool, marked `zyx` / `99988877`, so any trace of
// them in a result is found by searching its JSON.

const INPUTS = ["in_a", "in_b", "in_c", "in_d", "in_e", "in_f", "in_g", "in_h"]
const CONTACT_FIELDS = ["name", "email", "phone", "language", "nickname"]
const CF_IDS = ["cf-1", "cf-2", "cf-3", "cf-4", "cf-5"]
const TAG_IDS = ["tag-1", "tag-2", "tag-3"]
const LIST_IDS = ["list-1", "list-2", "list-3"]
const OTHERS = ["contact-other-1", "contact-other-2"]
const INPUT_TYPES = ["TextInput", "TextArea", "OptIn", "CheckboxGroup", "Dropdown", "DatePicker", "PhotoPicker", "DocumentPicker"]

const EMAILS = ["ada@example.com", "Grace@Example.com", "taken@example.com", "self@example.com"]
const PHONES = ["+44 7700 900123", "+14155550100", "+1 (415) 555-0199", "+33612345678"]
const PLAIN_VALUES: ReadonlyArray<unknown> = [
  "Ada Lovelace",
  "  Grace  ",
  "",
  "   ",
  ...EMAILS,
  "not-an-email",
  "a@b",
  ...PHONES,
  "004477009001",
  "+0123",
  "en",
  "pt_BR",
  "de-CH",
  "English!",
  "2024-02-29",
  "2023-02-29",
  "2024-13-01",
  "10/12/1990",
  "42",
  "-3.5",
  "4.5e1",
  "forty",
  "true",
  "FALSE",
  true,
  false,
  [],
  ["opt_1"],
  ["opt_1", "opt_2"],
  [{ id: "media-1", mime_type: "image/jpeg", file_name: "photo.jpg", sha256: "abc" }],
  null,
  7,
  0,
  { nested: "object" }
]
const SECRET_EMAILS = ["zyx.secret@example.net", "ZYX@Example.net"]
const SECRET_PHONES = ["+1 999 888 7776", "+19998887775"]
const SECRET_VALUES: ReadonlyArray<unknown> = [
  "Zyx Hidden",
  "  zyx  ",
  "zyx",
  ...SECRET_EMAILS,
  "zyx@",
  ...SECRET_PHONES,
  "+0999888777",
  "zyx_ZY",
  "1999888777",
  ["zyx_option"],
  [{ id: "zyx-media", mime_type: "image/png", file_name: "zyx.png" }]
]
const SECRET_MARKERS = ["zyx", "99988877"]

const normalizedEmail = (email: string) => email.trim().toLowerCase()
const normalizedPhone = (phone: string) => phone.replace(/[\s\-.()]/g, "")
const OWNABLE = [...EMAILS, ...SECRET_EMAILS].map(normalizedEmail).concat([...PHONES, ...SECRET_PHONES].map(normalizedPhone))

const mappingArb: fc.Arbitrary<WritebackMapping> = fc.oneof(
  fc.record({ input: fc.constantFrom(...INPUTS), target: fc.constant("contact_field" as const), field: fc.constantFrom(...CONTACT_FIELDS) }),
  fc.record({
    input: fc.constantFrom(...INPUTS),
    target: fc.constant("custom_field" as const),
    custom_field_id: fc.constantFrom(...CF_IDS, "cf-nosuch")
  }),
  fc.record({ input: fc.constantFrom(...INPUTS), target: fc.constant("tag" as const), tag_id: fc.constantFrom(...TAG_IDS, "tag-nosuch") }),
  fc.record({
    input: fc.constantFrom(...INPUTS),
    target: fc.constant("subscription" as const),
    list_id: fc.constantFrom(...LIST_IDS, "list-nosuch")
  }),
  fc.record({
    input: fc.constantFrom(...INPUTS),
    target: fc.constant("unsubscription" as const),
    list_id: fc.constantFrom(...LIST_IDS, "list-nosuch")
  })
)

const contactArb: fc.Arbitrary<ContactRecord | null> = fc.option(
  fc.record({
    email: fc.constantFrom(null, "self@example.com"),
    phone: fc.constantFrom(null, "+14155550100")
  }).map((c): ContactRecord => ({ ...CONTACT, ...c })),
  { freq: 5 }
)

const writebackInputArb: fc.Arbitrary<WritebackInput> = fc
  .record({
    contact: contactArb,
    mappings: fc.array(mappingArb, { maxLength: 12 }),
    sensitive: fc.subarray(INPUTS),
    inputTypes: fc.array(fc.constantFrom(...INPUT_TYPES), { minLength: INPUTS.length, maxLength: INPUTS.length }),
    customFields: fc.array(
      fc.option(fc.record({ type: fc.constantFrom("text", "number", "boolean", "date" as const), editable: fc.boolean() }), {
        freq: 4
      }),
      { minLength: CF_IDS.length, maxLength: CF_IDS.length }
    ),
    tags: fc.subarray(TAG_IDS),
    lists: fc.array(fc.constantFrom(null, "static" as const, "dynamic" as const), {
      minLength: LIST_IDS.length,
      maxLength: LIST_IDS.length
    }),
    owners: fc.array(fc.constantFrom(null, SELF, ...OTHERS), { minLength: OWNABLE.length, maxLength: OWNABLE.length })
  })
  .chain((base) =>
    fc.record(
      Object.fromEntries(INPUTS.map((name) => [name, fc.constantFrom(...(base.sensitive.includes(name) ? SECRET_VALUES : PLAIN_VALUES))])),
      { requiredKeys: [] }
    ).map((answers): WritebackInput => {
      const owners = new Map(OWNABLE.map((value, i) => [value, base.owners[i] ?? null]))
      return {
        contact: base.contact,
        mappings: base.mappings,
        answers: Object.freeze(answers),
        sensitive: new Set(base.sensitive),
        inputTypes: new Map(INPUTS.map((name, i) => [name, base.inputTypes[i]!])),
        customFields: new Map(
          CF_IDS.flatMap((id, i) => {
            const spec = base.customFields[i]
            return spec ? [[id, { ...field(id, `key_${i}`, spec.type, spec.editable) }] as const] : []
          })
        ),
        tags: new Set(base.tags),
        lists: new Map(LIST_IDS.flatMap((id, i) => (base.lists[i] ? [[id, { type: base.lists[i] }] as const] : []))),
        emailOwner: (email) => owners.get(email) ?? null,
        phoneOwner: (phone) => owners.get(phone) ?? null
      }
    })
  )

const unique = (ids: ReadonlyArray<string>) => [...new Set(ids)]
const okIds = <A extends { readonly status: string }>(entries: ReadonlyArray<A>, id: (entry: A) => string) =>
  unique(entries.filter((entry) => entry.status === "ok").map(id))

describe("planWriteback over generated sessions, mappings and answers", () => {
  it("writes only to the session's contact, never leaks a sensitive value, and accounts for every answered mapping", () => {
    fc.assert(
      fc.property(writebackInputArb, (input) => {
        const { contactId, contactFields, customFields, tagIds, subscribe, unsubscribe, result } = planWriteback(input)

        if (input.contact === null) {
          expect({ contactId, contactFields, customFields, tagIds, subscribe, unsubscribe }).toEqual({
            contactId: null,
            contactFields: {},
            customFields: {},
            tagIds: [],
            subscribe: [],
            unsubscribe: []
          })
          expect(result).toEqual({ ...EMPTY, state: "skipped" })
          return
        }

        // Only the session's own contact, and nothing that belongs to another.
        expect(contactId).toBe(input.contact.id)
        if (contactFields.email !== undefined) expect([null, SELF]).toContain(input.emailOwner(contactFields.email))
        if (contactFields.phone !== undefined) expect([null, SELF]).toContain(input.phoneOwner(contactFields.phone))
        if (contactFields.phone !== undefined) expect(contactFields.phone).toMatch(/^\+[1-9]\d{1,14}$/)
        if (contactFields.language !== undefined) expect(contactFields.language).toMatch(/^[A-Za-z]{2,3}(?:[_-][A-Za-z0-9]{2,8})*$/)
        if (contactFields.name !== undefined) expect(contactFields.name.trim()).toBe(contactFields.name)
        expect(Object.keys(contactFields).every((name) => ["name", "email", "phone", "language"].includes(name))).toBe(true)

        // Only existing, editable fields; existing tags; static lists; a subscription only on a ticked opt-in.
        const editableKeys = [...input.customFields.values()].filter((f) => f.editable).map((f) => f.key)
        expect(Object.keys(customFields).every((key) => editableKeys.includes(key))).toBe(true)
        expect(tagIds.every((id) => input.tags.has(id))).toBe(true)
        expect([...subscribe, ...unsubscribe].every((id) => input.lists.get(id)?.type === "static")).toBe(true)
        for (const id of subscribe) {
          expect(input.mappings.some((m) => m.target === "subscription" && m.list_id === id && input.answers[m.input] === true)).toBe(true)
        }
        expect(subscribe.filter((id) => unsubscribe.includes(id))).toEqual([])

        // Sensitive values never appear in the result (mask, never the value).
        const json = JSON.stringify(result).toLowerCase()
        for (const marker of SECRET_MARKERS) expect(json).not.toContain(marker)
        const answered = (m: WritebackMapping) => Object.hasOwn(input.answers, m.input)
        for (const [name, shown] of Object.entries(result.contact_fields)) {
          const sources = input.mappings.filter((m) => m.target === "contact_field" && m.field === name && answered(m))
          if (sources.every((m) => input.sensitive.has(m.input))) expect(shown).toBe(MASK)
          if (sources.every((m) => !input.sensitive.has(m.input))) expect(shown).not.toBe(MASK)
        }

        // The plan and the result say the same.
        expect(Object.keys(result.contact_fields).sort()).toEqual(Object.keys(contactFields).sort())
        expect(Object.keys(customFields).sort()).toEqual(okIds(result.custom_fields, (e) => e.key!).sort())
        expect(tagIds).toEqual(okIds(result.tags, (e) => e.tag_id))
        expect(subscribe).toEqual(okIds(result.subscriptions, (e) => e.list_id))
        expect(unsubscribe).toEqual(okIds(result.unsubscriptions, (e) => e.list_id))

        // Every mapping whose input was answered yields exactly one entry in its section or in skipped
        // (an invalid date both); a subscription whose input was not answered is `not_offered`.
        const count = (target: WritebackMapping["target"], all = false) =>
          input.mappings.filter((m) => m.target === target && (all || answered(m))).length
        const skippedFor = (target: string) => result.skipped.filter((s) => s.target === target)
        expect(Object.keys(result.contact_fields).length + skippedFor("contact_field").length).toBe(count("contact_field"))
        expect(result.custom_fields.length + skippedFor("custom_field").filter((s) => s.reason !== "invalid_date").length).toBe(
          count("custom_field")
        )
        expect(skippedFor("custom_field").filter((s) => s.reason === "invalid_date").length).toBe(
          result.custom_fields.filter((e) => e.reason === "invalid_date").length
        )
        expect(result.tags.length + skippedFor("tag").length).toBe(count("tag"))
        expect(result.subscriptions.length + skippedFor("subscription").length).toBe(count("subscription", true))
        expect(result.subscriptions.filter((e) => e.status === "not_offered").length).toBe(
          input.mappings.filter((m) => m.target === "subscription" && !answered(m)).length
        )
        expect(result.unsubscriptions.length + skippedFor("unsubscription").length).toBe(count("unsubscription"))

        // The state: done when everything is ok and nothing skipped, else partial; never error.
        const allOk = [...result.custom_fields, ...result.tags, ...result.subscriptions, ...result.unsubscriptions].every((e) =>
          e.status === "ok"
        ) && result.skipped.length === 0
        expect(result.state).toBe(allOk ? "done" : "partial")
        expect(result.media).toEqual({})
      }),
      { numRuns: 1000 }
    )
  })

  it("withFailures turns exactly the failed planned writes into error and recomputes the state", () => {
    fc.assert(
      fc.property(
        writebackInputArb,
        fc.subarray(TAG_IDS),
        fc.subarray(LIST_IDS),
        fc.subarray(LIST_IDS),
        fc.boolean(),
        (input, tags, subscriptions, unsubscriptions, all) => {
          const planned = planWriteback(input).result
          const result = withFailures(planned, { tags, subscriptions, unsubscriptions, all })
          if (planned.state === "skipped") {
            expect(result).toEqual(planned)
            return
          }
          const expectStatuses = <A extends { readonly status: string }>(
            before: ReadonlyArray<A>,
            after: ReadonlyArray<A>,
            id: (entry: A) => string,
            failed: ReadonlyArray<string>
          ) => {
            expect(after.length).toBe(before.length)
            before.forEach((entry, i) => {
              const failedNow = entry.status === "ok" && (all || failed.includes(id(entry)))
              expect(after[i]!.status).toBe(failedNow ? "error" : entry.status)
            })
          }
          expectStatuses(planned.tags, result.tags, (e) => e.tag_id, tags)
          expectStatuses(planned.subscriptions, result.subscriptions, (e) => e.list_id, subscriptions)
          expectStatuses(planned.unsubscriptions, result.unsubscriptions, (e) => e.list_id, unsubscriptions)
          expect(result.contact_fields).toEqual(planned.contact_fields)
          expect(result.custom_fields).toEqual(planned.custom_fields)
          expect(result.skipped).toEqual(planned.skipped)
          const allOk = [...result.custom_fields, ...result.tags, ...result.subscriptions, ...result.unsubscriptions].every((e) =>
            e.status === "ok"
          ) && result.skipped.length === 0
          expect(result.state).toBe(all ? "error" : allOk ? "done" : "partial")
        }
      ),
      { numRuns: 500 }
    )
  })
})
