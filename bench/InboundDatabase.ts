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
import { pendingRow } from "../src/inbound/InboundService.ts"
import { newIdNow } from "../src/kernel/Id.ts"
import { fromMillis } from "../src/kernel/Timestamp.ts"
import { ContactStore } from "../src/ports/ContactStore.ts"
import { ConversationStore } from "../src/ports/ConversationStore.ts"
import { InboundStore } from "../src/ports/InboundStore.ts"
import { Transactor } from "../src/ports/Transactor.ts"
import type { MessagesTable } from "../adapters/kysely/Database.ts"
import { BUSINESS_ACCOUNT_ID, type OutboundMessage, PHONE_NUMBER_ID, type SignedPayload, waIdOf } from "./InboundPayloads.ts"

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

/** Outbound messages a multi-row insert writes at once: 18 columns each, under both dialects' bound-parameter limits. */
const OUTBOUND_ROWS_PER_INSERT = 1_000

/**
 * Migrates the database, makes a tenant with a connected chat-app channel (as `admin bootstrap` and
 * `admin channel create` do, in this process) and stores `payloads` as the edge stores them (pending,
 * due now), in transactions of 500. With `outbound`, first the messages the host sent: their
 * contacts with an open conversation each (through the storage ports, as the host's send made
 * them), then the messages themselves, `sent` with their wamid, in multi-row inserts of the columns
 * the library's message store writes. PostgreSQL's statistics of what was stored are then gathered (`ANALYZE`).
 */
export const prepareDatabase = async (
  settings: HostSettings,
  payloads: ReadonlyArray<SignedPayload> = [],
  outbound: ReadonlyArray<OutboundMessage> = []
): Promise<{ readonly tenantId: string; readonly channelId: string }> => {
  const { app, close } = await makeHostApp(settings, { checkpoints: "inline" })
  let prepared: { readonly tenantId: string; readonly channelId: string; readonly conversations: ReadonlyMap<number, { readonly contactId: string; readonly conversationId: string }> }
  try {
    prepared = await app.run(Effect.gen(function*() {
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
      const contactStore = yield* ContactStore
      const conversationStore = yield* ConversationStore
      const conversations = new Map<number, { readonly contactId: string; readonly conversationId: string }>()
      const recipients = [...new Set(outbound.map((message) => message.contact))]
      for (let start = 0; start < recipients.length; start += 500) {
        const at = fromMillis(Date.now())
        yield* transactor.withTransaction(Effect.forEach(recipients.slice(start, start + 500), (contact) =>
          Effect.gen(function*() {
            const ids = { contactId: newIdNow(), conversationId: newIdNow() }
            yield* contactStore.insert({
              id: ids.contactId, tenant_id, name: `Contact ${contact}`, phone: `+${waIdOf(contact)}`, email: null, language: null,
              custom_fields: {}, created_at: at, updated_at: null
            })
            yield* conversationStore.insert({
              id: ids.conversationId, tenant_id, channel_id: channel.channel_id, contact_id: ids.contactId, status: "open", kind: "chat",
              subject: null, created_at: at, updated_at: null, closed_at: null, last_message_at: at, last_inbound_at: null
            })
            conversations.set(contact, ids)
          }), { discard: true }))
      }
      const encoder = new TextEncoder()
      for (let start = 0; start < payloads.length; start += 500) {
        yield* transactor.withTransaction(Effect.forEach(payloads.slice(start, start + 500), (payload) => {
          const at = fromMillis(Date.now())
          return store.insert(
            pendingRow(globalThis.crypto.randomUUID(), "chatapp", null, encoder.encode(payload.body), "application/json", at, null).payload
          )
        }, { discard: true }))
      }
      return { tenantId: tenant_id, channelId: channel.channel_id, conversations }
    }))
  } finally {
    await close()
  }
  const db = openReader(settings.databaseUrl)
  try {
    const rowOf = (message: OutboundMessage): MessagesTable => {
      const { contactId, conversationId } = prepared.conversations.get(message.contact)!
      const sentAt = fromMillis(message.sentAt)
      return {
        id: newIdNow(), tenant_id: prepared.tenantId, conversation_id: conversationId, channel_id: prepared.channelId,
        contact_id: contactId, direction: "outbound", message_type: "text", text: `re: ${message.externalId}`, content: "{}",
        status: "sent", external_id: message.externalId, error: null, created_at: sentAt, updated_at: sentAt, sent_at: sentAt,
        delivered_at: null, read_at: null, failed_at: null
      }
    }
    if (outbound.length > 0) {
      await db.transaction().execute(async (trx) => {
        for (let start = 0; start < outbound.length; start += OUTBOUND_ROWS_PER_INSERT) {
          await trx.insertInto("messages").values(outbound.slice(start, start + OUTBOUND_ROWS_PER_INSERT).map(rowOf)).execute()
        }
      })
    }
    // PostgreSQL plans by its statistics of what was stored, which autovacuum would otherwise gather
    // at some moment during the run, changing plans midway; a database in service has them.
    const stored = payloads.length > 0 || outbound.length > 0
    if (stored && !settings.databaseUrl.startsWith("file:")) await sql`ANALYZE`.execute(db)
  } finally {
    await db.destroy()
  }
  return { tenantId: prepared.tenantId, channelId: prepared.channelId }
}

/** The `application_name` of the benchmark's own PostgreSQL connections: the backends a quiet database may keep. */
export const BENCH_APPLICATION = "omnichannel-bench"

/** `databaseUrl` with the benchmark's `application_name`, so its backends are told from the library's. */
export const benchConnectionUrl = (databaseUrl: string): string => {
  const url = new URL(databaseUrl)
  url.searchParams.set("application_name", BENCH_APPLICATION)
  return url.toString()
}

/** A connection of the benchmark's own to read the database a host or worker writes. */
export const openReader = (databaseUrl: string): Kysely<Database> =>
  databaseUrl.startsWith("file:")
    ? openSqlite(databaseUrl.slice("file:".length), { checkpoints: "inline" })
    : openPostgres(benchConnectionUrl(databaseUrl), { max: 2 })

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
  /** When the last payload was processed (`processed_at`), epoch ms. */
  readonly lastProcessedAt: number | null
  readonly contacts: number
  readonly conversations: number
}

const count = async (query: Promise<{ readonly n: unknown } | undefined>): Promise<number> => Number((await query)?.n ?? 0)

/** Payloads still pending (claimed or not): a count of the partial index, for progress. */
export const pendingPayloads = (db: Kysely<Database>): Promise<number> =>
  count(db.selectFrom("inbound_payloads").select(sql<number>`count(*)`.as("n")).where("status", "=", "pending").executeTakeFirst())

/** Whether any payload is pending: one row of the partial index at most, so polling it barely shows in the database's statistics. */
const anyPending = async (db: Kysely<Database>): Promise<boolean> =>
  (await db.selectFrom("inbound_payloads").select("id").where("status", "=", "pending").limit(1).executeTakeFirst()) !== undefined

/** The newest outbox sequence number (0 when none): one index entry, for progress without counting. */
export const lastEventSeq = async (db: Kysely<Database>): Promise<number> =>
  Number((await db.selectFrom("outbox_events").select("seq").orderBy("seq", "desc").limit(1).executeTakeFirst())?.seq ?? 0)

/** Every count the benchmark verifies. */
export const readCounts = async (db: Kysely<Database>): Promise<Counts> => {
  const byStatus = await db.selectFrom("inbound_payloads")
    .select(["status", sql<number>`count(*)`.as("n"), sql<number>`count(note)`.as("noted"), sql<string | null>`max(processed_at)`.as("last")])
    .groupBy("status").execute()
  const lastProcessed = byStatus.find((row) => row.status === "processed")?.last ?? null
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
    lastProcessedAt: lastProcessed === null ? null : Date.parse(lastProcessed),
    contacts: await count(db.selectFrom("contacts").select(sql<number>`count(*)`.as("n")).executeTakeFirst()),
    conversations: await count(db.selectFrom("conversations").select(sql<number>`count(*)`.as("n")).executeTakeFirst())
  }
}

/**
 * Polls until no payload is pending or `deadline` (epoch ms) passes; resolves to whether none is.
 * `onProgress` runs every 5 s meanwhile.
 */
export const waitUntilProcessed = async (
  db: Kysely<Database>,
  deadline: number,
  onProgress?: () => Promise<void>,
  everyMs = 50
): Promise<boolean> => {
  let lastProgress = Date.now()
  for (;;) {
    if (!(await anyPending(db))) return true
    if (Date.now() > deadline) return false
    if (onProgress !== undefined && Date.now() - lastProgress >= 5_000) {
      lastProgress = Date.now()
      await onProgress()
    }
    await new Promise((resolve) => setTimeout(resolve, everyMs))
  }
}

/** Where the mix's outbound messages and the statuses reported for them ended. */
export interface StatusCounts {
  readonly outbound: number
  /** Outbound messages now `read` with `sent_at`, `delivered_at` and `read_at` all set. */
  readonly readWithTimes: number
  /** Statuses carried by the payloads processed (a status handled again to no effect keeps no key of its own to count). */
  readonly handled: number
  /** Rows of `message_statuses` about an outbound message of the channel (kept apart only while a message is unknown or pending). */
  readonly keptOfOutbound: number
}

/** The statuses an operator payload carries. */
const statusesIn = (body: Uint8Array | string): number => {
  const payload = JSON.parse(typeof body === "string" ? body : Buffer.from(body).toString("utf8")) as {
    readonly entry?: ReadonlyArray<{ readonly changes?: ReadonlyArray<{ readonly value?: { readonly statuses?: ReadonlyArray<unknown> } }> }>
  }
  return (payload.entry ?? []).flatMap((entry) => entry.changes ?? []).reduce((sum, change) => sum + (change.value?.statuses?.length ?? 0), 0)
}

export const readStatusCounts = async (db: Kysely<Database>): Promise<StatusCounts> => {
  const outbound = db.selectFrom("messages").select(sql<number>`count(*)`.as("n")).where("direction", "=", "outbound")
  return {
    outbound: await count(outbound.executeTakeFirst()),
    readWithTimes: await count(
      outbound.where("status", "=", "read").where("sent_at", "is not", null).where("delivered_at", "is not", null)
        .where("read_at", "is not", null).executeTakeFirst()
    ),
    handled: (await db.selectFrom("inbound_payloads").select("body").where("status", "=", "processed").execute())
      .reduce((sum, row) => sum + statusesIn(row.body), 0),
    keptOfOutbound: await count(
      db.selectFrom("message_statuses as s")
        .innerJoin("messages as m", (join) =>
          join.onRef("m.channel_id", "=", "s.channel_id").onRef("m.external_id", "=", "s.external_id").on("m.direction", "=", "outbound"))
        .select(sql<number>`count(*)`.as("n")).executeTakeFirst()
    )
  }
}
