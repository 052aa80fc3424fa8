import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { NOT_BOUND } from "../../../src/team-chat/TeamChatRules.ts"
import { serviceDatabases } from "../../support/Databases.ts"
import { bootstrap, startTestApp, type TestApp } from "../../support/TestApp.ts"

// GET /team-chat/channels through the in-process app: the caller's channels and direct messages (those
// the user a bound key acts as is a member of), newest activity first, paged, never another
// workspace's, and 403 for a key bound to nobody.

const SCOPES = ["team_chat:read", "team_chat:create"]
const MINUTE = 60_000

interface Person {
  readonly userId: string
  readonly key: string
}

describe.each(serviceDatabases)("GET /team-chat/channels on $name", (database) => {
  let test: TestApp
  let ownerKey: string
  let alice: Person
  let bob: Person
  let carol: Person
  /** Alice again, through a key bound to her in a workspace of someone else's. */
  let aliceElsewhere: Person
  /** What each POST answered, by name, and when the newest message of each went in. */
  const made: Record<string, any> = {}

  const call = (as: { readonly key: string }, method: string, path: string, body?: unknown) =>
    test.call(method, path, { token: as.key, ...(body === undefined ? {} : { body }) })
  const ok = async (as: { readonly key: string }, method: string, path: string, body?: unknown) => {
    const answer = await call(as, method, path, body)
    expect(answer.status, `${method} ${path}: ${JSON.stringify(answer.body)}`).toBeLessThan(300)
    return answer.body
  }
  const list = (as: { readonly key: string }, query = "") => call(as, "GET", `/team-chat/channels${query}`)
  const names = (answer: { readonly body: any }) => answer.body.items.map((item: { id: string }) => nameOf(item.id))
  const nameOf = (id: string) => Object.entries(made).find(([, channel]) => channel.id === id)?.[0] ?? id
  const later = () => test.clock.advance(MINUTE)

  beforeAll(async () => {
    test = await startTestApp(await database.open())
    const owner = await bootstrap(test)
    const stranger = await bootstrap(test)
    ownerKey = owner.api_key
    const person = async (name: string, tenantId = owner.tenant_id, userId?: string): Promise<Person> => {
      const user = userId ?? (await test.operator((operator) => operator.createUser(`${name}-${crypto.randomUUID()}@example.com`))).user_id
      const key = await test.operator((operator) => operator.createApiKey({ tenantId, scopes: SCOPES, userId: user }))
      return { userId: user, key: key.api_key }
    }
    alice = await person("alice")
    bob = await person("bob")
    carol = await person("carol")
    aliceElsewhere = await person("alice", stranger.tenant_id, alice.userId)

    later()
    made.general = await ok(alice, "POST", "/team-chat/channels", { name: "general", member_user_ids: [bob.userId] })
    later()
    made.notes = await ok(alice, "POST", "/team-chat/channels", { name: "alice's notes", member_user_ids: [] })
    later()
    made.dm = await ok(alice, "POST", "/team-chat/direct-messages", { user_ids: [bob.userId] })
    later()
    made.bobAndCarol = await ok(bob, "POST", "/team-chat/channels", { name: "bob and carol", member_user_ids: [carol.userId] })
    later()
    made.generalTop = await ok(bob, "POST", `/team-chat/channels/${made.general.id}/messages`, { text: "Morning!" })
  })
  afterAll(() => test.close())

  it("shows a member their channels and direct messages, newest activity first, each as it was created plus last_activity_at", async () => {
    const answer = await list(alice)
    expect(answer.status).toBe(200)
    expect(names(answer)).toEqual(["general", "dm", "notes"])
    expect(answer.body.pagination).toEqual({ page: 1, page_size: 25, total: 3, total_pages: 1 })
    const { already_existed: _, ...dm } = made.dm
    expect(answer.body.items).toEqual([
      { ...made.general, last_activity_at: made.generalTop.created_at },
      { ...dm, last_activity_at: made.dm.created_at },
      { ...made.notes, last_activity_at: made.notes.created_at }
    ])
    expect(answer.body.items[1]).toMatchObject({ kind: "dm", name: null, member_user_ids: [alice.userId, bob.userId].sort() })

    expect(names(await list(bob))).toEqual(["general", "bobAndCarol", "dm"])
    expect(names(await list(carol))).toEqual(["bobAndCarol"])
  })

  it("moves a channel up when a message or a thread reply is posted in it", async () => {
    later()
    const top = await ok(alice, "POST", `/team-chat/channels/${made.notes.id}/messages`, { text: "todo" })
    expect(names(await list(alice))).toEqual(["notes", "general", "dm"])
    later()
    const reply = await ok(bob, "POST", `/team-chat/channels/${made.general.id}/messages`, { text: "Hi", parent_message_id: made.generalTop.id })
    const answer = await list(alice)
    expect(names(answer)).toEqual(["general", "notes", "dm"])
    expect(answer.body.items.map((item: { last_activity_at: string }) => item.last_activity_at))
      .toEqual([reply.created_at, top.created_at, made.dm.created_at])
  })

  it("pages like the other lists", async () => {
    const all = names(await list(alice))
    const pages = await Promise.all([1, 2].map((page) => list(alice, `?page=${page}&page_size=2`)))
    expect(pages.map(names)).toEqual([all.slice(0, 2), all.slice(2)])
    expect(pages.map((page) => page.body.pagination)).toEqual([1, 2].map((page) => ({ page, page_size: 2, total: 3, total_pages: 2 })))
    expect((await list(alice, "?page=3&page_size=2")).body.items).toEqual([])
    for (const query of ["?page_size=0", "?page_size=101", "?page=0"]) {
      const refused = await list(alice, query)
      expect({ query, status: refused.status }).toEqual({ query, status: 422 })
    }
  })

  it("shows nothing of this workspace's channels to the same user acting in another workspace", async () => {
    expect((await list(aliceElsewhere)).body).toEqual({ items: [], pagination: { page: 1, page_size: 25, total: 0, total_pages: 0 } })
  })

  it("answers 403 to a key bound to nobody, and to a key without team_chat:read", async () => {
    const unbound = await list({ key: ownerKey })
    expect({ status: unbound.status, body: unbound.body }).toEqual({ status: 403, body: { detail: { code: "forbidden", message: NOT_BOUND } } })
    const writer = await test.operator((operator) =>
      operator.createApiKey({ tenantId: made.general.tenant_id, scopes: ["team_chat:create"], userId: alice.userId })
    )
    expect((await list({ key: writer.api_key })).status).toBe(403)
  })
})
