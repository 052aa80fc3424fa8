import { randomBytes } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { rawEmail } from "../support/EmailHost.ts"
import { admin, type HostProcess, http, startHost } from "../support/Host.ts"
import { hostBackends } from "../support/HostBackends.ts"
import { waitUntil } from "../support/Poll.ts"

// Many large received emails at once, seen from outside: the reference host on the real clock with
// four background workers and OMNI_EMAIL_PARSE_CONCURRENCY=1, so the workers take the emails in
// parallel and wait their turn to read them. Every email is answered 200 and stored whole.

const MB = 1024 * 1024
const EMAILS = 8

/** A file of `size` random bytes behind a PDF header, so its type is told from its bytes. */
const pdf = (size: number) => {
  const bytes = randomBytes(size)
  bytes.write("%PDF-1.7\n", 0, "latin1")
  return new Uint8Array(bytes)
}

describe.each(hostBackends)("many large received emails at once ($name)", (backend) => {
  let host: HostProcess
  let tearDown: () => Promise<void>
  let boot: { api_key: string; tenant_id: string }
  let integration: { email_integration_id: string; inbound_secret: string }

  beforeAll(async () => {
    const database = await backend.setUp()
    tearDown = database.tearDown
    const env = { ...database.env, OMNI_WORKERS: "4", OMNI_EMAIL_PARSE_CONCURRENCY: "1" }
    host = await startHost(env)
    boot = await admin(env, "bootstrap", "--email", "owner@example.com")
    integration = await admin(env, "email-integration", "create", "--tenant", boot.tenant_id, "--address", "bulk@desk.example")
  }, 120_000)
  afterAll(async () => {
    if (host?.child.exitCode === null) await host.stop()
    await tearDown?.()
  })

  const api = async (path: string) => {
    const answer = await http(host.url, "GET", `/api/v1${path}`, { token: boot.api_key })
    expect(answer.status, JSON.stringify(answer.body)).toBe(200)
    return answer.body
  }

  it(`stores ${EMAILS} emails of 4 MB posted at once, none refused, every file byte for byte`, async () => {
    const emails = await Promise.all(Array.from({ length: EMAILS }, async (_, i) => {
      const files = [pdf(MB + i), pdf(2 * MB - i)]
      const raw = await rawEmail({
        from: `sender-${i}@customer.example`,
        to: "bulk@desk.example",
        subject: `Documents ${i}`,
        messageId: `bulk-${i}-${randomBytes(4).toString("hex")}@customer.example`,
        text: `Here are the documents of batch ${i}.`,
        html: `<p>Here are the documents of batch <b>${i}</b>.</p>`,
        files: files.map((content, n) => ({ filename: `batch-${i}-${n}.pdf`, contentType: "application/pdf", content }))
      })
      return { i, raw, files }
    }))
    expect(emails.every(({ raw }) => raw.length > 4 * MB)).toBe(true)

    const answers = await Promise.all(emails.map(({ raw }) =>
      fetch(`${host.url}/webhooks/email/${integration.email_integration_id}`, {
        method: "POST",
        headers: { "content-type": "message/rfc822", authorization: `Bearer ${integration.inbound_secret}` },
        body: new Uint8Array(raw)
      }).then(async (response) => ({ status: response.status, body: await response.json() }))
    ))
    expect(answers.map((answer) => answer.status), JSON.stringify(answers)).toEqual(Array(EMAILS).fill(200))

    const conversations = async (): Promise<Array<any>> =>
      (await api(`/conversations?channel_id=${integration.email_integration_id}&page_size=100`)).items
    await waitUntil(`${EMAILS} emails are stored`, async () => (await conversations()).length === EMAILS, 120_000)

    for (const { i, files } of emails) {
      const conversation = (await conversations()).find((c) => c.subject === `Documents ${i}`)
      expect(conversation, `Documents ${i}`).toBeDefined()
      const thread = await api(`/email-integrations/conversations/${conversation.id}/email-thread`)
      expect(thread.items).toHaveLength(1)
      const [email] = thread.items
      expect(email).toMatchObject({ from: { address: `sender-${i}@customer.example` }, text_body: expect.stringContaining(`batch ${i}`) })
      expect(email.attachments.map((file: any) => [file.filename, file.content_type, file.file_size]))
        .toEqual(files.map((content, n) => [`batch-${i}-${n}.pdf`, "application/pdf", content.length]))
      for (const [n, file] of email.attachments.entries()) {
        const downloaded = new Uint8Array(await (await fetch(file.url)).arrayBuffer())
        expect(Buffer.compare(downloaded, files[n]!), file.filename).toBe(0)
      }
    }
    const events = await api("/events?type=message.received&page_size=100")
    expect(events.items).toHaveLength(EMAILS)
    // Every email was streamed apart, none read whole.
    expect(host.output()).not.toMatch(/read whole/)
  }, 180_000)
})
