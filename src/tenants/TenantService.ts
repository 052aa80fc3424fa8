import { Context, Effect, Layer, Option } from "effect"
import { Conflict, Forbidden, InvalidRequest, NotFound } from "../kernel/ApiError.ts"
import { normalizeEmail } from "../kernel/Email.ts"
import { newId } from "../kernel/Id.ts"
import type { UserPrincipal } from "../kernel/Principal.ts"
import type { StorageError } from "../kernel/StorageError.ts"
import { type PageRequest, toWindow } from "../kernel/Pagination.ts"
import { addSeconds, now } from "../kernel/Timestamp.ts"
import { AccountStore } from "../ports/AccountStore.ts"
import { type TenantReach, type TenantRecord, TenantStore } from "../ports/TenantStore.ts"
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
 * Who asks which tenants they may act in: an API key (the tenant it was issued in, and whether it is
 * a parent key) or a user (by a user token).
 */
export type TenantViewer =
  | { readonly kind: "api_key"; readonly homeTenantId: string; readonly isParent: boolean }
  | { readonly kind: "user"; readonly userId: string }

/**
 * The one rule of "may act in": a key acts in its own tenant, whatever its state; a parent key also in
 * every active tenant of its own tenant's billing account (through `X-Tenant-ID`); a user in every
 * active tenant of the billing accounts they own. Another billing account's tenant, never.
 */
export const keyReach = (home: TenantRecord, isParent: boolean): TenantReach => ({
  tenantIds: [home.id],
  activeInBillingAccounts: isParent ? [home.billing_account_id] : []
})

/** What a user reaches (see `keyReach`): the active tenants of the billing accounts they own. */
export const ownerReach = (ownedBillingAccountIds: ReadonlyArray<string>): TenantReach => ({
  tenantIds: [],
  activeInBillingAccounts: ownedBillingAccountIds
})

/** Whether `reach` takes in `tenant` (see `keyReach`). */
export const reaches = (reach: TenantReach, tenant: TenantRecord): boolean =>
  reach.tenantIds.includes(tenant.id) || (tenant.is_active && reach.activeInBillingAccounts.includes(tenant.billing_account_id))

const tenantNotFound = (tenantId: string) => new NotFound({ message: `Tenant ${tenantId} not found` })

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
  /** A page of the tenants `viewer` may act in, oldest first, and how many there are. */
  readonly listFor: (
    viewer: TenantViewer,
    page: PageRequest
  ) => Effect.Effect<{ readonly items: ReadonlyArray<TenantRecord>; readonly total: number }, StorageError>
  /** The tenant, when `viewer` may act in it; `NotFound` alike for an unknown tenant and one it may not. */
  readonly getFor: (viewer: TenantViewer, tenantId: string) => Effect.Effect<TenantRecord, NotFound | StorageError>
  /** Whether `viewer` may act in the tenant (false for an unknown one): what `X-Tenant-ID` is checked by. */
  readonly mayActIn: (viewer: TenantViewer, tenantId: string) => Effect.Effect<boolean, StorageError>
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

      // What the viewer reaches; a key whose tenant is gone reaches nothing.
      const reachOf = Effect.fnUntraced(function*(viewer: TenantViewer) {
        if (viewer.kind === "user") {
          const owned = yield* accounts.listBillingAccountsOwnedBy(viewer.userId)
          return ownerReach(owned.map((account) => account.id))
        }
        const home = yield* tenants.get(viewer.homeTenantId)
        return Option.isNone(home)
          ? { tenantIds: [], activeInBillingAccounts: [] } satisfies TenantReach
          : keyReach(home.value, viewer.isParent)
      })

      const findFor = Effect.fnUntraced(function*(viewer: TenantViewer, tenantId: string) {
        const tenant = yield* tenants.get(tenantId)
        if (Option.isNone(tenant)) return Option.none<TenantRecord>()
        // A key always reaches its own tenant: no read of it needed to say so.
        if (viewer.kind === "api_key" && tenantId === viewer.homeTenantId) return tenant
        return reaches(yield* reachOf(viewer), tenant.value) ? tenant : Option.none<TenantRecord>()
      })

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
        listFor: Effect.fn("TenantService.listFor")(function*(viewer, page) {
          return yield* tenants.listReachable(yield* reachOf(viewer), toWindow(page))
        }),
        getFor: Effect.fn("TenantService.getFor")(function*(viewer, tenantId) {
          const found = yield* findFor(viewer, tenantId)
          if (Option.isNone(found)) return yield* tenantNotFound(tenantId)
          return found.value
        }),
        mayActIn: Effect.fn("TenantService.mayActIn")(function*(viewer, tenantId) {
          return Option.isSome(yield* findFor(viewer, tenantId))
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
            return yield* tenantNotFound(tenantId)
          }
        }),
        setAiFeaturesEnabled: Effect.fn("TenantService.setAiFeaturesEnabled")(function*(tenantId, enabled) {
          if (!(yield* tenants.setAiFeaturesEnabled(tenantId, enabled, yield* now))) {
            return yield* tenantNotFound(tenantId)
          }
        })
      })
    })
  )
}
