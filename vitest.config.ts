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
    include: ["test/**/*.test.ts"],
    // The package and the example hosts, built once: host tests start them as plain JavaScript.
    globalSetup: ["test/support/GlobalSetup.ts"],
    testTimeout: 30_000,
    hookTimeout: 120_000,
    // Two cores here; PGlite instances take about 1 GB each.
    maxWorkers: 2
  }
})
