import { fileURLToPath } from "node:url"
import { defineConfig } from "vitest/config"

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url))

export default defineConfig({
  resolve: {
    // The package's own entry points by name, as examples and users import them (tsconfig `paths` too).
    alias: [
      { find: /^omnichannel-core$/, replacement: here("./src/index.ts") },
      { find: /^omnichannel-core\/kysely$/, replacement: here("./adapters/kysely/KyselyStorage.ts") },
      { find: /^omnichannel-core\/node$/, replacement: here("./adapters/node/index.ts") },
      { find: /^omnichannel-core\/clock$/, replacement: here("./adapters/clock/ManualClock.ts") },
      { find: /^omnichannel-core\/providers$/, replacement: here("./adapters/providers/SimulatedProviders.ts") },
      { find: /^omnichannel-core\/chatapp$/, replacement: here("./adapters/chatapp/index.ts") },
      { find: /^omnichannel-core\/http$/, replacement: here("./adapters/http/GuardedHttp.ts") },
      { find: /^omnichannel-core\/mail$/, replacement: here("./adapters/mail/index.ts") },
      { find: /^omnichannel-core\/summarizer$/, replacement: here("./adapters/summarizer/index.ts") },
      { find: /^omnichannel-core\/testing$/, replacement: here("./test/conformance/index.ts") }
    ]
  },
  test: {
    testTimeout: 30_000,
    hookTimeout: 120_000,
    // Two cores here; PGlite instances take about 1 GB each.
    maxWorkers: 2,
    // `npm test` runs every project; `npm run test:unit` only the first.
    projects: [
      {
        extends: true,
        test: {
          name: "unit",
          // The library in this process: pure machines and property tests, the HTTP surface on an
          // in-memory SQLite app, adapters against local servers and files.
          // One module graph per worker process, shared by its files: importing the library again
          // for each file cost about a third of this project's time. No file here changes shared
          // state it does not restore.
          isolate: false,
          include: [
            "test/unit/**/*.test.ts",
            "test/architecture/**/*.test.ts",
            "test/attachments/**/*.test.ts",
            "test/chatapp/**/*.test.ts",
            "test/http/**/*.test.ts",
            "test/mail/**/*.test.ts",
            "test/outbound/**/*.test.ts",
            "test/summarizer/**/*.test.ts",
            "test/templates/**/*.test.ts",
            "test/webhooks/**/*.test.ts"
          ]
        }
      },
      {
        extends: true,
        test: {
          name: "storage",
          // The storage adapters' conformance on SQLite, PGlite and PostgreSQL (PG_URL), and migrations.
          include: ["test/conformance/**/*.test.ts"]
        }
      },
      {
        extends: true,
        test: {
          name: "host",
          // The reference host and the example embedding as processes, the browser, the built package.
          // The support modules (the in-process operator CLI imports the library) are imported once
          // per worker process; each file starts and stops its own hosts.
          isolate: false,
          include: ["test/host/**/*.test.ts", "test/browser/**/*.test.ts", "test/package/**/*.test.ts"],
          // The package and the example hosts, built once: host tests start them as plain JavaScript.
          globalSetup: ["test/support/GlobalSetup.ts"]
        }
      }
    ]
  }
})
