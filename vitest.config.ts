import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 120_000,
    // Two cores here; PGlite instances take about 1 GB each.
    maxWorkers: 2
  }
})
