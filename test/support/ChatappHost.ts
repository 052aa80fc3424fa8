import { createHmac } from "node:crypto"
import { expect } from "vitest"
import { type FakeGraph, type FakeGraphOptions, startFakeGraph } from "./FakeGraph.ts"
import { admin, type HostProcess, http, startHost } from "./Host.ts"
import type { HostBackend } from "./HostBackends.ts"

/** A tenant made by `admin bootstrap`, and its parent key holding every scope. */
export interface Tenant {
  readonly id: string
  readonly key: string
}

/** What `admin channel create` prints of a chat-app channel (the fields the host tests read). */
export interface ChatappChannel {
  readonly channel_id: string
  readonly external_id: string
}

/** How the host and its fake operator start. */
export interface ChatappHostOptions {
  /** The channels' access token; the fake operator accepts no other. */
  readonly accessToken: string
  /**
   * The fake operator's catalog and page size, or `false` for none: the host's own simulator
   * answers (no `OMNI_CHATAPP_GRAPH_URL`, no `OMNI_OUTBOUND_ALLOW`).
   */
  readonly graph?: Omit<FakeGraphOptions, "accessToken"> | false
  /** `OMNI_CHATAPP_APP_SECRET`: the key the operator's payloads are signed with; unset unless given. */
  readonly appSecret?: string
  /** `OMNI_CHATAPP_VERIFY_TOKEN`; unset unless given. */
  readonly verifyToken?: string
}

/** The reference host on a fresh database and a manual test clock, with two bootstrapped tenants. */
export interface ChatappHost {
  /** The host's env: the backend's database, the test clock and the chat-app settings. */
  readonly env: Readonly<Record<string, string>>
  readonly host: HostProcess
  /** The fake operator the host talks to (throws when started with `graph: false`). */
  readonly graph: FakeGraph
  readonly tenant: Tenant
  /** A second tenant, for what must not leak across tenants. */
  readonly other: Tenant
  /** Connects a chat-app number of a business account to `as` (the first tenant unless given). */
  readonly channel: (phoneNumberId: string, businessAccountId: string, as?: Tenant) => Promise<ChatappChannel>
  /** Calls `/api/v1{path}` as `as` (the first tenant unless given) on `on` (the host unless given). */
  readonly api: (
    method: string,
    path: string,
    body?: unknown,
    as?: { readonly key: string },
    on?: HostProcess
  ) => Promise<{ readonly status: number; readonly body: any }>
  /** `sha256=<hex>`: the operator's `x-hub-signature-256` of `raw` under the app secret. */
  readonly sign: (raw: string | Uint8Array) => string
  /**
   * POSTs `body` as JSON (or `raw` as it is) to `/webhooks/chatapp` of `on` (the host unless given),
   * signed unless `signature` is given (`null`: no signature header); resolves with the status and
   * the answer's text.
   */
  readonly post: (
    body: unknown,
    options?: { readonly raw?: string; readonly signature?: string | null; readonly on?: HostProcess }
  ) => Promise<{ readonly status: number; readonly body: string }>
  /** Runs the background work of `on` (the host unless given) to the end (`POST /_test/drain`); fails unless it answers 200. */
  readonly drain: (on?: HostProcess) => Promise<void>
  /** Moves the test clock of `on` (the host unless given) by `seconds`; fails unless it answers 200. */
  readonly advance: (seconds: number, on?: HostProcess) => Promise<void>
  /** Starts a second host process on the same env and database; `close` stops it. */
  readonly another: () => Promise<HostProcess>
  /** Stops every host started, the fake operator, and drops the database. */
  readonly close: () => Promise<void>
}

/**
 * Starts a fake operator (unless `graph: false`), a fresh database of `backend`, the host on it with
 * a manual test clock, and bootstraps two tenants. If any step fails, what was started is stopped
 * before the error is thrown.
 */
export const startChatappHost = async (backend: HostBackend, options: ChatappHostOptions): Promise<ChatappHost> => {
  const hosts: Array<HostProcess> = []
  let graph: FakeGraph | undefined
  let tearDown: (() => Promise<void>) | undefined
  const close = async () => {
    for (const started of [...hosts].reverse()) if (started.child.exitCode === null) await started.stop()
    await graph?.close()
    await tearDown?.()
  }
  try {
    if (options.graph !== false) graph = await startFakeGraph({ ...options.graph, accessToken: options.accessToken })
    const database = await backend.setUp()
    tearDown = database.tearDown
    const env: Record<string, string> = {
      ...database.env,
      OMNI_TEST_CLOCK: "manual",
      ...(graph === undefined ? {} : { OMNI_OUTBOUND_ALLOW: "127.0.0.1/32", OMNI_CHATAPP_GRAPH_URL: graph.url }),
      ...(options.appSecret === undefined ? {} : { OMNI_CHATAPP_APP_SECRET: options.appSecret }),
      ...(options.verifyToken === undefined ? {} : { OMNI_CHATAPP_VERIFY_TOKEN: options.verifyToken })
    }
    const host = await startHost(env)
    hosts.push(host)
    const [boot, second] = await Promise.all([
      admin(env, "bootstrap", "--email", "owner@example.com"),
      admin(env, "bootstrap", "--email", "other@example.com")
    ])
    const tenant: Tenant = { id: boot.tenant_id, key: boot.api_key }
    const other: Tenant = { id: second.tenant_id, key: second.api_key }

    const sign = (raw: string | Uint8Array) => {
      if (options.appSecret === undefined) throw new Error("startChatappHost: no appSecret to sign with")
      return `sha256=${createHmac("sha256", options.appSecret).update(raw).digest("hex")}`
    }
    return {
      env,
      host,
      get graph(): FakeGraph {
        if (graph === undefined) throw new Error("startChatappHost: started with graph: false, there is no fake operator")
        return graph
      },
      tenant,
      other,
      channel: (phoneNumberId, businessAccountId, as = tenant) =>
        admin(
          env,
          "channel", "create", "--tenant", as.id, "--type", "chatapp",
          "--phone-number-id", phoneNumberId, "--business-account-id", businessAccountId, "--access-token", options.accessToken
        ),
      api: (method, path, body, as = tenant, on = host) => http(on.url, method, `/api/v1${path}`, { token: as.key, body }),
      sign,
      post: async (body, post = {}) => {
        const raw = post.raw ?? JSON.stringify(body)
        const headers: Record<string, string> = { "content-type": "application/json" }
        const signature = post.signature === undefined ? sign(raw) : post.signature
        if (signature !== null) headers["x-hub-signature-256"] = signature
        const response = await fetch(`${(post.on ?? host).url}/webhooks/chatapp`, { method: "POST", headers, body: raw })
        return { status: response.status, body: await response.text() }
      },
      drain: async (on = host) => {
        const drained = await http(on.url, "POST", "/_test/drain")
        expect(drained.status, on.output().slice(-3000)).toBe(200)
      },
      advance: async (seconds, on = host) => {
        const moved = await http(on.url, "POST", "/_test/clock/advance", { body: { seconds } })
        expect(moved.status, on.output().slice(-3000)).toBe(200)
      },
      another: async () => {
        const started = await startHost(env)
        hosts.push(started)
        return started
      },
      close
    }
  } catch (error) {
    await close()
    throw error
  }
}
