import { Context, Effect, Layer, Option } from "effect"
import { Conflict, NotFound } from "../kernel/ApiError.ts"
import { makeEvent } from "../kernel/EventEnvelope.ts"
import { newId } from "../kernel/Id.ts"
import { type PageRequest, toWindow } from "../kernel/Pagination.ts"
import type { StorageError } from "../kernel/StorageError.ts"
import { now } from "../kernel/Timestamp.ts"
import { type ChannelRecord, ChannelStore } from "../ports/ChannelStore.ts"
import type { ProviderConnection } from "../ports/ChannelProviders.ts"
import { OutboxStore } from "../ports/OutboxStore.ts"
import { Transactor } from "../ports/Transactor.ts"
import { channelEventData } from "./Channel.ts"

const notFound = (id: string) => new NotFound({ message: `Channel ${id} not found` })

// The same words whoever asks: whether the holder is the caller's own tenant or another is not told.
const numberTaken = (platform: string, externalId: string) =>
  new Conflict({
    message: `${externalId} is already connected to an active ${platform} channel; ` +
      "it can be connected again once that channel is disconnected"
  })

/** Channels of a tenant: connecting one, reading them, disconnecting one. */
export class ChannelService extends Context.Service<ChannelService, {
  /**
   * Stores a newly connected channel and emits `channel.created`. Joins the caller's transaction,
   * so a connect link's use and its channel commit together. A number (provider id) an active channel
   * of any tenant holds already is refused with `Conflict`, decided by the database's unique index so
   * two connections racing cannot both win; the caller's transaction must then be rolled back.
   */
  readonly connect: (input: {
    readonly tenantId: string
    readonly platform: string
    readonly connection: ProviderConnection
    readonly connectTokenId: string | null
  }) => Effect.Effect<ChannelRecord, Conflict | StorageError>
  readonly get: (tenantId: string, id: string) => Effect.Effect<ChannelRecord, NotFound | StorageError>
  readonly list: (
    tenantId: string,
    page: PageRequest
  ) => Effect.Effect<{ readonly items: ReadonlyArray<ChannelRecord>; readonly total: number }, StorageError>
  /**
   * The active chat-app channel whose phone number id is `phoneNumberId`, in whichever tenant holds it
   * (one at most, see `connect`): how an operator payload, which names a number and not a tenant,
   * finds its workspace.
   */
  readonly routeChatapp: (phoneNumberId: string) => Effect.Effect<Option.Option<ChannelRecord>, StorageError>
  /** Marks the channel disconnected and emits `channel.updated`; disconnecting twice changes nothing. */
  readonly disconnect: (tenantId: string, id: string) => Effect.Effect<ChannelRecord, NotFound | StorageError>
}>()("omnichannel-core/channels/ChannelService") {
  static readonly layer = Layer.effect(
    ChannelService,
    Effect.gen(function*() {
      const channels = yield* ChannelStore
      const outbox = yield* OutboxStore
      const transactor = yield* Transactor
      return ChannelService.of({
        connect: Effect.fn("ChannelService.connect")(function*(input) {
          const channel: ChannelRecord = {
            id: yield* newId,
            tenant_id: input.tenantId,
            platform: input.platform,
            name: input.connection.name,
            status: "active",
            external_id: input.connection.external_id,
            config: input.connection.config,
            secrets: input.connection.secrets,
            created_via_connect_token_id: input.connectTokenId,
            created_at: yield* now,
            updated_at: null,
            disconnected_at: null
          }
          return yield* transactor.withTransaction(Effect.gen(function*() {
            yield* channels.insert(channel)
            yield* outbox.append([
              yield* makeEvent({ type: "channel.created", tenantId: input.tenantId, data: channelEventData(channel) })
            ])
            return channel
          })).pipe(
            Effect.catchTag("StorageError", (e): Effect.Effect<never, Conflict | StorageError> =>
              e.reason === "UniqueViolation" && e.constraint === "channels_active_external_unique"
                ? Effect.fail(numberTaken(channel.platform, channel.external_id))
                : Effect.fail(e))
          )
        }),
        get: Effect.fn("ChannelService.get")(function*(tenantId, id) {
          const found = yield* channels.get(tenantId, id)
          if (Option.isNone(found)) return yield* notFound(id)
          return found.value
        }),
        list: Effect.fn("ChannelService.list")(function*(tenantId, page) {
          return yield* channels.list(tenantId, toWindow(page))
        }),
        routeChatapp: Effect.fn("ChannelService.routeChatapp")(function*(phoneNumberId) {
          const found = yield* channels.findActiveByExternalId("chatapp", phoneNumberId)
          return Option.fromNullishOr(found[0])
        }),
        disconnect: Effect.fn("ChannelService.disconnect")(function*(tenantId, id) {
          return yield* transactor.withTransaction(Effect.gen(function*() {
            const found = yield* channels.get(tenantId, id)
            if (Option.isNone(found)) return yield* notFound(id)
            if (found.value.status === "disconnected") return found.value
            const at = yield* now
            const updated: ChannelRecord = { ...found.value, status: "disconnected", disconnected_at: at, updated_at: at }
            yield* channels.update(tenantId, updated)
            yield* outbox.append([
              yield* makeEvent({
                type: "channel.updated",
                tenantId,
                data: { ...channelEventData(updated), changed_fields: ["status"] }
              })
            ])
            return updated
          }))
        })
      })
    })
  )
}
