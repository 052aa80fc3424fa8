import { Context, type Effect, type Option } from "effect"
import type { StorageError } from "./StorageError.ts"

/** A tenant (workspace) as stored, with its workspace defaults. */
export interface TenantRecord {
  readonly id: string
  readonly billing_account_id: string
  readonly name: string
  readonly slug: string
  readonly company_email: string | null
  readonly support_email: string | null
  readonly pricing_model_id: string | null
  readonly is_trial: boolean
  readonly trial_ends_at: string | null
  readonly is_active: boolean
  readonly subscription_tier: string
  readonly ai_features_enabled: boolean
  readonly multi_agent_mode: boolean
  readonly auto_summarize_on_close: string
  readonly auto_transcript_export_format: string
  /** SMS is gated per tenant: connect links may offer `sms` only once it is enabled. */
  readonly sms_enabled: boolean
  readonly created_at: string
  readonly updated_at: string | null
}

/**
 * The tenants a caller reaches: those named in `tenantIds` whatever their state, and the active
 * tenants of the billing accounts in `activeInBillingAccounts`.
 */
export interface TenantReach {
  readonly tenantIds: ReadonlyArray<string>
  readonly activeInBillingAccounts: ReadonlyArray<string>
}

/** Tenants. A tenant's id is its own scope: reads take the id the caller is authorised for. */
export class TenantStore extends Context.Service<TenantStore, {
  /** Stores a new tenant; a taken slug fails with `UniqueViolation` on `tenants_slug_unique`. */
  readonly insert: (tenant: TenantRecord) => Effect.Effect<void, StorageError>
  /**
   * Stores a new tenant unless its slug is taken, then `false` and nothing stored, without failing:
   * so a caller inside a larger transaction can try another slug (on PostgreSQL a failed statement
   * would abort the whole transaction). Waits for a concurrent insert of the same slug to settle.
   */
  readonly insertUnlessSlugTaken: (tenant: TenantRecord) => Effect.Effect<boolean, StorageError>
  readonly get: (tenantId: string) => Effect.Effect<Option.Option<TenantRecord>, StorageError>
  /** Turns SMS on or off for the tenant; `false` when no such tenant exists. */
  readonly setSmsEnabled: (tenantId: string, enabled: boolean, at: string) => Effect.Effect<boolean, StorageError>
  /** Turns AI features on or off for the tenant; `false` when no such tenant exists. */
  readonly setAiFeaturesEnabled: (tenantId: string, enabled: boolean, at: string) => Effect.Effect<boolean, StorageError>
  /** A page of the tenants `reach` names, oldest first (ties by id), and how many there are. */
  readonly listReachable: (
    reach: TenantReach,
    window: { readonly limit: number; readonly offset: number }
  ) => Effect.Effect<{ readonly items: ReadonlyArray<TenantRecord>; readonly total: number }, StorageError>
  /** True when some tenant already uses `slug`. */
  readonly slugTaken: (slug: string) => Effect.Effect<boolean, StorageError>
  /**
   * A page of every tenant, of every billing account, oldest first (ties by id), and how many there
   * are: the operator's view (`admin tenant list`), never a caller's.
   */
  readonly listAll: (
    window: { readonly limit: number; readonly offset: number }
  ) => Effect.Effect<{ readonly items: ReadonlyArray<TenantRecord>; readonly total: number }, StorageError>
}>()("omnichannel-core/ports/TenantStore") {}
