import { Clock, Context, Deferred, Effect, Layer, Option } from "effect"
import type { StorageError } from "../kernel/StorageError.ts"
import { isRateLimitKind } from "../kernel/OperatorErrorKind.ts"
import { ChatPlatform, type ChatappCredentials, type ChatappLibraryTemplate, type ChatPlatformError, type LibraryQuery } from "../ports/ChatPlatform.ts"
import { LibraryCacheStore } from "../ports/LibraryCacheStore.ts"
import { copyAge, LIBRARY_FALLBACK_MS, LIBRARY_RETRY_AFTER_MS, staleWarning } from "./LibraryCache.ts"
import { entryFragments, facetsOf, type LibraryEntry, libraryEntryOf, type LibraryFacets, libraryQueryKey, normalQuery } from "./LibraryEntry.ts"

/** One answer of the library: the matched entries, their facets, and whether a fallback copy stands in. */
export interface LibraryCopy {
  readonly entries: ReadonlyArray<LibraryEntry>
  readonly facets: LibraryFacets
  readonly fetchedAt: string
  readonly stale: boolean
  readonly warning: string | null
  /** Each entry's JSON text around its `already_added` (`entryFragments`), written once per copy. */
  readonly fragments: () => ReadonlyArray<readonly [string, string]>
}

/** A copy held in this process, parsed once. */
interface Held {
  readonly entries: ReadonlyArray<LibraryEntry>
  readonly facets: LibraryFacets
  readonly fetchedAt: string
  readonly fetchedAtMs: number
  /** Until when a failed refresh keeps the operator from being asked again. */
  retryAfterMs: number
  /** Why the last refresh failed, while `retryAfterMs` holds. */
  failure: "rate_limited" | "unavailable" | null
  /** The entries' JSON pieces, once a browse has asked for them. */
  fragments?: ReadonlyArray<readonly [string, string]>
}

/** Copies held per process at most; the least recently used go first. */
const HELD_COPIES = 256
/** How often a process removes copies past the fallback age from the store. */
const PRUNE_EVERY_MS = 60 * 60 * 1000

const heldOf = (raw: ReadonlyArray<ChatappLibraryTemplate>, fetchedAt: string): Held => {
  const entries = raw.map(libraryEntryOf)
  return { entries, facets: facetsOf(entries), fetchedAt, fetchedAtMs: Date.parse(fetchedAt), retryAfterMs: 0, failure: null }
}

const parseStored = (entries: string, fetchedAt: string): Option.Option<Held> => {
  try {
    const parsed: unknown = JSON.parse(entries)
    return Array.isArray(parsed) ? Option.some(heldOf(parsed as ReadonlyArray<ChatappLibraryTemplate>, fetchedAt)) : Option.none()
  } catch {
    return Option.none()
  }
}

/**
 * The operator's template library behind a cache per business account and query: a copy is served
 * for 12 hours without asking the operator; after that it is read again, and when the operator is
 * rate-limiting or unreachable the last copy (up to 14 days old) is served as stale. Copies live in
 * the store, so every process on the database shares them, and in each process parsed; identical
 * browses arriving while a copy is being read wait for that one read.
 */
export class TemplateLibraryService extends Context.Service<TemplateLibraryService, {
  readonly browse: (
    credentials: ChatappCredentials,
    query: LibraryQuery
  ) => Effect.Effect<LibraryCopy, ChatPlatformError | StorageError>
  /**
   * The entry of that name and language in any copy kept for the business account, however old,
   * without asking the operator: in this process's copies, else in the stored copies of the browses
   * that would hold it (by name and language, by language, unfiltered).
   */
  readonly cachedEntry: (
    credentials: ChatappCredentials,
    name: string,
    language: string
  ) => Effect.Effect<Option.Option<LibraryEntry>, StorageError>
}>()("omnichannel-core/templates/TemplateLibraryService") {
  static readonly layer = Layer.effect(
    TemplateLibraryService,
    Effect.gen(function*() {
      const platform = yield* ChatPlatform
      const store = yield* LibraryCacheStore
      // A Map iterates in insertion order: deleting and setting again on a hit keeps it in use order.
      const held = new Map<string, Held>()
      const reading = new Map<string, Deferred.Deferred<LibraryCopy, ChatPlatformError | StorageError>>()
      let prunedAtMs = 0

      const remember = (key: string, copy: Held) => {
        held.delete(key)
        if (held.size >= HELD_COPIES) held.delete(held.keys().next().value!)
        held.set(key, copy)
      }
      const served = (copy: Held, stale: boolean, nowMs: number): LibraryCopy => ({
        entries: copy.entries,
        facets: copy.facets,
        fetchedAt: copy.fetchedAt,
        stale,
        warning: stale ? staleWarning(copy.failure ?? "unavailable", copy.fetchedAt, nowMs) : null,
        fragments: () => (copy.fragments ??= copy.entries.map(entryFragments))
      })

      const prune = (nowMs: number) =>
        nowMs - prunedAtMs < PRUNE_EVERY_MS
          ? Effect.void
          : Effect.suspend(() => {
            prunedAtMs = nowMs
            return store.prune(new Date(nowMs - LIBRARY_FALLBACK_MS).toISOString()).pipe(Effect.ignore)
          })

      /** A copy another process stored since this one read, if there is a newer one. */
      const newerStored = Effect.fnUntraced(function*(account: string, queryKey: string, mine: Held | undefined) {
        const storedAt = yield* store.fetchedAt(account, queryKey)
        if (Option.isNone(storedAt) || (mine !== undefined && Date.parse(storedAt.value) <= mine.fetchedAtMs)) {
          return Option.none<Held>()
        }
        const row = yield* store.get(account, queryKey)
        return Option.flatMap(row, (found) => parseStored(found.entries, found.fetched_at))
      })

      const refresh = (credentials: ChatappCredentials, query: LibraryQuery, key: string, queryKey: string) =>
        Effect.gen(function*() {
          const account = credentials.businessAccountId
          let copy = held.get(key)
          const stored = yield* newerStored(account, queryKey, copy)
          if (Option.isSome(stored)) {
            copy = stored.value
            remember(key, copy)
          }
          const nowMs = yield* Clock.currentTimeMillis
          if (copy !== undefined && copyAge(copy.fetchedAtMs, nowMs) === "fresh") return served(copy, false, nowMs)
          if (copy !== undefined && copyAge(copy.fetchedAtMs, nowMs) === "fallback" && nowMs < copy.retryAfterMs) {
            return served(copy, true, nowMs)
          }
          const answer = yield* Effect.result(platform.browseLibrary(credentials, query))
          const answeredMs = yield* Clock.currentTimeMillis
          if (answer._tag === "Success") {
            const fetchedAt = new Date(answeredMs).toISOString()
            yield* store.put({ business_account_id: account, query_key: queryKey, entries: JSON.stringify(answer.success), fetched_at: fetchedAt })
            yield* prune(answeredMs)
            const fresh = heldOf(answer.success, fetchedAt)
            remember(key, fresh)
            return served(fresh, false, answeredMs)
          }
          const error = answer.failure
          if (error.retryable && copy !== undefined && copyAge(copy.fetchedAtMs, answeredMs) !== "expired") {
            copy.retryAfterMs = answeredMs + LIBRARY_RETRY_AFTER_MS
            copy.failure = isRateLimitKind(error.kind) ? "rate_limited" : "unavailable"
            return served(copy, true, answeredMs)
          }
          return yield* Effect.fail(error)
        })

      const findIn = (entries: ReadonlyArray<LibraryEntry>, name: string, language: string) =>
        Option.fromNullishOr(entries.find((entry) => entry.name === name && entry.language === language))

      return TemplateLibraryService.of({
        cachedEntry: Effect.fn("TemplateLibraryService.cachedEntry")(function*(credentials, name, language) {
          const account = `${credentials.businessAccountId}\n`
          for (const [key, copy] of held) {
            if (!key.startsWith(account)) continue
            const found = findIn(copy.entries, name, language)
            if (Option.isSome(found)) return found
          }
          for (const query of [{ name, language }, { language }, {}]) {
            const row = yield* store.get(credentials.businessAccountId, libraryQueryKey(query))
            const copy = Option.flatMap(row, (found) => parseStored(found.entries, found.fetched_at))
            const found = Option.flatMap(copy, (parsed) => findIn(parsed.entries, name, language))
            if (Option.isSome(found)) return found
          }
          return Option.none()
        }),
        browse: Effect.fn("TemplateLibraryService.browse")(function*(credentials, rawQuery) {
          const query = normalQuery(rawQuery)
          const queryKey = libraryQueryKey(query)
          const key = `${credentials.businessAccountId}\n${queryKey}`
          const nowMs = yield* Clock.currentTimeMillis
          const copy = held.get(key)
          if (copy !== undefined && copyAge(copy.fetchedAtMs, nowMs) === "fresh") {
            remember(key, copy)
            return served(copy, false, nowMs)
          }
          // One read per key at a time: later browses wait for it. It runs detached, so a caller that
          // goes away does not cancel the others' answer.
          const running = reading.get(key)
          if (running !== undefined) return yield* Deferred.await(running)
          const deferred = Deferred.makeUnsafe<LibraryCopy, ChatPlatformError | StorageError>()
          reading.set(key, deferred)
          // The key is free again before anyone hears the outcome, so a browse after it starts afresh.
          const release = Effect.sync(() => {
            if (reading.get(key) === deferred) reading.delete(key)
          })
          yield* refresh(credentials, query, key, queryKey).pipe(
            Effect.exit,
            Effect.flatMap((exit) => Effect.andThen(release, Deferred.done(deferred, exit))),
            Effect.ensuring(release),
            Effect.forkDetach
          )
          return yield* Deferred.await(deferred)
        })
      })
    })
  )
}
