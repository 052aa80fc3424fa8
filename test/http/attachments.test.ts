import { Effect, Option } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { busboyMultipart } from "../../adapters/node/BusboyMultipart.ts"
import { BlobStore } from "../../src/ports/BlobStore.ts"
import { serviceDatabases } from "../support/Databases.ts"
import { rawEmail } from "../support/EmailHost.ts"
import { bootstrap, receiveEmail, startTestApp, type TestApp } from "../support/TestApp.ts"

const DAY_MS = 86_400_000
const PDF = new TextEncoder().encode("%PDF-1.4 a price list".padEnd(3_000, "x"))

describe.each(serviceDatabases)("deleting attachments on $name", (database) => {
  let test: TestApp
  beforeAll(async () => {
    test = await startTestApp(await database.open(), { multipart: busboyMultipart })
  })
  afterAll(() => test.close())

  const newTenant = async () => {
    const owner = await bootstrap(test)
    const as = (method: string, path: string, body?: unknown) => test.call(method, path, { token: owner.api_key, body })
    return { ...owner, as }
  }
  type Tenant = Awaited<ReturnType<typeof newTenant>>

  const upload = async (tenant: Tenant, filename = "prices.pdf") => {
    const form = new FormData()
    form.append("file", new Blob([PDF], { type: "application/pdf" }), filename)
    const response = await test.app.handler(new Request("http://test.local/api/v1/attachments/upload", {
      method: "POST",
      headers: { authorization: `Bearer ${tenant.api_key}` },
      body: form
    }))
    expect(response.status).toBe(201)
    return (await response.json()) as { readonly id: string }
  }

  /** A file a contact sent by email: carried by its message from the start. */
  const receivedFile = async (tenant: Tenant) => {
    const integration = await tenant.as("POST", "/email-integrations", { address: `desk-${crypto.randomUUID()}@example.org` })
    const raw = await rawEmail({
      from: "ana@example.org",
      subject: "Invoice",
      messageId: `${crypto.randomUUID()}@mail.example.org`,
      text: "see the file",
      files: [{ filename: "invoice.pdf", contentType: "application/pdf", content: PDF }]
    })
    expect(await receiveEmail(test, integration.body, raw)).toBe(200)
    return (await rows(tenant.tenant_id))[0]!
  }

  const rows = (tenantId: string) =>
    test.database.db.selectFrom("attachments").selectAll().where("tenant_id", "=", tenantId).orderBy("created_at").orderBy("id").execute()
  const blob = (key: string) => test.app.run(Effect.flatMap(BlobStore, (blobs) => blobs.get(key))).then(Option.isSome)
  const keyOf = async (tenantId: string, id: string) => {
    const row = (await rows(tenantId)).find((r) => r.id === id)
    expect(row).toBeDefined()
    return row!.blob_key
  }

  describe("DELETE /attachments/{attachment_id}", () => {
    it("deletes an upload not sent yet, record and bytes", async () => {
      const tenant = await newTenant()
      const kept = await upload(tenant, "kept.pdf")
      const gone = await upload(tenant)
      const key = await keyOf(tenant.tenant_id, gone.id)
      expect(await blob(key)).toBe(true)

      const answer = await tenant.as("DELETE", `/attachments/${gone.id}`)

      expect(answer.status).toBe(200)
      expect(answer.body).toEqual({ id: gone.id, deleted: true })
      expect((await tenant.as("GET", `/attachments/${gone.id}`)).status).toBe(404)
      expect((await rows(tenant.tenant_id)).map((r) => r.id)).toEqual([kept.id])
      expect(await blob(key)).toBe(false)
      expect(await blob(await keyOf(tenant.tenant_id, kept.id))).toBe(true)
      expect((await tenant.as("DELETE", `/attachments/${gone.id}`)).status).toBe(404)
    })

    it("answers 409 attachment_already_sent for a file a message carries, and keeps it", async () => {
      const tenant = await newTenant()
      const file = await receivedFile(tenant)

      const answer = await tenant.as("DELETE", `/attachments/${file.id}`)

      expect(answer.status).toBe(409)
      expect(answer.body).toEqual({
        detail: {
          code: "attachment_already_sent",
          message: expect.stringContaining(`Attachment ${file.id} is already sent`),
          message_id: file.message_id,
          conversation_id: file.conversation_id
        }
      })
      expect(await rows(tenant.tenant_id)).toEqual([file])
      expect(await blob(file.blob_key)).toBe(true)
    })

    it("answers 404 for another tenant's upload and leaves it alone", async () => {
      const a = await newTenant()
      const b = await newTenant()
      const file = await upload(a)

      const answer = await b.as("DELETE", `/attachments/${file.id}`)

      expect(answer.status).toBe(404)
      expect(answer.body).toEqual({ detail: `Attachment ${file.id} not found` })
      expect((await rows(a.tenant_id)).map((r) => r.id)).toEqual([file.id])
      expect(await blob(await keyOf(a.tenant_id, file.id))).toBe(true)
    })

    it("needs messages:delete", async () => {
      const tenant = await newTenant()
      const file = await upload(tenant)
      const key = await test.operator((operator) =>
        operator.createApiKey({ tenantId: tenant.tenant_id, scopes: ["messages:create", "messages:read"] }))

      const answer = await test.call("DELETE", `/attachments/${file.id}`, { token: key.api_key })

      expect(answer.status).toBe(403)
      expect((await rows(tenant.tenant_id)).map((r) => r.id)).toEqual([file.id])
    })
  })

  // Last: it moves the shared clock a day on.
  describe("the retention job", () => {
    it("deletes uploads never sent once they are more than a day old, records and bytes, and keeps sent files and newer uploads", async () => {
      const tenant = await newTenant()
      const sent = await receivedFile(tenant)
      const old = await upload(tenant, "old.pdf")
      const oldKey = await keyOf(tenant.tenant_id, old.id)
      test.clock.advance(60_000)
      const newer = await upload(tenant, "newer.pdf")

      // Exactly a day after the upload: it stays.
      test.clock.advance(DAY_MS - 60_000)
      await test.app.drainDueWork()
      expect((await rows(tenant.tenant_id)).map((r) => r.id).sort()).toEqual([sent.id, old.id, newer.id].sort())
      expect(await blob(oldKey)).toBe(true)

      // A millisecond later it goes; the file a message carries and the newer upload stay.
      test.clock.advance(1)
      await test.app.drainDueWork()
      expect((await rows(tenant.tenant_id)).map((r) => r.id).sort()).toEqual([sent.id, newer.id].sort())
      expect(await blob(oldKey)).toBe(false)
      expect(await blob(sent.blob_key)).toBe(true)
      expect((await tenant.as("GET", `/attachments/${old.id}`)).status).toBe(404)
      expect((await tenant.as("GET", `/attachments/${newer.id}`)).status).toBe(200)

      test.clock.advance(60_000)
      await test.app.drainDueWork()
      expect((await rows(tenant.tenant_id)).map((r) => r.id)).toEqual([sent.id])
    })
  })
})
