import { Context, type Effect, type Option } from "effect"
import type { StorageError } from "./StorageError.ts"

/** A channel connect token as stored: only the hash of its secret part. */
export interface ConnectTokenRecord {
  readonly id: string
  readonly tenant_id: string
  readonly name: string | null
  readonly lookup: string
  readonly secret_hash: string
  readonly token_prefix: string
  readonly allowed_channel_types: ReadonlyArray<string>
  readonly partner_name: string
  readonly partner_redirect_url: string | null
  readonly expires_at: string
  readonly max_uses: number
  readonly uses_count: number
  readonly use_window_minutes: number
  /** Set by the first use: later uses must come before it. */
  readonly use_window_ends_at: string | null
  readonly revoked_at: string | null
  readonly created_at: string
}

/** Connect tokens. Tenant-scoped, except the lookup a customer's link performs. */
export class ConnectTokenStore extends Context.Service<ConnectTokenStore, {
  readonly insert: (token: ConnectTokenRecord) => Effect.Effect<void, StorageError>
  /** The token whose link carries `lookup`, whatever its tenant: the link itself is the credential. */
  readonly findByLookup: (lookup: string) => Effect.Effect<Option.Option<ConnectTokenRecord>, StorageError>
  readonly get: (tenantId: string, id: string) => Effect.Effect<Option.Option<ConnectTokenRecord>, StorageError>
  /** One page, newest first, and the tenant's total. */
  readonly list: (
    tenantId: string,
    window: { readonly limit: number; readonly offset: number }
  ) => Effect.Effect<{ readonly items: ReadonlyArray<ConnectTokenRecord>; readonly total: number }, StorageError>
  /**
   * Writes `next`'s use and revocation fields only if the stored `uses_count` and `revoked_at`
   * still equal `expected`'s (compare-and-set); `false` when another writer got there first.
   */
  readonly compareAndSet: (
    expected: ConnectTokenRecord,
    next: ConnectTokenRecord
  ) => Effect.Effect<boolean, StorageError>
}>()("omnichannel-core/ports/ConnectTokenStore") {}
