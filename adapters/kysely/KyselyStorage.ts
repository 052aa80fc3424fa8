import SqliteDatabase from "better-sqlite3"
import { Effect, Layer } from "effect"
import {
  type Driver,
  Kysely,
  PGliteDialect,
  PostgresDialect,
  type SqliteDatabase as SqliteDialectDatabase,
  SqliteDialect,
  type SqliteDialectConfig,
  SqliteDriver
} from "kysely"
import pg from "pg"
import { batchStatementName } from "./JsonBatch.ts"
import { OutboxNotices } from "../../src/ports/OutboxNotices.ts"
import type { StoragePorts } from "../../src/ports/StoragePorts.ts"
import { KyselyConnection, transactorLayer } from "./Connection.ts"
import type { Database } from "./Database.ts"
import { type Dialect, migrate } from "./Migrations.ts"
import { makeOutboxNotices } from "./OutboxNotices.ts"
import { type BackgroundCheckpoints, FALLBACK_CHECKPOINT_PAGES, startBackgroundCheckpoints } from "./SqliteCheckpoints.ts"
import { accountStoreLayer } from "./stores/AccountStoreKysely.ts"
import { apiKeyStoreLayer } from "./stores/ApiKeyStoreKysely.ts"
import { attachmentStoreLayer } from "./stores/AttachmentStoreKysely.ts"
import { campaignStoreLayer } from "./stores/CampaignStoreKysely.ts"
import { channelStoreLayer } from "./stores/ChannelStoreKysely.ts"
import { connectTokenStoreLayer } from "./stores/ConnectTokenStoreKysely.ts"
import { contactStoreLayer } from "./stores/ContactStoreKysely.ts"
import { conversationStoreLayer } from "./stores/ConversationStoreKysely.ts"
import { emailStoreLayer } from "./stores/EmailStoreKysely.ts"
import { flowStoreLayer } from "./stores/FlowStoreKysely.ts"
import { inboundStoreLayer } from "./stores/InboundStoreKysely.ts"
import { libraryCacheStoreLayer } from "./stores/LibraryCacheStoreKysely.ts"
import { listStoreLayer } from "./stores/ListStoreKysely.ts"
import { messageStoreLayer } from "./stores/MessageStoreKysely.ts"
import { outboxStoreLayer } from "./stores/OutboxStoreKysely.ts"
import { sendingLimitStoreLayer } from "./stores/SendingLimitStoreKysely.ts"
import { sendRateStoreLayer } from "./stores/SendRateStoreKysely.ts"
import { summaryStoreLayer } from "./stores/SummaryStoreKysely.ts"
import { teamChatStoreLayer } from "./stores/TeamChatStoreKysely.ts"
import { templateStoreLayer } from "./stores/TemplateStoreKysely.ts"
import { tenantStoreLayer } from "./stores/TenantStoreKysely.ts"
import { webhookDeliveryStoreLayer } from "./stores/WebhookDeliveryStoreKysely.ts"
import { webhookEndpointStoreLayer } from "./stores/WebhookEndpointStoreKysely.ts"

/** Every port the storage adapter provides. */
export type Storage = StoragePorts

/** How `layer` reaches the database beyond the Kysely instance. */
export interface LayerOptions {
  /**
   * PostgreSQL: a connection string for one extra connection that LISTENs for other processes'
   * outbox commits, so idle workers start on them at once. A Kysely instance from `openPostgres`
   * brings its own; without one, workers find other processes' events at their next look. Behind a
   * pooler in transaction mode, which does not keep LISTEN, give a direct connection string.
   */
  readonly listen?: string
}

// Connection strings of the PostgreSQL instances `openPostgres` made, for their outbox listener.
const connectionStrings = new WeakMap<Kysely<Database>, string>()

/** PostgreSQL's outbox notices over a connection of their own, closed with the layer. */
const noticesLayer = (connectionString: string) =>
  Layer.effect(
    OutboxNotices,
    Effect.acquireRelease(
      Effect.sync(() => makeOutboxNotices(connectionString)),
      (notices) => Effect.promise(notices.close)
    )
  )

/**
 * Every store and the transactor over a Kysely instance you own (you migrate it with `migrate`
 * and close it yourself). This is how an application with its own pool embeds the library.
 */
export const layer = (db: Kysely<Database>, dialect: Dialect, options: LayerOptions = {}): Layer.Layer<Storage> => {
  const listen = dialect === "postgres" ? options.listen ?? connectionStrings.get(db) : undefined
  return Layer.mergeAll(
    listen === undefined ? Layer.empty : noticesLayer(listen),
    transactorLayer,
    tenantStoreLayer,
    accountStoreLayer,
    apiKeyStoreLayer,
    contactStoreLayer,
    outboxStoreLayer,
    channelStoreLayer,
    connectTokenStoreLayer,
    webhookEndpointStoreLayer,
    webhookDeliveryStoreLayer,
    inboundStoreLayer,
    conversationStoreLayer,
    messageStoreLayer,
    attachmentStoreLayer,
    templateStoreLayer,
    libraryCacheStoreLayer,
    sendingLimitStoreLayer,
    sendRateStoreLayer,
    emailStoreLayer,
    listStoreLayer,
    campaignStoreLayer,
    flowStoreLayer,
    summaryStoreLayer,
    teamChatStoreLayer
  ).pipe(Layer.provide(Layer.succeed(KyselyConnection, KyselyConnection.of({ db, dialect }))))
}

/** How `openSqlite` runs the database. */
export interface SqliteOptions {
  /**
   * Who checkpoints the write-ahead log of a file database: `"background"` (the default), a worker
   * thread with its own connection, so the copying and syncing never hold up the event loop (the
   * application's connection still checkpoints itself should the log pass 4,000 pages); or
   * `"inline"`, the application's connection every 1,000 pages, as SQLite does by default.
   */
  readonly checkpoints?: "background" | "inline"
}

/** Whether `path` names a database that lives only in memory (no file, so no write-ahead log). */
const inMemory = (path: string) => path === "" || path === ":memory:" || path.startsWith("file::memory:")

/**
 * A Kysely instance over better-sqlite3 at `path` (`:memory:` for a private in-memory database). The
 * database is opened at the first query: Kysely's `destroy` closes only what it opened, so an instance
 * never used must hold nothing open. `destroy` resolves once the checkpoint thread has ended too.
 */
export const openSqlite = (path: string, options: SqliteOptions = {}): Kysely<Database> => {
  let checkpoints: BackgroundCheckpoints | undefined
  const open = async () => {
    const database = new SqliteDatabase(path)
    database.pragma("journal_mode = WAL")
    database.pragma("synchronous = NORMAL")
    database.pragma("busy_timeout = 5000")
    database.pragma("foreign_keys = ON")
    if ((options.checkpoints ?? "background") === "background" && !inMemory(path)) {
      database.pragma(`wal_autocheckpoint = ${FALLBACK_CHECKPOINT_PAGES}`)
      checkpoints = startBackgroundCheckpoints(path, (message) =>
        process.emitWarning(`SQLite background checkpoints stopped (${message}); the connection checkpoints itself`))
    }
    return withStatementCache(database)
  }
  return new Kysely<Database>({
    dialect: new SqliteDialectAwaitingClose({ database: open }, async () => checkpoints?.close())
  })
}

/** Kysely's SQLite dialect whose `destroy` also waits for `afterClose`: Kysely does not wait on a database's `close`. */
class SqliteDialectAwaitingClose extends SqliteDialect {
  constructor(private readonly config: SqliteDialectConfig, private readonly afterClose: () => Promise<void>) {
    super(config)
  }
  override createDriver(): Driver {
    const afterClose = this.afterClose
    return new (class extends SqliteDriver {
      override async destroy() {
        await super.destroy()
        await afterClose()
      }
    })(this.config)
  }
}

/** Statements kept prepared per database: the hot queries repeat, and preparing costs more than running. */
const STATEMENT_CACHE_SIZE = 256

/**
 * better-sqlite3 with its prepared statements reused by SQL text (least recently used dropped first).
 * Kysely prepares every query it runs, and the webhook engine runs the same few thousands of times a
 * second. Sharing a statement is safe: queries on the one connection run one at a time.
 */
const withStatementCache = (database: SqliteDatabase.Database): SqliteDialectDatabase => {
  const statements = new Map<string, SqliteDatabase.Statement>()
  return {
    close: () => {
      statements.clear()
      database.close()
    },
    prepare: (text) => {
      let statement = statements.get(text)
      if (statement === undefined) {
        statement = database.prepare(text)
        if (statements.size >= STATEMENT_CACHE_SIZE) statements.delete(statements.keys().next().value!)
      } else {
        statements.delete(text)
      }
      statements.set(text, statement)
      return statement
    }
  }
}

/**
 * How the library's queries go to `pg` (every promise-form call: Kysely's). The batch statements
 * (`JsonBatch.ts`) go as named statements: PostgreSQL parses and plans each once per connection and
 * then only binds and runs it; every other text goes unnamed (parsed each time). And a query lets go
 * of its parameters once answered: `pg` keeps each query reachable from its promise's callback until a
 * major collection, so a batch's JSON text (kilobytes per row) outlived its round trip and was moved
 * to old space, which V8 then let grow about four times over before collecting (4 KB per campaign
 * recipient of the 6 to 9 KB promoted on PostgreSQL). Calls with a callback or a submittable go as
 * they came.
 */
const sendsQueries = (client: pg.PoolClient) => {
  const query = client.query.bind(client) as (...args: Array<unknown>) => unknown
  client.query = ((text: unknown, values?: unknown, callback?: unknown) => {
    if (typeof text !== "string" || typeof values === "function" || callback !== undefined) return query(text, values, callback)
    const name = batchStatementName(text)
    return new Promise((resolve, reject) => {
      const sent: pg.Query = new pg.Query({ name, text, values: values as Array<unknown> | undefined }, (error, result) => {
        ;(sent as { values?: unknown }).values = undefined
        if (error === undefined || error === null) resolve(result)
        else reject(error)
      })
      query(sent)
    })
  }) as typeof client.query
}

/**
 * A Kysely instance over a `pg` pool. BIGINT comes back as a number through this pool's own
 * type parsers; the global `pg.types` are left alone so a host application is not affected.
 */
export const openPostgres = (connectionString: string, options: { readonly max?: number } = {}): Kysely<Database> => {
  const types = new Map<number, (value: string) => unknown>([[20, (value) => Number(value)]])
  const pool = new pg.Pool({
    connectionString,
    max: options.max ?? 10,
    // Named statements are parsed once, planned for their first five runs and then run by one generic
    // plan while it is no dearer (PostgreSQL's default): planning each run cost about 5 µs of the
    // server's CPU per inbound item and 40 % of a fan-out take. A generic plan made while a table was
    // nearly empty is kept until the next ANALYZE, so every named statement reaches its rows by their
    // key whatever the statistics say (conformance: postgres-claims.test.ts); the few that cannot are
    // never prepared (`jsonBatch`'s `prepared: false`) and planned at each run.
    // Nor by statistics at all where an index serves: with sequential and bitmap scans priced out, a
    // table loaded in one go since its last ANALYZE (planned as a page or two) is still read through
    // its indexes, in their order, where it was read whole for each claim and fan-out round, or read
    // whole and sorted for each keyset page. Every query the library runs has an index path where it
    // matters; a scan stays where there is none. JIT off: a priced-out scan would cross its cost
    // threshold and compile a short query for a third of a second.
    options: "-c plan_cache_mode=auto -c enable_seqscan=off -c enable_bitmapscan=off -c jit=off",
    types: {
      getTypeParser: ((oid: number, format?: "text" | "binary") =>
        types.get(oid) ?? pg.types.getTypeParser(oid, format ?? "text")) as typeof pg.types.getTypeParser
    }
  })
  // A connection the server ends (a restart, pg_terminate_backend, a revoked CONNECT) emits "error"
  // outside any query; unheard, that would end the process. Queries still fail with it, and the pool
  // drops the broken client, so the host reports the database unavailable and carries on.
  pool.on("error", () => undefined)
  pool.on("connect", (client) => {
    client.on("error", () => undefined)
    sendsQueries(client)
  })
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) })
  connectionStrings.set(db, connectionString)
  return db
}

/** A Kysely instance over an in-process PGlite (a WASM PostgreSQL), for tests without a server. */
export const openPglite = async (): Promise<Kysely<Database>> => {
  const { PGlite } = await import("@electric-sql/pglite")
  return new Kysely<Database>({ dialect: new PGliteDialect({ pglite: new PGlite() }) })
}

/**
 * What a database URL selects: `file:PATH` or `:memory:` (SQLite, opened with `sqlite`),
 * `postgres://…` (PostgreSQL).
 */
export const parseDatabaseUrl = (
  url: string,
  sqlite: SqliteOptions = {}
): { readonly dialect: Dialect; readonly open: () => Kysely<Database> } => {
  if (url === ":memory:") return { dialect: "sqlite", open: () => openSqlite(":memory:") }
  if (url.startsWith("file:")) return { dialect: "sqlite", open: () => openSqlite(url.slice("file:".length), sqlite) }
  if (/^postgres(ql)?:\/\//.test(url)) return { dialect: "postgres", open: () => openPostgres(url) }
  throw new Error(`DATABASE_URL must be file:PATH, :memory: or postgres://…, got ${JSON.stringify(url)}`)
}

/**
 * Opens the database at `url` (a SQLite one with `sqlite`), migrates it, provides every store, and
 * closes it when the layer is released. This is what the reference host uses.
 */
export const layerFromUrl = (url: string, sqlite: SqliteOptions = {}): Layer.Layer<Storage | KyselyConnection, Error> => {
  const { dialect, open } = parseDatabaseUrl(url, sqlite)
  return layerManaged(Effect.sync(open), dialect)
}

/** Like `layerFromUrl`, for a Kysely instance made by `acquire`: migrated, then destroyed on release. */
export const layerManaged = (
  acquire: Effect.Effect<Kysely<Database>, Error>,
  dialect: Dialect
): Layer.Layer<Storage | KyselyConnection, Error> =>
  Layer.unwrap(
    Effect.gen(function*() {
      const db = yield* Effect.acquireRelease(acquire, (db) => Effect.promise(() => db.destroy()))
      yield* Effect.tryPromise({
        try: () => migrate(db, dialect),
        catch: (cause) => (cause instanceof Error ? cause : new Error(String(cause)))
      })
      return Layer.merge(layer(db, dialect), Layer.succeed(KyselyConnection, KyselyConnection.of({ db, dialect })))
    })
  )

export { type Dialect, migrate } from "./Migrations.ts"
export type { Database } from "./Database.ts"
/** The row of each table, as stored (what `Kysely<Database>` selects and inserts). */
export type {
  AiCreditBalancesTable,
  AiCreditEntriesTable,
  ApiKeysTable,
  AttachmentSummariesTable,
  AttachmentsTable,
  BillingAccountsTable,
  CampaignBatchesTable,
  CampaignRecipientsTable,
  CampaignsTable,
  ChannelsTable,
  ChatappTemplatesTable,
  ConnectTokensTable,
  ContactTagsTable,
  ContactsTable,
  ConversationsTable,
  CustomFieldDefinitionsTable,
  EmailAttachmentsTable,
  EmailInlineImagesTable,
  EmailIntegrationsTable,
  EmailMessagesTable,
  FlowDefinitionsTable,
  FlowSessionsTable,
  FlowVersionsTable,
  InboundHandledTable,
  InboundPayloadsTable,
  LibraryCacheTable,
  ListSubscriptionsTable,
  ListsTable,
  MarketingOptOutsTable,
  MessageStatusesTable,
  MessagesTable,
  OutboxEventsTable,
  SendRatesTable,
  SendingLimitsTable,
  SummaryRateCountersTable,
  TagsTable,
  TeamChatChannelTenantsTable,
  TeamChatChannelsTable,
  TeamChatMembersTable,
  TeamChatMessageAttachmentsTable,
  TeamChatMessagesTable,
  TenantsTable,
  UsersTable,
  WebhookDeliveriesTable,
  WebhookEndpointsTable,
  WebhookFanOutLeasesTable
} from "./Database.ts"
export type { Flag } from "./Flag.ts"
export { KyselyConnection } from "./Connection.ts"
export { checkStorageReadiness, type StorageReadiness } from "./Readiness.ts"
