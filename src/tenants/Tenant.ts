import { Schema } from "effect"
import { EMAIL_PATTERN } from "../kernel/Email.ts"
import { UuidId } from "../kernel/Id.ts"
import { PaginationInfo } from "../kernel/Pagination.ts"
import type { TenantRecord } from "../ports/TenantStore.ts"
import { SLUG_PATTERN } from "../kernel/Slug.ts"

const Email = Schema.String.check(Schema.isMaxLength(254), Schema.isPattern(EMAIL_PATTERN, { message: "Must be an email address" }))

/** Values of `auto_summarize_on_close`: whether closing a conversation writes an AI summary. */
export const AutoSummarizeOnClose = Schema.Literals(["disabled", "enabled"])
/** Values of `auto_transcript_export_format`: the transcript attached when a conversation closes. */
export const AutoTranscriptExportFormat = Schema.Literals(["none", "txt", "pdf"])

/** Body of `POST /tenants`. */
export const CreateTenantRequest = Schema.Struct({
  // Stored trimmed, so a name of only spaces would become an empty one.
  name: Schema.String.check(
    Schema.isMinLength(1),
    Schema.isMaxLength(255),
    Schema.isPattern(/\S/, { message: "Must not be blank" })
  ),
  billing_account_id: Schema.optionalKey(Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(64))),
  slug: Schema.optionalKey(Schema.String.check(
    Schema.isPattern(SLUG_PATTERN, { message: "A slug is 1 to 63 lower-case letters, digits and single hyphens, not starting or ending with a hyphen" })
  )),
  company_email: Schema.optionalKey(Email),
  support_email: Schema.optionalKey(Email),
  pricing_model_id: Schema.optionalKey(Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(255))),
  ai_features_enabled: Schema.optionalKey(Schema.Boolean),
  multi_agent_mode: Schema.optionalKey(Schema.Boolean),
  auto_summarize_on_close: Schema.optionalKey(AutoSummarizeOnClose),
  auto_transcript_export_format: Schema.optionalKey(AutoTranscriptExportFormat)
})
/** Body of `POST /tenants`. */
export type CreateTenantRequest = typeof CreateTenantRequest.Type
export declare namespace CreateTenantRequest {}

/** A tenant as the API returns it: the spec's fields plus the stored workspace defaults. */
export const Tenant = Schema.Struct({
  id: UuidId,
  name: Schema.String,
  slug: Schema.String,
  billing_account_id: UuidId,
  pricing_model_id: Schema.NullOr(Schema.String),
  is_trial: Schema.Boolean,
  trial_ends_at: Schema.NullOr(Schema.String),
  is_active: Schema.Boolean,
  subscription_tier: Schema.String,
  multi_agent_mode: Schema.Boolean,
  auto_summarize_on_close: Schema.String,
  ai_features_enabled: Schema.Boolean,
  auto_transcript_export_format: Schema.String,
  company_email: Schema.NullOr(Schema.String),
  support_email: Schema.NullOr(Schema.String),
  created_at: Schema.String
})
/** A tenant as the API returns it. */
export type Tenant = typeof Tenant.Type
export declare namespace Tenant {}

/** Response of `GET /tenants`: one page of the tenants the caller may act in, oldest first. */
export const TenantList = Schema.Struct({
  items: Schema.Array(Tenant),
  pagination: PaginationInfo
})

/** The wire form of a stored tenant. */
export const toTenant = (record: TenantRecord): Tenant => ({
  id: record.id,
  name: record.name,
  slug: record.slug,
  billing_account_id: record.billing_account_id,
  pricing_model_id: record.pricing_model_id,
  is_trial: record.is_trial,
  trial_ends_at: record.trial_ends_at,
  is_active: record.is_active,
  subscription_tier: record.subscription_tier,
  multi_agent_mode: record.multi_agent_mode,
  auto_summarize_on_close: record.auto_summarize_on_close,
  ai_features_enabled: record.ai_features_enabled,
  auto_transcript_export_format: record.auto_transcript_export_format,
  company_email: record.company_email,
  support_email: record.support_email,
  created_at: record.created_at
})
