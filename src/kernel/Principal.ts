import type { Scope } from "./Scope.ts"

/** Who an API request acts as, after authentication and `X-Tenant-ID` have been resolved. */
export interface ApiKeyPrincipal {
  readonly kind: "api_key"
  readonly keyId: string
  /** The tenant the request acts in: the key's own, or the sub-account named by `X-Tenant-ID`. */
  readonly tenantId: string
  /** The tenant the key was issued in. */
  readonly homeTenantId: string
  /** A parent key may act in the other active tenants of its tenant's billing account (`X-Tenant-ID`). */
  readonly isParent: boolean
  readonly scopes: ReadonlySet<Scope>
  /** The user a bound key acts as (`api-key create --user`); null when the key is bound to nobody. */
  readonly userId: string | null
}

/** A user authenticated by a user token (tenant creation). */
export interface UserPrincipal {
  readonly kind: "user"
  readonly userId: string
  readonly email: string
}
