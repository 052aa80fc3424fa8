import { Effect, Option } from "effect"
import type { AttachmentService } from "../attachments/AttachmentService.ts"
import type { ContactService } from "../contacts/ContactService.ts"
import type { ConversationService } from "../conversations/ConversationService.ts"
import type { MessageService } from "../messages/MessageService.ts"
import { errorBody, FailedWithBody, InvalidRequest, type NotFound } from "../kernel/ApiError.ts"
import { newId } from "../kernel/Id.ts"
import type { StorageError } from "../kernel/StorageError.ts"
import { now } from "../kernel/Timestamp.ts"
import type { AttachmentRecord } from "../ports/AttachmentStore.ts"
import type { ConversationRecord } from "../ports/ConversationStore.ts"
import type {
  EmailAddressValue,
  EmailIntegrationRecord,
  EmailMessageRecord,
  EmailStore
} from "../ports/EmailStore.ts"
import type { Mailer } from "../ports/Mailer.ts"
import type { Transactor } from "../ports/Transactor.ts"
import { storeEmailFiles } from "./EmailWire.ts"
import {
  breaksHeader,
  MAX_EMAIL_ATTACHMENT_BYTES,
  megabytes,
  messageIdFor,
  placeFiles,
  totalSize
} from "./OutgoingEmail.ts"

/** What sending needs of the other areas and the ports. */
export interface SendingDeps {
  readonly store: EmailStore["Service"]
  readonly transactor: Transactor["Service"]
  readonly attachments: AttachmentService["Service"]
  readonly messages: MessageService["Service"]
  readonly contacts: ContactService["Service"]
  readonly conversations: ConversationService["Service"]
  readonly mailer: Mailer["Service"]
}

/** One email to send in a conversation, decided by a send path. */
export interface EmailToSend {
  readonly integration: EmailIntegrationRecord
  readonly conversation: ConversationRecord
  readonly to: ReadonlyArray<EmailAddressValue>
  readonly subject: string
  readonly text: string
  readonly html: string | null
  readonly inReplyTo: string | null
  readonly references: ReadonlyArray<string>
  readonly attachmentIds: ReadonlyArray<string>
  /** Whether inline images may be embedded (reply and compose-email; never `POST /messages`). */
  readonly inlineAllowed: boolean
}

/** What was sent: the email and the conversation message standing for it. */
export interface SentEmail {
  readonly email: EmailMessageRecord
  readonly messageId: string
}

// Header values from stored mail or contacts: a line break is never carried into a header.
const oneLine = (value: string) => value.replace(/[\r\n\0]+/g, " ").trim()
const safeAddress = (address: EmailAddressValue): EmailAddressValue => ({
  address: oneLine(address.address),
  name: address.name === null ? null : oneLine(address.name) || null
})

/**
 * Sends an email the way every send path does: the files are resolved in the tenant (404
 * `Attachment {id} not found`), their raw total checked (413 over 20 MB, nothing sent), the email
 * and its conversation message stored `pending`, the mailer asked, and both moved to `sent`
 * (`message.sent`) or `failed` (502 with what the mail server said).
 */
export const makeSendEmail = (deps: SendingDeps) => {
  const { store, transactor, attachments, messages, mailer } = deps

  const resolveFiles = Effect.fnUntraced(function*(tenantId: string, ids: ReadonlyArray<string>) {
    const unique = [...new Set(ids)]
    const records: Array<AttachmentRecord> = []
    for (const id of unique) records.push(yield* attachments.get(tenantId, id))
    return records
  })

  return Effect.fn("EmailService.send")(function*(input: EmailToSend) {
    const { integration, conversation } = input
    const tenantId = integration.tenant_id
    if (breaksHeader(input.subject)) {
      return yield* InvalidRequest.single(["body", "subject"], "Must not contain line breaks")
    }
    const files = yield* resolveFiles(tenantId, input.attachmentIds)
    const total = totalSize(files.map((file) => ({ fileSize: file.file_size })))
    if (total > MAX_EMAIL_ATTACHMENT_BYTES) {
      return yield* new FailedWithBody({
        status: 413,
        body: errorBody(
          "email_too_large",
          `Email attachments total ${megabytes(total)}; at most ${
            megabytes(MAX_EMAIL_ATTACHMENT_BYTES)
          } raw per email across all files and inline images. Nothing was sent.`
        )
      })
    }
    const inlineUploads = input.inlineAllowed && input.html !== null
      ? yield* store.findInlineImages(tenantId, files.map((file) => file.id))
      : []
    const contentIds = new Map(inlineUploads.map((image) => [image.attachment_id, image.content_id]))
    const placement = placeFiles(
      files.map((file) => ({ attachmentId: file.id, fileSize: file.file_size, contentId: contentIds.get(file.id) ?? null })),
      input.inlineAllowed ? input.html : null
    )
    const contents = yield* Effect.forEach(files, (file) => attachments.bytesOf(file)).pipe(
      Effect.mapError((error) =>
        new FailedWithBody({
          status: 503,
          body: errorBody("file_unreadable", `A file could not be read (${error.message}); nothing was sent. Try again.`)
        })
      )
    )

    const emailId = yield* newId
    const messageIdHeader = messageIdFor(emailId, integration.address)
    const from: EmailAddressValue = { address: integration.address, name: integration.display_name }
    const to = input.to.map(safeAddress)
    const at = yield* now
    const pending = yield* transactor.withTransaction(Effect.gen(function*() {
      const message = yield* messages.recordPending({
        conversation,
        messageType: "email",
        text: input.text,
        content: { subject: input.subject, email_message_id: emailId },
        attachmentIds: files.map((file) => file.id)
      })
      const email: EmailMessageRecord = {
        id: emailId,
        tenant_id: tenantId,
        integration_id: integration.id,
        conversation_id: conversation.id,
        message_id: message.id,
        direction: "outbound",
        status: "pending",
        message_id_header: messageIdHeader,
        in_reply_to: input.inReplyTo,
        references: input.references,
        subject: input.subject,
        from,
        to,
        cc: [],
        reply_to: [],
        text_body: input.text,
        html_body: input.html,
        headers: [
          { name: "Message-ID", value: `<${messageIdHeader}>` },
          ...(input.inReplyTo === null ? [] : [{ name: "In-Reply-To", value: `<${input.inReplyTo}>` }]),
          ...(input.references.length === 0 ? [] : [{ name: "References", value: input.references.map((r) => `<${r}>`).join(" ") }])
        ],
        error: null,
        sent_at: null,
        created_at: at,
        updated_at: null
      }
      yield* store.insertMessage(email)
      yield* storeEmailFiles(store, { tenantId, emailId, at }, files.map((record, position) => ({
        record,
        inline: placement[position]!.inline,
        contentId: placement[position]!.contentId
      })))
      return { message, email }
    }))

    const sent = yield* Effect.result(mailer.send({
      from,
      to,
      cc: [],
      subject: input.subject,
      messageId: messageIdHeader,
      inReplyTo: input.inReplyTo,
      references: input.references,
      text: input.text,
      html: input.html,
      files: files.map((file, i) => ({
        filename: oneLine(file.filename),
        contentType: file.content_type,
        content: contents[i]!,
        contentId: placement[i]!.contentId
      })),
      date: at
    }))
    if (sent._tag === "Failure") {
      const reason = sent.failure.message
      yield* messages.markFailed(pending.message, { code: null, title: "Email not sent", message: reason, details: null })
      const updatedAt = yield* now
      yield* store.updateMessage(tenantId, { ...pending.email, status: "failed", error: reason, updated_at: updatedAt })
      return yield* new FailedWithBody({
        status: sent.failure.reason === "Unavailable" ? 503 : 502,
        body: errorBody("email_not_sent", `The email could not be sent: ${reason}`, {
          message_id: pending.message.id,
          email_message_id: emailId
        })
      })
    }
    return yield* transactor.withTransaction(Effect.gen(function*() {
      const sentAt = yield* now
      const email: EmailMessageRecord = { ...pending.email, status: "sent", sent_at: sentAt, updated_at: sentAt }
      yield* store.updateMessage(tenantId, email)
      yield* messages.markSent(pending.message, messageIdHeader)
      return { email, messageId: pending.message.id } satisfies SentEmail
    }))
  }) as (
    input: EmailToSend
  ) => Effect.Effect<SentEmail, NotFound | InvalidRequest | FailedWithBody | StorageError>
}

/** The contact's address as a recipient, or a 422 naming where the request pointed. */
export const contactRecipient = (
  contacts: ContactService["Service"],
  conversation: ConversationRecord,
  loc: ReadonlyArray<string>
) =>
  Effect.gen(function*() {
    const contact = yield* contacts.get(conversation.tenant_id, conversation.contact_id)
    if (contact.email === null) {
      return yield* InvalidRequest.single(loc, "The conversation's contact has no email address", "contact_unreachable")
    }
    return { address: contact.email, name: contact.name } satisfies EmailAddressValue
  })

/** The latest email of a conversation, if any (what a new message in it replies to). */
export const latestEmail = (store: EmailStore["Service"], conversation: ConversationRecord) =>
  Effect.map(store.listByConversation(conversation.tenant_id, conversation.id), (emails) =>
    Option.fromNullishOr(emails.at(-1)))
