import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ChatappHost, startChatappHost, type Tenant } from "../support/ChatappHost.ts"
import type { FakeGraphRequest } from "../support/FakeGraph.ts"
import { admin, http } from "../support/Host.ts"
import { hostBackends } from "../support/HostBackends.ts"

// Lists, subscriptions, contact import, opt-in keywords and the operator's marketing preferences,
// seen from outside: the host as a child process on a manual test clock, a fake Graph server that
// records what the host sends, signed inbound webhooks, and nothing but HTTP to look at the result.

const APP_SECRET = "lists-app-secret-for-tests"
const TOKEN = "EAAGliststokenabcdefghijklmnopqrstuvwxyz"
const PHONE_NUMBER_ID = "106540352280001"
const WABA_ID = "102290129380001"
/** The second tenant's number: a workspace without a single list. */
const OTHER_PHONE_NUMBER_ID = "106540352280002"
const OTHER_WABA_ID = "102290129380002"

const UNKNOWN_ID = "0b6f1a52-3c1d-4e55-9a0f-8d6a2c1e9f00"

let wamids = 0
const wamid = () => `wamid.HBgLLISTS${String(++wamids).padStart(8, "0")}`

describe.each(hostBackends)("lists, subscriptions and opt-in keywords on the reference host ($name)", (backend) => {
  let h: ChatappHost
  let tenant: Tenant
  let other: Tenant
  let channelId: string
  let otherChannelId: string
  /** Keys of the first tenant holding only these scopes. */
  let reader: Tenant
  let writer: Tenant
  let readWrite: Tenant

  beforeAll(async () => {
    h = await startChatappHost(backend, { accessToken: TOKEN, appSecret: APP_SECRET })
    ;({ tenant, other } = h)
    const [mine, theirs, r, w, rw] = await Promise.all([
      h.channel(PHONE_NUMBER_ID, WABA_ID),
      h.channel(OTHER_PHONE_NUMBER_ID, OTHER_WABA_ID, other),
      admin(h.env, "api-key", "create", "--tenant", tenant.id, "--scopes", "contacts:read"),
      admin(h.env, "api-key", "create", "--tenant", tenant.id, "--scopes", "contacts:update"),
      admin(h.env, "api-key", "create", "--tenant", tenant.id, "--scopes", "contacts:read,contacts:update")
    ])
    channelId = mine.channel_id
    otherChannelId = theirs.channel_id
    reader = { id: tenant.id, key: r.api_key }
    writer = { id: tenant.id, key: w.api_key }
    readWrite = { id: tenant.id, key: rw.api_key }
  }, 120_000)
  afterAll(() => h?.close())

  const api = (method: string, path: string, body?: unknown, as: { key: string } = tenant) => h.api(method, path, body, as)
  const drain = () => h.drain()

  const createList = async (body: Record<string, unknown>, as: { key: string } = tenant) => {
    const created = await api("POST", "/lists", body, as)
    expect(created.status, JSON.stringify(created.body)).toBe(201)
    return created.body
  }
  let phones = 0
  const newPhone = () => `+4917000${String(++phones).padStart(5, "0")}`
  const newContact = async (fields: Record<string, unknown> = {}, as: { key: string } = tenant) => {
    const created = await api("POST", "/contacts", { name: "Maria", phone: newPhone(), ...fields }, as)
    expect(created.status, JSON.stringify(created.body)).toBe(201)
    return created.body as { id: string; phone: string; email: string | null; name: string | null }
  }
  const subscriptionsOf = async (contactId: string) => {
    const got = await api("GET", `/contacts/${contactId}/subscriptions`)
    expect(got.status, JSON.stringify(got.body)).toBe(200)
    return got.body as { items: Array<any>; marketing_opt_outs: Array<any> }
  }
  /** Every event of the tenant of `type`, oldest first. */
  const events = async (type: string, as: { key: string } = tenant) => {
    const items: Array<any> = []
    for (let page = 1;; page++) {
      const got = await api("GET", `/events?type=${type}&page_size=100&page=${page}`, undefined, as)
      expect(got.status).toBe(200)
      items.push(...got.body.items)
      if (!got.body.has_more) break
    }
    return items
  }
  const contactByPhone = async (phone: string, as: { key: string } = tenant) => {
    for (let page = 1;; page++) {
      const got = await api("GET", `/contacts?page_size=100&page=${page}`, undefined, as)
      expect(got.status).toBe(200)
      const found = (got.body.items as Array<any>).find((c) => c.phone === phone)
      if (found !== undefined || page >= got.body.pagination.total_pages) return found
    }
  }
  const messagesWith = async (contactId: string, as: { key: string } = tenant) => {
    const conversations = await api("GET", `/conversations?contact_id=${contactId}`, undefined, as)
    expect(conversations.status).toBe(200)
    const all: Array<any> = []
    for (const conversation of conversations.body.items) {
      const got = await api("GET", `/messages?conversation_id=${conversation.id}&page_size=200`, undefined, as)
      expect(got.status).toBe(200)
      all.push(...got.body.items)
    }
    return all
  }

  // ---------------------------------------------------------------------------------------------
  // Inbound traffic and what the operator received

  const clockSeconds = async () => {
    const got = await http(h.host.url, "GET", "/_test/clock")
    return String(Math.floor(Date.parse(got.body.now) / 1000))
  }
  const textMessage = async (from: string, body: string, id = wamid()) => ({
    from,
    id,
    timestamp: await clockSeconds(),
    type: "text",
    text: { body }
  })
  const payloadOf = (from: string, message: unknown, phoneNumberId = PHONE_NUMBER_ID, wabaId = WABA_ID) => ({
    object: "whatsapp_business_account",
    entry: [{
      id: wabaId,
      changes: [{
        field: "messages",
        value: {
          messaging_product: "whatsapp",
          metadata: { display_phone_number: "15551234567", phone_number_id: phoneNumberId },
          contacts: [{ profile: { name: "Kim" }, wa_id: from }],
          messages: [message]
        }
      }]
    }]
  })
  /** Posts a signed payload, expects 200, and runs the host's background work to the end. */
  const deliver = async (body: unknown) => {
    const posted = await h.post(body)
    expect(posted.status, posted.body).toBe(200)
    await drain()
  }
  /** The contact `from` (digits) types `text` to our number; the payload is returned for redelivery. */
  const says = async (from: string, text: string, phoneNumberId = PHONE_NUMBER_ID, wabaId = WABA_ID) => {
    const body = payloadOf(from, await textMessage(from, text), phoneNumberId, wabaId)
    await deliver(body)
    return body
  }
  const mark = () => h.graph.requests().length
  /** The texts the operator was asked to send to `to` (digits) from `number` since `from`. */
  const sentTo = (to: string, from: number, number = PHONE_NUMBER_ID): Array<string> =>
    (h.graph.requests().slice(from) as Array<FakeGraphRequest & { json: any }>)
      .filter((r) => r.method === "POST" && r.path === `/${number}/messages` && r.json?.to === to)
      .map((r) => {
        expect(r.json).toMatchObject({ messaging_product: "whatsapp", type: "text" })
        return r.json.text.body as string
      })
  let senders = 0
  const newSender = () => `4915200${String(++senders).padStart(5, "0")}`
  const contactOf = async (from: string, as: { key: string } = tenant) => {
    const contact = await contactByPhone(`+${from}`, as)
    expect(contact, `no contact +${from}`).toBeDefined()
    return contact as { id: string; phone: string }
  }
  const statusesOf = async (contactId: string) =>
    Object.fromEntries((await subscriptionsOf(contactId)).items.map((s) => [s.slug, s.status]))

  // ---------------------------------------------------------------------------------------------

  describe("lists API", () => {
    it("creates a static list with a slug made from its name, numbered when taken", async () => {
      const deals = await createList({ name: "  Weekly Deals!  " })
      expect(deals).toMatchObject({
        tenant_id: tenant.id,
        name: "Weekly Deals!",
        slug: "weekly-deals",
        is_default: false,
        type: "static",
        filters: null,
        welcome_message: null,
        subscriber_count: 0,
        updated_at: null
      })
      expect(deals.id).toMatch(/^[0-9a-f-]{36}$/)
      expect(typeof deals.created_at).toBe("string")
      expect((await createList({ name: "Weekly deals" })).slug).toBe("weekly-deals-2")
      expect((await createList({ name: "Café Crème" })).slug).toBe("cafe-creme")
    })

    it("takes a given slug, answers 409 when the slug is taken and 422 for a slug that is not URL-safe", async () => {
      const vip = await createList({ name: "VIP customers", slug: "vip" })
      expect(vip.slug).toBe("vip")
      const again = await api("POST", "/lists", { name: "Another", slug: "vip" })
      expect(again.status).toBe(409)
      expect(JSON.stringify(again.body)).toMatch(/slug/)
      for (const slug of ["Not OK", "UPPER", "-lead", "trail-", "a--b", "a_b", "", "x".repeat(64), "ünï"]) {
        const bad = await api("POST", "/lists", { name: "Bad", slug })
        expect(bad.status, `slug ${JSON.stringify(slug)}: ${JSON.stringify(bad.body)}`).toBe(422)
        expect(JSON.stringify(bad.body.detail)).toMatch(/slug/)
      }
      for (const body of [{}, { name: "" }, { name: "x", type: "smart" }, { name: "x", welcome_message: "" }]) {
        expect((await api("POST", "/lists", body)).status, JSON.stringify(body)).toBe(422)
      }
      expect((await api("GET", "/lists")).body.items.filter((l: any) => l.slug === "vip")).toHaveLength(1)
    })

    it("creates a dynamic list with its filters; filters on a static list, a dynamic default or a dynamic welcome are 422", async () => {
      const filters = { has_phone: true, language: "de", custom_fields: { tier: "gold" }, has_opt_in: true }
      const dynamic = await createList({ name: "Gold in Germany", type: "dynamic", filters })
      expect(dynamic).toMatchObject({ type: "dynamic", filters, slug: "gold-in-germany", is_default: false })
      expect((await api("GET", `/lists/${dynamic.id}`)).body.filters).toEqual(filters)

      const staticWithFilters = await api("POST", "/lists", { name: "Static", filters: { has_phone: true } })
      expect(staticWithFilters.status).toBe(422)
      expect(JSON.stringify(staticWithFilters.body.detail)).toMatch(/filters/)
      const explicitStatic = await api("POST", "/lists", { name: "Static", type: "static", filters: { has_email: true } })
      expect(explicitStatic.status).toBe(422)
      expect((await api("POST", "/lists", { name: "Dyn default", type: "dynamic", filters, is_default: true })).status).toBe(422)
      expect((await api("POST", "/lists", { name: "Dyn welcome", type: "dynamic", filters, welcome_message: "Hi" })).status).toBe(422)
      // A filter that is not one of the known ones, or of the wrong type.
      expect((await api("POST", "/lists", { name: "Dyn", type: "dynamic", filters: { has_phone: "yes" } })).status).toBe(422)
      // Patching filters onto a static list is refused the same way.
      const plain = await createList({ name: "Plain static" })
      expect((await api("PATCH", `/lists/${plain.id}`, { filters: { has_phone: true } })).status).toBe(422)
      expect((await api("PATCH", `/lists/${dynamic.id}`, { is_default: true })).status).toBe(422)
    })

    it("keeps one default list: making a second the default, at creation or by PATCH, moves the flag", async () => {
      const first = await createList({ name: "Default one", is_default: true })
      expect(first.is_default).toBe(true)
      const second = await createList({ name: "Default two", is_default: true })
      expect(second.is_default).toBe(true)
      expect((await api("GET", `/lists/${first.id}`)).body.is_default).toBe(false)
      const defaults = () => api("GET", "/lists").then((got) => got.body.items.filter((l: any) => l.is_default).map((l: any) => l.id))
      expect(await defaults()).toEqual([second.id])

      const moved = await api("PATCH", `/lists/${first.id}`, { is_default: true })
      expect(moved.status, JSON.stringify(moved.body)).toBe(200)
      expect(moved.body.is_default).toBe(true)
      expect((await api("GET", `/lists/${second.id}`)).body.is_default).toBe(false)
      expect(await defaults()).toEqual([first.id])
      // Setting it again on the default changes nothing.
      expect((await api("PATCH", `/lists/${first.id}`, { is_default: true })).body.is_default).toBe(true)
      expect(await defaults()).toEqual([first.id])
    })

    it("lists the workspace's lists oldest first and gets one; an unknown or malformed id is 404", async () => {
      const a = await createList({ name: "Listed A" })
      await h.advance(1)
      const b = await createList({ name: "Listed B" })
      const listed = await api("GET", "/lists")
      expect(listed.status).toBe(200)
      const ids = listed.body.items.map((l: any) => l.id)
      expect(ids).toContain(a.id)
      expect(ids.indexOf(a.id)).toBeLessThan(ids.indexOf(b.id))
      expect(listed.body.items.find((l: any) => l.id === b.id)).toEqual(b)

      const got = await api("GET", `/lists/${a.id}`)
      expect(got).toEqual({ status: 200, body: a })
      expect((await api("GET", `/lists/${a.id.toUpperCase()}`)).body.id).toBe(a.id)
      expect((await api("GET", `/lists/${UNKNOWN_ID}`)).status).toBe(404)
      expect((await api("GET", "/lists/not-an-id")).status).toBe(404)
    })

    it("patches name, slug and the welcome message; null restores the default text", async () => {
      const list = await createList({ name: "Patched" })
      await h.advance(60)
      const renamed = await api("PATCH", `/lists/${list.id}`, { name: "Patched again", slug: "patched-again" })
      expect(renamed.status, JSON.stringify(renamed.body)).toBe(200)
      expect(renamed.body).toMatchObject({ id: list.id, name: "Patched again", slug: "patched-again", welcome_message: null })
      expect(renamed.body.updated_at).not.toBeNull()
      expect(renamed.body.created_at).toBe(list.created_at)

      const welcome = "Welcome to our deals! Reply STOP to leave."
      const set = await api("PATCH", `/lists/${list.id}`, { welcome_message: welcome })
      expect(set.body.welcome_message).toBe(welcome)
      // A PATCH that does not name the welcome keeps it.
      expect((await api("PATCH", `/lists/${list.id}`, { name: "Patched thrice" })).body.welcome_message).toBe(welcome)
      expect((await api("GET", `/lists/${list.id}`)).body.welcome_message).toBe(welcome)
      const reset = await api("PATCH", `/lists/${list.id}`, { welcome_message: null })
      expect(reset.status).toBe(200)
      expect(reset.body.welcome_message).toBeNull()
      expect((await api("GET", `/lists/${list.id}`)).body.welcome_message).toBeNull()

      expect((await api("PATCH", `/lists/${list.id}`, { slug: "vip" })).status).toBe(409)
      expect((await api("PATCH", `/lists/${list.id}`, { slug: "Bad Slug" })).status).toBe(422)
      expect((await api("PATCH", `/lists/${list.id}`, { welcome_message: "" })).status).toBe(422)
      expect((await api("PATCH", `/lists/${UNKNOWN_ID}`, { name: "x" })).status).toBe(404)
      expect((await api("GET", `/lists/${list.id}`)).body.slug).toBe("patched-again")
    })

    it("deletes a list: then 404 everywhere, gone from GET /lists, its slug free again, its subscriptions kept", async () => {
      const list = await createList({ name: "Short lived", slug: "short-lived" })
      const contact = await newContact()
      expect((await api("POST", `/lists/${list.id}/subscriptions`, { contact_id: contact.id })).status).toBe(201)

      const deleted = await api("DELETE", `/lists/${list.id}`)
      expect(deleted).toEqual({ status: 200, body: { id: list.id, deleted: true } })
      expect((await api("GET", `/lists/${list.id}`)).status).toBe(404)
      expect((await api("PATCH", `/lists/${list.id}`, { name: "x" })).status).toBe(404)
      expect((await api("DELETE", `/lists/${list.id}`)).status).toBe(404)
      expect((await api("POST", `/lists/${list.id}/subscriptions`, { contact_id: contact.id })).status).toBe(404)
      expect((await api("GET", "/lists")).body.items.map((l: any) => l.id)).not.toContain(list.id)

      const reused = await createList({ name: "Short lived again", slug: "short-lived" })
      expect(reused.id).not.toBe(list.id)
      expect(reused.subscriber_count).toBe(0)

      const { items } = await subscriptionsOf(contact.id)
      expect(items).toHaveLength(1)
      expect(items[0]).toMatchObject({ list_id: list.id, contact_id: contact.id, status: "subscribed", optin_method: "api" })
    })

    it("a deleted list's subscriptions still name it by its slug in GET /contacts/{id}/subscriptions", async () => {
      const list = await createList({ name: "Deleted later", slug: "deleted-later" })
      const contact = await newContact()
      expect((await api("POST", `/lists/${list.id}/subscriptions`, { contact_id: contact.id })).status).toBe(201)
      expect((await api("DELETE", `/lists/${list.id}`)).status).toBe(200)
      // DECISIONS.md: "Lists are deleted softly; their subscriptions stay"; the history names the list it was.
      expect((await subscriptionsOf(contact.id)).items).toEqual([
        expect.objectContaining({ list_id: list.id, slug: "deleted-later", status: "subscribed" })
      ])
    })

    it("keeps tenants apart: another tenant gets 404 on every route of a list, and never sees it", async () => {
      const list = await createList({ name: "Ours only" })
      const contact = await newContact()
      expect((await api("POST", `/lists/${list.id}/subscriptions`, { contact_id: contact.id })).status).toBe(201)
      const theirContact = await newContact({}, other)

      expect((await api("GET", `/lists/${list.id}`, undefined, other)).status).toBe(404)
      expect((await api("PATCH", `/lists/${list.id}`, { name: "Theirs" }, other)).status).toBe(404)
      expect((await api("DELETE", `/lists/${list.id}`, undefined, other)).status).toBe(404)
      expect((await api("POST", `/lists/${list.id}/subscriptions`, { contact_id: theirContact.id }, other)).status).toBe(404)
      expect((await api("DELETE", `/lists/${list.id}/subscriptions/${contact.id}`, undefined, other)).status).toBe(404)
      expect((await api("GET", `/contacts/${contact.id}/subscriptions`, undefined, other)).status).toBe(404)
      const imported = await api("POST", "/contacts/import", { contacts: [{ name: "X", phone: newPhone() }], list_ids: [list.id], optin_confirmed: true }, other)
      expect(imported.status).toBe(404)
      const theirs = await api("GET", "/lists", undefined, other)
      expect(theirs).toEqual({ status: 200, body: { items: [] } })
      // Nor can we put their contact on our list.
      expect((await api("POST", `/lists/${list.id}/subscriptions`, { contact_id: theirContact.id })).status).toBe(404)

      // Nothing changed on our side.
      const after = await api("GET", `/lists/${list.id}`)
      expect(after.body).toMatchObject({ name: "Ours only", subscriber_count: 1 })
      expect((await subscriptionsOf(contact.id)).items.map((s) => s.status)).toEqual(["subscribed"])
    })

    it("needs contacts:update to change lists and subscriptions, contacts:read to read them, contacts:create to import", async () => {
      const list = await createList({ name: "Scoped" })
      const contact = await newContact()
      const missing = (scope: string) => ({ status: 403, body: { detail: `Missing required permission(s): ${scope}` } })
      const noUpdate = missing("contacts:update")
      expect(await api("POST", "/lists", { name: "By reader" }, reader)).toEqual(noUpdate)
      expect(await api("PATCH", `/lists/${list.id}`, { name: "By reader" }, reader)).toEqual(noUpdate)
      expect(await api("DELETE", `/lists/${list.id}`, undefined, reader)).toEqual(noUpdate)
      expect(await api("POST", `/lists/${list.id}/subscriptions`, { contact_id: contact.id }, reader)).toEqual(noUpdate)
      expect(await api("DELETE", `/lists/${list.id}/subscriptions/${contact.id}`, undefined, reader)).toEqual(noUpdate)

      const noRead = missing("contacts:read")
      expect(await api("GET", "/lists", undefined, writer)).toEqual(noRead)
      expect(await api("GET", `/lists/${list.id}`, undefined, writer)).toEqual(noRead)
      expect(await api("GET", `/contacts/${contact.id}/subscriptions`, undefined, writer)).toEqual(noRead)

      expect(await api("POST", "/contacts/import", { contacts: [{ name: "X", phone: newPhone() }] }, readWrite))
        .toEqual(missing("contacts:create"))

      // Nothing was changed by the refused calls.
      expect((await api("GET", `/lists/${list.id}`, undefined, reader)).body).toMatchObject({ name: "Scoped", subscriber_count: 0 })
      // What each key may do, it does.
      expect((await api("GET", "/lists", undefined, reader)).status).toBe(200)
      expect((await api("POST", `/lists/${list.id}/subscriptions`, { contact_id: contact.id }, writer)).status).toBe(201)
      expect((await api("GET", `/contacts/${contact.id}/subscriptions`, undefined, reader)).body.items).toHaveLength(1)
      expect((await api("DELETE", `/lists/${list.id}`, undefined, writer)).status).toBe(200)
      // Without a key at all: 401.
      expect((await http(h.host.url, "GET", "/api/v1/lists")).status).toBe(401)
    })
  })

  // ---------------------------------------------------------------------------------------------

  describe("subscriptions API", () => {
    it("subscribes a contact (201, method api), and subscribing again changes nothing", async () => {
      const list = await createList({ name: "Subscribers" })
      const contact = await newContact()
      const first = await api("POST", `/lists/${list.id}/subscriptions`, { contact_id: contact.id })
      expect(first.status, JSON.stringify(first.body)).toBe(201)
      expect(first.body).toEqual({
        list_id: list.id,
        slug: "subscribers",
        contact_id: contact.id,
        status: "subscribed",
        optin_method: "api",
        subscribed_at: expect.any(String),
        unsubscribed_at: null
      })
      await h.advance(120)
      const again = await api("POST", `/lists/${list.id}/subscriptions`, { contact_id: contact.id.toUpperCase() })
      expect(again).toEqual({ status: 201, body: first.body })
      expect((await api("GET", `/lists/${list.id}`)).body.subscriber_count).toBe(1)
      expect((await subscriptionsOf(contact.id)).items).toEqual([first.body])

      expect((await api("POST", `/lists/${list.id}/subscriptions`, { contact_id: UNKNOWN_ID })).status).toBe(404)
      expect((await api("POST", `/lists/${UNKNOWN_ID}/subscriptions`, { contact_id: contact.id })).status).toBe(404)
      expect((await api("POST", `/lists/${list.id}/subscriptions`, { contact_id: "someone" })).status).toBe(422)
      expect((await api("POST", `/lists/${list.id}/subscriptions`, {})).status).toBe(422)
    })

    it("unsubscribes: the row is kept as unsubscribed and contact.unsubscribed carries who, which list and how", async () => {
      const list = await createList({ name: "Leavers" })
      const contact = await newContact()
      const subscribed = await api("POST", `/lists/${list.id}/subscriptions`, { contact_id: contact.id })
      expect(subscribed.status).toBe(201)
      const before = (await events("contact.unsubscribed")).length
      await h.advance(60)

      const left = await api("DELETE", `/lists/${list.id}/subscriptions/${contact.id}`)
      expect(left.status, JSON.stringify(left.body)).toBe(200)
      expect(left.body).toMatchObject({
        list_id: list.id,
        slug: "leavers",
        contact_id: contact.id,
        status: "unsubscribed",
        optin_method: "api",
        subscribed_at: subscribed.body.subscribed_at
      })
      expect(left.body.unsubscribed_at).not.toBeNull()
      expect(Date.parse(left.body.unsubscribed_at)).toBeGreaterThan(Date.parse(left.body.subscribed_at))
      expect((await subscriptionsOf(contact.id)).items).toEqual([left.body])
      expect((await api("GET", `/lists/${list.id}`)).body.subscriber_count).toBe(0)

      await drain()
      const emitted = (await events("contact.unsubscribed")).slice(before)
      expect(emitted).toHaveLength(1)
      expect(emitted[0]).toMatchObject({
        type: "contact.unsubscribed",
        tenant_id: tenant.id,
        data: { contact_id: contact.id, list_id: list.id, slug: "leavers", method: "api", channel_id: null }
      })
      // The other tenant sees none of it.
      expect((await events("contact.unsubscribed", other)).some((e) => e.data.contact_id === contact.id)).toBe(false)

      // Unsubscribing again, or someone never subscribed: 404, and no event.
      expect((await api("DELETE", `/lists/${list.id}/subscriptions/${contact.id}`)).status).toBe(404)
      const stranger = await newContact()
      expect((await api("DELETE", `/lists/${list.id}/subscriptions/${stranger.id}`)).status).toBe(404)
      expect((await api("DELETE", `/lists/${list.id}/subscriptions/${UNKNOWN_ID}`)).status).toBe(404)
      expect((await api("DELETE", `/lists/${UNKNOWN_ID}/subscriptions/${contact.id}`)).status).toBe(404)
      await drain()
      expect((await events("contact.unsubscribed")).length - before).toBe(1)

      // Subscribing again after leaving makes it subscribed once more.
      const back = await api("POST", `/lists/${list.id}/subscriptions`, { contact_id: contact.id })
      expect(back.status).toBe(201)
      expect(back.body).toMatchObject({ status: "subscribed", unsubscribed_at: null })
      expect((await subscriptionsOf(contact.id)).items).toHaveLength(1)
    })

    it("answers 422 to subscribing someone to a dynamic list", async () => {
      const dynamic = await createList({ name: "Dynamic subs", type: "dynamic", filters: { has_phone: true } })
      const contact = await newContact()
      const refused = await api("POST", `/lists/${dynamic.id}/subscriptions`, { contact_id: contact.id })
      expect(refused.status).toBe(422)
      expect((await subscriptionsOf(contact.id)).items).toEqual([])
    })

    it("lists a contact's subscriptions, subscribed and unsubscribed, on every list; an unknown contact is 404", async () => {
      const [a, b, c] = [await createList({ name: "Sub A" }), await createList({ name: "Sub B" }), await createList({ name: "Sub C" })]
      const contact = await newContact()
      for (const list of [a, b, c]) expect((await api("POST", `/lists/${list.id}/subscriptions`, { contact_id: contact.id })).status).toBe(201)
      expect((await api("DELETE", `/lists/${b.id}/subscriptions/${contact.id}`)).status).toBe(200)
      const { items, marketing_opt_outs } = await subscriptionsOf(contact.id)
      expect(Object.fromEntries(items.map((s) => [s.list_id, [s.slug, s.status]]))).toEqual({
        [a.id]: ["sub-a", "subscribed"],
        [b.id]: ["sub-b", "unsubscribed"],
        [c.id]: ["sub-c", "subscribed"]
      })
      expect(marketing_opt_outs).toEqual([])
      expect((await subscriptionsOf((await newContact()).id)).items).toEqual([])
      expect((await api("GET", `/contacts/${UNKNOWN_ID}/subscriptions`)).status).toBe(404)
    })
  })

  // ---------------------------------------------------------------------------------------------

  describe("contact import", () => {
    const importing = (body: unknown, as: { key: string } = tenant) => api("POST", "/contacts/import", body, as)

    it("creates, updates and leaves unchanged, matching by phone and then by email", async () => {
      const byPhone = await newContact({ name: "Phone Person", email: "phone.person@example.com" })
      const byEmail = await newContact({ name: "Email Person", email: "email.person@example.com" })
      const same = await newContact({ name: "Same Person", email: "same.person@example.com" })
      const freshPhone = newPhone()
      const emailPersonNewPhone = newPhone()
      const result = await importing({
        contacts: [
          { name: "Brand New", phone: freshPhone, email: "brand.new@example.com" },
          // The phone matches; its email is another contact's in no way: byPhone is updated.
          { phone: byPhone.phone, name: "Phone Person Renamed", email: "phone.person@example.com" },
          // No contact has this phone; the email (in another case) matches byEmail, which takes the phone.
          { phone: emailPersonNewPhone, email: "EMAIL.person@example.com", language: "de" },
          { phone: same.phone, name: "Same Person" }
        ]
      })
      expect(result.status, JSON.stringify(result.body)).toBe(200)
      expect(result.body).toEqual({ created: 1, updated: 2, unchanged: 1, subscribed: 0, subscriptions_applied: false, failed: [] })

      const fresh = await contactByPhone(freshPhone)
      expect(fresh).toMatchObject({ name: "Brand New", email: "brand.new@example.com" })
      expect((await api("GET", `/contacts/${byPhone.id}`)).body).toMatchObject({ name: "Phone Person Renamed", phone: byPhone.phone })
      expect((await api("GET", `/contacts/${byEmail.id}`)).body).toMatchObject({
        name: "Email Person",
        phone: emailPersonNewPhone,
        email: "email.person@example.com",
        language: "de"
      })
      expect((await api("GET", `/contacts/${same.id}`)).body).toMatchObject({ name: "Same Person", updated_at: null })
      // Imported again as it is: nothing new, nothing changed.
      const again = await importing({ contacts: [{ name: "Brand New", phone: freshPhone, email: "brand.new@example.com" }] })
      expect(again.body).toMatchObject({ created: 0, updated: 0, unchanged: 1 })
    })

    it("imports a group of rows that all have a phone together: new, renamed and unchanged contacts, each subscribed once, an unsubscribed one again", async () => {
      const list = await createList({ name: "Phones only" })
      const renamed = await newContact({ name: "Old Name" })
      const same = await newContact({ name: "Same" })
      const left = await newContact({ name: "Left" })
      await api("POST", `/lists/${list.id}/subscriptions`, { contact_id: same.id })
      await api("POST", `/lists/${list.id}/subscriptions`, { contact_id: left.id })
      expect((await api("DELETE", `/lists/${list.id}/subscriptions/${left.id}`)).status).toBe(200)
      const fresh = Array.from({ length: 150 }, (_, n) => ({ name: `New ${n}`, phone: newPhone(), email: `new.${n}.${Date.now()}@example.com` }))

      const result = await importing({
        contacts: [...fresh, { phone: renamed.phone, name: "New Name" }, { phone: same.phone, name: "Same" }, { phone: left.phone, name: "Left" }],
        list_ids: [list.id],
        optin_confirmed: true
      })
      expect(result.status, JSON.stringify(result.body)).toBe(200)
      // The renamed, unchanged and re-subscribed contacts sit in the second group of a hundred.
      expect(result.body).toEqual({ created: 150, updated: 1, unchanged: 2, subscribed: 152, subscriptions_applied: true, failed: [] })
      expect(await contactByPhone(fresh[149]!.phone)).toMatchObject({ name: "New 149", email: fresh[149]!.email })
      expect((await api("GET", `/contacts/${renamed.id}`)).body).toMatchObject({ name: "New Name" })
      expect((await subscriptionsOf(left.id)).items).toEqual([expect.objectContaining({ status: "subscribed", optin_method: "import" })])
      expect((await subscriptionsOf(same.id)).items).toEqual([expect.objectContaining({ status: "subscribed", optin_method: "api" })])
      expect((await api("GET", `/lists/${list.id}`)).body.subscriber_count).toBe(153)
    })

    it("counts a contact updated by two rows of one import as updated twice", async () => {
      const contact = await newContact({ name: "Twice" })
      const result = await importing({ contacts: [{ phone: contact.phone, name: "Twice A" }, { phone: contact.phone, name: "Twice B" }] })
      expect(result.status).toBe(200)
      expect((await api("GET", `/contacts/${contact.id}`)).body.name).toBe("Twice B")
      // Both rows changed the contact's name.
      expect(result.body).toMatchObject({ created: 0, updated: 2, unchanged: 0 })
    })

    it("subscribes nobody without optin_confirmed: true, and with it subscribes with the opt-in method import", async () => {
      const list = await createList({ name: "Imported" })
      const second = await createList({ name: "Imported too" })
      const existing = await newContact()
      await api("POST", `/lists/${second.id}/subscriptions`, { contact_id: existing.id })
      const [p1, p2] = [newPhone(), newPhone()]

      const unconfirmed = await importing({ contacts: [{ name: "One", phone: p1 }], list_ids: [list.id] })
      expect(unconfirmed.status).toBe(200)
      expect(unconfirmed.body).toMatchObject({ created: 1, subscribed: 0, subscriptions_applied: false })
      const one = await contactByPhone(p1)
      expect((await subscriptionsOf(one.id)).items).toEqual([])
      const falsy = await importing({ contacts: [{ name: "One", phone: p1 }], list_ids: [list.id], optin_confirmed: false })
      expect(falsy.body).toMatchObject({ subscribed: 0, subscriptions_applied: false })
      // Confirmed but with no list: nothing to subscribe to.
      expect((await importing({ contacts: [{ name: "One", phone: p1 }], optin_confirmed: true })).body)
        .toMatchObject({ subscribed: 0, subscriptions_applied: false })
      expect((await api("GET", `/lists/${list.id}`)).body.subscriber_count).toBe(0)

      const confirmed = await importing({
        contacts: [{ name: "One", phone: p1 }, { name: "Two", phone: p2 }, { phone: existing.phone }],
        list_ids: [list.id, second.id, list.id],
        optin_confirmed: true
      })
      expect(confirmed.status, JSON.stringify(confirmed.body)).toBe(200)
      // Three contacts on two lists, less the one already on the second.
      expect(confirmed.body).toEqual({ created: 1, updated: 0, unchanged: 2, subscribed: 5, subscriptions_applied: true, failed: [] })
      const two = await contactByPhone(p2)
      for (const contact of [one, two]) {
        const { items } = await subscriptionsOf(contact.id)
        expect(items.map((s) => [s.slug, s.status, s.optin_method]).sort()).toEqual([
          ["imported", "subscribed", "import"],
          ["imported-too", "subscribed", "import"]
        ])
      }
      // The existing subscription keeps how it came about.
      const kept = (await subscriptionsOf(existing.id)).items
      expect(kept.find((s) => s.list_id === second.id)?.optin_method).toBe("api")
      expect(kept.find((s) => s.list_id === list.id)?.optin_method).toBe("import")
      expect((await api("GET", `/lists/${list.id}`)).body.subscriber_count).toBe(3)
    })

    it("reports a row it cannot store by its index and imports the others", async () => {
      const list = await createList({ name: "Partly imported" })
      const holder = await newContact({ email: "taken@example.com" })
      const someone = await newContact({ name: "Someone" })
      const [p1, p2] = [newPhone(), newPhone()]
      const result = await importing({
        contacts: [
          { name: "Good one", phone: p1 },
          // Nothing that names or reaches anyone.
          { language: "fr" },
          { name: "Good two", phone: p2 },
          // Matched by phone, then claiming an email another contact holds.
          { name: "Clash", phone: someone.phone, email: "taken@example.com" }
        ],
        list_ids: [list.id],
        optin_confirmed: true
      })
      expect(result.status, JSON.stringify(result.body)).toBe(200)
      expect(result.body).toMatchObject({ created: 2, updated: 0, unchanged: 0, subscribed: 2, subscriptions_applied: true })
      expect(result.body.failed.map((f: any) => f.index)).toEqual([1, 3])
      for (const failure of result.body.failed) expect(failure.detail).toEqual(expect.any(String))
      expect(await contactByPhone(p1)).toBeDefined()
      expect(await contactByPhone(p2)).toBeDefined()
      expect((await api("GET", `/contacts/${someone.id}`)).body).toMatchObject({ name: "Someone", email: null })
      expect((await subscriptionsOf(someone.id)).items).toEqual([])
      expect((await api("GET", `/contacts/${holder.id}`)).body).toMatchObject({ phone: holder.phone, email: "taken@example.com" })
      expect((await api("GET", `/lists/${list.id}`)).body.subscriber_count).toBe(2)
    })

    it("stores a large import in groups: a row it cannot store, past the first hundred, is reported by its own index and its neighbours are kept", async () => {
      const list = await createList({ name: "Imported in groups" })
      const phones = Array.from({ length: 250 }, () => newPhone())
      const contacts: Array<Record<string, unknown>> = phones.map((phone, n) => ({ name: `Grouped ${n}`, phone }))
      // Index 150: nothing that names or reaches anyone; index 249 is index 3's phone again (an update).
      contacts[150] = { language: "fr" }
      contacts[249] = { name: "Grouped 3 renamed", phone: phones[3] }
      const result = await importing({ contacts, list_ids: [list.id], optin_confirmed: true })
      expect(result.status, JSON.stringify(result.body)).toBe(200)
      expect(result.body).toMatchObject({ created: 248, updated: 1, unchanged: 0, subscribed: 248, subscriptions_applied: true })
      expect(result.body.failed.map((f: any) => f.index)).toEqual([150])
      // The tenant's contacts read once, by phone.
      const byPhone = new Map<string, any>()
      for (let page = 1;; page++) {
        const got = await api("GET", `/contacts?page_size=100&page=${page}`)
        expect(got.status).toBe(200)
        for (const contact of got.body.items) byPhone.set(contact.phone, contact)
        if (page >= got.body.pagination.total_pages) break
      }
      expect(phones.filter((phone) => byPhone.has(phone))).toHaveLength(248)
      for (const n of [149, 151, 200]) expect(byPhone.get(phones[n]!)).toMatchObject({ name: `Grouped ${n}` })
      expect(byPhone.get(phones[3]!)).toMatchObject({ name: "Grouped 3 renamed" })
      expect((await api("GET", `/lists/${list.id}`)).body.subscriber_count).toBe(248)
    }, 60_000)

    it("answers 404 for an unknown list id and 422 for a dynamic list or a malformed request, importing nothing", async () => {
      const phone = newPhone()
      const unknown = await importing({ contacts: [{ name: "Nobody", phone }], list_ids: [UNKNOWN_ID], optin_confirmed: true })
      expect(unknown.status).toBe(404)
      const dynamic = await createList({ name: "Dynamic import", type: "dynamic", filters: { has_email: true } })
      expect((await importing({ contacts: [{ name: "Nobody", phone }], list_ids: [dynamic.id], optin_confirmed: true })).status).toBe(422)
      expect((await importing({ contacts: [] })).status).toBe(422)
      expect((await importing({ contacts: [{ name: "Nobody", phone }], list_ids: ["nope"] })).status).toBe(422)
      expect((await importing({})).status).toBe(422)
      expect(await contactByPhone(phone)).toBeUndefined()
    })
  })

  // ---------------------------------------------------------------------------------------------

  describe("opt-in keywords through the operator's webhooks", () => {
    let newsletter: any
    let promo: any
    const DEFAULT_WELCOME = "You are now subscribed to Newsletter. Reply 'stop' to leave."

    beforeAll(async () => {
      newsletter = await createList({ name: "Newsletter", slug: "newsletter", is_default: true })
      promo = await createList({ name: "Promo", slug: "promo" })
    })

    /** A new number that subscribed by keyword to `lists` (slugs; "" for the default). */
    const subscriber = async (...lists: ReadonlyArray<string>) => {
      const from = newSender()
      for (const slug of lists) await says(from, slug === "" ? "start" : `start ${slug}`)
      return { from, contact: await contactOf(from) }
    }

    it("'START' from a new number subscribes it to the default list (method keyword) and sends the default welcome", async () => {
      const from = newSender()
      const before = mark()
      await says(from, "START")
      const contact = await contactOf(from)
      const { items } = await subscriptionsOf(contact.id)
      expect(items).toEqual([
        expect.objectContaining({ list_id: newsletter.id, slug: "newsletter", status: "subscribed", optin_method: "keyword", unsubscribed_at: null })
      ])
      const sent = sentTo(from, before)
      expect(sent).toEqual([DEFAULT_WELCOME])
      expect(sent[0]).toContain("Reply 'stop' to leave")
      // The keyword message itself is stored in the conversation, and so is the welcome.
      const messages = await messagesWith(contact.id)
      expect(messages.map((m) => [m.direction, m.text])).toEqual([["inbound", "START"], ["outbound", DEFAULT_WELCOME]])
      expect(messages[0]).toMatchObject({ channel_id: channelId, message_type: "text" })
      expect((await api("GET", `/lists/${newsletter.id}`)).body.subscriber_count).toBeGreaterThanOrEqual(1)
    })

    it("sends a list's own welcome_message instead when it is set, and the default again once reset", async () => {
      const welcome = "Welcome to the Newsletter! Send STOP whenever you like."
      expect((await api("PATCH", `/lists/${newsletter.id}`, { welcome_message: welcome })).status).toBe(200)
      const from = newSender()
      let before = mark()
      await says(from, "subscribe")
      expect(sentTo(from, before)).toEqual([welcome])
      expect(await statusesOf((await contactOf(from)).id)).toEqual({ newsletter: "subscribed" })

      expect((await api("PATCH", `/lists/${newsletter.id}`, { welcome_message: null })).status).toBe(200)
      // Already subscribed and 'start' again: the welcome goes out again; nothing else changes.
      before = mark()
      await says(from, "Start")
      expect(sentTo(from, before)).toEqual([DEFAULT_WELCOME])
      expect((await subscriptionsOf((await contactOf(from)).id)).items).toHaveLength(1)
    })

    it("'start promo' subscribes to the list with slug promo only, with its welcome", async () => {
      const from = newSender()
      const before = mark()
      await says(from, "start promo")
      const contact = await contactOf(from)
      const { items } = await subscriptionsOf(contact.id)
      expect(items).toEqual([expect.objectContaining({ list_id: promo.id, slug: "promo", status: "subscribed", optin_method: "keyword" })])
      expect(sentTo(from, before)).toEqual(["You are now subscribed to Promo. Reply 'stop' to leave."])
    })

    it("'Stop!!' leaves every list, emits contact.unsubscribed for each, and the operator receives a confirmation", async () => {
      const { from, contact } = await subscriber("", "promo")
      expect(await statusesOf(contact.id)).toEqual({ newsletter: "subscribed", promo: "subscribed" })
      const eventsBefore = (await events("contact.unsubscribed")).length
      const before = mark()
      await says(from, "Stop!!")
      expect(await statusesOf(contact.id)).toEqual({ newsletter: "unsubscribed", promo: "unsubscribed" })
      const sent = sentTo(from, before)
      expect(sent).toHaveLength(1)
      expect(sent[0]).toMatch(/unsubscribed/i)
      expect(sent[0]).toContain("Newsletter")
      expect(sent[0]).toContain("Promo")
      const emitted = (await events("contact.unsubscribed")).slice(eventsBefore)
      expect(emitted.map((e) => e.data).sort((a, b) => a.slug.localeCompare(b.slug))).toEqual([
        { contact_id: contact.id, list_id: newsletter.id, slug: "newsletter", method: "keyword", channel_id: channelId },
        { contact_id: contact.id, list_id: promo.id, slug: "promo", method: "keyword", channel_id: channelId }
      ])
      // 'stop' is not a total opt-out: no marketing opt-out is recorded.
      expect((await subscriptionsOf(contact.id)).marketing_opt_outs).toEqual([])
    })

    it("'stop promo' leaves only promo; 'stop all' leaves the rest", async () => {
      const { from, contact } = await subscriber("", "promo")
      let before = mark()
      await says(from, "stop promo")
      expect(await statusesOf(contact.id)).toEqual({ newsletter: "subscribed", promo: "unsubscribed" })
      const sent = sentTo(from, before)
      expect(sent).toHaveLength(1)
      expect(sent[0]).toContain("Promo")
      expect(sent[0]).not.toContain("Newsletter")

      before = mark()
      await says(from, "STOP ALL")
      expect(await statusesOf(contact.id)).toEqual({ newsletter: "unsubscribed", promo: "unsubscribed" })
      expect(sentTo(from, before)).toHaveLength(1)
    })

    it("full-width 'ＳＴＯＰ' works like 'stop'", async () => {
      const { from, contact } = await subscriber("")
      const before = mark()
      await says(from, "ＳＴＯＰ")
      expect(await statusesOf(contact.id)).toEqual({ newsletter: "unsubscribed" })
      expect(sentTo(from, before)).toHaveLength(1)
    })

    it("'stop' from a contact subscribed to nothing changes nothing, sends nothing, and is stored as a normal message", async () => {
      const from = newSender()
      const before = mark()
      await says(from, "stop")
      const contact = await contactOf(from)
      expect(await subscriptionsOf(contact.id)).toEqual({ items: [], marketing_opt_outs: [] })
      expect(sentTo(from, before)).toEqual([])
      expect((await messagesWith(contact.id)).map((m) => [m.direction, m.text])).toEqual([["inbound", "stop"]])

      // And from one who left everything already.
      const { from: left, contact: leftContact } = await subscriber("")
      await says(left, "stop")
      const again = mark()
      await says(left, "stop")
      expect(await statusesOf(leftContact.id)).toEqual({ newsletter: "unsubscribed" })
      expect(sentTo(left, again)).toEqual([])
    })

    it("'cancel my order' is a normal message: no change and no reply", async () => {
      const { from, contact } = await subscriber("")
      const before = mark()
      await says(from, "cancel my order")
      expect(await subscriptionsOf(contact.id)).toMatchObject({ items: [expect.objectContaining({ status: "subscribed" })], marketing_opt_outs: [] })
      expect(sentTo(from, before)).toEqual([])
      expect((await messagesWith(contact.id)).filter((m) => m.direction === "inbound").map((m) => m.text))
        .toEqual(["start", "cancel my order"])
    })

    it("a single-word opt-out ('Abmelden') leaves every list and records a marketing opt-out on the contact", async () => {
      const { from, contact } = await subscriber("", "promo")
      const eventsBefore = (await events("contact.unsubscribed")).length
      const before = mark()
      await says(from, "Abmelden")
      const { items, marketing_opt_outs } = await subscriptionsOf(contact.id)
      expect(Object.fromEntries(items.map((s) => [s.slug, s.status]))).toEqual({ newsletter: "unsubscribed", promo: "unsubscribed" })
      expect(marketing_opt_outs).toEqual([
        { contact_id: contact.id, channel_id: channelId, source: "keyword", opted_out_at: expect.any(String) }
      ])
      const sent = sentTo(from, before)
      expect(sent).toHaveLength(1)
      expect(sent[0]).toMatch(/unsubscribed/i)
      const emitted = (await events("contact.unsubscribed")).slice(eventsBefore)
      expect(emitted.map((e) => e.data.method)).toEqual(["optout", "optout"])
      expect((await messagesWith(contact.id)).some((m) => m.direction === "inbound" && m.text === "Abmelden")).toBe(true)

      // Said by someone on no list at all, it is still recorded (and answered once).
      const stranger = newSender()
      const strangerMark = mark()
      await says(stranger, "  arrêt ")
      const strangerContact = await contactOf(stranger)
      expect((await subscriptionsOf(strangerContact.id)).marketing_opt_outs).toEqual([
        expect.objectContaining({ channel_id: channelId, source: "keyword" })
      ])
      expect(sentTo(stranger, strangerMark)).toHaveLength(1)
    })

    it("a quick-reply button whose text is 'STOP' acts like typed text", async () => {
      const { from, contact } = await subscriber("")
      const before = mark()
      const button = {
        from,
        id: wamid(),
        timestamp: await clockSeconds(),
        type: "button",
        context: { from: "15551234567", id: wamid() },
        button: { text: "STOP", payload: "stop-button-payload" }
      }
      await deliver(payloadOf(from, button))
      expect(await statusesOf(contact.id)).toEqual({ newsletter: "unsubscribed" })
      expect(sentTo(from, before)).toHaveLength(1)
    })

    it("does nothing with keywords in a workspace without lists: no change and no reply", async () => {
      const from = newSender()
      const before = mark()
      await says(from, "STOP", OTHER_PHONE_NUMBER_ID, OTHER_WABA_ID)
      await says(from, "start", OTHER_PHONE_NUMBER_ID, OTHER_WABA_ID)
      await says(from, "Abmelden", OTHER_PHONE_NUMBER_ID, OTHER_WABA_ID)
      const contact = await contactOf(from, other)
      const got = await api("GET", `/contacts/${contact.id}/subscriptions`, undefined, other)
      expect(got).toEqual({ status: 200, body: { items: [], marketing_opt_outs: [] } })
      expect(sentTo(from, before, OTHER_PHONE_NUMBER_ID)).toEqual([])
      expect(sentTo(from, before)).toEqual([])
      expect((await messagesWith(contact.id, other)).map((m) => [m.direction, m.text]))
        .toEqual([["inbound", "STOP"], ["inbound", "start"], ["inbound", "Abmelden"]])
      // The first tenant has not seen this number at all.
      expect(await contactByPhone(`+${from}`)).toBeUndefined()
    })

    it("a redelivered keyword payload has the effect of one: one subscription, one welcome, one stored message", async () => {
      const from = newSender()
      const before = mark()
      const body = await says(from, "start")
      await h.advance(60)
      await deliver(body)
      await deliver(body)
      expect(sentTo(from, before)).toEqual([DEFAULT_WELCOME])
      const contact = await contactOf(from)
      expect((await subscriptionsOf(contact.id)).items).toHaveLength(1)
      expect((await messagesWith(contact.id)).filter((m) => m.direction === "inbound")).toHaveLength(1)

      // Delivered twice at once before any work ran: still one welcome.
      const twice = newSender()
      const twiceMark = mark()
      const raced = payloadOf(twice, await textMessage(twice, "start promo"))
      const posted = await Promise.all([h.post(raced), h.post(raced)])
      expect(posted.map((p) => p.status)).toEqual([200, 200])
      await drain()
      expect(sentTo(twice, twiceMark)).toEqual(["You are now subscribed to Promo. Reply 'stop' to leave."])
      expect((await subscriptionsOf((await contactOf(twice)).id)).items).toHaveLength(1)
    })

    it("ignores a bare 'start' when the workspace has no default list, while 'start <slug>' still works", async () => {
      expect((await api("PATCH", `/lists/${newsletter.id}`, { is_default: false })).body.is_default).toBe(false)
      try {
        expect((await api("GET", "/lists")).body.items.filter((l: any) => l.is_default)).toEqual([])
        const from = newSender()
        const before = mark()
        await says(from, "start")
        const contact = await contactOf(from)
        expect((await subscriptionsOf(contact.id)).items).toEqual([])
        expect(sentTo(from, before)).toEqual([])
        await says(from, "start newsletter")
        expect(await statusesOf(contact.id)).toEqual({ newsletter: "subscribed" })
        expect(sentTo(from, before)).toEqual([DEFAULT_WELCOME])
      } finally {
        expect((await api("PATCH", `/lists/${newsletter.id}`, { is_default: true })).body.is_default).toBe(true)
      }
    })
  })

  // ---------------------------------------------------------------------------------------------

  describe("the operator's user_preferences webhook", () => {
    const preferences = async (waId: string, value: "stop" | "resume") => ({
      object: "whatsapp_business_account",
      entry: [{
        id: WABA_ID,
        changes: [{
          field: "user_preferences",
          value: {
            messaging_product: "whatsapp",
            metadata: { display_phone_number: "15551234567", phone_number_id: PHONE_NUMBER_ID },
            contacts: [{ profile: { name: "Kim" }, wa_id: waId }],
            user_preferences: [{
              wa_id: waId,
              detail: value === "stop" ? "User requested to stop marketing messages" : "User requested to resume marketing messages",
              category: "marketing_messages",
              value,
              timestamp: Number(await clockSeconds())
            }]
          }
        }]
      }]
    })

    it("records a marketing opt-out with source operator_preferences, and 'resume' removes it", async () => {
      const contact = await newContact()
      const waId = contact.phone.replace("+", "")
      const before = mark()
      await deliver(await preferences(waId, "stop"))
      const stopped = await subscriptionsOf(contact.id)
      expect(stopped.marketing_opt_outs).toEqual([
        { contact_id: contact.id, channel_id: channelId, source: "operator_preferences", opted_out_at: expect.any(String) }
      ])
      // Nothing is sent back for the operator's own setting.
      expect(sentTo(waId, before)).toEqual([])

      await h.advance(60)
      await deliver(await preferences(waId, "resume"))
      expect((await subscriptionsOf(contact.id)).marketing_opt_outs).toEqual([])
    })

    it("records it for a number the workspace did not know yet, as a new contact", async () => {
      const waId = newSender()
      await deliver(await preferences(waId, "stop"))
      const contact = await contactOf(waId)
      expect((await subscriptionsOf(contact.id)).marketing_opt_outs).toEqual([
        expect.objectContaining({ channel_id: channelId, source: "operator_preferences" })
      ])
      // The other tenant learnt nothing.
      expect(await contactByPhone(`+${waId}`, other)).toBeUndefined()
    })
  })
})
