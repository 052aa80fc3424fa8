import { describe, expect, it } from "vitest"

describe("the test runtime", () => {
  it("runs on Node 22 or later (better-sqlite3 13 crashes on Node 20; run tests through npm scripts)", () => {
    expect(Number(process.versions.node.split(".")[0])).toBeGreaterThanOrEqual(22)
  })
})
