import { Context, type Effect, type Option } from "effect"
import type { StorageError } from "./StorageError.ts"

/** A person who owns billing accounts; authenticates with a user token. */
export interface UserRecord {
  readonly id: string
  readonly email: string
  readonly token_lookup: string
  readonly token_hash: string
  readonly created_at: string
}

/** A billing account, owned by one user, owning one or more tenants. */
export interface BillingAccountRecord {
  readonly id: string
  readonly owner_user_id: string
  readonly name: string
  readonly created_at: string
}

/** Users and the billing accounts they own. */
export class AccountStore extends Context.Service<AccountStore, {
  /** Stores a user; a taken email fails with `UniqueViolation` on `users_email_unique`. */
  readonly insertUser: (user: UserRecord) => Effect.Effect<void, StorageError>
  readonly getUser: (userId: string) => Effect.Effect<Option.Option<UserRecord>, StorageError>
  readonly findUserByTokenLookup: (lookup: string) => Effect.Effect<Option.Option<UserRecord>, StorageError>
  readonly insertBillingAccount: (account: BillingAccountRecord) => Effect.Effect<void, StorageError>
  readonly getBillingAccount: (id: string) => Effect.Effect<Option.Option<BillingAccountRecord>, StorageError>
  /** The accounts `userId` owns, oldest first. */
  readonly listBillingAccountsOwnedBy: (
    userId: string
  ) => Effect.Effect<ReadonlyArray<BillingAccountRecord>, StorageError>
}>()("omnichannel-core/ports/AccountStore") {}
