import { Effect, Option } from "effect"
import type { AttachmentService, PreparedAttachment } from "../attachments/AttachmentService.ts"
import type { ContactService } from "../contacts/ContactService.ts"
import type { ConversationService } from "../conversations/ConversationService.ts"
import type { ListService } from "../lists/ListService.ts"
import { chatappCredentialsOf } from "../kernel/ChatappChannel.ts"
import { type ChatappMessageHandler, type ChatappMessageInput, RetryLater } from "../kernel/ChatappEvents.ts"
import { makeEvent } from "../kernel/EventEnvelope.ts"
import { newId } from "../kernel/Id.ts"
import { sha256Hex } from "../kernel/Secret.ts"
import { now } from "../kernel/Timestamp.ts"
import type { ChatPlatform } from "../ports/ChatPlatform.ts"
import type { ContactRecord } from "../ports/ContactStore.ts"
import type { FlowDefinitionRecord, FlowSessionRecord, FlowStore, FlowVersionRecord } from "../ports/FlowStore.ts"
import type { OutboxStore } from "../ports/OutboxStore.ts"
import type { Transactor } from "../ports/Transactor.ts"
import { decideAnswer, maskAnswers, readFlowReply } from "./FlowSession.ts"
import { type MediaOutcome, planWriteback, type WritebackPlan, type WritebackResult, withFailures } from "./Writeback.ts"

/** Largest photo or document of an answer copied from the platform. */
export const MAX_FLOW_MEDIA_BYTES = 100 * 1024 * 1024

/** A photo or document an answer names (`PhotoPicker`, `DocumentPicker`): the platform's media object. */
interface MediaReference {
  readonly input: string
  readonly id: string
  readonly fileName: string
  readonly mimeType: string
}

// The media objects of the answers: arrays of {id, file_name, mime_type} (the platform's shape).
const mediaOf = (answers: Readonly<Record<string, unknown>>): ReadonlyArray<MediaReference> =>
  Object.entries(answers).flatMap(([input, value]) =>
    Array.isArray(value)
      ? value.flatMap((item): ReadonlyArray<MediaReference> => {
        if (typeof item !== "object" || item === null) return []
        const o = item as Record<string, unknown>
        return typeof o.id === "string" && (typeof o.mime_type === "string" || typeof o.file_name === "string")
          ? [{ input, id: o.id, fileName: typeof o.file_name === "string" ? o.file_name : o.id, mimeType: typeof o.mime_type === "string" ? o.mime_type : "application/octet-stream" }]
          : []
      })
      : [])

/** The platform flow id of the stand-in definition adopted answers are kept under. */
export const ADOPTED_META_FLOW_ID = "0"

/** What the answer handler needs. */
export interface AnswerDeps {
  readonly store: FlowStore["Service"]
  readonly transactor: Transactor["Service"]
  readonly outbox: OutboxStore["Service"]
  readonly contacts: ContactService["Service"]
  readonly conversations: ConversationService["Service"]
  readonly lists: ListService["Service"]
  readonly platform: ChatPlatform["Service"]
  readonly attachments: AttachmentService["Service"]
}

/**
 * The handler of flow answers (`nfm_reply`): matched by the flow token's hash, the first answer
 * completes its session (a conditional update: two at once complete it once), masks sensitive
 * inputs, writes back to the session's own contact, and emits `chatapp_flow.completed` with
 * `event_id` = the session id. An answer with an unknown token becomes an `adopted` session on the
 * sender's contact, with no write-back. The answer message is still stored by the conversation store.
 */
export const makeFlowAnswers = (deps: AnswerDeps): ChatappMessageHandler => {
  const { store, outbox, contacts, conversations, lists, attachments, platform } = deps

  // The answer's photos and documents, copied from the platform into the blob store before the
  // transaction: a file that cannot be had now is tried again with the payload, unless this is the
  // last try (then it is reported as not stored).
  const fetchMedia = Effect.fnUntraced(function*(input: ChatappMessageInput, answers: Readonly<Record<string, unknown>>) {
    const files: Array<{ readonly ref: MediaReference; readonly prepared: PreparedAttachment | null }> = []
    const credentials = chatappCredentialsOf(input.channel)
    for (const ref of mediaOf(answers)) {
      if (Option.isNone(credentials)) {
        files.push({ ref, prepared: null })
        continue
      }
      const fetched = yield* Effect.result(platform.fetchMedia(credentials.value, ref.id, { maxBytes: MAX_FLOW_MEDIA_BYTES }))
      if (fetched._tag === "Failure") {
        if (fetched.failure.retryable && !input.lastAttempt) {
          yield* Effect.forEach(files, (f) => (f.prepared === null ? Effect.void : attachments.discard(f.prepared)), { discard: true })
          return yield* new RetryLater({ message: `flow media ${ref.id}: ${fetched.failure.message}` })
        }
        files.push({ ref, prepared: null })
        continue
      }
      const prepared = yield* Effect.result(attachments.prepareInbound({
        tenantId: input.channel.tenant_id,
        bytes: fetched.success.bytes,
        declaredType: fetched.success.mimeType || ref.mimeType,
        filename: ref.fileName,
        externalId: ref.id,
        origin: "chatapp_media",
        direction: "inbound"
      }))
      files.push({ ref, prepared: prepared._tag === "Success" ? prepared.success : null })
    }
    return files
  })

  // Every adopted answer of a channel is kept under one stand-in definition of that channel.
  const adoptedDefinition = Effect.fnUntraced(function*(tenantId: string, channelId: string) {
    const existing = (yield* store.listDefinitions(tenantId)).find((d) => d.channel_id === channelId && d.meta_flow_id === ADOPTED_META_FLOW_ID)
    if (existing !== undefined) return existing
    const record: FlowDefinitionRecord = {
      id: yield* newId,
      tenant_id: tenantId,
      channel_id: channelId,
      name: "Flows answered from outside the service",
      meta_flow_id: ADOPTED_META_FLOW_ID,
      status: null,
      health_status: null,
      alerts: {},
      created_at: yield* now,
      updated_at: null
    }
    yield* store.insertDefinition(record)
    return record
  })

  // Applies a plan to the session's contact; each failed item is reported, none blocks the answer.
  const apply = Effect.fnUntraced(function*(tenantId: string, channelId: string, plan: WritebackPlan) {
    if (plan.contactId === null) return plan.result
    const contactId = plan.contactId
    const failed = { tags: [] as Array<string>, subscriptions: [] as Array<string>, unsubscriptions: [] as Array<string>, all: false }
    if (Object.keys(plan.contactFields).length > 0 || Object.keys(plan.customFields).length > 0) {
      const updated = yield* Effect.result(contacts.update(tenantId, contactId, {
        ...plan.contactFields,
        ...(Object.keys(plan.customFields).length === 0 ? {} : { custom_fields: plan.customFields })
      }))
      if (updated._tag === "Failure") {
        if (updated.failure._tag === "StorageError") return yield* Effect.fail(updated.failure)
        failed.all = true
      }
    }
    for (const tagId of plan.tagIds) yield* store.tagContact(tenantId, contactId, tagId, yield* now)
    for (const listId of plan.subscribe) {
      const done = yield* Effect.result(lists.subscribe(tenantId, listId, contactId, { method: "flow", channelId }))
      if (done._tag === "Failure") {
        if (done.failure._tag === "StorageError") return yield* Effect.fail(done.failure)
        failed.subscriptions.push(listId)
      }
    }
    for (const listId of plan.unsubscribe) {
      const done = yield* Effect.result(lists.unsubscribe(tenantId, listId, contactId, { method: "flow", channelId }))
      if (done._tag === "Failure") {
        if (done.failure._tag === "StorageError") return yield* Effect.fail(done.failure)
        failed.unsubscriptions.push(listId)
      }
    }
    return failed.all || failed.subscriptions.length > 0 || failed.unsubscriptions.length > 0
      ? withFailures(plan.result, failed)
      : plan.result
  })

  const writeback = Effect.fnUntraced(function*(
    tenantId: string,
    session: FlowSessionRecord,
    version: FlowVersionRecord | null,
    contact: ContactRecord | null,
    answers: Readonly<Record<string, unknown>>
  ) {
    const screens = version?.screens ?? []
    const mappings = version?.writeback ?? []
    const customFields = new Map((yield* store.listCustomFields(tenantId)).map((f) => [f.id, f]))
    const tags = new Set((yield* store.listTags(tenantId)).map((t) => t.id))
    const listIds = mappings.flatMap((m) => (m.list_id === undefined ? [] : [m.list_id]))
    const listTypes = new Map<string, { readonly type: "static" | "dynamic" }>()
    for (const id of listIds) {
      const found = yield* lists.get(tenantId, id).pipe(Effect.map(Option.some), Effect.catchTag("NotFound", () => Effect.succeed(Option.none())))
      if (Option.isSome(found)) listTypes.set(id, { type: found.value.type })
    }
    const owners = new Map<string, string | null>()
    for (const m of mappings) {
      const value = answers[m.input]
      if (m.target !== "contact_field" || typeof value !== "string" || (m.field !== "email" && m.field !== "phone")) continue
      const found = yield* contacts.findByIdentity(tenantId, m.field === "email" ? { email: value } : { phone: value })
      owners.set(`${m.field}:${value.trim().toLowerCase()}`, Option.isSome(found) ? found.value.id : null)
    }
    const plan = planWriteback({
      contact,
      mappings,
      answers,
      sensitive: new Set(screens.flatMap((s) => s.sensitive_fields)),
      inputTypes: new Map(screens.flatMap((s) => s.inputs.map((i) => [i.name, i.type] as const))),
      customFields,
      tags,
      lists: listTypes,
      emailOwner: (email) => owners.get(`email:${email.trim().toLowerCase()}`) ?? null,
      phoneOwner: (phone) => owners.get(`phone:${phone.trim().toLowerCase()}`) ?? null
    })
    return yield* apply(tenantId, session.channel_id, plan)
  })

  // An answer that completes nothing keeps none of its files.
  const dropFiles = (files: ReadonlyArray<{ readonly prepared: PreparedAttachment | null }>) =>
    Effect.as(
      Effect.forEach(files, (f) => (f.prepared === null ? Effect.void : attachments.discard(f.prepared)), { discard: true }),
      "continue" as const
    )

  const complete = Effect.fnUntraced(function*(
    input: ChatappMessageInput,
    flowToken: string,
    tokenHash: string,
    raw: Readonly<Record<string, unknown>>,
    files: ReadonlyArray<{ readonly ref: MediaReference; readonly prepared: PreparedAttachment | null }>
  ) {
    const { channel, event } = input
    const tenantId = channel.tenant_id
    const at = yield* now
    const found = yield* store.findSessionByTokenHash(tokenHash)
    const known = Option.isSome(found) && found.value.tenant_id === tenantId && found.value.channel_id === channel.id
    let session: FlowSessionRecord
    let definition: FlowDefinitionRecord
    let version: FlowVersionRecord | null = null
    if (known) {
      session = found.value
      if (decideAnswer(session.status).kind === "ignore") return yield* dropFiles(files)
      definition = Option.getOrThrow(yield* store.getDefinition(tenantId, session.definition_id))
      version = session.version_id === null ? null : Option.getOrNull(yield* store.getVersion(tenantId, session.version_id))
    } else {
      // A flow built or sent outside the service: kept as an adopted session on the sender's contact.
      const { contact } = yield* contacts.findOrCreateByPhone(tenantId, `+${event.from.replace(/\D/g, "")}`, event.profileName)
      const { conversation } = yield* conversations.openFor({ tenantId, channelId: channel.id, contactId: contact.id })
      definition = yield* adoptedDefinition(tenantId, channel.id)
      session = {
        id: yield* newId,
        tenant_id: tenantId,
        definition_id: definition.id,
        version_id: null,
        version_number: null,
        contact_id: contact.id,
        conversation_id: conversation.id,
        channel_id: channel.id,
        sender_type: "adopted",
        status: "sent",
        flow_token_hash: yield* sha256Hex(`adopted:${event.key}:${flowToken}`),
        last_screen: null,
        answers: null,
        writeback_result: null,
        last_error: null,
        message_id: null,
        answer_message_id: null,
        created_at: at,
        opened_at: null,
        completed_at: null,
        expires_at: at
      }
      yield* store.insertSession(session)
    }
    const answers = maskAnswers(raw, version?.screens ?? [])
    const completed: FlowSessionRecord = {
      ...session,
      status: "completed",
      answers,
      opened_at: session.opened_at ?? at,
      completed_at: at,
      answer_message_id: event.externalId
    }
    // A conditional update: of two answers at once, one completes the session, the other changes nothing.
    if (!(yield* store.completeSession(tenantId, completed))) return yield* dropFiles(files)
    const contact = session.sender_type === "adopted" || session.contact_id === null
      ? null
      : Option.getOrNull(yield* contacts.get(session.tenant_id, session.contact_id).pipe(
        Effect.map(Option.some),
        Effect.catchTag("NotFound", () => Effect.succeed(Option.none()))
      ))
    // Items the contact's data refuses are reported in the result; only a storage failure (which
    // would lose the answer too) makes the whole answer try again.
    const result: WritebackResult = yield* writeback(tenantId, completed, version, contact, raw)
    // The copied files are kept with the conversation of the session, carried by the flow's message.
    const media: Record<string, Array<MediaOutcome>> = {}
    for (const { ref, prepared } of files) {
      let stored = false
      if (prepared !== null && session.message_id !== null && session.conversation_id !== null) {
        yield* attachments.record(prepared, { messageId: session.message_id, conversationId: session.conversation_id })
        stored = true
      }
      ;(media[ref.input] ??= []).push({ file_name: prepared?.filename ?? ref.fileName, mime_type: prepared?.content_type ?? ref.mimeType, stored, file_size: prepared?.file_size ?? 0 })
    }
    const withMedia: WritebackResult = { ...result, media }
    const final: FlowSessionRecord = { ...completed, writeback_result: withMedia as unknown as Record<string, unknown> }
    yield* store.updateSession(tenantId, final)
    yield* outbox.append([
      yield* makeEvent({
        type: "chatapp_flow.completed",
        tenantId,
        eventId: session.id,
        data: {
          session_id: session.id,
          flow_definition_id: definition.id,
          flow_name: definition.name,
          version_id: session.version_id,
          meta_flow_id: definition.meta_flow_id,
          channel_id: channel.id,
          contact_id: session.contact_id,
          conversation_id: session.conversation_id,
          message_id: session.message_id,
          sender_type: session.sender_type,
          answers,
          writeback: withMedia,
          completed_at: at
        }
      })
    ])
    return "continue" as const
  })

  return {
    name: "flow answers",
    // Only a flow's answer: every other message goes with its batch.
    wants: (event) => readFlowReply(event.message) !== null,
    prepare: (input) =>
      Effect.gen(function*() {
        const reply = readFlowReply(input.event.message)
        if (reply === null) return { run: Effect.succeed("continue" as const), discard: Effect.void }
        // An answer to a session already completed changes nothing: its files are not fetched.
        const tokenHash = yield* sha256Hex(reply.flowToken)
        const known = yield* store.findSessionByTokenHash(tokenHash)
        const done = Option.isSome(known) && decideAnswer(known.value.status).kind === "ignore"
        const files = done ? [] : yield* fetchMedia(input, reply.answers)
        return {
          run: complete(input, reply.flowToken, tokenHash, reply.answers, files),
          // Files of an answer that did not commit (a duplicate, a failure) are removed.
          discard: Effect.forEach(files, (f) => (f.prepared === null ? Effect.void : attachments.discard(f.prepared)), { discard: true })
        }
      })
  }
}
