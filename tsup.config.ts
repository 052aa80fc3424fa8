import { defineConfig } from "tsup"

/** One entry per public module; ESM only (one copy of every class), with declarations. */
export default defineConfig({
  entry: {
    index: "src/index.ts",
    kysely: "adapters/kysely/KyselyStorage.ts",
    node: "adapters/node/index.ts",
    clock: "adapters/clock/ManualClock.ts",
    providers: "adapters/providers/SimulatedProviders.ts",
    chatapp: "adapters/chatapp/index.ts",
    http: "adapters/http/GuardedHttp.ts",
    mail: "adapters/mail/index.ts",
    summarizer: "adapters/summarizer/index.ts",
    testing: "test/conformance/index.ts"
  },
  format: ["esm"],
  dts: true,
  clean: true,
  sourcemap: true,
  target: "node22",
  // Peers stay imports, so the host application's copies are the ones used.
  external: ["effect", "kysely", "better-sqlite3", "pg", "@electric-sql/pglite", "vitest"]
})
