import { Context, Effect, Layer, Option, Semaphore } from "effect"
import { AttachmentService } from "../attachments/AttachmentService.ts"
import { ContactService } from "../contacts/ContactService.ts"
import { ConversationService } from "../conversations/ConversationService.ts"
import { MessageService } from "../messages/MessageService.ts"
import { BadRequest, Conflict, type FailedWithBody, InvalidRequest, NotFound } from "../kernel/ApiError.ts"
import type { RetryLater } from "../kernel/ChatappEvents.ts"
import { normalizeEmail } from "../kernel/Email.ts"
import type { ReceivedEmailInput } from "../kernel/EmailEvents.ts"
import { isUuid, newId } from "../kernel/Id.ts"
import { PublicUrl, publicUrlOf } from "../kernel/PublicUrl.ts"
import { randomToken, sha256Hex, verifySecret } from "../kernel/Secret.ts"
import type { StorageError } from "../kernel/StorageError.ts"
import { now } from "../kernel/Timestamp.ts"
import type { ConversationRecord } from "../ports/ConversationStore.ts"
import { type EmailIntegrationRecord, EmailStore } from "../ports/EmailStore.ts"
import { Mailer } from "../ports/Mailer.ts"
import { Transactor } from "../ports/Transactor.ts"
import {
  type ComposeRequest,
  type CreatedEmailIntegration,
  type CreateEmailIntegrationRequest,
  type EmailIntegration,
  type EmailMessage,
  type EmailThread,
  type InlineImageUpload,
  type ReplyRequest,
  toEmailIntegration
} from "./Email.ts"
import { makeReceiveEmail, ReceivedEmailSettings } from "./EmailReceiving.ts"
import { contactRecipient, latestEmail, makeSendEmail } from "./EmailSending.ts"
import { toEmailMessages } from "./EmailWire.ts"
import { SummaryService } from "../summaries/SummaryService.ts"
import { replyReferences, replySubject } from "./OutgoingEmail.ts"

/** Where received mail for an integration is posted, below the public URL. */
export const EMAIL_WEBHOOK_PREFIX = "/webhooks/email/"

const emailNotFound = (id: string) => new NotFound({ message: `Email message ${id} not found` })
const integrationNotFound = (id: string) => new NotFound({ message: `Email integration ${id} not found` })

/** An inline image must be an image: a mail client cannot show anything else inline. */
const refuseNonImage = (contentType: string) =>
  contentType.startsWith("image/") ? undefined : `Inline images must be images; this file is '${contentType}'`

/** A send on an email conversation through `POST /messages`: plain text, files as regular attachments. */
export interface ConversationSend {
  readonly subject?: string | undefined
  readonly text?: string | undefined
  readonly attachments?: ReadonlyArray<string> | undefined
}

type SendError = NotFound | InvalidRequest | FailedWithBody | StorageError

/**
 * Email: mailboxes of a tenant (integrations), received mail threaded into conversations, the
 * threads read back, and mail sent from a conversation (reply, compose-email, `POST /messages`)
 * with files and inline images.
 */
export class EmailService extends Context.Service<EmailService, {
  /** Creates a mailbox; its inbound secret is in this answer only. */
  readonly createIntegration: (
    tenantId: string,
    request: CreateEmailIntegrationRequest
  ) => Effect.Effect<CreatedEmailIntegration, Conflict | StorageError>
  readonly listIntegrations: (tenantId: string) => Effect.Effect<ReadonlyArray<EmailIntegration>, StorageError>
  readonly getIntegration: (tenantId: string, id: string) => Effect.Effect<EmailIntegration, NotFound | StorageError>
  /** Whether `authorization` (`Bearer <inbound_secret>`) opens the inbound route of integration `id`. */
  readonly authenticateInbound: (id: string, authorization: string | null) => Effect.Effect<boolean, StorageError>
  /** The handler of received mail the inbound pipeline calls. */
  readonly received: (input: ReceivedEmailInput) => Effect.Effect<string | null, RetryLater | StorageError>
  /** Whether the conversation is an email thread (then `POST /messages` sends it as email). */
  readonly isEmailConversation: (conversation: ConversationRecord) => boolean
  readonly thread: (tenantId: string, conversationId: string) => Effect.Effect<EmailThread, NotFound | StorageError>
  readonly getEmail: (tenantId: string, id: string) => Effect.Effect<EmailMessage, NotFound | StorageError>
  readonly threadOfEmail: (tenantId: string, id: string) => Effect.Effect<EmailThread, NotFound | StorageError>
  readonly reply: (tenantId: string, emailId: string, request: ReplyRequest) => Effect.Effect<EmailMessage, SendError>
  readonly compose: (
    tenantId: string,
    conversationId: string,
    request: ComposeRequest
  ) => Effect.Effect<EmailMessage, SendError>
  /** `POST /messages` on an email conversation; resolves to the conversation message's id. */
  readonly sendInConversation: (
    conversation: ConversationRecord,
    request: ConversationSend
  ) => Effect.Effect<string, SendError>
  /**
   * `POST /email-integrations/inline-images/upload`: an image to embed as `cid:<content_id>`; a file
   * that is not an image is refused and nothing of it kept.
   */
  readonly uploadInlineImage: (
    tenantId: string,
    request: Request
  ) => Effect.Effect<InlineImageUpload, BadRequest | InvalidRequest | StorageError>
}>()("omnichannel-core/email/EmailService") {
  static readonly layer = Layer.effect(
    EmailService,
    Effect.gen(function*() {
      const store = yield* EmailStore
      const transactor = yield* Transactor
      const attachments = yield* AttachmentService
      const summaries = yield* SummaryService
      const messages = yield* MessageService
      const contacts = yield* ContactService
      const conversations = yield* ConversationService
      const mailer = yield* Mailer
      const publicUrl = yield* PublicUrl
      const deps = { store, transactor, attachments, messages, contacts, conversations, mailer }
      const send = makeSendEmail(deps)
      const parsing = yield* Semaphore.make((yield* ReceivedEmailSettings).parseConcurrency)
      const received = makeReceiveEmail({ ...deps, parsing })

      const wire = (record: EmailIntegrationRecord) =>
        toEmailIntegration(record, publicUrlOf(publicUrl, `${EMAIL_WEBHOOK_PREFIX}${record.id}`))

      const integrationOf = Effect.fnUntraced(function*(conversation: ConversationRecord) {
        const found = yield* store.getIntegration(conversation.tenant_id, conversation.channel_id)
        if (Option.isNone(found)) {
          return yield* new NotFound({ message: `Email integration ${conversation.channel_id} not found` })
        }
        return found.value
      })

      const emailConversation = Effect.fnUntraced(function*(tenantId: string, conversationId: string) {
        const conversation = yield* conversations.get(tenantId, conversationId)
        if (conversation.kind !== "email") {
          return yield* new NotFound({ message: `Conversation ${conversationId} is not an email thread` })
        }
        return conversation
      })

      const openForSending = (conversation: ConversationRecord, loc: ReadonlyArray<string>) =>
        conversation.status === "closed"
          ? InvalidRequest.single(loc, `Conversation ${conversation.id} is closed`, "conversation_closed")
          : Effect.void

      const threadWire = Effect.fnUntraced(function*(conversation: ConversationRecord) {
        const emails = yield* store.listByConversation(conversation.tenant_id, conversation.id)
        return {
          conversation_id: conversation.id,
          subject: conversation.subject,
          items: [...(yield* toEmailMessages(store, attachments, summaries, emails))]
        } satisfies EmailThread
      })

      const emailRecord = Effect.fnUntraced(function*(tenantId: string, id: string) {
        const found = yield* store.getMessage(tenantId, id)
        if (Option.isNone(found)) return yield* emailNotFound(id)
        return found.value
      })

      const sentWire = (tenantId: string, emailId: string) =>
        Effect.flatMap(emailRecord(tenantId, emailId), (record) =>
          Effect.map(toEmailMessages(store, attachments, summaries, [record]), (list) => list[0]!))

      return EmailService.of({
        createIntegration: Effect.fn("EmailService.createIntegration")(function*(tenantId, request) {
          const address = normalizeEmail(request.address)
          const secret = `omi_${yield* randomToken(40)}`
          const record: EmailIntegrationRecord = {
            id: yield* newId,
            tenant_id: tenantId,
            address,
            display_name: request.display_name?.trim() || null,
            inbound_secret_hash: yield* sha256Hex(secret),
            status: "active",
            created_at: yield* now,
            updated_at: null
          }
          yield* store.insertIntegration(record).pipe(
            Effect.catchTag("StorageError", (error): Effect.Effect<never, Conflict | StorageError> =>
              error.reason === "UniqueViolation"
                ? Effect.fail(new Conflict({ message: `The workspace already has an email integration for ${address}` }))
                : Effect.fail(error))
          )
          return { ...wire(record), inbound_secret: secret }
        }),
        listIntegrations: Effect.fn("EmailService.listIntegrations")(function*(tenantId) {
          return (yield* store.listIntegrations(tenantId)).map(wire)
        }),
        getIntegration: Effect.fn("EmailService.getIntegration")(function*(tenantId, id) {
          const found = yield* store.getIntegration(tenantId, id)
          if (Option.isNone(found)) return yield* integrationNotFound(id)
          return wire(found.value)
        }),
        authenticateInbound: Effect.fn("EmailService.authenticateInbound")(function*(id, authorization) {
          const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? "")
          if (match === null || !isUuid(id)) return false
          const found = yield* store.findIntegrationForInbound(id.toLowerCase())
          if (Option.isNone(found) || found.value.status !== "active") {
            // The same work as a real check, so timing does not tell which ids exist.
            yield* verifySecret(match[1]!, "0".repeat(64))
            return false
          }
          return yield* verifySecret(match[1]!, found.value.inbound_secret_hash)
        }),
        received,
        isEmailConversation: (conversation) => conversation.kind === "email",
        thread: Effect.fn("EmailService.thread")(function*(tenantId, conversationId) {
          return yield* threadWire(yield* emailConversation(tenantId, conversationId))
        }),
        getEmail: Effect.fn("EmailService.getEmail")(function*(tenantId, id) {
          return yield* sentWire(tenantId, id)
        }),
        threadOfEmail: Effect.fn("EmailService.threadOfEmail")(function*(tenantId, id) {
          const email = yield* emailRecord(tenantId, id)
          return yield* threadWire(yield* conversations.get(tenantId, email.conversation_id))
        }),
        reply: Effect.fn("EmailService.reply")(function*(tenantId, emailId, request) {
          const parent = yield* emailRecord(tenantId, emailId)
          const conversation = yield* conversations.get(tenantId, parent.conversation_id)
          yield* openForSending(conversation, ["path", "id"])
          const integration = yield* integrationOf(conversation)
          // A reply goes back to whoever wrote the email (its Reply-To first); replying to the
          // workspace's own email writes to its recipients again.
          const to = parent.direction === "inbound"
            ? (parent.reply_to.length > 0 ? parent.reply_to : parent.from === null ? [] : [parent.from])
            : parent.to
          if (to.length === 0) {
            return yield* InvalidRequest.single(["path", "id"], "The email has no sender to reply to", "no_recipient")
          }
          const sent = yield* send({
            integration,
            conversation,
            to,
            subject: replySubject(parent.subject),
            text: request.text_body,
            html: request.html_body ?? null,
            inReplyTo: parent.message_id_header,
            references: replyReferences(parent),
            attachmentIds: request.attachment_ids ?? [],
            inlineAllowed: true
          })
          return yield* sentWire(tenantId, sent.email.id)
        }),
        compose: Effect.fn("EmailService.compose")(function*(tenantId, conversationId, request) {
          const conversation = yield* emailConversation(tenantId, conversationId)
          yield* openForSending(conversation, ["path", "id"])
          const integration = yield* integrationOf(conversation)
          const to = yield* contactRecipient(contacts, conversation, ["path", "id"])
          const sent = yield* send({
            integration,
            conversation,
            to: [to],
            subject: request.subject,
            text: request.text_body,
            html: request.html_body ?? null,
            inReplyTo: null,
            references: [],
            attachmentIds: request.attachment_ids ?? [],
            inlineAllowed: true
          })
          return yield* sentWire(tenantId, sent.email.id)
        }),
        sendInConversation: Effect.fn("EmailService.sendInConversation")(function*(conversation, request) {
          yield* openForSending(conversation, ["body", "conversation_id"])
          const integration = yield* integrationOf(conversation)
          const last = yield* latestEmail(store, conversation)
          // The thread's subject: the latest email's, else the conversation's; a new one is given, or `Re:` it.
          const threadSubject = (Option.isSome(last) ? last.value.subject : conversation.subject)?.trim() || null
          const given = request.subject?.trim() || null
          if (given === null && threadSubject === null) {
            return yield* InvalidRequest.single(
              ["body", "subject"],
              "Field required: the conversation has no subject yet",
              "missing"
            )
          }
          const subject = given ?? (Option.isSome(last) ? replySubject(threadSubject) : threadSubject!)
          const text = request.text ?? ""
          const files = request.attachments ?? []
          if (text.trim() === "" && files.length === 0) {
            return yield* InvalidRequest.single(["body", "text"], "Field required", "missing")
          }
          const to = yield* contactRecipient(contacts, conversation, ["body", "conversation_id"])
          // In a thread with mail already, a new message answers the latest email, so mail clients thread it.
          const sent = yield* send({
            integration,
            conversation,
            to: [to],
            subject,
            text,
            html: null,
            inReplyTo: Option.isSome(last) ? last.value.message_id_header : null,
            references: Option.isSome(last) ? replyReferences(last.value) : [],
            attachmentIds: files,
            inlineAllowed: false
          })
          return sent.messageId
        }),
        uploadInlineImage: Effect.fn("EmailService.uploadInlineImage")(function*(tenantId, request) {
          const uploaded = yield* attachments.upload(tenantId, request, refuseNonImage)
          const contentId = `${(yield* newId).replaceAll("-", "")}@inline.omnichannel`
          yield* store.insertInlineImage({
            attachment_id: uploaded.id,
            tenant_id: tenantId,
            content_id: contentId,
            created_at: yield* now
          })
          return {
            attachment_id: uploaded.id,
            content_id: contentId,
            url: yield* attachments.linkTo(tenantId, uploaded.id)
          }
        })
      })
    })
  )
}
