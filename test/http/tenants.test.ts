import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { serviceDatabases } from "../support/Databases.ts"
import { seededRandom } from "../support/Random.ts"
import { bootstrap, startTestApp, type TestApp } from "../support/TestApp.ts"

const DAY_MS = 86_400_000
const NOT_YOUR_ACCOUNT = { detail: { code: "forbidden", message: "You are not an owner of that billing account" } }

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

describe.each(serviceDatabases)("POST /tenants on $name", (database) => {
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
      expect(answer.body).toEqual({ detail: { code: "conflict", message: `Slug '${slug}' is already taken` } })
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

describe.each(serviceDatabases)("GET /tenants and GET /tenants/{id} on $name", (database) => {
  let test: TestApp
  beforeAll(async () => {
    test = await startTestApp(await database.open())
  })
  afterAll(() => test.close())

  const list = (token: string, query = "", headers: Record<string, string> = {}) =>
    test.call("GET", `/tenants${query}`, { token, headers })
  const getTenant = (token: string, id: string, headers: Record<string, string> = {}) =>
    test.call("GET", `/tenants/${id}`, { token, headers })
  const ids = (answer: { readonly body: any }): Array<string> => answer.body.items.map((item: { id: string }) => item.id)
  const notFound = (id: string) => ({ status: 404, body: { detail: { code: "not_found", message: `Tenant ${id} not found` } } })

  /** An owner (bootstrapped) with `subs` sub-accounts made a minute apart, so their order is the clock's. */
  const ownerWithSubs = async (subs: number) => {
    const owner = await bootstrap(test)
    const subIds: Array<string> = []
    for (let i = 0; i < subs; i++) {
      test.clock.advance(60_000)
      const made = await test.call("POST", "/tenants", { token: owner.user_token, body: { name: `Sub ${i} ${tag()}` } })
      expect(made.status).toBe(201)
      subIds.push(made.body.id)
    }
    return { owner, subIds }
  }
  const keyIn = async (tenantId: string, options: { readonly parent?: boolean; readonly scopes?: ReadonlyArray<string> } = {}) =>
    (await test.operator((operator) =>
      operator.createApiKey({ tenantId, scopes: options.scopes ?? ["contacts:read"], parent: options.parent ?? false })
    )).api_key
  const deactivate = (tenantId: string) =>
    test.database.db.updateTable("tenants").set({ is_active: 0 }).where("id", "=", tenantId).execute()

  it("shows a parent key its own tenant and its sub-accounts, oldest first, as POST /tenants answered them", async () => {
    const { owner, subIds } = await ownerWithSubs(2)
    const answer = await list(owner.api_key)

    expect(answer.status).toBe(200)
    expect(ids(answer)).toEqual([owner.tenant_id, ...subIds])
    expect(answer.body.pagination).toEqual({ page: 1, page_size: 25, total: 3, total_pages: 1 })
    const one = await getTenant(owner.api_key, subIds[1]!)
    expect(one.status).toBe(200)
    expect(answer.body.items[2]).toEqual(one.body)
    expect(one.body).toMatchObject({ id: subIds[1], billing_account_id: owner.billing_account_id, is_active: true })
    expect((await getTenant(owner.api_key, owner.tenant_id)).body.id).toBe(owner.tenant_id)
  })

  it("lists the same for a parent key acting in a sub-account through X-Tenant-ID", async () => {
    const { owner, subIds } = await ownerWithSubs(2)
    const viaSub = await list(owner.api_key, "", { "x-tenant-id": subIds[0]! })
    expect(viaSub.status).toBe(200)
    expect(ids(viaSub)).toEqual([owner.tenant_id, ...subIds])
    expect((await getTenant(owner.api_key, owner.tenant_id, { "x-tenant-id": subIds[0]! })).status).toBe(200)
  })

  it("shows a sub-account's own key only its own tenant, and 404 for its parent and siblings", async () => {
    const { owner, subIds } = await ownerWithSubs(2)
    const subKey = await keyIn(subIds[0]!)

    const answer = await list(subKey)
    expect(answer.status).toBe(200)
    expect(ids(answer)).toEqual([subIds[0]])
    expect(answer.body.pagination).toEqual({ page: 1, page_size: 25, total: 1, total_pages: 1 })
    expect((await getTenant(subKey, subIds[0]!)).status).toBe(200)
    for (const other of [owner.tenant_id, subIds[1]!]) {
      const refused = await getTenant(subKey, other)
      expect({ status: refused.status, body: refused.body }).toEqual(notFound(other))
    }
  })

  it("shows a parent key of a sub-account the whole billing account, as X-Tenant-ID lets it act there", async () => {
    const { owner, subIds } = await ownerWithSubs(1)
    const parentInSub = await keyIn(subIds[0]!, { parent: true })
    expect(ids(await list(parentInSub))).toEqual([owner.tenant_id, subIds[0]])
    // What it lists is exactly where X-Tenant-ID is accepted.
    expect((await test.call("GET", "/contacts", { token: parentInSub, headers: { "x-tenant-id": owner.tenant_id } })).status).toBe(200)
  })

  it("never shows another billing account's tenants, not even the same owner's other account", async () => {
    const { owner } = await ownerWithSubs(1)
    const stranger = await ownerWithSubs(1)
    const { billing_account_id: second } = await test.operator((operator) => operator.createBillingAccount(owner.user_id))
    const inSecond = await test.call("POST", "/tenants", { token: owner.user_token, body: { name: "Second account", billing_account_id: second } })
    expect(inSecond.status).toBe(201)

    const seen = ids(await list(owner.api_key))
    for (const foreign of [stranger.owner.tenant_id, ...stranger.subIds, inSecond.body.id]) {
      expect(seen).not.toContain(foreign)
      const refused = await getTenant(owner.api_key, foreign)
      expect({ status: refused.status, body: refused.body }).toEqual(notFound(foreign))
    }
    expect(ids(await list(stranger.owner.api_key))).toEqual([stranger.owner.tenant_id, ...stranger.subIds])
  })

  it("leaves out a deactivated sub-account for the parent key, as X-Tenant-ID does, while the sub-account's own key still sees it", async () => {
    const { owner, subIds } = await ownerWithSubs(2)
    const subKey = await keyIn(subIds[0]!)
    await deactivate(subIds[0]!)

    expect(ids(await list(owner.api_key))).toEqual([owner.tenant_id, subIds[1]])
    expect(await getTenant(owner.api_key, subIds[0]!).then(({ status, body }) => ({ status, body }))).toEqual(notFound(subIds[0]!))
    expect((await test.call("GET", "/contacts", { token: owner.api_key, headers: { "x-tenant-id": subIds[0]! } })).status).toBe(403)
    const own = await list(subKey)
    expect(own.body.items).toEqual([expect.objectContaining({ id: subIds[0], is_active: false })])
    expect((await getTenant(subKey, subIds[0]!)).body).toMatchObject({ id: subIds[0], is_active: false })
  })

  it("pages like the other lists: page and page_size, total and total_pages", async () => {
    const { owner, subIds } = await ownerWithSubs(4)
    const all = [owner.tenant_id, ...subIds]

    const pages = await Promise.all([1, 2, 3].map((page) => list(owner.api_key, `?page=${page}&page_size=2`)))
    expect(pages.map(ids)).toEqual([all.slice(0, 2), all.slice(2, 4), all.slice(4)])
    expect(pages.map((page) => page.body.pagination)).toEqual([1, 2, 3].map((page) => ({ page, page_size: 2, total: 5, total_pages: 3 })))
    const past = await list(owner.api_key, "?page=4&page_size=2")
    expect(past.body).toEqual({ items: [], pagination: { page: 4, page_size: 2, total: 5, total_pages: 3 } })
    expect((await list(owner.api_key, "?page_size=100")).body.pagination.page_size).toBe(100)
  })

  it.each([
    ["page 0", "?page=0", "page"],
    ["page not a number", "?page=two", "page"],
    ["page_size 0", "?page_size=0", "page_size"],
    ["page_size above 100", "?page_size=101", "page_size"]
  ])("answers 422 naming the query field: %s", async (_, query, field) => {
    const owner = await bootstrap(test)
    const answer = await list(owner.api_key, query)
    expect(answer.status).toBe(422)
    expect(answer.body.detail).toContainEqual(expect.objectContaining({ loc: ["query", field] }))
  })

  it("answers 404 with the same body for an unknown id, a malformed one and another account's", async () => {
    const owner = await bootstrap(test)
    const stranger = await bootstrap(test)
    for (const id of [crypto.randomUUID(), "not-a-tenant-id", stranger.tenant_id]) {
      const answer = await getTenant(owner.api_key, id)
      expect({ status: answer.status, body: answer.body }).toEqual(notFound(id))
      const asUser = await getTenant(owner.user_token, id)
      expect({ status: asUser.status, body: asUser.body }).toEqual(notFound(id))
    }
    // An upper-case spelling names the same tenant, as in X-Tenant-ID.
    expect((await getTenant(owner.api_key, owner.tenant_id.toUpperCase())).body.id).toBe(owner.tenant_id)
  })

  it("needs no particular scope, but a valid credential, and refuses a foreign X-Tenant-ID as every route does", async () => {
    const owner = await bootstrap(test)
    const stranger = await bootstrap(test)
    const narrowKey = await keyIn(owner.tenant_id, { scopes: ["webhooks:read"] })
    expect(ids(await list(narrowKey))).toEqual([owner.tenant_id])

    for (const token of [undefined, "ock_nope_nope", "ocu_nope_nope"]) {
      const answer = await test.call("GET", "/tenants", token === undefined ? {} : { token })
      expect(answer.status).toBe(401)
    }
    const foreign = await list(owner.api_key, "", { "x-tenant-id": stranger.tenant_id })
    expect({ status: foreign.status, body: foreign.body }).toEqual({ status: 403, body: { detail: { code: "forbidden", message: "Not allowed to act in the requested tenant" } } })
  })

  describe("with a user token", () => {
    it("shows the active tenants of every billing account the user owns, and nothing of others'", async () => {
      const { owner, subIds } = await ownerWithSubs(2)
      const stranger = await bootstrap(test)
      test.clock.advance(60_000)
      const { billing_account_id: second } = await test.operator((operator) => operator.createBillingAccount(owner.user_id))
      const inSecond = await test.call("POST", "/tenants", { token: owner.user_token, body: { name: "Second account", billing_account_id: second } })
      await deactivate(subIds[1]!)

      const answer = await list(owner.user_token)
      expect(answer.status).toBe(200)
      expect(ids(answer)).toEqual([owner.tenant_id, subIds[0], inSecond.body.id])
      expect(answer.body.pagination).toEqual({ page: 1, page_size: 25, total: 3, total_pages: 1 })
      expect((await getTenant(owner.user_token, inSecond.body.id)).body).toMatchObject({ id: inSecond.body.id, billing_account_id: second })
      for (const hidden of [subIds[1]!, stranger.tenant_id]) {
        const refused = await getTenant(owner.user_token, hidden)
        expect({ status: refused.status, body: refused.body }).toEqual(notFound(hidden))
      }
      // X-Tenant-ID means nothing to a user token.
      expect(ids(await list(owner.user_token, "", { "x-tenant-id": stranger.tenant_id }))).toEqual(ids(answer))
    })

    it("shows an empty page to a user who owns no billing account, and their first tenant once made", async () => {
      const user = await test.operator((operator) => operator.createUser(`nobody-${tag()}@example.com`))
      expect((await list(user.user_token)).body).toEqual({ items: [], pagination: { page: 1, page_size: 25, total: 0, total_pages: 0 } })
      const made = await test.call("POST", "/tenants", { token: user.user_token, body: { name: "First" } })
      expect(ids(await list(user.user_token))).toEqual([made.body.id])
    })
  })

  it("documents both routes in the OpenAPI document, taking an API key or a user token", async () => {
    const document = (await test.call("GET", "/openapi.json")).body
    const operations = document.paths["/api/v1/tenants"]
    for (const operation of [operations.get, document.paths["/api/v1/tenants/{tenant_id}"].get]) {
      expect(operation.security).toEqual([{ apiKey: [] }, { userToken: [] }])
      expect(operation["x-required-scopes-any-of"]).toBeUndefined()
      expect(operation.parameters).toContainEqual(expect.objectContaining({ name: "X-Tenant-ID", in: "header" }))
    }
    expect(operations.get.operationId).toBe("listTenants")
    expect(operations.get.parameters.map((p: { name: string }) => p.name)).toEqual(expect.arrayContaining(["page", "page_size"]))
    expect(Object.keys(operations.get.responses)).toEqual(expect.arrayContaining(["200", "401", "403", "422"]))
    expect(Object.keys(document.paths["/api/v1/tenants/{tenant_id}"].get.responses)).toEqual(expect.arrayContaining(["200", "401", "403", "404"]))
    expect(operations.post.security).toEqual([{ userToken: [] }])
  })
})
