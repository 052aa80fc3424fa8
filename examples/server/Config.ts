import { parseOutboundAllow } from "omnichannel-core/http"

/** The reference host's settings, read from the environment as HOST.md documents them. */
export interface HostConfig {
  readonly port: number
  readonly host: string
  readonly databaseUrl: string
  readonly dataDir: string
  /** Base of URLs the host hands out; `http://HOST:PORT` (with the bound port) when unset. */
  readonly publicUrl: string | undefined
  readonly testClock: "manual" | undefined
  readonly workers: number
  /** `OMNI_OUTBOUND_ALLOW`: private CIDRs or `host:port` pairs outbound requests may reach. */
  readonly outboundAllow: ReadonlyArray<string>
  /** `OMNI_LEASE_SECONDS`: how long a worker's claim (deliveries, inbound payloads, campaigns) lasts before another may take it. */
  readonly leaseSeconds: number
  /** `OMNI_CHATAPP_GRAPH_URL`: the operator's Graph API base, version included; unset: the simulator. */
  readonly chatappGraphUrl: string | undefined
  /** `OMNI_CHATAPP_APP_SECRET`: signs the operator's webhooks; unset: one kept in the data dir. */
  readonly chatappAppSecret: string | undefined
  /** `OMNI_CHATAPP_VERIFY_TOKEN`: answers the operator's handshake; unset: one kept in the data dir. */
  readonly chatappVerifyToken: string | undefined
  /** `OMNI_SMTP_URL`: where outbound email goes; unset: `.eml` files under `<dataDir>/mail/outbound`. */
  readonly smtpUrl: string | undefined
  /** `OMNI_METRICS=1`: `GET /metrics` serves Prometheus metrics (unauthenticated); off by default. */
  readonly metrics: boolean
  /** `OMNI_METRICS_TENANT_LABELS=1`: metrics carry tenant (and endpoint) ids; off by default (cardinality). */
  readonly metricsTenantLabels: boolean
  /** `OMNI_RETENTION_DAYS`: days finished deliveries, their events and raw inbound payloads are kept; default 30. */
  readonly retentionDays: number
  /** `OMNI_REQUEST_TIMEOUT_SECONDS`: a request not fully received by then is answered 408 and closed; default 30. */
  readonly requestTimeoutSeconds: number
  /** `OMNI_MAX_CONNECTIONS`: open client connections at most; past it a short 503 and the connection closed; default 1,000. */
  readonly maxConnections: number
  /** `OMNI_EMAIL_PARSE_CONCURRENCY`: received emails parsed at once; the rest wait their turn; default 2. */
  readonly emailParseConcurrency: number
}

const httpUrl = (name: string, raw: string | undefined): string | undefined => {
  if (raw === undefined || raw === "") return undefined
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    throw new Error(`${name} must be an http(s) URL, got ${JSON.stringify(raw)}`)
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new Error(`${name} must be an http(s) URL, got ${JSON.stringify(raw)}`)
  }
  return raw.replace(/\/+$/, "")
}

const integer = (name: string, raw: string | undefined, fallback: number, min: number, max: number): number => {
  if (raw === undefined || raw === "") return fallback
  const value = Number(raw)
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new Error(`${name} must be a whole number from ${min} to ${max}, got ${JSON.stringify(raw)}`)
  }
  return value
}

const smtpUrl = (raw: string | undefined): string | undefined => {
  if (raw === undefined || raw === "") return undefined
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    throw new Error(`OMNI_SMTP_URL must be an smtp:// or smtps:// URL, got ${JSON.stringify(raw.replace(/\/\/[^@/]*@/, "//…@"))}`)
  }
  if (url.protocol !== "smtp:" && url.protocol !== "smtps:") {
    throw new Error(`OMNI_SMTP_URL must be an smtp:// or smtps:// URL, got ${JSON.stringify(url.protocol)}`)
  }
  return raw
}

const flag = (name: string, raw: string | undefined): boolean => {
  if (raw === undefined || raw === "" || raw === "0") return false
  if (raw === "1") return true
  throw new Error(`${name} must be 1 or 0 (or unset), got ${JSON.stringify(raw)}`)
}

/**
 * The base of the URLs the host hands out (HOST.md's `OMNI_PUBLIC_URL`): that variable when set, else
 * `http://HOST:PORT` (an IPv6 address in brackets). With `PORT=0` the server passes the port it was
 * given (`boundPort`); the operator CLI, which binds nothing, passes none. Given the server's
 * environment, both hand out the same URLs: this is the one place that decides them.
 */
export const publicUrlOf = (config: HostConfig, boundPort?: number): string => {
  if (config.publicUrl !== undefined) return config.publicUrl
  const host = config.host.includes(":") && !config.host.startsWith("[") ? `[${config.host}]` : config.host
  return `http://${host}:${config.port === 0 && boundPort !== undefined ? boundPort : config.port}`
}

/** Reads and checks the configuration; throws with a message naming the bad variable. */
export const readConfig = (env: Readonly<Record<string, string | undefined>>): HostConfig => {
  const dataDir = env.OMNI_DATA_DIR || "./data"
  const testClock = env.OMNI_TEST_CLOCK
  if (testClock !== undefined && testClock !== "" && testClock !== "manual") {
    throw new Error(`OMNI_TEST_CLOCK must be 'manual' or unset, got ${JSON.stringify(testClock)}`)
  }
  return {
    port: integer("PORT", env.PORT, 3000, 0, 65535),
    host: env.HOST || "127.0.0.1",
    databaseUrl: env.DATABASE_URL || `file:${dataDir}/omnichannel.sqlite`,
    dataDir,
    publicUrl: env.OMNI_PUBLIC_URL || undefined,
    testClock: testClock === "manual" ? "manual" : undefined,
    workers: integer("OMNI_WORKERS", env.OMNI_WORKERS, 1, 0, 64),
    outboundAllow: parseOutboundAllow(env.OMNI_OUTBOUND_ALLOW),
    leaseSeconds: integer("OMNI_LEASE_SECONDS", env.OMNI_LEASE_SECONDS, 120, 5, 3600),
    chatappGraphUrl: httpUrl("OMNI_CHATAPP_GRAPH_URL", env.OMNI_CHATAPP_GRAPH_URL),
    chatappAppSecret: env.OMNI_CHATAPP_APP_SECRET || undefined,
    chatappVerifyToken: env.OMNI_CHATAPP_VERIFY_TOKEN || undefined,
    smtpUrl: smtpUrl(env.OMNI_SMTP_URL),
    metrics: flag("OMNI_METRICS", env.OMNI_METRICS),
    metricsTenantLabels: flag("OMNI_METRICS_TENANT_LABELS", env.OMNI_METRICS_TENANT_LABELS),
    retentionDays: integer("OMNI_RETENTION_DAYS", env.OMNI_RETENTION_DAYS, 30, 1, 36_500),
    requestTimeoutSeconds: integer("OMNI_REQUEST_TIMEOUT_SECONDS", env.OMNI_REQUEST_TIMEOUT_SECONDS, 30, 1, 86_400),
    maxConnections: integer("OMNI_MAX_CONNECTIONS", env.OMNI_MAX_CONNECTIONS, 1_000, 1, 1_000_000),
    emailParseConcurrency: integer("OMNI_EMAIL_PARSE_CONCURRENCY", env.OMNI_EMAIL_PARSE_CONCURRENCY, 2, 1, 1024)
  }
}
