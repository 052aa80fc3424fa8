import { Context, type Effect, type Option } from "effect"
import type { StorageError } from "./StorageError.ts"

/** An API key as stored: only the hash of its secret part. */
export interface ApiKeyRecord {
  readonly id: string
  readonly tenant_id: string
  readonly name: string | null
  readonly lookup: string
  readonly secret_hash: string
  readonly prefix: string
  readonly scopes: ReadonlyArray<string>
  /** A parent key may act in every tenant of its tenant's billing account through `X-Tenant-ID`. */
  readonly is_parent: boolean
  /** The user the key acts as where the caller is a person (team chat); null when unbound. */
  readonly user_id: string | null
  readonly expires_at: string | null
  readonly revoked_at: string | null
  readonly created_at: string
}

/** API keys. Looked up by their public lookup part before any tenant is known. */
export class ApiKeyStore extends Context.Service<ApiKeyStore, {
  readonly insert: (key: ApiKeyRecord) => Effect.Effect<void, StorageError>
  readonly findByLookup: (lookup: string) => Effect.Effect<Option.Option<ApiKeyRecord>, StorageError>
  /** Marks the key revoked at `at`; `None` when no such key exists. Revoking twice keeps the first time. */
  readonly revoke: (id: string, at: string) => Effect.Effect<Option.Option<ApiKeyRecord>, StorageError>
  /** Every key of the tenant, revoked and expired ones too, oldest first (ties by id): the operator's view. */
  readonly listByTenant: (tenantId: string) => Effect.Effect<ReadonlyArray<ApiKeyRecord>, StorageError>
}>()("omnichannel-core/ports/ApiKeyStore") {}
