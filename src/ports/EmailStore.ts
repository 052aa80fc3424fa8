import { Context, type Effect, type Option } from "effect"
import type { StorageError } from "./StorageError.ts"

/**
 * A mailbox of a tenant: mail posted to its inbound route (with its secret) lands in the tenant's
 * conversations, and mail the tenant sends goes out from its address. Its id is also the
 * `channel_id` of its conversations.
 */
export interface EmailIntegrationRecord {
  readonly id: string
  readonly tenant_id: string
  /** Lower-cased; unique in the tenant. */
  readonly address: string
  readonly display_name: string | null
  /** SHA-256 (hex) of the inbound secret, which is shown once. */
  readonly inbound_secret_hash: string
  readonly status: "active" | "disabled"
  readonly created_at: string
  readonly updated_at: string | null
}

/** An address of an email with its display name. */
export interface EmailAddressValue {
  readonly address: string
  readonly name: string | null
}

/** One header line as received (or as sent): name as written, value unfolded. */
export interface EmailHeader {
  readonly name: string
  readonly value: string
}

/** Where an email stands: received, or an outbound one stored before the mailer is asked (`pending`), then `sent` or `failed`. */
export type EmailMessageStatus = "received" | "pending" | "sent" | "failed"

/**
 * An email in a thread. Every email is also a message of its conversation (`message_id`), which
 * carries the events and the conversation's listing; this record keeps what is the email's own.
 */
export interface EmailMessageRecord {
  readonly id: string
  readonly tenant_id: string
  readonly integration_id: string
  readonly conversation_id: string
  /** The conversation message that stands for this email. */
  readonly message_id: string
  readonly direction: "inbound" | "outbound"
  readonly status: EmailMessageStatus
  /** The `Message-ID` header without angle brackets (a generated one when the email had none). */
  readonly message_id_header: string
  /** Without angle brackets. */
  readonly in_reply_to: string | null
  /** Without angle brackets, oldest first. */
  readonly references: ReadonlyArray<string>
  readonly subject: string | null
  readonly from: EmailAddressValue | null
  readonly to: ReadonlyArray<EmailAddressValue>
  readonly cc: ReadonlyArray<EmailAddressValue>
  readonly reply_to: ReadonlyArray<EmailAddressValue>
  readonly text_body: string | null
  readonly html_body: string | null
  /** Every header, in order (received mail: as received; sent mail: the ones the service set). */
  readonly headers: ReadonlyArray<EmailHeader>
  /** Why sending failed. */
  readonly error: string | null
  /** The email's `Date` header (received) or when it was handed to the mailer (sent). */
  readonly sent_at: string | null
  readonly created_at: string
  readonly updated_at: string | null
}

/**
 * A file of an email. Its bytes are an attachment record's (`attachment_id`), which also serves its
 * download; an inline image's record is never offered as the email's `attachment_id`.
 */
export interface EmailAttachmentRecord {
  readonly id: string
  readonly tenant_id: string
  readonly email_message_id: string
  readonly attachment_id: string
  readonly filename: string
  readonly content_type: string
  readonly file_size: number
  readonly is_inline: boolean
  /** Without angle brackets. */
  readonly content_id: string | null
  /** Order within the email, from 0. */
  readonly position: number
  readonly created_at: string
}

/** An uploaded image that may be embedded in an HTML body as `cid:<content_id>`. */
export interface InlineImageRecord {
  readonly attachment_id: string
  readonly tenant_id: string
  readonly content_id: string
  readonly created_at: string
}

/** Email integrations, email messages, their files and inline image uploads; every method but one is scoped by tenant id. */
export class EmailStore extends Context.Service<EmailStore, {
  /** Stores an integration; an address already in the tenant fails with `UniqueViolation`. */
  readonly insertIntegration: (integration: EmailIntegrationRecord) => Effect.Effect<void, StorageError>
  readonly getIntegration: (
    tenantId: string,
    id: string
  ) => Effect.Effect<Option.Option<EmailIntegrationRecord>, StorageError>
  /**
   * The integration `id` in whatever tenant: the inbound route knows only the id from its path (and
   * then checks the secret). The one cross-tenant read of this store.
   */
  readonly findIntegrationForInbound: (id: string) => Effect.Effect<Option.Option<EmailIntegrationRecord>, StorageError>
  /** The tenant's integrations, oldest first. */
  readonly listIntegrations: (tenantId: string) => Effect.Effect<ReadonlyArray<EmailIntegrationRecord>, StorageError>

  readonly insertMessage: (message: EmailMessageRecord) => Effect.Effect<void, StorageError>
  readonly getMessage: (tenantId: string, id: string) => Effect.Effect<Option.Option<EmailMessageRecord>, StorageError>
  /** Replaces the stored message `message.id` of `tenantId`; `false` when it does not exist there. */
  readonly updateMessage: (tenantId: string, message: EmailMessageRecord) => Effect.Effect<boolean, StorageError>
  /** The emails of a conversation, oldest first (by `created_at`, then insertion order). */
  readonly listByConversation: (
    tenantId: string,
    conversationId: string
  ) => Effect.Effect<ReadonlyArray<EmailMessageRecord>, StorageError>
  /** Emails of the integration whose `message_id_header` is one of `headers` (a reply's threading lookup). */
  readonly findByHeaders: (
    tenantId: string,
    integrationId: string,
    headers: ReadonlyArray<string>
  ) => Effect.Effect<ReadonlyArray<EmailMessageRecord>, StorageError>

  readonly insertAttachments: (attachments: ReadonlyArray<EmailAttachmentRecord>) => Effect.Effect<void, StorageError>
  /** The files of these emails, by email and then `position`. */
  readonly listAttachments: (
    tenantId: string,
    emailMessageIds: ReadonlyArray<string>
  ) => Effect.Effect<ReadonlyArray<EmailAttachmentRecord>, StorageError>
  readonly getAttachment: (
    tenantId: string,
    id: string
  ) => Effect.Effect<Option.Option<EmailAttachmentRecord>, StorageError>

  readonly insertInlineImage: (image: InlineImageRecord) => Effect.Effect<void, StorageError>
  /** The inline image uploads among these attachment ids. */
  readonly findInlineImages: (
    tenantId: string,
    attachmentIds: ReadonlyArray<string>
  ) => Effect.Effect<ReadonlyArray<InlineImageRecord>, StorageError>
}>()("omnichannel-core/ports/EmailStore") {}
