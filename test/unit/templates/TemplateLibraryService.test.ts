import { Deferred, Effect, Exit, Fiber, Layer } from "effect"
import { TestClock } from "effect/testing"
import fc from "fast-check"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { KyselyConnection } from "../../../adapters/kysely/Connection.ts"
import { type Database, migrate, openSqlite } from "../../../adapters/kysely/KyselyStorage.ts"
import { libraryCacheStoreLayer } from "../../../adapters/kysely/stores/LibraryCacheStoreKysely.ts"
import type { Kysely } from "kysely"
import { ChatPlatform, type ChatappCredentials, type ChatappLibraryTemplate, ChatPlatformError, type ChatPlatformErrorKind } from "../../../src/ports/ChatPlatform.ts"
import { copyAge, LIBRARY_FALLBACK_MS, LIBRARY_FRESH_MS, LIBRARY_RETRY_AFTER_MS } from "../../../src/templates/LibraryCache.ts"
import { TemplateLibraryService } from "../../../src/templates/TemplateLibraryService.ts"

// The library cache under the test clock, over a real SQLite store: fresh for 12 hours, then read
// again; a copy up to 14 days old stands in when the operator rate-limits or is unreachable.

const HOUR = 3_600_000
const DAY = 24 * HOUR

type Mode = "ok" | ChatPlatformErrorKind

/** A fake operator whose library answers with its `version` (so a test sees which copy it got), or fails as `mode` says. */
const makeOperator = () => {
  const state = { mode: "ok" as Mode, calls: 0, version: 0, gate: undefined as Deferred.Deferred<void> | undefined }
  const die = () => Effect.die("not used by the library cache")
  const platform = ChatPlatform.of({
    name: "fake",
    sendMessage: die,
    listTemplates: die,
    createTemplate: die,
    phoneNumber: die,
    fetchMedia: die,
    uploadMedia: die,
    browseLibrary: (_credentials, query) =>
      Effect.gen(function*() {
        state.calls += 1
        if (state.gate !== undefined) yield* Deferred.await(state.gate)
        if (state.mode !== "ok") {
          return yield* new ChatPlatformError({
            kind: state.mode,
            code: state.mode === "rate_limited" ? 80007 : state.mode === "transient" ? 2 : 190,
            subcode: null,
            message: `operator ${state.mode}`,
            userTitle: null,
            userMessage: null,
            fbtraceId: "trace",
            httpStatus: state.mode === "transient" ? 503 : 400
          })
        }
        state.version += 1
        const entry: ChatappLibraryTemplate = {
          name: `entry_v${state.version}`,
          language: query.language ?? "en_US",
          category: "UTILITY",
          topic: "ORDER_MANAGEMENT",
          usecase: "ORDER_CONFIRMATION",
          industry: ["E_COMMERCE"],
          body: "Hi {{1}}",
          body_params: ["Maria"]
        }
        return [entry]
      })
  })
  return { state, platform }
}

let db: Kysely<Database>
beforeAll(async () => {
  db = openSqlite(":memory:")
  await migrate(db, "sqlite")
})
afterAll(() => db.destroy())

let accounts = 0
/** Credentials of a business account of its own, so tests sharing the database never share copies. */
const credentials = (): ChatappCredentials => ({
  phoneNumberId: "1065550100",
  businessAccountId: `99${String(++accounts).padStart(8, "0")}`,
  accessToken: "EAAGtesttokenabcdefghijklmnop"
})

/** A library service (one "process") over the shared store and the given operator. */
const serviceLayer = (platform: ChatPlatform["Service"]) =>
  TemplateLibraryService.layer.pipe(
    Layer.provide(Layer.succeed(ChatPlatform, platform)),
    Layer.provide(libraryCacheStoreLayer),
    Layer.provide(Layer.succeed(KyselyConnection, KyselyConnection.of({ db, dialect: "sqlite" })))
  )

const onTestClock = <A, E>(effect: Effect.Effect<A, E, TemplateLibraryService>, platform: ChatPlatform["Service"]) =>
  Effect.runPromise(Effect.scoped(effect.pipe(Effect.provide(serviceLayer(platform)), Effect.provide(TestClock.layer()))))

const browse = (who: ChatappCredentials, language = "en_US") =>
  Effect.flatMap(TemplateLibraryService, (library) => library.browse(who, { language }))

describe("copyAge", () => {
  it("is fresh until exactly 12 hours, a fallback until exactly 14 days, then expired", () => {
    expect(copyAge(0, LIBRARY_FRESH_MS - 1)).toBe("fresh")
    expect(copyAge(0, LIBRARY_FRESH_MS)).toBe("fallback")
    expect(copyAge(0, LIBRARY_FALLBACK_MS - 1)).toBe("fallback")
    expect(copyAge(0, LIBRARY_FALLBACK_MS)).toBe("expired")
    expect(copyAge(10_000, 0)).toBe("fresh")
  })
})

describe("the library cache", () => {
  it("serves a copy for 12 hours without asking the operator, and reads again at exactly 12 hours", async () => {
    const { state, platform } = makeOperator()
    const who = credentials()
    await onTestClock(Effect.gen(function*() {
      expect((yield* browse(who)).entries[0]!.name).toBe("entry_v1")
      yield* TestClock.adjust(LIBRARY_FRESH_MS - 1)
      const cached = yield* browse(who)
      expect(cached).toMatchObject({ stale: false, warning: null })
      expect(cached.entries[0]!.name).toBe("entry_v1")
      expect(state.calls).toBe(1)
      yield* TestClock.adjust(1)
      expect((yield* browse(who)).entries[0]!.name).toBe("entry_v2")
      expect(state.calls).toBe(2)
    }), platform)
  })

  it("keeps copies per business account and per query", async () => {
    const { state, platform } = makeOperator()
    const [one, two] = [credentials(), credentials()]
    await onTestClock(Effect.gen(function*() {
      yield* browse(one, "en_US")
      yield* browse(one, "es_ES")
      yield* browse(two, "en_US")
      yield* browse(one, " en_US ")
      expect(state.calls).toBe(3)
    }), platform)
  })

  it("serves the last copy as stale, with a warning, when the operator rate-limits or is unreachable, up to 14 days", async () => {
    for (const failing of ["rate_limited", "transient"] as const) {
      const { state, platform } = makeOperator()
      const who = credentials()
      await onTestClock(Effect.gen(function*() {
        yield* browse(who)
        state.mode = failing
        yield* TestClock.adjust(LIBRARY_FRESH_MS)
        const stale = yield* browse(who)
        expect(stale.stale).toBe(true)
        expect(stale.entries[0]!.name).toBe("entry_v1")
        expect(stale.warning).toContain(failing === "rate_limited" ? "rate-limiting" : "cannot be reached")
        expect(stale.warning).toContain("12 hours old")
        yield* TestClock.adjust(LIBRARY_FALLBACK_MS - LIBRARY_FRESH_MS - 1)
        expect((yield* browse(who)).stale).toBe(true)
        yield* TestClock.adjust(1)
        const expired = yield* Effect.exit(browse(who))
        expect(Exit.isFailure(expired)).toBe(true)
        expect(JSON.stringify(expired)).toContain(failing)
      }), platform)
    }
  })

  it("does not stand in for an operator that refuses outright, and fails with nothing cached", async () => {
    const { state, platform } = makeOperator()
    const who = credentials()
    await onTestClock(Effect.gen(function*() {
      state.mode = "rate_limited"
      expect(JSON.stringify(yield* Effect.exit(browse(who)))).toContain("rate_limited")
      state.mode = "ok"
      yield* browse(who)
      state.mode = "auth"
      yield* TestClock.adjust(LIBRARY_FRESH_MS)
      expect(JSON.stringify(yield* Effect.exit(browse(who)))).toContain("auth")
    }), platform)
  })

  it("after a failed refresh, serves the stale copy for a minute without asking again, then asks", async () => {
    const { state, platform } = makeOperator()
    const who = credentials()
    await onTestClock(Effect.gen(function*() {
      yield* browse(who)
      state.mode = "rate_limited"
      yield* TestClock.adjust(LIBRARY_FRESH_MS)
      yield* browse(who)
      expect(state.calls).toBe(2)
      yield* TestClock.adjust(LIBRARY_RETRY_AFTER_MS - 1)
      expect((yield* browse(who)).stale).toBe(true)
      expect(state.calls).toBe(2)
      state.mode = "ok"
      yield* TestClock.adjust(1)
      const fresh = yield* browse(who)
      expect(fresh).toMatchObject({ stale: false })
      expect(fresh.entries[0]!.name).toBe("entry_v2")
      expect(state.calls).toBe(3)
    }), platform)
  })

  it("makes one operator call for a burst of identical browses on a cold cache", async () => {
    const { state, platform } = makeOperator()
    const who = credentials()
    await onTestClock(Effect.gen(function*() {
      state.gate = yield* Deferred.make<void>()
      const burst = yield* Effect.forkChild(Effect.all(Array.from({ length: 20 }, () => browse(who)), { concurrency: "unbounded" }))
      yield* Effect.yieldNow
      yield* Deferred.succeed(state.gate, undefined)
      const answers = yield* Fiber.join(burst)
      expect(answers.map((answer) => answer.entries[0]!.name)).toEqual(Array(20).fill("entry_v1"))
      expect(state.calls).toBe(1)
    }), platform)
  })

  it("shares copies through the store: a second process serves the first one's copy without asking", async () => {
    const first = makeOperator()
    const second = makeOperator()
    const who = credentials()
    await onTestClock(browse(who), first.platform)
    const served = await onTestClock(browse(who), second.platform)
    expect(served.entries[0]!.name).toBe("entry_v1")
    expect(second.state.calls).toBe(0)
  })
})

// The model: what the cache rule says a browse answers, from when the last copy was fetched.
type Action = { readonly advance: number } | { readonly mode: Mode } | { readonly browse: true }
const ACTIONS: fc.Arbitrary<Action> = fc.oneof(
  fc.constantFrom(1, HOUR, 6 * HOUR, 12 * HOUR - 1, 12 * HOUR, 13 * HOUR, 3 * DAY, 13 * DAY, 14 * DAY, 15 * DAY, LIBRARY_RETRY_AFTER_MS)
    .map((advance) => ({ advance })),
  fc.constantFrom<Mode>("ok", "rate_limited", "transient", "auth", "other").map((mode) => ({ mode })),
  fc.constant({ browse: true as const })
)

describe("the library cache against a model", () => {
  it("answers every sequence of browses, clock moves and operator moods as the rule says", async () => {
    await fc.assert(fc.asyncProperty(fc.array(ACTIONS, { minLength: 1, maxLength: 30 }), async (actions) => {
      const { state, platform } = makeOperator()
      const who = credentials()
      await onTestClock(Effect.gen(function*() {
        let clock = 0
        let fetched: number | null = null
        let retryAfter = 0
        let version = 0
        for (const action of actions) {
          if ("advance" in action) {
            clock += action.advance
            yield* TestClock.adjust(action.advance)
            continue
          }
          if ("mode" in action) {
            state.mode = action.mode
            continue
          }
          const calls = state.calls
          const answer = yield* Effect.exit(browse(who))
          const age = fetched === null ? null : clock - fetched
          if (age !== null && age < LIBRARY_FRESH_MS) {
            expect(answer).toMatchObject({ _tag: "Success", value: { stale: false } })
            expect(state.calls).toBe(calls)
          } else if (age !== null && age < LIBRARY_FALLBACK_MS && clock < retryAfter) {
            expect(answer).toMatchObject({ _tag: "Success", value: { stale: true } })
            expect(state.calls).toBe(calls)
          } else {
            expect(state.calls).toBe(calls + 1)
            if (state.mode === "ok") {
              version += 1
              fetched = clock
              retryAfter = 0
              expect(answer).toMatchObject({ _tag: "Success", value: { stale: false } })
            } else if ((state.mode === "rate_limited" || state.mode === "transient") && age !== null && age < LIBRARY_FALLBACK_MS) {
              retryAfter = clock + LIBRARY_RETRY_AFTER_MS
              expect(answer).toMatchObject({ _tag: "Success", value: { stale: true } })
            } else {
              expect(answer._tag).toBe("Failure")
            }
          }
          if (answer._tag === "Success") expect(answer.value.entries[0]!.name).toBe(`entry_v${version}`)
        }
      }), platform)
    }), { numRuns: 60 })
  })
})
