import { Context, type Effect, type Option } from "effect"
import type { StorageError } from "./StorageError.ts"

/** One titled part of a stored summary (`description`/`text` for images, `summary`/`key_facts` for PDFs). */
export interface StoredSummarySection {
  readonly key: string
  readonly text: string
}

/**
 * The summary of one attachment (at most one per attachment in a tenant), in its life
 * `pending` → `ok` | `failed`; a `failed` one, or a `pending` one whose lease ran out (its generator
 * crashed), is generated anew under the next `generation`.
 */
export interface SummaryRecord {
  readonly id: string
  readonly tenant_id: string
  readonly attachment_id: string
  readonly status: "ok" | "pending" | "failed"
  readonly kind: "image" | "pdf"
  /** Plain text, untrusted (derived from customer content); empty until `ok`. */
  readonly text: string
  readonly sections: ReadonlyArray<StoredSummarySection>
  readonly pages_read: number | null
  readonly pages_total: number | null
  readonly truncated: boolean
  /** Empty until `ok`. */
  readonly model: string
  /** `on_demand` (a POST, priced) or `agent` (a host's assistant, free). */
  readonly source: "on_demand" | "agent"
  /** Why the last generation failed; null otherwise. */
  readonly error: string | null
  /** From 1, one more for each generation; a generation's outcome is stored only under its own number. */
  readonly generation: number
  /** While `pending`: when another request may take the generation over; null otherwise. */
  readonly lease_until: string | null
  readonly created_at: string
  readonly updated_at: string
}

/** What a generation's outcome writes over its `pending` row. */
export type SummaryOutcome = Pick<
  SummaryRecord,
  "status" | "text" | "sections" | "pages_read" | "pages_total" | "truncated" | "model" | "error" | "updated_at"
>

/** A line of a tenant's AI credit ledger: a grant (positive) or the charge of one summary generation (negative). */
export interface CreditEntryRecord {
  readonly id: string
  readonly tenant_id: string
  readonly amount: number
  readonly reason: "grant" | "summary"
  /** The summarized attachment, for a charge. */
  readonly attachment_id: string | null
  /**
   * For a charge: `<summary id>:<generation>`, unique in the tenant, so one generation is charged
   * once whatever retries or races happen. Null for a grant.
   */
  readonly charge_key: string | null
  readonly created_at: string
}

/** A tenant's credits as the ledger sums them, kept beside it so reading costs one row. */
export interface CreditBalance {
  readonly balance: number
  /** Every credit ever charged (a positive number). */
  readonly charged_total: number
}

/** One fixed-window request counter to take a request from: a key of the tenant, at most `limit` per window. */
export interface RateBucket {
  readonly key: string
  readonly limit: number
}

/**
 * Summaries of attachments, the AI credit ledger and the summary request counters. Every method is
 * scoped by tenant id.
 */
export class SummaryStore extends Context.Service<SummaryStore, {
  readonly get: (tenantId: string, attachmentId: string) => Effect.Effect<Option.Option<SummaryRecord>, StorageError>
  /** The summaries of these attachments (one query), in any order; attachments without one are left out. */
  readonly listByAttachments: (
    tenantId: string,
    attachmentIds: ReadonlyArray<string>
  ) => Effect.Effect<ReadonlyArray<SummaryRecord>, StorageError>
  /**
   * Stores a first `pending` summary of its attachment: `false`, and nothing written, when the
   * attachment has a summary already (two first requests at once: exactly one inserts).
   */
  readonly insertPending: (summary: SummaryRecord) => Effect.Effect<boolean, StorageError>
  /**
   * Starts the next generation of a summary that is still at `generation` (a `failed` one, or a
   * `pending` one whose lease ran out): `pending` under `generation + 1` with the new lease, source and
   * kind. `false` when another request changed it first (exactly one of several at once wins).
   */
  readonly claimNext: (
    tenantId: string,
    id: string,
    generation: number,
    next: Pick<SummaryRecord, "kind" | "source" | "lease_until" | "updated_at">
  ) => Effect.Effect<boolean, StorageError>
  /**
   * Writes a generation's outcome over a summary still `pending` at `generation`: `false` when the
   * generation was taken over meanwhile (its outcome is then dropped).
   */
  readonly settle: (
    tenantId: string,
    id: string,
    generation: number,
    outcome: SummaryOutcome
  ) => Effect.Effect<boolean, StorageError>

  /**
   * Appends a ledger line and moves the balance by its amount in one atomic unit. A charge whose
   * `charge_key` is in the ledger already writes nothing and answers `false`.
   */
  readonly addCredits: (entry: CreditEntryRecord) => Effect.Effect<boolean, StorageError>
  /** The tenant's balance and charged total; zero for a tenant with no ledger line. */
  readonly balance: (tenantId: string) => Effect.Effect<CreditBalance, StorageError>
  /** The tenant's ledger, oldest first. */
  readonly listCredits: (tenantId: string) => Effect.Effect<ReadonlyArray<CreditEntryRecord>, StorageError>

  /**
   * Takes one request from each bucket's counter of the window starting at `windowStart`, in order,
   * atomically across processes: when a bucket is full, what was taken from the earlier ones is given
   * back and nothing counts. Answers the key of the full bucket, or none when all were taken.
   * Counters of windows before `windowStart` are removed along the way.
   */
  readonly takeRequest: (
    tenantId: string,
    windowStart: string,
    buckets: ReadonlyArray<RateBucket>
  ) => Effect.Effect<Option.Option<string>, StorageError>
}>()("omnichannel-core/ports/SummaryStore") {}
