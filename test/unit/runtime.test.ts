import { spawnSync } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "vitest"

// better-sqlite3 13 segfaults on Node 20, which is this machine's default `node`; npm scripts and
// npx run the Node of the `node` devDependency instead. These tests say so when a run went wrong.

const USE_NPM = "run the tests through npm scripts or npx (npm test, npx vitest run <file>), which use the project's Node"

const engines = (JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { engines: { node: string } })
  .engines.node

/** `major.minor.patch` as numbers, for an ordered comparison. */
const versionOf = (text: string): [number, number, number] => {
  const [major = 0, minor = 0, patch = 0] = text.replace(/^[^\d]*/, "").split(".").map(Number)
  return [major, minor, patch]
}
const atLeast = (version: ReadonlyArray<number>, minimum: ReadonlyArray<number>): boolean => {
  for (let i = 0; i < minimum.length; i++) if (version[i] !== minimum[i]) return version[i]! > minimum[i]!
  return true
}

describe("the test runtime", () => {
  it("is at least the Node the package's engines field asks for", () => {
    expect(engines).toMatch(/^>=\d+\.\d+$/)
    expect(
      atLeast(versionOf(process.versions.node), versionOf(engines)),
      `Node ${process.versions.node} runs the tests, the package needs ${engines}: ${USE_NPM}`
    ).toBe(true)
  })

  it("runs better-sqlite3: a database file is created, written, closed, reopened and read back (it crashes on Node 20)", () => {
    const dir = mkdtempSync(join(tmpdir(), "omni-runtime-"))
    try {
      // In a child process of this very runtime, so a crash of the native module is a failure here, not a lost worker.
      const script = `
        const Database = require("better-sqlite3")
        const [, path] = process.argv
        const writer = new Database(path)
        writer.exec("CREATE TABLE t (id INTEGER PRIMARY KEY, note TEXT NOT NULL)")
        writer.prepare("INSERT INTO t (note) VALUES (?)").run("kept")
        writer.close()
        const reader = new Database(path, { readonly: true, fileMustExist: true })
        process.stdout.write(JSON.stringify(reader.prepare("SELECT id, note FROM t").all()))
        reader.close()
      `
      const child = spawnSync(process.execPath, ["-e", script, join(dir, "runtime.sqlite")], {
        cwd: new URL("../..", import.meta.url),
        encoding: "utf8",
        timeout: 20_000
      })
      const how = `Node ${process.versions.node} (${process.execPath}): exit ${child.status}, signal ${child.signal}, ` +
        `stderr ${JSON.stringify(child.stderr.slice(0, 2_000))}; ${USE_NPM}`
      expect({ status: child.status, signal: child.signal }, how).toEqual({ status: 0, signal: null })
      expect(JSON.parse(child.stdout), how).toEqual([{ id: 1, note: "kept" }])
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
