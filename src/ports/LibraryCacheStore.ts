import { Context, type Effect, type Option } from "effect"
import type { StorageError } from "./StorageError.ts"

/**
 * One answer of the operator's template library, kept for a business account and a query. The
 * library is the operator's public catalog, not a tenant's data: tenants whose channels share a
 * business account share its copies.
 */
export interface LibraryCacheRecord {
  readonly business_account_id: string
  /** The query's filters in a canonical form (`libraryQueryKey`). */
  readonly query_key: string
  /** The entries as the operator returned them, a JSON array, parsed once per process. */
  readonly entries: string
  readonly fetched_at: string
}

/** Copies of library answers, shared by every process on the database. */
export class LibraryCacheStore extends Context.Service<LibraryCacheStore, {
  readonly get: (businessAccountId: string, queryKey: string) => Effect.Effect<Option.Option<LibraryCacheRecord>, StorageError>
  /** When the stored copy was fetched, without reading its entries. */
  readonly fetchedAt: (businessAccountId: string, queryKey: string) => Effect.Effect<Option.Option<string>, StorageError>
  /** Stores a copy, replacing the one of the same account and query unless that one is newer. */
  readonly put: (record: LibraryCacheRecord) => Effect.Effect<void, StorageError>
  /** Removes every copy fetched before `before`; how many went. */
  readonly prune: (before: string) => Effect.Effect<number, StorageError>
}>()("omnichannel-core/ports/LibraryCacheStore") {}
