import { fileURLToPath } from "node:url"

/** The project root, where the host's scripts run from. */
export const ROOT = fileURLToPath(new URL("../..", import.meta.url))
