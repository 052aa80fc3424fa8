import { Context, Effect, Option, type Semaphore } from "effect"
import type { AttachmentService, PreparedAttachment } from "../attachments/AttachmentService.ts"
import type { ContactService } from "../contacts/ContactService.ts"
import type { ConversationService } from "../conversations/ConversationService.ts"
import type { MessageService } from "../messages/MessageService.ts"
import { RetryLater } from "../kernel/ChatappEvents.ts"
import type { ReceivedEmailInput } from "../kernel/EmailEvents.ts"
import { newId } from "../kernel/Id.ts"
import { now } from "../kernel/Timestamp.ts"
import type { ConversationRecord } from "../ports/ConversationStore.ts"
import type { EmailIntegrationRecord, EmailMessageRecord, EmailStore } from "../ports/EmailStore.ts"
import { storeEmailFiles } from "./EmailWire.ts"
import { RawEmailUnavailable, readReceivedEmailFrom, type StreamedEmail, threadCandidates } from "./ReceivedEmail.ts"

/** How received mail is read. */
export interface ReceivedEmailSettings {
  /**
   * Received emails read and stored at once in this process; the others wait their turn (none is
   * refused). Each holds the email's headers and bodies and one of its files at a time.
   */
  readonly parseConcurrency: number
}

/** The settings of received mail; by default two emails at once. */
export const ReceivedEmailSettings = Context.Reference<ReceivedEmailSettings>("omnichannel-core/email/ReceivedEmailSettings", {
  defaultValue: () => ({ parseConcurrency: 2 })
})

/** What receiving needs of the other areas and the ports. */
export interface ReceivingDeps {
  readonly store: EmailStore["Service"]
  readonly attachments: AttachmentService["Service"]
  readonly messages: MessageService["Service"]
  readonly contacts: ContactService["Service"]
  readonly conversations: ConversationService["Service"]
  /** Holds one permit per email being read and stored (`ReceivedEmailSettings.parseConcurrency`). */
  readonly parsing: Semaphore.Semaphore
}

/** A received email as read from its stream, its files' bytes not yet read. */
type ReadEmail = StreamedEmail["email"]

/**
 * The handler of received mail: reads the email from its stored bytes as a stream (at most
 * `parseConcurrency` at once), writes its files to the blob store one at a time, then in one
 * transaction with its de-duplication key finds or makes the sender's contact, threads it (the
 * open conversation holding the email it answers, by `In-Reply-To`, then `References`; else a new
 * thread) and stores the conversation message (`message.received`), the email and its files.
 */
export const makeReceiveEmail = (deps: ReceivingDeps) => {
  const { store, attachments, messages, contacts, conversations, parsing } = deps

  // The thread an email continues: the first candidate id found among the mailbox's emails whose
  // conversation is still open (a closed conversation takes no new messages).
  const threadOf = Effect.fnUntraced(function*(integration: EmailIntegrationRecord, email: ReadEmail) {
    const candidates = threadCandidates(email)
    if (candidates.length === 0) return Option.none<ConversationRecord>()
    const found = yield* store.findByHeaders(integration.tenant_id, integration.id, candidates)
    for (const id of candidates) {
      for (const match of found.filter((e) => e.message_id_header === id)) {
        const conversation = yield* conversations.get(integration.tenant_id, match.conversation_id).pipe(
          Effect.map(Option.some),
          Effect.catchTag("NotFound", () => Effect.succeed(Option.none<ConversationRecord>()))
        )
        if (Option.isSome(conversation) && conversation.value.status === "open") return conversation
      }
    }
    return Option.none<ConversationRecord>()
  })

  // Each file is written as its bytes are read, and its bytes are dropped before the next is read.
  // A failure removes the files written so far.
  const prepareFiles = (integration: EmailIntegrationRecord, readFiles: StreamedEmail["readFiles"]) =>
    Effect.gen(function*() {
      const prepared: Array<PreparedAttachment> = []
      yield* readFiles((file) =>
        attachments.prepareInbound({
          tenantId: integration.tenant_id,
          bytes: file.content,
          declaredType: file.contentType,
          filename: file.filename,
          externalId: null,
          origin: file.inline ? "email_inline" : "email",
          direction: "inbound"
        }).pipe(
          Effect.map((file) => void prepared.push(file)),
          Effect.mapError((error) => new RetryLater({ message: `a file could not be stored: ${error.message}` }))
        )
      ).pipe(
        Effect.mapError((error) => error instanceof RawEmailUnavailable ? new RetryLater({ message: error.message }) : error),
        Effect.tapError(() => Effect.forEach(prepared, attachments.discard, { discard: true }))
      )
      return prepared
    })

  const store_ = Effect.fnUntraced(function*(
    integration: EmailIntegrationRecord,
    email: ReadEmail,
    prepared: ReadonlyArray<PreparedAttachment>,
    payloadId: string
  ) {
    const tenantId = integration.tenant_id
    const sender = email.replyTo[0] ?? email.from!
    const { contact } = yield* contacts.findOrCreateByEmail(tenantId, email.from!.address, email.from!.name)
    const thread = yield* threadOf(integration, email)
    const conversation = Option.isSome(thread)
      ? thread.value
      : yield* conversations.startThread({
        tenantId,
        channelId: integration.id,
        contactId: contact.id,
        subject: email.subject
      })
    const emailId = yield* newId
    const { message, files } = yield* messages.recordReceived({
      conversation,
      messageType: "email",
      text: email.text,
      content: {
        subject: email.subject,
        email_message_id: emailId,
        from: email.from,
        ...(sender === email.from ? {} : { reply_to: sender })
      },
      files: prepared
    })
    const at = yield* now
    const record: EmailMessageRecord = {
      id: emailId,
      tenant_id: tenantId,
      integration_id: integration.id,
      conversation_id: conversation.id,
      message_id: message.id,
      direction: "inbound",
      status: "received",
      message_id_header: email.messageId ?? `${payloadId}@no-message-id.invalid`,
      in_reply_to: email.inReplyTo,
      references: email.references,
      subject: email.subject,
      from: email.from,
      to: email.to,
      cc: email.cc,
      reply_to: email.replyTo,
      text_body: email.text,
      html_body: email.html,
      headers: email.headers,
      error: null,
      sent_at: email.date,
      created_at: at,
      updated_at: null
    }
    yield* store.insertMessage(record)
    yield* storeEmailFiles(store, { tenantId, emailId, at }, files.map((record, position) => ({
      record,
      inline: email.files[position]!.inline,
      contentId: email.files[position]!.contentId
    })))
  })

  const receive = Effect.fnUntraced(function*(input: ReceivedEmailInput, integration: EmailIntegrationRecord) {
    const open = Effect.mapError(input.openRaw, (error) => new RawEmailUnavailable({ message: error.message }))
    const parsed = yield* Effect.result(readReceivedEmailFrom(open))
    if (parsed._tag === "Failure") {
      if (parsed.failure instanceof RawEmailUnavailable) return yield* new RetryLater({ message: parsed.failure.message })
      return parsed.failure.message
    }
    const { email, readFiles, readWhole } = parsed.success
    if (readWhole !== null) yield* Effect.logInfo(`received email ${input.payloadId} read whole: ${readWhole}`)
    if (email.from === null) return "the email names no sender (From): not stored"
    // A redelivery (the same Message-ID to the same mailbox) has the effect of one.
    const key = `${integration.id}:${email.messageId ?? `payload:${input.payloadId}`}`
    if (yield* input.wasHandled(key)) return "a copy of an email already received: skipped"
    const prepared = yield* prepareFiles(integration, readFiles)
    let stored = false
    const exit = yield* Effect.exit(input.once(key, Effect.gen(function*() {
      yield* store_(integration, email, prepared, input.payloadId)
      stored = true
    })))
    if (exit._tag === "Failure" || !stored) {
      yield* Effect.forEach(prepared, attachments.discard, { discard: true })
    }
    if (exit._tag === "Failure") return yield* Effect.failCause(exit.cause)
    return stored ? null : "a copy of an email already received: skipped"
  })

  return Effect.fn("EmailService.received")(function*(input: ReceivedEmailInput) {
    const integration = yield* store.findIntegrationForInbound(input.integrationId)
    if (Option.isNone(integration)) return `email integration ${input.integrationId}: not found, not stored`
    return yield* parsing.withPermit(receive(input, integration.value))
  })
}
