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
  /** True when some tenant already uses `slug`. */
  readonly slugTaken: (slug: string) => Effect.Effect<boolean, StorageError>
}>()("omnichannel-core/ports/TenantStore") {}
