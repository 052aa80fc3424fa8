import { Effect, Option } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { BlobStore } from "../../src/ports/BlobStore.ts"
import { serviceDatabases } from "../support/Databases.ts"
import { rawEmail } from "../support/EmailHost.ts"
import { bootstrap, receiveEmail, startTestApp, type TestApp } from "../support/TestApp.ts"
import { outboxEvents } from "./OutboxEvents.ts"

type Contact = { readonly id: string } & Record<string, unknown>

describe.each(serviceDatabases)("contacts on $name", (database) => {
  let test: TestApp
  beforeAll(async () => {
    test = await startTestApp(await database.open())
  })
  afterAll(() => test.close())

  const now = () => new Date(test.clock.nowMillis()).toISOString()

  /** A fresh tenant and its parent key, so every test starts from an empty contact list. */
  const newTenant = async () => {
    const owner = await bootstrap(test)
    const as = (method: string, path: string, body?: unknown) => test.call(method, path, { token: owner.api_key, body })
    return { ...owner, as }
  }

  const create = async (tenant: Awaited<ReturnType<typeof newTenant>>, body: Record<string, unknown>): Promise<Contact> => {
    const answer = await tenant.as("POST", "/contacts", body)
    expect(answer.status).toBe(201)
    return answer.body
  }

  describe("POST /contacts", () => {
    it("answers 201 with the contact, phone in E.164 and email lower-cased", async () => {
      const tenant = await newTenant()
      const answer = await tenant.as("POST", "/contacts", {
        name: "  Ada Lovelace ",
        phone: "+1 (415) 555-0100",
        email: "Ada@Example.COM",
        language: "pt_BR",
        custom_fields: { plan: "pro", seats: 3, vip: true, referrer: null }
      })
      expect(answer.status).toBe(201)
      expect(answer.body).toEqual({
        id: expect.stringMatching(/^[0-9a-f-]{36}$/),
        tenant_id: tenant.tenant_id,
        name: "Ada Lovelace",
        phone: "+14155550100",
        email: "ada@example.com",
        language: "pt_BR",
        custom_fields: { plan: "pro", seats: 3, vip: true, referrer: null },
        created_at: now(),
        updated_at: null
      })
    })

    it("stores what it answered: GET returns the same contact", async () => {
      const tenant = await newTenant()
      const created = await create(tenant, { name: "Ada", email: "ada@example.com", custom_fields: { seats: 2.5 } })
      const fetched = await tenant.as("GET", `/contacts/${created.id}`)
      expect(fetched.status).toBe(200)
      expect(fetched.body).toEqual(created)
    })

    it("needs at least one of name, phone or email", async () => {
      const tenant = await newTenant()
      const answer = await tenant.as("POST", "/contacts", { language: "en", custom_fields: { a: 1 } })
      expect(answer.status).toBe(422)
      expect(answer.body.detail).toEqual([{ loc: ["body"], msg: "Give at least one of name, phone or email", type: "missing" }])
    })

    it.each([
      ["phone without a country code", { phone: "415-555-0100" }, ["body", "phone"]],
      ["phone starting with +0", { phone: "+0123456" }, ["body", "phone"]],
      ["phone with letters", { phone: "+1 415 CALL-ADA" }, ["body", "phone"]],
      ["phone longer than 15 digits", { phone: "+1234567890123456" }, ["body", "phone"]],
      ["email without @", { email: "ada.example.com" }, ["body", "email"]],
      ["email with a space", { email: "ada lovelace@example.com" }, ["body", "email"]],
      ["language not a code", { name: "Ada", language: "English!" }, ["body", "language"]],
      ["name empty", { name: "" }, ["body", "name"]],
      ["name blank", { name: "  " }, ["body", "name"]],
      ["name too long", { name: "n".repeat(256) }, ["body", "name"]],
      ["name not a string", { name: ["Ada"] }, ["body", "name"]],
      ["name holding U+0000", { name: "Ada\u0000" }, ["body", "name"]],
      ["email holding U+0000", { email: "a\u0000@example.com" }, ["body", "email"]],
      ["custom_fields not an object", { name: "Ada", custom_fields: ["a"] }, ["body", "custom_fields"]],
      ["custom field holding an object", { name: "Ada", custom_fields: { address: { city: "Lisbon" } } }, ["body", "custom_fields", "address"]],
      ["custom field key not snake_case", { name: "Ada", custom_fields: { "Bad Key": 1 } }, ["body", "custom_fields", "Bad Key"]],
      ["more than 100 custom fields", { name: "Ada", custom_fields: Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`f${i}`, i])) }, ["body", "custom_fields"]],
      ["a field the contact does not have", { name: "Ada", nickname: "A" }, ["body", "nickname"]],
      ["tenant_id, which comes from the key", { name: "Ada", tenant_id: "00000000-0000-4000-8000-000000000000" }, ["body", "tenant_id"]]
    ])("answers 422 naming the field: %s", async (_, body, loc) => {
      const tenant = await newTenant()
      const answer = await tenant.as("POST", "/contacts", body)
      expect(answer.status).toBe(422)
      expect(answer.body.detail).toContainEqual({ loc, msg: expect.any(String), type: expect.any(String) })
      expect((await tenant.as("GET", "/contacts")).body.pagination.total).toBe(0)
    })

    it("answers 409 for a phone another contact of the tenant has, however it is written", async () => {
      const tenant = await newTenant()
      const first = await create(tenant, { phone: "+14155550100" })
      const answer = await tenant.as("POST", "/contacts", { name: "Twin", phone: "+1 415.555.0100" })
      expect(answer.status).toBe(409)
      expect(answer.body).toEqual({ detail: { code: "conflict", message: `Contact ${first.id} already has phone +14155550100` } })
    })

    it("answers 409 for an email another contact of the tenant has, in any case", async () => {
      const tenant = await newTenant()
      await create(tenant, { email: "ada@example.com" })
      const answer = await tenant.as("POST", "/contacts", { email: "ADA@example.com" })
      expect(answer.status).toBe(409)
    })

    it("stores nothing and announces nothing when it answers 409", async () => {
      const tenant = await newTenant()
      await create(tenant, { phone: "+14155550100" })
      await tenant.as("POST", "/contacts", { phone: "+14155550100" })
      expect((await tenant.as("GET", "/contacts")).body.pagination.total).toBe(1)
      expect(await outboxEvents(test, tenant.tenant_id)).toHaveLength(1)
    })

    it("lets two tenants each have a contact with the same phone and email", async () => {
      const a = await newTenant()
      const b = await newTenant()
      const body = { phone: "+14155550100", email: "ada@example.com" }
      await create(a, body)
      expect((await b.as("POST", "/contacts", body)).status).toBe(201)
    })
  })

  describe("GET /contacts/{contact_id}", () => {
    it("answers 404 for an id that names no contact", async () => {
      const tenant = await newTenant()
      const id = crypto.randomUUID()
      const answer = await tenant.as("GET", `/contacts/${id}`)
      expect(answer.status).toBe(404)
      expect(answer.body).toEqual({ detail: { code: "not_found", message: `Contact ${id} not found` } })
    })

    it.each(["not-a-uuid", "1", "%00", "..%2F..%2Ftenants"])("answers 404 for a malformed id %j", async (id) => {
      const tenant = await newTenant()
      expect((await tenant.as("GET", `/contacts/${id}`)).status).toBe(404)
    })

    it("finds a contact by its id written in upper case", async () => {
      const tenant = await newTenant()
      const created = await create(tenant, { name: "Ada" })
      expect((await tenant.as("GET", `/contacts/${created.id.toUpperCase()}`)).body).toEqual(created)
    })
  })

  describe("GET /contacts", () => {
    const createMany = async (tenant: Awaited<ReturnType<typeof newTenant>>, count: number) => {
      const ids: Array<string> = []
      for (let i = 0; i < count; i++) {
        test.clock.advance(1_000)
        ids.push((await create(tenant, { name: `Contact ${i}`, phone: `+1415555${String(i).padStart(4, "0")}` })).id)
      }
      return ids
    }
    const ids = (answer: { body: { items: ReadonlyArray<Contact> } }) => answer.body.items.map((c) => c.id)

    it("answers an empty page for a tenant without contacts", async () => {
      const tenant = await newTenant()
      const answer = await tenant.as("GET", "/contacts")
      expect(answer.status).toBe(200)
      expect(answer.body).toEqual({ items: [], pagination: { page: 1, page_size: 25, total: 0, total_pages: 0 } })
    })

    it("lists newest first, 25 to a page by default", async () => {
      const tenant = await newTenant()
      const created = await createMany(tenant, 30)
      const newestFirst = [...created].reverse()

      const first = await tenant.as("GET", "/contacts")
      expect(first.body.pagination).toEqual({ page: 1, page_size: 25, total: 30, total_pages: 2 })
      expect(ids(first)).toEqual(newestFirst.slice(0, 25))

      const second = await tenant.as("GET", "/contacts?page=2")
      expect(second.body.pagination).toEqual({ page: 2, page_size: 25, total: 30, total_pages: 2 })
      expect(ids(second)).toEqual(newestFirst.slice(25))
    })

    it("takes page_size up to 100 and answers an empty page beyond the end", async () => {
      const tenant = await newTenant()
      const created = await createMany(tenant, 7)

      const all = await tenant.as("GET", "/contacts?page_size=100")
      expect(ids(all)).toEqual([...created].reverse())

      const small = await tenant.as("GET", "/contacts?page=3&page_size=3")
      expect(ids(small)).toEqual([created[0]])
      expect(small.body.pagination).toEqual({ page: 3, page_size: 3, total: 7, total_pages: 3 })

      const beyond = await tenant.as("GET", "/contacts?page=9&page_size=3")
      expect(beyond.status).toBe(200)
      expect(beyond.body).toEqual({ items: [], pagination: { page: 9, page_size: 3, total: 7, total_pages: 3 } })
    })

    it.each([
      ["page_size=101", ["query", "page_size"]],
      ["page_size=0", ["query", "page_size"]],
      ["page=0", ["query", "page"]],
      ["page=-1", ["query", "page"]],
      ["page=1.5", ["query", "page"]],
      ["page=two", ["query", "page"]],
      ["page=1e308", ["query", "page"]]
    ])("answers 422 naming the parameter for %s", async (query, loc) => {
      const tenant = await newTenant()
      const answer = await tenant.as("GET", `/contacts?${query}`)
      expect(answer.status).toBe(422)
      expect(answer.body.detail).toContainEqual({ loc, msg: expect.any(String), type: expect.any(String) })
    })
  })

  describe("PATCH /contacts/{contact_id}", () => {
    const original = {
      name: "Ada",
      phone: "+14155550100",
      email: "ada@example.com",
      language: "en",
      custom_fields: { plan: "pro", seats: 3 }
    }

    it("changes only the fields sent and stamps updated_at", async () => {
      const tenant = await newTenant()
      const created = await create(tenant, original)
      test.clock.advance(60_000)

      const answer = await tenant.as("PATCH", `/contacts/${created.id}`, { name: "Ada King", language: "en-GB" })
      expect(answer.status).toBe(200)
      expect(answer.body).toEqual({ ...created, name: "Ada King", language: "en-GB", updated_at: now() })
      expect((await tenant.as("GET", `/contacts/${created.id}`)).body).toEqual(answer.body)
    })

    it("clears a field sent as null", async () => {
      const tenant = await newTenant()
      const created = await create(tenant, original)
      const { body } = await tenant.as("PATCH", `/contacts/${created.id}`, { email: null, language: null })
      expect(body).toMatchObject({ name: "Ada", phone: "+14155550100", email: null, language: null })
    })

    it("merges custom_fields key by key, null removing a key", async () => {
      const tenant = await newTenant()
      const created = await create(tenant, original)
      const { body } = await tenant.as("PATCH", `/contacts/${created.id}`, { custom_fields: { seats: null, region: "EU" } })
      expect(body.custom_fields).toEqual({ plan: "pro", region: "EU" })
    })

    it("normalises a new phone and email as on creation", async () => {
      const tenant = await newTenant()
      const created = await create(tenant, original)
      const { body } = await tenant.as("PATCH", `/contacts/${created.id}`, { phone: "+44 20 7946 0958", email: "ADA@Lovelace.org" })
      expect(body).toMatchObject({ phone: "+442079460958", email: "ada@lovelace.org" })
    })

    it("answers the contact unchanged, without an event, when nothing changes", async () => {
      const tenant = await newTenant()
      const created = await create(tenant, original)
      test.clock.advance(60_000)

      const answer = await tenant.as("PATCH", `/contacts/${created.id}`, {
        name: "Ada",
        phone: "+1 (415) 555-0100",
        email: "ADA@example.com",
        custom_fields: { plan: "pro", absent: null }
      })
      expect(answer.status).toBe(200)
      expect(answer.body).toEqual(created)
      expect(await outboxEvents(test, tenant.tenant_id, "contact.updated")).toEqual([])
    })

    it("keeps at least one of name, phone or email", async () => {
      const tenant = await newTenant()
      const created = await create(tenant, { name: "Ada" })
      const answer = await tenant.as("PATCH", `/contacts/${created.id}`, { name: null })
      expect(answer.status).toBe(422)
      expect(answer.body.detail).toContainEqual(expect.objectContaining({ loc: ["body"] }))
      expect((await tenant.as("GET", `/contacts/${created.id}`)).body).toEqual(created)
    })

    it("answers 409 for a phone or email another contact has, and changes nothing", async () => {
      const tenant = await newTenant()
      await create(tenant, { phone: "+14155550100", email: "ada@example.com" })
      const other = await create(tenant, { name: "Grace", phone: "+14155550199" })

      expect((await tenant.as("PATCH", `/contacts/${other.id}`, { phone: "+1 415 555 0100" })).status).toBe(409)
      expect((await tenant.as("PATCH", `/contacts/${other.id}`, { email: "Ada@Example.com" })).status).toBe(409)
      expect((await tenant.as("GET", `/contacts/${other.id}`)).body).toEqual(other)
      expect(await outboxEvents(test, tenant.tenant_id, "contact.updated")).toEqual([])
    })

    it.each([
      ["phone", { phone: "call me" }, ["body", "phone"]],
      ["email", { email: 42 }, ["body", "email"]],
      ["custom field value", { custom_fields: { tags: ["a"] } }, ["body", "custom_fields", "tags"]],
      ["id, which cannot change", { id: "00000000-0000-4000-8000-000000000000" }, ["body", "id"]],
      ["created_at, which cannot change", { created_at: "2020-01-01T00:00:00.000Z" }, ["body", "created_at"]]
    ])("answers 422 naming the field: %s", async (_, body, loc) => {
      const tenant = await newTenant()
      const created = await create(tenant, original)
      const answer = await tenant.as("PATCH", `/contacts/${created.id}`, body)
      expect(answer.status).toBe(422)
      expect(answer.body.detail).toContainEqual({ loc, msg: expect.any(String), type: expect.any(String) })
      expect((await tenant.as("GET", `/contacts/${created.id}`)).body).toEqual(created)
    })

    it("answers 404 for a contact that does not exist", async () => {
      const tenant = await newTenant()
      const id = crypto.randomUUID()
      const answer = await tenant.as("PATCH", `/contacts/${id}`, { name: "Ghost" })
      expect(answer.status).toBe(404)
      expect(answer.body).toEqual({ detail: { code: "not_found", message: `Contact ${id} not found` } })
    })
  })

  describe("events", () => {
    const ENVELOPE_FIELDS = ["created_at", "data", "event_id", "id", "tenant_id", "type"]

    it("appends contact.created with the spec's envelope and the contact as answered", async () => {
      const tenant = await newTenant()
      const created = await create(tenant, { name: "Ada", phone: "+14155550100" })

      const events = await outboxEvents(test, tenant.tenant_id)
      expect(events).toHaveLength(1)
      const [event] = events
      expect(Object.keys(event!).sort()).toEqual(ENVELOPE_FIELDS)
      expect(event).toEqual({
        id: expect.any(String),
        type: "contact.created",
        event_id: event!.id,
        created_at: created.created_at,
        tenant_id: tenant.tenant_id,
        data: { contact: created }
      })
    })

    it("appends contact.updated with the contact after the change and the changed fields", async () => {
      const tenant = await newTenant()
      const created = await create(tenant, { name: "Ada", custom_fields: { plan: "free" } })
      test.clock.advance(5_000)
      const { body: updated } = await tenant.as("PATCH", `/contacts/${created.id}`, {
        name: "Ada King",
        phone: "+14155550100",
        custom_fields: { plan: "pro" }
      })

      const events = await outboxEvents(test, tenant.tenant_id)
      expect(events.map((e) => e.type)).toEqual(["contact.created", "contact.updated"])
      const event = events[1]!
      expect(Object.keys(event).sort()).toEqual(ENVELOPE_FIELDS)
      expect(event).toMatchObject({ tenant_id: tenant.tenant_id, created_at: updated.updated_at })
      expect(event.data).toEqual({ contact: updated, changed_fields: ["name", "phone", "custom_fields"] })
      expect(event.id).not.toBe(events[0]!.id)
    })
  })

  describe("tenant isolation", () => {
    it("hides a contact from another tenant's key: 404 on GET and PATCH, absent from its list", async () => {
      const a = await newTenant()
      const b = await newTenant()
      const contact = await create(a, { name: "Ada", email: "ada@example.com" })

      expect((await b.as("GET", `/contacts/${contact.id}`)).status).toBe(404)
      const patch = await b.as("PATCH", `/contacts/${contact.id}`, { name: "Hijacked" })
      expect(patch.status).toBe(404)
      expect(patch.body).toEqual({ detail: { code: "not_found", message: `Contact ${contact.id} not found` } })
      expect((await b.as("GET", "/contacts")).body.items).toEqual([])

      expect((await a.as("GET", `/contacts/${contact.id}`)).body).toEqual(contact)
      expect((await outboxEvents(test, a.tenant_id)).map((e) => e.type)).toEqual(["contact.created"])
      expect(await outboxEvents(test, b.tenant_id)).toEqual([])
    })
  })
  describe("DELETE /contacts/{contact_id}", () => {
    const PDF = new TextEncoder().encode("%PDF-1.4 Ana's invoice".padEnd(2_000, "x"))

    /** A mailbox of the tenant, and an email from `from` with a PDF received on it (drained, so stored). */
    const mailbox = async (tenant: Awaited<ReturnType<typeof newTenant>>) => {
      const integration = await tenant.as("POST", "/email-integrations", { address: `desk-${crypto.randomUUID()}@example.org` })
      expect(integration.status).toBe(201)
      const receive = async (from: string, subject: string) => {
        const raw = await rawEmail({
          from: { name: subject.split(" ")[0]!, address: from },
          to: integration.body.address,
          subject,
          messageId: `${crypto.randomUUID()}@mail.example.org`,
          text: `${subject}: see the file`,
          files: [{ filename: `${subject}.pdf`, contentType: "application/pdf", content: PDF }]
        })
        expect(await receiveEmail(test, integration.body, raw)).toBe(200)
      }
      return { integration: integration.body, receive }
    }

    const db = () => test.database.db
    const rowsOf = async (tenantId: string) => ({
      conversations: await db().selectFrom("conversations").selectAll().where("tenant_id", "=", tenantId).orderBy("id").execute(),
      messages: await db().selectFrom("messages").selectAll().where("tenant_id", "=", tenantId).orderBy("id").execute(),
      emails: await db().selectFrom("email_messages").selectAll().where("tenant_id", "=", tenantId).orderBy("id").execute(),
      emailFiles: await db().selectFrom("email_attachments").selectAll().where("tenant_id", "=", tenantId).orderBy("id").execute(),
      files: await db().selectFrom("attachments").selectAll().where("tenant_id", "=", tenantId).orderBy("id").execute(),
      subscriptions: await db().selectFrom("list_subscriptions").selectAll().where("tenant_id", "=", tenantId).orderBy("contact_id").execute()
    })
    const blob = (key: string) =>
      test.app.run(Effect.flatMap(BlobStore, (blobs) => blobs.get(key))).then(Option.isSome)

    it("erases the contact, its messages' and emails' personal data and its files, keeps the conversations closed, and announces contact.deleted", async () => {
      const tenant = await newTenant()
      const { receive } = await mailbox(tenant)
      await receive("ana@example.org", "Ana invoice")
      await receive("bob@example.org", "Bob order")
      const contacts = (await tenant.as("GET", "/contacts")).body.items as ReadonlyArray<Contact>
      const ana = contacts.find((c) => c.email === "ana@example.org")!
      const bob = contacts.find((c) => c.email === "bob@example.org")!
      const list = await tenant.as("POST", "/lists", { name: "Newsletter" })
      for (const contact of [ana, bob]) {
        expect((await tenant.as("POST", `/lists/${list.body.id}/subscriptions`, { contact_id: contact.id })).status).toBe(201)
      }
      const before = await rowsOf(tenant.tenant_id)
      const anaConversation = before.conversations.find((c) => c.contact_id === ana.id)!
      const anaFile = before.files.find((f) => f.conversation_id === anaConversation.id)!
      const bobFile = before.files.find((f) => f.conversation_id !== anaConversation.id)!
      expect(await blob(anaFile.blob_key)).toBe(true)
      test.clock.advance(60_000)

      const answer = await tenant.as("DELETE", `/contacts/${ana.id}`)

      expect(answer.status).toBe(200)
      expect(answer.body).toEqual({
        id: ana.id,
        deleted: true,
        conversation_ids: [anaConversation.id],
        messages_erased: 1,
        emails_erased: 1,
        files_deleted: 1
      })
      expect((await tenant.as("GET", `/contacts/${ana.id}`)).status).toBe(404)
      expect((await tenant.as("GET", "/contacts")).body.items.map((c: Contact) => c.id)).toEqual([bob.id])
      expect((await tenant.as("DELETE", `/contacts/${ana.id}`)).status).toBe(404)

      const after = await rowsOf(tenant.tenant_id)
      const conversation = after.conversations.find((c) => c.id === anaConversation.id)!
      expect(conversation).toEqual({ ...anaConversation, subject: null, status: "closed", closed_at: now(), updated_at: now() })
      const message = after.messages.find((m) => m.conversation_id === anaConversation.id)!
      expect(message.text).toBeNull()
      const email = after.emails.find((e) => e.conversation_id === anaConversation.id)!
      expect(JSON.parse(message.content)).toEqual({ erased: true, email_message_id: email.id })
      expect(email).toMatchObject({
        subject: null,
        from_address: null,
        to_addresses: "[]",
        reply_to_addresses: "[]",
        text_body: null,
        html_body: null,
        headers: "[]",
        message_id_header: `${email.id}@erased.invalid`
      })
      // Nothing of Ana is left in any row of the tenant; Bob's rows are as they were.
      expect(JSON.stringify(after)).not.toMatch(/ana@example\.org|Ana invoice|Ana's invoice/i)
      expect(after.files.map((f) => f.id)).toEqual([bobFile.id])
      expect(after.emailFiles.map((f) => f.attachment_id)).toEqual([bobFile.id])
      expect(await blob(anaFile.blob_key)).toBe(false)
      expect(await blob(bobFile.blob_key)).toBe(true)
      expect(after.subscriptions.map((s) => s.contact_id)).toEqual([bob.id])
      for (const table of ["conversations", "messages", "emails"] as const) {
        expect(after[table].filter((row) => row.id !== undefined && !JSON.stringify(row).includes(anaConversation.id)))
          .toEqual(before[table].filter((row) => !JSON.stringify(row).includes(anaConversation.id)))
      }
      expect((await tenant.as("GET", `/contacts/${bob.id}`)).body).toEqual(bob)

      const deleted = await outboxEvents(test, tenant.tenant_id, "contact.deleted")
      expect(deleted).toEqual([{
        id: expect.any(String),
        type: "contact.deleted",
        event_id: deleted[0]!.id,
        created_at: now(),
        tenant_id: tenant.tenant_id,
        data: { contact: { id: ana.id }, conversation_ids: [anaConversation.id], deleted_at: now() }
      }])
    })

    it("answers 404 for another tenant's contact and changes nothing of it", async () => {
      const a = await newTenant()
      const b = await newTenant()
      const { receive } = await mailbox(a)
      await receive("ana@example.org", "Ana invoice")
      const [ana] = (await a.as("GET", "/contacts")).body.items as ReadonlyArray<Contact>
      const before = await rowsOf(a.tenant_id)

      const answer = await b.as("DELETE", `/contacts/${ana!.id}`)

      expect(answer.status).toBe(404)
      expect(answer.body).toEqual({ detail: { code: "not_found", message: `Contact ${ana!.id} not found` } })
      expect(await rowsOf(a.tenant_id)).toEqual(before)
      expect((await a.as("GET", `/contacts/${ana!.id}`)).body).toEqual(ana)
      expect(await blob(before.files[0]!.blob_key)).toBe(true)
      expect(await outboxEvents(test, a.tenant_id, "contact.deleted")).toEqual([])
      expect(await outboxEvents(test, b.tenant_id, "contact.deleted")).toEqual([])
    })

    it("erases a contact without conversations, and answers 404 for an id that names no contact", async () => {
      const tenant = await newTenant()
      const contact = await create(tenant, { name: "Ada", phone: "+14155550100" })
      expect((await tenant.as("DELETE", `/contacts/${contact.id}`)).body).toEqual({
        id: contact.id,
        deleted: true,
        conversation_ids: [],
        messages_erased: 0,
        emails_erased: 0,
        files_deleted: 0
      })
      // The phone is free again: a new contact may take it.
      expect((await tenant.as("POST", "/contacts", { phone: "+14155550100" })).status).toBe(201)
      expect((await tenant.as("DELETE", `/contacts/${crypto.randomUUID()}`)).status).toBe(404)
      expect((await tenant.as("DELETE", "/contacts/not-a-uuid")).status).toBe(404)
    })

    it("needs contacts:delete: contacts:update is not enough", async () => {
      const tenant = await newTenant()
      const contact = await create(tenant, { name: "Ada" })
      const key = await test.operator((operator) =>
        operator.createApiKey({ tenantId: tenant.tenant_id, scopes: ["contacts:read", "contacts:update"] }))

      const answer = await test.call("DELETE", `/contacts/${contact.id}`, { token: key.api_key })

      expect(answer.status).toBe(403)
      expect(answer.body).toEqual({ detail: "Missing required permission(s): contacts:delete" })
      expect((await tenant.as("GET", `/contacts/${contact.id}`)).status).toBe(200)
    })

    it("lets a webhook endpoint subscribe to contact.deleted", async () => {
      const tenant = await newTenant()
      const answer = await tenant.as("POST", "/webhook-endpoints", {
        name: "Erasures",
        url: "https://hooks.example.com/erasures",
        subscribed_events: ["contact.deleted"]
      })
      expect(answer.status).toBe(201)
    })
  })
})
