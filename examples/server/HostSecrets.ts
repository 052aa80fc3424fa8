import { randomBytes } from "node:crypto"
import { mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"

/**
 * A secret the host keeps in `OMNI_DATA_DIR/secrets/<name>`: read when it exists, else drawn at
 * random and written (owner-only) with `O_EXCL`, so two processes starting together settle on one.
 */
export const keptSecret = (dataDir: string, name: string): string => {
  const directory = join(dataDir, "secrets")
  const path = join(directory, name)
  mkdirSync(directory, { recursive: true, mode: 0o700 })
  try {
    writeFileSync(path, `${randomBytes(32).toString("base64url")}\n`, { flag: "wx", mode: 0o600 })
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error
  }
  const value = readFileSync(path, "utf8").trim()
  if (value === "") throw new Error(`${path} is empty: remove it to have a new secret drawn`)
  return value
}
