import { Context, Effect, Layer, Option, Schema } from "effect"
import { ChannelService } from "../channels/ChannelService.ts"
import { type Conflict, FeatureDisabled, NotFound } from "../kernel/ApiError.ts"
import { newId } from "../kernel/Id.ts"
import { type PageRequest, toWindow } from "../kernel/Pagination.ts"
import { issueCredential, parseCredential, verifySecret } from "../kernel/Secret.ts"
import type { StorageError } from "../kernel/StorageError.ts"
import { addSeconds, now } from "../kernel/Timestamp.ts"
import type { ChannelRecord } from "../ports/ChannelStore.ts"
import { type ChannelProvider, ChannelProviders, type ProviderRejected } from "../ports/ChannelProviders.ts"
import { type ConnectTokenRecord, ConnectTokenStore } from "../ports/ConnectTokenStore.ts"
import { Transactor } from "../ports/Transactor.ts"
import { TenantService } from "../tenants/TenantService.ts"
import { CONNECT_TOKEN_LIMITS, type CreateConnectTokenRequest } from "./ConnectToken.ts"
import { connectUrl, ConnectLinks } from "./ConnectLinks.ts"
import { statusAt, transition } from "./ConnectTokenMachine.ts"

/** Prefix of connect tokens (`occ_<lookup>_<secret>`). */
export const CONNECT_TOKEN_KIND = "occ"

/** A link that cannot be used: unknown, or no longer valid (and why). */
export class LinkUnusable extends Schema.TaggedError<LinkUnusable>()("LinkUnusable", {
  reason: Schema.Literals(["unknown", "revoked", "expired", "exhausted"])
}) {}

/** The customer chose a channel type the link does not offer, or one this host has no provider for. */
export class ChannelTypeUnavailable extends Schema.TaggedError<ChannelTypeUnavailable>()("ChannelTypeUnavailable", {
  channel_type: Schema.String
}) {}

// Losing a compare-and-set to a concurrent use means reading the token again; a few tries settle it.
class UseRaced extends Schema.TaggedError<UseRaced>()("UseRaced", {}) {}

/** An open link: the token behind it and the providers of the types it offers. */
export interface OpenLink {
  readonly token: ConnectTokenRecord
  readonly providers: ReadonlyArray<{ readonly type: string; readonly provider: ChannelProvider }>
}

/** Channel connect links: issuing, listing and revoking tokens, and completing a customer's connection. */
export class ConnectTokenService extends Context.Service<ConnectTokenService, {
  /** Issues a token in `tenantId`; the raw token exists only inside the returned `connect_url`. */
  readonly create: (
    tenantId: string,
    request: CreateConnectTokenRequest
  ) => Effect.Effect<
    { readonly token: ConnectTokenRecord; readonly connect_url: string },
    FeatureDisabled | NotFound | StorageError
  >
  readonly get: (tenantId: string, id: string) => Effect.Effect<ConnectTokenRecord, NotFound | StorageError>
  readonly list: (
    tenantId: string,
    page: PageRequest
  ) => Effect.Effect<{ readonly items: ReadonlyArray<ConnectTokenRecord>; readonly total: number }, StorageError>
  /** Revokes the token at once; channels already connected through it stay. */
  readonly revoke: (tenantId: string, id: string) => Effect.Effect<ConnectTokenRecord, NotFound | StorageError>
  /** What the connect page shows for a raw token, if the link is still usable. */
  readonly open: (rawToken: string) => Effect.Effect<OpenLink, LinkUnusable | StorageError>
  /**
   * Connects a channel of `channelType` through the link: the provider checks `input`, then the
   * use is counted and the channel created in the token's tenant in one transaction. A number an
   * active channel holds already is refused with `Conflict`, and the use is not counted.
   */
  readonly complete: (
    rawToken: string,
    channelType: string,
    input: Readonly<Record<string, string>>
  ) => Effect.Effect<
    { readonly channel: ChannelRecord; readonly token: ConnectTokenRecord },
    LinkUnusable | ChannelTypeUnavailable | ProviderRejected | Conflict | StorageError
  >
}>()("omnichannel-core/connect-tokens/ConnectTokenService") {
  static readonly layer = Layer.effect(
    ConnectTokenService,
    Effect.gen(function*() {
      const tokens = yield* ConnectTokenStore
      const tenants = yield* TenantService
      const channels = yield* ChannelService
      const providers = yield* ChannelProviders
      const links = yield* ConnectLinks
      const transactor = yield* Transactor

      const notFound = (id: string) => new NotFound({ message: `Connect token ${id} not found` })

      // The token behind a raw link, checked in constant time; unknown and forged look the same.
      const resolve = Effect.fnUntraced(function*(rawToken: string) {
        const parsed = parseCredential(CONNECT_TOKEN_KIND, rawToken)
        if (parsed === undefined) return yield* new LinkUnusable({ reason: "unknown" })
        const found = yield* tokens.findByLookup(parsed.lookup)
        if (Option.isNone(found) || !(yield* verifySecret(parsed.secret, found.value.secret_hash))) {
          return yield* new LinkUnusable({ reason: "unknown" })
        }
        return found.value
      })

      const usable = Effect.fnUntraced(function*(token: ConnectTokenRecord) {
        const status = statusAt(token, yield* now)
        if (status !== "valid") return yield* new LinkUnusable({ reason: status })
        return token
      })

      const offered = (token: ConnectTokenRecord) =>
        token.allowed_channel_types.flatMap((type) => {
          const provider = providers.byType[type]
          return provider === undefined ? [] : [{ type, provider }]
        })

      return ConnectTokenService.of({
        create: Effect.fn("ConnectTokenService.create")(function*(tenantId, request) {
          const tenant = yield* tenants.get(tenantId)
          if (Option.isNone(tenant)) return yield* new NotFound({ message: `Tenant ${tenantId} not found` })
          if (request.allowed_channel_types.includes("sms") && !tenant.value.sms_enabled) {
            return yield* new FeatureDisabled({
              feature: "sms",
              message: "SMS is not enabled for this tenant. Ask your account manager to enable SMS, " +
                "or create the link without 'sms' in allowed_channel_types."
            })
          }
          const credential = yield* issueCredential(CONNECT_TOKEN_KIND)
          const createdAt = yield* now
          const hours = request.expires_in_hours ?? CONNECT_TOKEN_LIMITS.expires_in_hours.default
          const token: ConnectTokenRecord = {
            id: yield* newId,
            tenant_id: tenantId,
            name: request.name ?? null,
            lookup: credential.lookup,
            secret_hash: credential.secretHash,
            token_prefix: credential.prefix,
            allowed_channel_types: request.allowed_channel_types,
            partner_name: request.partner_name ?? tenant.value.name,
            partner_redirect_url: request.partner_redirect_url ?? null,
            expires_at: addSeconds(createdAt, hours * 3600),
            max_uses: request.max_uses ?? CONNECT_TOKEN_LIMITS.max_uses.default,
            uses_count: 0,
            use_window_minutes: request.use_window_minutes ?? CONNECT_TOKEN_LIMITS.use_window_minutes.default,
            use_window_ends_at: null,
            revoked_at: null,
            created_at: createdAt
          }
          yield* tokens.insert(token)
          return { token, connect_url: connectUrl(links, credential.raw) }
        }),
        get: Effect.fn("ConnectTokenService.get")(function*(tenantId, id) {
          const found = yield* tokens.get(tenantId, id)
          if (Option.isNone(found)) return yield* notFound(id)
          return found.value
        }),
        list: Effect.fn("ConnectTokenService.list")(function*(tenantId, page) {
          return yield* tokens.list(tenantId, toWindow(page))
        }),
        revoke: Effect.fn("ConnectTokenService.revoke")(function*(tenantId, id) {
          const attempt = transactor.withTransaction(Effect.gen(function*() {
            const found = yield* tokens.get(tenantId, id)
            if (Option.isNone(found)) return yield* notFound(id)
            const next = transition(found.value, { _tag: "Revoke" }, yield* now).state
            if (next === found.value) return found.value
            if (!(yield* tokens.compareAndSet(found.value, next))) return yield* new UseRaced()
            return next
          }))
          // A use landing in between only changes uses_count: read again and revoke that.
          return yield* attempt.pipe(Effect.retry({ while: (e) => e._tag === "UseRaced" }))
        }),
        open: Effect.fn("ConnectTokenService.open")(function*(rawToken) {
          const token = yield* usable(yield* resolve(rawToken))
          return { token, providers: offered(token) }
        }),
        complete: Effect.fn("ConnectTokenService.complete")(function*(rawToken, channelType, input) {
          const token = yield* usable(yield* resolve(rawToken))
          const provider = offered(token).find((p) => p.type === channelType)?.provider
          if (provider === undefined) return yield* new ChannelTypeUnavailable({ channel_type: channelType })
          // The provider is asked before the use is counted: a typo must not burn one of max_uses.
          const connection = yield* provider.connect(input)
          const attempt = transactor.withTransaction(Effect.gen(function*() {
            const current = yield* tokens.get(token.tenant_id, token.id)
            if (Option.isNone(current)) return yield* new LinkUnusable({ reason: "unknown" })
            const { intents, state } = transition(current.value, { _tag: "Use" }, yield* now)
            // The machine answers a use with one intent: refuse it, or count it and create the channel.
            for (const intent of intents) {
              switch (intent._tag) {
                case "RejectUse":
                  return yield* new LinkUnusable({ reason: intent.status })
                case "CreateChannel": {
                  if (!(yield* tokens.compareAndSet(current.value, state))) return yield* new UseRaced()
                  const channel = yield* channels.connect({
                    tenantId: token.tenant_id,
                    platform: channelType,
                    connection,
                    connectTokenId: token.id
                  })
                  return { channel, token: state }
                }
              }
            }
            return yield* Effect.die(new Error("the connect token machine answered a use with no intent"))
          }))
          // Each lost compare-and-set means another use or the revocation committed, which can happen at
          // most max_uses + 1 times: so many customers finishing at once all get their turn, none a false 410.
          return yield* attempt.pipe(
            Effect.retry({ times: token.max_uses + 1, while: (e) => e._tag === "UseRaced" }),
            Effect.catchTag("UseRaced", () => Effect.fail(new LinkUnusable({ reason: "exhausted" })))
          )
        })
      })
    })
  )
}
