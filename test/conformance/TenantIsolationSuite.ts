import { Effect, Option } from "effect"
import { expect, it } from "vitest"
import { ContactService } from "../../src/contacts/ContactService.ts"
import type { AccountStore } from "../../src/ports/AccountStore.ts"
import { ContactStore } from "../../src/ports/ContactStore.ts"
import { OutboxStore } from "../../src/ports/OutboxStore.ts"
import type { TenantStore } from "../../src/ports/TenantStore.ts"
import type { Transactor } from "../../src/ports/Transactor.ts"
import { contactRecord, outboxEvent, seedTenant } from "./Fixtures.ts"
import { eventsOf, makeSuite, type Suite } from "./Harness.ts"

/** What the tenant isolation suite runs against: contacts and events, their tenants, and the contact service's transactions. */
type IsolationPorts = ContactStore | OutboxStore | Transactor | TenantStore | AccountStore

// Two tenants, each holding one contact with the same phone and email (both allowed: uniqueness is per tenant).
const twoTenants = Effect.gen(function*() {
  const a = (yield* seedTenant).tenant
  const b = (yield* seedTenant).tenant
  const contactOfA = contactRecord(a.id, { name: "Ada of A", phone: "+14155550100", email: "shared@example.com" })
  const contactOfB = contactRecord(b.id, {
    name: "Bea of B",
    phone: "+14155550100",
    email: "shared@example.com",
    custom_fields: { owner: "b" }
  })
  yield* ContactStore.use((s) => Effect.all([s.insert(contactOfA), s.insert(contactOfB)]))
  return { a, b, contactOfA, contactOfB }
})

/** Tenant isolation: tenant A can never read or change tenant B's contacts or events, by any method. */
export const tenantIsolationSuite: Suite<IsolationPorts, "contacts" | "outboxEvents"> = makeSuite({
  name: "tenant isolation",
  tables: ["contacts", "outboxEvents"],
  services: ContactService.layer,
  tests: (h) => {
    it("lets two tenants hold contacts with the same phone and email", async () => {
      const { a, b, contactOfA, contactOfB } = await h().run(twoTenants)
      expect(await h().stored.contacts(a.id)).toEqual([contactOfA])
      expect(await h().stored.contacts(b.id)).toEqual([contactOfB])
    })

    it("returns nothing for another tenant's contact", async () => {
      const { a, contactOfB } = await h().run(twoTenants)
      expect(Option.isNone(await h().run(ContactStore.use((s) => s.get(a.id, contactOfB.id))))).toBe(true)
    })

    it("refuses to update another tenant's contact and leaves it unchanged", async () => {
      const { a, b, contactOfB } = await h().run(twoTenants)
      const hijack = { ...contactOfB, name: "Hijacked", phone: "+19995550000", custom_fields: { owner: "a" } }

      expect(await h().run(ContactStore.use((s) => s.update(a.id, hijack)))).toBe(false)
      expect(await h().run(ContactStore.use((s) => s.update(a.id, { ...hijack, tenant_id: a.id })))).toBe(false)
      expect(await h().stored.contacts(b.id)).toEqual([contactOfB])
    })

    it("lists and counts only the tenant's own contacts", async () => {
      const { a, b, contactOfA, contactOfB } = await h().run(twoTenants)
      const extraOfB = contactRecord(b.id, { name: "Extra of B" })
      await h().run(ContactStore.use((s) => s.insert(extraOfB)))

      expect(await h().run(ContactStore.use((s) => s.list(a.id, { limit: 50, offset: 0 }))))
        .toEqual({ items: [contactOfA], total: 1 })
      const ofB = await h().run(ContactStore.use((s) => s.list(b.id, { limit: 50, offset: 0 })))
      expect(ofB.total).toBe(2)
      expect(ofB.items.map((c) => c.id).sort()).toEqual([contactOfB.id, extraOfB.id].sort())
    })

    it("finds by phone or email only within the tenant", async () => {
      const { a, contactOfA, contactOfB } = await h().run(twoTenants)
      const onlyInB = contactRecord(contactOfB.tenant_id, { phone: "+14155550177", email: "only-b@example.com" })
      await h().run(ContactStore.use((s) => s.insert(onlyInB)))
      const findInA = (field: "phone" | "email", value: string) =>
        h().run(ContactStore.use((s) => s.findBy(a.id, field, value))).then(Option.getOrUndefined)

      expect(await findInA("phone", "+14155550100")).toEqual(contactOfA)
      expect(await findInA("email", "shared@example.com")).toEqual(contactOfA)
      expect(await findInA("phone", "+14155550177")).toBeUndefined()
      expect(await findInA("email", "only-b@example.com")).toBeUndefined()
    })

    it("lists only the tenant's own outbox events", async () => {
      const { a, b } = await h().run(twoTenants)
      const ofA = outboxEvent(a.id)
      const ofB = outboxEvent(b.id)
      await h().run(OutboxStore.use((s) => s.append([ofB, ofA])))

      expect(await h().run(OutboxStore.use((s) => s.listByTenant(a.id, { limit: 10 })))).toEqual([ofA])
      expect(await h().run(OutboxStore.use((s) => s.listByTenant(b.id, { limit: 10 })))).toEqual([ofB])
      expect(eventsOf(await h().stored.outboxEvents(a.id))).toEqual([ofA])
    })

    it("answers NotFound through the contact service for another tenant's contact, and emits nothing", async () => {
      const { a, b, contactOfB } = await h().run(twoTenants)

      const getError = await h().run(Effect.flip(ContactService.use((s) => s.get(a.id, contactOfB.id))))
      const updateError = await h().run(Effect.flip(ContactService.use((s) => s.update(a.id, contactOfB.id, { name: "Hijacked" }))))

      expect(getError._tag).toBe("NotFound")
      expect(updateError._tag).toBe("NotFound")
      expect(await h().stored.contacts(b.id)).toEqual([contactOfB])
      expect(await h().stored.outboxEvents(a.id)).toEqual([])
      expect(await h().stored.outboxEvents(b.id)).toEqual([])
    })
  }
})
