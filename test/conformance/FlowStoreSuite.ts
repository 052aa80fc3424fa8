import { Effect, Exit, Fiber, Latch, Option } from "effect"
import { describe, expect, it } from "vitest"
import type { AccountStore } from "../../src/ports/AccountStore.ts"
import {
  type CustomFieldRecord,
  type FlowDefinitionRecord,
  type FlowSessionRecord,
  FlowStore,
  type FlowVersionRecord,
  type TagRecord
} from "../../src/ports/FlowStore.ts"
import type { StorageError } from "../../src/ports/StorageError.ts"
import type { TenantStore } from "../../src/ports/TenantStore.ts"
import { Transactor } from "../../src/ports/Transactor.ts"
import {
  customFieldRecord,
  flowDefinitionRecord,
  flowSessionRecord,
  flowVersionRecord,
  seedTenant,
  tagRecord
} from "./Fixtures.ts"
import { byId, makeSuite, type Suite, type UseHarness } from "./Harness.ts"

/** The tables the flow suite checks writes in. */
type FlowTables = "flowDefinitions" | "flowVersions" | "flowSessions" | "customFields" | "tags" | "contactTags"

/** What the flow suite runs against: the port, the tenants rows belong to, and transactions for contending completions. */
type FlowPorts = FlowStore | TenantStore | AccountStore | Transactor

type UseFlows = UseHarness<FlowPorts, FlowTables>

const NEEDS_CONNECTIONS = "needs several connections: the adapter runs one transaction at a time"

// How many answers to one session arrive at once in the concurrency tests.
const CONCURRENT = 8

/** An instant of the flows' day as stored, from `HH:MM:SS.mmm`. */
const at = (time: string): string => `2026-11-26T${time}Z`

const newId = (): string => globalThis.crypto.randomUUID()

/** Text in the order of its code units, as every database orders UUIDs. */
const byText = (x: string, y: string): number => (x < y ? -1 : x > y ? 1 : 0)

const store = <A, E, R>(f: (s: FlowStore["Service"]) => Effect.Effect<A, E, R>) => FlowStore.use(f)

const expectUniqueViolation = (error: StorageError, constraint: string) => {
  expect(error).toMatchObject({ _tag: "StorageError", reason: "UniqueViolation", constraint })
  expect(error.isRetryable).toBe(false)
}

const insertDefinitions = (h: UseFlows, definitions: ReadonlyArray<FlowDefinitionRecord>) =>
  h().run(store((s) => Effect.forEach(definitions, (d) => s.insertDefinition(d), { discard: true })))

const insertVersions = (h: UseFlows, versions: ReadonlyArray<FlowVersionRecord>) =>
  h().run(store((s) => Effect.forEach(versions, (v) => s.insertVersion(v), { discard: true })))

const insertSessions = (h: UseFlows, sessions: ReadonlyArray<FlowSessionRecord>) =>
  h().run(store((s) => Effect.forEach(sessions, (x) => s.insertSession(x), { discard: true })))

const getDefinition = (h: UseFlows, tenantId: string, id: string) =>
  h().run(store((s) => s.getDefinition(tenantId, id))).then(Option.getOrUndefined)

const getVersion = (h: UseFlows, tenantId: string, id: string) =>
  h().run(store((s) => s.getVersion(tenantId, id))).then(Option.getOrUndefined)

const getSession = (h: UseFlows, tenantId: string, id: string) =>
  h().run(store((s) => s.getSession(tenantId, id))).then(Option.getOrUndefined)

const byToken = (h: UseFlows, tokenHash: string) =>
  h().run(store((s) => s.findSessionByTokenHash(tokenHash))).then(Option.getOrUndefined)

const listSessions = (
  h: UseFlows,
  tenantId: string,
  definitionId: string,
  filter: {
    readonly status?: string
    readonly contact_id?: string
    readonly expires_from?: string
    readonly expired_before?: string
  } = {},
  limit = 100,
  offset = 0
) => h().run(store((s) => s.listSessions(tenantId, definitionId, filter, { limit, offset })))

const complete = (h: UseFlows, tenantId: string, session: FlowSessionRecord) =>
  h().run(store((s) => s.completeSession(tenantId, session)))

/** Lists the port promises no order of, in id order, to compare whole. */
const sorted = <A extends { readonly id: string }>(items: ReadonlyArray<A>): Array<A> => [...items].sort(byId)

/** A published flow with its health and alerts reported, and text in several scripts. */
const richDefinition = (tenantId: string): FlowDefinitionRecord =>
  flowDefinitionRecord(tenantId, {
    name: "Inscrição — Zoë 山田 🚀 \"quoted\" \\ back\nslash",
    status: "PUBLISHED",
    health_status: "RED",
    alerts: { ENDPOINT_ERROR_RATE: "ACTIVATED", ENDPOINT_LATENCY: "DEACTIVATED", "FLOW_ÄLERT_山田": "ACTIVATED" },
    created_at: "2026-11-26T10:15:30.123Z",
    updated_at: "2026-11-26T11:00:00.000Z"
  })

/** A version with several screens, sensitive inputs and a writeback of every target. */
const richVersion = (definition: FlowDefinitionRecord, number: number): FlowVersionRecord =>
  flowVersionRecord(definition, number, {
    screens: [
      {
        id: "WELCOME_山田",
        inputs: [
          { name: "name", type: "TextInput" },
          { name: "e-mail", type: "TextInput" },
          { name: "consent", type: "OptIn" },
          { name: "interests", type: "CheckboxGroup" }
        ],
        sensitive_fields: []
      },
      {
        id: "DETAILS",
        inputs: [{ name: "birthday", type: "DatePicker" }, { name: "passport", type: "PhotoPicker" }, { name: "pin", type: "TextInput" }],
        sensitive_fields: ["passport", "pin"]
      },
      { id: "EMPTY", inputs: [], sensitive_fields: [] }
    ],
    writeback: [
      { input: "name", target: "contact_field", field: "name" },
      { input: "e-mail", target: "contact_field", field: "email" },
      { input: "birthday", target: "custom_field", custom_field_id: newId() },
      { input: "interests", target: "tag", tag_id: newId() },
      { input: "consent", target: "subscription", list_id: newId() },
      { input: "consent", target: "unsubscription", list_id: newId() }
    ],
    created_at: "2026-11-26T10:20:00.000Z"
  })

/** A completed session with every field set, its answers and writeback result nested JSON. */
const richSession = (definition: FlowDefinitionRecord, version: FlowVersionRecord | null = null): FlowSessionRecord =>
  flowSessionRecord(definition, {
    version_id: version?.id ?? newId(),
    version_number: version?.number ?? 7,
    contact_id: newId(),
    conversation_id: newId(),
    sender_type: "campaign",
    status: "completed",
    last_screen: "DETAILS",
    answers: {
      name: "Zoë 山田 🚀",
      "e-mail": "zoe@example.com",
      consent: true,
      interests: ["música", "日本語", "\"quoted\" \\ back"],
      age: 42,
      ratio: 0.5,
      nothing: null,
      passport: "••••",
      nested: { deep: [1, { deeper: "ü" }] }
    },
    writeback_result: { name: "written", birthday: { error: "invalid date — 31/02" }, tags: [] },
    last_error: "131047: \"re-engagement\" \\ 山田",
    message_id: newId(),
    answer_message_id: newId(),
    created_at: "2026-11-26T10:30:00.000Z",
    opened_at: "2026-11-26T10:31:00.000Z",
    completed_at: "2026-11-26T10:32:00.123Z",
    expires_at: "2026-11-27T10:30:00.000Z"
  })

/** What an answer makes of a sent session: every field but the key may change. */
const answered = (session: FlowSessionRecord, answers: Record<string, unknown>): FlowSessionRecord => ({
  ...session,
  version_id: newId(),
  version_number: 3,
  contact_id: session.contact_id ?? newId(),
  status: "completed",
  last_screen: "DONE",
  answers,
  writeback_result: { written: Object.keys(answers) },
  answer_message_id: newId(),
  opened_at: at("10:00:00.000"),
  completed_at: at("10:05:00.000")
})

// Two tenants, each with a definition under the same platform flow id, version 1 of it, a sent
// session to one contact id, a custom field under the same key and a tag of the same name on that contact.
const twoTenants = Effect.gen(function*() {
  const a = (yield* seedTenant).tenant
  const b = (yield* seedTenant).tenant
  const metaFlowId = `flow-${newId()}`
  const contactId = newId()
  const key = `field_${newId().slice(0, 8)}`
  const tagName = `tag-${newId()}`
  const of = (tenantId: string) => {
    const definition = flowDefinitionRecord(tenantId, { meta_flow_id: metaFlowId })
    return {
      definition,
      version: flowVersionRecord(definition, 1),
      session: flowSessionRecord(definition, { contact_id: contactId }),
      field: customFieldRecord(tenantId, { key }),
      tag: tagRecord(tenantId, { name: tagName })
    }
  }
  const ofA = of(a.id)
  const ofB = of(b.id)
  yield* store((s) =>
    Effect.forEach([[a.id, ofA], [b.id, ofB]] as const, ([tenantId, rows]) =>
      Effect.all([
        s.insertDefinition(rows.definition),
        s.insertVersion(rows.version),
        s.insertSession(rows.session),
        s.insertCustomField(rows.field),
        s.insertTag(rows.tag),
        s.tagContact(tenantId, contactId, rows.tag.id, at("09:00:00.000"))
      ], { discard: true }), { discard: true })
  )
  return { a, b, metaFlowId, contactId, ofA, ofB }
})

/**
 * FlowStore: every field of definitions, versions, sessions, custom fields and tags round-trips;
 * definitions are found by platform flow id in every tenant; versions are numbered once per
 * definition and list newest first; a session is found by its token hash in every tenant, is
 * completed once however many answers race, and lists newest first with filters and the total;
 * custom field keys and tag names are unique in a tenant; tagging a contact twice changes nothing;
 * nothing reaches another tenant's rows. Needs TenantStore and AccountStore for the tenants rows belong
 * to, and the Transactor for completions in concurrent transactions.
 */
export const flowStoreSuite: Suite<FlowPorts, FlowTables> = makeSuite({
  name: "FlowStore",
  tables: ["flowDefinitions", "flowVersions", "flowSessions", "customFields", "tags", "contactTags"],
  tests: (h) => {
    describe("definitions", () => {
      it("stores every field, with unicode text and alerts, and reads it back unchanged by id, listing and platform flow id", async () => {
        const { tenant } = await h().run(seedTenant)
        const definition = richDefinition(tenant.id)
        await insertDefinitions(h, [definition])

        expect(await h().stored.flowDefinitions(tenant.id)).toEqual([definition])
        expect(await getDefinition(h, tenant.id, definition.id)).toEqual(definition)
        expect(await h().run(store((s) => s.listDefinitions(tenant.id)))).toEqual([definition])
        expect(await h().run(store((s) => s.findDefinitionsByMetaFlowId(definition.meta_flow_id)))).toEqual([definition])
      })

      it("stores a definition with nothing reported (null status, health and update, no alerts)", async () => {
        const { tenant } = await h().run(seedTenant)
        const bare = flowDefinitionRecord(tenant.id)
        await insertDefinitions(h, [bare])

        expect(await h().stored.flowDefinitions(tenant.id)).toEqual([bare])
        expect(await getDefinition(h, tenant.id, bare.id)).toEqual(bare)
      })

      it("finds no definition for an unknown id or platform flow id, and a tenant without definitions lists none", async () => {
        const { tenant } = await h().run(seedTenant)
        expect(await getDefinition(h, tenant.id, newId())).toBeUndefined()
        expect(await h().run(store((s) => s.listDefinitions(tenant.id)))).toEqual([])
        expect(await h().run(store((s) => s.findDefinitionsByMetaFlowId(`flow-${newId()}`)))).toEqual([])
      })

      it("lists every definition of the tenant", async () => {
        const { tenant } = await h().run(seedTenant)
        const definitions = [at("09:00:00.000"), at("11:00:00.000"), at("10:00:00.000"), at("10:00:00.000")]
          .map((created_at) => flowDefinitionRecord(tenant.id, { created_at }))
        await insertDefinitions(h, definitions)

        expect(sorted(await h().run(store((s) => s.listDefinitions(tenant.id))))).toEqual(sorted(definitions))
      })

      it("finds every definition of a platform flow id, in every tenant, and no other", async () => {
        const { tenant: a } = await h().run(seedTenant)
        const { tenant: b } = await h().run(seedTenant)
        const metaFlowId = `flow-${newId()}`
        const ofA = flowDefinitionRecord(a.id, { meta_flow_id: metaFlowId })
        const twiceInB = [0, 1].map(() => flowDefinitionRecord(b.id, { meta_flow_id: metaFlowId }))
        const other = flowDefinitionRecord(a.id, { meta_flow_id: `${metaFlowId}-2` })
        await insertDefinitions(h, [ofA, other, ...twiceInB])

        expect(sorted(await h().run(store((s) => s.findDefinitionsByMetaFlowId(metaFlowId))))).toEqual(sorted([ofA, ...twiceInB]))
        expect(await h().run(store((s) => s.findDefinitionsByMetaFlowId(metaFlowId.toUpperCase())))).toEqual([])
      })

      it("replaces every changeable field on update and reports that it did; an unknown definition updates nothing", async () => {
        const { tenant } = await h().run(seedTenant)
        const before = flowDefinitionRecord(tenant.id)
        await insertDefinitions(h, [before])
        const after: FlowDefinitionRecord = { ...richDefinition(tenant.id), id: before.id, created_at: before.created_at }

        expect(await h().run(store((s) => s.updateDefinition(tenant.id, after)))).toBe(true)
        expect(await h().stored.flowDefinitions(tenant.id)).toEqual([after])
        expect(await getDefinition(h, tenant.id, before.id)).toEqual(after)
        expect(await h().run(store((s) => s.findDefinitionsByMetaFlowId(before.meta_flow_id)))).toEqual([])
        expect(await h().run(store((s) => s.findDefinitionsByMetaFlowId(after.meta_flow_id)))).toEqual([after])

        const back: FlowDefinitionRecord = { ...before, updated_at: at("12:30:00.000") }
        expect(await h().run(store((s) => s.updateDefinition(tenant.id, back)))).toBe(true)
        expect(await getDefinition(h, tenant.id, before.id)).toEqual(back)

        expect(await h().run(store((s) => s.updateDefinition(tenant.id, flowDefinitionRecord(tenant.id))))).toBe(false)
        expect(await h().stored.flowDefinitions(tenant.id)).toEqual([back])
      })
    })

    describe("versions", () => {
      it("stores every field, with several screens, sensitive inputs and a writeback of every target, and reads it back unchanged", async () => {
        const { tenant } = await h().run(seedTenant)
        const definition = flowDefinitionRecord(tenant.id)
        await insertDefinitions(h, [definition])
        const rich = richVersion(definition, 1)
        const empty = flowVersionRecord(definition, 2, { screens: [], writeback: [] })
        await insertVersions(h, [rich, empty])

        expect(await h().stored.flowVersions(tenant.id)).toEqual(sorted([rich, empty]))
        expect(await getVersion(h, tenant.id, rich.id)).toEqual(rich)
        expect(await getVersion(h, tenant.id, empty.id)).toEqual(empty)
        expect(await h().run(store((s) => s.listVersions(tenant.id, definition.id)))).toEqual([empty, rich])
      })

      it("lists a definition's versions newest (highest number) first, and no other definition's", async () => {
        const { tenant } = await h().run(seedTenant)
        const definition = flowDefinitionRecord(tenant.id)
        const other = flowDefinitionRecord(tenant.id)
        await insertDefinitions(h, [definition, other])
        const versions = [3, 1, 10, 2].map((n) => flowVersionRecord(definition, n, { created_at: at("10:00:00.000") }))
        const ofOther = flowVersionRecord(other, 11)
        await insertVersions(h, [...versions, ofOther])

        expect((await h().run(store((s) => s.listVersions(tenant.id, definition.id)))).map((v) => v.number)).toEqual([10, 3, 2, 1])
        expect(await h().run(store((s) => s.listVersions(tenant.id, other.id)))).toEqual([ofOther])
        expect(await h().run(store((s) => s.listVersions(tenant.id, newId())))).toEqual([])
        expect(await getVersion(h, tenant.id, newId())).toBeUndefined()
      })

      it("refuses a number already used for the definition with UniqueViolation naming flow_versions_definition_number_unique", async () => {
        const { tenant } = await h().run(seedTenant)
        const definition = flowDefinitionRecord(tenant.id)
        const other = flowDefinitionRecord(tenant.id)
        await insertDefinitions(h, [definition, other])
        const first = flowVersionRecord(definition, 1)
        await insertVersions(h, [first])

        const again = flowVersionRecord(definition, 1, { screens: [] })
        expectUniqueViolation(await h().run(Effect.flip(store((s) => s.insertVersion(again)))), "flow_versions_definition_number_unique")
        expect(await h().stored.flowVersions(tenant.id)).toEqual([first])

        // The same number under another definition, and the next under this one, are free.
        const ofOther = flowVersionRecord(other, 1)
        const second = flowVersionRecord(definition, 2)
        await insertVersions(h, [ofOther, second])
        expect(await h().stored.flowVersions(tenant.id)).toEqual(sorted([first, ofOther, second]))
      })
    })

    describe("sessions", () => {
      it("stores every field, with nested JSON answers and writeback result, and reads it back unchanged by id, token hash and listing", async () => {
        const { tenant } = await h().run(seedTenant)
        const definition = flowDefinitionRecord(tenant.id)
        await insertDefinitions(h, [definition])
        const version = richVersion(definition, 1)
        await insertVersions(h, [version])
        const session = richSession(definition, version)
        await insertSessions(h, [session])

        expect(await h().stored.flowSessions(tenant.id)).toEqual([session])
        expect(await getSession(h, tenant.id, session.id)).toEqual(session)
        expect(await byToken(h, session.flow_token_hash)).toEqual(session)
        expect(await listSessions(h, tenant.id, definition.id)).toEqual({ items: [session], total: 1 })
      })

      it("stores a sent session with every optional field null, of every sender type", async () => {
        const { tenant } = await h().run(seedTenant)
        const definition = flowDefinitionRecord(tenant.id)
        await insertDefinitions(h, [definition])
        const sessions = (["inbox", "campaign", "automation", "api", "adopted"] as const)
          .map((sender_type) => flowSessionRecord(definition, { sender_type }))
        await insertSessions(h, sessions)

        expect(await h().stored.flowSessions(tenant.id)).toEqual(sorted(sessions))
        for (const session of sessions) {
          expect(await getSession(h, tenant.id, session.id)).toEqual(session)
          expect(await byToken(h, session.flow_token_hash)).toEqual(session)
        }
      })

      it("stores empty answers and writeback result as empty objects, not as null", async () => {
        const { tenant } = await h().run(seedTenant)
        const definition = flowDefinitionRecord(tenant.id)
        await insertDefinitions(h, [definition])
        const session = flowSessionRecord(definition, { answers: {}, writeback_result: {} })
        await insertSessions(h, [session])

        expect(await h().stored.flowSessions(tenant.id)).toEqual([session])
        expect(await getSession(h, tenant.id, session.id)).toEqual(session)
      })

      it("finds a session by its token hash in whatever tenant, and none for an unknown hash or id", async () => {
        const { tenant: a } = await h().run(seedTenant)
        const { tenant: b } = await h().run(seedTenant)
        const ofA = flowDefinitionRecord(a.id)
        const ofB = flowDefinitionRecord(b.id)
        await insertDefinitions(h, [ofA, ofB])
        const sessionOfA = flowSessionRecord(ofA)
        const sessionOfB = flowSessionRecord(ofB)
        await insertSessions(h, [sessionOfA, sessionOfB])

        expect(await byToken(h, sessionOfA.flow_token_hash)).toEqual(sessionOfA)
        expect(await byToken(h, sessionOfB.flow_token_hash)).toEqual(sessionOfB)
        expect(await byToken(h, sessionOfA.flow_token_hash.toUpperCase())).toBeUndefined()
        expect(await byToken(h, "0".repeat(64))).toBeUndefined()
        expect(await getSession(h, a.id, newId())).toBeUndefined()
      })

      it("refuses a token hash already stored, in any tenant, with UniqueViolation naming flow_sessions_token_unique", async () => {
        const { tenant: a } = await h().run(seedTenant)
        const { tenant: b } = await h().run(seedTenant)
        const ofA = flowDefinitionRecord(a.id)
        const ofB = flowDefinitionRecord(b.id)
        await insertDefinitions(h, [ofA, ofB])
        const first = flowSessionRecord(ofA)
        await insertSessions(h, [first])

        const sameTenant = flowSessionRecord(ofA, { flow_token_hash: first.flow_token_hash })
        const otherTenant = flowSessionRecord(ofB, { flow_token_hash: first.flow_token_hash })
        expectUniqueViolation(await h().run(Effect.flip(store((s) => s.insertSession(sameTenant)))), "flow_sessions_token_unique")
        expectUniqueViolation(await h().run(Effect.flip(store((s) => s.insertSession(otherTenant)))), "flow_sessions_token_unique")

        expect(await h().stored.flowSessions(a.id)).toEqual([first])
        expect(await h().stored.flowSessions(b.id)).toEqual([])
        expect(await byToken(h, first.flow_token_hash)).toEqual(first)
      })

      it("completes a sent session once, writing every field; a second completion changes nothing and says so", async () => {
        const { tenant } = await h().run(seedTenant)
        const definition = flowDefinitionRecord(tenant.id)
        await insertDefinitions(h, [definition])
        const sent = flowSessionRecord(definition)
        await insertSessions(h, [sent])
        const first = answered(sent, { name: "Zoë 山田", consent: true })
        const second = answered(sent, { name: "Someone else" })

        expect(await complete(h, tenant.id, first)).toBe(true)
        expect(await h().stored.flowSessions(tenant.id)).toEqual([first])
        expect(await byToken(h, sent.flow_token_hash)).toEqual(first)

        expect(await complete(h, tenant.id, second)).toBe(false)
        expect(await complete(h, tenant.id, first)).toBe(false)
        expect(await h().stored.flowSessions(tenant.id)).toEqual([first])
      })

      it("completes only a session still sent: not an expired or failed one, nor an unknown one", async () => {
        const { tenant } = await h().run(seedTenant)
        const definition = flowDefinitionRecord(tenant.id)
        await insertDefinitions(h, [definition])
        const expired = flowSessionRecord(definition, { status: "expired" })
        const failed = flowSessionRecord(definition, { status: "failed", last_error: "not delivered" })
        await insertSessions(h, [expired, failed])

        expect(await complete(h, tenant.id, answered(expired, { name: "Late" }))).toBe(false)
        expect(await complete(h, tenant.id, answered(failed, { name: "Late" }))).toBe(false)
        expect(await complete(h, tenant.id, answered(flowSessionRecord(definition), { name: "Nobody" }))).toBe(false)
        expect(await h().stored.flowSessions(tenant.id)).toEqual(sorted([expired, failed]))
      })

      it(`completes a session once of ${CONCURRENT} completions at once, and keeps the one that did`, async () => {
        const { tenant } = await h().run(seedTenant)
        const definition = flowDefinitionRecord(tenant.id)
        await insertDefinitions(h, [definition])
        const sent = flowSessionRecord(definition)
        await insertSessions(h, [sent])
        const attempts = Array.from({ length: CONCURRENT }, (_, i) => answered(sent, { attempt: i }))

        const results = await h().run(Effect.forEach(
          attempts,
          (attempt) => store((s) => s.completeSession(tenant.id, attempt)),
          { concurrency: "unbounded" }
        ))

        expect(results.filter(Boolean)).toHaveLength(1)
        expect(await h().stored.flowSessions(tenant.id)).toEqual([attempts[results.indexOf(true)]])
      })

      it(`completes a session once of ${CONCURRENT} transactions that all read it sent before any completes (needs several connections)`, async (ctx) => {
        ctx.skip(!h().capabilities.concurrentConnections, NEEDS_CONNECTIONS)
        const { tenant } = await h().run(seedTenant)
        const definition = flowDefinitionRecord(tenant.id)
        await insertDefinitions(h, [definition])
        const sent = flowSessionRecord(definition)
        await insertSessions(h, [sent])

        const results = await h().run(Effect.gen(function*() {
          const allRead = yield* Latch.make(false)
          let reads = 0
          // Each transaction reads the session, waits until every other one has read it too, then completes it.
          const readThenComplete = (i: number) =>
            Transactor.use((t) =>
              t.withTransaction(Effect.gen(function*() {
                const read = Option.getOrThrow(yield* store((s) => s.getSession(tenant.id, sent.id)))
                expect(read.status).toBe("sent")
                if (++reads === CONCURRENT) yield* Latch.open(allRead)
                yield* Latch.await(allRead)
                const attempt = answered(read, { attempt: i })
                return { attempt, completed: yield* store((s) => s.completeSession(tenant.id, attempt)) }
              }))
            )
          const fibers = yield* Effect.forEach(Array.from({ length: CONCURRENT }, (_, i) => i), (i) => Effect.forkChild(readThenComplete(i)))
          return yield* Fiber.joinAll(fibers)
        }))

        const winners = results.filter((r) => r.completed)
        expect(winners).toHaveLength(1)
        expect(await h().stored.flowSessions(tenant.id)).toEqual([winners[0]!.attempt])
      })

      it("replaces every field but the key on update, whatever the status, and reports that it did; an unknown session updates nothing", async () => {
        const { tenant } = await h().run(seedTenant)
        const definition = flowDefinitionRecord(tenant.id)
        await insertDefinitions(h, [definition])
        const sent = flowSessionRecord(definition)
        await insertSessions(h, [sent])

        const opened: FlowSessionRecord = { ...sent, opened_at: at("10:01:00.000"), last_screen: "WELCOME" }
        expect(await h().run(store((s) => s.updateSession(tenant.id, opened)))).toBe(true)
        expect(await getSession(h, tenant.id, sent.id)).toEqual(opened)

        const rich: FlowSessionRecord = { ...richSession(definition), id: sent.id }
        expect(await h().run(store((s) => s.updateSession(tenant.id, rich)))).toBe(true)
        expect(await h().stored.flowSessions(tenant.id)).toEqual([rich])
        expect(await byToken(h, rich.flow_token_hash)).toEqual(rich)
        expect(await byToken(h, sent.flow_token_hash)).toBeUndefined()

        const expired: FlowSessionRecord = { ...sent, status: "expired", last_error: "expired unanswered" }
        expect(await h().run(store((s) => s.updateSession(tenant.id, expired)))).toBe(true)
        expect(await getSession(h, tenant.id, sent.id)).toEqual(expired)
        // An expired session is no longer sent: an answer after the update completes nothing.
        expect(await complete(h, tenant.id, answered(expired, { name: "Late" }))).toBe(false)

        expect(await h().run(store((s) => s.updateSession(tenant.id, flowSessionRecord(definition))))).toBe(false)
        expect(await h().stored.flowSessions(tenant.id)).toEqual([expired])
      })

      it("lists a definition's sessions newest first, by id among those created together, a window at a time, with the total", async () => {
        const { tenant } = await h().run(seedTenant)
        const definition = flowDefinitionRecord(tenant.id)
        const other = flowDefinitionRecord(tenant.id)
        await insertDefinitions(h, [definition, other])
        const oldest = flowSessionRecord(definition, { created_at: at("09:00:00.000") })
        const together = [0, 1, 2].map(() => flowSessionRecord(definition, { created_at: at("10:00:00.000") }))
        const newest = flowSessionRecord(definition, { created_at: at("11:00:00.000") })
        const ofOther = flowSessionRecord(other, { created_at: at("10:30:00.000") })
        await insertSessions(h, [together[1]!, oldest, ofOther, newest, together[0]!, together[2]!])

        const expected = [newest, ...[...together].sort((x, y) => byText(y.id, x.id)), oldest]
        expect(await listSessions(h, tenant.id, definition.id)).toEqual({ items: expected, total: 5 })
        expect(await listSessions(h, tenant.id, definition.id, {}, 2, 0)).toEqual({ items: expected.slice(0, 2), total: 5 })
        expect(await listSessions(h, tenant.id, definition.id, {}, 2, 2)).toEqual({ items: expected.slice(2, 4), total: 5 })
        expect(await listSessions(h, tenant.id, definition.id, {}, 2, 4)).toEqual({ items: expected.slice(4), total: 5 })
        expect(await listSessions(h, tenant.id, definition.id, {}, 2, 6)).toEqual({ items: [], total: 5 })
        expect(await listSessions(h, tenant.id, other.id)).toEqual({ items: [ofOther], total: 1 })
        expect(await listSessions(h, tenant.id, newId())).toEqual({ items: [], total: 0 })
      })

      it("lists the sessions expiring from an instant on (inclusive) or expired before it, with the total of those", async () => {
        const { tenant } = await h().run(seedTenant)
        const definition = flowDefinitionRecord(tenant.id)
        await insertDefinitions(h, [definition])
        const early = flowSessionRecord(definition, { created_at: at("09:00:00.000"), expires_at: at("12:00:00.000") })
        const exactly = flowSessionRecord(definition, { created_at: at("10:00:00.000"), expires_at: at("13:00:00.000") })
        const later = flowSessionRecord(definition, { created_at: at("11:00:00.000"), expires_at: at("14:00:00.000") })
        await insertSessions(h, [early, exactly, later])
        const cut = at("13:00:00.000")
        expect(await listSessions(h, tenant.id, definition.id, { expires_from: cut })).toEqual({ items: [later, exactly], total: 2 })
        expect(await listSessions(h, tenant.id, definition.id, { expired_before: cut })).toEqual({ items: [early], total: 1 })
        expect(await listSessions(h, tenant.id, definition.id, { expires_from: cut }, 1, 0)).toEqual({ items: [later], total: 2 })
      })

      it("lists only the sessions of a status, of a contact, or of both, with the total of those", async () => {
        const { tenant } = await h().run(seedTenant)
        const definition = flowDefinitionRecord(tenant.id)
        await insertDefinitions(h, [definition])
        const [ada, bob] = [newId(), newId()]
        const session = (minute: number, status: string, contact_id: string | null) =>
          flowSessionRecord(definition, { created_at: at(`10:${String(minute).padStart(2, "0")}:00.000`), status, contact_id })
        const sessions = [
          session(0, "sent", ada),
          session(1, "completed", ada),
          session(2, "sent", bob),
          session(3, "expired", ada),
          session(4, "completed", bob),
          session(5, "completed", ada),
          session(6, "sent", null)
        ]
        await insertSessions(h, sessions)
        const newestFirst = (picked: ReadonlyArray<FlowSessionRecord>) => [...picked].reverse()
        const where = (pick: (s: FlowSessionRecord) => boolean) => newestFirst(sessions.filter(pick))

        const completed = where((s) => s.status === "completed")
        expect(await listSessions(h, tenant.id, definition.id, { status: "completed" })).toEqual({ items: completed, total: 3 })
        expect(await listSessions(h, tenant.id, definition.id, { status: "completed" }, 1, 1)).toEqual({ items: completed.slice(1, 2), total: 3 })
        const ofAda = where((s) => s.contact_id === ada)
        expect(await listSessions(h, tenant.id, definition.id, { contact_id: ada })).toEqual({ items: ofAda, total: 4 })
        expect(await listSessions(h, tenant.id, definition.id, { contact_id: ada }, 2, 0)).toEqual({ items: ofAda.slice(0, 2), total: 4 })
        expect(await listSessions(h, tenant.id, definition.id, { status: "sent", contact_id: bob }))
          .toEqual({ items: where((s) => s.status === "sent" && s.contact_id === bob), total: 1 })
        expect(await listSessions(h, tenant.id, definition.id, { status: "failed" })).toEqual({ items: [], total: 0 })
        expect(await listSessions(h, tenant.id, definition.id, { status: "expired", contact_id: bob })).toEqual({ items: [], total: 0 })
        expect(await listSessions(h, tenant.id, definition.id, { contact_id: newId() })).toEqual({ items: [], total: 0 })
        expect(await listSessions(h, tenant.id, definition.id)).toEqual({ items: newestFirst(sessions), total: 7 })
      })
    })

    describe("custom fields", () => {
      it("stores every field of every type, and reads them back unchanged by id and listing", async () => {
        const { tenant } = await h().run(seedTenant)
        const fields: ReadonlyArray<CustomFieldRecord> = [
          customFieldRecord(tenant.id, { key: "cidade_natal_山田", type: "text", editable: false, created_at: at("10:00:00.000") }),
          customFieldRecord(tenant.id, { type: "number" }),
          customFieldRecord(tenant.id, { type: "boolean", editable: false }),
          customFieldRecord(tenant.id, { type: "date" })
        ]
        await h().run(store((s) => Effect.forEach(fields, (f) => s.insertCustomField(f), { discard: true })))

        expect(await h().stored.customFields(tenant.id)).toEqual(sorted(fields))
        for (const field of fields) expect(await h().run(store((s) => s.getCustomField(tenant.id, field.id)))).toEqual(Option.some(field))
        expect(sorted(await h().run(store((s) => s.listCustomFields(tenant.id))))).toEqual(sorted(fields))
      })

      it("finds no custom field for an unknown id, and a tenant without custom fields lists none", async () => {
        const { tenant } = await h().run(seedTenant)
        expect(await h().run(store((s) => s.getCustomField(tenant.id, newId())))).toEqual(Option.none())
        expect(await h().run(store((s) => s.listCustomFields(tenant.id)))).toEqual([])
      })

      it("refuses a key already in the tenant with UniqueViolation naming custom_fields_tenant_key_unique; another tenant may use it", async () => {
        const { tenant: a } = await h().run(seedTenant)
        const { tenant: b } = await h().run(seedTenant)
        const first = customFieldRecord(a.id)
        await h().run(store((s) => s.insertCustomField(first)))

        const again = customFieldRecord(a.id, { key: first.key, type: "number" })
        expectUniqueViolation(await h().run(Effect.flip(store((s) => s.insertCustomField(again)))), "custom_fields_tenant_key_unique")
        expect(await h().stored.customFields(a.id)).toEqual([first])

        const inB = customFieldRecord(b.id, { key: first.key })
        await h().run(store((s) => s.insertCustomField(inB)))
        expect(await h().stored.customFields(b.id)).toEqual([inB])
      })
    })

    describe("tags", () => {
      it("stores every field, and reads tags back unchanged by id and listing", async () => {
        const { tenant } = await h().run(seedTenant)
        const tags: ReadonlyArray<TagRecord> = [
          tagRecord(tenant.id, { name: "Cliente VIP — Zoë 山田 🚀 \"quoted\" \\", created_at: at("10:00:00.000") }),
          tagRecord(tenant.id)
        ]
        await h().run(store((s) => Effect.forEach(tags, (t) => s.insertTag(t), { discard: true })))

        expect(await h().stored.tags(tenant.id)).toEqual(sorted(tags))
        for (const tag of tags) expect(await h().run(store((s) => s.getTag(tenant.id, tag.id)))).toEqual(Option.some(tag))
        expect(sorted(await h().run(store((s) => s.listTags(tenant.id))))).toEqual(sorted(tags))
        expect(await h().run(store((s) => s.getTag(tenant.id, newId())))).toEqual(Option.none())
      })

      it("refuses a name already in the tenant with UniqueViolation naming tags_tenant_name_unique; another tenant may use it", async () => {
        const { tenant: a } = await h().run(seedTenant)
        const { tenant: b } = await h().run(seedTenant)
        const first = tagRecord(a.id)
        await h().run(store((s) => s.insertTag(first)))

        expectUniqueViolation(
          await h().run(Effect.flip(store((s) => s.insertTag(tagRecord(a.id, { name: first.name }))))),
          "tags_tenant_name_unique"
        )
        expect(await h().stored.tags(a.id)).toEqual([first])

        const inB = tagRecord(b.id, { name: first.name })
        await h().run(store((s) => s.insertTag(inB)))
        expect(await h().stored.tags(b.id)).toEqual([inB])
      })

      it("puts a tag on a contact once: tagging again keeps the first tagging and changes nothing", async () => {
        const { tenant } = await h().run(seedTenant)
        const [vip, lead] = [tagRecord(tenant.id), tagRecord(tenant.id)]
        await h().run(store((s) => Effect.andThen(s.insertTag(vip), s.insertTag(lead))))
        const [contact, other] = [newId(), newId()]
        const tag = (contactId: string, tagId: string, time: string) =>
          h().run(store((s) => s.tagContact(tenant.id, contactId, tagId, at(time))))

        await tag(contact, vip.id, "10:00:00.000")
        await tag(contact, vip.id, "11:00:00.000")
        await tag(contact, lead.id, "10:30:00.000")
        await tag(other, lead.id, "10:45:00.000")
        await tag(contact, lead.id, "12:00:00.000")

        const rows = [
          { tenant_id: tenant.id, contact_id: contact, tag_id: vip.id, tagged_at: at("10:00:00.000") },
          { tenant_id: tenant.id, contact_id: contact, tag_id: lead.id, tagged_at: at("10:30:00.000") },
          { tenant_id: tenant.id, contact_id: other, tag_id: lead.id, tagged_at: at("10:45:00.000") }
        ]
        expect(await h().stored.contactTags(tenant.id)).toEqual(
          [...rows].sort((x, y) => byText(x.contact_id, y.contact_id) || byText(x.tag_id, y.tag_id))
        )
        expect([...await h().run(store((s) => s.tagsOf(tenant.id, contact)))].sort()).toEqual([vip.id, lead.id].sort())
        expect(await h().run(store((s) => s.tagsOf(tenant.id, other)))).toEqual([lead.id])
        expect(await h().run(store((s) => s.tagsOf(tenant.id, newId())))).toEqual([])
      })
    })

    describe("tenant isolation", () => {
      it("returns nothing of another tenant's definitions, by id or listing, and refuses to update them", async () => {
        const { a, b, ofA, ofB } = await h().run(twoTenants)

        expect(await getDefinition(h, a.id, ofB.definition.id)).toBeUndefined()
        expect(await h().run(store((s) => s.listDefinitions(a.id)))).toEqual([ofA.definition])
        const hijack: FlowDefinitionRecord = { ...ofB.definition, name: "Hijacked", status: "BLOCKED" }
        expect(await h().run(store((s) => s.updateDefinition(a.id, hijack)))).toBe(false)
        expect(await h().run(store((s) => s.updateDefinition(a.id, { ...hijack, tenant_id: a.id })))).toBe(false)
        expect(await h().stored.flowDefinitions(b.id)).toEqual([ofB.definition])
        expect(await h().stored.flowDefinitions(a.id)).toEqual([ofA.definition])
      })

      it("returns nothing of another tenant's versions, and never gives a tenant a version under another's definition, nor takes its number", async () => {
        const { a, b, ofA, ofB } = await h().run(twoTenants)

        expect(await getVersion(h, a.id, ofB.version.id)).toBeUndefined()
        expect(await h().run(store((s) => s.listVersions(a.id, ofB.definition.id)))).toEqual([])
        // Refusing or doing nothing are both fine; storing a version of A under B's definition is not.
        const hijacked = flowVersionRecord({ ...ofB.definition, tenant_id: a.id }, 2)
        const exit = await h().exit(store((s) => s.insertVersion(hijacked)))
        if (Exit.isFailure(exit)) {
          expect(Option.getOrUndefined(Exit.findErrorOption(exit))).toMatchObject({ _tag: "StorageError" })
        }
        expect(await h().stored.flowVersions(a.id)).toEqual([ofA.version])

        // B's own version 2 lands where A's attempt would have gone.
        const next = flowVersionRecord(ofB.definition, 2)
        await insertVersions(h, [next])
        expect(await h().stored.flowVersions(b.id)).toEqual(sorted([ofB.version, next]))
        expect(await h().run(store((s) => s.listVersions(b.id, ofB.definition.id)))).toEqual([next, ofB.version])
      })

      it("returns nothing of another tenant's sessions, by id or listing, and never completes or updates them", async () => {
        const { a, b, contactId, ofA, ofB } = await h().run(twoTenants)

        expect(await getSession(h, a.id, ofB.session.id)).toBeUndefined()
        expect(await listSessions(h, a.id, ofB.definition.id)).toEqual({ items: [], total: 0 })
        expect(await listSessions(h, a.id, ofB.definition.id, { contact_id: contactId })).toEqual({ items: [], total: 0 })
        expect(await listSessions(h, a.id, ofB.definition.id, { status: "sent" })).toEqual({ items: [], total: 0 })
        expect(await listSessions(h, a.id, ofA.definition.id, { contact_id: contactId })).toEqual({ items: [ofA.session], total: 1 })

        const hijack = answered(ofB.session, { name: "Hijacked" })
        expect(await complete(h, a.id, hijack)).toBe(false)
        expect(await complete(h, a.id, { ...hijack, tenant_id: a.id })).toBe(false)
        expect(await h().run(store((s) => s.updateSession(a.id, hijack)))).toBe(false)
        expect(await h().run(store((s) => s.updateSession(a.id, { ...hijack, tenant_id: a.id })))).toBe(false)
        expect(await h().stored.flowSessions(b.id)).toEqual([ofB.session])
        expect(await h().stored.flowSessions(a.id)).toEqual([ofA.session])

        // B's session is still sent: its own answer completes it.
        expect(await complete(h, b.id, answered(ofB.session, { name: "Own" }))).toBe(true)
      })

      it("returns nothing of another tenant's custom fields and tags, by id or listing", async () => {
        const { a, b, ofA, ofB } = await h().run(twoTenants)

        expect(await h().run(store((s) => s.getCustomField(a.id, ofB.field.id)))).toEqual(Option.none())
        expect(await h().run(store((s) => s.listCustomFields(a.id)))).toEqual([ofA.field])
        expect(await h().run(store((s) => s.getTag(a.id, ofB.tag.id)))).toEqual(Option.none())
        expect(await h().run(store((s) => s.listTags(a.id)))).toEqual([ofA.tag])
        expect(await h().run(store((s) => s.listTags(b.id)))).toEqual([ofB.tag])
      })

      it("gives each tenant only its own tags on a contact id both use, and tagging in one leaves the other's alone", async () => {
        const { a, b, contactId, ofA, ofB } = await h().run(twoTenants)

        expect(await h().run(store((s) => s.tagsOf(a.id, contactId)))).toEqual([ofA.tag.id])
        expect(await h().run(store((s) => s.tagsOf(b.id, contactId)))).toEqual([ofB.tag.id])

        const later = tagRecord(a.id)
        await h().run(store((s) => Effect.andThen(s.insertTag(later), s.tagContact(a.id, contactId, later.id, at("10:00:00.000")))))
        // Tagging in A with B's tag id, already on the contact in B, writes A's row only.
        await h().run(store((s) => s.tagContact(a.id, contactId, ofB.tag.id, at("10:30:00.000"))))

        expect([...await h().run(store((s) => s.tagsOf(a.id, contactId)))].sort()).toEqual([ofA.tag.id, later.id, ofB.tag.id].sort())
        expect(await h().run(store((s) => s.tagsOf(b.id, contactId)))).toEqual([ofB.tag.id])
        expect(await h().stored.contactTags(b.id)).toEqual([
          { tenant_id: b.id, contact_id: contactId, tag_id: ofB.tag.id, tagged_at: at("09:00:00.000") }
        ])
      })
    })
  }
})
