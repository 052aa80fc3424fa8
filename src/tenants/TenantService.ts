import { Context, Effect, Layer, Option } from "effect"
import { Conflict, Forbidden, InvalidRequest, NotFound } from "../kernel/ApiError.ts"
import { normalizeEmail } from "../kernel/Email.ts"
import { newId } from "../kernel/Id.ts"
import type { UserPrincipal } from "../kernel/Principal.ts"
import type { StorageError } from "../kernel/StorageError.ts"
import { addSeconds, now } from "../kernel/Timestamp.ts"
import { AccountStore } from "../ports/AccountStore.ts"
import { type TenantRecord, TenantStore } from "../ports/TenantStore.ts"
import { Transactor } from "../ports/Transactor.ts"
import { candidate, slugify } from "../kernel/Slug.ts"
import type { CreateTenantRequest } from "./Tenant.ts"

/** Length of the trial a new tenant starts with. */
export const TRIAL_DAYS = 14

/**
 * Numbered slugs tried when others take the chosen one meanwhile; after them, one with a random
 * suffix, which no concurrent request picks too.
 */
const SLUG_TRIES = 5

// Same answer for an unknown account and someone else's, so ids of other accounts cannot be probed.
const NOT_YOUR_ACCOUNT = "You are not an owner of that billing account"

/**
 * Tenants (sub-accounts): creating them under a billing account the caller owns, and what other
 * areas read or change of one tenant, so none of them reaches into the tenants' store.
 */
export class TenantService extends Context.Service<TenantService, {
  /** Creates a tenant as the spec's `POST /tenants` describes. */
  readonly create: (
    owner: UserPrincipal,
    request: CreateTenantRequest
  ) => Effect.Effect<TenantRecord, Forbidden | Conflict | InvalidRequest | StorageError>
  /** The tenant, if it exists. It checks no permission: callers pass an id they act in, or decide with it (as auth does). */
  readonly get: (tenantId: string) => Effect.Effect<Option.Option<TenantRecord>, StorageError>
  /** Where the tenant's account notifications go (`support_email`); none for an unknown tenant or one without. */
  readonly supportEmailOf: (tenantId: string) => Effect.Effect<Option.Option<string>, StorageError>
  /** Turns SMS on or off for the tenant (connect links may offer `sms` only when on). */
  readonly setSmsEnabled: (tenantId: string, enabled: boolean) => Effect.Effect<void, NotFound | StorageError>
  /** Turns AI features on or off for the tenant (AI file summaries are offered only when on). */
  readonly setAiFeaturesEnabled: (tenantId: string, enabled: boolean) => Effect.Effect<void, NotFound | StorageError>
}>()("omnichannel-core/tenants/TenantService") {
  static readonly layer = Layer.effect(
    TenantService,
    Effect.gen(function*() {
      const tenants = yield* TenantStore
      const accounts = yield* AccountStore
      const transactor = yield* Transactor

      const chooseBillingAccount = Effect.fnUntraced(function*(owner: UserPrincipal, requested: string | undefined) {
        if (requested !== undefined) {
          const account = yield* accounts.getBillingAccount(requested)
          if (Option.isNone(account) || account.value.owner_user_id !== owner.userId) {
            return yield* new Forbidden({ message: NOT_YOUR_ACCOUNT })
          }
          return account.value.id
        }
        const owned = yield* accounts.listBillingAccountsOwnedBy(owner.userId)
        if (owned.length > 1) {
          return yield* InvalidRequest.single(
            ["body", "billing_account_id"],
            `You own ${owned.length} billing accounts; say which one the tenant belongs to with billing_account_id`,
            "missing"
          )
        }
        if (owned.length === 1) return owned[0]!.id
        const id = yield* newId
        yield* accounts.insertBillingAccount({ id, owner_user_id: owner.userId, name: owner.email, created_at: yield* now })
        return id
      })

      const chooseSlug = Effect.fnUntraced(function*(name: string, requested: string | undefined) {
        if (requested !== undefined) {
          if (yield* tenants.slugTaken(requested)) {
            return yield* new Conflict({ message: `Slug '${requested}' is already taken` })
          }
          return requested
        }
        const base = slugify(name)
        for (let n = 1; n <= 50; n++) {
          const slug = candidate(base, n)
          if (!(yield* tenants.slugTaken(slug))) return slug
        }
        return `${base}-${(yield* newId).slice(0, 8)}`
      })

      const createOnce = (owner: UserPrincipal, request: CreateTenantRequest) =>
        transactor.withTransaction(Effect.gen(function*() {
          const billingAccountId = yield* chooseBillingAccount(owner, request.billing_account_id)
          const slug = yield* chooseSlug(request.name, request.slug)
          const createdAt = yield* now
          const tenant: TenantRecord = {
            id: yield* newId,
            billing_account_id: billingAccountId,
            name: request.name.trim(),
            slug,
            company_email: request.company_email === undefined ? null : normalizeEmail(request.company_email),
            support_email: normalizeEmail(request.support_email ?? owner.email),
            pricing_model_id: request.pricing_model_id ?? null,
            is_trial: true,
            trial_ends_at: addSeconds(createdAt, TRIAL_DAYS * 86_400),
            is_active: true,
            subscription_tier: "trial",
            ai_features_enabled: request.ai_features_enabled ?? false,
            multi_agent_mode: request.multi_agent_mode ?? false,
            auto_summarize_on_close: request.auto_summarize_on_close ?? "disabled",
            auto_transcript_export_format: request.auto_transcript_export_format ?? "none",
            sms_enabled: false,
            created_at: createdAt,
            updated_at: null
          }
          if (request.slug !== undefined) {
            yield* tenants.insert(tenant)
            return tenant
          }
          // A slug another request took since it was chosen: the next free one, without a failed
          // statement, so a caller's larger transaction (bootstrap) stays usable on PostgreSQL.
          for (let tries = 0; tries <= SLUG_TRIES; tries++) {
            const slugNow = tries === 0
              ? tenant.slug
              : tries < SLUG_TRIES
              ? yield* chooseSlug(request.name, undefined)
              : `${slugify(request.name)}-${(yield* newId).slice(0, 8)}`
            const candidateTenant = { ...tenant, slug: slugNow }
            if (yield* tenants.insertUnlessSlugTaken(candidateTenant)) return candidateTenant
          }
          return yield* new Conflict({ message: "Could not find a free slug for this workspace; give one" })
        }))

      return TenantService.of({
        create: Effect.fn("TenantService.create")(function*(owner, request) {
          return yield* createOnce(owner, request).pipe(
            Effect.catchTag("StorageError", (e): Effect.Effect<never, Conflict | StorageError> =>
              e.reason === "UniqueViolation" && e.constraint === "tenants_slug_unique"
                ? Effect.fail(new Conflict({ message: `Slug '${request.slug ?? ""}' is already taken` }))
                : Effect.fail(e))
          )
        }),
        get: Effect.fn("TenantService.get")(function*(tenantId) {
          return yield* tenants.get(tenantId)
        }),
        supportEmailOf: Effect.fn("TenantService.supportEmailOf")(function*(tenantId) {
          const tenant = yield* tenants.get(tenantId)
          return Option.flatMap(tenant, (t) => Option.fromNullishOr(t.support_email))
        }),
        setSmsEnabled: Effect.fn("TenantService.setSmsEnabled")(function*(tenantId, enabled) {
          if (!(yield* tenants.setSmsEnabled(tenantId, enabled, yield* now))) {
            return yield* new NotFound({ message: `Tenant ${tenantId} not found` })
          }
        }),
        setAiFeaturesEnabled: Effect.fn("TenantService.setAiFeaturesEnabled")(function*(tenantId, enabled) {
          if (!(yield* tenants.setAiFeaturesEnabled(tenantId, enabled, yield* now))) {
            return yield* new NotFound({ message: `Tenant ${tenantId} not found` })
          }
        })
      })
    })
  )
}
