import { Effect, Option } from "effect"
import { describe, expect, it } from "vitest"
import type { AccountStore } from "../../src/ports/AccountStore.ts"
import type { StorageError } from "../../src/ports/StorageError.ts"
import { type TemplateFilter, type TemplateRecord, TemplateStore } from "../../src/ports/TemplateStore.ts"
import type { TenantStore } from "../../src/ports/TenantStore.ts"
import { seedTenant, templateRecord } from "./Fixtures.ts"
import { byId, makeSuite, type Suite, type UseHarness } from "./Harness.ts"

type UseTemplates = UseHarness<TemplateStore | TenantStore | AccountStore, never>

/** An instant of the templates' day as stored, from `HH:MM`. */
const at = (time: string): string => `2026-11-26T${time}:00.000Z`

const newId = (): string => globalThis.crypto.randomUUID()

/** Components in the operator's shape, with every JSON kind, nesting and unicode. */
const RICH_COMPONENTS = [
  { type: "HEADER", format: "TEXT", text: "Pedido {{1}} 山田 🚀", example: { header_text: ["#1234"] } },
  {
    type: "BODY",
    text: "Olá {{1}}, \"quoted\" \\ back\nslash — total {{2}}",
    example: { body_text: [["Zoë", "R$ 10,00"]] },
    add_security_recommendation: false
  },
  { type: "FOOTER", text: "Não responda" },
  {
    type: "BUTTONS",
    buttons: [
      { type: "URL", text: "Track", url: "https://example.com/track/{{1}}", example: ["https://example.com/track/1"] },
      { type: "QUICK_REPLY", text: "Stop 👋🏽" },
      { type: "OTP", otp_type: "COPY_CODE", code_expiration_minutes: 10, ratio: 0.25, extra: null }
    ]
  }
]

const insertAll = (templates: ReadonlyArray<TemplateRecord>) =>
  TemplateStore.use((s) => Effect.forEach(templates, (t) => s.insert(t), { discard: true }))

const getTemplate = (h: UseTemplates, tenantId: string, id: string) =>
  h().run(TemplateStore.use((s) => s.get(tenantId, id))).then(Option.getOrUndefined)

const findByName = (h: UseTemplates, tenantId: string, channelId: string, name: string, language: string) =>
  h().run(TemplateStore.use((s) => s.findByName(tenantId, channelId, name, language))).then(Option.getOrUndefined)

/** The channel's names and languages, sorted so lists read in any order compare whole. */
const namesOnChannel = (h: UseTemplates, tenantId: string, channelId: string) =>
  h().run(TemplateStore.use((s) => s.namesOnChannel(tenantId, channelId))).then((names) =>
    [...names].sort((x, y) => `${x.name} ${x.language}`.localeCompare(`${y.name} ${y.language}`))
  )

const list = (h: UseTemplates, tenantId: string, filter: TemplateFilter = {}, limit = 50, offset = 0) =>
  h().run(TemplateStore.use((s) => s.list(tenantId, filter, { limit, offset })))

const update = (h: UseTemplates, tenantId: string, template: TemplateRecord, expectedAttemptId?: string) =>
  h().run(TemplateStore.use((s) => s.update(tenantId, template, expectedAttemptId)))

const removeReservation = (h: UseTemplates, tenantId: string, id: string, attemptId: string) =>
  h().run(TemplateStore.use((s) => s.removeReservation(tenantId, id, attemptId)))

// What every adapter must report for a second template of a name and language: the same reason and index name on every database.
const expectNameUniqueViolation = (error: StorageError) => {
  expect(error).toMatchObject({ _tag: "StorageError", reason: "UniqueViolation", constraint: "chatapp_templates_channel_name_unique" })
  expect(error.isRetryable).toBe(false)
}

/** A reservation an adoption holds while it asks the operator to create the template. */
const reservation = (tenantId: string, overrides: Partial<TemplateRecord> = {}) =>
  templateRecord(tenantId, {
    status: "submitting",
    external_id: null,
    library_template_name: "order_update",
    attempt_id: `attempt-${newId()}`,
    ...overrides
  })

// Two tenants with one template each, on the same channel id, name and language (allowed: templates are per tenant).
const twoTenants = Effect.gen(function*() {
  const a = (yield* seedTenant).tenant
  const b = (yield* seedTenant).tenant
  const templateOfA = reservation(a.id)
  const templateOfB = templateRecord(b.id, { channel_id: templateOfA.channel_id, name: templateOfA.name, components: [] })
  yield* insertAll([templateOfA, templateOfB])
  return { a, b, templateOfA, templateOfB }
})

/**
 * TemplateStore: every field round-trips; one template per channel, name and language; update
 * replaces, guarded by the attempt holding a reservation; only that attempt removes it; lists page
 * newest first with filters and totals; the operator's template id finds templates in every tenant,
 * and nothing else reaches another tenant's. Needs TenantStore and AccountStore for the tenants
 * templates belong to.
 */
export const templateStoreSuite: Suite<TemplateStore | TenantStore | AccountStore, never> = makeSuite({
  name: "TemplateStore",
  tables: [],
  tests: (h) => {
    it("stores every field, with unicode and nested components, and reads it back unchanged by id, name and listing", async () => {
      const { tenant } = await h().run(seedTenant)
      const template = templateRecord(tenant.id, {
        language: "pt_BR",
        category: "MARKETING",
        status: "rejected",
        status_reason: "Conteúdo não permitido 🚫 \"quoted\"",
        library_template_name: "order_update_ñ",
        components: RICH_COMPONENTS,
        attempt_id: `attempt-${newId()}`,
        created_at: "2026-11-26T10:15:30.123Z",
        updated_at: "2026-11-26T11:00:00.001Z"
      })
      await h().run(insertAll([template]))

      expect(await getTemplate(h, tenant.id, template.id)).toEqual(template)
      expect(await findByName(h, tenant.id, template.channel_id, template.name, "pt_BR")).toEqual(template)
      expect(await list(h, tenant.id)).toEqual({ items: [template], total: 1 })
    })

    it("stores a reservation with no operator id, reason or update yet, and reads it back unchanged", async () => {
      const { tenant } = await h().run(seedTenant)
      const template = reservation(tenant.id, { library_template_name: null, components: [] })
      await h().run(insertAll([template]))

      expect(await getTemplate(h, tenant.id, template.id)).toEqual(template)
    })

    it("finds no template for an unknown id", async () => {
      const { tenant } = await h().run(seedTenant)
      expect(await getTemplate(h, tenant.id, newId())).toBeUndefined()
    })

    describe("one template per channel, name and language", () => {
      it("refuses a second with UniqueViolation naming chatapp_templates_channel_name_unique, and keeps the first", async () => {
        const { tenant } = await h().run(seedTenant)
        const first = templateRecord(tenant.id)
        await h().run(insertAll([first]))

        const second = templateRecord(tenant.id, { channel_id: first.channel_id, name: first.name, status: "pending" })
        expectNameUniqueViolation(await h().run(Effect.flip(insertAll([second]))))
        expect(await getTemplate(h, tenant.id, second.id)).toBeUndefined()
        expect(await list(h, tenant.id)).toEqual({ items: [first], total: 1 })
      })

      it("takes the same name in another language, on another channel, and in another tenant", async () => {
        const { tenant } = await h().run(seedTenant)
        const other = (await h().run(seedTenant)).tenant
        const first = templateRecord(tenant.id, { created_at: at("10:00") })
        const otherLanguage = templateRecord(tenant.id, { channel_id: first.channel_id, name: first.name, language: "es", created_at: at("10:01") })
        const otherChannel = templateRecord(tenant.id, { name: first.name, created_at: at("10:02") })
        const otherTenant = templateRecord(other.id, { channel_id: first.channel_id, name: first.name })
        await h().run(insertAll([first, otherLanguage, otherChannel, otherTenant]))

        expect(await list(h, tenant.id)).toEqual({ items: [otherChannel, otherLanguage, first], total: 3 })
        expect(await list(h, other.id)).toEqual({ items: [otherTenant], total: 1 })
      })

      it("refuses an update giving a template the name and language of another on its channel, and leaves both", async () => {
        const { tenant } = await h().run(seedTenant)
        const first = templateRecord(tenant.id, { created_at: at("10:00") })
        const second = templateRecord(tenant.id, { channel_id: first.channel_id, created_at: at("10:01") })
        await h().run(insertAll([first, second]))

        const renamed: TemplateRecord = { ...second, name: first.name, updated_at: at("11:00") }
        expectNameUniqueViolation(await h().run(Effect.flip(TemplateStore.use((s) => s.update(tenant.id, renamed)))))
        expect(await list(h, tenant.id)).toEqual({ items: [second, first], total: 2 })
      })
    })

    it("finds a template by channel, name and language, and none when any of them differs", async () => {
      const { tenant } = await h().run(seedTenant)
      const english = templateRecord(tenant.id)
      const spanish = templateRecord(tenant.id, { channel_id: english.channel_id, name: english.name, language: "es" })
      await h().run(insertAll([english, spanish]))

      expect(await findByName(h, tenant.id, english.channel_id, english.name, "en_US")).toEqual(english)
      expect(await findByName(h, tenant.id, english.channel_id, english.name, "es")).toEqual(spanish)
      expect(await findByName(h, tenant.id, english.channel_id, english.name, "pt_BR")).toBeUndefined()
      expect(await findByName(h, tenant.id, newId(), english.name, "en_US")).toBeUndefined()
      expect(await findByName(h, tenant.id, english.channel_id, `${english.name}_2`, "en_US")).toBeUndefined()
    })

    it("names the name and language of every template of the channel, and only of that channel", async () => {
      const { tenant } = await h().run(seedTenant)
      const first = templateRecord(tenant.id, { name: "a_first" })
      const firstInSpanish = templateRecord(tenant.id, { channel_id: first.channel_id, name: "a_first", language: "es" })
      const pending = reservation(tenant.id, { channel_id: first.channel_id, name: "b_second" })
      const elsewhere = templateRecord(tenant.id, { name: "c_elsewhere" })
      await h().run(insertAll([pending, first, elsewhere, firstInSpanish]))

      expect(await namesOnChannel(h, tenant.id, first.channel_id)).toEqual([
        { name: "a_first", language: "en_US" },
        { name: "a_first", language: "es" },
        { name: "b_second", language: "en_US" }
      ])
      expect(await namesOnChannel(h, tenant.id, elsewhere.channel_id)).toEqual([{ name: "c_elsewhere", language: "en_US" }])
      expect(await namesOnChannel(h, tenant.id, newId())).toEqual([])
    })

    describe("list", () => {
      it("lists newest first, one window at a time, with the total on every page", async () => {
        const { tenant } = await h().run(seedTenant)
        const templates = [0, 1, 2, 3, 4].map((i) => templateRecord(tenant.id, { created_at: at(`10:0${i}`) }))
        await h().run(insertAll([templates[2]!, templates[0]!, templates[4]!, templates[1]!, templates[3]!]))
        const [t0, t1, t2, t3, t4] = templates

        expect(await list(h, tenant.id, {}, 2, 0)).toEqual({ items: [t4, t3], total: 5 })
        expect(await list(h, tenant.id, {}, 2, 2)).toEqual({ items: [t2, t1], total: 5 })
        expect(await list(h, tenant.id, {}, 2, 4)).toEqual({ items: [t0], total: 5 })
        expect(await list(h, tenant.id, {}, 2, 6)).toEqual({ items: [], total: 5 })
      })

      it("pages through templates created at the same instant without repeating or skipping any", async () => {
        const { tenant } = await h().run(seedTenant)
        const twins = Array.from({ length: 7 }, () => templateRecord(tenant.id))
        await h().run(insertAll(twins))

        const seen: Array<string> = []
        for (let offset = 0; offset < 7; offset += 3) seen.push(...(await list(h, tenant.id, {}, 3, offset)).items.map((t) => t.id))
        expect([...seen].sort()).toEqual(twins.map((t) => t.id).sort())
      })

      it("filters by channel and status, each alone and together, with the total of what matches", async () => {
        const { tenant } = await h().run(seedTenant)
        const channel = newId()
        const approvedHere = templateRecord(tenant.id, { channel_id: channel, created_at: at("10:04") })
        const rejectedHere = templateRecord(tenant.id, { channel_id: channel, status: "rejected", created_at: at("10:03") })
        const approvedHereToo = templateRecord(tenant.id, { channel_id: channel, created_at: at("10:02") })
        const rejectedElsewhere = templateRecord(tenant.id, { status: "rejected", created_at: at("10:01") })
        await h().run(insertAll([approvedHere, rejectedHere, approvedHereToo, rejectedElsewhere]))

        expect(await list(h, tenant.id, { channel_id: channel })).toEqual({ items: [approvedHere, rejectedHere, approvedHereToo], total: 3 })
        expect(await list(h, tenant.id, { status: "rejected" })).toEqual({ items: [rejectedHere, rejectedElsewhere], total: 2 })
        expect(await list(h, tenant.id, { channel_id: channel, status: "approved" })).toEqual({ items: [approvedHere, approvedHereToo], total: 2 })
        expect(await list(h, tenant.id, { channel_id: channel, status: "approved" }, 1, 1)).toEqual({ items: [approvedHereToo], total: 2 })
        expect(await list(h, tenant.id, { status: "paused" })).toEqual({ items: [], total: 0 })
        expect(await list(h, tenant.id, { channel_id: newId() })).toEqual({ items: [], total: 0 })
      })
    })

    describe("update", () => {
      it("replaces every changeable field and reports that it did", async () => {
        const { tenant } = await h().run(seedTenant)
        const before = reservation(tenant.id)
        await h().run(insertAll([before]))
        const after: TemplateRecord = {
          ...before,
          category: "MARKETING",
          status: "paused",
          status_reason: "Low quality 📉",
          external_id: `ext-${newId()}`,
          library_template_name: null,
          components: RICH_COMPONENTS,
          attempt_id: null,
          updated_at: at("12:00")
        }

        expect(await update(h, tenant.id, after)).toBe(true)
        expect(await getTemplate(h, tenant.id, before.id)).toEqual(after)
      })

      it("updates nothing and reports false for an unknown template", async () => {
        const { tenant } = await h().run(seedTenant)
        const existing = templateRecord(tenant.id)
        await h().run(insertAll([existing]))

        expect(await update(h, tenant.id, templateRecord(tenant.id, { channel_id: existing.channel_id }))).toBe(false)
        expect(await list(h, tenant.id)).toEqual({ items: [existing], total: 1 })
      })

      it("replaces a reservation only for the attempt holding it, and leaves it unchanged for any other", async () => {
        const { tenant } = await h().run(seedTenant)
        const held = reservation(tenant.id)
        await h().run(insertAll([held]))
        const settled: TemplateRecord = { ...held, status: "pending", external_id: `ext-${newId()}`, attempt_id: null, updated_at: at("12:00") }

        expect(await update(h, tenant.id, settled, `attempt-${newId()}`)).toBe(false)
        expect(await getTemplate(h, tenant.id, held.id)).toEqual(held)
        expect(await update(h, tenant.id, settled, held.attempt_id!)).toBe(true)
        expect(await getTemplate(h, tenant.id, held.id)).toEqual(settled)
        // Settled, it has no attempt: the one that held it can no longer replace it.
        expect(await update(h, tenant.id, { ...settled, status: "approved" }, held.attempt_id!)).toBe(false)
        expect(await getTemplate(h, tenant.id, held.id)).toEqual(settled)
      })

      it("lets an attempt take over a reservation by naming the attempt that holds it", async () => {
        const { tenant } = await h().run(seedTenant)
        const abandoned = reservation(tenant.id)
        await h().run(insertAll([abandoned]))
        const takeover = `attempt-${newId()}`
        const taken: TemplateRecord = { ...abandoned, attempt_id: takeover, updated_at: at("12:00") }

        expect(await update(h, tenant.id, taken, abandoned.attempt_id!)).toBe(true)
        expect(await update(h, tenant.id, { ...abandoned, updated_at: at("12:01") }, abandoned.attempt_id!)).toBe(false)
        expect(await getTemplate(h, tenant.id, abandoned.id)).toEqual(taken)
      })
    })

    describe("removeReservation", () => {
      it("removes a reservation for the attempt holding it, and only once", async () => {
        const { tenant } = await h().run(seedTenant)
        const held = reservation(tenant.id)
        const neighbour = reservation(tenant.id, { channel_id: held.channel_id })
        await h().run(insertAll([held, neighbour]))

        expect(await removeReservation(h, tenant.id, held.id, held.attempt_id!)).toBe(true)
        expect(await getTemplate(h, tenant.id, held.id)).toBeUndefined()
        expect(await findByName(h, tenant.id, held.channel_id, held.name, held.language)).toBeUndefined()
        expect(await removeReservation(h, tenant.id, held.id, held.attempt_id!)).toBe(false)
        expect(await list(h, tenant.id)).toEqual({ items: [neighbour], total: 1 })
      })

      it("keeps a reservation another attempt holds, and a settled template whatever its attempt id", async () => {
        const { tenant } = await h().run(seedTenant)
        const held = reservation(tenant.id)
        const settled = templateRecord(tenant.id, { status: "pending", attempt_id: `attempt-${newId()}` })
        await h().run(insertAll([held, settled]))

        expect(await removeReservation(h, tenant.id, held.id, `attempt-${newId()}`)).toBe(false)
        expect(await removeReservation(h, tenant.id, settled.id, settled.attempt_id!)).toBe(false)
        expect(await removeReservation(h, tenant.id, newId(), held.attempt_id!)).toBe(false)
        expect(await getTemplate(h, tenant.id, held.id)).toEqual(held)
        expect(await getTemplate(h, tenant.id, settled.id)).toEqual(settled)
      })
    })

    it("finds the templates of an operator template id in every tenant, and none for an unknown id", async () => {
      const { a, b, templateOfB } = await h().run(twoTenants)
      const externalId = `ext-${newId()}`
      const ofA = templateRecord(a.id, { external_id: externalId, created_at: at("10:00") })
      const ofB = templateRecord(b.id, { external_id: externalId, created_at: at("11:00") })
      const otherOfA = templateRecord(a.id, { external_id: `${externalId}9` })
      await h().run(insertAll([ofB, otherOfA, ofA]))
      const find = (id: string) => h().run(TemplateStore.use((s) => s.findByExternalId(id))).then((found) => [...found].sort(byId))

      expect(await find(externalId)).toEqual([ofA, ofB].sort(byId))
      expect(await find(templateOfB.external_id!)).toEqual([templateOfB])
      expect(await find(`ext-${newId()}`)).toEqual([])
    })

    describe("tenant isolation", () => {
      it("returns nothing of another tenant's template, by id, name, channel or listing", async () => {
        const { a, b, templateOfA, templateOfB } = await h().run(twoTenants)
        const onlyOfB = templateRecord(b.id, { name: "only_of_b" })
        await h().run(insertAll([onlyOfB]))

        expect(await getTemplate(h, a.id, templateOfB.id)).toBeUndefined()
        expect(await getTemplate(h, a.id, onlyOfB.id)).toBeUndefined()
        expect(await findByName(h, a.id, onlyOfB.channel_id, onlyOfB.name, onlyOfB.language)).toBeUndefined()
        expect(await namesOnChannel(h, a.id, onlyOfB.channel_id)).toEqual([])
        expect(await list(h, a.id, { channel_id: onlyOfB.channel_id })).toEqual({ items: [], total: 0 })
        expect(await list(h, a.id)).toEqual({ items: [templateOfA], total: 1 })
      })

      it("finds only the tenant's own template where both tenants use the same channel id, name and language", async () => {
        const { a, b, templateOfA, templateOfB } = await h().run(twoTenants)

        expect(await findByName(h, a.id, templateOfA.channel_id, templateOfA.name, templateOfA.language)).toEqual(templateOfA)
        expect(await findByName(h, b.id, templateOfA.channel_id, templateOfA.name, templateOfA.language)).toEqual(templateOfB)
        expect(await namesOnChannel(h, b.id, templateOfA.channel_id)).toEqual([{ name: templateOfB.name, language: templateOfB.language }])
        expect(await list(h, a.id)).toEqual({ items: [templateOfA], total: 1 })
        expect(await list(h, b.id)).toEqual({ items: [templateOfB], total: 1 })
      })

      it("refuses to update or remove another tenant's template, even naming the attempt holding it, and leaves it unchanged", async () => {
        const { a, b, templateOfA } = await h().run(twoTenants)
        const hijack: TemplateRecord = { ...templateOfA, status: "approved", components: [], attempt_id: null, updated_at: at("12:00") }

        expect(await update(h, b.id, hijack)).toBe(false)
        expect(await update(h, b.id, { ...hijack, tenant_id: b.id })).toBe(false)
        expect(await update(h, b.id, hijack, templateOfA.attempt_id!)).toBe(false)
        expect(await removeReservation(h, b.id, templateOfA.id, templateOfA.attempt_id!)).toBe(false)
        expect(await getTemplate(h, a.id, templateOfA.id)).toEqual(templateOfA)
      })
    })
  }
})
