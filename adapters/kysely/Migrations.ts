import { type Kysely, sql } from "kysely"
import { type Migration, Migrator } from "kysely/migration"
import type { Database } from "./Database.ts"
import * as Foundation from "./migrations/2026_11_22_0001_foundation.ts"
import * as ChannelsAndConnectTokens from "./migrations/2026_11_22_0002_channels_and_connect_tokens.ts"
import * as WebhookEndpoints from "./migrations/2026_11_22_0003_webhook_endpoints.ts"
import * as WebhookDeliveries from "./migrations/2026_11_22_0004_webhook_deliveries.ts"
import * as WebhookClaimIndexes from "./migrations/2026_11_22_0005_webhook_claim_indexes.ts"
import * as WebhookFanOutLeases from "./migrations/2026_11_24_0006_webhook_fanout_leases.ts"
import * as OutboxUnfannedPartialIndex from "./migrations/2026_11_24_0007_outbox_unfanned_partial_index.ts"
import * as ConversationsAndInbound from "./migrations/2026_11_26_0008_conversations_and_inbound.ts"
import * as TemplatesAndSendingLimits from "./migrations/2026_11_26_0009_templates_and_sending_limits.ts"
import * as Email from "./migrations/2026_11_26_0010_email.ts"
import * as Lists from "./migrations/2026_11_26_0011_lists.ts"
import * as Campaigns from "./migrations/2026_11_26_0012_campaigns.ts"
import * as Flows from "./migrations/2026_11_26_0013_flows.ts"
import * as Summaries from "./migrations/2026_11_26_0014_summaries.ts"
import * as TeamChat from "./migrations/2026_11_26_0015_team_chat.ts"
import * as TraceContext from "./migrations/2026_11_26_0016_trace_context.ts"
import * as RetentionIndexes from "./migrations/2026_11_26_0017_retention_indexes.ts"
import * as InboundTraceContext from "./migrations/2026_11_26_0018_inbound_trace_context.ts"
import * as OneActiveChannelPerNumber from "./migrations/2026_11_28_0019_one_active_channel_per_number.ts"
import * as SendRate from "./migrations/2026_12_07_0020_send_rate.ts"
import * as OpenConversationsByContact from "./migrations/2026_12_07_0021_open_conversations_by_contact.ts"
import * as UnsentAttachments from "./migrations/2026_12_07_0022_unsent_attachments.ts"
import * as LookupsByContact from "./migrations/2026_12_07_0023_lookups_by_contact.ts"
import * as RecipientsByState from "./migrations/2026_12_07_0024_recipients_by_state.ts"
import * as PendingMessages from "./migrations/2026_12_07_0025_pending_messages.ts"
import * as StatusMovesInPlace from "./migrations/2026_12_08_0026_status_moves_in_place.ts"

/** The SQL dialects the adapter speaks. */
export type Dialect = "sqlite" | "postgres"

type Up = (db: Kysely<unknown>, dialect: Dialect) => Promise<void>

// Names sort in the order they must run; a landed migration is never edited, only followed.
const MIGRATIONS: ReadonlyArray<readonly [string, Up]> = [
  ["2026_11_22_0001_foundation", Foundation.up],
  ["2026_11_22_0002_channels_and_connect_tokens", ChannelsAndConnectTokens.up],
  ["2026_11_22_0003_webhook_endpoints", WebhookEndpoints.up],
  ["2026_11_22_0004_webhook_deliveries", WebhookDeliveries.up],
  ["2026_11_22_0005_webhook_claim_indexes", WebhookClaimIndexes.up],
  ["2026_11_24_0006_webhook_fanout_leases", WebhookFanOutLeases.up],
  ["2026_11_24_0007_outbox_unfanned_partial_index", OutboxUnfannedPartialIndex.up],
  ["2026_11_26_0008_conversations_and_inbound", ConversationsAndInbound.up],
  ["2026_11_26_0009_templates_and_sending_limits", TemplatesAndSendingLimits.up],
  ["2026_11_26_0010_email", Email.up],
  ["2026_11_26_0011_lists", Lists.up],
  ["2026_11_26_0012_campaigns", Campaigns.up],
  ["2026_11_26_0013_flows", Flows.up],
  ["2026_11_26_0014_summaries", Summaries.up],
  ["2026_11_26_0015_team_chat", TeamChat.up],
  ["2026_11_26_0016_trace_context", TraceContext.up],
  ["2026_11_26_0017_retention_indexes", RetentionIndexes.up],
  ["2026_11_26_0018_inbound_trace_context", InboundTraceContext.up],
  ["2026_11_28_0019_one_active_channel_per_number", OneActiveChannelPerNumber.up],
  ["2026_12_07_0020_send_rate", SendRate.up],
  ["2026_12_07_0021_open_conversations_by_contact", OpenConversationsByContact.up],
  ["2026_12_07_0022_unsent_attachments", UnsentAttachments.up],
  ["2026_12_07_0023_lookups_by_contact", LookupsByContact.up],
  ["2026_12_07_0024_recipients_by_state", RecipientsByState.up],
  ["2026_12_07_0025_pending_messages", PendingMessages.up],
  ["2026_12_08_0026_status_moves_in_place", StatusMovesInPlace.up]
]

/**
 * The migrations up to and including `last`, in the order they run: the schema a database of that
 * version holds (for tests of upgrades from older versions).
 */
export const migrationsThrough = (last: string): ReadonlyArray<readonly [string, Up]> => {
  const end = MIGRATIONS.findIndex(([name]) => name === last)
  if (end < 0) throw new Error(`no migration named ${last}`)
  return MIGRATIONS.slice(0, end + 1)
}

/** The names of every migration this code knows, in the order they run. */
export const migrationNames = (): ReadonlyArray<string> => MIGRATIONS.map(([name]) => name)

// Any fixed 64-bit number; it only has to differ from other applications' advisory locks.
const MIGRATION_LOCK = 7_342_118_905_221n

/**
 * Brings the schema to the latest version. Idempotent. On PostgreSQL the whole run holds a
 * session advisory lock on one connection, so processes starting together take turns instead of
 * racing on `CREATE TABLE`; SQLite serialises writers by itself.
 */
export const migrate = async (db: Kysely<Database>, dialect: Dialect): Promise<void> => {
  const run = async (conn: Kysely<Database>) => {
    const migrator = new Migrator({
      db: conn,
      provider: {
        getMigrations: async () =>
          Object.fromEntries(
            MIGRATIONS.map(([name, up]): [string, Migration] => [name, { up: (m) => up(m, dialect) }])
          )
      },
      migrationTableName: "omni_migrations",
      migrationLockTableName: "omni_migrations_lock"
    })
    const { error, results } = await migrator.migrateToLatest()
    if (error !== undefined) {
      const failed = results?.find((r) => r.status === "Error")?.migrationName ?? "unknown"
      throw new Error(`migration ${failed} failed: ${error instanceof Error ? error.message : String(error)}`, {
        cause: error
      })
    }
  }
  if (dialect === "sqlite") return run(db)
  await db.connection().execute(async (conn) => {
    await sql`select pg_advisory_lock(${sql.lit(MIGRATION_LOCK)})`.execute(conn)
    try {
      await run(conn)
    } finally {
      await sql`select pg_advisory_unlock(${sql.lit(MIGRATION_LOCK)})`.execute(conn)
    }
  })
}
