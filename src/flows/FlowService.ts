import { Context, Effect, Layer, Option } from "effect"
import { AttachmentService } from "../attachments/AttachmentService.ts"
import { ChannelService } from "../channels/ChannelService.ts"
import { ContactService } from "../contacts/ContactService.ts"
import { ConversationService } from "../conversations/ConversationService.ts"
import { ListService } from "../lists/ListService.ts"
import { CUSTOMER_SERVICE_WINDOW_MS, MessageService } from "../messages/MessageService.ts"
import { ChannelUnavailable, Conflict, InvalidRequest, NotFound, type OperatorFailed } from "../kernel/ApiError.ts"
import { chatappCredentialsOf } from "../kernel/ChatappChannel.ts"
import type { ChatappFieldHandler, ChatappMessageHandler } from "../kernel/ChatappEvents.ts"
import { newId } from "../kernel/Id.ts"
import { type PageRequest, toWindow } from "../kernel/Pagination.ts"
import { randomToken, sha256Hex } from "../kernel/Secret.ts"
import { StorageError } from "../kernel/StorageError.ts"
import { addSeconds, now } from "../kernel/Timestamp.ts"
import { ChatPlatform } from "../ports/ChatPlatform.ts"
import { type FlowDefinitionRecord, type FlowSessionRecord, FlowStore, type FlowVersionRecord } from "../ports/FlowStore.ts"
import { OutboxStore } from "../ports/OutboxStore.ts"
import { Transactor } from "../ports/Transactor.ts"
import {
  type CreateFlowRequest,
  type CreateVersionRequest,
  type CustomField,
  type FlowDefinition,
  type FlowSession,
  type SendFlowRequest,
  type Tag,
  toCustomField,
  toFlowDefinition,
  toFlowSession,
  toTag
} from "./Flow.ts"
import { ADOPTED_META_FLOW_ID, makeFlowAnswers } from "./FlowAnswers.ts"
import { checkVersion } from "./FlowDefinitions.ts"
import { makeFlowWebhooks } from "./FlowWebhooks.ts"
import { effectiveStatus } from "./FlowSession.ts"

/** How long a sent flow waits for its answer before its session reads as `expired` (an answer after it still counts). */
export const FLOW_SESSION_TTL_SECONDS = 30 * 24 * 60 * 60

const flowNotFound = (id: string) => new NotFound({ message: `Flow ${id} not found` })

// A key or name another request took meanwhile: a conflict the caller can fix.
const uniqueAsConflict = (message: string) => <A, E>(effect: Effect.Effect<A, E | StorageError>) =>
  Effect.catchIf(effect, (e): e is StorageError => e instanceof StorageError, (error): Effect.Effect<never, Conflict | StorageError> =>
    error.reason === "UniqueViolation" ? Effect.fail(new Conflict({ message })) : Effect.fail(error))

/**
 * Chat-app flows: definitions of the platform's flows with numbered versions (screens, sensitive
 * fields, write-back), sends that open a session carrying an unguessable token, answers matched by
 * that token (masked, written back, `chatapp_flow.completed` once), the platform's status and
 * health changes, and the custom fields and tags write-back reports on.
 */
export class FlowService extends Context.Service<FlowService, {
  readonly create: (
    tenantId: string,
    request: CreateFlowRequest
  ) => Effect.Effect<FlowDefinition, NotFound | InvalidRequest | ChannelUnavailable | StorageError>
  readonly list: (tenantId: string) => Effect.Effect<ReadonlyArray<FlowDefinition>, StorageError>
  readonly get: (tenantId: string, id: string) => Effect.Effect<FlowDefinition, NotFound | StorageError>
  readonly createVersion: (
    tenantId: string,
    id: string,
    request: CreateVersionRequest
  ) => Effect.Effect<FlowDefinition, NotFound | InvalidRequest | StorageError>
  /** Sends the flow's latest version to a contact (`sender_type`), opening a session. */
  readonly send: (
    tenantId: string,
    id: string,
    request: SendFlowRequest,
    senderType: FlowSessionRecord["sender_type"]
  ) => Effect.Effect<FlowSession, NotFound | InvalidRequest | ChannelUnavailable | OperatorFailed | StorageError>
  readonly sessions: (
    tenantId: string,
    id: string,
    filter: { readonly status?: string; readonly contact_id?: string },
    page: PageRequest
  ) => Effect.Effect<{ readonly items: ReadonlyArray<FlowSession>; readonly total: number }, NotFound | StorageError>
  readonly createCustomField: (
    tenantId: string,
    request: { readonly key: string; readonly type: CustomField["type"]; readonly editable?: boolean }
  ) => Effect.Effect<CustomField, Conflict | StorageError>
  readonly listCustomFields: (tenantId: string) => Effect.Effect<ReadonlyArray<CustomField>, StorageError>
  readonly createTag: (tenantId: string, request: { readonly name: string }) => Effect.Effect<Tag, Conflict | StorageError>
  readonly listTags: (tenantId: string) => Effect.Effect<ReadonlyArray<Tag>, StorageError>
  /** The inbound handler of flow answers (`nfm_reply`); after keywords, before the conversation store. */
  readonly answerHandler: ChatappMessageHandler
  /** The handler of the platform's `flows` webhook field (status changes, health alerts). */
  readonly flowsHandler: ChatappFieldHandler
}>()("omnichannel-core/flows/FlowService") {
  static readonly layer = Layer.effect(
    FlowService,
    Effect.gen(function*() {
      const store = yield* FlowStore
      const transactor = yield* Transactor
      const outbox = yield* OutboxStore
      const channels = yield* ChannelService
      const contacts = yield* ContactService
      const conversations = yield* ConversationService
      const messages = yield* MessageService
      const lists = yield* ListService
      const platform = yield* ChatPlatform
      const attachments = yield* AttachmentService

      const definition = Effect.fnUntraced(function*(tenantId: string, id: string) {
        const found = yield* store.getDefinition(tenantId, id)
        if (Option.isNone(found)) return yield* flowNotFound(id)
        return found.value
      })
      const latest = (tenantId: string, id: string) =>
        Effect.map(store.listVersions(tenantId, id), (versions) => versions[0] ?? null)
      const wire = (record: FlowDefinitionRecord) => Effect.map(latest(record.tenant_id, record.id), (v) => toFlowDefinition(record, v))

      const sessionWire = Effect.fnUntraced(function*(record: FlowSessionRecord) {
        const contact = record.contact_id === null
          ? null
          : yield* contacts.get(record.tenant_id, record.contact_id).pipe(Effect.map((c) => c.name), Effect.catchTag("NotFound", () => Effect.succeed(null)))
        return toFlowSession(record, contact, effectiveStatus(record, yield* now))
      })

      const answers = makeFlowAnswers({ store, transactor, outbox, contacts, conversations, lists, platform, attachments })
      const webhooks = makeFlowWebhooks({ store, channels, outbox })

      return FlowService.of({
        create: Effect.fn("FlowService.create")(function*(tenantId, request) {
          const channel = yield* channels.get(tenantId, request.channel_id)
          if (channel.platform !== "chatapp") {
            return yield* ChannelUnavailable.of(channel.id)
          }
          const checked = yield* checkVersion({ store, lists }, tenantId, request)
          const at = yield* now
          const record: FlowDefinitionRecord = {
            id: yield* newId,
            tenant_id: tenantId,
            channel_id: channel.id,
            name: request.name.trim(),
            meta_flow_id: request.meta_flow_id,
            status: null,
            health_status: null,
            alerts: {},
            created_at: at,
            updated_at: null
          }
          const version: FlowVersionRecord = {
            id: yield* newId,
            tenant_id: tenantId,
            definition_id: record.id,
            number: 1,
            screens: checked.screens,
            writeback: checked.writeback,
            created_at: at
          }
          yield* transactor.withTransaction(Effect.gen(function*() {
            yield* store.insertDefinition(record)
            yield* store.insertVersion(version)
          }))
          return toFlowDefinition(record, version)
        }),
        list: Effect.fn("FlowService.list")(function*(tenantId) {
          return yield* Effect.forEach(yield* store.listDefinitions(tenantId), wire)
        }),
        get: Effect.fn("FlowService.get")(function*(tenantId, id) {
          return yield* wire(yield* definition(tenantId, id))
        }),
        createVersion: Effect.fn("FlowService.createVersion")(function*(tenantId, id, request) {
          const record = yield* definition(tenantId, id)
          const checked = yield* checkVersion({ store, lists }, tenantId, request)
          // Two new versions at once: the loser takes the next number.
          for (let tries = 0;; tries++) {
            const before = yield* latest(tenantId, id)
            const version: FlowVersionRecord = {
              id: yield* newId,
              tenant_id: tenantId,
              definition_id: id,
              number: (before?.number ?? 0) + 1,
              screens: checked.screens,
              writeback: checked.writeback,
              created_at: yield* now
            }
            const inserted = yield* Effect.result(store.insertVersion(version))
            if (inserted._tag === "Success") return toFlowDefinition(record, version)
            if (inserted.failure.reason !== "UniqueViolation" || tries >= 3) return yield* Effect.fail(inserted.failure)
          }
        }),
        send: Effect.fn("FlowService.send")(function*(tenantId, id, request, senderType) {
          const record = yield* definition(tenantId, id)
          if (record.meta_flow_id === ADOPTED_META_FLOW_ID) {
            return yield* InvalidRequest.single(["path", "flow_id"], "This keeps answers to flows built outside the service; it cannot be sent", "not_sendable")
          }
          if (request.channel_id !== record.channel_id) {
            return yield* InvalidRequest.single(["body", "channel_id"], `Flow ${id} belongs to channel ${record.channel_id}`, "flow_not_on_channel")
          }
          const channel = yield* channels.get(tenantId, request.channel_id)
          const credentials = chatappCredentialsOf(channel)
          if (channel.status !== "active" || Option.isNone(credentials)) {
            return yield* ChannelUnavailable.of(channel.id)
          }
          const version = yield* latest(tenantId, id)
          const contact = yield* contacts.get(tenantId, request.contact_id)
          if (contact.phone === null) {
            return yield* InvalidRequest.single(["body", "contact_id"], "The contact has no phone number", "contact_unreachable")
          }
          const { conversation } = yield* conversations.openFor({ tenantId, channelId: channel.id, contactId: contact.id }).pipe(
            Effect.retry({ times: 1, while: (error) => error.reason === "UniqueViolation" })
          )
          const at = yield* now
          if (conversation.last_inbound_at === null || Date.parse(at) - Date.parse(conversation.last_inbound_at) >= CUSTOMER_SERVICE_WINDOW_MS) {
            return yield* InvalidRequest.single(
              ["body", "contact_id"],
              "The chat-app customer-service window is closed: a flow can be sent only within 24 hours of the contact's last message",
              "customer_service_window_closed"
            )
          }
          // The token travels to the platform only; the session keeps its hash.
          const token = yield* randomToken(40)
          const session: FlowSessionRecord = {
            id: yield* newId,
            tenant_id: tenantId,
            definition_id: record.id,
            version_id: version?.id ?? null,
            version_number: version?.number ?? null,
            contact_id: contact.id,
            conversation_id: conversation.id,
            channel_id: channel.id,
            sender_type: senderType,
            status: "sent",
            flow_token_hash: yield* sha256Hex(token),
            last_screen: null,
            answers: null,
            writeback_result: null,
            last_error: null,
            message_id: null,
            answer_message_id: null,
            created_at: at,
            opened_at: null,
            completed_at: null,
            expires_at: addSeconds(at, FLOW_SESSION_TTL_SECONDS)
          }
          yield* store.insertSession(session)
          const first = version?.screens[0]?.id
          const sent = yield* Effect.result(messages.deliver({
            conversation,
            credentials: credentials.value,
            to: contact.phone,
            messageType: "interactive",
            text: request.body ?? record.name,
            content: { flow: { id: record.id, name: record.name, session_id: session.id } },
            operatorMessage: {
              type: "interactive",
              interactive: {
                type: "flow",
                body: { text: request.body ?? record.name },
                action: {
                  name: "flow",
                  parameters: {
                    flow_message_version: "3",
                    flow_token: token,
                    flow_id: record.meta_flow_id,
                    flow_cta: request.cta ?? "Open",
                    flow_action: "navigate",
                    ...(first === undefined ? {} : { flow_action_payload: { screen: first } })
                  }
                }
              }
            }
          }))
          if (sent._tag === "Failure") {
            const failure = sent.failure
            if (failure._tag === "OperatorFailed") {
              yield* store.updateSession(tenantId, { ...session, status: "failed", last_error: failure.message, message_id: failure.message_id ?? null })
            }
            return yield* Effect.fail(failure)
          }
          const stored = { ...session, message_id: sent.success.id }
          yield* store.updateSession(tenantId, stored)
          return yield* sessionWire(stored)
        }),
        sessions: Effect.fn("FlowService.sessions")(function*(tenantId, id, filter, page) {
          yield* definition(tenantId, id)
          const at = yield* now
          // `expired` is a reading of `sent` past its time; `sent` is what has not expired yet.
          const stored = filter.status === "expired"
            ? { ...filter, status: "sent", expired_before: at }
            : filter.status === "sent"
            ? { ...filter, expires_from: at }
            : filter
          const { items, total } = yield* store.listSessions(tenantId, id, stored, toWindow(page))
          return { items: yield* Effect.forEach(items, sessionWire), total }
        }),
        createCustomField: Effect.fn("FlowService.createCustomField")(function*(tenantId, request) {
          const record = { id: yield* newId, tenant_id: tenantId, key: request.key, type: request.type, editable: request.editable ?? true, created_at: yield* now }
          yield* uniqueAsConflict(`A custom field '${request.key}' already exists`)(store.insertCustomField(record))
          return toCustomField(record)
        }),
        listCustomFields: Effect.fn("FlowService.listCustomFields")(function*(tenantId) {
          return (yield* store.listCustomFields(tenantId)).map(toCustomField)
        }),
        createTag: Effect.fn("FlowService.createTag")(function*(tenantId, request) {
          const record = { id: yield* newId, tenant_id: tenantId, name: request.name.trim(), created_at: yield* now }
          yield* uniqueAsConflict(`A tag '${record.name}' already exists`)(store.insertTag(record))
          return toTag(record)
        }),
        listTags: Effect.fn("FlowService.listTags")(function*(tenantId) {
          return (yield* store.listTags(tenantId)).map(toTag)
        }),
        answerHandler: answers,
        flowsHandler: webhooks
      })
    })
  )
}
