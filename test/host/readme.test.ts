import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type HostProcess, ROOT, startHost } from "../support/Host.ts"
import {
  answerMismatches,
  describe as describeCommand,
  parseAnswer,
  readmeBlocks,
  readmeCommands,
  runReadme
} from "../support/ReadmeRunner.ts"

// README.md as a newcomer follows it: every shell block in order, in one bash, against one host
// started as the README says, each documented answer checked (the conventions are in ReadmeRunner.ts).

const README = readFileSync(join(ROOT, "README.md"), "utf8")
const README_ADDRESS = "127.0.0.1:3000"

/** The environment the README's `host` blocks start `npm start` with (`VAR=value … npm start`). */
const hostEnvironment = (): Record<string, string> => {
  const env: Record<string, string> = {}
  for (const block of readmeBlocks(README).filter((b) => b.mode === "host")) {
    for (const line of block.text.split("\n")) {
      const start = /^((?:[A-Z_][A-Z0-9_]*=\S+\s+)*)npm start\b/.exec(line.trim())
      if (start === null) continue
      for (const [, name, value] of start[1]!.matchAll(/([A-Z_][A-Z0-9_]*)=(\S+)/g)) env[name!] = value!
    }
  }
  return env
}

describe("the README's documented answers (the convention the README test reads)", () => {
  it("reads status, literal pairs and elisions, and ignores the prose after an answer", () => {
    const answer = parseAnswer(201, '{"id":"…","token_prefix":"occ_…","max_uses":1,"ok":true,"tags":["a",…]} ← shown once {"x":1}')
    expect(answer.pairs.map((p) => p.key)).toEqual(["id", "token_prefix", "max_uses", "ok", "tags"])
    const body = JSON.stringify({ id: "1", token_prefix: "occ_abc", max_uses: 1, ok: true, tags: ["b", "a"] })
    expect(answerMismatches(answer, { status: 201, exitCode: 0, body })).toEqual([])
    expect(answerMismatches(answer, { status: 200, exitCode: 0, body: JSON.stringify({ id: "1", token_prefix: "ock_x", max_uses: 2, tags: ["b"] }) }))
      .toEqual(["status 200, documented 201", 'no "token_prefix":"occ_…"', 'no "max_uses":1', 'no "ok":true', 'no "tags":["a",…]'])
  })

  it("finds each command's answer after its continuation lines and multi-line quotes", () => {
    const block = { line: 1, mode: "run" as const, text: [
      "X=$(curl -s http://h/a \\",
      "  -d '{\"a\": 1,",
      "       \"b\": 2}' | json .id)",
      "# 201 {\"id\":\"…\",",
      "#   \"b\":2}",
      "curl -s http://h/b   # not an answer",
      "npm run --silent admin -- user create --email e@example.com",
      "# {\"user_id\":\"…\"}",
      "# the same again: prose, not an answer"
    ].join("\n") }
    const commands = readmeCommands(block, 0)
    expect(commands.map((c) => [c.line, c.answer?.status, c.answer?.pairs.map((p) => p.key)])).toEqual([
      [2, 201, ["id", "b"]],
      [7, undefined, undefined],
      [8, undefined, ["user_id"]]
    ])
  })
})

describe("README.md, followed section by section", () => {
  let dir: string
  let host: HostProcess

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "omni-readme-"))
    mkdirSync(join(dir, "run"))
    // The examples the README uses, where a clone has them.
    mkdirSync(join(dir, "work", "examples"), { recursive: true })
    for (const file of readdirSync(join(ROOT, "examples")).filter((f) => /\.(png|eml|pdf)$/.test(f))) {
      cpSync(join(ROOT, "examples", file), join(dir, "work", "examples", file))
    }
    host = await startHost({
      ...hostEnvironment(),
      DATABASE_URL: `file:${join(dir, "work", "data", "omnichannel.sqlite")}`,
      OMNI_DATA_DIR: join(dir, "work", "data")
    })
  })

  afterAll(async () => {
    await host?.stop()
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
  })

  it("links only to files in the repository, and runs with Node alone (no jq, no openssl)", () => {
    for (const [, target] of README.matchAll(/\]\(([^)#]+)(?:#[^)]*)?\)/g)) {
      if (/^https?:/.test(target!)) continue
      expect(existsSync(join(ROOT, target!)), `README links to ${target}`).toBe(true)
    }
    const shell = readmeBlocks(README).filter((b) => b.mode === "run").map((b) => b.text).join("\n")
    expect(shell).not.toMatch(/(^|[\s|(])(jq|openssl)\s/m)
    // No placeholder to fill in by hand (`<contact id>`): every id is captured by a command.
    expect(shell).not.toMatch(/<[a-z]+(?: [a-z]+)+>/)
  })

  it("runs every shell block in order and gets the documented answers", async () => {
    const url = host.url
    const blocks = readmeBlocks(README.replaceAll(`http://${README_ADDRESS}`, url).replaceAll(README_ADDRESS, url.replace(/^http:\/\//, "")))
    const running = blocks.filter((b) => b.mode === "run")
    const commands = running.flatMap((block, i) => readmeCommands(block, i))
    const port = new URL(url).port
    const run = await runReadme({
      blocks: running,
      commands,
      cwd: join(dir, "work"),
      runDir: join(dir, "run"),
      adminEnv: {
        DATABASE_URL: `file:${join(dir, "work", "data", "omnichannel.sqlite")}`,
        OMNI_DATA_DIR: join(dir, "work", "data"),
        PORT: port
      },
      env: {},
      timeoutMs: 150_000
    })
    const report = [
      ...run.commands.flatMap((c, i) =>
        c.problems.length === 0 ? [] : [`${describeCommand(commands[i])}\n  ${c.problems.join("; ")}\n  answer: ${c.body.slice(0, 600)}`]),
      `bash exited with ${run.exitCode}; its output (last 3000 characters):\n${run.output.slice(-3000)}`
    ].join("\n")
    expect(run.exitCode, report).toBe(0)
    expect(run.commands.length, report).toBe(commands.length)
    expect(run.commands.filter((c) => c.problems.length > 0), report).toEqual([])
  }, 180_000)
})
