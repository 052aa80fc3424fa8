import { cruise, type ICruiseOptions, type ICruiseResult, type ITranspileOptions } from "dependency-cruiser"
import extractDepcruiseOptions from "dependency-cruiser/config-utl/extract-depcruise-options"
import extractTSConfig from "dependency-cruiser/config-utl/extract-ts-config"
import { describe, expect, it } from "vitest"

const CONFIG = "./.dependency-cruiser.mjs"

// Cruises `roots` and returns the cruise and its violations, one `from → to (rule)` line each.
const cruiseWith = async (roots: Array<string>, options: ICruiseOptions, transpile?: ITranspileOptions) => {
  const { output } = await cruise(roots, options, undefined, transpile)
  const result = output as ICruiseResult
  const violations = result.summary.violations.map((v) => `${v.from} → ${v.to} (${v.rule.name})`).sort()
  return { modules: result.modules.map((m) => m.source), violations }
}

describe("the dependency rule (ARCHITECTURE.md)", () => {
  it("holds for src, adapters and examples: no arrow points the wrong way", async () => {
    const options = await extractDepcruiseOptions(CONFIG)
    const { modules, violations } = await cruiseWith(["src", "adapters", "examples"], options, {
      tsConfig: extractTSConfig("tsconfig.json")
    })
    // An empty cruise would hold vacuously: each root must have been read.
    expect(modules).toEqual(expect.arrayContaining(["src/index.ts", "adapters/kysely/KyselyStorage.ts", "examples/server/main.ts"]))
    expect(violations, `wrong-way imports:\n${violations.join("\n")}`).toEqual([])
  })

  it("fails on each kind of wrong arrow, and only on those (test/architecture/fixtures)", async () => {
    // The fixture tree has no tsconfig paths; its files are judged by the same rules from its own root.
    const { tsConfig: _, ...options } = await extractDepcruiseOptions(CONFIG)
    const { violations } = await cruiseWith(["src", "adapters"], { ...options, baseDir: "test/architecture/fixtures" })
    expect(violations).toEqual([
      "adapters/db/TenantStoreDb.ts → adapters/memory/Clock.ts (adapter-imports-kernel-ports-and-its-own-folder)",
      "adapters/db/TenantStoreDb.ts → src/tenants/TenantService.ts (adapter-imports-kernel-ports-and-its-own-folder)",
      "adapters/db/stores/ContactStoreDb.ts → adapters/db/stores/OutboxStoreDb.ts (store-imports-no-other-store)",
      "src/billing/BillingService.ts → adapters/db/TenantStoreDb.ts (src-imports-no-adapters-examples-or-tests)",
      "src/billing/BillingService.ts → fs (src-imports-no-node-builtins)",
      "src/billing/BillingService.ts → src/ports/TenantStore.ts (store-of-another-area)",
      "src/billing/BillingService.ts → src/tenants/Tenant.ts (area-imports-another-areas-service-only)",
      "src/billing/Invoice.ts → src/billing/Quote.ts (no-circular)",
      "src/billing/Quote.ts → ./Missing.ts (not-to-unresolvable)",
      "src/http/Handler.ts → src/tenants/Tenant.ts (http-imports-kernel-ports-and-services)",
      "src/kernel/Id.ts → src/ports/TenantStore.ts (kernel-imports-only-kernel)",
      "src/ports/TenantStore.ts → src/tenants/Tenant.ts (ports-import-only-kernel-and-ports)",
      "src/tenants/TenantRoutes.ts → src/ports/TenantStore.ts (route-goes-through-its-service)"
    ])
  })
})
