import { Effect, Option } from "effect"
import { describe, expect, it } from "vitest"
import type { AccountStore } from "../../src/ports/AccountStore.ts"
import { type ContactRecord, ContactStore } from "../../src/ports/ContactStore.ts"
import type { TenantStore } from "../../src/ports/TenantStore.ts"
import { Transactor } from "../../src/ports/Transactor.ts"
import { contend } from "./Contention.ts"
import { AWKWARD_TEXTS, contactRecord, contentionTransactor, NEEDS_CONTENTION, seedTenant } from "./Fixtures.ts"
import { byId, makeSuite, type Suite } from "./Harness.ts"

/** Custom fields exercising every JSON kind, nesting, unicode keys' values and numbers that must not drift. */
const RICH_FIELDS = {
  plan: "gold",
  seats: 12,
  ratio: 0.25,
  big: 9007199254740991,
  negative: -3,
  vip: true,
  churned: false,
  notes: null,
  greeting: "こんにちは 🚀 \"quoted\" \\ back\nslash",
  address: { city: "São Paulo", lines: ["Rua 1", "apt 2"], geo: { lat: -23.55, lng: -46.63 } },
  tags: [1, "two", false, null, {}]
}

// `n` contacts of one tenant, the i-th created `i` minutes after the base time.
const contactsOverMinutes = (tenantId: string, n: number) =>
  Array.from({ length: n }, (_, i) =>
    contactRecord(tenantId, { name: `Contact ${i}`, created_at: `2026-11-22T10:${String(i).padStart(2, "0")}:00.000Z` }))

const insertAll = (contacts: ReadonlyArray<ContactRecord>) =>
  ContactStore.use((s) => Effect.forEach(contacts, (contact) => s.insert(contact), { discard: true }))

const findOrInsertByPhones = (tenantId: string, candidates: ReadonlyArray<ContactRecord>) =>
  ContactStore.use((s) => s.findOrInsertByPhones(tenantId, candidates))

/** What `findOrInsertByPhones` resolves to, its contacts sorted so the answer compares whole. */
const found = (answer: { readonly contacts: ReadonlyArray<ContactRecord>; readonly inserted: ReadonlySet<string> }) => ({
  contacts: [...answer.contacts].sort(byId),
  inserted: answer.inserted
})

/**
 * ContactStore: every field round-trips; update replaces; list pages newest first with totals;
 * findBy matches. Needs TenantStore and AccountStore for the tenants contacts belong to.
 */
export const contactStoreSuite: Suite<ContactStore | TenantStore | AccountStore, "contacts"> = makeSuite({
  name: "ContactStore",
  tables: ["contacts"],
  tests: (h) => {
    it("stores every field, with unicode and nested custom fields, and reads it back unchanged", async () => {
      const { tenant } = await h().run(seedTenant)
      const contact = contactRecord(tenant.id, {
        name: "Zoë Ñandú 山田太郎 🚀",
        phone: "+14155550100",
        email: "zoë@exämple.com",
        language: "pt_BR",
        custom_fields: RICH_FIELDS,
        created_at: "2026-11-22T10:15:30.123Z",
        updated_at: "2026-11-22T11:00:00.001Z"
      })
      await h().run(ContactStore.use((s) => s.insert(contact)))

      expect(await h().stored.contacts(tenant.id)).toEqual([contact])
      expect(Option.getOrUndefined(await h().run(ContactStore.use((s) => s.get(tenant.id, contact.id))))).toEqual(contact)
    })

    it("stores a contact whose optional fields are all null, with no custom fields, and reads it back unchanged", async () => {
      const { tenant } = await h().run(seedTenant)
      const contact = contactRecord(tenant.id, { name: null, phone: null, email: "only@example.com", language: null })
      await h().run(ContactStore.use((s) => s.insert(contact)))

      expect(await h().stored.contacts(tenant.id)).toEqual([contact])
      expect(Option.getOrUndefined(await h().run(ContactStore.use((s) => s.get(tenant.id, contact.id))))).toEqual(contact)
    })

    it("reads many by id in any number, leaving out unknown ids and other tenants' contacts", async () => {
      const { tenant } = await h().run(seedTenant)
      const other = (await h().run(seedTenant)).tenant
      const mine = Array.from({ length: 620 }, () => contactRecord(tenant.id))
      const theirs = contactRecord(other.id)
      await h().run(insertAll([...mine, theirs]))
      const asked = [...mine.map((c) => c.id), theirs.id, contactRecord(tenant.id).id]
      const found = await h().run(ContactStore.use((s) => s.getMany(tenant.id, asked)))
      expect([...found].sort(byId)).toEqual([...mine].sort(byId))
      expect(await h().run(ContactStore.use((s) => s.getMany(tenant.id, [])))).toEqual([])
    })

    it("pages the tenant's contacts by id, each once, never another tenant's", async () => {
      const { tenant } = await h().run(seedTenant)
      const other = (await h().run(seedTenant)).tenant
      const mine = Array.from({ length: 23 }, () => contactRecord(tenant.id))
      await h().run(insertAll([...mine, contactRecord(other.id)]))
      const seen: Array<ContactRecord> = []
      let after: string | null = null
      for (;;) {
        const page: ReadonlyArray<ContactRecord> = await h().run(ContactStore.use((s) => s.pageById(tenant.id, after, 10)))
        if (page.length === 0) break
        seen.push(...page)
        after = page.at(-1)!.id
      }
      expect(seen.map((c) => c.id)).toEqual(mine.map((c) => c.id).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)))
    })

    it("finds no contact for an unknown id", async () => {
      const { tenant } = await h().run(seedTenant)
      const unknown = contactRecord(tenant.id)
      expect(Option.isNone(await h().run(ContactStore.use((s) => s.get(tenant.id, unknown.id))))).toBe(true)
    })

    it("replaces every changeable field on update and reports that it did", async () => {
      const { tenant } = await h().run(seedTenant)
      const before = contactRecord(tenant.id, {
        name: "Ada",
        phone: "+14155550100",
        email: "ada@example.com",
        language: "en",
        custom_fields: { plan: "gold", seats: 3 }
      })
      await h().run(ContactStore.use((s) => s.insert(before)))
      const after = {
        ...before,
        name: null,
        phone: "+447700900123",
        email: null,
        language: "de-CH",
        custom_fields: { plan: "silver", région: "Zürich" },
        updated_at: "2026-11-22T12:00:00.000Z"
      }

      expect(await h().run(ContactStore.use((s) => s.update(tenant.id, after)))).toBe(true)
      expect(await h().stored.contacts(tenant.id)).toEqual([after])
    })

    it("updates nothing and reports false for an unknown contact", async () => {
      const { tenant } = await h().run(seedTenant)
      const existing = contactRecord(tenant.id)
      await h().run(ContactStore.use((s) => s.insert(existing)))

      const ghost = contactRecord(tenant.id, { name: "Ghost" })
      expect(await h().run(ContactStore.use((s) => s.update(tenant.id, ghost)))).toBe(false)
      expect(await h().stored.contacts(tenant.id)).toEqual([existing])
    })

    it("lists newest first, one window at a time, with the tenant's total on every page", async () => {
      const { tenant } = await h().run(seedTenant)
      const contacts = contactsOverMinutes(tenant.id, 5)
      await h().run(insertAll(contacts))
      const page = (offset: number) => h().run(ContactStore.use((s) => s.list(tenant.id, { limit: 2, offset })))
      const [c0, c1, c2, c3, c4] = contacts

      expect(await h().stored.contacts(tenant.id)).toEqual([...contacts].sort(byId))
      expect(await page(0)).toEqual({ items: [c4, c3], total: 5 })
      expect(await page(2)).toEqual({ items: [c2, c1], total: 5 })
      expect(await page(4)).toEqual({ items: [c0], total: 5 })
      expect(await page(6)).toEqual({ items: [], total: 5 })
    })

    it("pages through contacts created at the same instant without repeating or skipping any", async () => {
      const { tenant } = await h().run(seedTenant)
      const contacts = Array.from({ length: 7 }, (_, i) => contactRecord(tenant.id, { name: `Twin ${i}` }))
      await h().run(insertAll(contacts))

      const seen: Array<string> = []
      for (let offset = 0; offset < 7; offset += 3) {
        const { items } = await h().run(ContactStore.use((s) => s.list(tenant.id, { limit: 3, offset })))
        seen.push(...items.map((c) => c.id))
      }
      expect([...seen].sort()).toEqual(contacts.map((c) => c.id).sort())
    })

    it("finds a contact by phone and by email, and nothing for a value nobody holds", async () => {
      const { tenant } = await h().run(seedTenant)
      const contact = contactRecord(tenant.id, { phone: "+14155550100", email: "ada@example.com" })
      await h().run(ContactStore.use((s) => s.insert(contact)))
      const findBy = (field: "phone" | "email", value: string) =>
        h().run(ContactStore.use((s) => s.findBy(tenant.id, field, value))).then(Option.getOrUndefined)

      expect(await findBy("phone", "+14155550100")).toEqual(contact)
      expect(await findBy("email", "ada@example.com")).toEqual(contact)
      expect(await findBy("phone", "+14155550199")).toBeUndefined()
      expect(await findBy("email", "+14155550100")).toBeUndefined()
    })

    describe("findOrInsertByPhones", () => {
      it("stores the candidates whose phone no contact of the tenant holds, and finds the held ones' contacts unchanged", async () => {
        const { tenant } = await h().run(seedTenant)
        const held = contactRecord(tenant.id, { name: "Stored first", phone: "+14155550100", custom_fields: { plan: "gold" } })
        await h().run(insertAll([held]))
        const again = contactRecord(tenant.id, { name: "Candidate", phone: held.phone })
        const fresh = [
          contactRecord(tenant.id, { phone: "+14155550101", language: "pt_BR", custom_fields: RICH_FIELDS }),
          contactRecord(tenant.id, { name: null, phone: "+447700900123", email: "zoë@exämple.com" })
        ]

        const answer = await h().run(findOrInsertByPhones(tenant.id, [again, ...fresh]))
        expect(found(answer)).toEqual({ contacts: [held, ...fresh].sort(byId), inserted: new Set(fresh.map((c) => c.id)) })
        expect(await h().stored.contacts(tenant.id)).toEqual([held, ...fresh].sort(byId))
      })

      it("stores a phone given twice in one batch once, and answers that contact for both", async () => {
        const { tenant } = await h().run(seedTenant)
        const twins = [contactRecord(tenant.id, { name: "One", phone: "+14155550100" }), contactRecord(tenant.id, { name: "Two", phone: "+14155550100" })]
        const other = contactRecord(tenant.id, { phone: "+14155550101" })

        const answer = await h().run(findOrInsertByPhones(tenant.id, [twins[0]!, other, twins[1]!]))
        const stored = await h().stored.contacts(tenant.id)
        const kept = stored.find((c) => c.phone === "+14155550100")
        expect(twins).toContainEqual(kept)
        expect(stored).toEqual([kept!, other].sort(byId))
        expect(found(answer)).toEqual({ contacts: stored, inserted: new Set([kept!.id, other.id]) })
      })

      it("fails whole with UniqueViolation for a candidate whose email another contact holds, storing none of the batch", async () => {
        const { tenant } = await h().run(seedTenant)
        const held = contactRecord(tenant.id, { phone: "+14155550100", email: "ada@example.com" })
        await h().run(insertAll([held]))
        const batch = [contactRecord(tenant.id, { phone: "+14155550101" }), contactRecord(tenant.id, { phone: "+14155550102", email: held.email })]

        expect(await h().run(Effect.flip(findOrInsertByPhones(tenant.id, batch))))
          .toMatchObject({ _tag: "StorageError", reason: "UniqueViolation", constraint: "contacts_tenant_email_unique" })
        expect(await h().stored.contacts(tenant.id)).toEqual([held])
      })

      it("resolves an empty batch to no contacts, storing nothing", async () => {
        const { tenant } = await h().run(seedTenant)
        expect(found(await h().run(findOrInsertByPhones(tenant.id, [])))).toEqual({ contacts: [], inserted: new Set() })
        expect(await h().stored.contacts(tenant.id)).toEqual([])
      })

      it("neither finds another tenant's contact of the same phone nor is kept from storing its own", async () => {
        const { tenant } = await h().run(seedTenant)
        const other = (await h().run(seedTenant)).tenant
        const theirs = contactRecord(other.id, { name: "Theirs", phone: "+14155550100" })
        await h().run(insertAll([theirs]))
        const mine = contactRecord(tenant.id, { name: "Mine", phone: theirs.phone })

        expect(found(await h().run(findOrInsertByPhones(tenant.id, [mine])))).toEqual({ contacts: [mine], inserted: new Set([mine.id]) })
        expect(await h().stored.contacts(tenant.id)).toEqual([mine])
        expect(await h().stored.contacts(other.id)).toEqual([theirs])
      })

      it("stores and finds 1,200 contacts in one call, keeping awkward and JSON-looking text as text", async () => {
        const { tenant } = await h().run(seedTenant)
        const awkward = (i: number) => AWKWARD_TEXTS[i % AWKWARD_TEXTS.length]!
        const candidates = Array.from({ length: 1_200 }, (_, i) =>
          contactRecord(tenant.id, {
            // The first phones are the awkward texts themselves: the lookup must match them exactly.
            phone: i < AWKWARD_TEXTS.length ? awkward(i) : `+1415${String(i).padStart(7, "0")}`,
            name: i % 5 === 0 ? null : awkward(i),
            email: i >= AWKWARD_TEXTS.length && i < 2 * AWKWARD_TEXTS.length ? awkward(i) : i % 3 === 0 ? `contact-${i}@example.com` : null,
            language: i % 7 === 0 ? "null" : null,
            custom_fields: i % 2 === 0 ? RICH_FIELDS : { raw: awkward(i), nothing: null }
          }))
        // A third stored first: the call stores the rest and finds those.
        const first = candidates.filter((_, i) => i % 3 === 1)
        await h().run(findOrInsertByPhones(tenant.id, first))
        const again = candidates.map((c, i) => (i % 3 === 1 ? contactRecord(tenant.id, { phone: c.phone, name: "Not stored" }) : c))

        const answer = await h().run(findOrInsertByPhones(tenant.id, again))
        const rest = candidates.filter((_, i) => i % 3 !== 1)
        expect(found(answer)).toEqual({ contacts: [...candidates].sort(byId), inserted: new Set(rest.map((c) => c.id)) })
        expect(await h().stored.contacts(tenant.id)).toEqual([...candidates].sort(byId))
      })

      it("finds a contact another open transaction stores once that one commits, and never doubles it (needs several connections)", async (ctx) => {
        const transactor = await contentionTransactor(h())
        ctx.skip(transactor === undefined, NEEDS_CONTENTION)
        const { tenant } = await h().run(seedTenant)
        const theirs = contactRecord(tenant.id, { name: "Stored by the other", phone: "+14155550100" })
        const mine = contactRecord(tenant.id, { name: "Candidate", phone: theirs.phone })
        const fresh = contactRecord(tenant.id, { phone: "+14155550101" })

        const { whileHeld, after } = await h().run(
          contend({
            hold: ContactStore.use((s) => s.insert(theirs)),
            finish: () => Effect.void,
            contend: findOrInsertByPhones(tenant.id, [mine, fresh])
          }).pipe(Effect.provideService(Transactor, transactor!))
        )
        // Answering before the other committed, it could neither find that contact nor store its own.
        expect(whileHeld).toEqual(Option.none())
        expect(found(after)).toEqual({ contacts: [theirs, fresh].sort(byId), inserted: new Set([fresh.id]) })
        expect(await h().stored.contacts(tenant.id)).toEqual([theirs, fresh].sort(byId))
      })
    })
  }
})
