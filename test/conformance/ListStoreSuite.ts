import { Effect, Option } from "effect"
import { describe, expect, it } from "vitest"
import type { AccountStore } from "../../src/ports/AccountStore.ts"
import { type ListRecord, ListStore, type MarketingOptOutRecord, type SubscriptionRecord } from "../../src/ports/ListStore.ts"
import type { StorageError } from "../../src/ports/StorageError.ts"
import type { TenantStore } from "../../src/ports/TenantStore.ts"
import { listRecord, marketingOptOutRecord, seedTenant, subscriptionRecord } from "./Fixtures.ts"
import { byId, makeSuite, type Suite, type UseHarness } from "./Harness.ts"

/** The tables the list suite checks writes in. */
type ListTables = "lists" | "listSubscriptions" | "marketingOptOuts"

type UseLists = UseHarness<ListStore | TenantStore | AccountStore, ListTables>

/** An instant of the lists' day as stored, from `HH:MM`. */
const at = (time: string): string => `2026-11-26T${time}:00.000Z`

const newId = (): string => globalThis.crypto.randomUUID()

/** Ids in the order of their code units, as keyset paging over UUIDs reads them on every database. */
const ascending = (ids: ReadonlyArray<string>): ReadonlyArray<string> => [...ids].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0))

const insertLists = (lists: ReadonlyArray<ListRecord>) =>
  ListStore.use((s) => Effect.forEach(lists, (l) => s.insertList(l), { discard: true }))

const putSubscriptions = (subscriptions: ReadonlyArray<SubscriptionRecord>) =>
  ListStore.use((s) => Effect.forEach(subscriptions, (x) => s.putSubscription(x), { discard: true }))

const putOptOuts = (optOuts: ReadonlyArray<MarketingOptOutRecord>) =>
  ListStore.use((s) => Effect.forEach(optOuts, (o) => s.putOptOut(o), { discard: true }))

const getList = (h: UseLists, tenantId: string, id: string) =>
  h().run(ListStore.use((s) => s.getList(tenantId, id))).then(Option.getOrUndefined)

const findBySlug = (h: UseLists, tenantId: string, slug: string) =>
  h().run(ListStore.use((s) => s.findListBySlug(tenantId, slug))).then(Option.getOrUndefined)

const findDefault = (h: UseLists, tenantId: string) =>
  h().run(ListStore.use((s) => s.findDefaultList(tenantId))).then(Option.getOrUndefined)

const listLists = (h: UseLists, tenantId: string) => h().run(ListStore.use((s) => s.listLists(tenantId)))

const hasLists = (h: UseLists, tenantId: string) => h().run(ListStore.use((s) => s.hasLists(tenantId)))

const updateList = (h: UseLists, tenantId: string, list: ListRecord) =>
  h().run(ListStore.use((s) => s.updateList(tenantId, list)))

const getSubscription = (h: UseLists, tenantId: string, listId: string, contactId: string) =>
  h().run(ListStore.use((s) => s.getSubscription(tenantId, listId, contactId))).then(Option.getOrUndefined)

const subscriptionsOf = (h: UseLists, tenantId: string, contactId: string) =>
  h().run(ListStore.use((s) => s.subscriptionsOf(tenantId, contactId)))

const subscribedContacts = (h: UseLists, tenantId: string, listId: string, afterContactId: string | null, limit: number) =>
  h().run(ListStore.use((s) => s.subscribedContacts(tenantId, listId, { afterContactId, limit })))

const countSubscribed = (h: UseLists, tenantId: string, listId: string) =>
  h().run(ListStore.use((s) => s.countSubscribed(tenantId, listId)))

/** Every page of a list's subscribed contacts, `limit` at a time, until one comes back short. */
const allPages = async (h: UseLists, tenantId: string, listId: string, limit: number) => {
  const pages: Array<ReadonlyArray<string>> = []
  let after: string | null = null
  for (;;) {
    const page = await subscribedContacts(h, tenantId, listId, after, limit)
    pages.push(page)
    if (page.length < limit) return pages
    after = page[page.length - 1]!
  }
}

/** The opt-outs found, by channel with every channel (null) first: the port promises no order. */
const optOutsOf = (h: UseLists, tenantId: string, contactId: string) =>
  h().run(ListStore.use((s) => s.optOutsOf(tenantId, contactId))).then((found) => [...found].sort(byChannel))

const byChannel = (a: MarketingOptOutRecord, b: MarketingOptOutRecord) => {
  const x = a.channel_id ?? ""
  const y = b.channel_id ?? ""
  return x < y ? -1 : x > y ? 1 : 0
}

// What every adapter must report for a duplicate: the same reason and index name on every database.
const expectUniqueViolation = (error: StorageError, constraint: string) => {
  expect(error).toMatchObject({ _tag: "StorageError", reason: "UniqueViolation", constraint })
  expect(error.isRetryable).toBe(false)
}

/** A dynamic default list of `tenantId` with every field set: unicode, every filter, a welcome text. */
const richList = (tenantId: string): ListRecord =>
  listRecord(tenantId, {
    name: "Clientes VIP — Zoë 山田 🚀 \"quoted\" \\ back\nslash",
    slug: `vip-${newId()}`,
    is_default: true,
    type: "dynamic",
    filters: {
      has_phone: true,
      has_email: false,
      language: "pt_BR",
      custom_fields: { tier: "gold", "região": "São Paulo", "山田": "🚀 \"x\"" },
      has_opt_in: true
    },
    welcome_message: "Bem-vindo, Zoë! Responda SAIR para sair. 山田 🚀",
    created_at: "2026-11-26T10:15:30.123Z",
    updated_at: "2026-11-26T11:00:00.001Z"
  })

// Two tenants, each with a default list of the same slug, a subscription of the same contact id to it
// and an opt-out of that contact on every channel.
const twoTenants = Effect.gen(function*() {
  const a = (yield* seedTenant).tenant
  const b = (yield* seedTenant).tenant
  const listOfA = listRecord(a.id, { is_default: true })
  const listOfB = listRecord(b.id, { slug: listOfA.slug, is_default: true, name: "B" })
  yield* insertLists([listOfA, listOfB])
  const subscriptionOfA = subscriptionRecord(a.id, listOfA.id)
  const subscriptionOfB = subscriptionRecord(b.id, listOfB.id, { contact_id: subscriptionOfA.contact_id })
  yield* putSubscriptions([subscriptionOfA, subscriptionOfB])
  const optOutOfA = marketingOptOutRecord(a.id, { contact_id: subscriptionOfA.contact_id })
  const optOutOfB = marketingOptOutRecord(b.id, { contact_id: subscriptionOfA.contact_id, source: "operator_preferences" })
  yield* putOptOuts([optOutOfA, optOutOfB])
  return { a, b, listOfA, listOfB, subscriptionOfA, subscriptionOfB, optOutOfA, optOutOfB }
})

/**
 * ListStore: every field of lists, subscriptions and opt-outs round-trips; reads see only lists not
 * deleted; a slug and the default are unique among a tenant's live lists; a subscription is one row
 * per list and contact, replaced on a second put; a list's subscribed contacts page by contact id; a
 * second opt-out for a contact and channel keeps the first; nothing reaches another tenant's rows.
 * Needs TenantStore and AccountStore for the tenants rows belong to.
 */
export const listStoreSuite: Suite<ListStore | TenantStore | AccountStore, ListTables> = makeSuite({
  name: "ListStore",
  tables: ["lists", "listSubscriptions", "marketingOptOuts"],
  tests: (h) => {
    describe("lists", () => {
      it("stores every field, with a unicode name and every filter, and reads it back unchanged by id, slug, default and listing", async () => {
        const { tenant } = await h().run(seedTenant)
        const list = richList(tenant.id)
        await h().run(insertLists([list]))

        expect(await h().stored.lists(tenant.id)).toEqual([list])
        expect(await getList(h, tenant.id, list.id)).toEqual(list)
        expect(await findBySlug(h, tenant.id, list.slug)).toEqual(list)
        expect(await findDefault(h, tenant.id)).toEqual(list)
        expect(await listLists(h, tenant.id)).toEqual([list])
      })

      it("stores a static list with no filters, welcome text or update, and one with empty filters, and reads them back unchanged", async () => {
        const { tenant } = await h().run(seedTenant)
        const bare = listRecord(tenant.id, { created_at: at("10:00") })
        const emptyFilters = listRecord(tenant.id, { type: "dynamic", filters: {}, created_at: at("10:01") })
        await h().run(insertLists([bare, emptyFilters]))

        expect(await h().stored.lists(tenant.id)).toEqual([bare, emptyFilters].sort(byId))
        expect(await getList(h, tenant.id, bare.id)).toEqual(bare)
        expect(await getList(h, tenant.id, emptyFilters.id)).toEqual(emptyFilters)
        expect(await listLists(h, tenant.id)).toEqual([bare, emptyFilters])
        expect(await findDefault(h, tenant.id)).toBeUndefined()
      })

      it("finds no list for an unknown id or slug, and a tenant without lists has none, no default and no lists at all", async () => {
        const { tenant } = await h().run(seedTenant)
        expect(await getList(h, tenant.id, newId())).toBeUndefined()
        expect(await findBySlug(h, tenant.id, `unknown-${newId()}`)).toBeUndefined()
        expect(await findDefault(h, tenant.id)).toBeUndefined()
        expect(await listLists(h, tenant.id)).toEqual([])
        expect(await hasLists(h, tenant.id)).toBe(false)
      })

      it("lists the tenant's live lists oldest first, leaving out deleted ones", async () => {
        const { tenant } = await h().run(seedTenant)
        const middle = listRecord(tenant.id, { created_at: at("10:01") })
        const newest = listRecord(tenant.id, { created_at: at("10:02") })
        const oldest = listRecord(tenant.id, { created_at: at("10:00") })
        const deleted = listRecord(tenant.id, { created_at: at("09:00"), deleted_at: at("09:30") })
        await h().run(insertLists([middle, newest, deleted, oldest]))

        expect(await listLists(h, tenant.id)).toEqual([oldest, middle, newest])
        expect(await h().stored.lists(tenant.id)).toEqual([middle, newest, deleted, oldest].sort(byId))
      })

      it("replaces every changeable field on update and reports that it did; an unknown list updates nothing", async () => {
        const { tenant } = await h().run(seedTenant)
        const before = listRecord(tenant.id)
        await h().run(insertLists([before]))
        const after: ListRecord = { ...richList(tenant.id), id: before.id, created_at: before.created_at }

        expect(await updateList(h, tenant.id, after)).toBe(true)
        expect(await h().stored.lists(tenant.id)).toEqual([after])
        expect(await getList(h, tenant.id, before.id)).toEqual(after)
        expect(await findBySlug(h, tenant.id, before.slug)).toBeUndefined()
        expect(await findBySlug(h, tenant.id, after.slug)).toEqual(after)

        expect(await updateList(h, tenant.id, listRecord(tenant.id))).toBe(false)
        expect(await h().stored.lists(tenant.id)).toEqual([after])
      })

      it("deletes a list softly: it is kept as stored but no read sees it, by id, slug, default or listing", async () => {
        const { tenant } = await h().run(seedTenant)
        const list = listRecord(tenant.id, { is_default: true })
        await h().run(insertLists([list]))
        const deleted: ListRecord = { ...list, deleted_at: at("12:00"), updated_at: at("12:00") }

        expect(await updateList(h, tenant.id, deleted)).toBe(true)
        expect(await h().stored.lists(tenant.id)).toEqual([deleted])
        expect(await getList(h, tenant.id, list.id)).toBeUndefined()
        expect(await findBySlug(h, tenant.id, list.slug)).toBeUndefined()
        expect(await findDefault(h, tenant.id)).toBeUndefined()
        expect(await listLists(h, tenant.id)).toEqual([])
      })

      it("has lists once one is stored and none once the only one is deleted", async () => {
        const { tenant } = await h().run(seedTenant)
        expect(await hasLists(h, tenant.id)).toBe(false)

        const list = listRecord(tenant.id)
        await h().run(insertLists([list]))
        expect(await hasLists(h, tenant.id)).toBe(true)

        expect(await updateList(h, tenant.id, { ...list, deleted_at: at("12:00") })).toBe(true)
        expect(await hasLists(h, tenant.id)).toBe(false)
      })

      it("refuses a slug taken by a live list of the tenant with UniqueViolation naming lists_tenant_slug_unique, on insert and update", async () => {
        const { tenant } = await h().run(seedTenant)
        const first = listRecord(tenant.id)
        const other = listRecord(tenant.id)
        await h().run(insertLists([first, other]))

        const second = listRecord(tenant.id, { slug: first.slug, name: "Second" })
        expectUniqueViolation(await h().run(Effect.flip(insertLists([second]))), "lists_tenant_slug_unique")
        expectUniqueViolation(
          await h().run(Effect.flip(ListStore.use((s) => s.updateList(tenant.id, { ...other, slug: first.slug })))),
          "lists_tenant_slug_unique"
        )
        expect(await h().stored.lists(tenant.id)).toEqual([first, other].sort(byId))
      })

      it("takes the slug of a deleted list for a new one, and refuses to restore the deleted one while it is taken", async () => {
        const { tenant } = await h().run(seedTenant)
        const first = listRecord(tenant.id)
        await h().run(insertLists([first]))
        const deleted: ListRecord = { ...first, deleted_at: at("12:00") }
        expect(await updateList(h, tenant.id, deleted)).toBe(true)

        const again = listRecord(tenant.id, { slug: first.slug, created_at: at("12:01") })
        await h().run(insertLists([again]))
        expect(await findBySlug(h, tenant.id, first.slug)).toEqual(again)
        expect(await h().stored.lists(tenant.id)).toEqual([deleted, again].sort(byId))

        expectUniqueViolation(
          await h().run(Effect.flip(ListStore.use((s) => s.updateList(tenant.id, first)))),
          "lists_tenant_slug_unique"
        )
        expect(await h().stored.lists(tenant.id)).toEqual([deleted, again].sort(byId))
      })

      it("refuses a second default among the tenant's live lists with UniqueViolation naming lists_tenant_default_unique, on insert and update", async () => {
        const { tenant } = await h().run(seedTenant)
        const first = listRecord(tenant.id, { is_default: true })
        const plain = listRecord(tenant.id)
        await h().run(insertLists([first, plain]))

        expectUniqueViolation(
          await h().run(Effect.flip(insertLists([listRecord(tenant.id, { is_default: true })]))),
          "lists_tenant_default_unique"
        )
        expectUniqueViolation(
          await h().run(Effect.flip(ListStore.use((s) => s.updateList(tenant.id, { ...plain, is_default: true })))),
          "lists_tenant_default_unique"
        )
        expect(await h().stored.lists(tenant.id)).toEqual([first, plain].sort(byId))
        expect(await findDefault(h, tenant.id)).toEqual(first)
      })

      it("makes another list the default once the first is deleted, and again once that one is no longer the default", async () => {
        const { tenant } = await h().run(seedTenant)
        const first = listRecord(tenant.id, { is_default: true })
        await h().run(insertLists([first]))
        expect(await updateList(h, tenant.id, { ...first, deleted_at: at("12:00") })).toBe(true)

        const second = listRecord(tenant.id, { is_default: true })
        await h().run(insertLists([second]))
        expect(await findDefault(h, tenant.id)).toEqual(second)

        const third = listRecord(tenant.id)
        await h().run(insertLists([third]))
        expect(await updateList(h, tenant.id, { ...second, is_default: false })).toBe(true)
        expect(await updateList(h, tenant.id, { ...third, is_default: true })).toBe(true)
        expect(await findDefault(h, tenant.id)).toEqual({ ...third, is_default: true })
        // A deleted list may stay marked default: only live lists count.
        expect((await h().stored.lists(tenant.id)).filter((l) => l.is_default).map((l) => l.id).sort())
          .toEqual([first.id, third.id].sort())
      })
    })

    describe("subscriptions", () => {
      it("stores every field of a subscription and replaces it on a second put, keeping one row when the contact unsubscribes", async () => {
        const { tenant } = await h().run(seedTenant)
        const list = listRecord(tenant.id)
        await h().run(insertLists([list]))
        const subscribed = subscriptionRecord(tenant.id, list.id, {
          optin_method: "keyword",
          optin_channel_id: newId(),
          subscribed_at: "2026-11-26T10:15:30.123Z",
          updated_at: "2026-11-26T10:15:30.123Z"
        })
        await h().run(putSubscriptions([subscribed]))

        expect(await h().stored.listSubscriptions(tenant.id)).toEqual([subscribed])
        expect(await getSubscription(h, tenant.id, list.id, subscribed.contact_id)).toEqual(subscribed)
        expect(await countSubscribed(h, tenant.id, list.id)).toBe(1)
        expect(await subscribedContacts(h, tenant.id, list.id, null, 10)).toEqual([subscribed.contact_id])

        const unsubscribed: SubscriptionRecord = {
          ...subscribed,
          status: "unsubscribed",
          unsubscribed_at: "2026-11-26T11:00:00.001Z",
          unsubscribe_method: "optout",
          updated_at: "2026-11-26T11:00:00.001Z"
        }
        await h().run(putSubscriptions([unsubscribed]))

        expect(await h().stored.listSubscriptions(tenant.id)).toEqual([unsubscribed])
        expect(await getSubscription(h, tenant.id, list.id, subscribed.contact_id)).toEqual(unsubscribed)
        expect(await subscriptionsOf(h, tenant.id, subscribed.contact_id)).toEqual([unsubscribed])
        expect(await countSubscribed(h, tenant.id, list.id)).toBe(0)
        expect(await subscribedContacts(h, tenant.id, list.id, null, 10)).toEqual([])

        const resubscribed: SubscriptionRecord = {
          ...unsubscribed,
          status: "subscribed",
          optin_method: "flow",
          optin_channel_id: null,
          subscribed_at: at("12:00"),
          updated_at: at("12:00")
        }
        await h().run(putSubscriptions([resubscribed]))
        expect(await h().stored.listSubscriptions(tenant.id)).toEqual([resubscribed])
        expect(await countSubscribed(h, tenant.id, list.id)).toBe(1)
      })

      it("subscribeMany stores new subscriptions and replaces unsubscribed ones, keeps subscribed rows as they were, and resolves to the contacts it wrote", async () => {
        const { tenant } = await h().run(seedTenant)
        const list = listRecord(tenant.id)
        await h().run(insertLists([list]))
        const already = subscriptionRecord(tenant.id, list.id, { optin_method: "keyword", subscribed_at: at("09:00"), updated_at: at("09:00") })
        const left = subscriptionRecord(tenant.id, list.id, {
          status: "unsubscribed",
          unsubscribed_at: at("09:30"),
          unsubscribe_method: "api",
          updated_at: at("09:30")
        })
        await h().run(putSubscriptions([already, left]))
        const fresh = Array.from({ length: 1_200 }, () => subscriptionRecord(tenant.id, list.id, { optin_method: "import", subscribed_at: at("10:00"), updated_at: at("10:00") }))
        const again = (s: SubscriptionRecord) =>
          ({ ...s, status: "subscribed", optin_method: "import", optin_channel_id: null, subscribed_at: at("10:00"), unsubscribed_at: null, unsubscribe_method: null, updated_at: at("10:00") }) as const

        const written = await h().run(ListStore.use((s) => s.subscribeMany([again(already), again(left), ...fresh])))
        expect(written).toEqual(new Set([left.contact_id, ...fresh.map((f) => f.contact_id)]))
        const byContact = (x: SubscriptionRecord, y: SubscriptionRecord) => (x.contact_id < y.contact_id ? -1 : x.contact_id > y.contact_id ? 1 : 0)
        expect([...await h().stored.listSubscriptions(tenant.id)].sort(byContact)).toEqual([already, again(left), ...fresh].sort(byContact))
        expect(await countSubscribed(h, tenant.id, list.id)).toBe(1_202)
        expect(await h().run(ListStore.use((s) => s.subscribeMany([])))).toEqual(new Set())
      })

      it("subscribeMany never writes over another tenant's subscription under the same list and contact", async () => {
        const { a, b, listOfB, subscriptionOfB } = await h().run(twoTenants)
        const unsubscribedOfB = { ...subscriptionOfB, status: "unsubscribed", unsubscribed_at: at("11:00"), unsubscribe_method: "api", updated_at: at("11:00") } as const
        await h().run(putSubscriptions([unsubscribedOfB]))
        const hijack: SubscriptionRecord = { ...subscriptionOfB, tenant_id: a.id, optin_method: "import", updated_at: at("12:00") }

        const written = await h().exit(ListStore.use((s) => s.subscribeMany([hijack])))
        // Refusing or doing nothing are both fine; changing B's row or giving A one is not.
        if (written._tag === "Success") expect(written.value).toEqual(new Set())
        expect(await h().stored.listSubscriptions(b.id)).toEqual([unsubscribedOfB])
        expect(await getSubscription(h, a.id, listOfB.id, subscriptionOfB.contact_id)).toBeUndefined()
      })

      it("finds no subscription for an unknown list or contact, and none of a contact without any", async () => {
        const { tenant } = await h().run(seedTenant)
        const subscription = subscriptionRecord(tenant.id, newId())
        await h().run(putSubscriptions([subscription]))

        expect(await getSubscription(h, tenant.id, newId(), subscription.contact_id)).toBeUndefined()
        expect(await getSubscription(h, tenant.id, subscription.list_id, newId())).toBeUndefined()
        expect(await subscriptionsOf(h, tenant.id, newId())).toEqual([])
        expect(await countSubscribed(h, tenant.id, newId())).toBe(0)
        expect(await subscribedContacts(h, tenant.id, newId(), null, 10)).toEqual([])
      })

      it("lists a contact's subscriptions of either status oldest first, and no other contact's", async () => {
        const { tenant } = await h().run(seedTenant)
        const contactId = newId()
        const middle = subscriptionRecord(tenant.id, newId(), {
          contact_id: contactId,
          status: "unsubscribed",
          subscribed_at: at("10:01"),
          unsubscribed_at: at("10:30"),
          unsubscribe_method: "keyword"
        })
        const newest = subscriptionRecord(tenant.id, newId(), { contact_id: contactId, subscribed_at: at("10:02") })
        const oldest = subscriptionRecord(tenant.id, newId(), { contact_id: contactId, subscribed_at: at("10:00") })
        const someoneElse = subscriptionRecord(tenant.id, oldest.list_id, { subscribed_at: at("09:00") })
        await h().run(putSubscriptions([middle, someoneElse, newest, oldest]))

        expect(await subscriptionsOf(h, tenant.id, contactId)).toEqual([oldest, middle, newest])
        expect(await subscriptionsOf(h, tenant.id, someoneElse.contact_id)).toEqual([someoneElse])
      })

      it("pages a list's subscribed contacts by contact id, each exactly once, without unsubscribed ones or other lists'", async () => {
        const { tenant } = await h().run(seedTenant)
        const list = listRecord(tenant.id)
        const otherList = listRecord(tenant.id)
        await h().run(insertLists([list, otherList]))
        const subscribed = Array.from({ length: 25 }, () => subscriptionRecord(tenant.id, list.id))
        const unsubscribed = Array.from({ length: 5 }, () =>
          subscriptionRecord(tenant.id, list.id, { status: "unsubscribed", unsubscribed_at: at("11:00"), unsubscribe_method: "api" }))
        const onOtherList = subscribed.slice(0, 3).map((s) => subscriptionRecord(tenant.id, otherList.id, { contact_id: s.contact_id }))
          .concat([subscriptionRecord(tenant.id, otherList.id)])
        await h().run(putSubscriptions([...unsubscribed.slice(0, 2), ...subscribed, ...onOtherList, ...unsubscribed.slice(2)]))

        const expected = ascending(subscribed.map((s) => s.contact_id))
        const pages = await allPages(h, tenant.id, list.id, 10)
        expect(pages.map((p) => p.length)).toEqual([10, 10, 5])
        expect(pages.flat()).toEqual(expected)
        expect(new Set(pages.flat()).size).toBe(25)
        expect(await countSubscribed(h, tenant.id, list.id)).toBe(25)

        // Exactly a page's worth: the last full page is followed by an empty one.
        expect((await allPages(h, tenant.id, list.id, 5)).map((p) => p.length)).toEqual([5, 5, 5, 5, 5, 0])
        // From any contact id, the subscribed ones after it.
        expect(await subscribedContacts(h, tenant.id, list.id, expected[11]!, 100)).toEqual(expected.slice(12))
        expect(await subscribedContacts(h, tenant.id, list.id, expected[24]!, 10)).toEqual([])

        expect((await allPages(h, tenant.id, otherList.id, 10)).flat()).toEqual(ascending(onOtherList.map((s) => s.contact_id)))
        expect(await countSubscribed(h, tenant.id, otherList.id)).toBe(4)
      })
    })

    describe("opt-outs", () => {
      it("stores every field of an opt-out, keeps the first per contact and channel, and keeps other channels and every channel apart", async () => {
        const { tenant } = await h().run(seedTenant)
        const channelId = newId()
        const otherChannelId = newId()
        const onChannel = marketingOptOutRecord(tenant.id, {
          channel_id: channelId,
          source: "operator_error",
          opted_out_at: "2026-11-26T10:15:30.123Z"
        })
        const contactId = onChannel.contact_id
        const againOnChannel = marketingOptOutRecord(tenant.id, {
          contact_id: contactId,
          channel_id: channelId,
          source: "keyword",
          opted_out_at: at("11:00")
        })
        const onOtherChannel = marketingOptOutRecord(tenant.id, {
          contact_id: contactId,
          channel_id: otherChannelId,
          source: "operator_preferences",
          opted_out_at: at("11:01")
        })
        const everywhere = marketingOptOutRecord(tenant.id, { contact_id: contactId, opted_out_at: at("11:02") })
        const againEverywhere = marketingOptOutRecord(tenant.id, {
          contact_id: contactId,
          source: "operator_preferences",
          opted_out_at: at("11:03")
        })
        const someoneElse = marketingOptOutRecord(tenant.id, { channel_id: channelId })
        await h().run(putOptOuts([onChannel, againOnChannel, onOtherChannel, everywhere, againEverywhere, someoneElse]))

        const mine = [onChannel, onOtherChannel, everywhere].sort(byChannel)
        expect(await optOutsOf(h, tenant.id, contactId)).toEqual(mine)
        expect(await optOutsOf(h, tenant.id, someoneElse.contact_id)).toEqual([someoneElse])
        const byContact = (x: MarketingOptOutRecord, y: MarketingOptOutRecord) =>
          x.contact_id === y.contact_id ? byChannel(x, y) : (x.contact_id < y.contact_id ? -1 : 1)
        expect(await h().stored.marketingOptOuts(tenant.id)).toEqual([...mine, someoneElse].sort(byContact))
      })

      it("removes one opt-out of a contact by channel, leaving the others and other tenants' alone", async () => {
        const { a, b, optOutOfA, optOutOfB } = await h().run(twoTenants)
        const channelId = newId()
        const onChannel = marketingOptOutRecord(a.id, { contact_id: optOutOfA.contact_id, channel_id: channelId })
        await h().run(putOptOuts([onChannel]))
        await h().run(ListStore.use((s) => s.removeOptOut(a.id, optOutOfA.contact_id, channelId)))
        expect(await optOutsOf(h, a.id, optOutOfA.contact_id)).toEqual([optOutOfA])
        // Another tenant's opt-out of the same contact id for every channel stays when A removes its own.
        await h().run(ListStore.use((s) => s.removeOptOut(a.id, optOutOfA.contact_id, null)))
        expect(await optOutsOf(h, a.id, optOutOfA.contact_id)).toEqual([])
        expect(await optOutsOf(h, b.id, optOutOfB.contact_id)).toEqual([optOutOfB])
        // Removing what is not there succeeds.
        await h().run(ListStore.use((s) => s.removeOptOut(a.id, newId(), null)))
      })

      it("reads the subscriptions and opt-outs among many contacts, in chunks, never another tenant's", async () => {
        const { a, b, listOfA, subscriptionOfA, optOutOfA } = await h().run(twoTenants)
        const many = Array.from({ length: 600 }, () => newId())
        const subscriptions = many.slice(0, 3).map((contact_id) => subscriptionRecord(a.id, listOfA.id, { contact_id }))
        await h().run(putSubscriptions(subscriptions))
        const optOut = marketingOptOutRecord(a.id, { contact_id: many[599]! })
        await h().run(putOptOuts([optOut]))
        const asked = [...many, subscriptionOfA.contact_id]
        const subs = await h().run(ListStore.use((s) => s.subscriptionsAmong(a.id, asked)))
        expect(subs.map((s) => s.contact_id).sort()).toEqual([...subscriptions.map((s) => s.contact_id), subscriptionOfA.contact_id].sort())
        const outs = await h().run(ListStore.use((s) => s.optOutsAmong(a.id, asked)))
        expect(outs.map((o) => o.contact_id).sort()).toEqual([optOut.contact_id, optOutOfA.contact_id].sort())
        expect(await h().run(ListStore.use((s) => s.optOutsAmong(b.id, many)))).toEqual([])
        expect(await h().run(ListStore.use((s) => s.subscriptionsAmong(a.id, [])))).toEqual([])
      })

      it("finds no opt-out of a contact without any", async () => {
        const { tenant } = await h().run(seedTenant)
        expect(await optOutsOf(h, tenant.id, newId())).toEqual([])
      })
    })

    describe("every list, deleted ones too", () => {
      it("lists the tenant's lists with the deleted ones, oldest first, never another tenant's", async () => {
        const { a, listOfA } = await h().run(twoTenants)
        const later = listRecord(a.id, { created_at: "2099-01-01T00:00:00.000Z" })
        await h().run(insertLists([later]))
        const deleted = { ...later, deleted_at: "2099-01-02T00:00:00.000Z" }
        await updateList(h, a.id, deleted)
        expect(await listLists(h, a.id)).toEqual([listOfA])
        expect(await h().run(ListStore.use((s) => s.listAllLists(a.id)))).toEqual([listOfA, deleted])
      })
    })

    describe("tenant isolation", () => {
      it("lets two tenants hold lists of the same slug, each its own default", async () => {
        const { a, b, listOfA, listOfB } = await h().run(twoTenants)

        expect(await h().stored.lists(a.id)).toEqual([listOfA])
        expect(await h().stored.lists(b.id)).toEqual([listOfB])
        expect(await findBySlug(h, a.id, listOfA.slug)).toEqual(listOfA)
        expect(await findBySlug(h, b.id, listOfA.slug)).toEqual(listOfB)
        expect(await findDefault(h, a.id)).toEqual(listOfA)
        expect(await findDefault(h, b.id)).toEqual(listOfB)
      })

      it("returns nothing of another tenant's lists, by id or listing, and a tenant with none has none", async () => {
        const { a, listOfA, listOfB } = await h().run(twoTenants)
        const { tenant: empty } = await h().run(seedTenant)

        expect(await getList(h, a.id, listOfB.id)).toBeUndefined()
        expect(await listLists(h, a.id)).toEqual([listOfA])
        expect(await getList(h, empty.id, listOfA.id)).toBeUndefined()
        expect(await findBySlug(h, empty.id, listOfA.slug)).toBeUndefined()
        expect(await findDefault(h, empty.id)).toBeUndefined()
        expect(await listLists(h, empty.id)).toEqual([])
        expect(await hasLists(h, empty.id)).toBe(false)
      })

      it("refuses to update or delete another tenant's list and leaves it unchanged", async () => {
        const { a, b, listOfB } = await h().run(twoTenants)
        const hijack: ListRecord = { ...listOfB, name: "Hijacked", deleted_at: at("12:00") }

        expect(await updateList(h, a.id, hijack)).toBe(false)
        expect(await updateList(h, a.id, { ...hijack, tenant_id: a.id })).toBe(false)
        expect(await h().stored.lists(b.id)).toEqual([listOfB])
        expect(await hasLists(h, b.id)).toBe(true)
      })

      it("returns nothing of another tenant's subscriptions, by list, contact, page or count", async () => {
        const { a, b, listOfB, subscriptionOfA, subscriptionOfB } = await h().run(twoTenants)

        expect(await getSubscription(h, a.id, listOfB.id, subscriptionOfB.contact_id)).toBeUndefined()
        // Both tenants hold a subscription of the same contact id: each finds its own.
        expect(await subscriptionsOf(h, a.id, subscriptionOfA.contact_id)).toEqual([subscriptionOfA])
        expect(await subscriptionsOf(h, b.id, subscriptionOfA.contact_id)).toEqual([subscriptionOfB])
        expect(await subscribedContacts(h, a.id, listOfB.id, null, 10)).toEqual([])
        expect(await countSubscribed(h, a.id, listOfB.id)).toBe(0)
        expect(await h().stored.listSubscriptions(a.id)).toEqual([subscriptionOfA])
      })

      it("never overwrites another tenant's subscription under the same list and contact", async () => {
        const { a, b, listOfB, subscriptionOfB } = await h().run(twoTenants)
        const hijack: SubscriptionRecord = {
          ...subscriptionOfB,
          tenant_id: a.id,
          status: "unsubscribed",
          unsubscribed_at: at("12:00"),
          unsubscribe_method: "api",
          updated_at: at("12:00")
        }
        // Refusing or doing nothing are both fine; changing B's row or giving A one is not.
        await h().exit(putSubscriptions([hijack]))

        expect(await h().stored.listSubscriptions(b.id)).toEqual([subscriptionOfB])
        expect(await getSubscription(h, b.id, listOfB.id, subscriptionOfB.contact_id)).toEqual(subscriptionOfB)
        expect(await getSubscription(h, a.id, listOfB.id, subscriptionOfB.contact_id)).toBeUndefined()
        expect(await countSubscribed(h, b.id, listOfB.id)).toBe(1)
      })

      it("keeps each tenant's opt-outs of the same contact id apart", async () => {
        const { a, b, optOutOfA, optOutOfB } = await h().run(twoTenants)

        expect(await optOutsOf(h, a.id, optOutOfA.contact_id)).toEqual([optOutOfA])
        expect(await optOutsOf(h, b.id, optOutOfA.contact_id)).toEqual([optOutOfB])
        expect(await h().stored.marketingOptOuts(a.id)).toEqual([optOutOfA])
        expect(await h().stored.marketingOptOuts(b.id)).toEqual([optOutOfB])
      })
    })
  }
})
