import { describe, expect, it } from "vitest"
import { keyCache } from "../../src/kernel/KeyCache.ts"

describe("the signing key cache", () => {
  const counting = (capacity: number) => {
    const made: Array<string> = []
    const keyFor = keyCache((secret) => {
      made.push(secret)
      return { secret }
    }, capacity)
    return { keyFor, made }
  }

  it("makes each key once while it stays cached, and hands back the same key", () => {
    const { keyFor, made } = counting(3)
    const first = keyFor("a")
    expect(keyFor("a")).toBe(first)
    keyFor("b")
    keyFor("a")
    expect(made).toEqual(["a", "b"])
  })

  it("evicts the least recently used key, not the first inserted", () => {
    const { keyFor, made } = counting(2)
    keyFor("busy")
    keyFor("rare")
    keyFor("busy") // used again: now the young end
    keyFor("new") // evicts "rare"
    keyFor("busy")
    expect(made).toEqual(["busy", "rare", "new"])
    keyFor("rare")
    expect(made).toEqual(["busy", "rare", "new", "rare"])
  })
})
