import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type LocalServer, makeCertificate, startServer } from "../outbound/LocalServers.ts"
import { admin, type HostProcess, http, startHost } from "../support/Host.ts"
import { hostBackends } from "../support/HostBackends.ts"
import { waitUntil } from "../support/Poll.ts"
import { fixture, invoicePdf } from "../support/SummaryFixtures.ts"

// Team chat seen from outside: the host as a child process on a manual test clock with the embedded
// summarizer, users acting through API keys bound to them (CLI `user create`, `api-key create --user`),
// channels, direct messages, messages with uploaded files and thread replies, who sees what, the
// summary fields as each member sees them, summaries on demand, and a real HTTPS webhook receiver
// subscribed to attachment.summarized that never hears of team chat.

const UNKNOWN_ID = "0b6f1a52-3c1d-4e55-9a0f-8d6a2c1e9f00"
const SCOPES = "team_chat:read,team_chat:create,messages:create"
const NOT_BOUND =
  "Team chat acts as a user: this API key is bound to none. Use a key bound to a user (api-key create --user ID)"

interface Person {
  readonly userId: string
  readonly key: string
}

describe.each(hostBackends)("team chat on the reference host ($name)", (backend) => {
  let env: Record<string, string>
  let tearDown: () => Promise<void>
  let host: HostProcess
  let receiver: LocalServer
  let caDir: string
  /** The workspace, its owner's parent key (every scope, bound to nobody) and two people acting in it. */
  let tenantId: string
  let ownerKey: string
  let alice: Person
  let bob: Person
  /** A second workspace Alice owns (so belongs to), Pat acting in it, and a third Alice does not belong to. */
  let partnerTenantId: string
  let pat: Person
  let strangerTenantId: string

  beforeAll(async () => {
    const certificate = makeCertificate()
    receiver = await startServer((_req, res) => {
      res.writeHead(204).end()
    }, certificate)
    caDir = mkdtempSync(join(tmpdir(), "team-chat-receiver-ca-"))
    const caFile = join(caDir, "receiver-ca.pem")
    writeFileSync(caFile, certificate.cert)
    const database = await backend.setUp()
    tearDown = database.tearDown
    env = { ...database.env, OMNI_TEST_CLOCK: "manual", OMNI_OUTBOUND_ALLOW: "127.0.0.1/32", NODE_EXTRA_CA_CERTS: caFile }
    host = await startHost(env)

    // Few CLI calls, in two waves: each is a process of its own.
    const [boot, a, b, p] = await Promise.all([
      admin(env, "bootstrap", "--email", "owner@example.com"),
      admin(env, "user", "create", "--email", "alice@example.com"),
      admin(env, "user", "create", "--email", "bob@example.com"),
      admin(env, "user", "create", "--email", "pat@example.com")
    ])
    tenantId = boot.tenant_id
    // The owner's bootstrap key holds every scope and is bound to nobody.
    ownerKey = boot.api_key
    // Alice's own workspace (a billing account is made for her), and another of the owner's.
    const [partnerTenant, strangerTenant] = await Promise.all([
      http(host.url, "POST", "/api/v1/tenants", { token: a.user_token, body: { name: "Partner" } }),
      http(host.url, "POST", "/api/v1/tenants", { token: boot.user_token, body: { name: "Stranger", billing_account_id: boot.billing_account_id } })
    ])
    expect(partnerTenant.status, JSON.stringify(partnerTenant.body)).toBe(201)
    expect(strangerTenant.status, JSON.stringify(strangerTenant.body)).toBe(201)
    partnerTenantId = partnerTenant.body.id
    strangerTenantId = strangerTenant.body.id
    const bound = (tenant: string, userId: string) => admin(env, "api-key", "create", "--tenant", tenant, "--scopes", SCOPES, "--user", userId)
    const [ka, kb, kp] = await Promise.all([
      bound(tenantId, a.user_id),
      bound(tenantId, b.user_id),
      bound(partnerTenantId, p.user_id),
      admin(env, "tenant", "set-ai", "--tenant", tenantId, "--enabled", "true"),
      admin(env, "credits", "grant", "--tenant", tenantId, "--amount", "50")
    ])
    expect(ka).toMatchObject({ tenant_id: tenantId, user_id: a.user_id })
    alice = { userId: a.user_id, key: ka.api_key }
    bob = { userId: b.user_id, key: kb.api_key }
    pat = { userId: p.user_id, key: kp.api_key }

    const endpoint = await http(host.url, "POST", "/api/v1/webhook-endpoints", {
      token: ownerKey,
      body: { name: "Team chat receiver", url: `${receiver.origin}/hooks`, subscribed_events: ["attachment.summarized", "contact.created"] }
    })
    expect(endpoint.status, JSON.stringify(endpoint.body)).toBe(201)
  }, 400_000)

  afterAll(async () => {
    if (host?.child.exitCode === null) await host.stop()
    await receiver?.close()
    await tearDown?.()
    if (caDir !== undefined) rmSync(caDir, { recursive: true, force: true })
  })

  const api = (as: { readonly key: string }, method: string, path: string, body?: unknown) =>
    http(host.url, method, `/api/v1${path}`, { token: as.key, ...(body === undefined ? {} : { body }) })
  const ok = async (as: { readonly key: string }, method: string, path: string, body?: unknown, status = 200) => {
    const answer = await api(as, method, path, body)
    expect(answer.status, `${method} ${path}: ${JSON.stringify(answer.body)}`).toBe(status)
    return answer.body
  }
  const upload = async (as: Person, filename: string, type: string, bytes: Uint8Array): Promise<string> => {
    const form = new FormData()
    form.append("file", new Blob([new Uint8Array(bytes)], { type }), filename)
    const response = await fetch(`${host.url}/api/v1/attachments/upload`, { method: "POST", body: form, headers: { authorization: `Bearer ${as.key}` } })
    const body = await response.json()
    expect(response.status, JSON.stringify(body)).toBe(201)
    return body.id
  }
  const channel = (as: Person, body: Record<string, unknown>) => ok(as, "POST", "/team-chat/channels", body, 201)
  const post = (as: Person, channelId: string, body: Record<string, unknown>) =>
    ok(as, "POST", `/team-chat/channels/${channelId}/messages`, body, 201)
  const summaryPath = (messageId: string, attachmentId: string) => `/team-chat/messages/${messageId}/attachments/${attachmentId}/summary`
  const fieldsOf = (message: { attachments: ReadonlyArray<Record<string, unknown>> }) =>
    message.attachments.map((a) => ({ ai_summary: a.ai_summary, ai_summary_available: a.ai_summary_available, ai_summary_credits: a.ai_summary_credits }))
  const NONE = { ai_summary: null, ai_summary_available: false, ai_summary_credits: null }

  it("answers a key bound to nobody with 403 saying why", async () => {
    for (const [method, path, body] of [
      ["POST", "/team-chat/channels", { name: "x", member_user_ids: [] }],
      ["POST", "/team-chat/direct-messages", { user_ids: [UNKNOWN_ID] }],
      ["GET", `/team-chat/channels/${UNKNOWN_ID}/messages`, undefined],
      ["GET", `/team-chat/messages/${UNKNOWN_ID}`, undefined],
      ["POST", summaryPath(UNKNOWN_ID, UNKNOWN_ID), undefined]
    ] as const) {
      const answer = await api({ key: ownerKey }, method, path, body)
      expect(answer, `${method} ${path}`).toEqual({ status: 403, body: { detail: { code: "forbidden", message: NOT_BOUND } } })
    }
  })

  it("creates channels with members of the workspace and refuses unknown users and workspaces, naming each", async () => {
    const created = await channel(alice, { name: "  Ops  ", member_user_ids: [bob.userId, alice.userId] })
    expect(created).toMatchObject({
      tenant_id: tenantId,
      kind: "channel",
      name: "Ops",
      member_user_ids: [alice.userId, bob.userId].sort(),
      shared_with_tenant_ids: [],
      has_external_guests: false,
      ai_summaries_offered: true,
      created_by: alice.userId
    })

    const refused = await api(alice, "POST", "/team-chat/channels", {
      name: "Nope",
      member_user_ids: [bob.userId, UNKNOWN_ID, pat.userId, "not-a-uuid"]
    })
    expect(refused.status).toBe(422)
    expect(refused.body.detail.map((i: { loc: unknown }) => i.loc)).toEqual([["body", "member_user_ids", 3]])
    const unknown = await api(alice, "POST", "/team-chat/channels", { name: "Nope", member_user_ids: [bob.userId, UNKNOWN_ID, pat.userId] })
    expect(unknown).toEqual({
      status: 422,
      body: {
        detail: [
          { loc: ["body", "member_user_ids", 1], msg: `Unknown user ${UNKNOWN_ID}: not a user of this workspace`, type: "value_error" },
          { loc: ["body", "member_user_ids", 2], msg: `Unknown user ${pat.userId}: not a user of this workspace`, type: "value_error" }
        ]
      }
    })
    const stranger = await api(alice, "POST", "/team-chat/channels", { name: "Nope", member_user_ids: [], shared_with_tenant_ids: [strangerTenantId] })
    expect(stranger).toEqual({
      status: 422,
      body: { detail: [{ loc: ["body", "shared_with_tenant_ids", 0], msg: `Unknown workspace ${strangerTenantId}: not one you belong to`, type: "value_error" }] }
    })
  })

  it("opens one direct message per participants, whoever opens it, and refuses one with oneself alone", async () => {
    const opened = await ok(alice, "POST", "/team-chat/direct-messages", { user_ids: [bob.userId] }, 201)
    expect(opened).toMatchObject({ kind: "dm", name: null, tenant_id: tenantId, ai_summaries_offered: true, already_existed: false })
    expect([...opened.member_user_ids].sort()).toEqual([alice.userId, bob.userId].sort())
    const again = await ok(bob, "POST", "/team-chat/direct-messages", { user_ids: [alice.userId, alice.userId] }, 200)
    expect(again).toEqual({ ...opened, already_existed: true })
    expect(await api(alice, "POST", "/team-chat/direct-messages", { user_ids: [alice.userId] })).toEqual({
      status: 422,
      body: { detail: [{ loc: ["body", "user_ids"], msg: "Name at least one other user", type: "value_error" }] }
    })
  })

  it("posts messages with files and thread replies, lists them oldest first, and hides them from non-members", async () => {
    const ops = await channel(alice, { name: "Files", member_user_ids: [bob.userId] })
    const [pdf, png] = await Promise.all([
      upload(alice, "invoice.pdf", "application/pdf", invoicePdf()),
      upload(alice, "scan.png", "image/png", fixture("text-scan.png"))
    ])
    const first = await post(alice, ops.id, { text: "The invoice and the scan", attachment_ids: [pdf, png] })
    expect(first).toMatchObject({ channel_id: ops.id, tenant_id: tenantId, author_user_id: alice.userId, parent_message_id: null })
    expect(first.attachments.map((a: { id: string; filename: string }) => [a.id, a.filename])).toEqual([[pdf, "invoice.pdf"], [png, "scan.png"]])
    expect(first.attachments[0]).toMatchObject({ content_type: "application/pdf", file_size: invoicePdf().length })
    expect(first.attachments[0].url).toMatch(/^http/)
    // The poster's own files are not inbound to them.
    expect(fieldsOf(first)).toEqual([NONE, NONE])

    const reply = await post(bob, ops.id, { text: "Thanks", parent_message_id: first.id })
    expect(reply).toMatchObject({ parent_message_id: first.id, author_user_id: bob.userId, attachments: [] })
    expect(await api(bob, "POST", `/team-chat/channels/${ops.id}/messages`, { text: "deeper", parent_message_id: reply.id })).toEqual({
      status: 422,
      body: { detail: [{ loc: ["body", "parent_message_id"], msg: "Must be a top-level message of this channel", type: "value_error" }] }
    })
    const elsewhere = await channel(bob, { name: "Elsewhere", member_user_ids: [] })
    const stray = await api(bob, "POST", `/team-chat/channels/${elsewhere.id}/messages`, { text: "x", parent_message_id: first.id })
    expect(stray.status).toBe(422)

    // Files: unknown → 404 naming it; one posted already → 422 naming it; nothing at all → 422.
    expect(await api(alice, "POST", `/team-chat/channels/${ops.id}/messages`, { text: "x", attachment_ids: [UNKNOWN_ID] })).toEqual({
      status: 404,
      body: { detail: `Attachment ${UNKNOWN_ID} not found` }
    })
    const reused = await api(bob, "POST", `/team-chat/channels/${ops.id}/messages`, { text: "again", attachment_ids: [pdf] })
    expect(reused.status).toBe(422)
    expect(reused.body.detail[0].loc).toEqual(["body", "attachment_ids", 0])
    expect((await api(bob, "POST", `/team-chat/channels/${ops.id}/messages`, { text: "  ", attachment_ids: [] })).status).toBe(422)

    const listed = await ok(bob, "GET", `/team-chat/channels/${ops.id}/messages?page_size=1&page=2`)
    expect(listed.items.map((m: { id: string }) => m.id)).toEqual([reply.id])
    expect(listed.pagination).toEqual({ page: 2, page_size: 1, total: 2, total_pages: 2 })
    const all = await ok(bob, "GET", `/team-chat/channels/${ops.id}/messages`)
    expect(all.items.map((m: { id: string }) => m.id)).toEqual([first.id, reply.id])

    // Another member sees the files as inbound: available at their price.
    expect(fieldsOf(all.items[0])).toEqual([
      { ai_summary: null, ai_summary_available: true, ai_summary_credits: 3 },
      { ai_summary: null, ai_summary_available: true, ai_summary_credits: 2 }
    ])
    expect(fieldsOf(await ok(alice, "GET", `/team-chat/messages/${first.id}`))).toEqual([NONE, NONE])

    // Whoever is not a member sees nothing: Bob of the same workspace in Alice's private channel, Pat of
    // another workspace anywhere here; each answer is the one an unknown id gets.
    const secret = await channel(alice, { name: "Private", member_user_ids: [] })
    const note = await upload(alice, "note.pdf", "application/pdf", invoicePdf())
    const hidden = await post(alice, secret.id, { text: "Just me", attachment_ids: [note] })
    for (const [outsider, room, message, file] of [[bob, secret, hidden, note], [pat, ops, reply, pdf], [pat, secret, hidden, note]] as const) {
      expect(await api(outsider, "GET", `/team-chat/channels/${room.id}/messages`)).toEqual({ status: 404, body: { detail: { code: "not_found", message: `Channel ${room.id} not found` } } })
      expect(await api(outsider, "GET", `/team-chat/messages/${message.id}`)).toEqual({ status: 404, body: { detail: { code: "not_found", message: `Message ${message.id} not found` } } })
      expect((await api(outsider, "POST", `/team-chat/channels/${room.id}/messages`, { text: "hi" })).status).toBe(404)
      for (const method of ["GET", "POST"]) {
        expect(await api(outsider, method, summaryPath(message.id === reply.id ? first.id : message.id, file))).toEqual({
          status: 404,
          body: { detail: { code: "attachment_not_found", message: `Attachment ${file} not found` } }
        })
      }
    }
  })

  it("summarizes a file another member posted: 201 with its price, then 200 free, never announced", async () => {
    const dm = await ok(alice, "POST", "/team-chat/direct-messages", { user_ids: [bob.userId] }, 200)
    const pdf = await upload(alice, "invoice-dm.pdf", "application/pdf", invoicePdf())
    const message = await post(alice, dm.id, { text: "Invoice attached", attachment_ids: [pdf] })

    // The poster cannot summarize their own file; the file must be this message's.
    expect((await api(alice, "POST", summaryPath(message.id, pdf))).body.detail.code).toBe("attachment_not_summarizable")
    expect(await api(bob, "POST", summaryPath(message.id, UNKNOWN_ID))).toEqual({
      status: 404,
      body: { detail: { code: "attachment_not_found", message: `Attachment ${UNKNOWN_ID} not found` } }
    })
    expect((await api(bob, "GET", summaryPath(message.id, pdf))).body.detail.code).toBe("summary_not_found")

    const made = await api(bob, "POST", summaryPath(message.id, pdf))
    expect(made.status, JSON.stringify(made.body)).toBe(201)
    expect(made.body).toMatchObject({ attachment_id: pdf, credits_charged: 3, summary: { status: "ok", kind: "pdf", source: "on_demand" } })
    const again = await api(bob, "POST", summaryPath(message.id, pdf))
    expect(again).toEqual({ status: 200, body: { ...made.body, credits_charged: 0 } })
    expect(await ok(bob, "GET", summaryPath(message.id, pdf))).toEqual(made.body.summary)
    expect(await admin(env, "credits", "show", "--tenant", tenantId)).toMatchObject({ balance: 47, charged_total: 3 })

    // Both now see the summary; nobody may request it again.
    const seen = await ok(bob, "GET", `/team-chat/messages/${message.id}`)
    expect(fieldsOf(seen)).toEqual([{ ai_summary: made.body.summary, ai_summary_available: false, ai_summary_credits: null }])
    expect(fieldsOf(await ok(alice, "GET", `/team-chat/messages/${message.id}`))[0]!.ai_summary).toEqual(made.body.summary)

    // A contact created afterwards reaches the receiver; attachment.summarized never does.
    await ok({ key: ownerKey }, "POST", "/contacts", { name: "Kim", email: "kim@example.com" }, 201)
    expect((await http(host.url, "POST", "/_test/drain")).status).toBe(200)
    const types = () => receiver.requests.map((r) => JSON.parse(r.body).type as string)
    await waitUntil("the receiver got contact.created", () => types().includes("contact.created"))
    expect(types()).not.toContain("attachment.summarized")
  })

  it("offers no summaries in channels shared with another workspace or with external guests", async () => {
    const shared = await channel(alice, {
      name: "With partners",
      member_user_ids: [bob.userId, pat.userId],
      shared_with_tenant_ids: [partnerTenantId]
    })
    expect(shared).toMatchObject({ shared_with_tenant_ids: [partnerTenantId], ai_summaries_offered: false })
    const guests = await channel(alice, { name: "Guests", member_user_ids: [bob.userId], has_external_guests: true })
    expect(guests).toMatchObject({ has_external_guests: true, ai_summaries_offered: false })

    for (const room of [shared, guests]) {
      const pdf = await upload(alice, "plan.pdf", "application/pdf", invoicePdf())
      const message = await post(alice, room.id, { text: "The plan", attachment_ids: [pdf] })
      expect(fieldsOf(await ok(bob, "GET", `/team-chat/messages/${message.id}`))).toEqual([NONE])
      const refused = await api(bob, "POST", summaryPath(message.id, pdf))
      expect(refused.status).toBe(422)
      expect(refused.body.detail.code).toBe("attachment_not_summarizable")
    }

    // Pat is a member through Alice's other workspace, which the channel is shared with: Pat reads and writes there.
    const listed = await ok(pat, "GET", `/team-chat/channels/${shared.id}/messages`)
    expect(listed.items).toHaveLength(1)
    expect(fieldsOf(listed.items[0])).toEqual([NONE])
    const theirs = await post(pat, shared.id, { text: "Noted" })
    expect(theirs.tenant_id).toBe(partnerTenantId)
    expect((await api(pat, "POST", summaryPath(listed.items[0].id, listed.items[0].attachments[0].id))).body.detail.code)
      .toBe("attachment_not_summarizable")
  })
})
