import { Option } from "effect"
import { expect, it } from "vitest"
import { type LibraryCacheRecord, LibraryCacheStore } from "../../src/ports/LibraryCacheStore.ts"
import { libraryCacheRecord } from "./Fixtures.ts"
import { makeSuite, type Suite, type UseHarness } from "./Harness.ts"

type UseLibraryCache = UseHarness<LibraryCacheStore, never>

/** An instant of the copies' day as stored, from `HH:MM`. */
const at = (time: string): string => `2026-11-26T${time}:00.000Z`

const put = (h: UseLibraryCache, record: LibraryCacheRecord) => h().run(LibraryCacheStore.use((s) => s.put(record)))

const get = (h: UseLibraryCache, businessAccountId: string, queryKey: string) =>
  h().run(LibraryCacheStore.use((s) => s.get(businessAccountId, queryKey))).then(Option.getOrUndefined)

const fetchedAt = (h: UseLibraryCache, businessAccountId: string, queryKey: string) =>
  h().run(LibraryCacheStore.use((s) => s.fetchedAt(businessAccountId, queryKey))).then(Option.getOrUndefined)

const prune = (h: UseLibraryCache, before: string) => h().run(LibraryCacheStore.use((s) => s.prune(before)))

/**
 * A library answer of at least 2 MiB as the operator might send it: pretty-printed (so a store that
 * re-serializes it changes it), with unicode in every plane, escapes and line separators.
 */
const largeEntries = (): string => {
  const entries: Array<unknown> = []
  let i = 0
  let text = ""
  while (text.length < 2 * 1024 * 1024) {
    for (let n = 0; n < 500; n++, i++) {
      entries.push({
        name: `template_${i}`,
        language: i % 2 === 0 ? "en_US" : "pt_BR",
        category: "UTILITY",
        components: [
          { type: "HEADER", format: "TEXT", text: `Pedido ${i} 山田 🚀 Zoë` },
          { type: "BODY", text: `Olá {{1}}, "quoted" \\ back\nslash\t\u0000 \u2028 —\u00a0${i}`, example: { body_text: [["Ada", `${i}`]] } },
          { type: "BUTTONS", buttons: [{ type: "QUICK_REPLY", text: "👋🏽" }] }
        ],
        usage: i / 7,
        deprecated: i % 3 === 0 ? null : false
      })
    }
    text = JSON.stringify(entries, null, 2)
  }
  return text
}

/**
 * LibraryCacheStore: a copy per business account and query; put stores it unchanged, byte for byte,
 * replacing an older copy but never a newer one; prune removes the copies fetched before an instant.
 */
export const libraryCacheStoreSuite: Suite<LibraryCacheStore, never> = makeSuite({
  name: "LibraryCacheStore",
  tables: [],
  tests: (h) => {
    it("has no copy and no fetch time for an account and query never stored", async () => {
      const absent = libraryCacheRecord()
      expect(await get(h, absent.business_account_id, absent.query_key)).toBeUndefined()
      expect(await fetchedAt(h, absent.business_account_id, absent.query_key)).toBeUndefined()
    })

    it("reads back exactly the copy it stored, and when it was fetched", async () => {
      const copy = libraryCacheRecord({ query_key: "category=MARKETING&language=pt_BR&search=promoção 🚀", fetched_at: at("10:15") })
      await put(h, copy)

      expect(await get(h, copy.business_account_id, copy.query_key)).toEqual(copy)
      expect(await fetchedAt(h, copy.business_account_id, copy.query_key)).toBe(copy.fetched_at)
    })

    it("keeps an entries text of 2 MiB with unicode and escapes byte for byte", async () => {
      const entries = largeEntries()
      const copy = libraryCacheRecord({ entries, fetched_at: at("10:20") })
      await put(h, copy)

      const found = await get(h, copy.business_account_id, copy.query_key)
      expect(found?.entries.length).toBe(entries.length)
      // Compared whole without a diff of megabytes on failure.
      expect(found?.entries === entries).toBe(true)
      expect({ ...found, entries: "" }).toEqual({ ...copy, entries: "" })
    })

    it("replaces the copy with one fetched later", async () => {
      const older = libraryCacheRecord({ fetched_at: at("10:00") })
      const newer: LibraryCacheRecord = { ...older, entries: JSON.stringify([{ name: "fresh_one", language: "es" }]), fetched_at: at("11:00") }
      await put(h, older)
      await put(h, newer)

      expect(await get(h, older.business_account_id, older.query_key)).toEqual(newer)
      expect(await fetchedAt(h, older.business_account_id, older.query_key)).toBe(newer.fetched_at)
    })

    it("keeps the stored copy when given one fetched earlier", async () => {
      const newer = libraryCacheRecord({ fetched_at: at("11:00") })
      const older: LibraryCacheRecord = { ...newer, entries: JSON.stringify([{ name: "stale_one", language: "es" }]), fetched_at: at("10:59") }
      await put(h, newer)
      await put(h, older)

      expect(await get(h, newer.business_account_id, newer.query_key)).toEqual(newer)
      expect(await fetchedAt(h, newer.business_account_id, newer.query_key)).toBe(newer.fetched_at)
    })

    it("keeps one copy per business account and per query, each replaced alone", async () => {
      const first = libraryCacheRecord({ fetched_at: at("10:00") })
      const otherAccount = libraryCacheRecord({ query_key: first.query_key, entries: "[]", fetched_at: at("10:01") })
      const otherQuery: LibraryCacheRecord = { ...first, query_key: `${first.query_key}&search=order`, entries: "[{}]", fetched_at: at("10:02") }
      await put(h, first)
      await put(h, otherAccount)
      await put(h, otherQuery)

      expect(await get(h, first.business_account_id, first.query_key)).toEqual(first)
      expect(await get(h, otherAccount.business_account_id, first.query_key)).toEqual(otherAccount)
      expect(await get(h, first.business_account_id, otherQuery.query_key)).toEqual(otherQuery)
      expect(await get(h, otherAccount.business_account_id, otherQuery.query_key)).toBeUndefined()

      const refreshed: LibraryCacheRecord = { ...first, entries: "[1]", fetched_at: at("12:00") }
      await put(h, refreshed)
      expect(await get(h, first.business_account_id, first.query_key)).toEqual(refreshed)
      expect(await get(h, otherAccount.business_account_id, first.query_key)).toEqual(otherAccount)
      expect(await get(h, first.business_account_id, otherQuery.query_key)).toEqual(otherQuery)
    })

    it("prunes the copies fetched before an instant, in every account, says how many, and keeps the rest", async () => {
      // Fetched in 2001, long before any other test's copies, so the count is this test's alone.
      const oldest = libraryCacheRecord({ fetched_at: "2001-03-01T09:00:00.000Z" })
      const old = libraryCacheRecord({ fetched_at: "2001-03-01T09:59:59.999Z" })
      const oldOtherQuery: LibraryCacheRecord = { ...old, query_key: "category=AUTHENTICATION", fetched_at: "2001-03-01T09:30:00.000Z" }
      const atTheInstant = libraryCacheRecord({ fetched_at: "2001-03-01T10:00:00.000Z" })
      const recent = libraryCacheRecord({ fetched_at: at("10:00") })
      for (const copy of [oldest, old, oldOtherQuery, atTheInstant, recent]) await put(h, copy)

      expect(await prune(h, "2001-03-01T10:00:00.000Z")).toBe(3)
      expect(await get(h, oldest.business_account_id, oldest.query_key)).toBeUndefined()
      expect(await get(h, old.business_account_id, old.query_key)).toBeUndefined()
      expect(await fetchedAt(h, old.business_account_id, oldOtherQuery.query_key)).toBeUndefined()
      expect(await get(h, atTheInstant.business_account_id, atTheInstant.query_key)).toEqual(atTheInstant)
      expect(await get(h, recent.business_account_id, recent.query_key)).toEqual(recent)
      expect(await prune(h, "2001-03-01T10:00:00.000Z")).toBe(0)
    })
  }
})
