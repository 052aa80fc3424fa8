import type { Kysely } from "kysely"
import { type Database, layer } from "../../adapters/kysely/KyselyStorage.ts"
import type { RetryStrategy } from "../../src/webhooks/RetrySchedule.ts"
import { testDatabases } from "../support/Databases.ts"
import { type StoredRows, storageConformance } from "./index.ts"

// Database.ts documents the stored form: booleans as 0/1 integers, structured values as JSON text.
// Decoding here, independently of the stores, also checks that rows are stored in that form.
const flag = (value: number): boolean => {
  if (value !== 0 && value !== 1) throw new Error(`a stored flag must be 0 or 1, found ${JSON.stringify(value)}`)
  return value === 1
}

const json = (text: string): unknown => {
  if (typeof text !== "string") throw new Error(`a stored JSON value must be text, found ${typeof text}`)
  return JSON.parse(text)
}

const oneOf = <const A extends string>(what: string, allowed: ReadonlyArray<A>) => (value: string): A => {
  if (!(allowed as ReadonlyArray<string>).includes(value)) {
    throw new Error(`a stored ${what} must be one of ${allowed.join(", ")}, found ${JSON.stringify(value)}`)
  }
  return value as A
}
const channelStatus = oneOf("channel status", ["active", "disconnected"])
const sourceFilterMode = oneOf("source_filter_mode", ["all", "selected"])
const retryStrategy = oneOf<RetryStrategy>("retry_strategy", ["exponential", "linear", "none"])

const jsonList = (text: string | null): Array<string> | null => text === null ? null : json(text) as Array<string>

// The columns of a webhook endpoint record, named so a column added for other uses is not read.
const WEBHOOK_ENDPOINT_COLUMNS = [
  "id", "tenant_id", "name", "url", "secret", "authorization_header", "subscribed_events", "source_filter_mode",
  "filtered_channel_ids", "filtered_email_integration_ids", "retry_strategy", "max_retries", "timeout_seconds",
  "is_active", "is_verified", "consecutive_failures", "suspended_at", "next_reactivation_at", "reactivation_attempts",
  "permanently_deactivated_at", "last_success_at", "last_failure_at", "last_error", "created_at", "updated_at"
] as const

/** The rows as stored, read with plain queries on the root handle. */
const storedRows = (db: Kysely<Database>): StoredRows => ({
  user: (id) => db.selectFrom("users").selectAll().where("id", "=", id).executeTakeFirst(),
  billingAccount: (id) => db.selectFrom("billing_accounts").selectAll().where("id", "=", id).executeTakeFirst(),
  tenant: async (id) => {
    const row = await db.selectFrom("tenants").selectAll().where("id", "=", id).executeTakeFirst()
    return row && {
      ...row,
      is_trial: flag(row.is_trial),
      is_active: flag(row.is_active),
      ai_features_enabled: flag(row.ai_features_enabled),
      multi_agent_mode: flag(row.multi_agent_mode),
      sms_enabled: flag(row.sms_enabled)
    }
  },
  apiKey: async (lookup) => {
    const row = await db.selectFrom("api_keys").selectAll().where("lookup", "=", lookup).executeTakeFirst()
    return row && { ...row, scopes: json(row.scopes) as Array<string>, is_parent: flag(row.is_parent) }
  },
  contacts: async (tenantId) => {
    const rows = await db.selectFrom("contacts").selectAll().where("tenant_id", "=", tenantId).execute()
    return rows.map((row) => ({ ...row, custom_fields: json(row.custom_fields) as Record<string, unknown> }))
  },
  outboxEvents: async (tenantId) => {
    const rows = await db.selectFrom("outbox_events").select(["id", "type", "event_id", "created_at", "tenant_id", "data"])
      .where("tenant_id", "=", tenantId).orderBy("seq").execute()
    return rows.map((row) => ({ ...row, data: json(row.data) as Record<string, unknown> }))
  },
  channels: async (tenantId) => {
    const rows = await db.selectFrom("channels").selectAll().where("tenant_id", "=", tenantId).execute()
    return rows.map((row) => ({
      ...row,
      status: channelStatus(row.status),
      config: json(row.config) as Record<string, string>,
      secrets: json(row.secrets) as Record<string, string>
    }))
  },
  connectTokens: async (tenantId) => {
    const rows = await db.selectFrom("connect_tokens").selectAll().where("tenant_id", "=", tenantId).execute()
    return rows.map((row) => ({ ...row, allowed_channel_types: json(row.allowed_channel_types) as Array<string> }))
  },
  webhookEndpoints: async (tenantId) => {
    const rows = await db.selectFrom("webhook_endpoints").select(WEBHOOK_ENDPOINT_COLUMNS).where("tenant_id", "=", tenantId).execute()
    return rows.map((row) => ({
      ...row,
      subscribed_events: json(row.subscribed_events) as Array<string>,
      source_filter_mode: sourceFilterMode(row.source_filter_mode),
      filtered_channel_ids: jsonList(row.filtered_channel_ids),
      filtered_email_integration_ids: jsonList(row.filtered_email_integration_ids),
      retry_strategy: retryStrategy(row.retry_strategy),
      is_active: flag(row.is_active),
      is_verified: flag(row.is_verified)
    }))
  }
})

for (const database of testDatabases) {
  storageConformance(`Kysely storage on ${database.name}`, async () => {
    const opened = await database.open()
    return {
      layer: layer(opened.db, opened.dialect),
      capabilities: { concurrentConnections: opened.concurrentConnections },
      storedRows: storedRows(opened.db),
      close: opened.close
    }
  })
}
