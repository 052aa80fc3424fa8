import { execFile } from "node:child_process"
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { promisify } from "node:util"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ROOT } from "../support/Host.ts"

const run = promisify(execFile)

// An application folder with the package installed as npm would: package.json and the built
// dist/ under node_modules/omnichannel-core, and the peers the application itself provides.
let app: string
// What the build printed: the declaration bundler warns there of a type an entry names but exports nowhere.
let buildOutput: string

beforeAll(async () => {
  app = mkdtempSync(join(tmpdir(), "omni-consumer-"))
  const installed = join(app, "node_modules", "omnichannel-core")
  mkdirSync(installed, { recursive: true })
  const built = await run(process.execPath, [join(ROOT, "node_modules", "tsup", "dist", "cli-default.js"), "--out-dir", join(installed, "dist")], {
    cwd: ROOT
  })
  buildOutput = `${built.stdout}\n${built.stderr}`
  cpSync(join(ROOT, "package.json"), join(installed, "package.json"))
  // The dependencies npm installs with the package, and the peers the application provides
  // (vitest for omnichannel-core/testing).
  const { dependencies } = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { dependencies: Record<string, string> }
  for (const name of [...Object.keys(dependencies), "effect", "kysely", "better-sqlite3", "pg", "vitest", "@types"]) {
    mkdirSync(dirname(join(app, "node_modules", name)), { recursive: true })
    symlinkSync(join(ROOT, "node_modules", name), join(app, "node_modules", name))
  }
  writeFileSync(join(app, "package.json"), JSON.stringify({ name: "consumer", type: "module", private: true }))
  writeFileSync(join(app, "declared.ts"), DECLARED_SOURCE)
  writeFileSync(join(app, "app.ts"), APP_SOURCE)
  await writeRuntimeExports()
  // Runs beside the tests below that start the application's scripts; the last three read it.
  compiled = compileConsumer()
}, 180_000)

afterAll(async () => {
  await compiled
  rmSync(app, { recursive: true, force: true })
})

// The application's own TypeScript, compiled as one program against the published declarations
// (one tsc start and one read of the libraries' types instead of three): `declared.ts` and
// `runtime-exports.ts` export values typed by the package, as an application publishing its own
// declarations does (TS2742/TS2883/TS4023 when a type cannot be named); `app.ts` uses the package's
// types with the libraries' declarations checked too (skipLibCheck off).
const DECLARED_SOURCE = `
  import { Effect } from "effect"
  import { Auth, Events, make, Webhooks } from "omnichannel-core"
  import { makeSimulatedChatPlatform } from "omnichannel-core/chatapp"
  import { layer, openSqlite } from "omnichannel-core/kysely"
  import { nodeHmacSigner } from "omnichannel-core/node"
  export const deliveries = Webhooks.WebhookDeliveryService.layer
  export const sign = Webhooks.sign
  export const signer = nodeHmacSigner
  export const platform = makeSimulatedChatPlatform()
  export const event = Events.makeEvent({ type: "contact.created", tenantId: "t", data: {} })
  export const keys = (tenantId: string) => Effect.flatMap(Auth.Operator, (operator) => operator.listApiKeys(tenantId))
  export const connect = Effect.flatMap(Auth.Operator, (operator) => operator.createChannel({ tenantId: "t", type: "chatapp", inputs: {} }))
  export const start = () => make({ storage: layer(openSqlite(":memory:"), "sqlite") })
`
const APP_SOURCE = `
  import { Effect } from "effect"
  import { Auth, make, type Omnichannel, StorageError, type Workers } from "omnichannel-core"
  import { type ContactsTable, type Database, layer, openSqlite } from "omnichannel-core/kysely"
  import { serve } from "omnichannel-core/node"
  // The stored rows, by name: an application's own queries over the package's tables.
  export const contactName = (row: ContactsTable): string | null => row.name
  export const tables: ReadonlyArray<keyof Database> = ["contacts", "webhook_deliveries"]
  export const start = async (): Promise<Omnichannel> => {
    const core = await make({ storage: layer(openSqlite(":memory:"), "sqlite") })
    const key: string = await core.run(Effect.map(Effect.flatMap(Auth.Operator, (o) => o.bootstrap({})), (b) => b.api_key))
    void key
    void serve(core.handler, { port: 0, host: "127.0.0.1" })
    const workers: Workers = core.startWorkers({ count: 2, idleMs: 20, onError: (job: string, error: unknown) => console.error(job, error) })
    void workers.stop()
    return core
  }
  export const isStorageError = (u: unknown): boolean => u instanceof StorageError
`
// The walk of the runtime exports: an entry's names, and those of every namespace object within
// (`Campaigns`, `Webhooks.DeliveryMachine`, …: esbuild's are plain objects of getters).
const WALK_SOURCE = (specifiers: ReadonlyArray<string>) => `
  const isNamespace = (v) => v !== null && typeof v === "object" && Object.getPrototypeOf(v) === Object.prototype &&
    Object.keys(v).length > 0 && Object.values(Object.getOwnPropertyDescriptors(v)).every((d) => d.get !== undefined)
  const walk = (path, value) => Object.keys(value).flatMap((key) =>
    [[...path, key], ...(isNamespace(value[key]) ? walk([...path, key], value[key]) : [])])
  const found = {}
  for (const specifier of ${JSON.stringify(specifiers)}) found[specifier] = walk([], await import(specifier))
  console.log(JSON.stringify(found))
`
// The runtime exports by entry, and the reference each line of `runtime-exports.ts` checks.
let found: Record<string, ReadonlyArray<ReadonlyArray<string>>>
let references: Array<string>
// tsc's errors for the consumer program, one per line ("" when none); started by beforeAll.
let compiled: Promise<string>

/** Writes `runtime-exports.ts`: one exported const per runtime value of every entry and namespace. */
const writeRuntimeExports = async (): Promise<void> => {
  const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { exports: Record<string, unknown> }
  const specifiers = Object.keys(pkg.exports).map((name) => (name === "." ? "omnichannel-core" : `omnichannel-core/${name.slice(2)}`))
  writeFileSync(join(app, "walk.mjs"), WALK_SOURCE(specifiers))
  const { stdout } = await run(process.execPath, ["walk.mjs"], { cwd: app })
  found = JSON.parse(stdout) as Record<string, ReadonlyArray<ReadonlyArray<string>>>
  const imports: Array<string> = []
  const consts: Array<string> = []
  references = []
  Object.keys(found).forEach((specifier, entry) => {
    imports.push(`import * as E${entry} from ${JSON.stringify(specifier)}`)
    references.push(`${specifier} (import)`)
  })
  Object.entries(found).forEach(([specifier, paths], entry) => {
    for (const path of paths) {
      references.push(`${specifier} ${path.join(".")}`)
      consts.push(`export const v${consts.length} = E${entry}.${path.join(".")}`)
    }
  })
  writeFileSync(join(app, "runtime-exports.ts"), [...imports, ...consts].join("\n"))
}

/** Compiles the consumer's three files as one program (declarations into `declared/`); resolves to tsc's errors. */
const compileConsumer = (): Promise<string> => {
  writeFileSync(join(app, "tsconfig.json"), JSON.stringify({
    compilerOptions: {
      strict: true,
      module: "nodenext",
      moduleResolution: "nodenext",
      target: "es2023",
      declaration: true,
      emitDeclarationOnly: true,
      outDir: "declared",
      skipLibCheck: false,
      types: ["node"]
    },
    files: ["declared.ts", "runtime-exports.ts", "app.ts"]
  }))
  const tsc = join(ROOT, "node_modules", "typescript", "bin", "tsc")
  return run(process.execPath, [tsc, "-p", "tsconfig.json"], { cwd: app }).then(
    () => "",
    (error: { stdout: string }) => error.stdout
  )
}

/** tsc's error lines about `file`, and those about no file of the program (a library's declarations). */
const errorsOf = (output: string, file: string): Array<string> =>
  output.split("\n").filter((line) => line.startsWith(`${file}(`) || (line.includes("error TS") && !/^(declared|runtime-exports|app)\.ts\(/.test(line)))

describe("the built package, imported by name", () => {
  it("lists a built file for every export", () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as {
      exports: Record<string, { types: string; import: string }>
    }
    for (const [name, target] of Object.entries(pkg.exports)) {
      expect(() => readFileSync(join(app, "node_modules", "omnichannel-core", target.import)), name).not.toThrow()
      expect(() => readFileSync(join(app, "node_modules", "omnichannel-core", target.types)), name).not.toThrow()
    }
  })

  it("serves the API from an application's own script", async () => {
    writeFileSync(join(app, "app.mjs"), `
      import { Effect } from "effect"
      import { Auth, make } from "omnichannel-core"
      import { layer, migrate, openSqlite } from "omnichannel-core/kysely"
      const db = openSqlite(":memory:")
      await migrate(db, "sqlite")
      const core = await make({ storage: layer(db, "sqlite") })
      const boot = await core.run(Effect.flatMap(Auth.Operator, (operator) => operator.bootstrap({})))
      const response = await core.handler(new Request("http://app.local/api/v1/contacts", {
        method: "POST",
        headers: { authorization: "Bearer " + boot.api_key, "content-type": "application/json" },
        body: JSON.stringify({ name: "From dist" })
      }))
      console.log(JSON.stringify({ status: response.status, body: await response.json(), tenant: boot.tenant_id }))
      await core.dispose()
      await db.destroy()
    `)
    const { stdout } = await run(process.execPath, ["app.mjs"], { cwd: app })
    const result = JSON.parse(stdout) as { status: number; body: { name: string; tenant_id: string }; tenant: string }
    expect(result.status).toBe(201)
    expect(result.body).toMatchObject({ name: "From dist", tenant_id: result.tenant })
  })

  it("runs background workers from an application's own script, and stops them", async () => {
    // No outbound client is configured, so the attempt fails closed and is recorded for a retry:
    // proof that a worker fanned the event out, attempted it and recorded the outcome.
    writeFileSync(join(app, "workers.mjs"), `
      import { Effect } from "effect"
      import { Auth, make } from "omnichannel-core"
      import { layer, migrate, openSqlite } from "omnichannel-core/kysely"
      const db = openSqlite(":memory:")
      await migrate(db, "sqlite")
      const core = await make({ storage: layer(db, "sqlite") })
      const boot = await core.run(Effect.flatMap(Auth.Operator, (operator) => operator.bootstrap({})))
      const call = async (method, path, body) => {
        const response = await core.handler(new Request("http://app.local/api/v1" + path, {
          method,
          headers: { authorization: "Bearer " + boot.api_key, "content-type": "application/json" },
          body: body === undefined ? undefined : JSON.stringify(body)
        }))
        return response.json()
      }
      const endpoint = await call("POST", "/webhook-endpoints", { name: "R", url: "https://receiver.example/hook", subscribed_events: ["contact.created"] })
      const workers = core.startWorkers({ idleMs: 5 })
      await call("POST", "/contacts", { name: "Ada" })
      let page
      for (let i = 0; i < 500; i++) {
        page = await call("GET", "/webhook-endpoints/" + endpoint.webhook_id + "/deliveries")
        if (page.total > 0 && page.items[0].status !== "pending") break
        await new Promise((resolve) => setTimeout(resolve, 10))
      }
      await workers.stop()
      console.log(JSON.stringify(page.items[0]))
      await core.dispose()
      await db.destroy()
    `)
    const { stdout } = await run(process.execPath, ["workers.mjs"], { cwd: app })
    expect(JSON.parse(stdout)).toMatchObject({
      status: "retrying",
      attempt_number: 1,
      error_message: expect.stringContaining("no outbound HTTP client")
    })
  }, 60_000)

  it("posts through the guarded client from an application's own script, and closes it", async () => {
    writeFileSync(join(app, "outbound.mjs"), `
      import { createServer } from "node:http"
      import { Effect } from "effect"
      import { makeGuardedHttp } from "omnichannel-core/http"
      const server = createServer((req, res) => {
        let body = ""
        req.on("data", (chunk) => { body += chunk })
        req.on("end", () => res.writeHead(202, { "content-type": "text/plain" }).end("got " + body))
      })
      await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve))
      const url = "http://127.0.0.1:" + server.address().port + "/hook"
      const run = (client) => Effect.runPromise(Effect.result(client.request({ method: "POST", url, headers: {}, body: "ping", timeoutMs: 5000 })))
      const allowed = makeGuardedHttp({ allow: ["127.0.0.1/32"] })
      const refused = makeGuardedHttp({ allow: [] })
      const ok = await run(allowed)
      const no = await run(refused)
      await allowed.close()
      await refused.close()
      server.close()
      console.log(JSON.stringify({ status: ok.success.status, body: new TextDecoder().decode(ok.success.body), refused: no.failure.reason }))
    `)
    const { stdout } = await run(process.execPath, ["outbound.mjs"], { cwd: app })
    expect(JSON.parse(stdout)).toEqual({ status: 202, body: "got ping", refused: "UrlNotAllowed" })
  }, 60_000)

  it("runs the published conformance suite on the published Kysely adapter, from an application's own test", async () => {
    // The readers of stored rows are the application's to write; this one borrows the repository's,
    // which import types only, so the suite and the adapter under test are dist's alone.
    writeFileSync(join(app, "conformance.test.mjs"), `
      import { storageConformance } from "omnichannel-core/testing"
      import { layer, migrate, openSqlite } from "omnichannel-core/kysely"
      import { kyselyStoredRows } from ${JSON.stringify(join(ROOT, "test", "conformance", "KyselyStoredRows.ts"))}
      storageConformance("Kysely storage from dist/ on SQLite", async () => {
        const db = openSqlite(":memory:")
        await migrate(db, "sqlite")
        return { layer: layer(db, "sqlite"), capabilities: { concurrentConnections: false }, storedRows: kyselyStoredRows(db), close: () => db.destroy() }
      })
    `)
    writeFileSync(join(app, "vitest.config.mjs"), `export default { test: { include: ["conformance.test.mjs"] } }`)
    const vitest = join(ROOT, "node_modules", "vitest", "vitest.mjs")
    await run(process.execPath, [vitest, "run", "--config", "vitest.config.mjs", "--reporter", "json", "--outputFile", "report.json"], {
      cwd: app
    }).catch((error: { stdout: string; stderr: string }) => {
      // The JSON reporter writes the failures to report.json, not to stderr: name them.
      let failures = ""
      try {
        const written = JSON.parse(readFileSync(join(app, "report.json"), "utf8")) as {
          testResults: ReadonlyArray<{ message?: string; assertionResults: ReadonlyArray<{ fullName: string; status: string; failureMessages: ReadonlyArray<string> }> }>
        }
        failures = written.testResults.flatMap((file) => [
          ...(file.message ? [file.message] : []),
          ...file.assertionResults.filter((test) => test.status === "failed").map((test) => `${test.fullName}: ${test.failureMessages.join(" ").slice(0, 500)}`)
        ]).join("\n")
      } catch {
        failures = "(no report.json)"
      }
      throw new Error(`the suite failed from dist/:\n${failures}\n${error.stderr}`)
    })
    const report = JSON.parse(readFileSync(join(app, "report.json"), "utf8")) as {
      numPassedTests: number
      numFailedTests: number
      numPendingTests: number
      testResults: ReadonlyArray<{ assertionResults: ReadonlyArray<{ fullName: string }> }>
    }
    const names = report.testResults.flatMap((file) => file.assertionResults.map((test) => test.fullName))
    expect(report.numFailedTests).toBe(0)
    expect(report.numPassedTests).toBeGreaterThan(100)
    expect(names).toContainEqual(expect.stringContaining("Kysely storage from dist/ on SQLite ContactStore"))
    expect(names).toContainEqual(expect.stringContaining("Kysely storage from dist/ on SQLite WebhookDeliveryStore"))
  }, 60_000)

  it("builds declarations that name no type they leave unexported", () => {
    expect(buildOutput).toContain("Build success")
    // e.g. `Entry "index.d.ts" still references private shared type exports with no public re-export: HmacSigner`
    expect(buildOutput).not.toMatch(/private shared type exports|no public re-export/)
  })

  it("compiles an application's own declarations of values typed by the package (no TS2742: every type can be named)", async () => {
    // TS2742/TS2883/TS4023: a type reachable only inside the bundle ("cannot be named … not portable").
    expect(errorsOf(await compiled, "declared.ts")).toEqual([])
    const declared = readFileSync(join(app, "declared", "declared.d.ts"), "utf8")
    expect(declared).toContain('import("omnichannel-core").HmacSigner')
    expect(declared).not.toMatch(/dist\//)
  }, 120_000)

  it("declares every value each entry and namespace exports at runtime, by a name an application's declarations can use", async () => {
    expect(found["omnichannel-core"]).toContainEqual(["Campaigns", "Campaign"])
    expect(found["omnichannel-core"]).toContainEqual(["Webhooks", "DeliveryMachine", "make"])
    // One exported const per runtime value: a missing declaration fails with TS2339, and a declared
    // type the application's own declarations cannot name with TS4023/TS2742. Each error names the
    // export it is about, e.g. "omnichannel-core Campaigns.Campaign: TS2339 …".
    const failures = errorsOf(await compiled, "runtime-exports.ts").map((line) => {
      const match = /^runtime-exports\.ts\((\d+),\d+\): error (.*)$/.exec(line)
      return match === null ? line : `${references[Number(match[1]) - 1] ?? "runtime-exports.ts"}: ${match[2]}`
    })
    expect(failures).toEqual([])
  }, 120_000)

  it("type-checks an application against the published declarations, the libraries' declarations included", async () => {
    // With the errors tsc finds in the libraries' declarations, which no file of the program names.
    expect(errorsOf(await compiled, "app.ts")).toEqual([])
  }, 120_000)
})
