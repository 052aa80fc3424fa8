import { buildHosts, HOST_BUILD_VARIABLE } from "./HostBuild.ts"

/**
 * Runs once before any test file: builds the package and the example hosts (HostBuild.ts) and
 * tells the test processes where they are (`OMNI_TEST_HOST_BUILD`), so every host a test starts
 * runs as plain JavaScript on the built package. Removed after the run.
 */
export default async function setup(): Promise<() => void> {
  const started = Date.now()
  const { dir, remove } = await buildHosts()
  process.env[HOST_BUILD_VARIABLE] = dir
  console.log(`hosts built in ${((Date.now() - started) / 1000).toFixed(1)} s: ${dir}`)
  return remove
}
