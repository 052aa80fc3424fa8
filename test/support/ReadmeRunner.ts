import { spawn } from "node:child_process"
import { readFileSync, writeFileSync } from "node:fs"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { dirname, join } from "node:path"
import { runAdmin } from "../../examples/server/AdminCli.ts"

/**
 * Runs README.md's shell blocks as a newcomer would, in order, in one bash, and checks each
 * documented answer.
 *
 * The README's conventions (stated here, nowhere else):
 * - Every ```sh block runs, unless the line before its fence is `<!-- readme-test: skip -->`
 *   (installs, benchmarks, a second host). The block after `<!-- readme-test: host -->` is not run
 *   either: its `VAR=value … npm start` line gives the environment of the host the blocks talk to.
 * - A command is a `curl` or an `npm run --silent admin -- …` call. The comment line right after a
 *   command (after its `\` continuation lines) is its documented answer when it reads
 *   `# [status] {…}` (or `[…]`); following comment lines indented by two spaces or more continue it.
 *   Text after the answer's closing bracket is prose.
 * - The answer is checked by its status (a curl without one must answer 2xx; an operator command
 *   must exit 0) and by every literal `"key":value` pair it shows (a string, number, boolean or
 *   null, or an array of them): some object in the actual answer must hold that key with that
 *   value. `…` is elision: inside a string it matches anything; a string that is only `…`, or an
 *   array holding `…`, only asks for the key (and, for an array, the listed elements).
 * - A GET whose answer does not match yet is asked again for up to twenty seconds (background work,
 *   such as processing a received payload, finishes shortly after the call that caused it).
 */

/** One fenced shell block of the README. */
export interface ReadmeBlock {
  /** 1-based line of the opening fence. */
  readonly line: number
  readonly text: string
  readonly mode: "run" | "skip" | "host"
}

/** A command of a block, with the documented answer after it, if any. */
export interface ReadmeCommand {
  readonly block: number
  /** 1-based README line of the command's first line. */
  readonly line: number
  readonly text: string
  readonly answer: DocumentedAnswer | undefined
}

export interface DocumentedAnswer {
  readonly status: number | undefined
  /** The answer as written (without the leading `#`s), for messages. */
  readonly text: string
  readonly pairs: ReadonlyArray<ExpectedPair>
}

export type ExpectedValue =
  | { readonly _tag: "Scalar"; readonly value: string | number | boolean | null }
  | { readonly _tag: "Pattern"; readonly pattern: RegExp; readonly source: string }
  | { readonly _tag: "Any" }
  | { readonly _tag: "Array"; readonly elements: ReadonlyArray<string | number | boolean | null>; readonly open: boolean }

export interface ExpectedPair {
  readonly key: string
  readonly value: ExpectedValue
}

/** The README's shell blocks, in order. */
export const readmeBlocks = (markdown: string): Array<ReadmeBlock> => {
  const lines = markdown.split("\n")
  const blocks: Array<ReadmeBlock> = []
  for (let i = 0; i < lines.length; i++) {
    const fence = /^(`{3,})(\S*)/.exec(lines[i]!)
    if (fence === null) continue
    const end = lines.findIndex((line, j) => j > i && line.startsWith(fence[1]!) && line.trim() === fence[1])
    if (end < 0) throw new Error(`README line ${i + 1}: the code block is never closed`)
    if (fence[2] === "sh") {
      const marker = /^<!-- readme-test: (skip|host) -->$/.exec(lines[i - 1]?.trim() ?? "")
      blocks.push({ line: i + 1, text: lines.slice(i + 1, end).join("\n"), mode: marker === null ? "run" : (marker[1] as "skip" | "host") })
    }
    i = end
  }
  return blocks
}

const COMMAND = /(?:^|[\s;&|(])(?:curl\s|npm run --silent admin --)/g
const ANSWER_START = /^#\s(\d{3})?\s*([{[])/

/** Shell quoting carried from one line to the next. */
interface Quoting {
  single: boolean
  double: boolean
}

/**
 * One line as the shell reads it, given the quoting it starts in: the text outside single quotes
 * (where a command can start), whether the line is only a comment, and whether the command goes on
 * to the next line (an open quote or a trailing backslash).
 */
const scanLine = (line: string, quoting: Quoting): { readonly code: string; readonly comment: boolean; readonly continues: boolean } => {
  let code = ""
  const startsQuoted = quoting.single || quoting.double
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!
    if (quoting.single) {
      if (c === "'") quoting.single = false
      continue
    }
    if (c === "\\") {
      code += line.slice(i, i + 2)
      i++
      continue
    }
    if (quoting.double) {
      if (c === '"') quoting.double = false
      code += c
      continue
    }
    if (c === "'") quoting.single = true
    else if (c === '"') quoting.double = true
    else if (c === "#" && (i === 0 || /\s/.test(line[i - 1]!))) {
      return { code, comment: !startsQuoted && code.trim() === "", continues: false }
    }
    code += c
  }
  return { code, comment: false, continues: quoting.single || quoting.double || /\\$/.test(line) }
}

/** The commands of a block and their documented answers. */
export const readmeCommands = (block: ReadmeBlock, index: number): Array<ReadmeCommand> => {
  const lines = block.text.split("\n")
  const commands: Array<{ block: number; line: number; text: string; answer: DocumentedAnswer | undefined }> = []
  let open: { command: (typeof commands)[number]; text: string; status: number | undefined } | undefined
  // The command a documented answer on the next comment line would belong to.
  let last: (typeof commands)[number] | undefined
  let continuing = false
  const quoting: Quoting = { single: false, double: false }
  const close = () => {
    if (open !== undefined) open.command.answer = parseAnswer(open.status, open.text)
    open = undefined
  }
  lines.forEach((raw, i) => {
    const line = block.line + 1 + i
    const wasContinuing = continuing
    const scanned = scanLine(raw, quoting)
    continuing = scanned.continues
    if (scanned.comment) {
      const trimmed = raw.trim()
      if (open !== undefined && /^#\s{2,}\S/.test(trimmed)) {
        open.text += "\n" + trimmed.replace(/^#\s+/, "")
        return
      }
      close()
      const start = ANSWER_START.exec(trimmed)
      if (start !== null && last !== undefined && last.answer === undefined) {
        open = { command: last, text: trimmed.slice(trimmed.indexOf(start[2]!)), status: start[1] === undefined ? undefined : Number(start[1]) }
      }
      last = undefined
      return
    }
    close()
    const count = [...scanned.code.matchAll(COMMAND)].length
    if (wasContinuing && last !== undefined) last.text += "\n" + raw
    else if (count === 0) last = undefined
    for (let k = 0; k < count; k++) {
      const command = { block: index, line, text: raw, answer: undefined }
      commands.push(command)
      last = command
    }
  })
  close()
  return commands
}

/** The part of `text` up to where its first bracket closes (strings skipped). */
const balanced = (text: string): string => {
  let depth = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!
    if (inString) {
      if (c === "\\") i++
      else if (c === '"') inString = false
      continue
    }
    if (c === '"') inString = true
    else if (c === "{" || c === "[") depth++
    else if (c === "}" || c === "]") {
      depth--
      if (depth === 0) return text.slice(0, i + 1)
    }
  }
  return text
}

const STRING = String.raw`"(?:[^"\\]|\\.)*"`
const SCALAR = String.raw`${STRING}|-?\d+(?:\.\d+)?|true|false|null`
const PAIR = new RegExp(String.raw`"((?:[^"\\]|\\.)+)":\s*(${SCALAR}|\[\s*(?:(?:${SCALAR}|…)\s*,?\s*)*\])`, "g")
const ELEMENT = new RegExp(String.raw`${SCALAR}|…`, "g")

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

const expectedValue = (raw: string): ExpectedValue => {
  if (raw.startsWith("[")) {
    const elements = [...raw.slice(1, -1).matchAll(ELEMENT)].map((m) => m[0])
    return {
      _tag: "Array",
      elements: elements.filter((e) => e !== "…").map((e) => JSON.parse(e) as string | number | boolean | null),
      open: elements.includes("…")
    }
  }
  const value = JSON.parse(raw) as string | number | boolean | null
  if (typeof value !== "string" || !value.includes("…")) return { _tag: "Scalar", value }
  if (value === "…") return { _tag: "Any" }
  const pattern = new RegExp(`^${value.split("…").map(escapeRegExp).join("[\\s\\S]*")}$`)
  return { _tag: "Pattern", pattern, source: value }
}

/** A documented answer: its status and the literal pairs it shows. */
export const parseAnswer = (status: number | undefined, text: string): DocumentedAnswer => {
  const shown = balanced(text)
  return { status, text: shown, pairs: [...shown.matchAll(PAIR)].map((m) => ({ key: JSON.parse(`"${m[1]!}"`) as string, value: expectedValue(m[2]!) })) }
}

const objects = function* (value: unknown): Generator<Record<string, unknown>> {
  if (Array.isArray(value)) for (const item of value) yield* objects(item)
  else if (value !== null && typeof value === "object") {
    yield value as Record<string, unknown>
    for (const item of Object.values(value)) yield* objects(item)
  }
}

const holds = (actual: unknown, expected: ExpectedValue): boolean => {
  switch (expected._tag) {
    case "Any":
      return true
    case "Scalar":
      return actual === expected.value
    case "Pattern":
      return typeof actual === "string" && expected.pattern.test(actual)
    case "Array":
      return Array.isArray(actual) &&
        expected.elements.every((e) => actual.includes(e)) &&
        (expected.open || actual.length === expected.elements.length)
  }
}

const show = (value: ExpectedValue): string =>
  value._tag === "Scalar" ? JSON.stringify(value.value)
  : value._tag === "Pattern" ? JSON.stringify(value.source)
  : value._tag === "Any" ? '"…"'
  : `[${[...value.elements.map((e) => JSON.stringify(e)), ...(value.open ? ["…"] : [])].join(",")}]`

/** What differs between a documented answer and an actual one; empty when it matches. */
export const answerMismatches = (
  answer: DocumentedAnswer | undefined,
  actual: { readonly status: number | undefined; readonly exitCode: number; readonly body: string }
): Array<string> => {
  const problems: Array<string> = []
  if (actual.status === undefined) {
    if (actual.exitCode !== 0) problems.push(`exited with ${actual.exitCode}`)
  } else if (answer?.status !== undefined ? actual.status !== answer.status : actual.status < 200 || actual.status > 299) {
    problems.push(`status ${actual.status}, documented ${answer?.status ?? "2xx"}`)
  }
  if (answer === undefined || answer.pairs.length === 0) return problems
  let parsed: unknown
  try {
    parsed = JSON.parse(actual.body)
  } catch {
    return [...problems, "the answer is not JSON"]
  }
  const found = [...objects(parsed)]
  for (const pair of answer.pairs) {
    if (!found.some((object) => Object.hasOwn(object, pair.key) && holds(object[pair.key], pair.value))) {
      problems.push(`no "${pair.key}":${show(pair.value)}`)
    }
  }
  return problems
}

/** One command as it ran. */
export interface CommandRun {
  readonly index: number
  readonly args: ReadonlyArray<string>
  readonly status: number | undefined
  readonly exitCode: number
  readonly body: string
  readonly problems: ReadonlyArray<string>
}

/** The bash functions the blocks run with: `curl` and `npm run --silent admin --` recorded and checked. */
const PRELUDE = String.raw`
set -euo pipefail
readme_next() { local i; i=$(( $(<"$README_RUN/count") + 1 )); echo "$i" > "$README_RUN/count"; echo "$i"; }
readme_verdict() { command curl -s -X POST --data-binary @- "$README_CONTROL/$1/$2"; }
curl() {
  local i verdict status; i=$(readme_next)
  while :; do
    status=$(command curl "$@" -o "$README_RUN/$i.body" -w '%{http_code}') || { echo "readme: curl failed ($?): curl $*" >&2; return 1; }
    verdict=$(printf '%s\0' "$status" "$@" | readme_verdict check "$i")
    [ "$verdict" = retry ] || break
    sleep 0.1
  done
  cat "$README_RUN/$i.body"
  [ "$verdict" = ok ] || { echo "readme: $verdict" >&2; return 1; }
}
npm() {
  if [ "$#" -ge 4 ] && [ "$1 $2 $3 $4" = "run --silent admin --" ]; then
    shift 4
    local i verdict; i=$(readme_next)
    verdict=$(printf '%s\0' "$@" | readme_verdict admin "$i")
    cat "$README_RUN/$i.body"; cat "$README_RUN/$i.stderr" >&2
    [ "$verdict" = ok ] || { echo "readme: $verdict" >&2; return 1; }
  else
    echo "readme: 'npm $*' is not run here" >&2; return 1
  fi
}
`

const isGet = (args: ReadonlyArray<string>): boolean => {
  let method = "GET"
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!
    if (arg === "-X" || arg === "--request") method = args[i + 1] ?? method
    else if (/^-(d|F|T)$|^--(data|data-raw|data-binary|data-urlencode|form|upload-file|json)$/.test(arg)) method = method === "GET" ? "POST" : method
  }
  return method === "GET"
}

/** What the README run did: each command as it ran, bash's exit code and output. */
export interface ReadmeRun {
  readonly commands: ReadonlyArray<CommandRun>
  readonly exitCode: number | null
  readonly output: string
}

/**
 * Runs the README's `run` blocks in one bash in `cwd`, with `replace` applied to the text (the
 * host's address), the operator CLI run in this process with `adminEnv`, and every command's
 * answer checked against `commands` as it comes (`answerMismatches`).
 */
export const runReadme = async (options: {
  readonly blocks: ReadonlyArray<ReadmeBlock>
  readonly commands: ReadonlyArray<ReadmeCommand>
  readonly cwd: string
  readonly runDir: string
  readonly adminEnv: Readonly<Record<string, string>>
  readonly env: Readonly<Record<string, string>>
  readonly timeoutMs: number
}): Promise<ReadmeRun> => {
  const runs: Array<CommandRun> = []
  const firstTry = new Map<number, number>()
  const record = (run: CommandRun) => {
    runs[run.index - 1] = run
    return run.problems.length === 0 ? "ok" : `command ${run.index} (${describe(options.commands[run.index - 1])}): ${run.problems.join("; ")}`
  }
  const server: Server = createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      void (async () => {
        const [, kind, n] = (req.url ?? "").split("/")
        const index = Number(n)
        const fields = Buffer.concat(chunks).toString().split("\0").slice(0, -1)
        const command = options.commands[index - 1]
        if (kind === "admin") {
          const result = await runAdmin(fields, { ...process.env, ...options.adminEnv })
          writeFileSync(join(options.runDir, `${index}.body`), result.stdout)
          writeFileSync(join(options.runDir, `${index}.stderr`), result.stderr)
          const problems = command === undefined ? ["more commands ran than the README shows"] : answerMismatches(command.answer, { status: undefined, exitCode: result.code, body: result.stdout })
          res.end(record({ index, args: fields, status: undefined, exitCode: result.code, body: result.stdout, problems }))
          return
        }
        const [status, ...args] = fields
        const body = readFileSync(join(options.runDir, `${index}.body`), "utf8")
        const actual = { status: Number(status), exitCode: 0, body }
        const problems = command === undefined ? ["more commands ran than the README shows"] : answerMismatches(command.answer, actual)
        const started = firstTry.get(index) ?? Date.now()
        firstTry.set(index, started)
        if (problems.length > 0 && command !== undefined && isGet(args) && Date.now() - started < 20_000) {
          res.end("retry")
          return
        }
        res.end(record({ index, args, status: actual.status, exitCode: 0, body, problems }))
      })().catch((error: unknown) => res.end(`control failed: ${String(error)}`))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const control = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  writeFileSync(join(options.runDir, "count"), "0\n")
  const script = [
    PRELUDE,
    ...options.blocks.map((block) => `# README line ${block.line}\necho "readme: block at README line ${block.line}" >&2\n${block.text}\n`)
  ].join("\n")
  const child = spawn("bash", ["-c", script], {
    cwd: options.cwd,
    detached: true,
    env: {
      ...process.env,
      // `node` is the one running the tests (the project's Node), first on PATH as `npm run` puts it.
      PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ""}`,
      README_RUN: options.runDir,
      README_CONTROL: control,
      ...options.env
    },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let output = ""
  child.stdout.on("data", (c: Buffer) => (output += c.toString()))
  child.stderr.on("data", (c: Buffer) => (output += c.toString()))
  const timer = setTimeout(() => killGroup(child.pid), options.timeoutMs)
  const exitCode = await new Promise<number | null>((resolve) => child.once("exit", resolve))
  clearTimeout(timer)
  // Whatever a block left running in the background (none should) ends with the run.
  killGroup(child.pid)
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return { commands: runs, exitCode, output }
}

const killGroup = (pid: number | undefined) => {
  if (pid === undefined) return
  try {
    process.kill(-pid, "SIGKILL")
  } catch {
    // already gone
  }
}

/** A command for messages: its README line and first line of text. */
export const describe = (command: ReadmeCommand | undefined): string =>
  command === undefined ? "not in the README" : `README line ${command.line}: ${command.text.trim().slice(0, 120)}`
