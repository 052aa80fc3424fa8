import { Effect, Option } from "effect"
import type { AttachmentService, PreparedAttachment } from "../attachments/AttachmentService.ts"
import type { ContactService } from "../contacts/ContactService.ts"
import { type ConversationService, openKey } from "../conversations/ConversationService.ts"
import { chatappCredentialsOf } from "../kernel/ChatappChannel.ts"
import {
  type ChatappMessageHandler,
  type ChatappMessageInput,
  type ChatappStatusHandler,
  type ChatappStatusInput,
  RetryLater,
  settleStatuses
} from "../kernel/ChatappEvents.ts"
import { groupBy } from "../kernel/Grouping.ts"
import type { EventEnvelope } from "../kernel/EventEnvelope.ts"
import { newId, newIdNow } from "../kernel/Id.ts"
import { messageIdOfReference } from "../kernel/SendReference.ts"
import type { StorageError } from "../kernel/StorageError.ts"
import { now } from "../kernel/Timestamp.ts"
import type { AttachmentRecord } from "../ports/AttachmentStore.ts"
import type { ChatPlatform } from "../ports/ChatPlatform.ts"
import { type MessageRecord, type MessageStore, statusColumnsOf } from "../ports/MessageStore.ts"
import type { OutboxStore } from "../ports/OutboxStore.ts"
import { chatappContentOf, type MediaReference, type MessageContent } from "./ChatappContent.ts"
import { type Message, type MessageAttachmentWire, toMessage } from "./Message.ts"
import { applyStatus } from "./MessageStatusMachine.ts"

/** Largest media file fetched from the operator: its own cap, on documents. */
export const MAX_MEDIA_BYTES = 100 * 1024 * 1024

/** A contact's message as stored: `received`, the operator's time in `content.sent_at`, a file that could not be had in `content.media_error`. */
const receivedRecord = (
  { channel, event }: ChatappMessageInput,
  content: MessageContent,
  ids: { readonly id: string; readonly conversationId: string; readonly contactId: string; readonly at: string },
  mediaError: string | null
): MessageRecord => ({
  id: ids.id,
  tenant_id: channel.tenant_id,
  conversation_id: ids.conversationId,
  channel_id: channel.id,
  contact_id: ids.contactId,
  direction: "inbound",
  message_type: content.messageType,
  text: content.text,
  content: {
    ...content.content,
    ...(event.sentAt === null ? {} : { sent_at: event.sentAt }),
    ...(mediaError === null ? {} : { media_error: mediaError })
  },
  status: "received",
  external_id: event.externalId,
  error: null,
  created_at: ids.at,
  updated_at: null,
  sent_at: null,
  delivered_at: null,
  read_at: null,
  failed_at: null
})

/** What the chat-app handlers need. */
export interface ChatappInboundDeps {
  readonly messages: MessageStore["Service"]
  readonly outbox: OutboxStore["Service"]
  readonly contacts: ContactService["Service"]
  readonly conversations: ConversationService["Service"]
  readonly attachments: AttachmentService["Service"]
  readonly platform: ChatPlatform["Service"]
  /** The wire forms of a message's files, their summary fields filled. */
  readonly attachmentWires: (files: ReadonlyArray<AttachmentRecord>) => Effect.Effect<ReadonlyArray<MessageAttachmentWire>, StorageError>
  readonly messageEvent: (type: "message.received" | "message.sent", message: Message) => Effect.Effect<EventEnvelope>
}

/**
 * The inbound chat-app handlers of the messages area: the one that stores a contact's message (with
 * its media) in the conversation, and the one that moves outbound messages by reported statuses
 * (a status that arrives before its message is known is kept, and applied when the operator's answer
 * is written: `OutboundLifecycle`).
 */
export const makeChatappInbound = (deps: ChatappInboundDeps) => {
  const { messages, outbox, contacts, conversations, attachments, platform, messageEvent } = deps

  // The media of a message, fetched and written to the blob store before the transaction.
  // A file that cannot be had now is tried again with the payload, unless this is its last try:
  // then the message is stored without it, noted.
  const retryOrGiveUp = (input: ChatappMessageInput, retryable: boolean, mediaId: string, problem: string) =>
    retryable && !input.lastAttempt
      ? Effect.fail(new RetryLater({ message: `media ${mediaId}: ${problem}` }))
      : Effect.succeed({ prepared: null, error: `media ${mediaId}: ${problem}` })

  const fetchMedia = Effect.fnUntraced(function*(input: ChatappMessageInput, media: MediaReference) {
    const credentials = chatappCredentialsOf(input.channel)
    if (Option.isNone(credentials)) {
      return { prepared: null, error: "the channel has no access token to fetch media with" }
    }
    const fetched = yield* Effect.result(platform.fetchMedia(credentials.value, media.id, { maxBytes: MAX_MEDIA_BYTES }))
    if (fetched._tag === "Failure") {
      return yield* retryOrGiveUp(input, fetched.failure.retryable, media.id, `could not be fetched: ${fetched.failure.message}`)
    }
    const prepared = yield* Effect.result(attachments.prepareInbound({
      tenantId: input.channel.tenant_id,
      bytes: fetched.success.bytes,
      declaredType: fetched.success.mimeType || media.mimeType,
      filename: media.filename,
      externalId: media.id,
      origin: "chatapp_media",
      direction: "inbound"
    }))
    if (prepared._tag === "Failure") {
      return yield* retryOrGiveUp(input, true, media.id, `could not be stored: ${prepared.failure.message}`)
    }
    return { prepared: prepared.success, error: null }
  })

  const phoneOf = (event: ChatappMessageInput["event"]) => `+${event.from.replace(/\D/g, "")}`

  const storeInbound = Effect.fnUntraced(function*(
    input: ChatappMessageInput,
    content: MessageContent,
    media: PreparedAttachment | null,
    mediaError: string | null
  ) {
    const { channel, event } = input
    const tenantId = channel.tenant_id
    const { contact } = yield* contacts.findOrCreateByPhone(tenantId, phoneOf(event), event.profileName)
    const { conversation } = yield* conversations.openFor({ tenantId, channelId: channel.id, contactId: contact.id })
    const at = yield* now
    const message = receivedRecord(input, content, { id: yield* newId, conversationId: conversation.id, contactId: contact.id, at }, mediaError)
    yield* messages.insert(message)
    const files = media === null
      ? []
      : [yield* attachments.record(media, { messageId: message.id, conversationId: conversation.id })]
    yield* conversations.noteMessage(conversation, { at, inbound: true })
    const wire = toMessage(message, yield* deps.attachmentWires(files))
    yield* outbox.append([yield* messageEvent("message.received", wire)])
    return "continue" as const
  })

  // Messages without files, many at once: contacts, conversations, messages, their events and times
  // each in one statement per tenant. The conversations' times go last: that write holds rows every
  // batch of the same contacts writes too, until the transaction ends.
  const recordMany = Effect.fnUntraced(function*(inputs: ReadonlyArray<ChatappMessageInput>) {
    const at = yield* now
    const events: Array<EventEnvelope> = []
    const notes: Array<readonly [string, ReadonlyArray<{ readonly conversationId: string; readonly at: string; readonly inbound: boolean }>]> = []
    for (const [tenantId, group] of groupBy(inputs, (input) => input.channel.tenant_id)) {
      const people = yield* contacts.findOrCreateByPhones(
        tenantId,
        group.map(({ event }) => ({ phone: phoneOf(event), name: event.profileName }))
      )
      const contactOf = (input: ChatappMessageInput) => people.get(phoneOf(input.event))!
      const open = yield* conversations.openForMany(
        tenantId,
        group.map((input) => ({ channelId: input.channel.id, contactId: contactOf(input).id }))
      )
      const records = group.map((input): MessageRecord => {
        const contact = contactOf(input)
        return receivedRecord(input, chatappContentOf(input.event.message), {
          id: newIdNow(),
          conversationId: open.get(openKey(input.channel.id, contact.id))!.id,
          contactId: contact.id,
          at
        }, null)
      })
      yield* messages.insertMany(records)
      notes.push([tenantId, records.map((m) => ({ conversationId: m.conversation_id, at, inbound: true }))])
      for (const record of records) events.push(yield* messageEvent("message.received", toMessage(record, [])))
    }
    yield* outbox.append(events)
    for (const [tenantId, tenantNotes] of notes) yield* conversations.noteMessages(tenantId, tenantNotes)
  })

  const storeHandler: ChatappMessageHandler = {
    name: "conversation and message store",
    records: true,
    recordMany,
    prepare: (input) =>
      Effect.gen(function*() {
        const content = chatappContentOf(input.event.message)
        const media = content.media === null ? { prepared: null, error: null } : yield* fetchMedia(input, content.media)
        return {
          run: storeInbound(input, content, media.prepared, media.error),
          discard: media.prepared === null ? Effect.void : attachments.discard(media.prepared)
        }
      })
  }

  // Moves each settled message by its statuses in order: one read and one compare-and-set write per
  // channel, and for a message another writer moved meanwhile, a new read. A status whose message is
  // not known yet or still pending (its send's answer on its way, or lost) is kept, for the message's
  // settlement to apply (`OutboundLifecycle`); a settled message's row is its statuses' only record.
  const handleStatuses = Effect.fnUntraced(function*(inputs: ReadonlyArray<ChatappStatusInput>) {
    const at = yield* now
    yield* settleStatuses(inputs, "message statuses", (channel, unsettled) =>
      Effect.gen(function*() {
        const externalIds = [...new Set(unsettled.map(({ event }) => event.externalId))]
        // Held until the transaction ends: another worker moving some of the same messages waits for this
        // one (or this for it, reading what it wrote), so a move never finds its message moved meanwhile.
        const hold = { hold: true } as const
        let read = yield* messages.findByExternalIds(channel.tenant_id, channel.id, externalIds, hold)
        // A status of a send whose answer has not been written (still on its way, or lost with the
        // process that sent it) names its message by the send's reference: the message takes the
        // operator's id and stays pending for its settlement, which applies the statuses kept below.
        const known = new Set(read.map((message) => message.external_id))
        const named = new Map<string, string>()
        for (const { event } of unsettled) {
          const id = known.has(event.externalId) ? null : messageIdOfReference(event.callbackData)
          if (id !== null) named.set(id, event.externalId)
        }
        // Read again after naming: a message named here, and one whose settlement this waited for (its
        // answer was being written, so it was not pending any more when its lock came), are known now.
        if (named.size > 0) {
          yield* messages.attachExternalIds(channel.tenant_id, channel.id, [...named].map(([id, external_id]) => ({ id, external_id })))
          read = yield* messages.findByExternalIds(channel.tenant_id, channel.id, externalIds, hold)
        }
        // A message still pending is its settlement's to move, by the statuses kept here for its id: it is
        // held until this transaction ends, so a settlement under way ended before its read (and it was
        // read settled) or waits, and then reads the statuses kept here.
        const settled = read.filter((message) => message.status !== "pending")
        const settledIds = new Set(settled.map((message) => message.external_id))
        const kept = unsettled.filter(({ event }) => !settledIds.has(event.externalId))
        if (kept.length > 0) {
          yield* messages.recordStatuses(kept.map(({ event }) => ({
            tenant_id: channel.tenant_id,
            channel_id: channel.id,
            external_id: event.externalId,
            status: event.status,
            occurred_at: event.occurredAt ?? at,
            error: event.error,
            received_at: at
          })))
        }
        const moves = new Map(settled.map((message) => [message.external_id!, { read: message, state: message as MessageRecord, changed: false }]))
        for (const { event } of unsettled) {
          const move = moves.get(event.externalId)
          if (move === undefined) continue
          const next = applyStatus(move.state, { status: event.status, at: event.occurredAt ?? at, error: event.error })
          if (next.changed) moves.set(event.externalId, { ...move, state: { ...move.state, ...next.state, updated_at: at }, changed: true })
        }
        const changed = [...moves.values()].filter((move) => move.changed)
        const moved = yield* messages.moveStatuses(
          channel.tenant_id,
          changed.map(({ read, state }) => ({
            id: read.id,
            expected: { status: read.status, updated_at: read.updated_at },
            to: statusColumnsOf(state)
          }))
        )
        return new Set(changed.filter(({ read }) => !moved.has(read.id)).map(({ read }) => read.external_id))
      }))
  })

  const statusHandler: ChatappStatusHandler = {
    name: "message status",
    handle: (input) => Effect.as(handleStatuses([input]), "continue" as const),
    handleMany: handleStatuses,
    // Forward-only moves, and statuses kept apart once per id and status.
    repeatable: () => true
  }

  return { storeHandler, statusHandler }
}
