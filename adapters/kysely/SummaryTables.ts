import type { Flag } from "./Flag.ts"

/**
 * The tables of AI file summaries, credits and request counters, as stored (see migration 0014 and
 * `Database.ts` for the rules every table follows).
 */

/** The summary of one attachment; `sections` is JSON text. */
export interface AttachmentSummariesTable {
  id: string
  tenant_id: string
  attachment_id: string
  status: string
  kind: string
  text: string
  /** The sections, a JSON array of `{ key, text }`. */
  sections: string
  pages_read: number | null
  pages_total: number | null
  truncated: Flag
  model: string
  source: string
  error: string | null
  generation: number
  lease_until: string | null
  created_at: string
  updated_at: string
}

/** A line of the AI credit ledger: a grant (positive) or a charge (negative, unique `charge_key`). */
export interface AiCreditEntriesTable {
  id: string
  tenant_id: string
  amount: number
  reason: string
  attachment_id: string | null
  charge_key: string | null
  created_at: string
}

/** A tenant's ledger summed. BIGINT: read through `Number`, as a driver may hand it back as text. */
export interface AiCreditBalancesTable {
  tenant_id: string
  balance: number
  charged_total: number
  updated_at: string
}

/** Summary requests counted in one fixed window, per tenant and key (`workspace`, `api_key:<id>`, `user:<id>`). */
export interface SummaryRateCountersTable {
  tenant_id: string
  key: string
  window_start: string
  count: number
}
