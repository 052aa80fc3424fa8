import { Context, Effect, Layer, Option } from "effect"
import { Forbidden, Unauthenticated } from "../kernel/ApiError.ts"
import { isUuid } from "../kernel/Id.ts"
import type { ApiKeyPrincipal, UserPrincipal } from "../kernel/Principal.ts"
import { isScope } from "../kernel/Scope.ts"
import { parseCredential, verifySecret } from "../kernel/Secret.ts"
import type { StorageError } from "../kernel/StorageError.ts"
import { now } from "../kernel/Timestamp.ts"
import { AccountStore } from "../ports/AccountStore.ts"
import { ApiKeyStore } from "../ports/ApiKeyStore.ts"
import { TenantService } from "../tenants/TenantService.ts"

/** Prefix of API keys (`ock_<lookup>_<secret>`). */
export const API_KEY_KIND = "ock"
/** Prefix of user tokens (`ocu_<lookup>_<secret>`). */
export const USER_TOKEN_KIND = "ocu"

const INVALID_KEY = "Invalid or missing API key"
// One answer for every refused X-Tenant-ID, so it never tells whether a tenant exists.
const TENANT_REFUSED = "Not allowed to act in the requested tenant"

/** Turns presented credentials into principals. */
export class ApiKeyAuth extends Context.Service<ApiKeyAuth, {
  /**
   * Resolves a bearer API key and an optional `X-Tenant-ID`. A missing, unknown, revoked or
   * expired key fails with `Unauthenticated`; a tenant the key may not act in with `Forbidden`.
   */
  readonly authenticate: (
    bearer: string | undefined,
    xTenantId: string | undefined
  ) => Effect.Effect<ApiKeyPrincipal, Unauthenticated | Forbidden | StorageError>
  /** Resolves a bearer user token. */
  readonly authenticateUser: (
    bearer: string | undefined
  ) => Effect.Effect<UserPrincipal, Unauthenticated | StorageError>
}>()("omnichannel-core/auth/ApiKeyAuth") {
  static readonly layer = Layer.effect(
    ApiKeyAuth,
    Effect.gen(function*() {
      const keys = yield* ApiKeyStore
      const tenants = yield* TenantService
      const accounts = yield* AccountStore

      // A parent key reaches the active tenants of its own tenant's billing account; any key its own
      // tenant: the tenants area's rule, the one `GET /tenants` lists by.
      const resolveTenant = Effect.fnUntraced(function*(homeTenantId: string, isParent: boolean, requested: string) {
        if (requested === homeTenantId) return requested
        if (!isParent || !isUuid(requested)) return yield* new Forbidden({ message: TENANT_REFUSED })
        const allowed = yield* tenants.mayActIn({ kind: "api_key", homeTenantId, isParent }, requested)
        if (!allowed) return yield* new Forbidden({ message: TENANT_REFUSED })
        return requested
      })

      return ApiKeyAuth.of({
        authenticate: Effect.fn("ApiKeyAuth.authenticate")(function*(bearer, xTenantId) {
          const parsed = bearer === undefined ? undefined : parseCredential(API_KEY_KIND, bearer)
          if (parsed === undefined) return yield* new Unauthenticated({ message: INVALID_KEY })
          const found = yield* keys.findByLookup(parsed.lookup)
          if (Option.isNone(found)) return yield* new Unauthenticated({ message: INVALID_KEY })
          const key = found.value
          const valid = yield* verifySecret(parsed.secret, key.secret_hash)
          const at = yield* now
          if (!valid || key.revoked_at !== null || (key.expires_at !== null && key.expires_at <= at)) {
            return yield* new Unauthenticated({ message: INVALID_KEY })
          }
          // Tenant ids are lower-case UUIDs; an upper-case spelling names the same tenant.
          const requested = xTenantId?.trim().toLowerCase()
          const tenantId = requested === undefined || requested === ""
            ? key.tenant_id
            : yield* resolveTenant(key.tenant_id, key.is_parent, requested)
          return {
            kind: "api_key" as const,
            keyId: key.id,
            tenantId,
            homeTenantId: key.tenant_id,
            isParent: key.is_parent,
            scopes: new Set(key.scopes.filter(isScope)),
            userId: key.user_id
          }
        }),
        authenticateUser: Effect.fn("ApiKeyAuth.authenticateUser")(function*(bearer) {
          const parsed = bearer === undefined ? undefined : parseCredential(USER_TOKEN_KIND, bearer)
          if (parsed === undefined) return yield* new Unauthenticated({ message: "Invalid or missing user token" })
          const found = yield* accounts.findUserByTokenLookup(parsed.lookup)
          if (Option.isNone(found) || !(yield* verifySecret(parsed.secret, found.value.token_hash))) {
            return yield* new Unauthenticated({ message: "Invalid or missing user token" })
          }
          return { kind: "user" as const, userId: found.value.id, email: found.value.email }
        })
      })
    })
  )
}
