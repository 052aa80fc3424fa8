import { Cause, Effect, Exit, Fiber, Latch, Schema } from "effect"
import { expect, it } from "vitest"
import { ContactService } from "../../src/contacts/ContactService.ts"
import type { AccountStore } from "../../src/ports/AccountStore.ts"
import { type ContactRecord, ContactStore } from "../../src/ports/ContactStore.ts"
import { OutboxStore } from "../../src/ports/OutboxStore.ts"
import type { TenantStore } from "../../src/ports/TenantStore.ts"
import { Transactor } from "../../src/ports/Transactor.ts"
import { contactRecord, outboxEvent, seedTenant } from "./Fixtures.ts"
import { byId, eventsOf, makeSuite, type Suite } from "./Harness.ts"

/** What the atomicity suite runs against: contacts and events, their tenants, and the Transactor. */
type AtomicityPorts = ContactStore | OutboxStore | Transactor | TenantStore | AccountStore

/** The failure a use case raises after writing, to see whether its writes survive. */
class UseCaseFailed extends Schema.TaggedError<UseCaseFailed>()("UseCaseFailed", {}) {}

// A contact and the event announcing it: the smallest use case that writes two tables.
const createWithEvent = (contact: ContactRecord) =>
  Effect.gen(function*() {
    yield* ContactStore.use((s) => s.insert(contact))
    yield* OutboxStore.use((s) => s.append([outboxEvent(contact.tenant_id, { data: { contact_id: contact.id } })]))
  })

const inTransaction = <A, E, R>(effect: Effect.Effect<A, E, R>) => Transactor.use((t) => t.withTransaction(effect))

/**
 * Atomicity: a use case's rows and outbox events commit together, or — on failure, defect or
 * interruption — neither does.
 */
export const atomicitySuite: Suite<AtomicityPorts, "contacts" | "outboxEvents"> = makeSuite({
  name: "atomicity",
  tables: ["contacts", "outboxEvents"],
  services: ContactService.layer,
  tests: (h) => {
    const storedEvents = (tenantId: string) => h().stored.outboxEvents(tenantId).then(eventsOf)

    it("commits a use case's rows and its events together when it succeeds", async () => {
      const { tenant } = await h().run(seedTenant)
      const contact = contactRecord(tenant.id)

      await h().run(inTransaction(createWithEvent(contact)))

      expect(await h().stored.contacts(tenant.id)).toEqual([contact])
      expect((await storedEvents(tenant.id)).map((e) => e.data)).toEqual([{ contact_id: contact.id }])
    })

    it("keeps neither rows nor events when the use case fails, and passes its error on", async () => {
      const { tenant } = await h().run(seedTenant)

      const exit = await h().exit(inTransaction(
        createWithEvent(contactRecord(tenant.id)).pipe(Effect.andThen(Effect.fail(new UseCaseFailed())))
      ))

      expect(Exit.isFailure(exit) && Cause.squash(exit.cause)).toBeInstanceOf(UseCaseFailed)
      expect(await h().stored.contacts(tenant.id)).toEqual([])
      expect(await storedEvents(tenant.id)).toEqual([])
    })

    it("keeps neither rows nor events when the use case dies with a defect", async () => {
      const { tenant } = await h().run(seedTenant)

      const exit = await h().exit(inTransaction(
        createWithEvent(contactRecord(tenant.id)).pipe(Effect.andThen(Effect.die("a bug after the writes")))
      ))

      expect(Exit.isFailure(exit) && Cause.hasDies(exit.cause)).toBe(true)
      expect(await h().stored.contacts(tenant.id)).toEqual([])
      expect(await storedEvents(tenant.id)).toEqual([])
    })

    it("keeps neither rows nor events when the use case is interrupted mid-way", async () => {
      const { tenant } = await h().run(seedTenant)

      const exit = await h().run(Effect.gen(function*() {
        const written = yield* Latch.make(false)
        const fiber = yield* Effect.forkChild(inTransaction(
          createWithEvent(contactRecord(tenant.id)).pipe(Effect.andThen(Latch.open(written)), Effect.andThen(Effect.never))
        ))
        yield* Latch.await(written)
        yield* Fiber.interrupt(fiber)
        return yield* Fiber.await(fiber)
      }))

      expect(Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause)).toBe(true)
      expect(await h().stored.contacts(tenant.id)).toEqual([])
      expect(await storedEvents(tenant.id)).toEqual([])
    })

    it("rolls back events appended before a storage error in the same transaction", async () => {
      const { tenant } = await h().run(seedTenant)
      const holder = contactRecord(tenant.id, { phone: "+14155550100" })
      await h().run(ContactStore.use((s) => s.insert(holder)))

      const exit = await h().exit(inTransaction(Effect.gen(function*() {
        yield* OutboxStore.use((s) => s.append([outboxEvent(tenant.id)]))
        yield* ContactStore.use((s) => s.insert(contactRecord(tenant.id, { phone: "+14155550100" })))
      })))

      expect(Exit.isFailure(exit) && Cause.squash(exit.cause)).toMatchObject({ _tag: "StorageError", reason: "UniqueViolation" })
      expect(await h().stored.contacts(tenant.id)).toEqual([holder])
      expect(await storedEvents(tenant.id)).toEqual([])
    })

    it("joins a nested transaction to the outer one: the inner writes roll back when the outer fails", async () => {
      const { tenant } = await h().run(seedTenant)
      const inner = contactRecord(tenant.id, { name: "Inner" })

      const exit = await h().exit(inTransaction(Effect.gen(function*() {
        yield* inTransaction(createWithEvent(inner))
        yield* ContactStore.use((s) => s.insert(contactRecord(tenant.id, { name: "Outer" })))
        return yield* new UseCaseFailed()
      })))

      expect(Exit.isFailure(exit)).toBe(true)
      expect(await h().stored.contacts(tenant.id)).toEqual([])
      expect(await storedEvents(tenant.id)).toEqual([])
    })

    it("lets the outer transaction read what a nested one wrote, and commits both", async () => {
      const { tenant } = await h().run(seedTenant)
      const inner = contactRecord(tenant.id, { name: "Inner" })
      const outer = contactRecord(tenant.id, { name: "Outer" })

      const seenInside = await h().run(inTransaction(Effect.gen(function*() {
        yield* inTransaction(createWithEvent(inner))
        yield* createWithEvent(outer)
        return yield* ContactStore.use((s) => s.list(tenant.id, { limit: 10, offset: 0 }))
      })))

      expect(seenInside.total).toBe(2)
      expect(await h().stored.contacts(tenant.id)).toEqual([inner, outer].sort(byId))
      expect(await storedEvents(tenant.id)).toHaveLength(2)
    })

    it("leaves no row and no event when ContactService.create finds the phone taken", async () => {
      const { tenant } = await h().run(seedTenant)
      const first = await h().run(ContactService.use((s) => s.create(tenant.id, { name: "Ada", phone: "+14155550100" })))

      const error = await h().run(Effect.flip(ContactService.use((s) => s.create(tenant.id, { name: "Bea", phone: "+14155550100" }))))

      expect(error._tag).toBe("Conflict")
      expect(await h().stored.contacts(tenant.id)).toEqual([first])
      expect((await storedEvents(tenant.id)).map((e) => [e.type, e.data.contact])).toEqual([
        ["contact.created", expect.objectContaining({ id: first.id, name: "Ada", phone: "+14155550100" })]
      ])
    })

    it("leaves the contact unchanged and emits no event when ContactService.update finds the email taken", async () => {
      const { tenant } = await h().run(seedTenant)
      const ada = await h().run(ContactService.use((s) => s.create(tenant.id, { name: "Ada", email: "ada@example.com" })))
      const bea = await h().run(ContactService.use((s) => s.create(tenant.id, { name: "Bea", email: "bea@example.com" })))

      const error = await h().run(Effect.flip(ContactService.use((s) =>
        s.update(tenant.id, bea.id, { name: "Bea Renamed", email: "ada@example.com" })
      )))

      expect(error._tag).toBe("Conflict")
      expect(await h().stored.contacts(tenant.id)).toEqual([ada, bea].sort(byId))
      expect((await storedEvents(tenant.id)).map((e) => e.type)).toEqual(["contact.created", "contact.created"])
    })
  }
})
