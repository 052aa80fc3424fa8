import { Context, type Effect, type Option } from "effect"
import type { StorageError } from "./StorageError.ts"

/**
 * A chat-app template of a channel: adopted from the operator's library or submitted as an ordinary
 * one. `status` is the operator's status in lower case (`approved`, `pending`, `rejected`, `paused`,
 * `disabled`, …), or `submitting` while the service is asking the operator to create it (the row is
 * the reservation that makes two identical adoptions create one template).
 */
export interface TemplateRecord {
  readonly id: string
  readonly tenant_id: string
  readonly channel_id: string
  /** Lowercase letters, digits and underscores. */
  readonly name: string
  /** The operator's language code, e.g. `en_US`. */
  readonly language: string
  /** `UTILITY`, `MARKETING` or `AUTHENTICATION`. */
  readonly category: string
  readonly status: string
  /** Why the operator rejected, paused or disabled it, when it said. */
  readonly status_reason: string | null
  /** The operator's template id; null while `submitting`. */
  readonly external_id: string | null
  /** The library entry it was adopted from with its wording unchanged; null for an ordinary template. */
  readonly library_template_name: string | null
  /** The template's components in the operator's shape (`HEADER`, `BODY`, `FOOTER`, `BUTTONS`). */
  readonly components: ReadonlyArray<Readonly<Record<string, unknown>>>
  /**
   * Who holds a `submitting` row: a random id per adoption attempt, so only that attempt (or one
   * taking over an abandoned reservation) may finish or remove it. Null once settled.
   */
  readonly attempt_id: string | null
  readonly created_at: string
  readonly updated_at: string | null
}

/** Filters of a template listing; absent ones do not filter. */
export interface TemplateFilter {
  readonly channel_id?: string
  readonly status?: string
}

/**
 * Templates; every method but `findByExternalId` is scoped by tenant id. A channel holds one template
 * per name and language: a second insert fails with `UniqueViolation` on
 * `chatapp_templates_channel_name_unique`.
 */
export class TemplateStore extends Context.Service<TemplateStore, {
  readonly insert: (template: TemplateRecord) => Effect.Effect<void, StorageError>
  readonly get: (tenantId: string, id: string) => Effect.Effect<Option.Option<TemplateRecord>, StorageError>
  readonly findByName: (
    tenantId: string,
    channelId: string,
    name: string,
    language: string
  ) => Effect.Effect<Option.Option<TemplateRecord>, StorageError>
  /** The name and language of every template of the channel (what a library browse marks `already_added`). */
  readonly namesOnChannel: (
    tenantId: string,
    channelId: string
  ) => Effect.Effect<ReadonlyArray<{ readonly name: string; readonly language: string }>, StorageError>
  /** One page, newest first, and the total matching. */
  readonly list: (
    tenantId: string,
    filter: TemplateFilter,
    window: { readonly limit: number; readonly offset: number }
  ) => Effect.Effect<{ readonly items: ReadonlyArray<TemplateRecord>; readonly total: number }, StorageError>
  /**
   * Replaces the stored template `template.id` of `tenantId`. With `expectedAttemptId`, only while the
   * stored row's `attempt_id` is still that one. `false` when nothing was replaced.
   */
  readonly update: (
    tenantId: string,
    template: TemplateRecord,
    expectedAttemptId?: string
  ) => Effect.Effect<boolean, StorageError>
  /** Removes a reservation the attempt `attemptId` holds; `false` when it holds none. */
  readonly removeReservation: (tenantId: string, id: string, attemptId: string) => Effect.Effect<boolean, StorageError>
  /**
   * The templates with the operator's template id `externalId`, in every tenant: the one cross-tenant
   * read of templates, for the operator's status webhooks (which name a template id, not a tenant).
   */
  readonly findByExternalId: (externalId: string) => Effect.Effect<ReadonlyArray<TemplateRecord>, StorageError>
}>()("omnichannel-core/ports/TemplateStore") {}
