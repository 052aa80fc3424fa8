import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { testDatabases } from "../support/Databases.ts"
import { seededRandom } from "../support/Random.ts"
import { bootstrap, startTestApp, type TestApp } from "../support/TestApp.ts"

const DAY_MS = 86_400_000
const NOT_YOUR_ACCOUNT = { detail: "You are not an owner of that billing account" }

const random = seededRandom()
const tagsGiven = new Set<string>()
// Slugs are unique across the whole service and one database serves a whole suite, so names carry a
// tag: six letters, never one given before in this run.
const tag = (): string => {
  const t = Array.from({ length: 6 }, () => String.fromCharCode(97 + random.int(0, 25))).join("")
  if (tagsGiven.has(t)) return tag()
  tagsGiven.add(t)
  return t
}

describe.each(testDatabases)("POST /tenants on $name", (database) => {
  let test: TestApp
  beforeAll(async () => {
    test = await startTestApp(await database.open())
  })
  afterAll(() => test.close())

  const createTenant = (token: string, body: unknown) => test.call("POST", "/tenants", { token, body })

  const newUser = async (email = `user-${tag()}@example.com`) => {
    const user = await test.operator((operator) => operator.createUser(email))
    return { ...user, email }
  }

  it("answers 201 with the tenant's fields, in their types", async () => {
    const owner = await bootstrap(test)
    const name = `Acme Support ${tag()}`
    const answer = await createTenant(owner.user_token, { name })

    expect(answer.status).toBe(201)
    expect(answer.body).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      name,
      slug: name.toLowerCase().replaceAll(" ", "-"),
      billing_account_id: owner.billing_account_id,
      pricing_model_id: null,
      is_trial: true,
      trial_ends_at: expect.any(String),
      is_active: true,
      subscription_tier: expect.any(String),
      multi_agent_mode: false,
      auto_summarize_on_close: "disabled",
      ai_features_enabled: false,
      auto_transcript_export_format: "none",
      company_email: null,
      support_email: expect.any(String),
      created_at: expect.any(String)
    })
  })

  it("starts a trial that ends 14 days after the tenant was created, by the clock", async () => {
    const owner = await bootstrap(test)
    test.clock.advance(3 * 3_600_000)
    const now = test.clock.nowMillis()
    const { body } = await createTenant(owner.user_token, { name: "Trial" })

    expect(body.created_at).toBe(new Date(now).toISOString())
    expect(body.trial_ends_at).toBe(new Date(now + 14 * DAY_MS).toISOString())
    expect(body.is_trial).toBe(true)
  })

  it("gives an id that X-Tenant-ID takes, naming a tenant with no contacts", async () => {
    const owner = await bootstrap(test)
    await test.call("POST", "/contacts", { token: owner.api_key, body: { name: "In the parent tenant" } })
    const { body: tenant } = await createTenant(owner.user_token, { name: "Empty" })

    const contacts = await test.call("GET", "/contacts", { token: owner.api_key, headers: { "x-tenant-id": tenant.id } })
    expect(contacts.status).toBe(200)
    expect(contacts.body).toEqual({ items: [], pagination: { page: 1, page_size: 25, total: 0, total_pages: 0 } })
  })

  describe("the billing account", () => {
    it("is created for a user who owns none, and used again afterwards", async () => {
      const user = await newUser()
      const first = await createTenant(user.user_token, { name: "First" })
      expect(first.status).toBe(201)
      expect(first.body.billing_account_id).toEqual(expect.any(String))

      const second = await createTenant(user.user_token, { name: "Second" })
      expect(second.status).toBe(201)
      expect(second.body.billing_account_id).toBe(first.body.billing_account_id)
    })

    it("is the user's only one when billing_account_id is omitted", async () => {
      const owner = await bootstrap(test)
      const { body } = await createTenant(owner.user_token, { name: "Sub" })
      expect(body.billing_account_id).toBe(owner.billing_account_id)
    })

    it("must be named with billing_account_id when the user owns several (422 naming the field)", async () => {
      const owner = await bootstrap(test)
      const { billing_account_id } = await test.operator((operator) => operator.createBillingAccount(owner.user_id))

      const ambiguous = await createTenant(owner.user_token, { name: "Which one?" })
      expect(ambiguous.status).toBe(422)
      expect(ambiguous.body.detail).toEqual([
        { loc: ["body", "billing_account_id"], msg: expect.stringContaining("billing_account_id"), type: "missing" }
      ])

      const named = await createTenant(owner.user_token, { name: "This one", billing_account_id })
      expect(named.status).toBe(201)
      expect(named.body.billing_account_id).toBe(billing_account_id)
    })

    it("refuses someone else's account and an unknown one with the same 403", async () => {
      const owner = await bootstrap(test)
      const stranger = await bootstrap(test)
      for (const billing_account_id of [stranger.billing_account_id, crypto.randomUUID(), "not-an-id"]) {
        const answer = await createTenant(owner.user_token, { name: "Intruder", billing_account_id })
        expect({ billing_account_id, status: answer.status, body: answer.body })
          .toEqual({ billing_account_id, status: 403, body: NOT_YOUR_ACCOUNT })
      }
    })
  })

  describe("the slug", () => {
    it("is generated from the name with accents folded", async () => {
      const owner = await bootstrap(test)
      const t = tag()
      const { body } = await createTenant(owner.user_token, { name: `Café Süb ${t}!` })
      expect(body.slug).toBe(`cafe-sub-${t}`)
    })

    it("is found for every one of more bootstraps at once than numbered slugs are tried, each picking the same next free one", async () => {
      // Each bootstrap creates its tenant inside its own transaction: a slug another took meanwhile
      // must send it to the next one, not abort that transaction (PostgreSQL would).
      const booted = await Promise.all(Array.from({ length: 10 }, () => bootstrap(test)))
      expect(new Set(booted.map((boot) => boot.tenant_id)).size).toBe(10)
      // Each works: its key reaches its own tenant.
      for (const boot of booted) {
        expect((await test.call("GET", "/contacts", { token: boot.api_key })).status).toBe(200)
      }
    })

    it("is numbered when the generated one is taken", async () => {
      const owner = await bootstrap(test)
      const stranger = await bootstrap(test)
      const name = `Café Sub ${tag()}`
      const slugs = [
        (await createTenant(owner.user_token, { name })).body.slug,
        (await createTenant(owner.user_token, { name })).body.slug,
        (await createTenant(stranger.user_token, { name })).body.slug
      ]
      const base = slugs[0]
      expect(slugs).toEqual([base, `${base}-2`, `${base}-3`])
    })

    it("is 'workspace' when nothing URL-safe remains of the name", async () => {
      const owner = await bootstrap(test)
      const { body } = await createTenant(owner.user_token, { name: "東京" })
      expect(body.slug).toMatch(/^workspace(-\d+)?$/)
    })

    it("is kept as given", async () => {
      const owner = await bootstrap(test)
      const slug = `my-team-${tag()}`
      const { body } = await createTenant(owner.user_token, { name: "Whatever", slug })
      expect(body.slug).toBe(slug)
    })

    it("answers 409 when a given slug is taken, even by another account's tenant", async () => {
      const owner = await bootstrap(test)
      const stranger = await bootstrap(test)
      const slug = `taken-${tag()}`
      expect((await createTenant(stranger.user_token, { name: "First", slug })).status).toBe(201)

      const answer = await createTenant(owner.user_token, { name: "Second", slug })
      expect(answer.status).toBe(409)
      expect(answer.body).toEqual({ detail: `Slug '${slug}' is already taken` })
    })

    it.each(["Upper-Case", "-leading", "trailing-", "double--hyphen", "under_score", "spa ce", "ünï", "", "a".repeat(64)])(
      "answers 422 naming slug for %j",
      async (slug) => {
        const owner = await bootstrap(test)
        const answer = await createTenant(owner.user_token, { name: "Bad slug", slug })
        expect(answer.status).toBe(422)
        expect(answer.body.detail).toContainEqual(expect.objectContaining({ loc: ["body", "slug"] }))
      }
    )

    it("may be 63 characters long", async () => {
      const owner = await bootstrap(test)
      const slug = `${tag()}${"a".repeat(57)}`
      expect((await createTenant(owner.user_token, { name: "Long", slug })).body.slug).toBe(slug)
    })
  })

  describe("the workspace defaults", () => {
    it("has support_email default to the owner's email", async () => {
      const email = `Owner.${tag()}@Example.com`
      const owner = await bootstrap(test, email)
      const { body } = await createTenant(owner.user_token, { name: "Support" })
      expect(body.support_email).toBe(email.toLowerCase())
    })

    it("keeps the emails it is given", async () => {
      const owner = await bootstrap(test)
      const { body } = await createTenant(owner.user_token, {
        name: "Emails",
        support_email: "help@acme.test",
        company_email: "office@acme.test"
      })
      expect(body).toMatchObject({ support_email: "help@acme.test", company_email: "office@acme.test" })
    })

    it("has pricing_model_id null when omitted (inherited) and kept when given", async () => {
      const owner = await bootstrap(test)
      expect((await createTenant(owner.user_token, { name: "Inherits" })).body.pricing_model_id).toBeNull()
      expect((await createTenant(owner.user_token, { name: "Overrides", pricing_model_id: "pm_growth" })).body.pricing_model_id)
        .toBe("pm_growth")
    })

    it("stores the optional workspace defaults it is given", async () => {
      const owner = await bootstrap(test)
      const { body } = await createTenant(owner.user_token, {
        name: "Configured",
        multi_agent_mode: true,
        auto_summarize_on_close: "enabled",
        ai_features_enabled: true,
        auto_transcript_export_format: "pdf"
      })
      expect(body).toMatchObject({
        multi_agent_mode: true,
        auto_summarize_on_close: "enabled",
        ai_features_enabled: true,
        auto_transcript_export_format: "pdf"
      })
    })
  })

  describe("validation", () => {
    it.each([
      ["name missing", {}, ["body", "name"], "missing"],
      ["name empty", { name: "" }, ["body", "name"], "value_error"],
      ["name blank", { name: "   " }, ["body", "name"], "value_error"],
      ["name not a string", { name: 42 }, ["body", "name"], "type_error"],
      ["name too long", { name: "n".repeat(256) }, ["body", "name"], "value_error"],
      ["name holding U+0000", { name: "a\u0000b" }, ["body", "name"], "string_unicode"],
      ["billing_account_id not a string", { name: "x", billing_account_id: 7 }, ["body", "billing_account_id"], "type_error"],
      ["billing_account_id holding U+0000", { name: "x", billing_account_id: "\u0000" }, ["body", "billing_account_id"], "string_unicode"],
      ["company_email not an address", { name: "x", company_email: "office" }, ["body", "company_email"], "value_error"],
      ["support_email without a domain dot", { name: "x", support_email: "help@acme" }, ["body", "support_email"], "value_error"],
      ["pricing_model_id empty", { name: "x", pricing_model_id: "" }, ["body", "pricing_model_id"], "value_error"],
      ["multi_agent_mode not a boolean", { name: "x", multi_agent_mode: "yes" }, ["body", "multi_agent_mode"], "type_error"],
      ["auto_summarize_on_close unknown", { name: "x", auto_summarize_on_close: "sometimes" }, ["body", "auto_summarize_on_close"], "enum"],
      ["auto_transcript_export_format unknown", { name: "x", auto_transcript_export_format: "docx" }, ["body", "auto_transcript_export_format"], "enum"],
      ["is_active is not settable", { name: "x", is_active: false }, ["body", "is_active"], "extra_forbidden"],
      ["id is not settable", { name: "x", id: "00000000-0000-4000-8000-000000000000" }, ["body", "id"], "extra_forbidden"]
    ])("answers 422 naming the field: %s", async (_, body, loc, type) => {
      const owner = await bootstrap(test)
      const answer = await createTenant(owner.user_token, body)
      expect(answer.status).toBe(422)
      expect(answer.body.detail).toContainEqual({ loc, msg: expect.any(String), type })
    })
  })
})
