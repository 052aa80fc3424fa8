import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { makeAdvanceTime } from "../support/AdvanceTime.ts"
import {
  type ConnectTokenState,
  type ConnectTokenStatus,
  statusAt,
  transition
} from "../../src/connect-tokens/ConnectTokenMachine.ts"

const MINUTE = 60_000
const HOUR = 60 * MINUTE
const T0 = Date.parse("2026-11-22T12:00:00.000Z")

const at = (ms: number): string => new Date(ms).toISOString()

/** A token created at T0 with the spec's defaults: 24 hours, 10 uses, a 30-minute use window. */
const token = (overrides: Partial<ConnectTokenState> = {}): ConnectTokenState => ({
  expires_at: at(T0 + 24 * HOUR),
  max_uses: 10,
  uses_count: 0,
  use_window_minutes: 30,
  use_window_ends_at: null,
  revoked_at: null,
  ...overrides
})

const revoke = (state: ConnectTokenState, now: number) => transition(state, { _tag: "Revoke" }, at(now))
const use = (state: ConnectTokenState, now: number) => transition(state, { _tag: "Use" }, at(now))

describe("connect token transitions", () => {
  it("starts valid", () => {
    expect(statusAt(token(), at(T0))).toBe("valid")
  })

  it("moves valid → revoked on Revoke, at that moment, with nothing else to do", () => {
    const { intents, state } = revoke(token(), T0 + MINUTE)
    expect(state).toEqual(token({ revoked_at: at(T0 + MINUTE) }))
    expect(statusAt(state, at(T0 + MINUTE))).toBe("revoked")
    expect(intents).toEqual([])
  })

  it("keeps the first revocation time when revoked twice", () => {
    const once = revoke(token(), T0 + MINUTE).state
    const twice = revoke(once, T0 + 2 * MINUTE)
    expect(twice.state).toBe(once)
    expect(twice.state.revoked_at).toBe(at(T0 + MINUTE))
    expect(twice.intents).toEqual([])
  })

  it("reads revoked even when the token has also expired or run out of uses", () => {
    const revoked = token({ revoked_at: at(T0), uses_count: 10 })
    expect(statusAt(revoked, at(T0 + 48 * HOUR))).toBe("revoked")
  })

  it("moves valid → expired when expires_at is reached, not a millisecond before", () => {
    const state = token()
    expect(statusAt(state, at(T0 + 24 * HOUR - 1))).toBe("valid")
    expect(statusAt(state, at(T0 + 24 * HOUR))).toBe("expired")
  })

  it("counts the first use, opens the use window and asks for a channel", () => {
    const { intents, state } = use(token(), T0 + HOUR)
    expect(state).toEqual(token({ uses_count: 1, use_window_ends_at: at(T0 + HOUR + 30 * MINUTE) }))
    expect(intents).toEqual([{ _tag: "CreateChannel" }])
  })

  it("accepts further uses inside the use window without moving its end", () => {
    const first = use(token(), T0).state
    const second = use(first, T0 + 30 * MINUTE - 1)
    expect(second.state).toEqual(token({ uses_count: 2, use_window_ends_at: at(T0 + 30 * MINUTE) }))
    expect(second.intents).toEqual([{ _tag: "CreateChannel" }])
  })

  it("moves to expired once use_window_minutes have passed since the first use, before expires_at", () => {
    const first = use(token({ use_window_minutes: 5 }), T0).state
    expect(statusAt(first, at(T0 + 5 * MINUTE - 1))).toBe("valid")
    expect(statusAt(first, at(T0 + 5 * MINUTE))).toBe("expired")
    const late = use(first, T0 + 5 * MINUTE)
    expect(late.state).toBe(first)
    expect(late.intents).toEqual([{ _tag: "RejectUse", status: "expired" }])
  })

  it("moves valid → exhausted when uses_count reaches max_uses", () => {
    const almost = token({ max_uses: 2, uses_count: 1, use_window_ends_at: at(T0 + 30 * MINUTE) })
    expect(statusAt(almost, at(T0))).toBe("valid")
    const { intents, state } = use(almost, T0)
    expect(state.uses_count).toBe(2)
    expect(intents).toEqual([{ _tag: "CreateChannel" }])
    expect(statusAt(state, at(T0))).toBe("exhausted")
  })

  it("stays exhausted after expires_at and after the use window", () => {
    const exhausted = use(token({ max_uses: 1 }), T0).state
    expect(statusAt(exhausted, at(T0 + 31 * MINUTE))).toBe("exhausted")
    expect(statusAt(exhausted, at(T0 + 25 * HOUR))).toBe("exhausted")
  })

  it.each<[Exclude<ConnectTokenStatus, "valid">, ConnectTokenState, number]>([
    ["revoked", token({ revoked_at: at(T0) }), T0],
    ["expired", token(), T0 + 24 * HOUR],
    ["exhausted", token({ max_uses: 3, uses_count: 3 }), T0]
  ])("rejects a use of a %s token with that status and leaves it unchanged", (status, state, now) => {
    const { intents, state: next } = use(state, now)
    expect(intents).toEqual([{ _tag: "RejectUse", status }])
    expect(next).toBe(state)
  })
})

/** The model: what the spec says, with times as plain milliseconds. */
interface Model {
  now: number
  readonly expiresAt: number
  readonly maxUses: number
  readonly windowMs: number
  uses: number
  /** When the first use happened, if it did. */
  firstUseAt: number | undefined
  revokedAt: number | undefined
}

/** The machine under test, fed one event at a time. */
interface Real {
  now: number
  state: ConnectTokenState
}

const modelStatus = (m: Model): ConnectTokenStatus => {
  if (m.revokedAt !== undefined) return "revoked"
  if (m.uses >= m.maxUses) return "exhausted"
  if (m.now >= m.expiresAt) return "expired"
  if (m.firstUseAt !== undefined && m.now >= m.firstUseAt + m.windowMs) return "expired"
  return "valid"
}

const agree = (m: Model, r: Real) => {
  expect(statusAt(r.state, at(r.now))).toBe(modelStatus(m))
  expect(r.state.uses_count).toBe(m.uses)
  expect(r.state.revoked_at).toBe(m.revokedAt === undefined ? null : at(m.revokedAt))
  expect(r.state.use_window_ends_at).toBe(m.firstUseAt === undefined ? null : at(m.firstUseAt + m.windowMs))
}

class UseCommand implements fc.Command<Model, Real> {
  check = () => true
  run(m: Model, r: Real) {
    const before = modelStatus(m)
    const { intents, state } = use(r.state, r.now)
    if (before === "valid") {
      expect(intents).toEqual([{ _tag: "CreateChannel" }])
      m.uses += 1
      m.firstUseAt ??= m.now
    } else {
      expect(intents).toEqual([{ _tag: "RejectUse", status: before }])
    }
    r.state = state
    agree(m, r)
  }
  toString = () => "Use"
}

class RevokeCommand implements fc.Command<Model, Real> {
  check = () => true
  run(m: Model, r: Real) {
    const { intents, state } = revoke(r.state, r.now)
    expect(intents).toEqual([])
    m.revokedAt ??= m.now
    r.state = state
    agree(m, r)
  }
  toString = () => "Revoke"
}

const AdvanceTimeCommand = makeAdvanceTime<Model, Real>(agree)

// Round steps land exactly on a window's end or on expires_at, a millisecond just past one; others fall anywhere.
const advance = fc.oneof(
  fc.constantFrom(1, MINUTE, 5 * MINUTE, 30 * MINUTE, HOUR),
  fc.integer({ min: 1, max: 4 * HOUR })
).map((ms) => new AdvanceTimeCommand(ms))

describe("connect token machine against a model", () => {
  it("agrees with the model on status, uses_count, revoked_at and the use window after any sequence of uses, revocations and waiting", () => {
    fc.assert(
      fc.property(
        fc.record({
          hours: fc.integer({ min: 1, max: 3 }),
          maxUses: fc.integer({ min: 1, max: 4 }),
          windowMinutes: fc.oneof(fc.constantFrom(5, 30), fc.integer({ min: 5, max: 90 }))
        }),
        fc.commands([
          fc.constant(new UseCommand()),
          fc.constant(new RevokeCommand()),
          advance
        ], { maxCommands: 40 }),
        ({ hours, maxUses, windowMinutes }, commands) => {
          const setup = () => ({
            model: {
              now: T0,
              expiresAt: T0 + hours * HOUR,
              maxUses,
              windowMs: windowMinutes * MINUTE,
              uses: 0,
              firstUseAt: undefined,
              revokedAt: undefined
            },
            real: {
              now: T0,
              state: token({ expires_at: at(T0 + hours * HOUR), max_uses: maxUses, use_window_minutes: windowMinutes })
            }
          })
          fc.modelRun(setup, commands)
        }
      ),
      { numRuns: 500 }
    )
  })
})
