import { Schema } from "effect"
import { EMAIL_PATTERN } from "../kernel/Email.ts"
import { AttachmentIdString, UuidId } from "../kernel/Id.ts"
import type { EmailIntegrationRecord } from "../ports/EmailStore.ts"
import { Summary } from "../summaries/SummaryService.ts"
import { MAX_SUBJECT_LENGTH } from "./OutgoingEmail.ts"

const NoLineBreaks = (max: number) =>
  Schema.String.check(
    Schema.isMaxLength(max),
    Schema.isPattern(/^[^\r\n\0]*$/, { message: "Must not contain line breaks" })
  )

/** An email integration (a mailbox of the tenant) as the API returns it. */
export const EmailIntegration = Schema.Struct({
  id: UuidId,
  tenant_id: UuidId,
  address: Schema.String,
  display_name: Schema.NullOr(Schema.String),
  status: Schema.Literals(["active", "disabled"]),
  /** Where received mail is posted: raw RFC 5322, `Authorization: Bearer <inbound_secret>`. */
  inbound_url: Schema.String,
  created_at: Schema.String,
  updated_at: Schema.NullOr(Schema.String)
})
/** An email integration as the API returns it. */
export type EmailIntegration = typeof EmailIntegration.Type
export declare namespace EmailIntegration {}

/** An integration just created: with its inbound secret, shown this once. */
export const CreatedEmailIntegration = Schema.Struct({
  ...EmailIntegration.fields,
  inbound_secret: Schema.String
})
/** An integration just created. */
export type CreatedEmailIntegration = typeof CreatedEmailIntegration.Type

/** Response of `GET /email-integrations`. */
export const EmailIntegrationList = Schema.Struct({ items: Schema.Array(EmailIntegration) })

/** Body of `POST /email-integrations`. */
export const CreateEmailIntegrationRequest = Schema.Struct({
  address: Schema.String.check(Schema.isMaxLength(254), Schema.isPattern(EMAIL_PATTERN, { message: "Must be an email address" })),
  display_name: Schema.optionalKey(NoLineBreaks(200))
})
/** Body of `POST /email-integrations`. */
export type CreateEmailIntegrationRequest = typeof CreateEmailIntegrationRequest.Type
export declare namespace CreateEmailIntegrationRequest {}

/** An address of an email with its display name. */
export const EmailAddress = Schema.Struct({ address: Schema.String, name: Schema.NullOr(Schema.String) })

/**
 * The spec's Email attachment: its own `id` (downloads through `url`), and `attachment_id`, the
 * attachment the summary endpoints know, null for inline images.
 */
export const EmailAttachment = Schema.Struct({
  id: UuidId,
  attachment_id: Schema.NullOr(UuidId),
  filename: Schema.String,
  content_type: Schema.String,
  file_size: Schema.Int,
  is_inline: Schema.Boolean,
  content_id: Schema.NullOr(Schema.String),
  /** A signed download link that expires. */
  url: Schema.String,
  ai_summary: Schema.NullOr(Summary),
  ai_summary_available: Schema.Boolean,
  ai_summary_credits: Schema.NullOr(Schema.Int)
})
/** The spec's Email attachment. */
export type EmailAttachment = typeof EmailAttachment.Type
export declare namespace EmailAttachment {}

/** An email of a thread as the API returns it. */
export const EmailMessage = Schema.Struct({
  id: UuidId,
  conversation_id: UuidId,
  /** The conversation message standing for this email (`GET /messages/{id}`, events). */
  message_id: UuidId,
  email_integration_id: UuidId,
  direction: Schema.Literals(["inbound", "outbound"]),
  status: Schema.Literals(["received", "pending", "sent", "failed"]),
  subject: Schema.NullOr(Schema.String),
  from: Schema.NullOr(EmailAddress),
  to: Schema.Array(EmailAddress),
  cc: Schema.Array(EmailAddress),
  reply_to: Schema.Array(EmailAddress),
  /** The `Message-ID` header, without angle brackets. */
  message_id_header: Schema.String,
  in_reply_to: Schema.NullOr(Schema.String),
  references: Schema.Array(Schema.String),
  text_body: Schema.NullOr(Schema.String),
  html_body: Schema.NullOr(Schema.String),
  attachments: Schema.Array(EmailAttachment),
  error: Schema.NullOr(Schema.String),
  sent_at: Schema.NullOr(Schema.String),
  created_at: Schema.String
})
/** An email of a thread as the API returns it. */
export type EmailMessage = typeof EmailMessage.Type
export declare namespace EmailMessage {}

/** An email thread: a conversation's emails, oldest first. */
export const EmailThread = Schema.Struct({
  conversation_id: UuidId,
  subject: Schema.NullOr(Schema.String),
  items: Schema.Array(EmailMessage)
})
/** An email thread. */
export type EmailThread = typeof EmailThread.Type
export declare namespace EmailThread {}

const Body = Schema.String.check(Schema.isMaxLength(1_000_000))

/** Body of `POST /email-integrations/email-messages/{id}/reply`. */
export const ReplyRequest = Schema.Struct({
  text_body: Body,
  html_body: Schema.optionalKey(Body),
  attachment_ids: Schema.optionalKey(Schema.Array(AttachmentIdString))
})
/** Body of a reply. */
export type ReplyRequest = typeof ReplyRequest.Type
export declare namespace ReplyRequest {}

/** Body of `POST /email-integrations/conversations/{id}/compose-email`. */
export const ComposeRequest = Schema.Struct({
  subject: NoLineBreaks(MAX_SUBJECT_LENGTH),
  text_body: Body,
  html_body: Schema.optionalKey(Body),
  attachment_ids: Schema.optionalKey(Schema.Array(AttachmentIdString))
})
/** Body of a new email in a conversation. */
export type ComposeRequest = typeof ComposeRequest.Type
export declare namespace ComposeRequest {}

/** The spec's Inline image upload response. */
export const InlineImageUpload = Schema.Struct({
  attachment_id: UuidId,
  /** Use exactly as returned, as `cid:<content_id>` in `html_body`. */
  content_id: Schema.String,
  url: Schema.String
})
/** The spec's Inline image upload response. */
export type InlineImageUpload = typeof InlineImageUpload.Type
export declare namespace InlineImageUpload {}

/** The wire form of an integration. */
export const toEmailIntegration = (record: EmailIntegrationRecord, inboundUrl: string): EmailIntegration => ({
  id: record.id,
  tenant_id: record.tenant_id,
  address: record.address,
  display_name: record.display_name,
  status: record.status,
  inbound_url: inboundUrl,
  created_at: record.created_at,
  updated_at: record.updated_at
})
