import { Effect, Option } from "effect"
import { describe, expect, it } from "vitest"
import type { AccountStore } from "../../src/ports/AccountStore.ts"
import type { TenantStore } from "../../src/ports/TenantStore.ts"
import type { Transactor } from "../../src/ports/Transactor.ts"
import { type WebhookEndpointRecord, WebhookEndpointStore } from "../../src/ports/WebhookEndpointStore.ts"
import { contend } from "./Contention.ts"
import { seedTenant, webhookEndpointRecord } from "./Fixtures.ts"
import { byId, makeSuite, type Suite, type UseHarness } from "./Harness.ts"

/** What the WebhookEndpointStore suite runs against: the port, the tenants endpoints belong to, and transactions for its locks. */
type EndpointPorts = WebhookEndpointStore | Transactor | TenantStore | AccountStore

type UseEndpoints = UseHarness<WebhookEndpointStore, "webhookEndpoints">

const NEEDS_CONNECTIONS = "needs several connections: the adapter runs one transaction at a time"

const insertAll = (endpoints: ReadonlyArray<WebhookEndpointRecord>) =>
  WebhookEndpointStore.use((s) => Effect.forEach(endpoints, (endpoint) => s.insert(endpoint), { discard: true }))

const getEndpoint = (h: UseEndpoints, tenantId: string, id: string) =>
  h().run(WebhookEndpointStore.use((s) => s.get(tenantId, id))).then(Option.getOrUndefined)

const listEndpoints = (h: UseEndpoints, tenantId: string) => h().run(WebhookEndpointStore.use((s) => s.list(tenantId)))

// An endpoint with every optional field set: unicode text, both filter lists, a header, a
// suspension's whole history, and values at the ends of their ranges.
const everyFieldSet = (tenantId: string): WebhookEndpointRecord =>
  webhookEndpointRecord(tenantId, {
    name: "Zoë's CRM — 山田 🚀 \"quoted\" \\ back",
    url: "https://crm.exämple.com:8443/hooks/omni?source=omni&x=%20#frag",
    secret: "whsec_AbCd+/EfGh0123456789abcdefghijKLMN",
    authorization_header: "Bearer pässwörd 'quotes' \"double\" 🔑",
    subscribed_events: ["message.received", "contact.unsubscribed", "chatapp_flow.health_changed"],
    source_filter_mode: "selected",
    filtered_channel_ids: [globalThis.crypto.randomUUID(), "channel-zoë"],
    filtered_email_integration_ids: ["imap-1", "imap-2", "imap-3"],
    retry_strategy: "none",
    max_retries: 0,
    timeout_seconds: 60,
    propagate_trace_context: true,
    is_active: false,
    is_verified: true,
    consecutive_failures: 20,
    suspended_at: "2026-11-22T10:00:00.000Z",
    next_reactivation_at: "2026-11-22T10:01:00.000Z",
    reactivation_attempts: 9,
    permanently_deactivated_at: "2026-11-22T22:00:00.000Z",
    last_success_at: "2026-11-22T09:59:59.999Z",
    last_failure_at: "2026-11-22T10:00:00.000Z",
    last_error: "HTTP 503: \"Service Unavailable\"\nretry later",
    created_at: "2026-11-22T09:00:00.001Z",
    updated_at: "2026-11-22T10:00:00.000Z"
  })

// Two tenants with one endpoint each, at the same URL (allowed: endpoints are per tenant).
const twoTenants = Effect.gen(function*() {
  const a = (yield* seedTenant).tenant
  const b = (yield* seedTenant).tenant
  const endpointOfA = webhookEndpointRecord(a.id, { name: "Hook of A" })
  const endpointOfB = webhookEndpointRecord(b.id, { name: "Hook of B", authorization_header: "Bearer b-only" })
  yield* insertAll([endpointOfA, endpointOfB])
  return { a, b, endpointOfA, endpointOfB }
})

// A suspended endpoint whose re-verification is due at `due`.
const suspendedUntil = (tenantId: string, due: string) =>
  webhookEndpointRecord(tenantId, { is_active: false, suspended_at: "2026-11-22T09:00:00.000Z", next_reactivation_at: due })

/**
 * WebhookEndpointStore: every field round-trips; update replaces; list is oldest first; no tenant
 * reaches another's endpoints; getForUpdate holds the row until the transaction ends; due
 * re-verifications are leased to one checker each.
 */
export const webhookEndpointStoreSuite: Suite<EndpointPorts, "webhookEndpoints"> = makeSuite({
  name: "WebhookEndpointStore",
  tables: ["webhookEndpoints"],
  tests: (h) => {
    it("stores a new endpoint, its nulls, defaults and flags, and reads it back unchanged", async () => {
      const { tenant } = await h().run(seedTenant)
      const endpoint = webhookEndpointRecord(tenant.id)
      await h().run(WebhookEndpointStore.use((s) => s.insert(endpoint)))

      expect(await h().stored.webhookEndpoints(tenant.id)).toEqual([endpoint])
      expect(await getEndpoint(h, tenant.id, endpoint.id)).toEqual(endpoint)
      expect(await listEndpoints(h, tenant.id)).toEqual([endpoint])
    })

    it("stores every field set, with unicode text, lists, flags, counters and timestamps, and reads it back unchanged", async () => {
      const { tenant } = await h().run(seedTenant)
      const endpoint = everyFieldSet(tenant.id)
      await h().run(WebhookEndpointStore.use((s) => s.insert(endpoint)))

      expect(await h().stored.webhookEndpoints(tenant.id)).toEqual([endpoint])
      expect(await getEndpoint(h, tenant.id, endpoint.id)).toEqual(endpoint)
    })

    it("tells an empty filter list from none", async () => {
      const { tenant } = await h().run(seedTenant)
      const endpoint = webhookEndpointRecord(tenant.id, {
        source_filter_mode: "selected",
        filtered_channel_ids: [],
        filtered_email_integration_ids: null
      })
      await h().run(WebhookEndpointStore.use((s) => s.insert(endpoint)))

      const read = await getEndpoint(h, tenant.id, endpoint.id)
      expect(read?.filtered_channel_ids).toEqual([])
      expect(read?.filtered_email_integration_ids).toBeNull()
      expect(await h().stored.webhookEndpoints(tenant.id)).toEqual([endpoint])
    })

    it("finds no endpoint for an unknown id", async () => {
      const { tenant } = await h().run(seedTenant)
      expect(await getEndpoint(h, tenant.id, webhookEndpointRecord(tenant.id).id)).toBeUndefined()
    })

    it("replaces every changeable field on update and reports that it did", async () => {
      const { tenant } = await h().run(seedTenant)
      const before = webhookEndpointRecord(tenant.id)
      await h().run(WebhookEndpointStore.use((s) => s.insert(before)))
      const after: WebhookEndpointRecord = { ...everyFieldSet(tenant.id), id: before.id, created_at: before.created_at }

      expect(await h().run(WebhookEndpointStore.use((s) => s.update(tenant.id, after)))).toBe(true)
      expect(await h().stored.webhookEndpoints(tenant.id)).toEqual([after])
    })

    it("clears fields set back to null, and a list back to none, on update", async () => {
      const { tenant } = await h().run(seedTenant)
      const before = everyFieldSet(tenant.id)
      await h().run(WebhookEndpointStore.use((s) => s.insert(before)))
      const after = webhookEndpointRecord(tenant.id, { id: before.id, created_at: before.created_at, secret: before.secret })

      expect(await h().run(WebhookEndpointStore.use((s) => s.update(tenant.id, after)))).toBe(true)
      expect(await h().stored.webhookEndpoints(tenant.id)).toEqual([after])
    })

    it("updates nothing and reports false for an unknown endpoint", async () => {
      const { tenant } = await h().run(seedTenant)
      const existing = webhookEndpointRecord(tenant.id)
      await h().run(WebhookEndpointStore.use((s) => s.insert(existing)))

      const ghost = webhookEndpointRecord(tenant.id, { name: "Ghost" })
      expect(await h().run(WebhookEndpointStore.use((s) => s.update(tenant.id, ghost)))).toBe(false)
      expect(await h().stored.webhookEndpoints(tenant.id)).toEqual([existing])
    })

    it("deletes the endpoint and reports that it did; a second delete reports false", async () => {
      const { tenant } = await h().run(seedTenant)
      const gone = webhookEndpointRecord(tenant.id)
      const kept = webhookEndpointRecord(tenant.id)
      await h().run(insertAll([gone, kept]))

      expect(await h().run(WebhookEndpointStore.use((s) => s.delete(tenant.id, gone.id)))).toBe(true)
      expect(await h().stored.webhookEndpoints(tenant.id)).toEqual([kept])
      expect(await h().run(WebhookEndpointStore.use((s) => s.delete(tenant.id, gone.id)))).toBe(false)
      expect(await h().stored.webhookEndpoints(tenant.id)).toEqual([kept])
    })

    it("lists oldest first, whatever order they were stored in", async () => {
      const { tenant } = await h().run(seedTenant)
      const at = (minute: number) => `2026-11-22T10:${String(minute).padStart(2, "0")}:00.000Z`
      const [e0, e1, e2, e3] = [0, 1, 2, 3].map((minute) =>
        webhookEndpointRecord(tenant.id, { name: `Endpoint ${minute}`, created_at: at(minute) })
      )
      await h().run(insertAll([e2!, e0!, e3!, e1!]))

      expect(await listEndpoints(h, tenant.id)).toEqual([e0, e1, e2, e3])
    })

    it("lists endpoints created at the same instant each once, in the same order every time", async () => {
      const { tenant } = await h().run(seedTenant)
      const twins = Array.from({ length: 5 }, (_, i) => webhookEndpointRecord(tenant.id, { name: `Twin ${i}` }))
      await h().run(insertAll(twins))

      const first = await listEndpoints(h, tenant.id)
      expect([...first.map((e) => e.id)].sort()).toEqual(twins.map((e) => e.id).sort())
      expect(await listEndpoints(h, tenant.id)).toEqual(first)
    })

    it("lists nothing for a tenant without endpoints", async () => {
      const { tenant } = await h().run(seedTenant)
      expect(await listEndpoints(h, tenant.id)).toEqual([])
    })

    it("returns nothing for another tenant's endpoint and lists only the tenant's own", async () => {
      const { a, b, endpointOfA, endpointOfB } = await h().run(twoTenants)
      const extraOfB = webhookEndpointRecord(b.id, { name: "Extra of B", created_at: "2026-11-22T11:00:00.000Z" })
      await h().run(insertAll([extraOfB]))

      expect(await getEndpoint(h, a.id, endpointOfB.id)).toBeUndefined()
      expect(await listEndpoints(h, a.id)).toEqual([endpointOfA])
      expect(await listEndpoints(h, b.id)).toEqual([endpointOfB, extraOfB])
    })

    it("refuses to update another tenant's endpoint and leaves it unchanged", async () => {
      const { a, b, endpointOfB } = await h().run(twoTenants)
      const hijack: WebhookEndpointRecord = {
        ...endpointOfB,
        url: "https://attacker.example/",
        secret: "whsec_stolenstolenstolenstolenstolen00",
        authorization_header: null,
        is_active: false
      }

      expect(await h().run(WebhookEndpointStore.use((s) => s.update(a.id, hijack)))).toBe(false)
      expect(await h().run(WebhookEndpointStore.use((s) => s.update(a.id, { ...hijack, tenant_id: a.id })))).toBe(false)
      expect(await h().stored.webhookEndpoints(b.id)).toEqual([endpointOfB])
      expect(await h().stored.webhookEndpoints(a.id)).toHaveLength(1)
    })

    it("refuses to delete another tenant's endpoint and leaves it in place", async () => {
      const { a, b, endpointOfA, endpointOfB } = await h().run(twoTenants)

      expect(await h().run(WebhookEndpointStore.use((s) => s.delete(a.id, endpointOfB.id)))).toBe(false)
      expect(await h().stored.webhookEndpoints(b.id)).toEqual([endpointOfB])
      expect(await h().stored.webhookEndpoints(a.id)).toEqual([endpointOfA])
    })

    describe("getForUpdate", () => {
      const getForUpdate = (tenantId: string, id: string) =>
        WebhookEndpointStore.use((s) => s.getForUpdate(tenantId, id)).pipe(Effect.map(Option.getOrUndefined))

      it("reads the endpoint as get does, and nothing for another tenant's or an unknown one", async () => {
        const { a, b, endpointOfB } = await h().run(twoTenants)

        expect(await h().run(getForUpdate(b.id, endpointOfB.id))).toEqual(endpointOfB)
        expect(await h().run(getForUpdate(a.id, endpointOfB.id))).toBeUndefined()
        expect(await h().run(getForUpdate(b.id, webhookEndpointRecord(b.id).id))).toBeUndefined()
      })

      it("holds the row until the transaction ends: another transaction's getForUpdate waits, then reads what it wrote (needs several connections)", async (ctx) => {
        ctx.skip(!h().capabilities.concurrentConnections, NEEDS_CONNECTIONS)
        const { tenant } = await h().run(seedTenant)
        const endpoint = webhookEndpointRecord(tenant.id)
        await h().run(insertAll([endpoint]))
        // Each transaction counts one more failure on the row it read, as recording an attempt does.
        const countFailure = (read: WebhookEndpointRecord | undefined) =>
          WebhookEndpointStore.use((s) => s.update(tenant.id, { ...read!, consecutive_failures: read!.consecutive_failures + 1 }))

        const { whileHeld, after } = await h().run(contend({
          hold: getForUpdate(tenant.id, endpoint.id),
          finish: countFailure,
          contend: Effect.tap(getForUpdate(tenant.id, endpoint.id), countFailure)
        }))

        expect(Option.isNone(whileHeld)).toBe(true)
        expect(after?.consecutive_failures).toBe(1)
        expect(await h().stored.webhookEndpoints(tenant.id)).toEqual([{ ...endpoint, consecutive_failures: 2 }])
      })
    })

    it("counts suspended endpoints across tenants, and per tenant when asked; deactivated and active ones are not", async () => {
      const [{ tenant: a }, { tenant: b }] = await Promise.all([h().run(seedTenant), h().run(seedTenant)])
      const count = (byTenant: boolean) => h().run(WebhookEndpointStore.use((s) => s.countSuspended(byTenant)))
      const total = async () => (await count(false)).reduce((sum, row) => sum + row.count, 0)
      const before = await total()
      await h().run(insertAll([
        suspendedUntil(a.id, "2026-11-22T12:00:00.000Z"),
        suspendedUntil(a.id, "2026-11-22T12:00:00.000Z"),
        suspendedUntil(b.id, "2026-11-22T12:00:00.000Z"),
        webhookEndpointRecord(a.id),
        webhookEndpointRecord(b.id, { is_active: false, permanently_deactivated_at: "2026-11-22T10:00:00.000Z" })
      ]))
      expect(await total()).toBe(before + 3)
      expect((await count(false)).every((row) => row.tenant_id === null)).toBe(true)
      const mine = (await count(true)).filter((row) => row.tenant_id === a.id || row.tenant_id === b.id)
      expect(mine.sort((x, y) => y.count - x.count)).toEqual([{ tenant_id: a.id, count: 2 }, { tenant_id: b.id, count: 1 }])
    })

    describe("claimDueChecks", () => {
      // Claims are not scoped by tenant: each test keeps to the endpoints it made, and claims far more than exist.
      const claimChecks = async (mine: ReadonlyArray<WebhookEndpointRecord>, now: string, leaseUntil: string, limit = 10_000) => {
        const ids = new Set(mine.map((e) => e.id))
        const claimed = await h().run(WebhookEndpointStore.use((s) => s.claimDueChecks(now, leaseUntil, limit)))
        return claimed.filter((e) => ids.has(e.id))
      }

      it("leases suspended endpoints whose re-verification is due, and no others", async () => {
        const { tenant } = await h().run(seedTenant)
        const dueNow = suspendedUntil(tenant.id, "2026-11-22T12:00:00.000Z")
        const dueLater = suspendedUntil(tenant.id, "2026-11-22T12:00:00.001Z")
        const active = webhookEndpointRecord(tenant.id)
        await h().run(insertAll([dueNow, dueLater, active]))

        expect(await claimChecks([dueNow, dueLater, active], "2026-11-22T12:00:00.000Z", "2026-11-22T12:05:00.000Z"))
          .toEqual([dueNow])
        // The lease belongs to the claim, not to the endpoint.
        expect(await h().stored.webhookEndpoints(tenant.id)).toEqual([dueNow, dueLater, active].sort(byId))
      })

      it("leases each due endpoint to one checker until the lease passes, then again", async () => {
        const { tenant } = await h().run(seedTenant)
        const due = suspendedUntil(tenant.id, "2026-11-22T12:00:00.000Z")
        await h().run(insertAll([due]))

        expect(await claimChecks([due], "2026-11-22T12:00:00.000Z", "2026-11-22T12:05:00.000Z")).toEqual([due])
        expect(await claimChecks([due], "2026-11-22T12:04:59.999Z", "2026-11-22T12:10:00.000Z")).toEqual([])
        expect(await claimChecks([due], "2026-11-22T12:05:00.000Z", "2026-11-22T12:10:00.000Z")).toEqual([due])
      })

      it("gives two concurrent claims disjoint endpoints (needs several connections)", async (ctx) => {
        ctx.skip(!h().capabilities.concurrentConnections, NEEDS_CONNECTIONS)
        const { tenant } = await h().run(seedTenant)
        // Due long before any other test's endpoints, so the claims reach these first.
        const due = Array.from({ length: 40 }, (_, i) => suspendedUntil(tenant.id, `2000-01-01T00:00:${String(i).padStart(2, "0")}.000Z`))
        await h().run(insertAll(due))
        const ids = new Set(due.map((e) => e.id))

        const [a, b] = await h().run(Effect.all([
          WebhookEndpointStore.use((s) => s.claimDueChecks("2026-11-22T12:00:00.000Z", "2099-01-01T00:00:00.000Z", 30)),
          WebhookEndpointStore.use((s) => s.claimDueChecks("2026-11-22T12:00:00.000Z", "2099-01-01T00:00:00.000Z", 30))
        ], { concurrency: 2 }))
        const claimed = [...a, ...b].filter((e) => ids.has(e.id)).map((e) => e.id)
        expect(new Set(claimed).size).toBe(claimed.length)
        expect(claimed.sort()).toEqual([...ids].sort())
      })
    })
  }
})
