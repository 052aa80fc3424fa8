import { Effect, Exit, Fiber, Latch, Layer, Option } from "effect"
import { expect, it } from "vitest"
import { ContactService } from "../../src/contacts/ContactService.ts"
import type { AccountStore } from "../../src/ports/AccountStore.ts"
import { ContactStore } from "../../src/ports/ContactStore.ts"
import type { OutboxStore } from "../../src/ports/OutboxStore.ts"
import type { TenantStore } from "../../src/ports/TenantStore.ts"
import { Transactor } from "../../src/ports/Transactor.ts"
import { slugify } from "../../src/kernel/Slug.ts"
import { TenantService } from "../../src/tenants/TenantService.ts"
import { contactRecord, seedTenant } from "./Fixtures.ts"
import { byId, eventsOf, makeSuite, type Suite } from "./Harness.ts"

/** What the concurrency suite runs against: contacts, events and tenants, and the Transactor, under their services. */
type ConcurrencyPorts = ContactStore | OutboxStore | Transactor | TenantStore | AccountStore

const CONCURRENT = 8

// TenantService.create makes at most four attempts when the slug it chose is taken meanwhile, and
// each failed attempt means another request committed first; so four racing for one name all succeed.
const RACING_TENANTS = 4

const NEEDS_CONNECTIONS = "needs several connections: the adapter runs one transaction at a time"

/**
 * Concurrency: racing use cases keep the store's uniqueness and counts right. The races run on
 * every adapter (serialised where it has one connection); the two that need transactions open
 * side by side skip themselves without `concurrentConnections`.
 */
export const concurrencySuite: Suite<ConcurrencyPorts, "contacts" | "outboxEvents" | "tenant"> = makeSuite({
  name: "concurrency",
  tables: ["contacts", "outboxEvents", "tenant"],
  services: Layer.mergeAll(ContactService.layer, TenantService.layer),
  tests: (h) => {
    it(`lets exactly one of ${CONCURRENT} concurrent creates claim a phone: one row, one event, the rest Conflict`, async () => {
      const { tenant } = await h().run(seedTenant)

      const exits = await h().run(Effect.forEach(
        Array.from({ length: CONCURRENT }, (_, i) => i),
        (i) => Effect.exit(ContactService.use((s) => s.create(tenant.id, { name: `Racer ${i}`, phone: "+14155550100" }))),
        { concurrency: "unbounded" }
      ))

      const winners = exits.filter(Exit.isSuccess).map((exit) => exit.value)
      const losers = exits.filter(Exit.isFailure).map((exit) => Option.getOrUndefined(Exit.findErrorOption(exit))?._tag)
      expect(winners).toHaveLength(1)
      expect(losers).toEqual(Array(CONCURRENT - 1).fill("Conflict"))
      expect(await h().stored.contacts(tenant.id)).toEqual(winners)
      const events = eventsOf(await h().stored.outboxEvents(tenant.id))
      expect(events.map((e) => [e.type, (e.data.contact as { id: string }).id])).toEqual([["contact.created", winners[0]!.id]])
    })

    it(`keeps all of ${CONCURRENT} concurrent creates with distinct phones, counted and announced once each`, async () => {
      const { tenant } = await h().run(seedTenant)

      const created = await h().run(Effect.forEach(
        Array.from({ length: CONCURRENT }, (_, i) => `+1415555${String(i).padStart(4, "0")}`),
        (phone) => ContactService.use((s) => s.create(tenant.id, { phone })),
        { concurrency: "unbounded" }
      ))

      const page = await h().run(ContactStore.use((s) => s.list(tenant.id, { limit: 100, offset: 0 })))
      expect(page.total).toBe(CONCURRENT)
      expect(page.items.map((c) => c.id).sort()).toEqual(created.map((c) => c.id).sort())
      expect(await h().stored.contacts(tenant.id)).toEqual([...created].sort(byId))
      const events = eventsOf(await h().stored.outboxEvents(tenant.id))
      expect(events.map((e) => (e.data.contact as { id: string }).id).sort()).toEqual(created.map((c) => c.id).sort())
    })

    it(`gives ${RACING_TENANTS} concurrent tenants with the same name distinct slugs, all created`, async () => {
      const { user, account } = await h().run(seedTenant)
      const owner = { kind: "user" as const, userId: user.id, email: user.email }
      const name = `Racing Café ${globalThis.crypto.randomUUID().slice(0, 8)}`
      const base = slugify(name)

      const tenants = await h().run(Effect.forEach(
        Array.from({ length: RACING_TENANTS }, () => name),
        (tenantName) => TenantService.use((s) => s.create(owner, { name: tenantName, billing_account_id: account.id })),
        { concurrency: "unbounded" }
      ))

      expect(tenants.map((t) => t.slug).sort()).toEqual([base, `${base}-2`, `${base}-3`, `${base}-4`].sort())
      for (const tenant of tenants) expect(await h().stored.tenant(tenant.id)).toEqual(tenant)
    })

    it("lets only one of two transactions that both saw a phone free insert it (needs several connections)", async (ctx) => {
      ctx.skip(!h().capabilities.concurrentConnections, NEEDS_CONNECTIONS)
      const { tenant } = await h().run(seedTenant)

      const exits = await h().run(Effect.gen(function*() {
        const bothChecked = yield* Latch.make(false)
        let checked = 0
        // Each transaction checks the phone is free, waits until the other has checked too, then inserts.
        const checkThenInsert = (name: string) =>
          Transactor.use((t) => t.withTransaction(Effect.gen(function*() {
            yield* ContactStore.use((s) => s.findBy(tenant.id, "phone", "+14155550100"))
            if (++checked === 2) yield* Latch.open(bothChecked)
            yield* Latch.await(bothChecked)
            yield* ContactStore.use((s) => s.insert(contactRecord(tenant.id, { name, phone: "+14155550100" })))
          })))
        const first = yield* Effect.forkChild(checkThenInsert("First"))
        const second = yield* Effect.forkChild(checkThenInsert("Second"))
        return [yield* Fiber.await(first), yield* Fiber.await(second)]
      }))

      expect(exits.filter(Exit.isSuccess)).toHaveLength(1)
      const failure = exits.find(Exit.isFailure)
      expect(failure === undefined ? undefined : Option.getOrUndefined(Exit.findErrorOption(failure))).toMatchObject({
        _tag: "StorageError",
        reason: "UniqueViolation",
        constraint: "contacts_tenant_phone_unique"
      })
      expect(await h().stored.contacts(tenant.id)).toHaveLength(1)
    })

    it("hides a transaction's writes from other readers until it commits (needs several connections)", async (ctx) => {
      ctx.skip(!h().capabilities.concurrentConnections, NEEDS_CONNECTIONS)
      const { tenant } = await h().run(seedTenant)
      const contact = contactRecord(tenant.id)

      const [seenBefore, seenAfter] = await h().run(Effect.gen(function*() {
        const written = yield* Latch.make(false)
        const release = yield* Latch.make(false)
        const writer = yield* Effect.forkChild(Transactor.use((t) => t.withTransaction(Effect.gen(function*() {
          yield* ContactStore.use((s) => s.insert(contact))
          yield* Latch.open(written)
          yield* Latch.await(release)
        }))))
        yield* Latch.await(written)
        const before = yield* ContactStore.use((s) => s.get(tenant.id, contact.id))
        yield* Latch.open(release)
        yield* Fiber.join(writer)
        const after = yield* ContactStore.use((s) => s.get(tenant.id, contact.id))
        return [before, after] as const
      }))

      expect(Option.isNone(seenBefore)).toBe(true)
      expect(Option.getOrUndefined(seenAfter)).toEqual(contact)
    })
  }
})
