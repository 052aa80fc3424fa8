import { Effect, Fiber, Latch, Option } from "effect"
import { describe, expect, it } from "vitest"
import type { AccountStore } from "../../src/ports/AccountStore.ts"
import { type ConnectTokenRecord, ConnectTokenStore } from "../../src/ports/ConnectTokenStore.ts"
import type { TenantStore } from "../../src/ports/TenantStore.ts"
import { Transactor } from "../../src/ports/Transactor.ts"
import { connectTokenRecord, seedTenant } from "./Fixtures.ts"
import { makeSuite, type Suite, type UseHarness } from "./Harness.ts"

const CONCURRENT = 8

const NEEDS_CONNECTIONS = "needs several connections: the adapter runs one transaction at a time"

const insert = (token: ConnectTokenRecord) => ConnectTokenStore.use((s) => s.insert(token))

type UseTokens = UseHarness<ConnectTokenStore, "connectTokens">

const getToken = (h: UseTokens, tenantId: string, id: string) =>
  h().run(ConnectTokenStore.use((s) => s.get(tenantId, id))).then(Option.getOrUndefined)

const compareAndSet = (h: UseTokens, expected: ConnectTokenRecord, next: ConnectTokenRecord) =>
  h().run(ConnectTokenStore.use((s) => s.compareAndSet(expected, next)))

// What a use writes: one more use, and the window its first use opened.
const used = (token: ConnectTokenRecord): ConnectTokenRecord => ({
  ...token,
  uses_count: token.uses_count + 1,
  use_window_ends_at: token.use_window_ends_at ?? "2026-11-22T10:45:30.123Z"
})

const revoked = (token: ConnectTokenRecord, at = "2026-11-22T11:00:00.000Z"): ConnectTokenRecord => ({ ...token, revoked_at: at })

// A fresh tenant holding one unused token.
const oneToken = Effect.gen(function*() {
  const { tenant } = yield* seedTenant
  const token = connectTokenRecord(tenant.id)
  yield* insert(token)
  return { tenant, token }
})

/**
 * ConnectTokenStore: every field round-trips; the link's lookup finds a token whatever its tenant;
 * everything else stays in the tenant; compareAndSet writes a use or a revocation only over the
 * row it was computed from, so of several writers racing from one read exactly one wins, in
 * transactions too (hence the Transactor). Needs TenantStore and AccountStore for the tenants tokens
 * belong to.
 */
export const connectTokenStoreSuite: Suite<ConnectTokenStore | Transactor | TenantStore | AccountStore, "connectTokens"> = makeSuite({
  name: "ConnectTokenStore",
  tables: ["connectTokens"],
  tests: (h) => {
    it("stores every field, with unicode and several channel types in order, and reads it back unchanged", async () => {
      const { tenant } = await h().run(seedTenant)
      const token = connectTokenRecord(tenant.id, {
        name: "Onboarding — São Paulo 🚀",
        allowed_channel_types: ["sms", "chatapp", "smtp_imap", "relay_a_byok"],
        partner_name: "Zoë's \"Partner\" <Agency> 山田",
        partner_redirect_url: "https://partner.example/done?tenant=ä&x=1#frag",
        expires_at: "2026-11-29T10:15:30.123Z",
        max_uses: 100,
        uses_count: 7,
        use_window_minutes: 1440,
        use_window_ends_at: "2026-11-23T10:15:30.123Z",
        revoked_at: "2026-11-22T12:00:00.001Z"
      })
      await h().run(insert(token))

      expect(await h().stored.connectTokens(tenant.id)).toEqual([token])
      expect(await getToken(h, tenant.id, token.id)).toEqual(token)
    })

    it("finds a token by its link's lookup, whatever the tenant, and nothing for an unknown lookup", async () => {
      const { token } = await h().run(oneToken)
      const findByLookup = (lookup: string) =>
        h().run(ConnectTokenStore.use((s) => s.findByLookup(lookup))).then(Option.getOrUndefined)

      expect(await findByLookup(token.lookup)).toEqual(token)
      expect(await findByLookup(connectTokenRecord(token.tenant_id).lookup)).toBeUndefined()
    })

    it("lists newest first, one window at a time, with the tenant's total on every page", async () => {
      const { tenant } = await h().run(seedTenant)
      const tokens = Array.from({ length: 5 }, (_, i) =>
        connectTokenRecord(tenant.id, { name: `Link ${i}`, created_at: `2026-11-22T10:0${i}:00.000Z` }))
      await h().run(Effect.forEach(tokens, insert, { discard: true }))
      const page = (offset: number) => h().run(ConnectTokenStore.use((s) => s.list(tenant.id, { limit: 2, offset })))
      const [t0, t1, t2, t3, t4] = tokens

      expect(await page(0)).toEqual({ items: [t4, t3], total: 5 })
      expect(await page(2)).toEqual({ items: [t2, t1], total: 5 })
      expect(await page(4)).toEqual({ items: [t0], total: 5 })
    })

    it("returns nothing for another tenant's token and lists only the tenant's own", async () => {
      const { token: tokenOfA, tenant: a } = await h().run(oneToken)
      const { token: tokenOfB, tenant: b } = await h().run(oneToken)

      expect(await getToken(h, a.id, tokenOfB.id)).toBeUndefined()
      expect(await h().run(ConnectTokenStore.use((s) => s.list(a.id, { limit: 50, offset: 0 }))))
        .toEqual({ items: [tokenOfA], total: 1 })
      expect(await h().stored.connectTokens(b.id)).toEqual([tokenOfB])
    })

    describe("compareAndSet", () => {
      it("writes a use over the row it was read from and reports that it did", async () => {
        const { tenant, token } = await h().run(oneToken)

        expect(await compareAndSet(h, token, used(token))).toBe(true)
        expect(await h().stored.connectTokens(tenant.id)).toEqual([used(token)])
      })

      it("writes a revocation over the row it was read from", async () => {
        const { tenant, token } = await h().run(oneToken)

        expect(await compareAndSet(h, token, revoked(token))).toBe(true)
        expect(await h().stored.connectTokens(tenant.id)).toEqual([revoked(token)])
      })

      it("writes only uses_count, use_window_ends_at and revoked_at, whatever else `next` says", async () => {
        const { tenant, token } = await h().run(oneToken)
        const next = {
          ...used(token),
          partner_name: "Changed",
          max_uses: 1,
          expires_at: "2030-01-01T00:00:00.000Z",
          allowed_channel_types: ["sms"]
        }

        expect(await compareAndSet(h, token, next)).toBe(true)
        expect(await h().stored.connectTokens(tenant.id)).toEqual([used(token)])
      })

      it("fails and writes nothing when uses_count changed since the read", async () => {
        const { tenant, token } = await h().run(oneToken)
        expect(await compareAndSet(h, token, used(token))).toBe(true)

        expect(await compareAndSet(h, token, used(token))).toBe(false)
        expect(await compareAndSet(h, token, revoked(token))).toBe(false)
        expect(await h().stored.connectTokens(tenant.id)).toEqual([used(token)])
      })

      it("fails and writes nothing when the token was revoked since the read", async () => {
        const { tenant, token } = await h().run(oneToken)
        expect(await compareAndSet(h, token, revoked(token))).toBe(true)

        expect(await compareAndSet(h, token, used(token))).toBe(false)
        expect(await h().stored.connectTokens(tenant.id)).toEqual([revoked(token)])
      })

      it("matches a read of a revoked token only at the same revoked_at", async () => {
        const { tenant, token } = await h().run(oneToken)
        const revokedAtEleven = revoked(token, "2026-11-22T11:00:00.000Z")
        expect(await compareAndSet(h, token, revokedAtEleven)).toBe(true)

        const readAtOtherTime = revoked(token, "2026-11-22T11:30:00.000Z")
        expect(await compareAndSet(h, readAtOtherTime, used(readAtOtherTime))).toBe(false)
        expect(await compareAndSet(h, revokedAtEleven, used(revokedAtEleven))).toBe(true)
        expect(await h().stored.connectTokens(tenant.id)).toEqual([used(revokedAtEleven)])
      })

      it("fails for another tenant's token and for an unknown one, and changes nothing", async () => {
        const { tenant: a } = await h().run(oneToken)
        const { tenant: b, token: tokenOfB } = await h().run(oneToken)
        const asIfOfA = { ...tokenOfB, tenant_id: a.id }

        expect(await compareAndSet(h, asIfOfA, used(asIfOfA))).toBe(false)
        const ghost = connectTokenRecord(b.id)
        expect(await compareAndSet(h, ghost, used(ghost))).toBe(false)
        expect(await h().stored.connectTokens(b.id)).toEqual([tokenOfB])
      })

      it(`lets exactly one of ${CONCURRENT} concurrent writers from the same read win`, async () => {
        const { tenant, token } = await h().run(oneToken)

        const results = await h().run(Effect.forEach(
          Array.from({ length: CONCURRENT }, () => token),
          (read) => ConnectTokenStore.use((s) => s.compareAndSet(read, used(read))),
          { concurrency: "unbounded" }
        ))

        expect(results.filter(Boolean)).toHaveLength(1)
        expect(await h().stored.connectTokens(tenant.id)).toEqual([used(token)])
      })

      it(`lets exactly one of ${CONCURRENT} transactions that all read the token before any writes win (needs several connections)`, async (ctx) => {
        ctx.skip(!h().capabilities.concurrentConnections, NEEDS_CONNECTIONS)
        const { tenant, token } = await h().run(oneToken)

        const results = await h().run(Effect.gen(function*() {
          const allRead = yield* Latch.make(false)
          let reads = 0
          // Each transaction reads the token, waits until every other one has read it too, then writes a use.
          const readThenUse = Transactor.use((t) => t.withTransaction(Effect.gen(function*() {
            const read = Option.getOrThrow(yield* ConnectTokenStore.use((s) => s.get(tenant.id, token.id)))
            if (++reads === CONCURRENT) yield* Latch.open(allRead)
            yield* Latch.await(allRead)
            return yield* ConnectTokenStore.use((s) => s.compareAndSet(read, used(read)))
          })))
          const fibers = yield* Effect.forEach(Array.from({ length: CONCURRENT }), () => Effect.forkChild(readThenUse))
          return yield* Fiber.joinAll(fibers)
        }))

        expect(results.filter(Boolean)).toHaveLength(1)
        expect(await h().stored.connectTokens(tenant.id)).toEqual([used(token)])
      })
    })
  }
})
