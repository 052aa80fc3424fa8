import { readdirSync } from "node:fs"
import { join, relative } from "node:path"
import { describe, expect, it } from "vitest"
import config from "../../vitest.config.ts"
import { ROOT } from "../support/Root.ts"

/** Every `*.test.ts` below `test/`, relative to the project root. */
const testFiles = (): Array<string> =>
  readdirSync(join(ROOT, "test"), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith(".test.ts"))
    .map((entry) => relative(ROOT, join(entry.parentPath, entry.name)))
    .sort()

describe("the test projects (vitest.config.ts)", () => {
  it("run every test file in exactly one project, so npm test misses none", () => {
    const projects = (config.test?.projects ?? []) as Array<{ test: { name: string; include: Array<string> } }>
    expect(projects.map((p) => p.test.name)).toEqual(["unit", "storage", "host"])
    const owners = (file: string) =>
      projects.filter((p) => p.test.include.some((glob) => file.startsWith(glob.replace("**/*.test.ts", "")))).map((p) => p.test.name)
    const files = testFiles()
    expect(files.length).toBeGreaterThan(90)
    expect(files.filter((file) => owners(file).length !== 1).map((file) => `${file}: ${owners(file).join(", ") || "none"}`)).toEqual([])
  })
})
