import { Context, type Effect, type Option } from "effect"
import type { StorageError } from "./StorageError.ts"

/** A connected channel as stored. `secrets` are what the provider needs to act and are never returned by the API. */
export interface ChannelRecord {
  readonly id: string
  readonly tenant_id: string
  readonly platform: string
  readonly name: string
  readonly status: "active" | "disconnected"
  /** The provider's id of the account, number or inbox. */
  readonly external_id: string
  /** Non-secret settings shown to the tenant (a phone number id, a host name, …). */
  readonly config: Readonly<Record<string, string>>
  readonly secrets: Readonly<Record<string, string>>
  readonly created_via_connect_token_id: string | null
  readonly created_at: string
  readonly updated_at: string | null
  readonly disconnected_at: string | null
}

/** Channels; every method is scoped by tenant id. */
export class ChannelStore extends Context.Service<ChannelStore, {
  /**
   * Stores a new channel; an active one whose platform and provider id an active channel of any tenant
   * holds already fails with `UniqueViolation` on `channels_active_external_unique`.
   */
  readonly insert: (channel: ChannelRecord) => Effect.Effect<void, StorageError>
  readonly get: (tenantId: string, id: string) => Effect.Effect<Option.Option<ChannelRecord>, StorageError>
  /** One page, newest first, and the tenant's total. */
  readonly list: (
    tenantId: string,
    window: { readonly limit: number; readonly offset: number }
  ) => Effect.Effect<{ readonly items: ReadonlyArray<ChannelRecord>; readonly total: number }, StorageError>
  /**
   * The active channel of `platform` whose provider id is `externalId`, in whichever tenant holds it
   * (at most one does, see `insert`), as a list: the one cross-tenant read of channels, for routing
   * what the operator sends (a payload names a phone number id, not a tenant).
   */
  readonly findActiveByExternalId: (
    platform: string,
    externalId: string
  ) => Effect.Effect<ReadonlyArray<ChannelRecord>, StorageError>
  /**
   * The active channels of `platform` whose config holds `value` under `key`, in every tenant, newest
   * first: cross-tenant like `findActiveByExternalId`, for what the operator sends naming an account
   * (a business account id) rather than a number. Meant for rare traffic: it may scan the platform's channels.
   */
  readonly findActiveByConfig: (
    platform: string,
    key: string,
    value: string
  ) => Effect.Effect<ReadonlyArray<ChannelRecord>, StorageError>
  /**
   * Replaces the stored channel `channel.id` of `tenantId`; `false` when it does not exist there. Making
   * it active fails like `insert` when another active channel holds its provider id.
   */
  readonly update: (tenantId: string, channel: ChannelRecord) => Effect.Effect<boolean, StorageError>
}>()("omnichannel-core/ports/ChannelStore") {}
