import { Context, Effect, Layer, Option } from "effect"
import { AttachmentService } from "../attachments/AttachmentService.ts"
import { type FailedWithBody, type FeatureDisabled, InvalidRequest, NotFound } from "../kernel/ApiError.ts"
import { newId } from "../kernel/Id.ts"
import { type PageRequest, toWindow } from "../kernel/Pagination.ts"
import { StorageError } from "../kernel/StorageError.ts"
import { now } from "../kernel/Timestamp.ts"
import type { AttachmentRecord } from "../ports/AttachmentStore.ts"
import {
  type TeamChatChannelRecord,
  type TeamChatChannelWithMembers,
  type TeamChatMessageRecord,
  TeamChatStore
} from "../ports/TeamChatStore.ts"
import {
  NO_SUMMARY,
  type Summary,
  SummaryErrors,
  type SummaryResponse,
  SummaryService,
  type SummaryTarget,
  teamChatTarget
} from "../summaries/SummaryService.ts"
import {
  type CreateChannelRequest,
  type DirectMessageRequest,
  type PostMessageRequest,
  type TeamChatAttachment,
  type TeamChatChannel,
  type TeamChatChannelListItem,
  type TeamChatMessage,
  toChannel,
  toChannelListItem
} from "./TeamChat.ts"
import {
  type Admission,
  admitChannel,
  admitDirectMessage,
  type Admitted,
  dmKey,
  isMember,
  offersSummaries,
  type TeamChatActor
} from "./TeamChatRules.ts"

export { actorOf, NOT_BOUND, type TeamChatActor } from "./TeamChatRules.ts"
export {
  CreateChannelRequest,
  DirectMessageRequest,
  PostMessageRequest,
  TeamChatChannel,
  TeamChatChannelList,
  TeamChatMessage,
  TeamChatMessageList
} from "./TeamChat.ts"

const channelNotFound = (id: string) => new NotFound({ message: `Channel ${id} not found` })
const messageNotFound = (id: string) => new NotFound({ message: `Message ${id} not found` })

const NOT_OFFERED = "Summaries are not offered in channels shared across workspaces or with external guests"

const isUnique = (error: unknown): error is StorageError => error instanceof StorageError && error.reason === "UniqueViolation"

const admitted = <A>(result: Admitted<A>): Effect.Effect<A, InvalidRequest> =>
  result.ok ? Effect.succeed(result.value) : Effect.fail(new InvalidRequest({ issues: result.issues }))

/**
 * Team chat, the smallest the summary rules need: channels with members (shared with other
 * workspaces or with external guests, which never offer summaries), direct messages, messages and
 * thread replies with files uploaded before. Every operation acts as a user (`TeamChatActor`) in a
 * tenant; a channel the actor is not a member of, or that the tenant does not see, is not found. Each
 * file carries the three summary fields as the actor sees them: a file counts as inbound when someone
 * else posted it. Summaries go through `SummaryService` and never emit `attachment.summarized`.
 */
export class TeamChatService extends Context.Service<TeamChatService, {
  /** A channel; the creator is a member. 422 names each refused member or workspace. */
  readonly createChannel: (
    actor: TeamChatActor,
    request: CreateChannelRequest
  ) => Effect.Effect<TeamChatChannel, InvalidRequest | StorageError>
  /** The direct message between the actor and `user_ids`: the existing one (`created: false`) or a new one. */
  readonly openDirectMessage: (
    actor: TeamChatActor,
    request: DirectMessageRequest
  ) => Effect.Effect<{ readonly channel: TeamChatChannel; readonly created: boolean }, InvalidRequest | StorageError>
  /**
   * A page of the channels and direct messages the actor is a member of, of those the actor's tenant
   * sees, newest activity first (a message or thread reply; a channel without any by its creation).
   */
  readonly listChannels: (
    actor: TeamChatActor,
    page: PageRequest
  ) => Effect.Effect<{ readonly items: ReadonlyArray<TeamChatChannelListItem>; readonly total: number }, StorageError>
  /** Posts a message or thread reply with files uploaded in the actor's tenant. */
  readonly postMessage: (
    actor: TeamChatActor,
    channelId: string,
    request: PostMessageRequest
  ) => Effect.Effect<TeamChatMessage, NotFound | InvalidRequest | StorageError>
  /** A page of the channel's messages and replies together, oldest first. */
  readonly listMessages: (
    actor: TeamChatActor,
    channelId: string,
    page: PageRequest
  ) => Effect.Effect<{ readonly items: ReadonlyArray<TeamChatMessage>; readonly total: number }, NotFound | StorageError>
  readonly getMessage: (actor: TeamChatActor, messageId: string) => Effect.Effect<TeamChatMessage, NotFound | StorageError>
  /** `GET …/summary` of a file of a message the actor sees (404 `attachment_not_found` otherwise). */
  readonly getSummary: (
    actor: TeamChatActor,
    messageId: string,
    attachmentId: string
  ) => Effect.Effect<Summary, FeatureDisabled | FailedWithBody | StorageError>
  /**
   * `POST …/summary` of a file of a message the actor sees: 422 `attachment_not_summarizable` where the
   * channel offers none, else as `POST /attachments/{id}/summary`, counted per user, never announced.
   */
  readonly requestSummary: (
    actor: TeamChatActor,
    messageId: string,
    attachmentId: string
  ) => Effect.Effect<SummaryResponse, FeatureDisabled | FailedWithBody | StorageError>
}>()("omnichannel-core/team-chat/TeamChatService") {
  static readonly layer = Layer.effect(
    TeamChatService,
    Effect.gen(function*() {
      const store = yield* TeamChatStore
      const attachments = yield* AttachmentService
      const summaries = yield* SummaryService

      const belongsIn = Effect.fnUntraced(function*(tenantIds: ReadonlyArray<string>, userIds: ReadonlyArray<string>) {
        const pairs = new Set((yield* store.tenantUsers(tenantIds, userIds, yield* now)).map((p) => `${p.tenant_id}/${p.user_id}`))
        return (tenantId: string, userId: string) => pairs.has(`${tenantId}/${userId}`)
      })

      const insertChannel = Effect.fnUntraced(function*(channel: TeamChatChannelRecord, admissions: ReadonlyArray<Admission>) {
        // All join at once, so they read back by user id, as the store lists them.
        const members = admissions.map((a) => ({ channel_id: channel.id, user_id: a.user_id, tenant_id: a.tenant_id, joined_at: channel.created_at }))
          .sort((x, y) => (x.user_id < y.user_id ? -1 : x.user_id > y.user_id ? 1 : 0))
        yield* store.insertChannel(channel, members)
        return { channel, members } satisfies TeamChatChannelWithMembers
      })

      // The channel as the actor sees it: one the tenant sees and the actor is a member of.
      const memberChannel = Effect.fnUntraced(function*(actor: TeamChatActor, channelId: string) {
        const found = yield* store.getChannel(actor.tenantId, channelId)
        return Option.isSome(found) && isMember(found.value, actor.userId) ? found : Option.none()
      })

      // The message and its channel as the actor sees them, or nothing.
      const visibleMessage = Effect.fnUntraced(function*(actor: TeamChatActor, messageId: string) {
        const message = yield* store.getMessage(actor.tenantId, messageId)
        if (Option.isNone(message)) return Option.none()
        const channel = yield* memberChannel(actor, message.value.channel_id)
        return Option.map(channel, (found) => ({ message: message.value, channel: found.channel }))
      })

      // The files of a message, as stored in its author's tenant (a file gone since is left out).
      const filesOf = Effect.fnUntraced(function*(message: TeamChatMessageRecord) {
        const found = yield* Effect.forEach(message.attachment_ids, (id) =>
          attachments.get(message.tenant_id, id).pipe(
            Effect.map(Option.some),
            Effect.catchTag("NotFound", () => Effect.succeed(Option.none<AttachmentRecord>()))
          ), { concurrency: 4 })
        return found.flatMap((file) => Option.isSome(file) ? [file.value] : [])
      })

      // Messages as the actor sees them: each file with its summary fields, one summary read for all.
      const toWire = Effect.fnUntraced(function*(actor: TeamChatActor, channel: TeamChatChannelRecord, messages: ReadonlyArray<TeamChatMessageRecord>) {
        const offered = offersSummaries(channel)
        const files = yield* Effect.forEach(messages, filesOf)
        const targets: Array<SummaryTarget> = []
        for (const [i, message] of messages.entries()) {
          for (const record of files[i]!) {
            // Summaries are the actor's workspace's: a file of another workspace offers none.
            if (offered && record.tenant_id === actor.tenantId) {
              targets.push(teamChatTarget(record, { postedByCaller: message.author_user_id === actor.userId, offered }))
            }
          }
        }
        const fields = new Map((yield* summaries.fieldsFor(actor.tenantId, targets)).map((f, i) => [targets[i]!.attachmentId, f]))
        return yield* Effect.forEach(messages, (message, i) =>
          Effect.gen(function*() {
            const wired = yield* Effect.forEach(files[i]!, (record: AttachmentRecord) =>
              Effect.map(attachments.toWire(record), (wire): TeamChatAttachment => ({ ...wire, ...(fields.get(record.id) ?? NO_SUMMARY) })))
            return {
              id: message.id,
              channel_id: message.channel_id,
              tenant_id: message.tenant_id,
              author_user_id: message.author_user_id,
              text: message.text,
              parent_message_id: message.parent_message_id,
              attachments: wired,
              created_at: message.created_at
            }
          }))
      })

      // The files a new message carries: the actor's tenant's, carried by no message yet.
      const filesToPost = Effect.fnUntraced(function*(actor: TeamChatActor, ids: ReadonlyArray<string>) {
        const unique = [...new Set(ids)]
        const records = yield* Effect.forEach(unique, (id) => attachments.get(actor.tenantId, id))
        const posted = new Set(yield* store.postedAttachmentIds(actor.tenantId, unique))
        const issues = records.flatMap((record) => {
          const loc = ["body", "attachment_ids", ids.indexOf(record.id)]
          if (record.message_id !== null || posted.has(record.id)) {
            return [{ loc, msg: `Attachment ${record.id} is already sent with another message; upload the file again to post it here`, type: "value_error" }]
          }
          return []
        })
        if (issues.length > 0) return yield* new InvalidRequest({ issues })
        return unique
      })

      // The message, its channel and the file, as the actor sees them; any other case is the summary routes' 404.
      const summaryTarget = Effect.fnUntraced(function*(actor: TeamChatActor, messageId: string, attachmentId: string) {
        const notFound = SummaryErrors.attachmentNotFound(attachmentId)
        const found = yield* visibleMessage(actor, messageId)
        if (Option.isNone(found) || !found.value.message.attachment_ids.includes(attachmentId)) return yield* notFound
        const { message, channel } = found.value
        const record = yield* Effect.catchTag(attachments.get(message.tenant_id, attachmentId), "NotFound", () => Effect.fail(notFound))
        const offered = offersSummaries(channel) && record.tenant_id === actor.tenantId
        return teamChatTarget(record, { postedByCaller: message.author_user_id === actor.userId, offered })
      })

      return TeamChatService.of({
        createChannel: Effect.fn("TeamChatService.createChannel")(function*(actor, request) {
          const sharedWith = request.shared_with_tenant_ids ?? []
          const belongs = yield* belongsIn([actor.tenantId, ...sharedWith], [actor.userId, ...request.member_user_ids])
          const admission = yield* admitted(admitChannel({ actor, sharedWith, memberUserIds: request.member_user_ids, belongs }))
          const channel: TeamChatChannelRecord = {
            id: yield* newId,
            tenant_id: actor.tenantId,
            kind: "channel",
            name: request.name.trim(),
            shared_with_tenant_ids: [...admission.sharedWith].sort(),
            has_external_guests: request.has_external_guests ?? false,
            dm_key: null,
            created_by: actor.userId,
            created_at: yield* now
          }
          return toChannel(yield* insertChannel(channel, admission.members))
        }),
        openDirectMessage: Effect.fn("TeamChatService.openDirectMessage")(function*(actor, request) {
          const belongs = yield* belongsIn([actor.tenantId], request.user_ids)
          const participants = yield* admitted(admitDirectMessage({ actor, userIds: request.user_ids, belongs }))
          const key = dmKey(participants.map((p) => p.user_id))
          const existing = Effect.fnUntraced(function*() {
            const found = yield* store.findDirectMessage(actor.tenantId, key)
            return Option.isNone(found) ? Option.none() : yield* store.getChannel(actor.tenantId, found.value.id)
          })
          const before = yield* existing()
          if (Option.isSome(before)) return { channel: toChannel(before.value), created: false }
          const channel: TeamChatChannelRecord = {
            id: yield* newId,
            tenant_id: actor.tenantId,
            kind: "dm",
            name: null,
            shared_with_tenant_ids: [],
            has_external_guests: false,
            dm_key: key,
            created_by: actor.userId,
            created_at: yield* now
          }
          // Opened at the same moment by another request: that one is the direct message.
          return yield* insertChannel(channel, participants).pipe(
            Effect.map((made) => ({ channel: toChannel(made), created: true })),
            Effect.catchIf(isUnique, (error) =>
              Effect.flatMap(existing(), (raced) =>
                Option.isSome(raced) ? Effect.succeed({ channel: toChannel(raced.value), created: false }) : Effect.fail(error)))
          )
        }),
        listChannels: Effect.fn("TeamChatService.listChannels")(function*(actor, page) {
          const { items, total } = yield* store.listMemberChannels(actor.tenantId, actor.userId, toWindow(page))
          return { items: items.map(toChannelListItem), total }
        }),
        postMessage: Effect.fn("TeamChatService.postMessage")(function*(actor, channelId, request) {
          const found = yield* memberChannel(actor, channelId)
          if (Option.isNone(found)) return yield* channelNotFound(channelId)
          const requested = request.attachment_ids ?? []
          if (request.text.trim() === "" && requested.length === 0) {
            return yield* InvalidRequest.single(["body", "text"], "A message needs text or at least one attachment")
          }
          const parentId = request.parent_message_id ?? null
          if (parentId !== null) {
            const parent = yield* store.getMessage(actor.tenantId, parentId)
            if (Option.isNone(parent) || parent.value.channel_id !== channelId || parent.value.parent_message_id !== null) {
              return yield* InvalidRequest.single(["body", "parent_message_id"], "Must be a top-level message of this channel")
            }
          }
          const message: TeamChatMessageRecord = {
            id: yield* newId,
            tenant_id: actor.tenantId,
            channel_id: channelId,
            author_user_id: actor.userId,
            text: request.text,
            parent_message_id: parentId,
            attachment_ids: yield* filesToPost(actor, requested),
            created_at: yield* now
          }
          // A file posted by another request at the same moment.
          yield* store.insertMessage(message).pipe(Effect.catchIf(isUnique, () =>
            Effect.fail(InvalidRequest.single(
              ["body", "attachment_ids"],
              "An attachment is already sent with another message; upload the file again to post it here"
            ))))
          const [wire] = yield* toWire(actor, found.value.channel, [message])
          return wire!
        }),
        listMessages: Effect.fn("TeamChatService.listMessages")(function*(actor, channelId, page) {
          const found = yield* memberChannel(actor, channelId)
          if (Option.isNone(found)) return yield* channelNotFound(channelId)
          const { items, total } = yield* store.listMessages(actor.tenantId, channelId, toWindow(page))
          return { items: yield* toWire(actor, found.value.channel, items), total }
        }),
        getMessage: Effect.fn("TeamChatService.getMessage")(function*(actor, messageId) {
          const found = yield* visibleMessage(actor, messageId)
          if (Option.isNone(found)) return yield* messageNotFound(messageId)
          const [wire] = yield* toWire(actor, found.value.channel, [found.value.message])
          return wire!
        }),
        getSummary: Effect.fn("TeamChatService.getSummary")(function*(actor, messageId, attachmentId) {
          const target = yield* summaryTarget(actor, messageId, attachmentId)
          return yield* summaries.summaryFor({ tenantId: actor.tenantId, target })
        }),
        requestSummary: Effect.fn("TeamChatService.requestSummary")(function*(actor, messageId, attachmentId) {
          const target = yield* summaryTarget(actor, messageId, attachmentId)
          if (!target.offered) return yield* SummaryErrors.notSummarizable(NOT_OFFERED)
          return yield* summaries.requestSummary({
            tenantId: actor.tenantId,
            caller: { kind: "user", id: actor.userId },
            target,
            announce: false
          })
        })
      })
    })
  )
}
