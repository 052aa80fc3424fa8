import { Context, Effect, Layer, Option } from "effect"
import { Conflict, type Forbidden, InvalidRequest, NotFound } from "../kernel/ApiError.ts"
import { EMAIL_PATTERN, normalizeEmail } from "../kernel/Email.ts"
import { isUuid, newId } from "../kernel/Id.ts"
import { ALL_SCOPES, isScope, type Scope } from "../kernel/Scope.ts"
import { issueCredential, randomToken } from "../kernel/Secret.ts"
import type { StorageError } from "../kernel/StorageError.ts"
import { addSeconds, now } from "../kernel/Timestamp.ts"
import { AccountStore } from "../ports/AccountStore.ts"
import { type ApiKeyRecord, ApiKeyStore } from "../ports/ApiKeyStore.ts"
import type { ChannelRecord } from "../ports/ChannelStore.ts"
import { Transactor } from "../ports/Transactor.ts"
import { ChannelService } from "../channels/ChannelService.ts"
import { ChannelProviders } from "../ports/ChannelProviders.ts"
import { TenantService } from "../tenants/TenantService.ts"
import { EmailService } from "../email/EmailService.ts"
import { API_KEY_KIND, USER_TOKEN_KIND } from "./ApiKeyAuth.ts"

/** A new API key; `api_key` is the only time the raw key is ever shown. */
export interface IssuedApiKey {
  readonly id: string
  readonly api_key: string
  readonly tenant_id: string
  readonly scopes: ReadonlyArray<Scope>
  readonly is_parent: boolean
  readonly expires_at: string | null
  /** The user the key acts as (team chat); null when unbound. */
  readonly user_id: string | null
}

/** A new user; `user_token` is the only time the raw token is ever shown. */
export interface IssuedUser {
  readonly user_id: string
  readonly user_token: string
}

/** Everything `bootstrap` creates. */
export interface Bootstrapped extends IssuedUser {
  readonly billing_account_id: string
  readonly tenant_id: string
  readonly api_key: string
}

type OperatorError = InvalidRequest | NotFound | Conflict | StorageError

/** What `email-integration create` prints. */
export interface CreatedEmailIntegration {
  readonly email_integration_id: string
  readonly tenant_id: string
  readonly address: string
  readonly inbound_url: string
  readonly inbound_secret: string
}

/** What `channel create` prints. */
export interface CreatedChannel {
  readonly channel_id: string
  readonly tenant_id: string
  readonly type: string
  readonly name: string
  readonly external_id: string
  readonly status: string
  readonly config: Readonly<Record<string, string>>
}

/** A channel as `channel list` prints it: what `channel create` printed, never its secrets. */
export interface ListedChannel extends CreatedChannel {
  readonly created_at: string
  readonly disconnected_at: string | null
}

/** An API key as `api-key list` prints it: never the raw key nor its hash, only the prefix it starts with. */
export interface ListedApiKey {
  readonly id: string
  readonly tenant_id: string
  readonly name: string | null
  readonly prefix: string
  readonly scopes: ReadonlyArray<string>
  readonly is_parent: boolean
  readonly user_id: string | null
  /** `revoked` once revoked, `expired` once its expiry passed, else `active`. */
  readonly status: "active" | "revoked" | "expired"
  readonly expires_at: string | null
  readonly revoked_at: string | null
  readonly created_at: string
}

const listedChannel = (c: ChannelRecord): ListedChannel => ({
  channel_id: c.id,
  tenant_id: c.tenant_id,
  type: c.platform,
  name: c.name,
  external_id: c.external_id,
  status: c.status,
  config: c.config,
  created_at: c.created_at,
  disconnected_at: c.disconnected_at
})

const listedApiKey = (k: ApiKeyRecord, at: string): ListedApiKey => ({
  id: k.id,
  tenant_id: k.tenant_id,
  name: k.name,
  prefix: k.prefix,
  scopes: k.scopes,
  is_parent: k.is_parent,
  user_id: k.user_id,
  status: k.revoked_at !== null
    ? "revoked"
    : k.expires_at !== null && Date.parse(k.expires_at) <= Date.parse(at)
    ? "expired"
    : "active",
  expires_at: k.expires_at,
  revoked_at: k.revoked_at,
  created_at: k.created_at
})

// Operator listings read the store a page at a time, so no single query is unbounded.
const PAGE = 500

/** The operator's commands (HOST.md's admin CLI): users, billing accounts, API keys, bootstrap. */
export class Operator extends Context.Service<Operator, {
  readonly createUser: (email: string) => Effect.Effect<IssuedUser, OperatorError>
  readonly createBillingAccount: (
    userId: string,
    name?: string
  ) => Effect.Effect<{ readonly billing_account_id: string }, OperatorError>
  /**
   * Issues a key in `tenantId`; `parent` keys may act in the billing account's other tenants; a key
   * bound to `userId` (an existing user) acts as that user where the caller is a person (team chat).
   */
  readonly createApiKey: (input: {
    readonly tenantId: string
    readonly scopes: ReadonlyArray<string>
    readonly parent?: boolean
    readonly name?: string
    readonly expiresInSeconds?: number
    readonly userId?: string | undefined
  }) => Effect.Effect<IssuedApiKey, OperatorError>
  /** Turns SMS on or off for a tenant (connect links may offer `sms` only when on). */
  readonly setSmsEnabled: (
    tenantId: string,
    enabled: boolean
  ) => Effect.Effect<{ readonly tenant_id: string; readonly sms_enabled: boolean }, OperatorError>
  /** Turns AI features on or off for a tenant (AI file summaries are offered only when on). */
  readonly setAiFeaturesEnabled: (
    tenantId: string,
    enabled: boolean
  ) => Effect.Effect<{ readonly tenant_id: string; readonly ai_features_enabled: boolean }, OperatorError>
  readonly revokeApiKey: (id: string) => Effect.Effect<{ readonly id: string; readonly revoked: true }, OperatorError>
  /**
   * A connected channel of `type` for a tenant, as if connected through a link: the type's provider
   * checks the inputs (for `chatapp`, against the operator) and `channel.created` is emitted.
   */
  readonly createChannel: (input: {
    readonly tenantId: string
    readonly type: string
    readonly inputs: Readonly<Record<string, string>>
  }) => Effect.Effect<CreatedChannel, OperatorError>
  /** A mailbox of a tenant (HOST.md's `email-integration create`); the inbound secret is shown this once. */
  readonly createEmailIntegration: (input: {
    readonly tenantId: string
    readonly address: string
    readonly displayName?: string | undefined
  }) => Effect.Effect<CreatedEmailIntegration, OperatorError>
  /** The tenant's channels, newest first (`channel list`); never a secret. */
  readonly listChannels: (tenantId: string) => Effect.Effect<{ readonly items: ReadonlyArray<ListedChannel> }, NotFound | StorageError>
  /** The tenant's API keys, revoked and expired ones too, oldest first (`api-key list`); never a key nor its hash. */
  readonly listApiKeys: (tenantId: string) => Effect.Effect<{ readonly items: ReadonlyArray<ListedApiKey> }, NotFound | StorageError>
  /** A new owner user, a billing account they own, a tenant in it and a parent key holding every scope. */
  readonly bootstrap: (input: {
    readonly email?: string
    readonly tenantName?: string
  }) => Effect.Effect<Bootstrapped, OperatorError | Forbidden>
}>()("omnichannel-core/auth/Operator") {
  static readonly layer = Layer.effect(
    Operator,
    Effect.gen(function*() {
      const accounts = yield* AccountStore
      const keys = yield* ApiKeyStore
      const tenants = yield* TenantService
      const transactor = yield* Transactor
      const channels = yield* ChannelService
      const providers = yield* ChannelProviders
      const email = yield* EmailService

      const channelsOf = (tenantId: string) =>
        Effect.gen(function*() {
          const items: Array<ChannelRecord> = []
          for (let page = 1;; page++) {
            const listed = yield* channels.list(tenantId, { page, pageSize: PAGE })
            items.push(...listed.items)
            if (listed.items.length < PAGE || page * PAGE >= listed.total) return items
          }
        })

      const existingTenant = (tenantId: string) =>
        Effect.gen(function*() {
          if (!isUuid(tenantId) || Option.isNone(yield* tenants.get(tenantId))) {
            return yield* new NotFound({ message: `Tenant ${tenantId} not found` })
          }
        })

      const createUser = Effect.fn("Operator.createUser")(function*(email: string) {
        if (!EMAIL_PATTERN.test(email.trim()) || email.length > 254) {
          return yield* InvalidRequest.single(["email"], `Not a valid email address: ${email}`)
        }
        const credential = yield* issueCredential(USER_TOKEN_KIND)
        const id = yield* newId
        yield* accounts.insertUser({
          id,
          email: normalizeEmail(email),
          token_lookup: credential.lookup,
          token_hash: credential.secretHash,
          created_at: yield* now
        }).pipe(Effect.catchTag("StorageError", (e): Effect.Effect<never, Conflict | StorageError> =>
          e.reason === "UniqueViolation"
            ? Effect.fail(new Conflict({ message: `A user with email ${normalizeEmail(email)} already exists` }))
            : Effect.fail(e)))
        return { user_id: id, user_token: credential.raw }
      })

      const createBillingAccount = Effect.fn("Operator.createBillingAccount")(function*(userId: string, name?: string) {
        const user = yield* accounts.getUser(userId)
        if (Option.isNone(user)) return yield* new NotFound({ message: `User ${userId} not found` })
        const id = yield* newId
        yield* accounts.insertBillingAccount({
          id,
          owner_user_id: userId,
          name: name ?? user.value.email,
          created_at: yield* now
        })
        return { billing_account_id: id }
      })

      const createApiKey = Effect.fn("Operator.createApiKey")(function*(input: {
        readonly tenantId: string
        readonly scopes: ReadonlyArray<string>
        readonly parent?: boolean
        readonly name?: string
        readonly expiresInSeconds?: number
        readonly userId?: string | undefined
      }) {
        const unknown = input.scopes.filter((s) => !isScope(s))
        if (unknown.length > 0) {
          return yield* InvalidRequest.single(
            ["scopes"],
            `Unknown scope(s): ${unknown.join(", ")}. Known scopes: ${ALL_SCOPES.join(", ")}`
          )
        }
        if (input.scopes.length === 0) return yield* InvalidRequest.single(["scopes"], "Give at least one scope")
        const seconds = input.expiresInSeconds
        if (seconds !== undefined && (!Number.isInteger(seconds) || seconds <= 0)) {
          return yield* InvalidRequest.single(["expires_in_seconds"], "Must be a positive whole number of seconds")
        }
        if (Option.isNone(yield* tenants.get(input.tenantId))) {
          return yield* new NotFound({ message: `Tenant ${input.tenantId} not found` })
        }
        const userId = input.userId?.trim().toLowerCase()
        if (userId !== undefined && (!isUuid(userId) || Option.isNone(yield* accounts.getUser(userId)))) {
          return yield* new NotFound({ message: `User ${input.userId} not found` })
        }
        const credential = yield* issueCredential(API_KEY_KIND)
        const createdAt = yield* now
        const scopes = [...new Set(input.scopes)].filter(isScope)
        const key = {
          id: yield* newId,
          tenant_id: input.tenantId,
          name: input.name ?? null,
          lookup: credential.lookup,
          secret_hash: credential.secretHash,
          prefix: credential.prefix,
          scopes,
          is_parent: input.parent ?? false,
          user_id: userId ?? null,
          expires_at: seconds === undefined ? null : addSeconds(createdAt, seconds),
          revoked_at: null,
          created_at: createdAt
        }
        yield* keys.insert(key)
        return {
          id: key.id,
          api_key: credential.raw,
          tenant_id: key.tenant_id,
          scopes,
          is_parent: key.is_parent,
          expires_at: key.expires_at,
          user_id: key.user_id
        }
      })

      const createEmailIntegration = Effect.fn("Operator.createEmailIntegration")(function*(input: {
        readonly tenantId: string
        readonly address: string
        readonly displayName?: string | undefined
      }) {
        if (Option.isNone(yield* tenants.get(input.tenantId))) {
          return yield* new NotFound({ message: `Tenant ${input.tenantId} not found` })
        }
        if (!EMAIL_PATTERN.test(input.address.trim()) || input.address.length > 254) {
          return yield* InvalidRequest.single(["address"], "Must be an email address")
        }
        if (input.displayName !== undefined && /[\r\n\0]/.test(input.displayName)) {
          return yield* InvalidRequest.single(["display_name"], "Must not contain line breaks")
        }
        const created = yield* email.createIntegration(input.tenantId, {
          address: input.address.trim(),
          ...(input.displayName === undefined ? {} : { display_name: input.displayName })
        })
        return {
          email_integration_id: created.id,
          tenant_id: created.tenant_id,
          address: created.address,
          inbound_url: created.inbound_url,
          inbound_secret: created.inbound_secret
        }
      })

      const createChannel = Effect.fn("Operator.createChannel")(function*(input: {
        readonly tenantId: string
        readonly type: string
        readonly inputs: Readonly<Record<string, string>>
      }) {
        if (Option.isNone(yield* tenants.get(input.tenantId))) {
          return yield* new NotFound({ message: `Tenant ${input.tenantId} not found` })
        }
        const provider = providers.byType[input.type]
        if (provider === undefined) {
          return yield* InvalidRequest.single(["type"], `No provider for channel type ${input.type} is configured here`)
        }
        const connection = yield* provider.connect(input.inputs).pipe(Effect.mapError((rejected) =>
          new InvalidRequest({
            issues: Object.keys(rejected.fields).length === 0
              ? [{ loc: ["type"], msg: rejected.message, type: "provider_rejected" }]
              : Object.entries(rejected.fields).map(([field, msg]) => ({ loc: [field], msg, type: "provider_rejected" }))
          })
        ))
        const channel = yield* channels.connect({
          tenantId: input.tenantId,
          platform: input.type,
          connection,
          connectTokenId: null
        })
        return {
          channel_id: channel.id,
          tenant_id: channel.tenant_id,
          type: channel.platform,
          name: channel.name,
          external_id: channel.external_id,
          status: channel.status,
          config: channel.config
        }
      })

      return Operator.of({
        listChannels: Effect.fn("Operator.listChannels")(function*(tenantId: string) {
          yield* existingTenant(tenantId)
          return { items: (yield* channelsOf(tenantId)).map(listedChannel) }
        }),
        listApiKeys: Effect.fn("Operator.listApiKeys")(function*(tenantId: string) {
          yield* existingTenant(tenantId)
          const at = yield* now
          return { items: (yield* keys.listByTenant(tenantId)).map((key) => listedApiKey(key, at)) }
        }),
        createChannel,
        createEmailIntegration,
        createUser,
        createBillingAccount,
        createApiKey,
        setSmsEnabled: Effect.fn("Operator.setSmsEnabled")(function*(tenantId: string, enabled: boolean) {
          yield* tenants.setSmsEnabled(tenantId, enabled)
          return { tenant_id: tenantId, sms_enabled: enabled }
        }),
        setAiFeaturesEnabled: Effect.fn("Operator.setAiFeaturesEnabled")(function*(tenantId: string, enabled: boolean) {
          yield* tenants.setAiFeaturesEnabled(tenantId, enabled)
          return { tenant_id: tenantId, ai_features_enabled: enabled }
        }),
        revokeApiKey: Effect.fn("Operator.revokeApiKey")(function*(id: string) {
          const revoked = yield* keys.revoke(id, yield* now)
          if (Option.isNone(revoked)) return yield* new NotFound({ message: `API key ${id} not found` })
          return { id, revoked: true as const }
        }),
        bootstrap: Effect.fn("Operator.bootstrap")(function*(input) {
          return yield* transactor.withTransaction(Effect.gen(function*() {
            const email = input.email ?? `owner-${(yield* randomToken(8)).toLowerCase()}@example.com`
            const user = yield* createUser(email)
            const principal = { kind: "user" as const, userId: user.user_id, email: normalizeEmail(email) }
            const tenant = yield* tenants.create(principal, { name: input.tenantName ?? "My workspace" })
            const key = yield* createApiKey({ tenantId: tenant.id, scopes: ALL_SCOPES, parent: true, name: "bootstrap" })
            return {
              user_id: user.user_id,
              user_token: user.user_token,
              billing_account_id: tenant.billing_account_id,
              tenant_id: tenant.id,
              api_key: key.api_key
            }
          }))
        })
      })
    })
  )
}
