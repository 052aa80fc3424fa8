import { Effect } from "effect"
import { type Kysely, sql } from "kysely"
import { makeGuardedHttp } from "../adapters/http/GuardedHttp.ts"
import { type Database, openPostgres, openSqlite } from "../adapters/kysely/KyselyStorage.ts"
import { makeFileBlobStore, nodeHmacSigner } from "../adapters/node/index.ts"
import { readConfig } from "../examples/server/Config.ts"
import { fileOptions, operatorOptions } from "../examples/server/Operator.ts"
import { storageFor } from "../examples/server/Storage.ts"
import { make, type Omnichannel } from "../src/app/Omnichannel.ts"
import { Operator } from "../src/auth/Operator.ts"
import { fromMillis } from "../src/kernel/Timestamp.ts"
import { InboundStore } from "../src/ports/InboundStore.ts"
import { Transactor } from "../src/ports/Transactor.ts"
import { BUSINESS_ACCOUNT_ID, PHONE_NUMBER_ID, type SignedPayload } from "./InboundPayloads.ts"

/** What a host process of the benchmark is configured with (the reference host's environment). */
export interface HostSettings {
  /** `file:PATH` or `postgres://…`, as `DATABASE_URL`. */
  readonly databaseUrl: string
  readonly dataDir: string
  readonly appSecret: string
}

/** The reference host's environment for `settings` (and `extra`), unsetting what would change what is measured. */
export const hostEnvironment = (settings: HostSettings, extra: Readonly<Record<string, string>> = {}): Record<string, string> => ({
  DATABASE_URL: settings.databaseUrl,
  OMNI_DATA_DIR: settings.dataDir,
  OMNI_CHATAPP_APP_SECRET: settings.appSecret,
  OMNI_CHATAPP_VERIFY_TOKEN: "bench-verify-token",
  // The in-process operator simulator; no metrics, no exporter.
  OMNI_CHATAPP_GRAPH_URL: "",
  OMNI_METRICS: "",
  OTEL_EXPORTER_OTLP_ENDPOINT: "",
  OMNI_TEST_CLOCK: "",
  ...extra
})

/**
 * The library wired as `examples/server/main.ts` wires it (storage from the URL, migrated; the
 * operator simulator; files; guarded client; Node's signer), for the set-up and the worker process.
 */
export const makeHostApp = async (
  settings: HostSettings,
  sqlite: { readonly checkpoints?: "background" | "inline" } = {}
): Promise<{ readonly app: Omnichannel; readonly close: () => Promise<void> }> => {
  const config = readConfig(hostEnvironment(settings))
  const outbound = makeGuardedHttp({ allow: config.outboundAllow })
  const files = fileOptions(config)
  const app = await make({
    storage: storageFor(config.databaseUrl, sqlite),
    ...operatorOptions(config, outbound),
    blobStore: makeFileBlobStore(files.filesDir),
    downloads: files.downloads,
    outbound,
    signer: nodeHmacSigner,
    dispatch: { leaseSeconds: config.leaseSeconds }
  })
  return {
    app,
    close: async () => {
      await app.dispose()
      await outbound.close()
    }
  }
}

/**
 * Migrates the database, makes a tenant with a connected chat-app channel (as `admin bootstrap` and
 * `admin channel create` do, in this process) and stores `payloads` as the edge stores them (pending,
 * due now), in transactions of 500.
 */
export const prepareDatabase = async (
  settings: HostSettings,
  payloads: ReadonlyArray<SignedPayload> = []
): Promise<{ readonly tenantId: string; readonly channelId: string }> => {
  const { app, close } = await makeHostApp(settings, { checkpoints: "inline" })
  try {
    return await app.run(Effect.gen(function*() {
      const operator = yield* Operator
      const { tenant_id } = yield* operator.bootstrap({ email: "bench@example.com", tenantName: "Inbound benchmark" })
      const channel = yield* operator.createChannel({
        tenantId: tenant_id,
        type: "chatapp",
        inputs: {
          phone_number_id: PHONE_NUMBER_ID,
          business_account_id: BUSINESS_ACCOUNT_ID,
          access_token: "abcdefghijklmnopqrstuvwxyz"
        }
      })
      const store = yield* InboundStore
      const transactor = yield* Transactor
      const encoder = new TextEncoder()
      for (let start = 0; start < payloads.length; start += 500) {
        yield* transactor.withTransaction(Effect.forEach(payloads.slice(start, start + 500), (payload) => {
          const at = fromMillis(Date.now())
          return store.insert({
            id: globalThis.crypto.randomUUID(),
            source: "chatapp",
            route_key: null,
            body: encoder.encode(payload.body),
            content_type: "application/json",
            received_at: at,
            status: "pending",
            attempts: 0,
            next_attempt_at: at,
            lease_until: null,
            processed_at: null,
            note: null
          })
        }, { discard: true }))
      }
      return { tenantId: tenant_id, channelId: channel.channel_id }
    }))
  } finally {
    await close()
  }
}

/** A connection of the benchmark's own to read the database a host or worker writes. */
export const openReader = (databaseUrl: string): Kysely<Database> =>
  databaseUrl.startsWith("file:")
    ? openSqlite(databaseUrl.slice("file:".length), { checkpoints: "inline" })
    : openPostgres(databaseUrl, { max: 2 })

/** What the database holds after processing: payloads by status, what was stored, the events. */
export interface Counts {
  readonly pending: number
  readonly processed: number
  readonly failed: number
  /** Payloads whose processing left a note (an unknown number, a skipped message, a retry reason). */
  readonly noted: number
  readonly firstNote: string | null
  readonly messages: number
  readonly received: number
  /** `created_at` of the last `message.received` event, epoch ms. */
  readonly lastReceivedAt: number | null
  readonly contacts: number
  readonly conversations: number
}

const count = async (query: Promise<{ readonly n: unknown } | undefined>): Promise<number> => Number((await query)?.n ?? 0)

/** Payloads still pending (claimed or not): cheap, read from the partial index. */
export const pendingPayloads = (db: Kysely<Database>): Promise<number> =>
  count(db.selectFrom("inbound_payloads").select(sql<number>`count(*)`.as("n")).where("status", "=", "pending").executeTakeFirst())

/** Every count the benchmark verifies. */
export const readCounts = async (db: Kysely<Database>): Promise<Counts> => {
  const byStatus = await db.selectFrom("inbound_payloads")
    .select(["status", sql<number>`count(*)`.as("n"), sql<number>`count(note)`.as("noted")])
    .groupBy("status").execute()
  const status = (name: string) => Number(byStatus.find((row) => row.status === name)?.n ?? 0)
  const note = await db.selectFrom("inbound_payloads").select("note").where("note", "is not", null).limit(1).executeTakeFirst()
  const received = await db.selectFrom("outbox_events")
    .select([sql<number>`count(*)`.as("n"), sql<string | null>`max(created_at)`.as("last")])
    .where("type", "=", "message.received").executeTakeFirst()
  return {
    pending: status("pending"),
    processed: status("processed"),
    failed: status("failed"),
    noted: byStatus.reduce((sum, row) => sum + Number(row.noted), 0),
    firstNote: note?.note ?? null,
    messages: await count(db.selectFrom("messages").select(sql<number>`count(*)`.as("n")).where("direction", "=", "inbound").executeTakeFirst()),
    received: Number(received?.n ?? 0),
    lastReceivedAt: received?.last == null ? null : Date.parse(received.last),
    contacts: await count(db.selectFrom("contacts").select(sql<number>`count(*)`.as("n")).executeTakeFirst()),
    conversations: await count(db.selectFrom("conversations").select(sql<number>`count(*)`.as("n")).executeTakeFirst())
  }
}

/** Polls until no payload is pending or `deadline` (epoch ms) passes; reports progress every 5 s. */
export const waitUntilProcessed = async (
  db: Kysely<Database>,
  deadline: number,
  onProgress?: (pending: number) => void,
  everyMs = 50
): Promise<number> => {
  let lastProgress = Date.now()
  for (;;) {
    const pending = await pendingPayloads(db)
    if (pending === 0 || Date.now() > deadline) return pending
    if (onProgress !== undefined && Date.now() - lastProgress >= 5_000) {
      lastProgress = Date.now()
      onProgress(pending)
    }
    await new Promise((resolve) => setTimeout(resolve, everyMs))
  }
}
