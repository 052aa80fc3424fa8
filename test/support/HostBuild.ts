import { cpSync, mkdirSync, mkdtempSync, rmSync } from "node:fs"
import { join } from "node:path"
import { build } from "tsup"
import { ROOT } from "./Root.ts"

/** The environment variable through which the test processes learn where the built hosts are. */
export const HOST_BUILD_VARIABLE = "OMNI_TEST_HOST_BUILD"

/** The scripts a test may start as a process, by source path, and their built file's name. */
export const BUILT_SCRIPTS: Readonly<Record<string, string>> = {
  "examples/server/main.ts": "server.js",
  "examples/server/admin.ts": "admin.js",
  "examples/embed/server.ts": "embed.js"
}

/**
 * Builds the package as it is published (tsup's configuration, without declarations) into
 * `<dir>/node_modules/omnichannel-core`, and the example hosts and the operator CLI into `<dir>`,
 * importing the package by name: a host a test starts is then plain JavaScript on the built
 * package, the way an application runs it, and starts in a fraction of tsx's time. `dir` sits in
 * the project's `node_modules/.cache`, so the package's own dependencies resolve from there.
 */
export const buildHosts = async (): Promise<{ readonly dir: string; readonly remove: () => void }> => {
  const cache = join(ROOT, "node_modules", ".cache")
  mkdirSync(cache, { recursive: true })
  const dir = mkdtempSync(join(cache, "omni-test-hosts-"))
  const installed = join(dir, "node_modules", "omnichannel-core")
  try {
    await build({ config: join(ROOT, "tsup.config.ts"), dts: false, sourcemap: false, silent: true, outDir: join(installed, "dist") })
    cpSync(join(ROOT, "package.json"), join(installed, "package.json"))
    await build({
      entry: Object.fromEntries(Object.entries(BUILT_SCRIPTS).map(([source, built]) => [built.replace(/\.js$/, ""), join(ROOT, source)])),
      format: "esm",
      platform: "node",
      target: "node22",
      outDir: dir,
      config: false,
      tsconfig: join(ROOT, "tsconfig.json"),
      silent: true,
      sourcemap: false,
      splitting: false,
      // The package by name (the build above), and every installed package, stay imports.
      external: [/^omnichannel-core(\/.*)?$/, /^[@a-z]/]
    })
  } catch (error) {
    rmSync(dir, { recursive: true, force: true })
    throw error
  }
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) }
}
